//! A stateless 2026-07-28 client's task at a session-era upstream that waits for input. Such an
//! upstream (2025-11-25: the official SDK v1's task message queue, `server-everything`) says
//! `input_required` on `tasks/get` but hands its question out only once, on the stream of that
//! task's `tasks/result`; the tasks extension (SEP-2663) shows it inline instead, `tasks/get`
//! carrying `inputRequests` and the client answering with `tasks/update` (`inputResponses`).
//! The gateway bridges the two:
//! - a `tasks/get` answered `input_required` without `inputRequests` there ([`waits_on_result`])
//!   has the shell open that task's `tasks/result` ([`result_forward`]: in the principal's
//!   holder's upstream session, with ids reserved as for any forward); the shell's relay takes
//!   the question as it takes a stateless call's (`Relay`: its checks, at most
//!   `ask::MAX_ASKED` questions, each waiting at most `ask::ANSWER_WAIT_MS`), and the shell
//!   keeps the exchange under [`parked_name`] (the task bound to the caller's principal);
//! - that principal's `tasks/get` gets the question inline ([`with_question`]) under the relay's
//!   key (unguessable, never reused in the task's lifetime, as the extension requires);
//! - its `tasks/update` ([`update`]) answers it: the answer goes up as the JSON-RPC response to
//!   the upstream's request, and the update is acknowledged; a key the exchange did not ask is
//!   `-32602`. Another principal never reaches the exchange (its holder does not own the task).
//!
//! The exchange ends with the task's result, which is dropped with it: the client's next
//! `tasks/get` sees the task finished and gets its result inline (`task_shape::follow_up`).

use serde_json::{json, Value};

use crate::error::{type_name, Error};
use crate::http::SessionStore;
use crate::protocol::{Forward, UpstreamLink, IDS_PER_EXCHANGE};

/// The name a task's parked exchange is kept under: the task id of `f` (a stateless client's
/// `tasks/get` or `tasks/update`) bound to its caller's principal, so only that principal's
/// requests find it; `None` for another request.
pub fn parked_name(f: &Forward) -> Option<String> {
    if !f.stateless || !matches!(f.method.as_str(), "tasks/get" | "tasks/update") {
        return None;
    }
    let id = f.params.get("taskId")?.as_str()?;
    Some(format!("task\n{}\n{id}", f.principal.as_deref().unwrap_or_default()))
}

/// Whether `body` (the client's answer to `f`, a stateless `tasks/get` at an upstream spoken to
/// in a session era, `modern` false) shows the task waiting for input without its questions:
/// they come on that task's `tasks/result` stream, which the shell then opens.
pub fn waits_on_result(f: &Forward, modern: bool, body: &str) -> bool {
    if modern || parked_name(f).is_none() || f.method != "tasks/get" {
        return false;
    }
    let Ok(msg) = serde_json::from_str::<Value>(body) else {
        return false;
    };
    let t = &msg["result"];
    t["status"] == "input_required" && t.get("inputRequests").is_none()
}

/// The forward that opens the `tasks/result` of the task `f` asked about (a stateless
/// `tasks/get`), in the same holder's upstream session (in `store`), with ids reserved there as
/// `protocol::bind_forward` reserves them; `None` when the holder is gone.
pub fn result_forward(f: &Forward, store: &mut dyn SessionStore) -> Option<Forward> {
    let mut s = store.load(f.session.as_deref()?)?;
    let link = crate::protocol::link_of(&mut s, &f.upstream_name);
    let start = link.next_id.max(1);
    link.next_id = start.saturating_add(IDS_PER_EXCHANGE);
    let reserved = UpstreamLink {
        next_id: start,
        ..link.clone()
    };
    store.save(&s);
    let mut params = json!({ "taskId": f.params.get("taskId")? });
    if let Some(m) = f.params.get("_meta") {
        params["_meta"] = m.clone();
    }
    Some(Forward {
        method: "tasks/result".into(),
        params,
        link: Some(reserved),
        // It creates no task (the budget counted the task when its call was admitted).
        admit: None,
        ..f.clone()
    })
}

/// `body` (the client's answer to a `tasks/get` of a task waiting for input) with the question
/// of `asked` (the relay's `input_required` answer, `upstream::input_required`) inline as the
/// task's `inputRequests`.
pub fn with_question(body: &str, asked: &str) -> String {
    let (Ok(mut msg), Ok(q)) = (
        serde_json::from_str::<Value>(body),
        serde_json::from_str::<Value>(asked),
    ) else {
        return body.to_string();
    };
    match (msg.get_mut("result"), q["result"].get("inputRequests")) {
        (Some(Value::Object(t)), Some(requests)) => {
            t.insert("inputRequests".into(), requests.clone());
            msg.to_string()
        }
        _ => body.to_string(),
    }
}

