//! Which forwarded call a stdio upstream's question (`sampling/createMessage`,
//! `elicitation/create`, `roots/list`) belongs to, when one process serves every client of the
//! gateway (issue 58 item 7).
//!
//! Over Streamable HTTP a question comes on the response stream of the call it is about (or on
//! the standalone stream of an upstream session that only one downstream session uses), so it is
//! attributed by construction. A pipe has no stream per request: the stdio transport carries
//! messages and nothing else, and what an SDK passes as the related request (`relatedRequestId`)
//! only steers Streamable HTTP — on stdout the question names no call. So a question names its
//! call only by what it carries:
//! - its `_meta.progressToken` equal to a call's in flight (the gateway sends each call's token
//!   unique to the call, `upstream::Relay`), or
//! - its `_meta["io.modelcontextprotocol/related-task"].taskId` equal to the task a call in
//!   flight is about (`tasks/result`); a related task no call in flight is about is refused.
//!
//! A question that names no call is NOT the one call in flight's merely because that call is
//! alone on the pipe, nor because nothing overlapped it since it was sent: a call that returned
//! may have left work behind (a job, a timer) that asks any time later, while another client's
//! call happens to be the one in flight — that client would be asked, and its answer sent back
//! as the answer of the other's job. Nothing on a pipe tells the two apart. What does hold: a
//! late question is about some call this process was sent since it started. So an unnamed
//! question goes to the one call in flight only when every call the process was sent since it
//! started came from that call's principal (its owner): then whichever call it concerns, its
//! owner is the one asked. Otherwise it is refused (`-32603` to the upstream, no client asked).
//! Callers without a token are one owner, as they share one task budget
//! (`task::budget::ANONYMOUS`): without tokens the gateway does not tell them apart. A process
//! that restarts begins again with the owners of the calls still in flight.

use std::collections::HashMap;

use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Who a call is for: its principal (`MCP_SIEVE_TOKENS`, a signed-in subject); `None` for the
/// callers without one (see the module's header).
pub(super) type Owner = Option<String>;

/// A forwarded call in flight, and what could tie a question of the process to it.
pub(super) struct Call {
    /// Where what the process sends for it goes.
    pub(super) to: mpsc::UnboundedSender<Value>,
    /// The progress token it was sent with (`_meta.progressToken`), if any.
    pub(super) token: Option<Value>,
    /// The task it is about (`params.taskId`: `tasks/result`, `tasks/get`), if any.
    pub(super) task: Option<Value>,
    /// Its principal.
    pub(super) owner: Owner,
}

/// The principals of the calls a process was sent since it started.
#[derive(Debug, Default, Clone, PartialEq)]
enum Owners {
    #[default]
    None,
    One(Owner),
    Several,
}

impl Owners {
    fn with(self, owner: &Owner) -> Owners {
        match self {
            Owners::None => Owners::One(owner.clone()),
            Owners::One(o) if o == *owner => Owners::One(o),
            _ => Owners::Several,
        }
    }
}

/// The forwarded calls in flight at one process (by the driver's id), and whose calls it was sent.
#[derive(Default)]
pub(super) struct Calls {
    by_id: HashMap<u64, Call>,
    owners: Owners,
}

/// Why a question of the process goes to no client.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum Unattributed {
    #[error("no call is in flight")]
    NoCall,
    #[error("it names task {0}, which no call in flight is about")]
    OtherTask(String),
    #[error(
        "{0} calls are in flight and it names none of them (_meta.progressToken, io.modelcontextprotocol/related-task)"
    )]
    Several(usize),
    #[error("it names no call (_meta.progressToken, io.modelcontextprotocol/related-task) and calls of more than one principal were sent to the process since it started: it may be a late question of another principal's call")]
    Principals,
}

impl Unattributed {
    /// The answer to the process's request `id` of `method`: `-32603`, saying why.
    pub(super) fn refusal(&self, id: &Value, method: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!(
            "no client call this question belongs to: the gateway does not relay {method} from this stdio upstream, as {self}"
        )}})
    }
}

