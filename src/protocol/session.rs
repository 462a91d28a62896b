//! The state of one stateful (legacy-era) session.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::concern::ConcernConfig;
use crate::task::Task;

/// What the server remembers between requests of one session (serializable, so a shell can
/// persist it, e.g. in a Durable Object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// `params` of the `initialize` request.
    pub initialize: Value,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The host's concern configuration (as configured, before defaults).
    pub concerns: ConcernConfig,
    /// Tasks created in this session.
    pub tasks: Vec<Task>,
    /// Counter for task ids.
    pub next_task: u64,
    /// When a request last used the session (ms since the epoch; updated coarsely, see
    /// `http::Config::session_idle_ms`).
    #[serde(default)]
    pub last_seen_ms: i64,
}
