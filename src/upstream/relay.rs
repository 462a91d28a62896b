//! What flows the other way during a forwarded request: the upstream's own requests
//! (`sampling/createMessage`, `elicitation/create`, `roots/list`) go to the downstream client that
//! made the call, as the questions this server's own tools ask (`protocol::ask`: on the call's
//! SSE stream, answered by a response POSTed to the same session), and the answer goes back
//! upstream; its progress notifications (for the call's own `progressToken`, which is replaced
//! by one unique to the call on the way up, so a process shared by several sessions cannot mix
//! them up) and log messages go on the call's stream. A [`Relay`] decides, the shell only moves
//! the messages: the driver reading the upstream's answer hands each message it finds
//! (`AnswerReader::take_events`) to [`Relay::on_message`] and carries out the [`Relayed`] step.
//!
//! A stateless 2026-07-28 caller is asked the 2026-07-28 way: its call is answered
//! `resultType: "input_required"` with the question under a key unique to it
//! ([`input_required`]); the shell keeps the upstream exchange waiting, and when the client calls
//! again with `inputResponses` under that key ([`input_response`]) the answer goes up and the
//! same exchange goes on. Its notifications are not relayed (its answer is one JSON result).

use serde_json::{json, Value};

use super::Post;
use crate::error::{Error, Result};
use crate::http::SessionStore;
use crate::protocol::jsonrpc::ASKING_METHODS;
use crate::protocol::{ask, Ask, Forward, Session};

/// The downstream client of a relayed call, as a shell reaches it (an SSE stream or stdout, a
/// Durable Object's queue, a 2026-07-28 caller's next call): what [`carry`] needs of it.
pub trait Downstream {
    /// Sends the client one notification during the call.
    fn send(&self, note: String);
    /// Records that the client owes the answer to `ask` (a question of `method`): a session's
    /// [`await_answer`]; nothing for a stateless caller.
    fn expect(&self, ask: &Ask, method: &str) -> Result<()>;
}

/// What is left of a relayed message once [`carry`] did its part.
#[derive(Debug)]
pub enum Carried {
    /// Send this to the upstream (in the same session), or nothing.
    Upstream(Option<Value>),
    /// Put `ask` to the client, wait for its answer, and send the upstream
    /// [`Relay::answer`]`(upstream_id, …)` — the one step a shell awaits.
    Ask {
        /// The question, as the client is asked it.
        ask: Box<Ask>,
        /// The upstream's id of its request.
        upstream_id: Value,
    },
}

/// Carries out `step` (what [`Relay::on_message`] made of an upstream's message) over `down`,
/// written once for every shell: notifications go to the client, replies and refusals to the
/// upstream, a question the client may be asked is left to the shell to ask ([`Carried::Ask`]).
pub fn carry<D: Downstream + ?Sized>(down: &D, step: Relayed) -> Carried {
    match step {
        Relayed::Drop => Carried::Upstream(None),
        Relayed::Note(n) => {
            down.send(n);
            Carried::Upstream(None)
        }
        Relayed::Reply(m) => Carried::Upstream(Some(m)),
        Relayed::Ask {
            ask,
            upstream_id,
            method,
        } => match down.expect(&ask, &method) {
            Err(e) => Carried::Upstream(Some(refusal(&upstream_id, &e))),
            Ok(()) => Carried::Ask { ask, upstream_id },
        },
    }
}

/// The client capabilities the gateway declares to its upstreams when its shell relays their
/// questions (an upstream asks nothing of a client that did not declare the capability). Not
/// `roots`: servers ask for roots outside any call (at initialization, on their standalone
/// stream, which the gateway does not open), and a stdio process is shared by every session,
/// so one client's roots cannot be given to it. A `roots/list` that does come on a call's
/// stream is relayed like the others.
pub fn relayed_capabilities() -> Value {
    json!({"sampling": {}, "elicitation": {}})
}