/// What the shell does with a stateless `tasks/update`.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// Forward it (a 2026-07-28 upstream takes its own task's updates).
    Forward,
    /// Hand the parked exchange this answer (a response message for `Relay::answer`), and
    /// acknowledge the update.
    Answer(Value),
    /// Acknowledge it and nothing more (it repeats an answer already given: the extension says
    /// to ignore a key no longer outstanding).
    Acknowledge,
    /// Answer the client this error.
    Refused(Error),
}

/// What `f`, a stateless client's `tasks/update` of a task at an upstream spoken to in a
/// session era (`modern` false), means for the exchange parked for it: `asked` is the key of the
/// question it waits on (if any), `answered` the keys answered already.
pub fn update(f: &Forward, modern: bool, asked: Option<&str>, answered: &[String]) -> Update {
    if f.method != "tasks/update" || !f.stateless || modern && asked.is_none() {
        return Update::Forward;
    }
    let id = f.params["taskId"].as_str().unwrap_or_default();
    let responses = match f.params.get("inputResponses") {
        Some(Value::Object(r)) if !r.is_empty() => r,
        Some(v) => {
            let got = match v {
                Value::Object(_) => "an empty object",
                _ => type_name(v),
            };
            return Update::Refused(Error::params(format!(
                "params.inputResponses must be an object of answers by the keys of the task's inputRequests, got {got}"
            )));
        }
        None => {
            return Update::Refused(Error::params(
                "params.inputResponses is required: the answers to the task's inputRequests, by their keys",
            ))
        }
    };
    if let Some(answer) = asked.and_then(|k| responses.get(k)) {
        return Update::Answer(json!({ "result": answer }));
    }
    if responses.keys().all(|k| answered.contains(k)) {
        return Update::Acknowledge;
    }
    let key = responses
        .keys()
        .find(|k| !answered.contains(k))
        .cloned()
        .unwrap_or_default();
    Update::Refused(Error::params(format!(
        "params.inputResponses.{key} answers no question task \"{id}\" awaits from this caller (its questions are in inputRequests of its tasks/get, each answered within {} s)",
        crate::protocol::ask::ANSWER_WAIT_MS / 1000
    )))
}

