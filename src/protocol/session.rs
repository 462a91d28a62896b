//! The state of one stateful (legacy-era) session.

use std::sync::Arc;

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
    /// `params` of the `initialize` request (shared: every request of the session reads it, as
    /// its `FilterContext`'s, without a copy).
    pub initialize: Arc<Value>,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The host's concern configuration (as configured, before defaults).
    pub concerns: ConcernConfig,
    /// Entries of the concern configuration that were dropped because no error could be
    /// answered (`notifications/initialized`); `concerns/list` reports them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub concern_warnings: Vec<String>,
    /// Tasks created in this session.
    pub tasks: Vec<Task>,
    /// Counter for task ids.
    pub next_task: u64,
    /// When a request last used the session (ms since the epoch; updated coarsely, see
    /// `http::Config::session_idle_ms`).
    #[serde(default)]
    pub last_seen_ms: i64,
    /// The principal that opened it (`MCP_SIEVE_TOKENS`); another principal's request with its
    /// id is 404.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The endpoint view it was opened on (its label; empty: the plain endpoint). Requests of the
    /// session must come through the same view.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub view: String,
    /// A holder of 2026-07-28 tasks (no session of a client: its id is `tasks:<id>`, derived from
    /// the task id, see `protocol::task_holder`); requests it serves are stateless.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_holder: bool,
    /// Gateway mode: this session's own session at the upstream (opened on its first forwarded
    /// use; never shared with another downstream session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamLink>,
    /// Gateway mode with named upstreams: this session's own session at each of them, by name
    /// (the unnamed `upstream`'s stays in `upstream`).
    #[cfg(feature = "gateway")]
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub upstream_links: std::collections::BTreeMap<String, UpstreamLink>,
    /// Gateway mode: the upstream tasks created through this session, the only ones it may reach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstream_tasks: Vec<OwnedTask>,
    /// Questions the server asked this session's client mid-call and awaits answers to (see
    /// `protocol::ask`): a response the client POSTs is kept only when it answers one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    /// The level its client set with `logging/setLevel` (gateway mode: the upstreams' log
    /// messages below it are not relayed to it; a stdio upstream's reach only sessions that set
    /// one).
    #[cfg(feature = "gateway")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
}

impl Session {
    /// Who its tasks count for in the task budget (`task::budget`): its principal, or the one
    /// all callers without a token share.
    pub fn budget_owner(&self) -> &str {
        self.principal.as_deref().unwrap_or(crate::task::budget::ANONYMOUS)
    }
}

/// A question asked of a session's client, awaiting its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    /// The server's request id.
    pub id: Value,
    /// When the stream stops waiting for the answer (ms since the epoch).
    pub until_ms: i64,
}

/// What a gateway must remember to go on with one upstream session (see
/// `upstream::Conversation::resume`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamLink {
    /// The upstream's `Mcp-Session-Id`, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The protocol version agreed on; empty while no upstream session is open.
    #[serde(default)]
    pub version: String,
    /// The next request id to use in the upstream session.
    pub next_id: u64,
}

/// An upstream task created through a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnedTask {
    /// The upstream's task id.
    pub id: String,
    /// The name of the upstream that runs it (empty: the unnamed `upstream`).
    #[cfg(feature = "gateway")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub upstream: String,
    /// When its TTL ends (ms since the epoch), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<i64>,
    /// Whether the upstream said it finished (an answer to `tasks/get` with a terminal status,
    /// to `tasks/result`, or `tasks/cancel` acknowledged): a holder at its cap drops the oldest
    /// such record to make room (`task::budget`'s rule), never a working one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
    /// Its id in the server's task budget (`task::budget::slot`), when it was admitted there.
    #[cfg(feature = "gateway")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
}
