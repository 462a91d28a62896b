//! MCP over stdio as a pure function: one line the client wrote → the lines to write back and the
//! effects the shell performs (the same [`Outcome`] effects as over HTTP: retry, forward, watch,
//! ask). One stdio connection is one client: its 2025-11-25 session (opened by `initialize`) lives
//! in the store under the id this connection remembers; a 2026-07-28 request (the version in
//! `params._meta`) is stateless, as over HTTP, and its tasks live in holders of their own. Every
//! line out is one JSON-RPC message with no newline inside (newline-delimited framing).

use serde_json::Value;

use crate::error::Error;
use crate::http::SessionStore;
use crate::protocol::jsonrpc::{self, Incoming, Limits};
use crate::protocol::{Ask, Env, Forward, Server, Session, Watch, MODERN_VERSION};

/// One stdio connection's state: which stored session is the client's, and the guards.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// The id of the 2025-11-25 session `initialize` opened, if any.
    session: Option<String>,
    /// Size, depth and string guards for one line.
    pub limits: Limits,
}

/// What one line produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// Messages to write to stdout, in order (notifications first, then the response).
    pub lines: Vec<String>,
    /// Lines for stderr (policy filter failures, ignored concern entries): no conversation content.
    pub log: Vec<String>,
    /// No response yet: handle the same line again at this time (a `tasks/result` still working).
    pub retry_at: Option<i64>,
    /// Gateway mode: perform this request at the upstream and write its reply.
    pub forward: Option<Forward>,
    /// Keep sending what this watch reports (`subscriptions/listen`).
    pub watch: Option<Watch>,
    /// A tool asks the client mid-call: its request is already in `lines`; wait for the client's
    /// answer (a response line with its id) and then write [`Ask::finish`].
    pub ask: Option<Ask>,
    /// The client answered a question the server asked: (its key, the message).
    pub answered: Option<(String, Value)>,
}

/// `text` as one line: serialized JSON with no raw newline (a catalog fragment may be
/// pretty-printed; inside strings a newline is always escaped, so re-serializing removes them).
pub fn one_line(text: String) -> String {
    if !text.contains('\n') && !text.contains('\r') {
        return text;
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => v.to_string(),
        Err(_) => text.replace(['\n', '\r'], " "),
    }
}

impl Connection {
    /// A connection with no session yet.
    pub fn new(limits: Limits) -> Self {
        Connection { session: None, limits }
    }

