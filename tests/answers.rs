//! Answers only for questions asked (issue 23, item 2): a JSON-RPC response a client POSTs is
//! handed to a waiting stream only when its id is a question this session asked and has not had
//! answered; anything else is dropped at once (202, nothing kept). One session's traffic never
//! clears another's pending answers, and what waits is bounded.

mod common;

use common::{header_fn, T0};
use mcp_sieve::http::{self, MemoryStore};
use mcp_sieve::protocol::ask::{Answers, ANSWER_WAIT_MS};
use mcp_sieve::protocol::{Ask, Env, Server};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

const CONFORMANCE: &str = include_str!("../catalog/conformance.json");

struct World {
    server: Server,
    store: MemoryStore,
    now_ms: i64,
    n: u32,
}

impl World {
    fn new() -> Self {
        World {
            server: Server::new(Catalog::from_json_str(CONFORMANCE).unwrap()),
            store: MemoryStore::default(),
            now_ms: T0,
            n: 0,
        }
    }

    fn post(&mut self, session: Option<&str>, body: &Value) -> http::Response {
        self.n += 1;
        let mut extra = vec![];
        if let Some(s) = session {
            extra.push(("mcp-session-id", s));
        }
        let base = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        let header = header_fn(base, &extra);
        let env = Env {
            now_ms: self.now_ms,
            fresh_id: format!("id{}", self.n),
            ..Default::default()
        };
        let body = body.to_string();
        let req = http::Request {
            method: "POST",
            header: &header,
            body: body.as_bytes(),
        };
        http::handle(&self.server, &http::Config::default(), req, &mut self.store, &env)
    }

    /// A session whose client can be asked for sampling.
    fn open(&mut self) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}, "elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}});
        let r = self.post(None, &init);
        let id = r.headers.iter().find(|(k, _)| k == "Mcp-Session-Id").unwrap().1.clone();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&id), &note).status, 202);
        id
    }

    /// A `tools/call` whose tool asks the client: the question.
    fn ask(&mut self, session: &str) -> Ask {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "test_sampling", "arguments": {"prompt": "two plus two?"}}});
        let r = self.post(Some(session), &call);
        r.ask.expect("the tool asks the client")
    }

    /// The client's answer to request `id`, POSTed in `session`.
    fn answer(&mut self, session: &str, id: &Value) -> http::Response {
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": {"role": "assistant",
            "content": {"type": "text", "text": "four"}, "model": "m"}});
        let r = self.post(Some(session), &reply);
        assert_eq!(r.status, 202, "{}", r.body);
        r
    }
}

#[test]
fn a_response_nobody_asked_for_is_dropped() {
    let mut w = World::new();
    let s = w.open();
    for id in [json!("ask-made-up"), json!(1), json!("ask-id1")] {
        let r = w.answer(&s, &id);
        assert!(r.answered.is_none(), "an answer to no question ({id}) is not kept");
    }
}

#[test]
fn the_answer_to_a_question_asked_is_handed_over_once() {
    let mut w = World::new();
    let s = w.open();
    let ask = w.ask(&s);
    let r = w.answer(&s, &ask.request_id);
    let (key, reply) = r.answered.expect("the answer to the question asked is handed over");
    assert_eq!(key, ask.key());
    assert_eq!(reply["result"]["content"]["text"], "four");
    assert!(
        w.answer(&s, &ask.request_id).answered.is_none(),
        "a second answer to it is dropped"
    );
}

#[test]
fn another_session_cannot_answer_a_question() {
    let mut w = World::new();
    let asked = w.open();
    let other = w.open();
    let ask = w.ask(&asked);
    assert!(
        w.answer(&other, &ask.request_id).answered.is_none(),
        "another session's answer is dropped"
    );
    assert!(
        w.answer(&asked, &ask.request_id).answered.is_some(),
        "the asking session still gets its answer"
    );
}

#[test]
fn a_question_not_answered_in_time_is_forgotten() {
    let mut w = World::new();
    let s = w.open();
    let ask = w.ask(&s);
    w.now_ms += ANSWER_WAIT_MS + 1;
    assert!(
        w.answer(&s, &ask.request_id).answered.is_none(),
        "an answer after the wait is dropped"
    );
}

#[test]
fn a_sessions_answers_survive_any_amount_of_other_traffic() {
    let mut answers = Answers::default();
    let mut w = World::new();
    let s = w.open();
    let ask = w.ask(&s);
    answers.put(ask.key(), &json!({"result": {"content": {"text": "mine"}}}), T0);
    for i in 0..2_000 {
        answers.put(format!("other-session\nask-{i}"), &json!({"result": {}}), T0);
    }
    let kept = answers
        .take(&ask)
        .expect("the answer waiting for this session's stream is still there");
    assert_eq!(kept["result"]["content"]["text"], "mine");
}

#[test]
fn what_waits_is_bounded_in_bytes_and_time() {
    let mut answers = Answers::default();
    let big = json!({"result": {"blob": "x".repeat(900_000)}});
    for i in 0..40 {
        answers.put(format!("s\nask-{i}"), &big, T0);
    }
    assert!(
        answers.bytes() <= mcp_sieve::protocol::ask::ANSWERS_BUDGET,
        "{} bytes wait",
        answers.bytes()
    );
    // Once their streams' wait is over, answers nobody took make room.
    answers.put("s\nlate".into(), &json!({"result": {}}), T0 + ANSWER_WAIT_MS + 1);
    assert!(
        answers.bytes() < 1_000,
        "expired answers are dropped: {} bytes wait",
        answers.bytes()
    );
}
