//! The operator's view of each upstream (`GET /mcp-sieve/upstreams`): the core's status with a
//! stdio upstream's process id and its sign-in state.

use mcp_sieve::http;
use mcp_sieve::upstream;
use serde_json::Value;

use super::drivers::Driver;
use super::Gateway;
use crate::platform::now_ms;

impl Gateway {
    /// The operator's view of each upstream (no header, no secret), with a stdio upstream's
    /// process id.
    pub fn status(&self) -> Value {
        let mut status = self.state().status(now_ms());
        if let Some(search) = crate::search::meaning::status() {
            status["search"] = search;
        }
        if let Some(Value::Array(ups)) = status.get_mut("upstreams") {
            for ((up, driver), auth) in ups.iter_mut().zip(&self.0.drivers).zip(&self.0.auth) {
                if let Driver::Stdio(p) = driver {
                    up["pid"] = serde_json::json!(p.pid());
                }
                if let Some(a) = auth.as_ref().filter(|a| a.active()) {
                    up["auth"] = "oauth".into();
                    if a.needs_login() {
                        let name = up["name"].as_str().unwrap_or_default().to_string();
                        up["state"] = "needs-login".into();
                        up["login"] = format!("mcp-sieve login {name}").into();
                    }
                }
            }
        }
        status
    }
}

/// Where the operator reads each upstream's state (behind the same gate as `/mcp`).
pub const STATUS_PATH: &str = upstream::STATUS_PATH;

/// `GET` [`STATUS_PATH`]: each upstream's state as JSON (404 when the server fronts none).
pub fn status(gateway: Option<&Gateway>, method: &str) -> http::Response {
    upstream::status_response(gateway.map(Gateway::status), method)
}
