//! `logging/setLevel`: validates the level and keeps it in the session. The server's own log
//! lines never go to the client; in gateway mode the upstreams' log messages do, at or above
//! the level ([`log_wanted`]).

#[cfg(feature = "gateway")]
use serde_json::Value;

use crate::error::{Error, Result};
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{string_param, Call, Server};
use crate::protocol::Session;

/// Log levels of `logging/setLevel`, least severe first (RFC 5424 as MCP names them).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl Server {
    /// `logging/setLevel`: validates `params.level` and keeps it in the caller's session.
    pub(crate) fn set_log_level(
        &self,
        call: &Call,
        session: &mut Option<Session>,
        out: &mut Outcome,
    ) -> Result<String> {
        let level = string_param(call.params, "params", "level")?;
        if !LOG_LEVELS.contains(&level) {
            return Err(Error::params(format!(
                "params.level \"{level}\" is not a log level; expected one of: {}",
                LOG_LEVELS.join(", ")
            )));
        }
        #[cfg(feature = "gateway")]
        if let Some(s) = session.as_mut().filter(|s| s.log_level.as_deref() != Some(level)) {
            s.log_level = Some(level.to_string());
            out.session_changed = true;
        }
        #[cfg(not(feature = "gateway"))]
        let _ = (session, out);
        Ok("{}".into())
    }
}

#[cfg(feature = "gateway")]
/// Whether `message` (a `notifications/message`) goes to a client whose level is `level`: at or
/// above it; with no level set, when `unset` says so.
pub fn log_wanted(level: Option<&str>, message: &Value, unset: bool) -> bool {
    let rank = |l: &str| LOG_LEVELS.iter().position(|x| *x == l);
    match (level.and_then(rank), message["params"]["level"].as_str().and_then(rank)) {
        (Some(min), Some(at)) => at >= min,
        (Some(_), None) => false,
        (None, _) => unset,
    }
}

#[cfg(all(test, feature = "gateway"))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_goes_at_or_above_the_clients_level() {
        let warning = json!({"method": "notifications/message", "params": {"level": "warning", "data": "x"}});
        assert!(log_wanted(Some("warning"), &warning, false));
        assert!(log_wanted(Some("debug"), &warning, false));
        assert!(!log_wanted(Some("error"), &warning, true));
        assert!(!log_wanted(None, &warning, false) && log_wanted(None, &warning, true));
        assert!(!log_wanted(Some("info"), &json!({"params": {"level": "loud"}}), true));
    }
}
