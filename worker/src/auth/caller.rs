//! Who calls and through which view: what the front Worker learns of a request before the core
//! answers it (`serve::shell::caller_of`), and what `operate` records of it.

use std::sync::Arc;

use mcp_sieve::filter::EndpointView;

/// Who calls and through which view.
pub struct Caller {
    /// The principal its bearer token names (`MCP_SIEVE_TOKENS`, or a verified access token), if any.
    pub principal: Option<String>,
    /// The verified access token behind it (roles, claims), if any.
    pub identity: Option<Arc<mcp_sieve::auth::Identity>>,
    /// The view the request's URL and headers choose (see `http::endpoint_view`).
    pub view: Option<Arc<EndpointView>>,
    /// The code-mode run (its id) whose program makes this request, if one does
    /// (`serve::code::via`): its audit record says so.
    pub via: Option<String>,
}

impl Caller {
    /// The label of its view, as log lines and audit records name it.
    pub fn view_label(&self) -> Option<&str> {
        self.view.as_deref().map(|v| v.label.as_str())
    }
}
