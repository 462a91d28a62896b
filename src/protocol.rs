//! The transport-agnostic MCP engine: JSON-RPC framing, the method router (`router.rs`, the only
//! `match` on methods) and one file per method family (initialize, lists, concerns, tools,
//! prompts, resources, completion, logging, tasks, middleware, forward), sessions, cursors and
//! the demo and conformance fixture tools (`demo.rs`). Pure functions: the shell passes the session, the time and fresh ids in and
//! applies what comes out.

pub mod ask;
mod client_meta;
#[cfg(feature = "search-index")]
pub mod code;
mod completion;
mod concerns;
pub mod cursor;
mod demo;
#[cfg(feature = "standards")]
mod disclosure;
mod example;
#[cfg(feature = "explain")]
mod explain;
mod forward;
mod forwarding;
mod initialize;
pub mod jsonrpc;
mod lists;
mod logging;
mod middleware;
mod outcome;
mod prompts;
mod resources;
mod router;
pub mod search;
#[cfg(feature = "search-index")]
mod search_index;
mod server;
mod session;
mod tasks;
pub(crate) mod template;
mod tools;
mod watch;

/// A step of a task's life for the server's task budget (also here, beside [`budget_step`]).
pub use crate::task::budget::BudgetStep;
pub use ask::{Answers, Ask};
#[cfg(feature = "gateway")]
pub(crate) use forward::link_of;
pub use forward::{ended_steps, Forward, RELAYED_KEY};
#[cfg(feature = "gateway")]
pub use forward::{forget_slot, Admission, Gather};
#[cfg(feature = "gateway")]
pub(crate) use forwarding::IDS_PER_EXCHANGE;
pub use jsonrpc::{Incoming, Limits};
#[cfg(feature = "gateway")]
pub use logging::log_wanted;
pub use outcome::Outcome;
pub use server::{Env, Server};
pub use session::{Asked, OwnedTask, Session, UpstreamLink};
pub use tasks::{budget_step, declares_tasks, gateway_budget, runs_as_task, task_budget, task_holder, HOLDER_PREFIX};
#[cfg(feature = "gateway")]
pub use tasks::{gateway_holder, session_task_entry};
pub use watch::Watch;

/// Protocol versions of the stateful (legacy) era, newest first.
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// The stateless protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Prefix of our extensions and `_meta` keys.
pub const EXT: &str = "dev.mcp-sieve";
/// The `_meta` key of concerns sent with one request (`{EXT}/concerns`, spelled out: read on
/// every list, so not formatted each time).
pub(crate) const EXT_CONCERNS: &str = "dev.mcp-sieve/concerns";

/// Whether `v` is a protocol version this server speaks.
pub fn is_supported_version(v: &str) -> bool {
    v == MODERN_VERSION || LEGACY_VERSIONS.contains(&v)
}