/// The upstream's reply a shell completes an acknowledged `tasks/update` with (the client gets
/// the extension's empty result, `resultType: "complete"`).
pub fn acknowledgement() -> Value {
    json!({"jsonrpc": "2.0", "id": Value::Null, "result": {}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::MemoryStore;
    use crate::protocol::Session;

    fn get(principal: Option<&str>) -> Forward {
        Forward {
            id: json!(3),
            method: "tasks/get".into(),
            params: json!({"taskId": "t1", "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}}),
            stateless: true,
            session: Some("tasks:@ann".into()),
            upstream_name: "everything".into(),
            principal: principal.map(str::to_string),
            ..Forward::default()
        }
    }

    fn update_of(responses: Value) -> Forward {
        let mut f = get(Some("ann"));
        f.method = "tasks/update".into();
        f.params["inputResponses"] = responses;
        f
    }

    #[test]
    fn a_task_is_parked_per_principal_and_only_for_a_stateless_clients_get_and_update() {
        let ann = parked_name(&get(Some("ann"))).unwrap();
        assert_ne!(Some(ann.clone()), parked_name(&get(Some("bob"))));
        assert_ne!(Some(ann.clone()), parked_name(&get(None)));
        assert_eq!(parked_name(&update_of(json!({}))), Some(ann));
        let mut session = get(Some("ann"));
        session.stateless = false;
        assert_eq!(
            parked_name(&session),
            None,
            "a session's tasks/result is asked on its own stream"
        );
        let mut call = get(Some("ann"));
        call.method = "tools/call".into();
        assert_eq!(parked_name(&call), None);
        let mut unnamed = get(Some("ann"));
        unnamed.params = json!({});
        assert_eq!(parked_name(&unnamed), None);
    }

    #[test]
    fn only_a_session_era_task_waiting_without_its_questions_opens_its_result() {
        let task = |extra: Value| {
            let mut t = json!({"resultType": "complete", "taskId": "t1", "status": "input_required", "ttlMs": 1000});
            t.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            json!({"jsonrpc": "2.0", "id": 3, "result": t}).to_string()
        };
        let f = get(Some("ann"));
        assert!(waits_on_result(&f, false, &task(json!({}))));
        assert!(
            !waits_on_result(&f, true, &task(json!({}))),
            "a 2026-07-28 upstream shows them"
        );
        let shown = task(json!({"inputRequests": {"k": {"method": "elicitation/create"}}}));
        assert!(!waits_on_result(&f, false, &shown));
        assert!(!waits_on_result(&f, false, &task(json!({"status": "working"}))));
        assert!(!waits_on_result(
            &f,
            false,
            "{\"jsonrpc\": \"2.0\", \"id\": 3, \"error\": {}}"
        ));
        assert!(!waits_on_result(&update_of(json!({})), false, &task(json!({}))));
    }

    #[test]
    fn the_result_is_asked_in_the_holders_upstream_session_with_ids_of_its_own() {
        let mut store = MemoryStore::default();
        let f = get(Some("ann"));
        assert_eq!(result_forward(&f, &mut store), None, "no holder");
        let mut s = Session {
            id: "tasks:@ann".into(),
            task_holder: true,
            ..Session::default()
        };
        let link = crate::protocol::link_of(&mut s, "everything");
        (link.session, link.version, link.next_id) = (Some("up-1".into()), "2025-11-25".into(), 9);
        store.save(&s);
        let r = result_forward(&f, &mut store).unwrap();
        assert_eq!(r.method, "tasks/result");
        assert_eq!(r.params["taskId"], json!("t1"));
        assert_eq!(
            r.params["_meta"], f.params["_meta"],
            "the client's capabilities decide what is asked"
        );
        let link = r.link.unwrap();
        assert_eq!((link.session.as_deref(), link.next_id), (Some("up-1"), 9));
        let mut s = store.load("tasks:@ann").unwrap();
        let next = crate::protocol::link_of(&mut s, "everything").next_id;
        assert_eq!(next, 9 + IDS_PER_EXCHANGE, "the next forward's ids come after");
    }

    #[test]
    fn the_question_goes_inline_in_tasks_get() {
        let body = json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "taskId": "t1", "status": "input_required"}}).to_string();
        let asked = json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "input_required",
            "inputRequests": {"relay-n-1": {"method": "elicitation/create", "params": {"message": "which?"}}}}})
        .to_string();
        let out: Value = serde_json::from_str(&with_question(&body, &asked)).unwrap();
        assert_eq!(out["result"]["status"], json!("input_required"));
        assert_eq!(
            out["result"]["inputRequests"]["relay-n-1"]["params"]["message"],
            json!("which?")
        );
        assert_eq!(out["result"]["resultType"], json!("complete"));
        assert_eq!(with_question(&body, "not json"), body);
    }

    #[test]
    fn an_update_answers_the_question_asked_and_nothing_else() {
        let answer = json!({"action": "accept", "content": {"interpretation": "snake"}});
        let f = update_of(json!({"relay-n-1": answer}));
        assert_eq!(
            update(&f, false, Some("relay-n-1"), &[]),
            Update::Answer(json!({ "result": answer }))
        );
        // A key not asked (forged, or another task's) is refused, naming it.
        let Update::Refused(e) = update(&update_of(json!({"relay-x-1": answer})), false, Some("relay-n-1"), &[]) else {
            panic!("not refused")
        };
        assert_eq!(e.code(), crate::error::code::INVALID_PARAMS);
        assert!(e.to_string().contains("params.inputResponses.relay-x-1"), "{e}");
        assert!(
            matches!(update(&f, false, None, &[]), Update::Refused(_)),
            "no question waits"
        );
        // An answer given already is acknowledged again (the extension: ignored).
        assert_eq!(update(&f, false, None, &["relay-n-1".into()]), Update::Acknowledge);
        // Bad shapes name the field.
        for bad in [json!([]), json!({}), json!("yes")] {
            let Update::Refused(e) = update(&update_of(bad), false, Some("relay-n-1"), &[]) else {
                panic!()
            };
            assert!(
                e.to_string().starts_with("params.inputResponses must be an object"),
                "{e}"
            );
        }
        let mut none = f.clone();
        none.params.as_object_mut().unwrap().remove("inputResponses");
        assert!(matches!(update(&none, false, Some("k"), &[]), Update::Refused(_)));
        // A 2026-07-28 upstream's task takes its own updates; a session's update is not ours.
        assert_eq!(update(&f, true, None, &[]), Update::Forward);
        let mut session = f.clone();
        session.stateless = false;
        assert_eq!(update(&session, false, None, &[]), Update::Forward);
    }
}
