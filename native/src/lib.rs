//! The native shell of mcp-sieve, the library behind the `mcp-sieve` binary (`src/main.rs`): the
//! core behind hyper on tokio (`serve`), over stdio for desktop clients (`stdio`), and the tools
//! around them (`cli`: `check`, `tools`, `export`, `init`, `pin`, `connect`, …). `mcp-sieve --help`
//! lists them with examples. One folder per concern, named as the core's and the Worker's are (a
//! map: ARCHITECTURE.md). The shell moves bytes and time; the core decides.
//! Environment for `serve`: MCP_SIEVE_ALLOWED_ORIGINS, MCP_SIEVE_TOKEN, MCP_SIEVE_CORS,
//! MCP_SIEVE_MAX_BODY (as for the Worker).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod app;
mod auth;
pub mod cli;
mod code;
pub mod commands;
mod config;
mod error;
mod http;
mod oauth;
mod operate;
mod platform;
mod progress;
mod relay;
mod reload;
pub mod search;
mod serve;
mod sessions;
mod shutdown;
mod stdio;
mod telemetry;
mod upstream;
