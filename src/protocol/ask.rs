//! Server-to-client requests during a call (MCP 2025-11-25): a tool that needs the client's LLM
//! (`sampling/createMessage`) or its user (`elicitation/create`) answers its `tools/call` with an
//! SSE stream whose first event is that request; the client POSTs its response to the same
//! session; the stream then carries the tool's result. The core says what to ask ([`Ask`]) and
//! how the answer becomes the result ([`Ask::finish`]); the shell holds the stream open and hands
//! the answer over ([`Answers`]). A response is taken as an answer only when its id is a question
//! the session awaits ([`Session::asked`], at most [`MAX_ASKED`], each for [`ANSWER_WAIT_MS`]);
//! anything else is dropped at once. In 2026-07-28 (no session, no stream) the call answers
//! `resultType: "input_required"` with the request embedded, and the client calls again with
//! `inputResponses`. The conformance suite's fixture tools are the ones here.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::protocol::jsonrpc;
use crate::protocol::session::{Asked, Session};

/// How long a stream waits for the client's answer.
pub const ANSWER_WAIT_MS: i64 = 60_000;

/// A request the server sends the client in the middle of a `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The session the call came in (the answer must come in the same one).
    pub session: String,
    /// The server's request id.
    pub request_id: Value,
    /// The server's request, as sent (the stream's first event).
    pub request: String,
    /// The client's `tools/call` id.
    pub call_id: Value,
    /// The tool that asked.
    pub tool: String,
}

impl Ask {
    /// The key its answer is kept under.
    pub fn key(&self) -> String {
        answer_key(&self.session, &self.request_id)
    }

    /// The `tools/call` response once the client answered (`None`: it did not, in time).
    pub fn finish(&self, answer: Option<&Value>) -> String {
        let Some(answer) = answer else {
            let e = Error::Internal(format!(
                "tool \"{}\" asked the client and got no answer within {} s",
                self.tool,
                ANSWER_WAIT_MS / 1000
            ));
            return jsonrpc::error(&self.call_id, &e);
        };
        if let Some(e) = answer.get("error") {
            let text = format!("the client refused: {}", e["message"].as_str().unwrap_or("no message"));
            return jsonrpc::ok(
                &self.call_id,
                &json!({"content": [{"type": "text", "text": text}], "isError": true}),
            );
        }
        jsonrpc::ok(&self.call_id, &result_of(&self.tool, &answer["result"]))
    }
}

/// The tool's result once the client answered with `r` (a sampling or elicitation result).
pub(crate) fn result_of(tool: &str, r: &Value) -> Value {
    let text = match tool {
        "test_sampling" => {
            let said = r["content"]["text"].as_str().unwrap_or_default();
            format!("LLM response: {said}")
        }
        "test_elicitation" => format!(
            "User response: action: {}, content: {}",
            r["action"].as_str().unwrap_or("none"),
            r.get("content").unwrap_or(&Value::Null)
        ),
        _ => format!(
            "Elicitation completed: action={}, content={}",
            r["action"].as_str().unwrap_or("none"),
            r.get("content").unwrap_or(&Value::Null)
        ),
    };
    json!({"content": [{"type": "text", "text": text}]})
}

/// The key of the one input a fixture tool asks for in 2026-07-28.
pub(crate) const INPUT_KEY: &str = "ask";

/// The key of an answer: the session and the server's request id.
pub fn answer_key(session: &str, request_id: &Value) -> String {
    format!("{session}\n{request_id}")
}

/// Most questions one session awaits at once: asking another forgets the oldest.
pub const MAX_ASKED: usize = 16;

/// Records that `session` awaits the answer to request `id` for [`ANSWER_WAIT_MS`] from `now_ms`
/// (questions whose wait is over are forgotten, and beyond [`MAX_ASKED`] the oldest).
pub(crate) fn expect(session: &mut Session, id: &Value, now_ms: i64) {
    session.asked.retain(|a| a.until_ms >= now_ms);
    if session.asked.len() >= MAX_ASKED {
        session.asked.remove(0);
    }
    session.asked.push(Asked {
        id: id.clone(),
        until_ms: now_ms.saturating_add(ANSWER_WAIT_MS),
    });
}