impl Calls {
    /// `call` is sent under `id`.
    pub(super) fn add(&mut self, id: u64, call: Call) {
        self.owners = std::mem::take(&mut self.owners).with(&call.owner);
        self.by_id.insert(id, call);
    }

    /// The call `id` is over (answered, given up or failed).
    pub(super) fn remove(&mut self, id: u64) {
        self.by_id.remove(&id);
    }

    /// A new process started: what it asks concerns the calls sent to it, and those still in
    /// flight (sent to the one before, ending now).
    pub(super) fn started(&mut self) {
        self.owners = self.by_id.values().fold(Owners::None, |o, c| o.with(&c.owner));
    }

    /// Where each call in flight takes what the process sends (progress: each keeps its own).
    pub(super) fn all(&self) -> impl Iterator<Item = &mpsc::UnboundedSender<Value>> {
        self.by_id.values().map(|c| &c.to)
    }

    /// Where the process's `question` goes: the call it names, else the one call in flight when
    /// every call the process was sent came from that call's principal (see the header).
    pub(super) fn attribute(&self, question: &Value) -> Result<&mpsc::UnboundedSender<Value>, Unattributed> {
        let meta = &question["params"]["_meta"];
        if let Some(token) = meta.get("progressToken").filter(|t| !t.is_null()) {
            // A token that is no call's may be the process's own (for progress of its request).
            if let Some(c) = self.by_id.values().find(|c| c.token.as_ref() == Some(token)) {
                return Ok(&c.to);
            }
        }
        if let Some(task) = meta["io.modelcontextprotocol/related-task"].get("taskId") {
            return match self.by_id.values().find(|c| c.task.as_ref() == Some(task)) {
                Some(c) => Ok(&c.to),
                None => Err(Unattributed::OtherTask(task.to_string())),
            };
        }
        let mut calls = self.by_id.values();
        match (calls.next(), calls.next(), &self.owners) {
            (None, _, _) => Err(Unattributed::NoCall),
            (Some(c), None, Owners::One(o)) if c.owner == *o => Ok(&c.to),
            (Some(_), None, _) => Err(Unattributed::Principals),
            (Some(_), Some(_), _) => Err(Unattributed::Several(self.by_id.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(owner: Option<&str>, token: Option<&str>, task: Option<&str>) -> (Call, mpsc::UnboundedReceiver<Value>) {
        let (to, rx) = mpsc::unbounded_channel();
        let call = Call {
            to,
            token: token.map(|t| json!(t)),
            task: task.map(|t| json!(t)),
            owner: owner.map(str::to_string),
        };
        (call, rx)
    }

    fn question(meta: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": "q", "method": "elicitation/create",
            "params": {"message": "confirm?", "requestedSchema": {"type": "object"}, "_meta": meta}})
    }

    /// Which receiver, if any, got `q` once attributed.
    fn asked(calls: &Calls, q: &Value, rxs: &mut [&mut mpsc::UnboundedReceiver<Value>]) -> Result<usize, Unattributed> {
        calls.attribute(q)?.send(q.clone()).map_err(|_| Unattributed::NoCall)?;
        Ok(rxs
            .iter_mut()
            .position(|rx| rx.try_recv().is_ok())
            .expect("one receiver got it"))
    }

    #[test]
    fn a_late_question_of_another_principals_finished_call_goes_to_nobody() {
        let mut calls = Calls::default();
        let (bravo, _b) = call(Some("bravo"), None, None);
        calls.add(1, bravo);
        calls.remove(1); // bravo's call returned
        let (alice, _a) = call(Some("alice"), None, None);
        calls.add(2, alice); // alone on the pipe since it was sent
        assert_eq!(
            calls.attribute(&question(json!({}))).err(),
            Some(Unattributed::Principals)
        );
    }

    #[test]
    fn a_question_that_names_its_call_reaches_it_whoever_else_used_the_process() {
        let mut calls = Calls::default();
        let (alice, mut a) = call(Some("alice"), Some("relay-a"), None);
        let (bravo, mut b) = call(Some("bravo"), Some("relay-b"), Some("task-b"));
        calls.add(1, alice);
        calls.add(2, bravo);
        let by_token = question(json!({"progressToken": "relay-a"}));
        assert_eq!(asked(&calls, &by_token, &mut [&mut a, &mut b]), Ok(0));
        let by_task = question(json!({"io.modelcontextprotocol/related-task": {"taskId": "task-b"}}));
        assert_eq!(asked(&calls, &by_task, &mut [&mut a, &mut b]), Ok(1));
    }

    #[test]
    fn a_related_task_no_call_in_flight_is_about_goes_to_nobody() {
        let mut calls = Calls::default();
        let (alice, _a) = call(Some("alice"), None, None);
        calls.add(1, alice);
        let q = question(json!({"io.modelcontextprotocol/related-task": {"taskId": "task-b"}}));
        assert_eq!(
            calls.attribute(&q).err(),
            Some(Unattributed::OtherTask("\"task-b\"".into()))
        );
    }

    #[test]
    fn a_token_that_is_no_calls_names_nothing() {
        let mut calls = Calls::default();
        let (alice, mut a) = call(Some("alice"), Some("relay-a"), None);
        calls.add(1, alice);
        // The process's own progress token for its request: unnamed, and alice's alone used it.
        assert_eq!(
            asked(&calls, &question(json!({"progressToken": 7})), &mut [&mut a]),
            Ok(0)
        );
    }

    #[test]
    fn an_unnamed_question_goes_to_the_one_call_when_one_principal_used_the_process() {
        let mut calls = Calls::default();
        for id in 1..=3 {
            let (c, _rx) = call(Some("alice"), None, None);
            calls.add(id, c);
            calls.remove(id);
        }
        let (alice, mut a) = call(Some("alice"), None, None);
        calls.add(4, alice);
        assert_eq!(asked(&calls, &question(json!({})), &mut [&mut a]), Ok(0));
        // Callers without a token are one owner.
        let mut anonymous = Calls::default();
        let (first, _f) = call(None, None, None);
        anonymous.add(1, first);
        anonymous.remove(1);
        let (second, mut s) = call(None, None, None);
        anonymous.add(2, second);
        assert_eq!(asked(&anonymous, &question(json!({})), &mut [&mut s]), Ok(0));
    }

    #[test]
    fn none_or_several_calls_in_flight_take_no_unnamed_question() {
        let mut calls = Calls::default();
        assert_eq!(calls.attribute(&question(json!({}))).err(), Some(Unattributed::NoCall));
        let (one, _o) = call(Some("alice"), None, None);
        let (two, _t) = call(Some("alice"), None, None);
        calls.add(1, one);
        calls.add(2, two);
        assert_eq!(
            calls.attribute(&question(json!({}))).err(),
            Some(Unattributed::Several(2))
        );
    }

    #[test]
    fn a_new_process_forgets_the_principals_of_the_calls_sent_to_the_one_before() {
        let mut calls = Calls::default();
        let (bravo, _b) = call(Some("bravo"), None, None);
        calls.add(1, bravo);
        calls.remove(1);
        calls.started();
        let (alice, mut a) = call(Some("alice"), None, None);
        calls.add(2, alice);
        assert_eq!(asked(&calls, &question(json!({})), &mut [&mut a]), Ok(0));
        // A call to the old process still in flight counts.
        let mut calls = Calls::default();
        let (bravo, _b) = call(Some("bravo"), None, None);
        calls.add(1, bravo);
        calls.started();
        calls.remove(1);
        let (alice, _a) = call(Some("alice"), None, None);
        calls.add(2, alice);
        assert_eq!(
            calls.attribute(&question(json!({}))).err(),
            Some(Unattributed::Principals)
        );
    }

    #[test]
    fn the_refusal_is_32603_saying_why() {
        let r = Unattributed::Principals.refusal(&json!("ask-1"), "elicitation/create");
        assert_eq!(r["id"], "ask-1");
        assert_eq!(r["error"]["code"], -32603);
        let m = r["error"]["message"].as_str().unwrap_or_default();
        assert!(m.starts_with("no client call this question belongs to"), "{m}");
        assert!(m.contains("another principal's call"), "{m}");
    }
}
