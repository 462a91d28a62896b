//! The Worker's log lines (issue 42): one JSON object a line on the console, which Workers Logs
//! indexes field by field — `level` (`info`, `warn`, `error`; written with `console.log`,
//! `console.warn`, `console.error`, so the platform's own level agrees) and `message`, and on a
//! line about a request also `requestId` (its JSON-RPC id), `principal`, `view` and `method`
//! (`null` when it has none), named as in the audit records (`operate`). A line not about a
//! request has only `level` and `message`. Messages say what failed, never what was said.

use std::fmt::Display;

use mcp_sieve::operate::Use;
use serde_json::{Map, Value};

/// How much a line matters.
#[derive(Clone, Copy)]
enum Level {
    Info,
    Warn,
    Error,
}

/// The request a line is about.
pub struct About {
    request_id: Value,
    principal: Option<String>,
    view: Option<String>,
    method: Option<String>,
}

impl About {
    /// The request `body` of `principal` through `view` (its id and method read as the core reads
    /// them; a batch, or a body that is not JSON-RPC, has neither).
    pub fn of(principal: Option<&str>, view: Option<&str>, body: &[u8]) -> Self {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(default)]
            id: Value,
            #[serde(default)]
            method: Option<String>,
        }
        // An object only: a derived `Deserialize` would also read an array (a batch) by position.
        let object = body.trim_ascii_start().first() == Some(&b'{');
        let head = object.then(|| serde_json::from_slice::<Head>(body).ok()).flatten();
        let (request_id, method) = head.map_or((Value::Null, None), |h| (h.id, h.method));
        About {
            request_id,
            principal: principal.map(str::to_string),
            view: view.map(str::to_string),
            method,
        }
    }

    /// The request making use `u`.
    pub fn of_use(u: &Use) -> Self {
        About {
            request_id: u.id.clone(),
            principal: u.principal.clone(),
            view: u.view.clone(),
            method: Some(u.method.to_string()),
        }
    }

    /// An `info` line about this request.
    pub fn info(&self, message: impl Display) {
        write(Level::Info, Some(self), &message.to_string());
    }

    /// An `error` line about this request.
    pub fn error(&self, message: impl Display) {
        write(Level::Error, Some(self), &message.to_string());
    }
}

/// An `info` line about no request.
pub fn info(message: impl Display) {
    write(Level::Info, None, &message.to_string());
}

/// A `warn` line about no request.
pub fn warn(message: impl Display) {
    write(Level::Warn, None, &message.to_string());
}

/// An `error` line about no request.
pub fn error(message: impl Display) {
    write(Level::Error, None, &message.to_string());
}

/// The line as JSON text.
fn line(level: Level, about: Option<&About>, message: &str) -> String {
    let mut o = Map::new();
    let name = match level {
        Level::Info => "info",
        Level::Warn => "warn",
        Level::Error => "error",
    };
    o.insert("level".into(), name.into());
    o.insert("message".into(), message.into());
    if let Some(a) = about {
        o.insert("requestId".into(), a.request_id.clone());
        o.insert("principal".into(), a.principal.clone().into());
        o.insert("view".into(), a.view.clone().into());
        o.insert("method".into(), a.method.clone().into());
    }
    // DEL and C1 escaped as C0 is (a method comes from the request).
    mcp_sieve::operate::audit::escape_controls(Value::Object(o).to_string())
}

fn write(level: Level, about: Option<&About>, message: &str) {
    let text = line(level, about, message);
    match level {
        Level::Info => worker::console_log!("{text}"),
        Level::Warn => worker::console_warn!("{text}"),
        Level::Error => worker::console_error!("{text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_about_a_request_names_it_and_another_only_says_what() {
        let caller = (Some("alice"), None);
        let about = About::of(
            caller.0,
            caller.1,
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#,
        );
        let v: Value = serde_json::from_str(&line(Level::Warn, Some(&about), "a \"quoted\" thing")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"level": "warn", "message": "a \"quoted\" thing", "requestId": 7,
                "principal": "alice", "view": null, "method": "tools/call"})
        );
        let batch = About::of(caller.0, caller.1, br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
        assert_eq!((batch.request_id, batch.method), (Value::Null, None));
        assert_eq!(line(Level::Error, None, "x"), r#"{"level":"error","message":"x"}"#);
        // A control character a request sent is escaped, C0, DEL and C1 alike.
        let odd = About::of(
            caller.0,
            caller.1,
            "{\"id\":1,\"method\":\"a\u{7f}b\u{85}c\\u001b\"}".as_bytes(),
        );
        let text = line(Level::Info, Some(&odd), "x");
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(text.contains(r"a\u007fb\u0085c\u001b"), "{text}");
    }
}
