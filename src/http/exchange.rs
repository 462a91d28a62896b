//! What crosses the boundary between a shell and the transport rules: the [`Request`] a shell
//! hands in, the [`Response`] it gets back (with the long-lived effects it must carry out), and
//! the small builders every part of the transport answers with.

use serde_json::Value;

use crate::error::Error;
use crate::protocol::jsonrpc;
use crate::protocol::{Ask, Watch};

/// An HTTP request as the shell received it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST`, `DELETE`, ...
    pub method: &'a str,
    /// Header lookup (case-insensitive name → value).
    pub header: &'a dyn Fn(&str) -> Option<String>,
    /// The body.
    pub body: &'a [u8],
}

/// What to answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Headers to set.
    pub headers: Vec<(String, String)>,
    /// The body (JSON or an SSE stream).
    pub body: String,
    /// Handle the same request again at this time (see `Outcome::retry_at`).
    pub retry_at: Option<i64>,
    /// Log lines of the outcome (policy filter failures, ignored concern entries): the shell
    /// writes them to the platform's log. They carry no conversation content.
    pub log: Vec<String>,
    /// Gateway mode: perform this request at the upstream, then answer with
    /// [`complete`].
    pub forward: Option<crate::protocol::Forward>,
    /// A long-lived SSE answer (a session's GET stream, `subscriptions/listen`): after `body`,
    /// keep the stream open and send what the watch reports (see [`Watch::tick`]).
    pub watch: Option<Watch>,
    /// A tool asked the client mid-call: after `body` (which carries the request), keep the
    /// stream open until the answer comes (see `protocol::Answers`), then send [`Ask::finish`].
    pub ask: Option<Ask>,
    /// The client answered a question: hand it to the stream waiting under this key.
    pub answered: Option<(String, Value)>,
    /// The session this request ended (`DELETE`): a gateway closes its upstream sessions
    /// (see `upstream::Gateway::closing`).
    pub ended: Option<Box<crate::protocol::Session>>,
}

/// Finishes an HTTP response that carried a [`Forward`] (`response.forward`) with the
/// upstream's reply to it (see [`crate::protocol::Forward::answer`]) and the notifications that
/// came with that reply (sent ahead of it as SSE events when the client accepts SSE).
pub fn complete(mut response: Response, reply: std::result::Result<&Value, &Error>, notes: &[Value]) -> Response {
    let Some(f) = response.forward.take() else {
        return response;
    };
    let answer = f.answer(reply);
    if f.sse && !notes.is_empty() {
        let notes: Vec<String> = notes.iter().map(Value::to_string).collect();
        response.body = sse_body(&notes, Some(&answer));
        response.headers.extend(sse_headers());
        response
    } else {
        complete_json(response, answer)
    }
}

/// Completes a response awaiting its forward with the client's JSON `answer` to it (what
/// [`complete`] gives a reply without notifications).
pub fn complete_json(mut response: Response, answer: String) -> Response {
    response.forward = None;
    response.body = answer;
    response
        .headers
        .push(("Content-Type".into(), "application/json".into()));
    response
}

/// SSE events for `notes`, then `response` (if any).
pub fn sse_body(notes: &[String], response: Option<&str>) -> String {
    let mut body = String::new();
    for m in notes.iter().map(String::as_str).chain(response) {
        body.push_str("event: message\ndata: ");
        body.push_str(m);
        body.push_str("\n\n");
    }
    body
}

pub(super) fn sse_headers() -> [(String, String); 2] {
    [
        ("Content-Type".into(), "text/event-stream".into()),
        ("Cache-Control".into(), "no-cache".into()),
    ]
}

/// `r` with the outcome's log lines.
pub(super) fn logged(log: Vec<String>, r: Response) -> Response {
    Response { log, ..r }
}

/// A JSON answer with no session or forwarding effects.
pub(super) fn json_response(status: u16, body: String) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body,
        ..Default::default()
    }
}

pub(super) fn plain(status: u16, message: &str) -> Response {
    json_response(
        status,
        jsonrpc::error(&Value::Null, &Error::InvalidRequest(message.into())),
    )
}

pub(super) fn rpc_error(status: u16, id: &Value, e: &Error) -> Response {
    json_response(status, jsonrpc::error(id, e))
}
