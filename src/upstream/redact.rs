//! The gateway's secrets, kept out of what upstreams say: an upstream may quote back the token
//! it was sent ("the token Bearer … is not valid"), and that text would reach the status, the
//! log and the client. Every upstream-originated string the gateway stores, logs or relays goes
//! through [`Secrets::redact`], which writes `[redacted:NAME]` where a secret's value was.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;

/// Shortest value redacted: shorter ones (`1`, `on`) are too common to be secrets.
const MIN_LEN: usize = 4;

/// Secret values by name (the `${NAME}` references of the document, the gateway's own tokens).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets(Arc<Vec<(String, String)>>);

impl Secrets {
    /// These `(name, value)` pairs (values shorter than 4 characters are never redacted).
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut v: Vec<(String, String)> = pairs.into_iter().filter(|(_, v)| v.len() >= MIN_LEN).collect();
        // Longest first: a secret that contains another is replaced whole; of two names for one
        // value, the first given is kept.
        // (crate::sort, stable: one sort for the crate instead of 3 KB of its own in the wasm.)
        crate::sort::sort_by(&mut v, |a, b| b.1.len().cmp(&a.1.len()));
        v.dedup_by(|a, b| a.1 == b.1);
        Secrets(Arc::new(v))
    }

    /// The gateway's own secrets, read with `var` (the environment, the Worker's secrets): every
    /// principal's token (`MCP_SIEVE_TOKENS`, a JSON object principal → token), the anonymous
    /// `MCP_SIEVE_TOKEN` and `MCP_SIEVE_SESSION_SECRET`. No upstream is ever sent them, but none
    /// may be repeated from what an upstream says either.
    pub fn own(var: &dyn Fn(&str) -> Option<String>) -> Self {
        let mut pairs = Vec::new();
        if let Some(Ok(Value::Object(tokens))) = var("MCP_SIEVE_TOKENS").map(|t| serde_json::from_str::<Value>(&t)) {
            for (principal, token) in tokens {
                if let Value::String(t) = token {
                    pairs.push((format!("MCP_SIEVE_TOKENS.{principal}"), t));
                }
            }
        }
        for name in ["MCP_SIEVE_TOKEN", "MCP_SIEVE_SESSION_SECRET"] {
            if let Some(v) = var(name) {
                pairs.push((name.to_string(), v));
            }
        }
        Secrets::new(pairs)
    }

    /// These secrets and `more`.
    pub fn with(&self, more: &Secrets) -> Secrets {
        Secrets::new(self.0.iter().chain(more.0.iter()).cloned())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret's value replaced by `[redacted:NAME]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for (name, value) in self.0.iter() {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[redacted:{name}]")));
            }
        }
        out
    }

    /// `e` with its message (and data) redacted.
    pub fn redact_error(&self, e: Error) -> Error {
        if self.is_empty() {
            return e;
        }
        let r = |m: String| self.redact(&m).into_owned();
        match e {
            Error::Upstream(m) => Error::Upstream(r(m)),
            Error::Internal(m) => Error::Internal(r(m)),
            Error::Catalog(m) => Error::Catalog(r(m)),
            Error::Rpc {
                code,
                message,
                mut data,
            } => {
                if let Some(d) = &mut data {
                    self.redact_value(d);
                }
                Error::Rpc {
                    code,
                    message: r(message),
                    data,
                }
            }
            other => other,
        }
    }

    /// Every string in `v` (keys too) redacted in place.
    pub fn redact_value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.redact_value(x)),
            Value::Object(o) => {
                let keys: Vec<String> = o
                    .keys()
                    .filter(|k| matches!(self.redact(k), Cow::Owned(_)))
                    .cloned()
                    .collect();
                for k in keys {
                    if let Some(x) = o.remove(&k) {
                        o.insert(self.redact(&k).into_owned(), x);
                    }
                }
                o.values_mut().for_each(|x| self.redact_value(x));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_named_not_shown() {
        let s = Secrets::new([
            ("GH".to_string(), "ghp_abcdef".to_string()),
            ("SHORT".to_string(), "on".to_string()),
            ("LONG".to_string(), "xx-ghp_abcdef-yy".to_string()),
        ]);
        assert_eq!(
            s.redact("the token Bearer ghp_abcdef is not valid; on"),
            "the token Bearer [redacted:GH] is not valid; on"
        );
        assert_eq!(s.redact("k=xx-ghp_abcdef-yy"), "k=[redacted:LONG]");
        let mut v = json!({"content": [{"text": "echo ghp_abcdef"}], "ghp_abcdef": 1});
        s.redact_value(&mut v);
        assert_eq!(
            v,
            json!({"content": [{"text": "echo [redacted:GH]"}], "[redacted:GH]": 1})
        );
        assert!(matches!(Secrets::default().redact("x"), Cow::Borrowed(_)));
        let vars = |n: &str| match n {
            "MCP_SIEVE_TOKENS" => Some(r#"{"alice": "tok-alice-1", "bob": 5}"#.to_string()),
            "MCP_SIEVE_SESSION_SECRET" => Some("session-key-9".to_string()),
            _ => None,
        };
        let own = Secrets::own(&vars);
        assert_eq!(
            own.redact("tok-alice-1 / session-key-9"),
            "[redacted:MCP_SIEVE_TOKENS.alice] / [redacted:MCP_SIEVE_SESSION_SECRET]"
        );
    }
}
