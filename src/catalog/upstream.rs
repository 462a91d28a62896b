//! The document's `upstream`: the Streamable HTTP MCP server a gateway fronts, and how often its
//! lists are fetched again.

use serde_json::Value;

use crate::error::{type_name, Error, Result};

/// Default seconds between two refreshes of the upstream's lists.
pub const DEFAULT_REFRESH_SECONDS: u64 = 300;

/// The document's `upstream` object: `{"url": "https://…/mcp", "refreshSeconds": 300}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The upstream's Streamable HTTP endpoint.
    pub url: String,
    /// Milliseconds after which the cached lists are fetched again.
    pub refresh_ms: i64,
}

impl Upstream {
    /// Reads `upstream` (absent or null: no gateway); errors name the bad field.
    pub fn parse(v: Option<&Value>) -> Result<Option<Upstream>> {
        let obj = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "upstream must be an object such as {{\"url\": \"https://example.com/mcp\", \"refreshSeconds\": 300}}, got {}",
                    type_name(other)
                )))
            }
        };
        if let Some(k) = obj.keys().find(|k| !["url", "refreshSeconds"].contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "upstream has an unknown field \"{k}\"; expected url, refreshSeconds"
            )));
        }
        let url = match obj.get("url") {
            Some(Value::String(s)) if s.starts_with("http://") || s.starts_with("https://") => s.clone(),
            Some(Value::String(s)) => {
                return Err(Error::Catalog(format!(
                    "upstream.url must be an http:// or https:// URL, got \"{s}\""
                )))
            }
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "upstream.url must be a string, got {}",
                    type_name(other)
                )))
            }
            None => {
                return Err(Error::Catalog(
                    "upstream.url is required (the upstream's MCP endpoint)".into(),
                ))
            }
        };
        let secs = match obj.get("refreshSeconds") {
            None | Some(Value::Null) => DEFAULT_REFRESH_SECONDS,
            Some(v) => v.as_u64().filter(|n| (1..=86_400).contains(n)).ok_or_else(|| {
                Error::Catalog(format!(
                    "upstream.refreshSeconds must be an integer from 1 to 86400, got {v}"
                ))
            })?,
        };
        Ok(Some(Upstream {
            url,
            refresh_ms: secs as i64 * 1000,
        }))
    }

    /// Whether lists fetched at `fetched_ms` are due for a refresh at `now_ms`.
    pub fn stale(&self, fetched_ms: i64, now_ms: i64) -> bool {
        now_ms.saturating_sub(fetched_ms) >= self.refresh_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_is_validated_with_field_names() {
        assert_eq!(Upstream::parse(None).unwrap(), None);
        let u = Upstream::parse(Some(&json!({"url": "http://127.0.0.1:9/mcp"})))
            .unwrap()
            .unwrap();
        assert_eq!(u.refresh_ms, 300_000);
        assert!(u.stale(0, 300_000) && !u.stale(1, 300_000));
        for (doc, want) in [
            (json!("x"), "upstream must be an object"),
            (json!({}), "upstream.url is required"),
            (json!({"url": 5}), "upstream.url must be a string"),
            (json!({"url": "ftp://x"}), "upstream.url must be an http"),
            (
                json!({"url": "http://x", "refreshSeconds": 0}),
                "upstream.refreshSeconds must be",
            ),
            (json!({"url": "http://x", "ttl": 1}), "unknown field \"ttl\""),
        ] {
            let e = Upstream::parse(Some(&doc)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
