//! Reading one answer of the upstream: a JSON body (a message or a batch) or an SSE stream,
//! whose other messages are notifications.

use serde_json::Value;

use crate::error::{Error, Result};

/// What came back for one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The response to the request (with `result` or `error`), if it came.
    pub response: Option<Value>,
    /// The notifications that came with it (progress, log messages, task status,
    /// `notifications/tools/list_changed`, …), whole.
    pub notifications: Vec<Value>,
}

impl Reply {
    /// Whether the upstream announced that one of its lists changed.
    pub fn list_changed(&self) -> bool {
        self.notifications
            .iter()
            .any(|m| m["method"].as_str().is_some_and(|m| m.ends_with("/list_changed")))
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
        } else if msg.get("method").is_some_and(Value::is_string) && msg.get("id").is_none() {
            reply.notifications.push(msg);
        }
    };
    if content_type.to_ascii_lowercase().starts_with("text/event-stream") {
        each_sse_data(body, |data| {
            take(serde_json::from_str(&data).map_err(bad)?);
            Ok(())
        })?;
    } else if !body.trim().is_empty() {
        match serde_json::from_str(body).map_err(bad)? {
            Value::Array(batch) => batch.into_iter().for_each(&mut take),
            msg => take(msg),
        }
    }
    Ok(reply)
}

/// Calls `f` with the `data` of each SSE event in `body` that carries any, in order.
fn each_sse_data(body: &str, mut f: impl FnMut(String) -> Result<()>) -> Result<()> {
    for event in body.replace("\r\n", "\n").split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() && !data.concat().trim().is_empty() {
            f(data.join("\n"))?;
        }
    }
    Ok(())
}

/// Reads an upstream's answer as its bytes arrive: refuses it past a byte cap, and says when an
/// SSE stream (which may stay open after it) has carried the response to the request, so the
/// reader can stop there. Each byte is looked at once when the end of an event is searched for
/// (the search resumes where the last one stopped), and each whole event is parsed once: a long
/// `data:` line streamed in small chunks costs time linear in its length.
#[derive(Debug)]
pub struct AnswerReader {
    id: Option<Value>,
    sse: bool,
    cap: usize,
    raw: Vec<u8>,
    /// Where the events not parsed yet begin.
    parsed: usize,
    /// How far the search for an event's end has looked.
    searched: usize,
    /// The upstream's requests and notifications parsed so far and not yet taken.
    events: Vec<Value>,
}

impl AnswerReader {
    /// A reader for the answer (of `content_type`) to the POST of `request` (its JSON body),
    /// refusing more than `cap` bytes.
    pub fn new(content_type: &str, request: &str, cap: usize) -> Self {
        AnswerReader {
            id: serde_json::from_str::<Value>(request)
                .ok()
                .and_then(|m| m.get("id").cloned()),
            sse: content_type.to_ascii_lowercase().starts_with("text/event-stream"),
            cap,
            raw: Vec::new(),
            parsed: 0,
            searched: 0,
            events: Vec::new(),
        }
    }

    /// The upstream's own requests (`sampling/createMessage`, `elicitation/create`, `roots/list`,
    /// `ping`) and notifications (progress, log messages, …) that arrived on an SSE stream since
    /// the last call, in order: a gateway relays them while the stream stays open (see
    /// `upstream::Relay`). They stay in the body too.
    pub fn take_events(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.events)
    }

    /// Adds the next chunk; `Ok(true)` when the response has arrived (stop reading), an error
    /// past the cap.
    pub fn push(&mut self, chunk: &[u8]) -> Result<bool> {
        if self.raw.len().saturating_add(chunk.len()) > self.cap {
            return Err(Error::Upstream(format!("its answer is larger than {} bytes", self.cap)));
        }
        self.raw.extend_from_slice(chunk);
        let Some(id) = self.id.as_ref().filter(|_| self.sse) else {
            return Ok(false);
        };
        // The end of the last whole event in the bytes not searched yet ("\n\n" or "\n\r\n"; the
        // bytes before them may be older ones).
        let raw = &self.raw;
        let ends_event = |i: usize| {
            raw[i] == b'\n' && i >= 1 && (raw[i - 1] == b'\n' || (i >= 2 && raw[i - 1] == b'\r' && raw[i - 2] == b'\n'))
        };
        let end = (self.searched.max(self.parsed)..raw.len())
            .rev()
            .find(|&i| ends_event(i));
        self.searched = raw.len();
        let Some(end) = end else {
            return Ok(false);
        };
        let events = String::from_utf8_lossy(&raw[self.parsed..=end]);
        let mut found = false;
        let _ = each_sse_data(&events, |data| {
            if let Ok(msg) = serde_json::from_str::<Value>(&data) {
                if msg.get("result").is_some() || msg.get("error").is_some() {
                    found |= msg.get("id") == Some(id);
                } else if msg.get("method").is_some_and(Value::is_string) {
                    self.events.push(msg);
                }
            }
            Ok(())
        });
        self.parsed = end + 1;
        Ok(found)
    }

    /// The body read so far.
    pub fn body(self) -> String {
        String::from_utf8(self.raw).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
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
        let request = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#;
        let mut reader = AnswerReader::new("text/event-stream", request, 1 << 20);
        let (head, tail) = sse.as_bytes().split_at(60);
        assert!(!reader.push(head).unwrap(), "only the notification so far");
        assert!(reader.push(tail).unwrap(), "the response arrived");
        assert_eq!(reader.body(), sse);
        let mut json = AnswerReader::new("application/json", request, 10);
        assert!(!json.push(b"{\"a\":1}").unwrap());
        assert!(json
            .push(b"0123")
            .unwrap_err()
            .to_string()
            .contains("larger than 10 bytes"));
        assert!(parse_reply("application/json", "nope", Some(&id)).is_err());
        assert_eq!(
            parse_reply("application/json", "", Some(&id)).unwrap(),
            Reply::default()
        );
        let other = parse_reply("application/json", r#"{"jsonrpc":"2.0","id":4,"result":{}}"#, Some(&id)).unwrap();
        assert!(other.response.is_none() && other.result("ping").is_err());
    }

    #[test]
    fn a_stream_hands_out_the_upstreams_requests_and_notifications_as_they_come() {
        let request = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#;
        let mut reader = AnswerReader::new("text/event-stream", request, 1 << 20);
        let ask = "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\"}\n\n";
        let note = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n";
        assert!(!reader.push(ask.as_bytes()).unwrap());
        assert_eq!(reader.take_events()[0]["method"], json!("sampling/createMessage"));
        assert!(reader.take_events().is_empty(), "taken once");
        assert!(!reader.push(&note.as_bytes()[..10]).unwrap());
        assert!(reader.take_events().is_empty(), "not a whole event yet");
        assert!(!reader.push(&note.as_bytes()[10..]).unwrap());
        assert_eq!(reader.take_events().len(), 1);
        assert!(reader
            .push(b"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n")
            .unwrap());
        assert!(reader.take_events().is_empty());
    }
}
