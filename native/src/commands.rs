//! The commands: [`run`] parses the command line (`crate::cli`) and runs one — a server
//! (`crate::serve`, `crate::stdio`) or one of the commands that are not servers (`check`,
//! `tools`, `export`, `init`, `pin`, `prepare`, `index`, `audit`, `connect`/`disconnect`).

pub(crate) mod audit;
pub(crate) mod check;
pub(crate) mod connect;
pub(crate) mod export;
pub(crate) mod index;
pub(crate) mod init;
pub(crate) mod pin;
pub(crate) mod prepare;
pub(crate) mod tools;

use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command, SearchModelCommand};
use crate::config::load;
use crate::error::ServerError;
use crate::oauth::{self, sign_in};
use crate::search::{hub, meaning};
use crate::telemetry;

/// Runs `f` on a multi-threaded runtime; the runtime is shut down (its tasks, and the child
/// processes they own, dropped) within a second of `f` ending.
fn on_runtime<F: std::future::Future<Output = Result<(), ServerError>>>(f: F) -> Result<(), ServerError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ServerError::Io("cannot start the runtime".into(), e))?;
    let result = rt.block_on(f);
    rt.shutdown_timeout(Duration::from_secs(1));
    // The spans not yet exported go out now (the exporter has a runtime of its own).
    telemetry::shutdown();
    result
}

/// The printing commands end quietly when their reader goes away (`mcp-sieve tools | head`), as
/// Unix tools do, instead of panicking in `println!` on a closed pipe. The servers keep Rust's
/// default (SIGPIPE ignored): a client that leaves is an error they handle.
fn default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Parses the command line and runs its command; exits with 2 on an error (1 when `check` found
/// errors in a file).
pub fn run() {
    // Before any thread starts (the telemetry's, the runtime's), so every thread shares it.
    crate::oauth::token_store::join_session_keyring();
    let cli = Cli::parse();
    let serving = matches!(cli.command, Command::Serve(_) | Command::Stdio(_));
    if !serving {
        default_sigpipe();
    }
    // Logs on stderr for every command; traces for the servers only.
    telemetry::init(cli.log_format, serving);
    let source = match &cli.command {
        Command::Serve(a) => Some(&a.source),
        Command::Stdio(a) | Command::Tools(a) => Some(&a.source),
        Command::Pin(a) => Some(&a.source),
        Command::Export(a) => Some(&a.tools.source),
        Command::Index(a) => Some(&a.source),
        Command::Login(a) => Some(&a.source),
        _ => None,
    };
    if let Some(m) = source.and_then(|s| s.search_model.clone()) {
        meaning::set_override(m);
    }
    let result = match cli.command {
        Command::Serve(a) => load::document(&a.source)
            .and_then(|doc| on_runtime(crate::serve::run(doc, &a.source, &a.host, a.port, a.metrics_at()?))),
        Command::Stdio(a) => {
            load::document(&a.source).and_then(|doc| on_runtime(crate::stdio::run(doc, &a.source, &a.view)))
        }
        Command::Check { file } => check::run(&file),
        Command::Prepare { file, output } => prepare::run(&file, &output),
        Command::Audit(a) => audit::run(&a),
        Command::Tools(a) => {
            load::document(&a.source).and_then(|doc| on_runtime(tools::run(doc, &load::folder(&a.source), a.view)))
        }
        Command::Pin(a) => {
            load::document(&a.source).and_then(|doc| on_runtime(pin::run(doc, &load::folder(&a.source), a)))
        }
        Command::Export(a) => load::document(&a.tools.source)
            .and_then(|doc| on_runtime(export::run(doc, &load::folder(&a.tools.source), a))),
        Command::Init { mcp_config, output } => on_runtime(init::run(&mcp_config, output.as_deref())),
        Command::Connect(a) => connect::connect(&a),
        Command::Disconnect(a) => connect::disconnect(&a),
        Command::Index(a) => load::document(&a.source)
            .and_then(|doc| on_runtime(async move { index::run(&doc, a.output.as_deref(), a.ai).await })),
        Command::Login(a) => load::document(&a.source).and_then(|doc| {
            let ups = doc.catalog(&doc.text)?.upstreams;
            on_runtime(async move { Ok(sign_in::login(&ups, &a.name, a.no_browser).await?) })
        }),
        Command::Logout { name } => oauth::logout(&name).map_err(ServerError::from),
        Command::SearchModel(SearchModelCommand::Fetch { id, revision }) => on_runtime(async move {
            let id = id.as_deref().unwrap_or(hub::DEFAULT_MODEL);
            if !hub::is_model_id(id) {
                return Err(ServerError::Usage(format!(
                    "\"{id}\" is not a Hugging Face model id; expected owner/name, such as {}",
                    hub::DEFAULT_MODEL
                )));
            }
            let dir = hub::fetch(id, revision.as_deref())
                .await
                .map_err(|e| ServerError::Config(e.to_string()))?;
            println!("{}", dir.display());
            Ok(())
        }),
    };
    match result {
        Ok(()) => {}
        Err(ServerError::Check(n)) => std::process::exit(if n == 0 { 0 } else { 1 }),
        Err(e) => {
            // One line per error (a configuration's are all said at once).
            for line in e.to_string().lines() {
                tracing::error!("{line}");
            }
            std::process::exit(2);
        }
    }
}
