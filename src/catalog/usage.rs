//! One use of an item (a tool call, a prompt get, a resource read, a task created), as the
//! document's rate limits (`limits`) and audit trail (`audit`) see it; `operate` builds it from a
//! request (feature `operate`).

use serde_json::Value;

use crate::model::Kind;

/// One use of an item, as the request names it (before the core decides).
#[derive(Debug, Clone, PartialEq)]
pub struct Use {
    /// The JSON-RPC request id.
    pub id: Value,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'static str,
    /// The item's kind.
    pub kind: Kind,
    /// The tool's or prompt's name, or the resource's URI (in search mode, the tool `call_tool`
    /// names).
    pub item: String,
    /// A `tools/call` that creates a task (`params.task`).
    pub task: bool,
    /// The upstream serving the item (gateway), by name (`upstream` for the unnamed one).
    pub upstream: Option<String>,
    /// The item's groups with their ancestors (in a use from a request, looked up only when a
    /// rate limit reads them: empty otherwise).
    pub groups: Vec<String>,
    /// Who calls, if known.
    pub principal: Option<String>,
    /// The caller's roles (from its verified token).
    pub roles: Vec<String>,
    /// The endpoint's view (its label), if any.
    pub view: Option<String>,
    /// The arguments sent (a tool's `arguments`, a prompt's), for audit payloads.
    pub arguments: Value,
    /// The code-mode run (its id) whose program made this call, set by the shell that runs it:
    /// the audit record says `"via": "run_code"` with the run's id.
    pub via: Option<String>,
}
