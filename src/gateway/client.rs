//! The gateway's side of a conversation with the upstream MCP server, as pure functions: the
//! messages to send, reading a reply (a JSON body or an SSE stream), and collecting the pages of
//! the upstream's lists. The shell moves the bytes (`worker::Fetch`, a socket).

use serde_json::{json, Value};

use crate::error::{type_name, Error, Result};
use crate::model::Kind;

/// The protocol version the gateway asks the upstream for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// Most pages read from one upstream list, so a looping cursor cannot hold the gateway.
pub const MAX_PAGES: usize = 200;

/// The `initialize` request (id 0).
pub fn initialize() -> String {
    json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "mcp-sieve-gateway", "version": env!("CARGO_PKG_VERSION")},
        },
    })
    .to_string()
}

/// The `notifications/initialized` notification.
pub fn initialized() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

/// A request with `id`.
pub fn request(id: u64, method: &str, params: &Value) -> String {
    let mut v = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if !params.is_null() {
        v["params"] = params.clone();
    }
    v.to_string()
}

/// A list request, with the cursor of the page wanted.
pub fn list(id: u64, kind: Kind, cursor: Option<&str>) -> String {
    let params = cursor.map_or(Value::Null, |c| json!({"cursor": c}));
    request(id, kind.list_method(), &params)
}

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

    /// The response's `result`, or its error as a message.
    pub fn result(&self, method: &str) -> Result<&Value> {
        let r = self
            .response
            .as_ref()
            .ok_or_else(|| Error::Internal(format!("the upstream sent no response to {method}")))?;
        if let Some(e) = r.get("error") {
            return Err(Error::Internal(format!(
                "the upstream answered {method} with an error: {e}"
            )));
        }
        r.get("result")
            .ok_or_else(|| Error::Internal(format!("the upstream's response to {method} has no result")))
    }
}

