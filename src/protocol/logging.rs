//! `logging/setLevel`: validates the level. The server's own log lines never go to the client,
//! and its only logging tool logs at `info`, so the level needs no storage.

use crate::error::{Error, Result};
use crate::protocol::server::{string_param, Call, Server};

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
    /// `logging/setLevel`: validates `params.level`. The server's own log lines never go to the
    /// client, and its only logging tool logs at `info`, so the level needs no storage.
    pub(crate) fn set_log_level(&self, call: &Call) -> Result<String> {
        let level = string_param(call.params, "params", "level")?;
        if !LOG_LEVELS.contains(&level) {
            return Err(Error::params(format!(
                "params.level \"{level}\" is not a log level; expected one of: {}",
                LOG_LEVELS.join(", ")
            )));
        }
        Ok("{}".into())
    }
}
