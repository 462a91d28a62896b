//! The native binary: the core behind hyper on tokio (`serve`), over stdio for desktop clients
//! (`stdio`), and the tools around them (`check`, `tools`, `export`, `init`, `pin`, `connect`,
//! `disconnect`). `mcp-sieve --help` lists them
//! with examples. Environment for `serve`: MCP_SIEVE_ALLOWED_ORIGINS, MCP_SIEVE_TOKEN,
//! MCP_SIEVE_CORS, MCP_SIEVE_MAX_BODY (as for the Worker).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod app;
mod audit;
mod auth;
mod cancels;
mod check;
mod cli;
mod connect;
mod embeddings;
mod encoder;
mod error;
mod export;
mod gateway;
mod index;
mod init;
mod load;
mod mcp_config;
mod meaning;
mod metrics;
mod oauth;
mod operate;
mod outbox;
mod pin;
mod platform;
mod progress;
mod relay;
mod relay_http;
mod reload;
mod reply;
mod sampling;
mod serve;
mod sessions;
mod shutdown;
mod sign_in;
mod standalone;
mod stdio;
mod stdio_serve;
mod task_asks;
mod telemetry;
mod tls;
mod token_store;
mod tools;
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

fn main() {
    let cli = Cli::parse();
    let serving = matches!(cli.command, Command::Serve(_) | Command::Stdio(_));
    if !serving {
        default_sigpipe();
    }
    // Logs on stderr for every command; traces for the servers only.
    telemetry::init(cli.log_format, serving);
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
        Command::Index(a) => load::document(&a.source).and_then(|doc| index::run(&doc, a.output.as_deref())),
        Command::Login(a) => load::document(&a.source).and_then(|doc| {
            let ups = doc.catalog(&doc.text)?.upstreams;
            on_runtime(async move { Ok(sign_in::login(&ups, &a.name, a.no_browser).await?) })
        }),
        Command::Logout { name } => oauth::logout(&name).map_err(ServerError::from),
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
