//! Gateway mode's effect: a [`Forward`] is what the router hands the shell instead of a result
//! (perform this request at the upstream), and [`Forward::answer`] turns the upstream's reply
//! into the client's answer. Binding a forward to its session is `forwarding.rs`.

use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::protocol::jsonrpc;
use crate::protocol::session::{OwnedTask, Session, UpstreamLink};
use crate::task::budget::BudgetStep;
use crate::task::MAX_TTL_MS;

/// What the router hands the shell instead of a result: perform `method` with `params` at the
/// upstream and answer the client's request `id` with the upstream's result or error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Forward {
    /// The client's request id.
    pub id: Value,
    /// The method (`tools/call`, `prompts/get`, `resources/read`, `completion/complete`, `tasks/*`).
    pub method: String,
    /// The client's params, untouched.
    pub params: Value,
    /// Whether the request is of the stateless 2026-07-28 era (its result gets `resultType`).
    pub stateless: bool,
    /// The downstream session the request came in (`None`: stateless).
    pub session: Option<String>,
    /// That session's upstream session, with ids reserved for this exchange (`None`: open a
    /// fresh upstream session and use it once).
    pub link: Option<UpstreamLink>,
    /// `tasks/list`: the task ids the session may see (the upstream's answer is cut to these).
    pub owned_tasks: Option<Vec<String>>,
    /// Whether the client accepts an SSE answer (then the upstream's notifications for this
    /// request go along with the response).
    pub sse: bool,
    /// Which upstream performs it (an index in `Catalog::upstreams`; `params` already carry the
    /// name that upstream knows).
    pub upstream: usize,
    /// That upstream's name (empty: the unnamed `upstream`).
    pub upstream_name: String,
    /// The authenticated principal that made the request, if any (a question the upstream asks
    /// a 2026-07-28 caller is answered by the same principal only: `upstream::unwrap_input`).
    #[cfg(feature = "gateway")]
    pub principal: Option<String>,
    /// `tasks/list`: each upstream running tasks of this session, asked for its whole list; the
    /// merged list is filtered, ordered and paged here ([`crate::protocol::Server::gathered_tasks`]).
    #[cfg(feature = "gateway")]
    pub gather: Vec<Gather>,
    /// The calling client's `roots` capability, when it declared one (its session's
    /// `initialize`, or a 2026-07-28 request's `_meta`): the upstream session opened for it
    /// declares roots too, and the upstream's `roots/list` is relayed to it.
    #[cfg(feature = "gateway")]
    pub roots: Option<Value>,
    /// Whether the calling client declared URL-mode elicitation (`elicitation.url`, 2025-11-25):
    /// an upstream that needs a person to sign in is then answered with a sign-in URL
    /// (`-32042`, see `upstream::oauth::url_elicitation_required`).
    #[cfg(feature = "gateway")]
    pub url_elicitation: bool,
    /// Whether `params` are the client's request's own, apart from the name routing gave them
    /// (a shell may then write the upstream request from the client's text: the Worker's fast
    /// forward); `false` when the core built them (search mode's `call_tool`).
    #[cfg(feature = "gateway")]
    pub verbatim: bool,
    /// The task this call may create, to admit in the server's task budget (`task::budget`,
    /// `options.maxTasks`) before it is sent: the shell asks, and a refusal is the answer
    /// ([`Forward::over_budget`]).
    #[cfg(feature = "gateway")]
    pub admit: Option<Admission>,
}

/// A gateway task a call may create, for the server's task budget.
#[cfg(feature = "gateway")]
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// Its entry, under a slot (`task::budget::slot`): the upstream names the task only later.
    pub entry: crate::task::budget::Entry,
    /// Whether the call asks for a task (else the upstream may make one, SEP-2663).
    pub certain: bool,
}

/// Drops the task whose budget slot is `slot` (the budget let it go, see
/// `task::budget::slot_holder`): a gateway task's record, or a task of this server's own; whether
/// `s` held it.
#[cfg(feature = "gateway")]
pub fn forget_slot(s: &mut Session, slot: &str) -> bool {
    let before = s.upstream_tasks.len() + s.tasks.len();
    s.upstream_tasks.retain(|t| t.slot.as_deref() != Some(slot));
    s.tasks.retain(|t| t.slot.as_deref() != Some(slot));
    before != s.upstream_tasks.len() + s.tasks.len()
}

/// The task budget's steps when session `s` ends (its client's `DELETE`, or idle expiry): each
/// task it kept that had not finished — a gateway task, or one of this server's own — finishes
/// now: nobody can reach it any more (it goes with the session, the session's upstream sessions
/// are closed), so it may make room at once instead of counting as working until its TTL.
pub fn ended_steps(s: &Session) -> Vec<BudgetStep> {
    #[cfg(feature = "gateway")]
    {
        let owner = s.budget_owner();
        let gateway = s.upstream_tasks.iter().filter(|t| !t.finished).map(|t| &t.slot);
        let own = s.tasks.iter().filter(|t| !t.status.is_terminal()).map(|t| &t.slot);
        gateway
            .chain(own)
            .filter_map(Clone::clone)
            .map(|id| BudgetStep::Finish {
                principal: owner.to_string(),
                id,
            })
            .collect()
    }
    #[cfg(not(feature = "gateway"))]
    {
        let _ = s;
        Vec::new()
    }
}

