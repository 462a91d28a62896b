//! Gateway mode: when the catalog came from an upstream (`upstream` is set), uses of a primitive,
//! completions and task requests are not run here. After the same policy check as a local use
//! (each method family checks, then calls [`Server::forward`]), they become a [`Forward`] effect
//! the shell performs at the upstream — in the downstream session's own upstream session
//! ([`UpstreamLink`]; a stateless request gets a fresh one, used once). Upstream tasks belong to
//! the session that created them: another session's task id is "Unknown task", never forwarded.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::protocol::jsonrpc;
use crate::protocol::server::{Call, Outcome, Server};
use crate::protocol::session::{OwnedTask, Session, UpstreamLink};

/// Request ids one exchange may use: `initialize` and the request, twice when the upstream
/// forgot the session and it is opened again.
const IDS_PER_EXCHANGE: u64 = 4;

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
}

fn unknown_task(id: &str) -> Error {
    Error::params(format!("Unknown task: \"{id}\" (it may have expired)"))
}

fn creates_task(params: &Value) -> bool {
    params.get("task").is_some_and(|t| !t.is_null())
}

impl Forward {
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
    /// again) and the task the request created, if any. Returns whether `s` changed.
    pub fn record(&self, s: &mut Session, link: UpstreamLink, response: Option<&Value>, now_ms: i64) -> bool {
        let mut changed = false;
        let stored = s.upstream.get_or_insert_with(UpstreamLink::default);
        if (&stored.session, &stored.version) != (&link.session, &link.version) {
            stored.next_id = stored.next_id.max(link.next_id);
            (stored.session, stored.version) = (link.session, link.version);
            changed = true;
        }
        let task = response.and_then(|r| r.get("result")).and_then(|r| r.get("task"));
        if let (true, Some(id)) = (creates_task(&self.params), task.and_then(|t| t["taskId"].as_str())) {
            let ttl = task.and_then(|t| t["ttl"].as_i64()).filter(|t| *t > 0);
            s.upstream_tasks.push(OwnedTask {
                id: id.to_string(),
                expires_ms: ttl.map(|t| now_ms.saturating_add(t)),
            });
            changed = true;
        }
        changed
    }
}

impl Server {
    /// Binds the forward of `out` (if any) to the caller's session: a task method must name a
    /// task this session created; a task-creating call must fit under the live-task cap; ids are
    /// reserved in the session's upstream session. Stateless requests own no task.
    pub(crate) fn bind_forward(&self, session: &mut Option<Session>, now_ms: i64, out: &mut Outcome) -> Result<()> {
        let Some(f) = out.forward.as_mut() else {
            return Ok(());
        };
        let task_id = || match f.params.get("taskId") {
            Some(Value::String(id)) => Ok(id.clone()),
            Some(v) => Err(Error::params(format!(
                "params.taskId must be a string, got {}",
                type_name(v)
            ))),
            None => Err(Error::params("params.taskId is required")),
        };
        let owned: Vec<String> = match session.as_mut() {
            Some(s) => {
                let before = s.upstream_tasks.len();
                s.upstream_tasks.retain(|t| t.expires_ms.is_none_or(|e| e > now_ms));
                out.session_changed |= before != s.upstream_tasks.len();
                s.upstream_tasks.iter().map(|t| t.id.clone()).collect()
            }
            None => Vec::new(),
        };
        match f.method.as_str() {
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update" => {
                let id = task_id()?;
                if !owned.contains(&id) {
                    return Err(unknown_task(&id));
                }
            }
            "tasks/list" => f.owned_tasks = Some(owned.clone()),
            "tools/call" if creates_task(&f.params) && session.is_some() => {
                let cap = self.catalog.options.max_tasks_per_session;
                if owned.len() >= cap {
                    return Err(crate::protocol::tasks::too_many(cap));
                }
            }
            _ => {}
        }
        let Some(s) = session.as_mut() else {
            return Ok(());
        };
        let link = s.upstream.get_or_insert_with(UpstreamLink::default);
        let start = link.next_id.max(1);
        link.next_id = start.saturating_add(IDS_PER_EXCHANGE);
        f.link = Some(UpstreamLink {
            next_id: start,
            ..link.clone()
        });
        f.session = Some(s.id.clone());
        out.session_changed = true;
        Ok(())
    }

    /// In gateway mode, records the forwarding of this request (which passed the same policy
    /// check as a local use) and returns its placeholder result; `None` when not a gateway.
    pub(crate) fn forward(&self, method: &str, call: &Call, out: &mut Outcome) -> Option<String> {
        if !self.is_gateway() {
            return None;
        }
        out.forward = Some(Forward {
            id: call.ctx.request_id.clone(),
            method: method.into(),
            params: call.params.clone(),
            stateless: call.stateless,
            ..Forward::default()
        });
        Some(String::new())
    }

    /// Whether this server fronts an upstream.
    pub fn is_gateway(&self) -> bool {
        self.catalog.upstream.is_some()
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
        let modern = Forward { stateless: true, ..f };
        let r: Value = serde_json::from_str(&modern.answer(Ok(&json!({"result": {"content": []}})))).unwrap();
        assert_eq!(r["result"], json!({"resultType": "complete", "content": []}));
    }
}