/// Whether a response with `id` answers a question `session` awaits at `now_ms`; if so, the
/// question is no longer awaited (a second answer to it is dropped). Returns whether
/// `session.asked` changed (then it must be saved) and whether the response is an answer.
pub(crate) fn answered(session: &mut Session, id: &Value, now_ms: i64) -> (bool, bool) {
    let before = session.asked.len();
    session.asked.retain(|a| a.until_ms >= now_ms);
    let hit = session.asked.iter().position(|a| &a.id == id);
    if let Some(i) = hit {
        session.asked.remove(i);
    }
    (session.asked.len() != before, hit.is_some())
}

/// Most bytes of answers waiting at once in one [`Answers`] (all sessions of a process or
/// isolate): an answer beyond it is dropped (its stream reports that no answer came), never one
/// already waiting.
pub const ANSWERS_BUDGET: usize = 16 << 20;

/// Answers to questions asked (the core hands over only those, each within the body limit), kept
/// as JSON text until the stream that asked takes them, at most until its wait is over (a shell
/// keeps one per isolate or process). One session's answers never displace another's.
#[derive(Debug, Default)]
pub struct Answers {
    waiting: HashMap<String, Waiting>,
    bytes: usize,
}

#[derive(Debug)]
struct Waiting {
    text: String,
    until_ms: i64,
}

impl Answers {
    /// Keeps `answer` under `key` (see [`Ask::key`]) at `now_ms` until its stream's wait is over;
    /// answers whose wait is over are dropped first. Dropped instead when [`ANSWERS_BUDGET`]
    /// would be passed, or when an answer already waits under `key`.
    pub fn put(&mut self, key: String, answer: &Value, now_ms: i64) {
        let mut freed = 0;
        self.waiting.retain(|_, w| {
            let keep = w.until_ms >= now_ms;
            if !keep {
                freed += w.text.len();
            }
            keep
        });
        self.bytes -= freed;
        let text = answer.to_string();
        if self.bytes + text.len() > ANSWERS_BUDGET || self.waiting.contains_key(&key) {
            return;
        }
        self.bytes += text.len();
        let until_ms = now_ms.saturating_add(ANSWER_WAIT_MS);
        self.waiting.insert(key, Waiting { text, until_ms });
    }

    /// Takes the answer to `ask`, if it came.
    pub fn take(&mut self, ask: &Ask) -> Option<Value> {
        let w = self.waiting.remove(&ask.key())?;
        self.bytes -= w.text.len();
        serde_json::from_str(&w.text).ok()
    }

    /// The bytes of the answers waiting.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// What fixture tool `tool` asks the client, with `args`: the method, its params, and the
/// client capability it needs. `None` for a tool that asks nothing.
pub(crate) fn request_of(tool: &str, args: &Map<String, Value>) -> Option<Result<(&'static str, Value, &'static str)>> {
    let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    Some(Ok(match tool {
        "test_sampling" => {
            let Some(prompt) = text("prompt") else {
                return Some(Err(Error::params("params.arguments.prompt is required (a string)")));
            };
            (
                "sampling/createMessage",
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": prompt}}], "maxTokens": 100}),
                "sampling",
            )
        }
        "test_elicitation" => {
            let Some(message) = text("message") else {
                return Some(Err(Error::params("params.arguments.message is required (a string)")));
            };
            (
                "elicitation/create",
                json!({"message": message, "requestedSchema": {"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                    "required": ["username", "email"]}}),
                "elicitation",
            )
        }
        "test_elicitation_sep1034_defaults" => (
            "elicitation/create",
            json!({"message": "Please review the defaults", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "default": true}}}}),
            "elicitation",
        ),
        "test_elicitation_sep1330_enums" => (
            "elicitation/create",
            json!({"message": "Please choose", "requestedSchema": {"type": "object", "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}]},
                "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]},
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                "titledMulti": {"type": "array", "items": {"anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"}]}}}}}),
            "elicitation",
        ),
        _ => return None,
    }))
}