/// One upstream a gateway's `tasks/list` asks.
#[cfg(feature = "gateway")]
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gather {
    /// Which upstream (an index in `Catalog::upstreams`).
    pub upstream: usize,
    /// Its name (empty: the unnamed `upstream`).
    pub name: String,
    /// The session's own session there, with ids reserved for this exchange.
    pub link: UpstreamLink,
    /// The ids of the session's tasks it runs (its answer is cut to these).
    pub tasks: Vec<String>,
}

/// The name of the upstream that runs `t` (empty: the unnamed one).
pub(crate) fn task_upstream(t: &OwnedTask) -> String {
    #[cfg(feature = "gateway")]
    return t.upstream.clone();
    #[cfg(not(feature = "gateway"))]
    {
        let _ = t;
        String::new()
    }
}

/// The session's own session at the upstream named `name` (empty: the unnamed one).
pub(crate) fn link_of<'a>(s: &'a mut Session, name: &str) -> &'a mut UpstreamLink {
    #[cfg(feature = "gateway")]
    if !name.is_empty() {
        return s.upstream_links.entry(name.to_string()).or_default();
    }
    let _ = name;
    s.upstream.get_or_insert_with(UpstreamLink::default)
}

pub(super) fn creates_task(params: &Value) -> bool {
    params.get("task").is_some_and(|t| !t.is_null())
}

/// How the keys begin under which the gateway asks a 2026-07-28 caller what its upstream asks
/// mid-call (`upstream::input_required`); no upstream's own key is taken for one.
pub const RELAYED_KEY: &str = "relay-";

/// Whether a call's `params` bring the answer to a question the gateway relayed
/// (`inputResponses` under a [`RELAYED_KEY`] key): the call it was asked in going on (the shell
/// resumes that exchange, or refuses the key), never a new call at the upstream.
#[cfg(feature = "gateway")]
pub(super) fn resumes(params: &Value) -> bool {
    params["inputResponses"]
        .as_object()
        .is_some_and(|r| r.keys().any(|k| k.starts_with(RELAYED_KEY)))
}

