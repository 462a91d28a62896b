//! Streamable HTTP rules as pure functions: (method, headers, body) + session store → status,
//! headers and body. The Worker and the native server only move bytes and persist sessions.
//!
//! By concern: `security` (the gate before a body is read, and [`serve`]), `config` (the
//! transport's options), `exchange` (request and response), `handle` (a request through the
//! rules), `modern` (the 2026-07-28 header rules), `sessions` (a request's session), `store`
//! (where sessions live), `session_id` (signed ids) and `view` (the endpoint's view).

mod config;
mod exchange;
mod handle;
#[cfg(feature = "auth")]
mod identity;
mod modern;
mod security;
mod session_id;
mod sessions;
mod store;
mod view;

pub use config::{origin_allowed, Config, DEFAULT_SESSION_IDLE_MS};
pub use exchange::{complete, complete_json, sse_body, Request, Response};
pub use handle::{admit, handle};
#[cfg(feature = "auth")]
pub use identity::{metadata, refused, who, Caller, Party, Who, ACCESS_HEADER};
#[cfg(feature = "large-catalogs")] // stdio's only
pub(crate) use modern::check_version_and_capabilities;
pub use security::{
    authorized, cors_headers, declared_length, failed, gate, identify, misconfigured, misconfigured_privately, serve,
    serve_gated, too_large,
};
pub use session_id::{same_secret, Secret};
pub use sessions::{holder, released};
pub use store::{apply as apply_budget_step, kept_by, MemoryStore, SessionStore};
pub use view::{endpoint_view, endpoint_view_for, ENDPOINT};
