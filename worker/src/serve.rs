//! Serving MCP over Streamable HTTP in the Worker, between the platform and the core:
//! `shell` (request parts in, a core response out as the platform's, the run of one request),
//! `fast` (a stateless POST answered in one synchronous call from `entry.mjs`, with its
//! upstream uses in `fast/`), `watch` (long-lived SSE answers and the client's answers to
//! questions), `ledger` (the Durable Object keeping the task budget) and `code` (code mode's
//! programs, run in Dynamic Workers). The front Worker's
//! routing is in `lib.rs`, a session's Durable Object in `sessions`. The native twin is
//! `native/src/serve/`.

pub mod code;
pub mod fast;
pub mod ledger;
pub mod shell;
pub mod watch;