impl Forward {
    /// The task the upstream's `response` says this call created, if any: its id, and when its
    /// record expires — as long as the upstream keeps it, up to a day (a record without a TTL,
    /// or a longer one, would count against its owner's task cap for ever).
    fn created<'a>(&self, response: Option<&'a Value>, now_ms: i64) -> Option<(&'a str, i64)> {
        // `{task}` (2025-11-25), or inline beside `resultType: "task"` (SEP-2663).
        let result = response.and_then(|r| r.get("result"));
        let task = result.and_then(|r| r.get("task").filter(|t| t.is_object()).or(Some(r)))?;
        // Asked (`params.task`), or made by a 2026-07-28 upstream that decided on its own.
        let made = creates_task(&self.params) || result.is_some_and(|r| r["resultType"] == "task");
        let id = task["taskId"].as_str().filter(|_| made)?;
        let ttl = task
            .get("ttl")
            .or(task.get("ttlMs"))
            .and_then(Value::as_i64)
            .filter(|t| *t > 0)
            .map_or(MAX_TTL_MS, |t| t.min(MAX_TTL_MS));
        Some((id, now_ms.saturating_add(ttl)))
    }

    /// What the server's task budget learns from this exchange's `response` (with the steps
    /// [`Forward::record`] found): the slot admitted for it is settled — kept for the task it
    /// created, else freed.
    pub fn settle(&self, response: Option<&Value>, now_ms: i64, steps: &mut Vec<BudgetStep>) {
        #[cfg(feature = "gateway")]
        if let Some(a) = &self.admit {
            steps.push(BudgetStep::Settle {
                id: a.entry.id.clone(),
                expires_ms: self.created(response, now_ms).map(|(_, e)| e),
            });
        }
        let _ = (response, now_ms, steps);
    }

    /// The JSON-RPC response for the client, from the upstream's reply to this request (a
    /// message with `result` or `error`, passed through untouched apart from the id), or from the
    /// reason the upstream could not be asked.
    pub fn answer(&self, reply: std::result::Result<&Value, &Error>) -> String {
        let failed = |why: String| {
            jsonrpc::error(
                &self.id,
                &Error::Internal(format!("{} could not be forwarded: {why}", self.method)),
            )
        };
        let msg = match reply {
            Ok(m) => m,
            // The gateway's own answer for a sign-in by URL-mode elicitation: its code and data.
            #[cfg(feature = "gateway")]
            Err(e @ Error::Rpc { code, .. }) if *code == crate::error::code::URL_ELICITATION_REQUIRED => {
                return jsonrpc::error(&self.id, e)
            }
            Err(why) => return failed(why.to_string()),
        };
        if let Some(result) = msg.get("result") {
            let mut result = result.clone();
            if self.stateless {
                if let Value::Object(o) = &mut result {
                    let mut with = Map::new();
                    with.insert("resultType".into(), json!("complete"));
                    if self.method == "resources/read" {
                        // An upstream of an older revision sends no cache fields: cache nothing.
                        with.insert("ttlMs".into(), json!(0));
                        with.insert("cacheScope".into(), json!("private"));
                    }
                    with.extend(std::mem::take(o));
                    *o = with;
                }
            } else if let Value::Object(o) = &mut result {
                // A 2026-07-28 upstream's marker means nothing to a session client.
                if o.get("resultType").is_some_and(|t| t == "complete") {
                    o.remove("resultType");
                }
            }
            if let (Some(owned), Some(Value::Array(tasks))) = (&self.owned_tasks, result.get_mut("tasks")) {
                tasks.retain(|t| t["taskId"].as_str().is_some_and(|id| owned.iter().any(|o| o == id)));
            }
            return jsonrpc::ok(&self.id, &result);
        }
        match msg.get("error") {
            Some(e) => json!({"jsonrpc": "2.0", "id": self.id, "error": e}).to_string(),
            None => failed("the upstream's reply has neither result nor error".into()),
        }
    }

    /// After the exchange: what `s` must remember of it — its upstream session (opened, or opened
    /// again) and the task the request created, if any; a task the upstream says finished adds
    /// its step for the server's task budget to `steps`. Returns whether `s` changed.
    pub fn record(
        &self,
        s: &mut Session,
        link: UpstreamLink,
        response: Option<&Value>,
        now_ms: i64,
        steps: &mut Vec<BudgetStep>,
    ) -> bool {
        let mut changed = false;
        let stored = link_of(s, &self.upstream_name);
        if (&stored.session, &stored.version) != (&link.session, &link.version) {
            stored.next_id = stored.next_id.max(link.next_id);
            (stored.session, stored.version) = (link.session, link.version);
            changed = true;
        }
        if let Some((id, expires_ms)) = self.created(response, now_ms) {
            s.upstream_tasks.push(OwnedTask {
                id: id.to_string(),
                #[cfg(feature = "gateway")]
                upstream: self.upstream_name.clone(),
                expires_ms: Some(expires_ms),
                finished: false,
                #[cfg(feature = "gateway")]
                slot: self.admit.as_ref().map(|a| a.entry.id.clone()),
            });
            changed = true;
        }
        // A task the upstream says finished (or acknowledged cancelling) may make room later.
        let result = response.and_then(|r| r.get("result"));
        let done = match (self.method.as_str(), result) {
            ("tasks/result" | "tasks/cancel", Some(_)) => true,
            ("tasks/get", Some(r)) => matches!(r["status"].as_str(), Some("completed" | "failed" | "cancelled")),
            _ => false,
        };
        let id = self.params["taskId"].as_str();
        if let Some(t) = s
            .upstream_tasks
            .iter_mut()
            .find(|t| done && !t.finished && Some(t.id.as_str()) == id)
        {
            t.finished = true;
            changed = true;
            #[cfg(feature = "gateway")]
            if let Some(slot) = &t.slot {
                steps.push(BudgetStep::Finish {
                    principal: s
                        .principal
                        .clone()
                        .unwrap_or_else(|| crate::task::budget::ANONYMOUS.into()),
                    id: slot.clone(),
                });
            }
        }
        let _ = steps;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_pass_the_upstream_result_or_error_through() {
        let f = Forward {
            id: json!(7),
            method: "tools/call".into(),
            params: json!({}),
            ..Forward::default()
        };
        let r: Value =
            serde_json::from_str(&f.answer(Ok(&json!({"id": 1, "result": {"content": [], "z": {"a": 1}}})))).unwrap();
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "z": {"a": 1}}})
        );
        let r: Value =
            serde_json::from_str(&f.answer(Ok(&json!({"id": 1, "error": {"code": -32602, "message": "no"}})))).unwrap();
        assert_eq!(r["error"], json!({"code": -32602, "message": "no"}));
        assert_eq!(r["id"], json!(7));
        let r: Value = serde_json::from_str(&f.answer(Err(&Error::Upstream("connection refused".into())))).unwrap();
        assert_eq!(r["error"]["code"], json!(-32603));
        assert!(r["error"]["message"].as_str().unwrap().contains("connection refused"));
        let r: Value =
            serde_json::from_str(&f.answer(Ok(&json!({"result": {"resultType": "complete", "content": []}})))).unwrap();
        assert_eq!(
            r["result"],
            json!({"content": []}),
            "a session client gets no resultType"
        );
        let modern = Forward { stateless: true, ..f };
        let r: Value = serde_json::from_str(&modern.answer(Ok(&json!({"result": {"content": []}})))).unwrap();
        assert_eq!(r["result"], json!({"resultType": "complete", "content": []}));
    }
}
