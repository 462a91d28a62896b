//! The native binary: the core behind hyper on tokio (`serve`), over stdio for desktop clients
//! (`stdio`), and the tools around them (`check`, `tools`, `export`, `init`, `pin`, `connect`,
//! `disconnect`). `mcp-sieve --help` lists them
//! with examples. Environment for `serve`: MCP_SIEVE_ALLOWED_ORIGINS, MCP_SIEVE_TOKEN,
//! MCP_SIEVE_CORS, MCP_SIEVE_MAX_BODY (as for the Worker).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

/// mimalloc, not the C library's malloc: a fifth of the CPU of a `tools/list` under load went to
/// glibc's malloc and free (scripts/bench-native.sh, perf). Freed memory goes back to the system
/// at once (`give_back_freed_memory`, first thing in `main`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod app;
mod audit;
mod auth;
mod cancels;
mod check;
mod cli;
mod code;
mod connect;
mod embeddings;
mod encoder;
mod error;
mod export;
mod gateway;
mod hub;
mod index;
mod init;
mod load;
mod mcp_config;
mod meaning;
mod metrics;
mod oauth;
mod operate;
mod otlp;
mod outbox;
mod pin;
mod platform;
mod progress;
mod relay;
mod relay_http;
mod reload;
mod reply;
mod request_log;
mod sampling;
mod serve;
mod sessions;
mod shutdown;
mod sign_in;
mod spans;
mod standalone;
mod stdio;
mod stdio_serve;
mod task_asks;
mod telemetry;
mod tls;
mod token_store;
mod tools;
mod tracer;
mod watch;

use std::time::Duration;

use clap::Parser;
use cli::{Cli, Command};
use error::ServerError;

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

/// mimalloc's `mi_option_purge_delay`: 15 in `mi_option_e` of its `include/mimalloc.h` (v3, the
/// version libmimalloc-sys builds by default; v2's too); the crate's Rust constants stop before it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc purges (gives back to the system) the memory it frees at once instead of a second later
/// (v3's default): a delayed purge happens only when the allocator runs again, so a burst of large
/// requests left its memory resident (72-87 MB more after forty ~900 KB bodies,
/// tests/security/sessions-answers.test.mjs); glibc's malloc gave it back. MIMALLOC_PURGE_DELAY in
/// the environment still decides when set.
fn give_back_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an integer option; mimalloc reads it at each purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
    }
}

fn main() {
    give_back_freed_memory();
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
            .and_then(|doc| on_runtime(serve::run(doc, &a.source, &a.host, a.port, a.metrics_at()?))),
        Command::Stdio(a) => {
            load::document(&a.source).and_then(|doc| on_runtime(stdio_serve::run(doc, &a.source, &a.view)))
        }
        Command::Check { file } => check::run(&file),
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
            .and_then(|doc| on_runtime(async move { index::run(&doc, a.output.as_deref()).await })),
        Command::Login(a) => load::document(&a.source).and_then(|doc| {
            let ups = doc.catalog(&doc.text)?.upstreams;
            on_runtime(async move { Ok(sign_in::login(&ups, &a.name, a.no_browser).await?) })
        }),
        Command::Logout { name } => oauth::logout(&name).map_err(ServerError::from),
        Command::SearchModel(cli::SearchModelCommand::Fetch { id, revision }) => on_runtime(async move {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_mimallocs_and_set_to_zero() {
        // SAFETY: reads an integer option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(
                get(),
                1000,
                "mimalloc v3's default purge delay is 1 s: the index names it"
            );
        }
        give_back_freed_memory();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(), 0);
        }
    }
}
