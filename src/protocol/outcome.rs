//! What handling one message produced ([`Outcome`]): the response, notifications and log lines,
//! or the effect the transport carries out instead (a retry, a forward, a watch, a question).

use serde_json::Value;

use crate::protocol::ask::Ask;
use crate::protocol::forward::Forward;
use crate::protocol::watch::Watch;

/// What handling one message produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The JSON-RPC response (none for notifications and responses).
    pub response: Option<String>,
    /// Notifications to send to this session's client.
    pub notifications: Vec<String>,
    /// Log lines (policy filter failures, ignored concern entries); no conversation content.
    pub log: Vec<String>,
    /// Whether the session state changed and must be persisted.
    pub session_changed: bool,
    /// The JSON-RPC error code of the response, if it is an error.
    pub error_code: Option<i32>,
    /// No response yet: handle the same message again at this time (ms since the epoch), as
    /// `tasks/result` does for a task that is still working.
    pub retry_at: Option<i64>,
    /// Gateway mode: no response yet; perform this request at the upstream and answer with its
    /// reply (see `Forward::answer`).
    pub forward: Option<Forward>,
    /// `subscriptions/listen`: no response yet; keep the SSE answer open and send what this
    /// watch reports (see `Watch::tick`).
    pub watch: Option<Watch>,
    /// A tool asks the client mid-call: no response yet; send this request on the call's SSE
    /// stream and finish with the client's answer (see `Ask::finish`).
    pub ask: Option<Ask>,
    /// The client answered a question the server asked: (its key, the message) for the shell to
    /// hand to the stream waiting for it.
    pub answered: Option<(String, Value)>,
    /// The result is the whole response already (a list written after `Call::head`).
    pub(crate) enveloped: bool,
}