/// Reads the body of the upstream's answer to the request `id`: JSON (`application/json`) or a
/// stream of SSE events (`text/event-stream`), whose other messages are notifications.
pub fn parse_reply(content_type: &str, body: &str, id: &Value) -> Result<Reply> {
    let mut reply = Reply::default();
    let bad = |e: serde_json::Error| Error::Internal(format!("the upstream sent a body that is not JSON: {e}"));
    let mut take = |msg: Value| {
        if msg.get("id") == Some(id) && (msg.get("result").is_some() || msg.get("error").is_some()) {
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

/// The upstream's `initialize` result and every item of its lists, in its order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lists {
    /// The `initialize` result (serverInfo, capabilities, instructions).
    pub initialize: Value,
    items: [Vec<Value>; 4],
    pages: [usize; 4],
}

impl Lists {
    /// Lists of the upstream that answered `initialize` with `result`.
    pub fn new(initialize: Value) -> Self {
        Lists {
            initialize,
            items: Default::default(),
            pages: [0; 4],
        }
    }

    /// The kinds the upstream's capabilities say it lists.
    pub fn kinds(&self) -> Vec<Kind> {
        let caps = &self.initialize["capabilities"];
        Kind::ALL
            .into_iter()
            .filter(|k| match k {
                Kind::Tool => caps.get("tools").is_some(),
                Kind::Resource | Kind::ResourceTemplate => caps.get("resources").is_some(),
                Kind::Prompt => caps.get("prompts").is_some(),
            })
            .collect()
    }

    /// Adds one page of `kind` (a list result); returns the cursor of the next page, if any.
    /// An upstream that still has more pages after `MAX_PAGES` is an error.
    pub fn add_page(&mut self, kind: Kind, result: &Value) -> Result<Option<String>> {
        let what = kind.list_method();
        self.pages[kind as usize] += 1;
        let items = result.get(kind.key()).and_then(Value::as_array).ok_or_else(|| {
            Error::Internal(format!(
                "the upstream's {what} result must have an array \"{}\", got {}",
                kind.key(),
                result.get(kind.key()).map_or("nothing", type_name)
            ))
        })?;
        self.items[kind as usize].extend(items.iter().cloned());
        let next = match result.get("nextCursor") {
            Some(Value::String(c)) if !c.is_empty() => Some(c.clone()),
            _ => None,
        };
        if next.is_some() && self.pages[kind as usize] >= MAX_PAGES {
            return Err(Error::Internal(format!(
                "the upstream's {what} has more than {MAX_PAGES} pages"
            )));
        }
        Ok(next)
    }

    /// Adds the page `reply` carries; an upstream without this list method (`-32601`, e.g. no
    /// `resources/templates/list`) has no items of this kind. Returns the next page's cursor.
    pub fn add_reply(&mut self, kind: Kind, reply: &Reply) -> Result<Option<String>> {
        let code = reply.response.as_ref().and_then(|r| r["error"]["code"].as_i64());
        if code == Some(crate::error::code::METHOD_NOT_FOUND as i64) {
            return Ok(None);
        }
        self.add_page(kind, reply.result(kind.list_method())?)
    }

    /// The items of `kind` collected so far.
    pub fn items(&self, kind: Kind) -> &[Value] {
        &self.items[kind as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_sse_replies() {
        let id = json!(3);
        let r = parse_reply("application/json", r#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#, &id).unwrap();
        assert_eq!(r.result("x").unwrap(), &json!({"a": 1}));
        assert!(!r.list_changed());
        let sse =
            "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\n\r\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\n\
                   data: \"error\":{\"code\":-32602,\"message\":\"no\"}}\n\n";
        let r = parse_reply("text/event-stream", sse, &id).unwrap();
        assert!(r.list_changed());
        assert_eq!(r.response.as_ref().unwrap()["error"]["code"], json!(-32602));
        assert!(r.result("tools/call").unwrap_err().to_string().contains("-32602"));
        assert!(parse_reply("application/json", "nope", &id).is_err());
        assert_eq!(parse_reply("application/json", "", &id).unwrap(), Reply::default());
        let other = parse_reply("application/json", r#"{"jsonrpc":"2.0","id":4,"result":{}}"#, &id).unwrap();
        assert!(other.response.is_none() && other.result("ping").is_err());
    }

    #[test]
    fn collects_pages_of_the_kinds_the_upstream_has() {
        let mut l = Lists::new(json!({"capabilities": {"tools": {}, "prompts": {"listChanged": true}}}));
        assert_eq!(l.kinds(), vec![Kind::Tool, Kind::Prompt]);
        let next = l
            .add_page(Kind::Tool, &json!({"tools": [{"name": "a"}], "nextCursor": "p2"}))
            .unwrap();
        assert_eq!(next.as_deref(), Some("p2"));
        assert_eq!(
            l.add_page(Kind::Tool, &json!({"tools": [{"name": "b"}]})).unwrap(),
            None
        );
        assert_eq!(l.items(Kind::Tool).len(), 2);
        let e = l.add_page(Kind::Prompt, &json!({"tools": []})).unwrap_err().to_string();
        assert!(e.contains("prompts/list") && e.contains("\"prompts\""), "{e}");
        let missing = parse_reply(
            "application/json",
            r#"{"id":1,"error":{"code":-32601,"message":"no"}}"#,
            &json!(1),
        )
        .unwrap();
        assert_eq!(l.add_reply(Kind::ResourceTemplate, &missing).unwrap(), None);
        let failing = parse_reply(
            "application/json",
            r#"{"id":1,"error":{"code":-32603,"message":"down"}}"#,
            &json!(1),
        )
        .unwrap();
        assert!(l.add_reply(Kind::Resource, &failing).is_err());
        assert!(list(5, Kind::Resource, Some("c")).contains(r#""cursor":"c""#));
        assert!(!list(5, Kind::Resource, None).contains("params"));
    }

    #[test]
    fn an_endless_upstream_list_is_an_error() {
        let mut l = Lists::new(json!({"capabilities": {"tools": {}}}));
        let page = json!({"tools": [{"name": "t"}], "nextCursor": "again"});
        for _ in 1..MAX_PAGES {
            assert_eq!(l.add_page(Kind::Tool, &page).unwrap(), Some("again".into()));
        }
        let e = l.add_page(Kind::Tool, &page).unwrap_err();
        assert!(e.to_string().contains("more than 200 pages"), "{e}");
        assert_eq!(l.add_page(Kind::Tool, &json!({"tools": []})).unwrap(), None);
    }
}
