//! A 2026-07-28 upstream asks its client mid-call the way that revision does (multi round-trip
//! requests): it answers the call `resultType: "input_required"` with `inputRequests` (keys →
//! embedded `elicitation/create`, `sampling/createMessage`, `roots/list`) and maybe a
//! `requestState`, and expects the same call again with `inputResponses` (the same keys → bare
//! results) and that `requestState`. The gateway passes the question to the client that made
//! the call, and stays stateless:
//! - a 2026-07-28 client gets an `input_required` of the gateway's own ([`wrap_input`]): each key
//!   namespaced by the upstream (`github/confirm`), and a `requestState` of ours carrying the
//!   upstream's state, its keys and what the call was (upstream, method, tool or URI, principal,
//!   expiry) under an HMAC of the server's secret. Its retry is checked and turned back into the
//!   upstream's own keys and state ([`unwrap_input`]); a forged or altered state, or one issued
//!   for another call or caller, is refused, and answers under keys the gateway did not give
//!   never reach the upstream.
//! - a 2025-11-25 session's client is asked each question on the call's stream: each becomes
//!   the request the [`super::Relay`] takes as if the upstream had sent it mid-call
//!   ([`Needed::questions`]; its capability checks and question cap apply); with every answer
//!   the call goes to the upstream again ([`Needed::retry`]), at most [`MAX_ROUNDS`] times, so
//!   the client sees one ordinary call. [`drive_rounds`] runs it all over the shell's POSTs and
//!   questions.

use std::future::Future;

use serde_json::{json, Map, Value};

use super::{Conversation, Exchange, HttpAnswer, Post, Reply};
use crate::error::{Error, Result};
use crate::http::Secret;
use crate::protocol::{ask, Forward};

/// Most times one call goes to the upstream again with answers (an upstream that keeps asking,
/// even with no question, is cut off there).
pub const MAX_ROUNDS: usize = ask::MAX_ASKED;

/// How long a 2026-07-28 client may take to answer (a person may be asked): after this its
/// retry is refused and the call must be made afresh.
pub const STATE_TTL_MS: i64 = 3_600_000;

/// What the HMAC of a `requestState` of ours covers before its payload, so that no other
/// signed string of this server (a session id) is one, nor one of them.
const STATE_DOMAIN: &str = "mcp-sieve/input-state:";

/// The questions of an upstream's `input_required` answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Needed {
    /// Its keys and embedded requests (`{method, params}`), in its order.
    pub requests: Vec<(String, Value)>,
    /// Its `requestState`, to send back.
    pub state: Option<String>,
}