/// The client capability the downstream client must have declared to be asked `method`; `None`
/// for a request that is not relayed.
fn capability(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// What to do with one message the upstream sent during the exchange.
#[derive(Debug, Clone, PartialEq)]
pub enum Relayed {
    /// Ask the downstream client (see [`await_answer`]): send `ask.request` on the call's
    /// stream, wait for the answer (`protocol::Answers`), then POST [`Relay::answer`] upstream
    /// (request id `upstream_id`).
    Ask {
        /// The question as the downstream client sees it.
        ask: Box<Ask>,
        /// The upstream's request id.
        upstream_id: Value,
        /// The upstream's method.
        method: String,
    },
    /// Send this notification on the call's stream.
    Note(String),
    /// POST this message (an answer of ours) to the upstream at once.
    Reply(Value),
    /// Nothing to do.
    Drop,
}

/// One forwarded request's relay.
#[derive(Debug, Clone, PartialEq)]
pub struct Relay {
    /// The downstream session (`None`: a stateless request, which cannot be asked).
    session: Option<String>,
    /// Whether the shell can reach the caller while the call runs (over HTTP: it accepts SSE).
    live: bool,
    /// A 2026-07-28 call: its client's capabilities (in the call's `_meta`) when it has any.
    stateless: Option<Value>,
    call_id: Value,
    label: String,
    nonce: String,
    asked: u64,
    /// The downstream client's `progressToken` and the one sent upstream in its place.
    token: Option<(Value, Value)>,
}

impl Relay {
    /// The relay of `forward`, whose ids and progress token derive from `nonce` (unique in the
    /// process), and the params to send upstream (the `progressToken` replaced). `live`: whether
    /// the shell can reach the caller while the call runs (over HTTP, when it accepts SSE);
    /// if not, nothing is relayed and questions are refused.
    pub fn new(forward: &Forward, nonce: &str, live: bool) -> (Relay, Value) {
        let mut params = forward.params.clone();
        let token = params
            .get_mut("_meta")
            .and_then(|m| m.get_mut("progressToken"))
            .filter(|t| !t.is_null())
            .map(|t| {
                let ours = json!(format!("relay-{nonce}"));
                (std::mem::replace(t, ours.clone()), ours)
            });
        let label = match forward.params["name"].as_str() {
            Some(name) => format!("{} \"{name}\"", forward.method),
            None => forward.method.clone(),
        };
        let relay = Relay {
            session: forward.session.clone().filter(|_| !forward.stateless),
            live,
            stateless: forward
                .stateless
                .then(|| forward.params["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone()),
            call_id: forward.id.clone(),
            label,
            nonce: nonce.to_string(),
            asked: 0,
            token,
        };
        (relay, params)
    }

    /// Whether a question could be relayed at all (a 2025-11-25 session made the call and can
    /// be reached during it).
    pub fn can_ask(&self) -> bool {
        self.live && (self.session.is_some() || self.stateless.is_some())
    }

    /// Whether a question went to the client (the upstream then waits on its answer too).
    pub fn asked(&self) -> bool {
        self.asked > 0
    }

    /// What to do with `msg`, a request or notification the upstream sent while the exchange ran.
    pub fn on_message(&mut self, msg: &Value) -> Relayed {
        let Some(method) = msg["method"].as_str() else {
            return Relayed::Drop;
        };
        let Some(id) = msg.get("id").filter(|i| !i.is_null()) else {
            return self.on_notification(method, msg);
        };
        if method == "ping" {
            return Relayed::Reply(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        }
        let refuse = |why: String| Relayed::Reply(refusal(id, &Error::MethodNotFound(why)));
        if capability(method).is_none() {
            return refuse(format!("the gateway does not relay \"{method}\" to its clients"));
        }
        if let Some(caps) = &self.stateless {
            let cap = capability(method).unwrap_or("experimental");
            if caps.get(cap).is_none() {
                let e = Error::InvalidRequest(format!(
                    "{} asks the client for \"{method}\", but the client did not declare the {cap} capability",
                    self.label
                ));
                return Relayed::Reply(refusal(id, &e));
            }
        }
        let Some(session) = self
            .session
            .clone()
            .or_else(|| self.stateless.as_ref().map(|_| String::new()))
        else {
            return refuse(format!(
                "the call came from a client without a session: the gateway cannot relay \"{method}\" to it"
            ));
        };
        if !self.live {
            let why = if self.stateless.is_some() {
                "this call is not run where the client's answer could reach it"
            } else {
                "the client cannot be reached during the call (it does not accept an SSE answer)"
            };
            return refuse(format!("{why}: the gateway cannot relay \"{method}\" to it"));
        }
        if self.asked >= crate::protocol::ask::MAX_ASKED as u64 {
            let e = Error::InvalidRequest(format!(
                "the gateway relays at most {} questions per call",
                crate::protocol::ask::MAX_ASKED
            ));
            return Relayed::Reply(refusal(id, &e));
        }
        self.asked += 1;
        let request_id = json!(format!("{}{}-{}", crate::protocol::RELAYED_KEY, self.nonce, self.asked));
        let mut request = msg.clone();
        request["id"] = request_id.clone();
        Relayed::Ask {
            ask: Box::new(Ask {
                session,
                request_id,
                request: request.to_string(),
                call_id: self.call_id.clone(),
                tool: self.label.clone(),
            }),
            upstream_id: id.clone(),
            method: method.to_string(),
        }
    }

    fn on_notification(&self, method: &str, msg: &Value) -> Relayed {
        if !self.live || self.stateless.is_some() {
            return Relayed::Drop;
        }
        match method {
            "notifications/progress" => {
                let Some((theirs, ours)) = &self.token else {
                    return Relayed::Drop;
                };
                if msg["params"]["progressToken"] != *ours {
                    return Relayed::Drop; // another call's
                }
                let mut note = msg.clone();
                note["params"]["progressToken"] = theirs.clone();
                Relayed::Note(note.to_string())
            }
            "notifications/message" => Relayed::Note(msg.to_string()),
            // List changes are taken by the gateway's refresh; the rest concerns the upstream
            // session, not the call.
            _ => Relayed::Drop,
        }
    }

    /// Whether `note` (a notification of the upstream's reply) was taken by the relay as it came
    /// (relayed, or dropped as another call's), so it is not passed on again with the result.
    pub fn relays(&self, note: &Value) -> bool {
        self.live
            && self.stateless.is_none()
            && matches!(
                note["method"].as_str(),
                Some("notifications/progress" | "notifications/message")
            )
    }

    /// The upstream's answer to its request `upstream_id`, from the downstream client's answer
    /// (a message with `result` or `error`; `None`: none came in time).
    pub fn answer(&self, upstream_id: &Value, answer: Option<&Value>) -> Value {
        match answer {
            Some(a) if a.get("result").is_some() => json!({"jsonrpc": "2.0", "id": upstream_id, "result": a["result"]}),
            Some(a) if a.get("error").is_some() => json!({"jsonrpc": "2.0", "id": upstream_id, "error": a["error"]}),
            _ => refusal(
                upstream_id,
                &Error::Internal(format!(
                    "the client did not answer within {} s",
                    ask::ANSWER_WAIT_MS / 1000
                )),
            ),
        }
    }
}

/// The answer to a 2026-07-28 call whose upstream asks `ask` (see [`Relayed::Ask`]; its session
/// is empty): `resultType: "input_required"`, the question under its own key.
pub fn input_required(ask: &Ask) -> String {
    let q: Value = serde_json::from_str(&ask.request).unwrap_or_default();
    let key = ask.request_id.as_str().unwrap_or_default();
    let mut requests = serde_json::Map::new();
    requests.insert(key.to_string(), json!({"method": q["method"], "params": q["params"]}));
    crate::protocol::jsonrpc::ok(
        &ask.call_id,
        &json!({"resultType": "input_required", "inputRequests": requests}),
    )
}

/// The answer a 2026-07-28 call brings back (`params.inputResponses`) to a question asked by
/// [`input_required`]: its key and the answer as a response message (for [`Relay::answer`]).
pub fn input_response(params: &Value) -> Option<(String, Value)> {
    let (key, answer) = params["inputResponses"]
        .as_object()?
        .iter()
        .find(|(k, _)| k.starts_with(crate::protocol::RELAYED_KEY))?;
    Some((key.clone(), json!({"result": answer})))
}

/// The client capabilities a relayed question may need (see [`capability`]).
const ASKABLE: [&str; 3] = ["sampling", "elicitation", "roots"];

/// Whether a stateless 2026-07-28 call is relayed (asked with [`input_required`]): a `tools/call`,
/// `prompts/get` or `resources/read` (`jsonrpc::ASKING_METHODS`) that brings the answer to a relayed
/// question, or one to an upstream that asks mid-call
/// (`asks_midcall`: spoken to in a session era; one spoken to in 2026-07-28 asks by answering
/// `input_required`, see `rounds`) whose client declared a capability the question may need.
/// That includes a call run in its principal's holder of tasks (its client declared the tasks
/// extension: `protocol::gateway_holder`), which may create a task once answered: the exchange
/// waits there, and the task is recorded there when the upstream answers it. The others have
/// what their upstream asks mid-call refused at once (the Worker runs only these in a Durable
/// Object where the exchange can wait: one of their own, or the holder).
pub fn relays_stateless(forward: &Forward, asks_midcall: bool) -> bool {
    let caps = &forward.params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    forward.stateless
        && ASKING_METHODS.contains(&forward.method.as_str())
        && (input_response(&forward.params).is_some() || asks_midcall && ASKABLE.iter().any(|c| caps.get(c).is_some()))
}

/// The name a shell keeps a stateless call's waiting exchange under: `id` (the relay's nonce, or
/// its question's key) bound to the caller's `principal`, so that only the same caller's call
/// that brings the answer finds it (the unguessable key alone when there is no principal, as a
/// 2026-07-28 task's id).
pub fn waiting_name(id: &str, principal: Option<&str>) -> String {
    format!("relay\n{}\n{id}", principal.unwrap_or_default())
}

/// Where the exchange waits ([`waiting_name`] of its relay's nonce) whose question a request
/// of `jsonrpc::ASKING_METHODS` with `params` answers (`inputResponses` under a key
/// `relay-{nonce}-{n}`); `None` for another request.
pub fn waiting_for(method: &str, params: &Value, principal: Option<&str>) -> Option<String> {
    if !ASKING_METHODS.contains(&method) {
        return None;
    }
    let (key, _) = input_response(params)?;
    let nonce = key.strip_prefix(crate::protocol::RELAYED_KEY)?.rsplit_once('-')?.0;
    (!nonce.is_empty() && nonce.len() <= 64).then(|| waiting_name(nonce, principal))
}

/// The answer to a call (`response`, not forwarded) whose `inputResponses.{key}` answers no
/// question waiting for this caller: `-32602`.
pub fn unawaited(mut response: crate::http::Response, key: &str) -> crate::http::Response {
    let id = response.forward.take().map(|f| f.id).unwrap_or_default();
    let e = Error::params(format!(
        "params.inputResponses.{key} answers no question awaiting this caller's answer (a question is answered by the caller it was asked, within {} s)",
        ask::ANSWER_WAIT_MS / 1000
    ));
    response.body = crate::protocol::jsonrpc::error(&id, &e);
    response
        .headers
        .push(("Content-Type".into(), "application/json".into()));
    response
}

/// `text` (a JSON-RPC response of the exchange) as the answer to the request `id`: a call that
/// brought an answer gets what the exchange does next under its own id.
pub fn answering(text: String, id: &Value) -> String {
    match serde_json::from_str::<Value>(&text) {
        Ok(mut msg) if msg.is_object() => {
            msg["id"] = id.clone();
            msg.to_string()
        }
        _ => text,
    }
}

/// A JSON-RPC error answering the upstream's request `id`.
pub fn refusal(id: &Value, e: &Error) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code(), "message": e.to_string()}})
}

