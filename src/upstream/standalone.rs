//! An upstream session's standalone stream (Streamable HTTP: the `GET` SSE stream of a session,
//! where a server sends what belongs to no request), for the upstream sessions a gateway opens
//! for one downstream session: when to open it ([`opens_stream`]) and what each message on it
//! becomes for that downstream session ([`on_stream`]): its log messages (at or above the level
//! the client set) and `resources/updated` go to the client's own standalone stream; a list
//! change makes the gateway fetch the lists again (and tell subscribed clients, as now); the
//! upstream's requests (`roots/list`, sampling, elicitation) are asked of the client on its
//! stream like a call's are (`Relay`), or refused when it has no stream open. The shell moves
//! the bytes; an upstream that answers the `GET` with 405 has no such stream.

use serde_json::Value;

use super::relay::{refusal, Relay, Relayed};
use super::{AnswerReader, Post};
use crate::error::Error;
use crate::protocol::{log_wanted, Forward};

/// Most messages queued for one downstream session's stream while its client has not taken them
/// (an upstream that floods cannot grow a shell's memory without bound).
pub const MAX_QUEUED: usize = 256;

/// Queues `message` for a client's stream, dropping the oldest past [`MAX_QUEUED`].
pub fn enqueue(queue: &mut Vec<String>, message: String) {
    if queue.len() >= MAX_QUEUED {
        queue.remove(0);
    }
    queue.push(message);
}

/// What one message on an upstream session's standalone stream becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum FromStream {
    /// A request, a notification for the client, or nothing (see [`Relayed`]; an `Ask` goes on
    /// the client's standalone stream and its answer is POSTed upstream).
    Relay(Relayed),
    /// The upstream's lists changed: fetch them again.
    ListChanged,
}

/// The headers of the `GET` that opens the standalone stream of the upstream session `post`
/// confirmed (its `notifications/initialized`, in a session with an id); `None` for any other
/// POST.
pub fn opens_stream(post: &Post) -> Option<Vec<(String, String)>> {
    let msg: Value = serde_json::from_str(&post.body).ok()?;
    if msg["method"] != "notifications/initialized" {
        return None;
    }
    let has = |name: &str| post.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    if !has("Mcp-Session-Id") {
        return None;
    }
    let mut headers: Vec<(String, String)> = post
        .headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("Content-Type") && !k.eq_ignore_ascii_case("Accept"))
        .cloned()
        .collect();
    headers.push(("Accept".into(), "text/event-stream".into()));
    Some(headers)
}

/// A reader of a standalone stream's events (it carries no response: every message is an event).
pub fn stream_reader(cap: usize) -> AnswerReader {
    AnswerReader::new("text/event-stream", r#"{"id":"dev.mcp-sieve/standalone"}"#, cap)
}

/// What `msg`, sent on the standalone stream of downstream session `session`'s session at the
/// upstream labelled `upstream`, becomes. `level`: the level the client set (`logging/setLevel`;
/// none set: every log message goes); `reachable`: whether the client has a standalone stream
/// open now (else nothing reaches it and questions are refused); `nonce`: unique in the process
/// (the question's id derives from it).
pub fn on_stream(
    msg: &Value,
    session: &str,
    upstream: &str,
    level: Option<&str>,
    reachable: bool,
    nonce: &str,
) -> FromStream {
    let Some(method) = msg["method"].as_str() else {
        return FromStream::Relay(Relayed::Drop);
    };
    let id = msg.get("id").filter(|i| !i.is_null());
    let relayed = match (id, method) {
        (None, m) if m.ends_with("/list_changed") => return FromStream::ListChanged,
        (None, "notifications/message") if reachable && log_wanted(level, msg, true) => Relayed::Note(msg.to_string()),
        (None, "notifications/resources/updated") if reachable => Relayed::Note(msg.to_string()),
        (None, _) => Relayed::Drop,
        (Some(id), m) if !reachable && m != "ping" => Relayed::Reply(refusal(
            id,
            &Error::InvalidRequest(format!(
                "the gateway cannot relay \"{m}\" from {upstream}: its client has no stream open to be asked on (it opens one with GET)"
            )),
        )),
        (Some(_), _) => {
            // Asked like a call's question, in the name of the upstream.
            let from = Forward {
                method: upstream.to_string(),
                session: Some(session.to_string()),
                ..Forward::default()
            };
            Relay::new(&from, nonce, true).0.on_message(msg)
        }
    };
    FromStream::Relay(relayed)
}

/// The headers of a POST (an answer to a request the upstream sent on its stream) in the upstream
/// session whose stream the `GET` with `stream_headers` opened: the same session and version
/// headers, a JSON body, and the `Accept` of a POST.
pub fn post_headers(stream_headers: &[(String, String)]) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = stream_headers
        .iter()
        .filter(|(k, _)| !k.eq_ignore_ascii_case("Accept"))
        .cloned()
        .collect();
    h.push(("Content-Type".into(), "application/json".into()));
    h.push(("Accept".into(), "application/json, text/event-stream".into()));
    h
}