    /// The id of the client's 2025-11-25 session, once `initialize` opened one.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Handles one line from the client. A line that is not JSON gets a `-32700` error, one that
    /// is not a JSON-RPC message `-32600`; either way the connection goes on.
    pub fn receive(&mut self, server: &Server, line: &str, store: &mut dyn SessionStore, env: &Env) -> Step {
        let mut step = Step::default();
        let line = line.trim();
        if line.is_empty() {
            return step;
        }
        let msg = match jsonrpc::parse(line.as_bytes(), &self.limits) {
            Ok(m) => m,
            Err(rejected) => {
                step.lines.push(jsonrpc::error(&rejected.0, &rejected.1));
                return step;
            }
        };
        let request_id = match &msg {
            Incoming::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let fail = |step: &mut Step, e: &Error| {
            if let Some(id) = &request_id {
                step.lines.push(jsonrpc::error(id, e));
            }
        };
        let version = msg.meta()["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .map(str::to_string);
        let stateless = version.is_some();
        if let Some(v) = &version {
            if let Err(e) = crate::http::check_version_and_capabilities(&msg, v) {
                fail(&mut step, &e);
                return step;
            }
        }
        let is_init = msg.method() == Some("initialize");
        let mut session: Option<Session> = if stateless {
            // 2026-07-28 tasks live in holders, as over HTTP: this server's own each in one named
            // after it, a gateway's in the holder of the principal's (the process's one client's).
            match crate::http::holder(server, &msg, store, env) {
                Ok(s) => s,
                Err(e) => {
                    fail(&mut step, &e);
                    return step;
                }
            }
        } else {
            match (self.session.as_deref().and_then(|id| store.load(id)), &msg) {
                (Some(s), _) => Some(s),
                (None, _) if is_init => None,
                // A response (an answer to a question) or a notification before initialize.
                (None, Incoming::Response { .. } | Incoming::Notification { .. }) => None,
                (None, Incoming::Request { .. }) => {
                    fail(
                        &mut step,
                        &Error::InvalidRequest(format!(
                            "send initialize first (protocol {}), or put params._meta[\"io.modelcontextprotocol/protocolVersion\"] = \"{MODERN_VERSION}\" in every request",
                            crate::protocol::LEGACY_VERSIONS[0]
                        )),
                    );
                    return step;
                }
            }
        };
        let mut out = server.handle(msg, &mut session, env);
        if let Some(s) = &session {
            if out.session_changed || (is_init && self.session.is_none()) {
                store.save(s);
            }
            if !stateless && self.session.is_none() {
                self.session = Some(s.id.clone());
            }
        }
        step.log = std::mem::take(&mut out.log);
        step.retry_at = out.retry_at;
        step.answered = out.answered;
        step.lines = out.notifications.into_iter().map(one_line).collect();
        if let Some(ask) = &out.ask {
            step.lines.push(one_line(ask.request.clone()));
        }
        step.ask = out.ask;
        step.watch = out.watch;
        step.forward = out.forward;
        if let Some(f) = step.forward.as_mut() {
            // A gateway task is admitted in the task budget before it leaves, as over HTTP.
            if let Err(e) = crate::http::admit(f, server, store, env.now_ms) {
                step.lines.push(jsonrpc::error(&f.id, &e));
                step.forward = None;
            }
        }
        step.lines.extend(out.response.map(one_line));
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::MemoryStore;
    use crate::Catalog;
    use serde_json::json;

    fn server() -> Server {
        Server::new(
            Catalog::load(&json!({"tools": [
                {"name": "a", "description": "first", "inputSchema": {"type": "object"}, "groups": ["g"]},
                {"name": "b", "description": "second", "inputSchema": {"type": "object"}}
            ]}))
            .unwrap(),
        )
    }

    fn env(id: &str) -> Env {
        Env {
            now_ms: 1_000,
            fresh_id: id.into(),
            ..Env::default()
        }
    }

    fn send(c: &mut Connection, s: &Server, store: &mut MemoryStore, line: &str) -> Vec<Value> {
        let step = c.receive(s, line, store, &env("fresh"));
        step.lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn garbage_is_a_parse_error_and_the_connection_goes_on() {
        let (s, mut store, mut c) = (server(), MemoryStore::default(), Connection::default());
        let out = send(&mut c, &s, &mut store, "{not json");
        assert_eq!(out[0]["error"]["code"], -32700);
        assert_eq!(out[0]["id"], Value::Null);
        let out = send(&mut c, &s, &mut store, "[1]");
        assert_eq!(out[0]["error"]["code"], -32600);
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let out = send(&mut c, &s, &mut store, init);
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-11-25");
    }

    #[test]
    fn a_legacy_session_is_opened_by_initialize_and_kept() {
        let (s, mut store, mut c) = (server(), MemoryStore::default(), Connection::default());
        let before = send(
            &mut c,
            &s,
            &mut store,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
        );
        assert_eq!(before[0]["error"]["code"], -32600, "{before:?}");
        assert!(before[0]["error"]["message"].as_str().unwrap().contains("initialize"));
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        send(&mut c, &s, &mut store, init);
        assert_eq!(c.session_id(), Some("fresh"));
        assert!(send(
            &mut c,
            &s,
            &mut store,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        )
        .is_empty());
        assert!(store.load("fresh").unwrap().initialized);
        let out = send(
            &mut c,
            &s,
            &mut store,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        );
        assert_eq!(out[0]["result"]["tools"].as_array().unwrap().len(), 2);
        assert!(out[0]["result"].get("resultType").is_none());
    }

    #[test]
    fn a_modern_request_is_stateless_and_checked() {
        let (s, mut store, mut c) = (server(), MemoryStore::default(), Connection::default());
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let out = send(
            &mut c,
            &s,
            &mut store,
            &format!(r#"{{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{{{meta}}}}}"#),
        );
        assert!(out[0]["result"]["supportedVersions"].is_array(), "{out:?}");
        let out = send(
            &mut c,
            &s,
            &mut store,
            &format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{"filter":{{"groups":["g"]}},{meta}}}}}"#
            ),
        );
        assert_eq!(out[0]["result"]["resultType"], "complete");
        assert_eq!(out[0]["result"]["tools"].as_array().unwrap().len(), 1);
        assert_eq!(c.session_id(), None);
        let old = r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2024-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let out = send(&mut c, &s, &mut store, old);
        assert_eq!(out[0]["error"]["code"], -32022, "{out:?}");
    }

    #[test]
    fn lines_never_hold_a_newline() {
        assert_eq!(one_line("{\n \"a\": \"x\\ny\"\n}".into()), r#"{"a":"x\ny"}"#);
        assert_eq!(one_line("plain".into()), "plain");
    }
}