/// The POST carrying our `message` (an answer to the upstream's request) in the session of the
/// request in flight (`headers`: that request's).
pub fn answer_post(headers: &[(String, String)], message: &Value) -> Post {
    Post {
        headers: headers.to_vec(),
        body: message.to_string(),
    }
}

/// Records in the downstream session (in `store`) that it awaits the answer to `ask` (a question
/// of `method`, see `protocol::ask`), so that the response its client POSTs is taken; refused
/// when the session is gone or its client did not declare the capability `method` needs.
pub fn await_answer(store: &mut dyn SessionStore, ask: &Ask, method: &str, now_ms: i64) -> Result<()> {
    let mut s: Session = store
        .load(&ask.session)
        .ok_or_else(|| Error::InvalidRequest("the client's session ended".into()))?;
    let cap = capability(method).unwrap_or("experimental");
    if s.initialize["capabilities"].get(cap).is_none() {
        return Err(Error::InvalidRequest(format!(
            "{} asks the client for \"{method}\", but the client did not declare the {cap} capability",
            ask.tool
        )));
    }
    ask::expect(&mut s, &ask.request_id, now_ms);
    store.save(&s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::MemoryStore;

    fn call(session: Option<&str>) -> Forward {
        Forward {
            id: json!(7),
            method: "tools/call".into(),
            params: json!({"name": "trigger-sampling-request", "_meta": {"progressToken": 3}}),
            session: session.map(str::to_string),
            ..Forward::default()
        }
    }

    /// A downstream that records what it is sent and refuses or accepts to be asked.
    struct Recording(std::cell::RefCell<Vec<String>>, bool);

    impl Downstream for Recording {
        fn send(&self, note: String) {
            self.0.borrow_mut().push(note);
        }
        fn expect(&self, _ask: &Ask, method: &str) -> Result<()> {
            match self.1 {
                true => Ok(()),
                false => Err(Error::params(format!("the client cannot answer {method}"))),
            }
        }
    }

    #[test]
    fn carry_sends_notes_down_replies_up_and_leaves_only_the_wait_to_the_shell() {
        let (mut r, _) = Relay::new(&call(Some("s1")), "n1", true);
        let down = Recording(Default::default(), true);
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "relay-n1", "progress": 1}});
        assert!(matches!(carry(&down, r.on_message(&progress)), Carried::Upstream(None)));
        let noted: Value = serde_json::from_str(&down.0.borrow()[0]).unwrap();
        assert_eq!(noted["params"]["progressToken"], json!(3), "the client's own token");
        let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        let Carried::Upstream(Some(pong)) = carry(&down, r.on_message(&ping)) else {
            panic!("a ping is answered")
        };
        assert_eq!(pong["id"], json!(9));
        let q = json!({"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {}});
        let Carried::Ask { ask, upstream_id } = carry(&down, r.on_message(&q)) else {
            panic!("asked")
        };
        assert_eq!((ask.session.as_str(), upstream_id), ("s1", json!(0)));
        // A client that cannot be asked: the upstream hears a refusal at once.
        let refusing = Recording(Default::default(), false);
        let Carried::Upstream(Some(no)) = carry(&refusing, r.on_message(&q)) else {
            panic!("refused")
        };
        assert!(
            no["error"]["message"].as_str().unwrap().contains("cannot answer"),
            "{no}"
        );
    }

    #[test]
    fn questions_go_to_the_calling_session_and_answers_come_back() {
        let (mut r, params) = Relay::new(&call(Some("s1")), "n1", true);
        assert_eq!(params["_meta"]["progressToken"], json!("relay-n1"));
        assert_eq!(params["name"], json!("trigger-sampling-request"));
        let q = json!({"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {"maxTokens": 5}});
        let Relayed::Ask {
            ask,
            upstream_id,
            method,
        } = r.on_message(&q)
        else {
            panic!("not relayed")
        };
        assert_eq!(
            (upstream_id.clone(), method.as_str()),
            (json!(0), "sampling/createMessage")
        );
        assert_eq!(ask.session, "s1");
        assert_eq!(ask.call_id, json!(7));
        let sent: Value = serde_json::from_str(&ask.request).unwrap();
        assert_eq!(sent["id"], ask.request_id);
        assert_eq!(sent["params"], json!({"maxTokens": 5}));
        // The session must await it, and its client must have declared the capability.
        let mut store = MemoryStore::default();
        assert!(await_answer(&mut store, &ask, &method, 1).is_err(), "no session");
        store.save(&Session {
            id: "s1".into(),
            initialize: json!({"capabilities": {"elicitation": {}}}).into(),
            ..Session::default()
        });
        let e = await_answer(&mut store, &ask, &method, 1).unwrap_err();
        assert!(e.to_string().contains("sampling capability"), "{e}");
        let mut s = store.load("s1").unwrap();
        s.initialize = json!({"capabilities": {"sampling": {}}}).into();
        store.save(&s);
        await_answer(&mut store, &ask, &method, 1).unwrap();
        assert_eq!(store.load("s1").unwrap().asked[0].id, ask.request_id);
        // Its answer goes back under the upstream's id; no answer is an error.
        let a = json!({"jsonrpc": "2.0", "id": ask.request_id, "result": {"content": {"type": "text", "text": "hi"}}});
        assert_eq!(
            r.answer(&upstream_id, Some(&a)),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"content": {"type": "text", "text": "hi"}}})
        );
        assert_eq!(r.answer(&upstream_id, None)["error"]["code"], json!(-32603));
        let refused = json!({"id": "x", "error": {"code": -1, "message": "no"}});
        assert_eq!(r.answer(&json!(4), Some(&refused))["error"]["message"], json!("no"));
        // A second question gets another id.
        let Relayed::Ask { ask: second, .. } = r.on_message(&q) else {
            panic!()
        };
        assert_ne!(second.request_id, ask.request_id);
    }

    #[test]
    fn at_most_max_asked_questions_per_call_are_relayed() {
        let (mut r, _) = Relay::new(&call(Some("s1")), "n1", true);
        let max = crate::protocol::ask::MAX_ASKED;
        for i in 0..max {
            let q = json!({"jsonrpc": "2.0", "id": i, "method": "elicitation/create"});
            assert!(matches!(r.on_message(&q), Relayed::Ask { .. }), "question {i}");
        }
        let q = json!({"jsonrpc": "2.0", "id": max, "method": "elicitation/create"});
        let Relayed::Reply(refused) = r.on_message(&q) else {
            panic!("question {max} relayed")
        };
        assert_eq!(refused["id"], json!(max));
        assert!(refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {max} questions")));
    }

    #[test]
    fn notifications_reach_the_call_with_its_own_token() {
        let (mut r, _) = Relay::new(&call(Some("s1")), "n1", true);
        let mine = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "relay-n1", "progress": 1}});
        let Relayed::Note(n) = r.on_message(&mine) else {
            panic!()
        };
        assert_eq!(
            serde_json::from_str::<Value>(&n).unwrap()["params"]["progressToken"],
            json!(3)
        );
        let other = json!({"method": "notifications/progress", "params": {"progressToken": "relay-n2"}});
        assert_eq!(r.on_message(&other), Relayed::Drop);
        let log =
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
        assert!(matches!(r.on_message(&log), Relayed::Note(_)));
        let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        assert_eq!(r.on_message(&changed), Relayed::Drop);
        assert!(r.relays(&mine) && !r.relays(&changed));
        // No token asked for: progress is not relayed.
        let mut plain = call(Some("s1"));
        plain.params = json!({"name": "x"});
        let (mut r, params) = Relay::new(&plain, "n3", true);
        assert_eq!(params, json!({"name": "x"}));
        assert_eq!(r.on_message(&mine), Relayed::Drop);
    }

    #[test]
    fn what_cannot_be_relayed_is_answered_upstream_at_once() {
        let (mut r, _) = Relay::new(&call(None), "n1", true);
        assert!(!r.can_ask());
        let ping = json!({"jsonrpc": "2.0", "id": 5, "method": "ping"});
        assert_eq!(
            r.on_message(&ping),
            Relayed::Reply(json!({"jsonrpc": "2.0", "id": 5, "result": {}}))
        );
        let q = json!({"jsonrpc": "2.0", "id": 6, "method": "sampling/createMessage"});
        let Relayed::Reply(e) = r.on_message(&q) else { panic!() };
        assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(6), json!(-32601)));
        assert!(e["error"]["message"].as_str().unwrap().contains("without a session"));
        let (mut r, _) = Relay::new(&call(Some("s1")), "n1", true);
        let odd = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call"});
        let Relayed::Reply(e) = r.on_message(&odd) else {
            panic!()
        };
        assert!(e["error"]["message"].as_str().unwrap().contains("does not relay"));
        // A client that accepts no SSE answer is not asked, and hears nothing during the call.
        let (mut r, _) = Relay::new(&call(Some("s1")), "n1", false);
        assert!(!r.can_ask());
        let Relayed::Reply(e) = r.on_message(&q) else { panic!() };
        assert!(e["error"]["message"].as_str().unwrap().contains("SSE"));
        let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}});
        assert_eq!(r.on_message(&log), Relayed::Drop);
        assert!(!r.relays(&log));
    }

    #[test]
    fn a_stateless_caller_is_asked_with_input_required() {
        let mut f = call(None);
        f.stateless = true;
        f.params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
        let (mut r, _) = Relay::new(&f, "n1", true);
        assert!(r.can_ask());
        let q = json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": {"maxTokens": 9}});
        let Relayed::Ask { ask, upstream_id, .. } = r.on_message(&q) else {
            panic!()
        };
        assert_eq!((ask.session.as_str(), upstream_id.clone()), ("", json!(2)));
        let out: Value = serde_json::from_str(&input_required(&ask)).unwrap();
        let key = ask.request_id.as_str().unwrap();
        assert_eq!(out["id"], json!(7));
        assert_eq!(out["result"]["resultType"], json!("input_required"));
        assert_eq!(
            out["result"]["inputRequests"][key],
            json!({"method": "sampling/createMessage", "params": {"maxTokens": 9}})
        );
        // The call comes again with the answer under that key.
        let again = json!({"name": "x", "inputResponses": {key: {"content": {"type": "text", "text": "ok"}}}});
        let (k, answer) = input_response(&again).unwrap();
        assert_eq!(k, key);
        assert_eq!(
            r.answer(&upstream_id, Some(&answer))["result"]["content"]["text"],
            json!("ok")
        );
        assert!(
            input_response(&json!({"inputResponses": {"ask": {}}})).is_none(),
            "not a relayed question"
        );
        // It is relayed, and the call that comes again finds the exchange by its caller and key.
        assert!(relays_stateless(&f, true) && !relays_stateless(&f, false));
        // So is one run in its principal's holder of tasks (it may create a task once answered).
        let mut held = f.clone();
        held.session = Some("tasks:@ann".into());
        assert!(relays_stateless(&held, true) && Relay::new(&held, "n2", true).0.can_ask());
        let nonce_of = |p: Option<&str>| waiting_for("tools/call", &again, p);
        assert_eq!(nonce_of(Some("ann")), Some(waiting_name("n1", Some("ann"))));
        assert_ne!(nonce_of(Some("bob")), nonce_of(Some("ann")));
        assert_eq!(waiting_for("prompts/get", &again, Some("ann")), nonce_of(Some("ann")));
        assert_eq!(waiting_for("tools/list", &again, None), None);
        let mut read = f.clone();
        read.method = "resources/read".into();
        assert!(relays_stateless(&read, true), "a resource read is asked as a call is");
        read.method = "completion/complete".into();
        assert!(!relays_stateless(&read, true), "a completion is never asked");
        let mut bare = f.clone();
        bare.params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        assert!(!relays_stateless(&bare, true), "its client cannot be asked");
        bare.params["inputResponses"] = again["inputResponses"].clone();
        assert!(relays_stateless(&bare, false), "an answer always goes to its exchange");
        let refused = crate::http::Response {
            forward: Some(f.clone()),
            ..Default::default()
        };
        let refused: Value = serde_json::from_str(&unawaited(refused, key).body).unwrap();
        assert_eq!(
            (refused["id"].clone(), refused["error"]["code"].clone()),
            (json!(7), json!(-32602))
        );
        let again: Value = serde_json::from_str(&answering(input_required(&ask), &json!(9))).unwrap();
        assert_eq!((again["id"].clone(), &again["result"]), (json!(9), &out["result"]));
        // Notifications have nowhere to go; a capability it did not declare is refused upstream.
        let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}});
        assert_eq!(r.on_message(&log), Relayed::Drop);
        let e = json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create"});
        let Relayed::Reply(e) = r.on_message(&e) else { panic!() };
        assert!(e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("elicitation capability"));
    }
}
