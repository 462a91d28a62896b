//! The transport's options ([`Config`]): limits, allowed origins, tokens, CORS, session idle
//! time and the session secret, and the `Origin` check that reads them.

use serde_json::Value;

use super::session_id::Secret;
use crate::error::Error;
use crate::protocol::jsonrpc::Limits;

/// Transport configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Body, depth and string guards.
    pub limits: Limits,
    /// Allowed `Origin` values besides loopback ones (`*` allows any).
    pub allowed_origins: Vec<String>,
    /// Bearer token every request must carry (`None`: no authentication).
    pub bearer_token: Option<String>,
    /// Whether allowed cross-origin browser hosts get CORS headers and preflight answers.
    pub cors: bool,
    /// Idle time after which a session is gone (404); `None`: [`DEFAULT_SESSION_IDLE_MS`].
    pub session_idle_ms: Option<i64>,
    /// Principals and their bearer tokens (`MCP_SIEVE_TOKENS`).
    pub tokens: Vec<(String, String)>,
    /// The key session ids are tagged with (`None`: ids are not checked; the shells set a random
    /// one when `MCP_SIEVE_SESSION_SECRET` is not given).
    pub session_secret: Option<Secret>,
    /// The catalog's `auth` block (set by the shell from the catalog): tokens are then checked
    /// by `http::who` and the shell's verifier, not by `http::gate`.
    #[cfg(feature = "auth")]
    pub auth: Option<std::sync::Arc<crate::auth::AuthConfig>>,
}

/// Sessions idle this long are gone: 24 hours.
pub const DEFAULT_SESSION_IDLE_MS: i64 = 24 * 3600 * 1000;

impl Config {
    /// A new session id from the random string `random`: tagged with the session secret.
    pub fn session_id(&self, random: &str) -> String {
        match &self.session_secret {
            Some(s) => s.sign(random),
            None => random.to_string(),
        }
    }

    /// Whether `id` can be a session id of this server (a forged one is not, and is refused
    /// before any store is asked).
    pub fn session_id_valid(&self, id: &str) -> bool {
        self.session_secret.as_ref().is_none_or(|s| s.verify(id))
    }

    /// The idle time after which a session expires.
    pub fn idle_ms(&self) -> i64 {
        self.session_idle_ms.unwrap_or(DEFAULT_SESSION_IDLE_MS)
    }

    /// How far `last_seen_ms` may lag: a session is written for its use at most this often.
    pub(super) fn touch_every_ms(&self) -> i64 {
        (self.idle_ms() / 4).clamp(1, 60_000)
    }
}

/// Whether `origin` is loopback or allowed by configuration.
pub fn origin_allowed(origin: &str, cfg: &Config) -> bool {
    let host = origin.split("://").nth(1).unwrap_or(origin);
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    ["localhost", "127.0.0.1", "[::1]"].contains(&host) || cfg.allowed_origins.iter().any(|o| o == "*" || o == origin)
}

impl Config {
    /// Reads the transport options from a shell's variables (Worker vars and secrets, process
    /// environment): `MCP_SIEVE_ALLOWED_ORIGINS` (comma-separated origins, `*` for any),
    /// `MCP_SIEVE_TOKEN` (bearer token; empty: none), `MCP_SIEVE_CORS` (`true`/`false`) and
    /// `MCP_SIEVE_MAX_BODY` (bytes), `MCP_SIEVE_SESSION_IDLE_SECONDS` and
    /// `MCP_SIEVE_SESSION_SECRET` (the key session ids are tagged with). A bad value is an error naming the variable.
    pub fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let mut cfg = Config::default();
        if let Some(list) = var("MCP_SIEVE_ALLOWED_ORIGINS") {
            cfg.allowed_origins = list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
        }
        cfg.bearer_token = var("MCP_SIEVE_TOKEN").filter(|t| !t.is_empty());
        cfg.cors = match var("MCP_SIEVE_CORS").as_deref().map(str::trim) {
            None | Some("") | Some("true") | Some("1") => true,
            Some("false") | Some("0") => false,
            Some(other) => {
                return Err(Error::Config(format!(
                    "MCP_SIEVE_CORS must be true or false, got \"{other}\""
                )))
            }
        };
        if let Some(n) = var("MCP_SIEVE_SESSION_IDLE_SECONDS").filter(|s| !s.trim().is_empty()) {
            let secs = n
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|n| (1..=365 * 86_400).contains(n))
                .ok_or_else(|| {
                    Error::Config(format!(
                        "MCP_SIEVE_SESSION_IDLE_SECONDS must be a number of seconds from 1 to 31536000, got \"{n}\""
                    ))
                })?;
            cfg.session_idle_ms = Some(secs * 1000);
        }
        if let Some(raw) = var("MCP_SIEVE_TOKENS").filter(|t| !t.trim().is_empty()) {
            let bad = || {
                Error::Config(
                    "MCP_SIEVE_TOKENS must be a JSON object of principal name to token, like {\"alice\": \"s3cret-token\"}"
                        .into(),
                )
            };
            let map: serde_json::Map<String, Value> = serde_json::from_str(&raw).map_err(|_| bad())?;
            for (principal, token) in map {
                match token {
                    Value::String(t) if !t.is_empty() && !principal.is_empty() => cfg.tokens.push((principal, t)),
                    _ => return Err(bad()),
                }
            }
        }
        if let Some(s) = var("MCP_SIEVE_SESSION_SECRET").filter(|s| !s.is_empty()) {
            if s.len() < 16 {
                return Err(Error::Config(
                    "MCP_SIEVE_SESSION_SECRET must be at least 16 characters (32 random ones are best)".into(),
                ));
            }
            cfg.session_secret = Some(Secret::new(s.into_bytes()));
        }
        if let Some(n) = var("MCP_SIEVE_MAX_BODY").filter(|s| !s.trim().is_empty()) {
            cfg.limits.max_body = n.trim().parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                Error::Config(format!(
                    "MCP_SIEVE_MAX_BODY must be a positive number of bytes, got \"{n}\""
                ))
            })?;
        }
        Ok(cfg)
    }
}