/// The questions `response` (the upstream's response to a forwarded request) asks, when it is
/// an `input_required` result.
pub fn needed(response: &Value) -> Option<Needed> {
    let r = response.get("result")?;
    if r["resultType"] != "input_required" {
        return None;
    }
    let requests = r["inputRequests"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let state = r["requestState"].as_str().map(str::to_string);
    Some(Needed { requests, state })
}

impl Needed {
    /// Each question as the request the relay takes (`Relay::on_message`) as if the upstream had
    /// sent it during the call: its id is the question's key.
    pub fn questions(&self) -> Vec<Value> {
        self.requests
            .iter()
            .map(|(k, q)| json!({"jsonrpc": "2.0", "id": k, "method": q["method"], "params": q["params"]}))
            .collect()
    }

    /// The params of the call again: `params` with `answers` under `inputResponses` (each the
    /// relay's answer to one of [`Needed::questions`], a response whose id is the key) and the
    /// upstream's `requestState`. An answer that is an error (the client refused, did not
    /// answer, or cannot be asked) ends the call instead: `Err` holds it as the call's response.
    pub fn retry(&self, params: &Value, answers: &[Value]) -> std::result::Result<Value, Value> {
        let mut responses = Map::new();
        for a in answers {
            if let Some(e) = a.get("error") {
                return Err(json!({"jsonrpc": "2.0", "id": Value::Null, "error": e}));
            }
            if let (Some(k), Some(r)) = (a["id"].as_str(), a.get("result")) {
                responses.insert(k.to_string(), r.clone());
            }
        }
        let mut params = params.clone();
        if let Value::Object(p) = &mut params {
            p.remove("inputResponses");
            p.remove("requestState");
            if !responses.is_empty() {
                p.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(s) = &self.state {
                p.insert("requestState".into(), json!(s));
            }
        }
        Ok(params)
    }
}

/// Runs the exchange of forward `f` over `conv` to its end as [`super::drive`] does, each POST
/// performed by `send`; while a 2026-07-28 upstream answers `input_required`: for a 2026-07-28
/// caller the answer becomes the gateway's own ([`wrap_input`], signed with `signer`'s secret at
/// its time; left as it is without one), and a session's client is asked each question by `ask`
/// (the shell's relay: the question as a request, its answer as a response with the same id, or
/// `None`) and the call goes up again with the answers, at most [`MAX_ROUNDS`] times. A refused
/// question ends the call with that error (the others are not asked). A task method across eras
/// is followed by the request its client's era needs (`task_shape::follow_up`); between the
/// `tasks/get` that a 2025-11-25 `tasks/result` waits with, `wait` sleeps the milliseconds it is
/// given (the shell's timer: other requests go on meanwhile).
pub async fn drive_rounds<S, SF, A, AF, W, WF>(
    f: &Forward,
    conv: &mut Conversation,
    mut exchange: Exchange,
    mut send: S,
    mut ask: A,
    mut wait: W,
    signer: Option<(&Secret, i64)>,
) -> Result<Reply>
where
    S: FnMut(Post) -> SF,
    SF: Future<Output = Result<HttpAnswer>>,
    A: FnMut(Value) -> AF,
    AF: Future<Output = Option<Value>>,
    W: FnMut(u64) -> WF,
    WF: Future<Output = ()>,
{
    let (mut round, mut params) = (0, f.params.clone());
    loop {
        let mut r = super::drive(conv, &mut exchange, &mut send).await?;
        let Some(needed) = r.response.as_ref().and_then(needed) else {
            // A task method across eras may need one request more (`task_shape::follow_up`); if
            // it fails, the first answer stands.
            if let Some((method, id)) = super::task_shape::follow_up(f, conv.era(), &r) {
                let (mut waited_ms, mut round) = (0, 0);
                loop {
                    let mut more = conv.request(method, json!({ "taskId": id }));
                    let Ok(more) = super::drive(conv, &mut more, &mut send).await else {
                        break;
                    };
                    if let Some(needed) = task_questions(f, method, &more) {
                        // The task waits for input: the session's client is asked, as during a
                        // call, and its answers go to the task with the extension's tasks/update.
                        if round == MAX_ROUNDS {
                            return Err(too_many_rounds(f));
                        }
                        round += 1;
                        let answers = ask_all(&needed, &mut ask).await;
                        match needed.retry(&json!({ "taskId": id }), &answers) {
                            Ok(p) => {
                                let mut update = conv.request("tasks/update", p);
                                if super::drive(conv, &mut update, &mut send).await.is_err() {
                                    break;
                                }
                            }
                            Err(refused) => {
                                r.response = Some(refused);
                                break;
                            }
                        }
                        continue;
                    }
                    match super::task_shape::pause(f, method, &more, waited_ms) {
                        Some(ms) => {
                            wait(ms).await;
                            waited_ms += ms;
                        }
                        None => {
                            super::task_shape::follow(method, &mut r, more);
                            break;
                        }
                    }
                }
            }
            return Ok(r);
        };
        if f.stateless {
            if let (Some(msg), Some((secret, now_ms))) = (r.response.as_mut(), signer) {
                wrap_input(msg, f, secret, now_ms);
            }
            return Ok(r);
        }
        if round == MAX_ROUNDS {
            return Err(too_many_rounds(f));
        }
        round += 1;
        let answers = ask_all(&needed, &mut ask).await;
        match needed.retry(&params, &answers) {
            Ok(p) => params = p,
            Err(refused) => {
                r.response = Some(refused);
                return Ok(r);
            }
        }
        exchange = conv.request(&f.method, params.clone());
    }
}

/// The answers of the client `ask` reaches to each of `needed`'s questions, in order, up to the
/// first it refuses (the others are not asked).
async fn ask_all<A, AF>(needed: &Needed, ask: &mut A) -> Vec<Value>
where
    A: FnMut(Value) -> AF,
    AF: Future<Output = Option<Value>>,
{
    let mut answers = Vec::new();
    for q in needed.questions() {
        let a = ask(q).await;
        let refused = a.as_ref().is_some_and(|a| a.get("error").is_some());
        answers.extend(a);
        if refused {
            break;
        }
    }
    answers
}

/// The questions of a task that waits for input (`status: "input_required"` with the extension's
/// `inputRequests` inline), when `more` is the `tasks/get` a 2025-11-25 session's `tasks/result`
/// waits with (`task_shape::pause`): its client is asked them during that `tasks/result`, as
/// 2025-11-25 does.
fn task_questions(f: &Forward, method: &str, more: &Reply) -> Option<Needed> {
    if (f.method.as_str(), f.stateless, method) != ("tasks/result", false, "tasks/get") {
        return None;
    }
    let t = more.response.as_ref()?.get("result")?;
    let asks = t["inputRequests"].as_object().filter(|q| !q.is_empty())?;
    if t["status"] != "input_required" {
        return None;
    }
    let requests = asks.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    Some(Needed { requests, state: None })
}

/// The call's error when the upstream asked more than [`MAX_ROUNDS`] times.
fn too_many_rounds(f: &Forward) -> Error {
    Error::Upstream(format!(
        "{} asked the client again after {MAX_ROUNDS} rounds of answers; the gateway stops there",
        label(f)
    ))
}

/// `tools/call "name"`, as the relay names a call in its messages.
fn label(f: &Forward) -> String {
    match target(f) {
        "" => f.method.clone(),
        t => format!("{} \"{t}\"", f.method),
    }
}

/// The tool or prompt name, or the resource URI, the call is about (at the upstream).
fn target(f: &Forward) -> &str {
    f.params["name"]
        .as_str()
        .or(f.params["uri"].as_str())
        .unwrap_or_default()
}

/// The key a 2026-07-28 client answers the upstream's question `key` under.
fn outer_key(upstream: &str, key: &str) -> String {
    let up = if upstream.is_empty() { "upstream" } else { upstream };
    format!("{up}/{key}")
}

/// The client capability a question of `method` needs.
fn capability(method: &str) -> &str {
    match method {
        "sampling/createMessage" => "sampling",
        "elicitation/create" => "elicitation",
        "roots/list" => "roots",
        _ => "experimental",
    }
}

/// For a 2026-07-28 client: when `response` (the upstream's response to forward `f`) asks for
/// input, its questions under the gateway's keys and a `requestState` of ours signed with
/// `secret` (see the module's header); a question whose capability the client did not declare
/// (in the call's `_meta`) makes `response` that error instead. Anything else is left alone.
pub fn wrap_input(response: &mut Value, f: &Forward, secret: &Secret, now_ms: i64) {
    let Some(needed) = needed(response) else {
        return;
    };
    let caps = &f.params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    let mut requests = Map::new();
    for (key, q) in &needed.requests {
        let method = q["method"].as_str().unwrap_or_default();
        let cap = capability(method);
        if caps.get(cap).is_none() {
            let e = Error::InvalidRequest(format!(
                "{} asks the client for \"{method}\", but the client did not declare the {cap} capability",
                label(f)
            ));
            *response =
                json!({"jsonrpc": "2.0", "id": response["id"], "error": {"code": e.code(), "message": e.to_string()}});
            return;
        }
        requests.insert(outer_key(&f.upstream_name, key), q.clone());
    }
    let keys: Vec<&String> = needed.requests.iter().map(|(k, _)| k).collect();
    let payload = json!({
        "u": f.upstream_name, "m": f.method, "n": target(f), "p": f.principal,
        "x": now_ms.saturating_add(STATE_TTL_MS), "s": needed.state, "k": keys,
    })
    .to_string();
    let signed = secret.sign(&format!("{STATE_DOMAIN}{payload}"));
    let state = signed[STATE_DOMAIN.len()..].to_string();
    let mut result = response["result"].clone();
    result["inputRequests"] = Value::Object(requests);
    result["requestState"] = json!(state);
    response["result"] = result;
}

/// For a 2026-07-28 client's call `f` that brings answers (`params.inputResponses`, and the
/// `requestState` [`wrap_input`] gave): its params as the upstream expects them (its own keys,
/// its own state, answers under other keys dropped). Refused (`-32602`) when the state is not
/// ours, altered, expired, or was issued for another upstream, method, tool or caller, or when
/// answers come without it. A call with neither is left alone, and so is any other request: the
/// extension's `tasks/update` brings a task's answers under the upstream's own keys (its
/// `tasks/get` showed them as they are) and goes to the upstream as it is.
pub fn unwrap_input(f: &mut Forward, secret: &Secret, now_ms: i64) -> Result<()> {
    let (state, responses) = (&f.params["requestState"], &f.params["inputResponses"]);
    let asking = crate::protocol::jsonrpc::ASKING_METHODS.contains(&f.method.as_str());
    if !asking || state.is_null() && responses.is_null() {
        return Ok(());
    }
    let Some(state) = state.as_str() else {
        return Err(Error::params(
            "params.inputResponses came without params.requestState: send back the requestState that came with the questions",
        ));
    };
    let forged = || Error::params("params.requestState was not issued by this gateway, or was altered");
    let signed = format!("{STATE_DOMAIN}{state}");
    if !secret.verify(&signed) {
        return Err(forged());
    }
    let payload = state.rsplit_once('.').map_or("", |(p, _)| p);
    let p: Value = serde_json::from_str(payload).map_err(|_| forged())?;
    if p["x"].as_i64().is_none_or(|x| x < now_ms) {
        return Err(Error::params(format!(
            "params.requestState expired (answers are taken for {} minutes): call again without it",
            STATE_TTL_MS / 60_000
        )));
    }
    let same = p["u"] == json!(f.upstream_name)
        && p["m"] == json!(f.method)
        && p["n"] == json!(target(f))
        && p["p"] == json!(f.principal);
    if !same {
        return Err(Error::params(format!(
            "params.requestState was issued for another call than {} (another upstream, tool or caller)",
            label(f)
        )));
    }
    let mut inner = Map::new();
    for k in p["k"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        if let Some(a) = responses.get(outer_key(&f.upstream_name, k)) {
            inner.insert(k.to_string(), a.clone());
        }
    }
    if let Value::Object(params) = &mut f.params {
        params.remove("inputResponses");
        params.remove("requestState");
        if !inner.is_empty() {
            params.insert("inputResponses".into(), Value::Object(inner));
        }
        if let Some(s) = p["s"].as_str() {
            params.insert("requestState".into(), json!(s));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> Secret {
        Secret::new(*b"a test secret of thirty-two byte")
    }

    fn call() -> Forward {
        Forward {
            id: json!(4),
            method: "tools/call".into(),
            params: json!({"name": "test_elicitation", "arguments": {"message": "who?"},
                "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}),
            stateless: true,
            upstream_name: "files".into(),
            principal: Some("alice".into()),
            ..Forward::default()
        }
    }

    fn asks() -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required",
            "inputRequests": {"ask": {"method": "elicitation/create", "params": {"message": "who?"}}},
            "requestState": "theirs"}})
    }

    /// The call again, as the client makes it after `wrapped`, answering under `key`.
    fn again(wrapped: &Value, key: &str) -> Forward {
        let mut f = call();
        f.params["inputResponses"] = json!({key: {"action": "accept", "content": {"username": "ada"}}});
        f.params["requestState"] = wrapped["result"]["requestState"].clone();
        f
    }

    #[test]
    fn a_modern_client_answers_under_namespaced_keys_and_the_upstream_gets_its_own() {
        let mut r = asks();
        wrap_input(&mut r, &call(), &secret(), 1_000);
        let q = &r["result"]["inputRequests"];
        assert_eq!(q["files/ask"]["method"], json!("elicitation/create"));
        assert!(q.get("ask").is_none());
        let state = r["result"]["requestState"].as_str().unwrap();
        assert_ne!(state, "theirs");
        let mut f = again(&r, "files/ask");
        f.params["inputResponses"]["files/other"] = json!({"forged": true});
        unwrap_input(&mut f, &secret(), 2_000).unwrap();
        assert_eq!(
            f.params["inputResponses"],
            json!({"ask": {"action": "accept", "content": {"username": "ada"}}})
        );
        assert_eq!(f.params["requestState"], json!("theirs"));
        // The unnamed upstream's keys; an upstream that sent no state gets none back.
        let mut plain = call();
        plain.upstream_name = String::new();
        let mut r = asks();
        r["result"].as_object_mut().unwrap().remove("requestState");
        wrap_input(&mut r, &plain, &secret(), 1_000);
        assert!(r["result"]["inputRequests"].get("upstream/ask").is_some());
        let mut f = again(&r, "upstream/ask");
        f.upstream_name = String::new();
        unwrap_input(&mut f, &secret(), 2_000).unwrap();
        assert!(f.params.get("requestState").is_none());
        assert!(f.params["inputResponses"].get("ask").is_some());
    }

    #[test]
    fn forged_altered_expired_or_misdirected_states_are_refused() {
        let mut r = asks();
        wrap_input(&mut r, &call(), &secret(), 1_000);
        let refused = |f: &mut Forward, now: i64| unwrap_input(f, &secret(), now).unwrap_err().to_string();
        // Altered: the upstream's state swapped inside ours.
        let mut f = again(&r, "files/ask");
        let altered = f.params["requestState"].as_str().unwrap().replace("theirs", "other");
        f.params["requestState"] = json!(altered);
        assert!(refused(&mut f, 2_000).contains("not issued by this gateway"));
        // Another secret's (another server's), and a made-up one.
        let mut f = again(&r, "files/ask");
        let e = unwrap_input(&mut f, &Secret::new(*b"another secret, thirty-two bytes"), 2_000).unwrap_err();
        assert!(e.to_string().contains("not issued"));
        let mut f = again(&r, "files/ask");
        f.params["requestState"] = json!("{\"u\":\"files\"}.00112233445566778899aabbccddeeff");
        assert!(refused(&mut f, 2_000).contains("not issued"));
        // A session id of the same secret is no state.
        let mut f = again(&r, "files/ask");
        f.params["requestState"] = json!(secret().sign("random"));
        assert!(refused(&mut f, 2_000).contains("not issued"));
        // Answers without the state.
        let mut f = again(&r, "files/ask");
        f.params.as_object_mut().unwrap().remove("requestState");
        assert!(refused(&mut f, 2_000).contains("without params.requestState"));
        // Expired.
        let mut f = again(&r, "files/ask");
        assert!(refused(&mut f, 1_000 + STATE_TTL_MS + 1).contains("expired"));
        // Another tool, upstream or principal.
        let mut f = again(&r, "files/ask");
        f.params["name"] = json!("delete_everything");
        assert!(refused(&mut f, 2_000).contains("another call"));
        let mut f = again(&r, "files/ask");
        f.upstream_name = "github".into();
        assert!(refused(&mut f, 2_000).contains("another call"));
        let mut f = again(&r, "files/ask");
        f.principal = Some("mallory".into());
        assert!(refused(&mut f, 2_000).contains("another call"));
        // A call with neither is untouched.
        let mut f = call();
        unwrap_input(&mut f, &secret(), 2_000).unwrap();
        assert_eq!(f, call());
        // So is a task's tasks/update: its answers are under the upstream's own keys.
        let update = Forward {
            method: "tasks/update".into(),
            params: json!({"taskId": "t1", "inputResponses": {"confirm": {"action": "accept"}}}),
            ..call()
        };
        let mut f = update.clone();
        unwrap_input(&mut f, &secret(), 2_000).unwrap();
        assert_eq!(f, update);
    }

    #[test]
    fn a_modern_client_without_the_capability_gets_an_error_and_other_results_pass() {
        let mut f = call();
        f.params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
        let mut r = asks();
        wrap_input(&mut r, &f, &secret(), 1_000);
        assert_eq!(r["id"], json!(1));
        assert_eq!(r["error"]["code"], json!(-32600));
        let m = r["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("tools/call \"test_elicitation\"") && m.contains("elicitation capability"),
            "{m}"
        );
        let done = json!({"id": 1, "result": {"resultType": "complete", "content": []}});
        let mut same = done.clone();
        wrap_input(&mut same, &call(), &secret(), 1_000);
        assert_eq!(same, done);
    }

    #[test]
    fn a_session_client_is_asked_through_the_relay_and_the_call_goes_again() {
        let n = needed(&asks()).unwrap();
        assert_eq!(n.state.as_deref(), Some("theirs"));
        let q = n.questions();
        assert_eq!(
            q,
            vec![json!({"jsonrpc": "2.0", "id": "ask", "method": "elicitation/create", "params": {"message": "who?"}})]
        );
        // The relay asks the session's client; its answer (a response with the key as id) goes up.
        let mut f = call();
        f.stateless = false;
        f.session = Some("s1".into());
        let (mut relay, params) = super::super::Relay::new(&f, "n1", true);
        let super::super::Relayed::Ask { upstream_id, .. } = relay.on_message(&q[0]) else {
            panic!("not relayed")
        };
        let answer = relay.answer(&upstream_id, Some(&json!({"result": {"action": "decline"}})));
        let p = n.retry(&params, &[answer]).unwrap();
        assert_eq!(p["inputResponses"], json!({"ask": {"action": "decline"}}));
        assert_eq!(p["requestState"], json!("theirs"));
        assert_eq!(p["name"], json!("test_elicitation"));
        // A refusal (or no answer in time) ends the call with that error.
        let none = relay.answer(&upstream_id, None);
        let e = n.retry(&params, &[none]).unwrap_err();
        assert!(e["error"]["message"].as_str().unwrap().contains("did not answer"));
        assert!(needed(&json!({"result": {"content": []}})).is_none());
        assert!(too_many_rounds(&f).to_string().contains("16 rounds"));
    }

    /// Runs `fut`, whose every await is ready at once (the fake upstream below answers at once).
    fn now<T>(fut: impl Future<Output = T>) -> T {
        let mut fut = std::pin::pin!(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(t) => t,
            std::task::Poll::Pending => panic!("the fake upstream never waits"),
        }
    }

    /// An upstream of 2026-07-28 that asks `asks` times (state `"1"`, `"2"`, …), then answers
    /// with what it got last; every request it received is kept in `seen`.
    fn upstream(
        asks: usize,
        seen: &std::cell::RefCell<Vec<Value>>,
    ) -> impl FnMut(Post) -> std::future::Ready<Result<HttpAnswer>> + '_ {
        move |p| {
            let msg: Value = serde_json::from_str(&p.body).unwrap();
            seen.borrow_mut().push(msg.clone());
            let round = msg["params"]["requestState"]
                .as_str()
                .map_or(0, |s| s.parse::<usize>().unwrap());
            let result = if round < asks {
                json!({"resultType": "input_required", "requestState": (round + 1).to_string(),
                    "inputRequests": {"ask": {"method": "elicitation/create", "params": {"message": round}}}})
            } else {
                json!({"content": [{"type": "text", "text": msg["params"]["inputResponses"]["ask"]["content"]}]})
            };
            let body = json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string();
            std::future::ready(Ok(HttpAnswer {
                status: 200,
                content_type: "application/json".into(),
                body,
                ..HttpAnswer::default()
            }))
        }
    }

    /// Forward `f` driven to its end at the 2026-07-28 `upstream`, its questions answered by
    /// `ask`, no time waited.
    fn drive_modern<S, SF, A, AF>(f: &Forward, upstream: S, ask: A, signer: Option<(&Secret, i64)>) -> Result<Reply>
    where
        S: FnMut(Post) -> SF,
        SF: Future<Output = Result<HttpAnswer>>,
        A: FnMut(Value) -> AF,
        AF: Future<Output = Option<Value>>,
    {
        let mut conv = modern_conv();
        let exchange = conv.request(&f.method, f.params.clone());
        now(drive_rounds(
            f,
            &mut conv,
            exchange,
            upstream,
            ask,
            |_| std::future::ready(()),
            signer,
        ))
    }

    fn modern_conv() -> Conversation {
        let config = super::super::ClientConfig {
            discover: true,
            ..Default::default()
        };
        Conversation::new(config).knowing(super::super::Era::Modern)
    }

    #[test]
    fn rounds_go_on_while_the_upstream_asks_and_stop_at_the_cap() {
        let mut f = call();
        (f.stateless, f.session) = (false, Some("s1".into()));
        // Asked twice: the client answers each round; the third call gets the result.
        let seen = std::cell::RefCell::new(Vec::new());
        let mut conv = modern_conv();
        let exchange = conv.request(&f.method, f.params.clone());
        let answer = |q: Value| {
            let said = format!("answer to {}", q["params"]["message"]);
            std::future::ready(Some(
                json!({"id": q["id"], "result": {"action": "accept", "content": said}}),
            ))
        };
        let r = now(drive_rounds(
            &f,
            &mut conv,
            exchange,
            upstream(2, &seen),
            answer,
            |_| std::future::ready(()),
            None,
        ))
        .unwrap();
        assert_eq!(
            r.response.unwrap()["result"]["content"][0]["text"],
            json!("answer to 1")
        );
        let seen = seen.into_inner();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[1]["params"]["requestState"], json!("1"));
        assert_eq!(
            seen[2]["params"]["inputResponses"]["ask"]["content"],
            json!("answer to 1")
        );
        assert_eq!(
            seen[2]["params"]["arguments"], f.params["arguments"],
            "the call itself goes again"
        );
        // An upstream that never stops asking is cut off after MAX_ROUNDS answers.
        let seen = std::cell::RefCell::new(Vec::new());
        let e = drive_modern(&f, upstream(usize::MAX, &seen), answer, None).unwrap_err();
        assert!(e.to_string().contains("after 16 rounds"), "{e}");
        assert_eq!(seen.borrow().len(), MAX_ROUNDS + 1);
        // A 2026-07-28 caller gets the question (wrapped) after one POST.
        let seen = std::cell::RefCell::new(Vec::new());
        let mut conv = modern_conv();
        let exchange = conv.request(&f.method, f.params.clone());
        let never = |_| -> std::future::Ready<Option<Value>> { panic!("a 2026-07-28 caller is not asked mid-call") };
        let r = now(drive_rounds(
            &call(),
            &mut conv,
            exchange,
            upstream(1, &seen),
            never,
            |_| std::future::ready(()),
            Some((&secret(), 0)),
        ))
        .unwrap();
        assert!(r.response.unwrap()["result"]["inputRequests"]
            .get("files/ask")
            .is_some());
        assert_eq!(seen.borrow().len(), 1);
    }

    /// An upstream of `era` answering each method from `answers` (`initialize` and notifications
    /// as any server does); every request it received is kept in `seen`.
    fn answering<'a>(
        answers: &'a [(&'a str, Value)],
        seen: &'a std::cell::RefCell<Vec<Value>>,
    ) -> impl FnMut(Post) -> std::future::Ready<Result<HttpAnswer>> + 'a {
        move |p| {
            let msg: Value = serde_json::from_str(&p.body).unwrap();
            seen.borrow_mut().push(msg.clone());
            let method = msg["method"].as_str().unwrap_or_default();
            // The n-th request of a method gets its n-th answer (the last one from then on).
            let asked = seen.borrow().iter().filter(|m| m["method"] == method).count();
            let mine: Vec<_> = answers.iter().filter(|(m, _)| *m == method).collect();
            let answer = mine
                .get(asked.saturating_sub(1).min(mine.len().saturating_sub(1)))
                .copied();
            let body = match (method, answer) {
                (_, _) if msg.get("id").is_none() => String::new(),
                ("initialize", _) => {
                    json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": "2025-11-25",
                    "capabilities": {"tasks": {}}, "serverInfo": {"name": "t", "version": "1"}}})
                    .to_string()
                }
                (_, Some((_, a))) => json!({"jsonrpc": "2.0", "id": msg["id"], "result": a}).to_string(),
                _ => json!({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}).to_string(),
            };
            std::future::ready(Ok(HttpAnswer {
                status: if body.is_empty() { 202 } else { 200 },
                session: Some("up-1".into()),
                content_type: "application/json".into(),
                body,
            }))
        }
    }

    /// Forward `f` run at an upstream of `era` answering `answers`: the result the client gets,
    /// and the methods the upstream was asked.
    fn across(f: &Forward, era: super::super::Era, answers: &[(&str, Value)]) -> (Value, Vec<Value>) {
        let (response, methods, _) = waiting_across(f, era, answers);
        (response["result"].clone(), methods)
    }

    /// [`across`], with the whole response and how long the gateway waited each time.
    fn waiting_across(f: &Forward, era: super::super::Era, answers: &[(&str, Value)]) -> (Value, Vec<Value>, Vec<u64>) {
        let waits = std::cell::RefCell::new(Vec::new());
        let never = |_| -> std::future::Ready<Option<Value>> { panic!("nothing is asked") };
        let seen = std::cell::RefCell::new(Vec::new());
        let mut conv = match era {
            super::super::Era::Modern => modern_conv(),
            _ => Conversation::new(super::super::ClientConfig::default()),
        };
        let exchange = conv.request(&f.method, f.params.clone());
        let r = now(drive_rounds(
            f,
            &mut conv,
            exchange,
            answering(answers, &seen),
            never,
            |ms| {
                waits.borrow_mut().push(ms);
                std::future::ready(())
            },
            None,
        ))
        .unwrap();
        let methods = seen.borrow().iter().map(|m| m["method"].clone()).collect();
        (r.response.unwrap(), methods, waits.into_inner())
    }

    #[test]
    fn task_methods_across_eras_get_what_the_clients_era_promises() {
        use super::super::Era;
        let task = |status: &str| {
            json!({"taskId": "t1", "status": status, "createdAt": "2025-11-20T10:00:00Z",
                "lastUpdatedAt": "2025-11-20T10:00:01Z", "ttl": 60000})
        };
        // A 2026-07-28 client's tasks/get of a finished task at a session-era upstream: its result
        // comes from that upstream's tasks/result.
        let mut f = call();
        (f.method, f.params) = ("tasks/get".into(), json!({"taskId": "t1"}));
        let done = json!({"content": [{"type": "text", "text": "done"}]});
        let (got, asked) = across(
            &f,
            Era::Legacy,
            &[("tasks/get", task("completed")), ("tasks/result", done)],
        );
        assert_eq!(got["status"], json!("completed"), "{got}");
        assert_eq!(got["result"]["content"][0]["text"], json!("done"), "{got}");
        assert_eq!(asked.last(), Some(&json!("tasks/result")), "{asked:?}");
        // A working task is not followed up.
        let (got, asked) = across(&f, Era::Legacy, &[("tasks/get", task("working"))]);
        assert!(got.get("result").is_none(), "{got}");
        assert!(!asked.contains(&json!("tasks/result")), "{asked:?}");
        // A 2025-11-25 session's tasks/cancel at a 2026-07-28 upstream that acknowledges bare:
        // the cancelled task comes from tasks/get.
        (f.method, f.stateless, f.session) = ("tasks/cancel".into(), false, Some("s1".into()));
        let ack = json!({"resultType": "complete"});
        let (got, _) = across(
            &f,
            Era::Modern,
            &[("tasks/cancel", ack), ("tasks/get", task("cancelled"))],
        );
        assert_eq!(
            (got["taskId"].clone(), got["status"].clone()),
            (json!("t1"), json!("cancelled")),
            "{got}"
        );
        // Its tasks/result there, which the extension does not have (-32601): from tasks/get.
        f.method = "tasks/result".into();
        let mut finished = task("completed");
        finished["result"] = json!({"content": [{"type": "text", "text": "inline"}]});
        let (got, asked) = across(&f, Era::Modern, &[("tasks/get", finished)]);
        assert_eq!(got["content"][0]["text"], json!("inline"), "{got}");
        assert_eq!(asked, [json!("tasks/result"), json!("tasks/get")]);
        // A task still working is waited for, at its pollIntervalMs, asked again with tasks/get.
        let mut working = task("working");
        working["pollIntervalMs"] = json!(250);
        let mut done = task("completed");
        done["result"] = json!({"content": [{"type": "text", "text": "waited"}]});
        let answers = [
            ("tasks/get", working.clone()),
            ("tasks/get", working.clone()),
            ("tasks/get", done),
        ];
        let (got, asked, waits) = waiting_across(&f, Era::Modern, &answers);
        assert_eq!(got["result"]["content"][0]["text"], json!("waited"), "{got}");
        assert_eq!(asked[1..], [json!("tasks/get"), json!("tasks/get"), json!("tasks/get")]);
        assert_eq!(waits, [250, 250]);
        // At most its ttl: then an error saying it still works.
        working["ttl"] = json!(600);
        let (got, _, waits) = waiting_across(&f, Era::Modern, &[("tasks/get", working)]);
        assert_eq!(waits, [250, 250, 100]);
        assert_eq!(got["error"]["code"], json!(-32603), "{got}");
        assert!(
            got["error"]["message"].as_str().unwrap().contains("still working"),
            "{got}"
        );
        // A failed task (SEP-2663's inline error): tasks/result answers that error.
        let mut failed = task("failed");
        failed["error"] = json!({"code": -32000, "message": "the report could not be written"});
        let (got, _, _) = waiting_across(&f, Era::Modern, &[("tasks/get", failed.clone())]);
        assert_eq!(got["error"], failed["error"], "{got}");
        assert!(got.get("result").is_none());
        // A cancelled task has no result.
        let (got, _, waits) = waiting_across(&f, Era::Modern, &[("tasks/get", task("cancelled"))]);
        assert!(waits.is_empty());
        assert_eq!(got["error"]["code"], json!(-32602), "{got}");
    }

    #[test]
    fn a_task_waiting_for_input_asks_the_session_and_is_updated_with_the_answers() {
        let mut f = call();
        (f.method, f.params, f.stateless, f.session) =
            ("tasks/result".into(), json!({"taskId": "t1"}), false, Some("s1".into()));
        let asks = json!({"taskId": "t1", "status": "input_required", "ttlMs": 60000, "pollIntervalMs": 100,
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "go on?"}}}});
        let done = json!({"taskId": "t1", "status": "completed", "ttlMs": 60000,
            "result": {"content": [{"type": "text", "text": "went on"}]}});
        let answers = [
            ("tasks/get", asks.clone()),
            ("tasks/get", done),
            ("tasks/update", json!({})),
        ];
        let seen = std::cell::RefCell::new(Vec::new());
        let asked = std::cell::RefCell::new(Vec::new());
        let ask = |q: Value| {
            asked.borrow_mut().push(q.clone());
            std::future::ready(Some(
                json!({"id": q["id"], "result": {"action": "accept", "content": {"ok": true}}}),
            ))
        };
        let r = drive_modern(&f, answering(&answers, &seen), ask, None).unwrap();
        assert_eq!(r.response.unwrap()["result"]["content"][0]["text"], json!("went on"));
        let asked = asked.into_inner();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0]["method"], json!("elicitation/create"));
        assert_eq!(asked[0]["params"]["message"], json!("go on?"));
        let seen = seen.into_inner();
        let methods: Vec<_> = seen.iter().map(|m| m["method"].clone()).collect();
        assert_eq!(methods, ["tasks/result", "tasks/get", "tasks/update", "tasks/get"]);
        assert_eq!(
            seen[2]["params"]["inputResponses"],
            json!({"confirm": {"action": "accept", "content": {"ok": true}}})
        );
        assert_eq!(seen[2]["params"]["taskId"], json!("t1"));
        // A refused question answers tasks/result with the refusal.
        let seen = std::cell::RefCell::new(Vec::new());
        let refuse =
            |q: Value| std::future::ready(Some(json!({"id": q["id"], "error": {"code": -32600, "message": "no"}})));
        let r = drive_modern(&f, answering(&[("tasks/get", asks)], &seen), refuse, None).unwrap();
        assert_eq!(r.response.unwrap()["error"]["message"], json!("no"));
    }
}
