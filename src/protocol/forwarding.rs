//! Gateway mode: when the catalog came from an upstream (`upstream` is set), uses of a primitive,
//! completions and task requests are not run here. After the same policy check as a local use
//! (each method family checks, then calls [`Server::forward`]), they become a [`Forward`] effect
//! the shell performs at the upstream — in the downstream session's own upstream session
//! ([`UpstreamLink`]; a stateless request gets a fresh one, used once). Upstream tasks belong to
//! the session that created them: another session's task id is "Unknown task", never forwarded.

use serde_json::Value;

use crate::error::{type_name, Error, Result};
use crate::protocol::forward::{creates_task, Forward};
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Call, Server};
use crate::protocol::session::{Session, UpstreamLink};

/// Request ids one exchange may use: `initialize` and the request, twice when the upstream
/// forgot the session and it is opened again.
const IDS_PER_EXCHANGE: u64 = 4;

fn unknown_task(id: &str) -> Error {
    Error::params(format!("Unknown task: \"{id}\" (it may have expired)"))
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