/// The upstream's answer to its request `upstream_id` from the client's `answer` (see
/// `Relay::answer`).
pub fn stream_answer(upstream_id: &Value, answer: Option<&Value>) -> Value {
    Relay::new(&Forward::default(), "", true).0.answer(upstream_id, answer)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_queue_keeps_the_newest_messages_up_to_its_cap() {
        let mut q = Vec::new();
        for n in 0..MAX_QUEUED + 3 {
            enqueue(&mut q, n.to_string());
        }
        assert_eq!(q.len(), MAX_QUEUED);
        assert_eq!(q[0], "3");
        assert_eq!(q.last().unwrap(), &(MAX_QUEUED + 2).to_string());
    }

    #[test]
    fn the_stream_opens_after_a_session_is_confirmed() {
        let post = |body: &str, session: bool| Post {
            headers: [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Authorization", "Bearer t"),
            ]
            .into_iter()
            .chain(session.then_some(("Mcp-Session-Id", "u1")))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            body: body.into(),
        };
        let confirmed = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let headers = opens_stream(&post(confirmed, true)).unwrap();
        for h in [
            ("Mcp-Session-Id", "u1"),
            ("Authorization", "Bearer t"),
            ("Accept", "text/event-stream"),
        ] {
            assert!(headers.contains(&(h.0.into(), h.1.into())), "{h:?}");
        }
        assert!(!headers.iter().any(|(k, _)| k == "Content-Type"));
        assert_eq!(opens_stream(&post(confirmed, false)), None, "no session: no stream");
        assert_eq!(opens_stream(&post(r#"{"id":1,"method":"tools/call"}"#, true)), None);
    }

    #[test]
    fn messages_reach_the_session_or_are_refused() {
        let on = |msg: &Value, level: Option<&str>, reachable: bool| {
            on_stream(msg, "s1", "upstream \"everything\"", level, reachable, "n1")
        };
        let log =
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
        assert!(matches!(on(&log, None, true), FromStream::Relay(Relayed::Note(_))));
        assert!(matches!(
            on(&log, Some("debug"), true),
            FromStream::Relay(Relayed::Note(_))
        ));
        assert_eq!(on(&log, Some("error"), true), FromStream::Relay(Relayed::Drop));
        assert_eq!(on(&log, None, false), FromStream::Relay(Relayed::Drop));
        let updated = json!({"method": "notifications/resources/updated", "params": {"uri": "demo://1"}});
        assert!(matches!(
            on(&updated, Some("error"), true),
            FromStream::Relay(Relayed::Note(_))
        ));
        let changed = json!({"method": "notifications/tools/list_changed"});
        assert_eq!(on(&changed, None, false), FromStream::ListChanged);
        // A question goes to the session on its stream, in the upstream's name.
        let roots = json!({"jsonrpc": "2.0", "id": 4, "method": "roots/list"});
        let FromStream::Relay(Relayed::Ask {
            ask,
            upstream_id,
            method,
        }) = on(&roots, None, true)
        else {
            panic!("not asked")
        };
        assert_eq!(
            (ask.session.as_str(), upstream_id, method.as_str()),
            ("s1", json!(4), "roots/list")
        );
        assert_eq!(ask.tool, "upstream \"everything\"");
        // Not while it has no stream open: refused at once, saying why.
        let FromStream::Relay(Relayed::Reply(e)) = on(&roots, None, false) else {
            panic!("not refused")
        };
        assert_eq!(e["id"], json!(4));
        assert!(e["error"]["message"].as_str().unwrap().contains("no stream open"));
        let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
        assert_eq!(
            on(&ping, None, false),
            FromStream::Relay(Relayed::Reply(json!({"jsonrpc": "2.0", "id": 5, "result": {}})))
        );
        // The reader parses each event, with no response to wait for.
        let mut reader = stream_reader(1 << 16);
        let sse = format!("event: message\ndata: {log}\n\nevent: message\ndata: {roots}\n\n");
        assert!(!reader.push(sse.as_bytes()).unwrap());
        assert_eq!(reader.take_events(), vec![log, roots]);
    }
}
