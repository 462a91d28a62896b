//! Reading one answer of the upstream: a JSON body (a message or a batch) or an SSE stream,
//! whose other messages are notifications.

use serde_json::Value;

use crate::error::{Error, Result};

/// What came back for one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The response to the request (with `result` or `error`), if it came.
    pub response: Option<Value>,
    /// Methods of the notifications that came with it (`notifications/tools/list_changed`, …).
    pub notifications: Vec<String>,
}

impl Reply {
    /// Whether the upstream announced that one of its lists changed.
    pub fn list_changed(&self) -> bool {
        self.notifications.iter().any(|m| m.ends_with("/list_changed"))
    }

    /// The response's `result`; its JSON-RPC error as an [`Error::Rpc`]; an [`Error::Upstream`]
    /// when there is neither.
    pub fn result(&self, method: &str) -> Result<&Value> {
        let r = self
            .response
            .as_ref()
            .ok_or_else(|| Error::Upstream(format!("it sent no response to {method}")))?;
        if let Some(e) = r.get("error") {
            return Err(Error::from_rpc(method, e));
        }
        r.get("result")
            .ok_or_else(|| Error::Upstream(format!("its response to {method} has no result")))
    }
}

/// Reads the body of the upstream's answer to the request `id` (`None` for a notification): JSON
/// (`application/json`) or a stream of SSE events (`text/event-stream`).
pub fn parse_reply(content_type: &str, body: &str, id: Option<&Value>) -> Result<Reply> {
    let mut reply = Reply::default();
    let bad = |e: serde_json::Error| Error::Upstream(format!("it sent a body that is not JSON: {e}"));
    let mut take = |msg: Value| {
        let answers = msg.get("result").is_some() || msg.get("error").is_some();
        if answers && id.is_some() && msg.get("id") == id {
            reply.response = Some(msg);
        } else if let (Some(m), None) = (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            reply.notifications.push(m.to_string());
        }
    };
    if content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        for event in body.replace("\r\n", "\n").split("\n\n") {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            if !data.is_empty() && !data.concat().trim().is_empty() {
                take(serde_json::from_str(&data.join("\n")).map_err(bad)?);
            }
        }
    } else if !body.trim().is_empty() {
        match serde_json::from_str(body).map_err(bad)? {
            Value::Array(batch) => batch.into_iter().for_each(&mut take),
            msg => take(msg),
        }
    }
    Ok(reply)
}

/// Whether `body` (so far) already holds the response to `id`: an SSE stream may stay open after
/// it, and a reader can stop there.
pub fn has_response(content_type: &str, body: &str, id: &Value) -> bool {
    if !content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        return false;
    }
    let text = body.replace("\r\n", "\n");
    let whole = text.rfind("\n\n").map_or("", |end| &text[..end + 2]);
    parse_reply(content_type, whole, Some(id)).is_ok_and(|r| r.response.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_json_and_sse_replies() {
        let id = json!(3);
        let r = parse_reply(
            "application/json",
            r#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#,
            Some(&id),
        )
        .unwrap();
        assert_eq!(r.result("x").unwrap(), &json!({"a": 1}));
        assert!(!r.list_changed());
        let sse =
            "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\n\r\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\n\
                   data: \"error\":{\"code\":-32602,\"message\":\"no\"}}\n\n";
        let r = parse_reply("text/event-stream", sse, Some(&id)).unwrap();
        assert!(r.list_changed());
        assert_eq!(r.response.as_ref().unwrap()["error"]["code"], json!(-32602));
        assert_eq!(r.result("tools/call").unwrap_err().code(), -32602);
        assert!(has_response("text/event-stream", sse, &id));
        assert!(!has_response("text/event-stream", &sse[..60], &id));
        assert!(parse_reply("application/json", "nope", Some(&id)).is_err());
        assert_eq!(
            parse_reply("application/json", "", Some(&id)).unwrap(),
            Reply::default()
        );
        let other = parse_reply("application/json", r#"{"jsonrpc":"2.0","id":4,"result":{}}"#, Some(&id)).unwrap();
        assert!(other.response.is_none() && other.result("ping").is_err());
    }
}
