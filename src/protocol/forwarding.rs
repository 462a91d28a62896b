//! Gateway mode: when the catalog came from an upstream (`upstream` is set), uses of a primitive,
//! completions and task requests are not run here. After the same policy check as a local use
//! (each method family checks, then calls [`Server::forward`]), they become a [`Forward`] effect
//! the shell performs at the upstream — in the downstream session's own upstream session
//! ([`UpstreamLink`]; a stateless request gets a fresh one, used once). Upstream tasks belong to
//! the session that created them (a stateless caller's, to the holder of its principal's tasks,
//! `protocol::gateway_holder`): another's task id is "Unknown task", never forwarded.

use serde_json::Value;

use crate::error::{type_name, Error, Result};
use crate::protocol::forward::{creates_task, link_of, task_upstream, Forward};
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Call, Env, Server};
use crate::protocol::session::{Session, UpstreamLink};
#[cfg(feature = "gateway")]
use crate::{
    protocol::forward::{resumes, Admission, Gather},
    task::{budget, TaskQuery},
};

/// Request ids one exchange may use: `initialize` and the request, twice when the upstream
/// forgot the session and it is opened again.
pub(crate) const IDS_PER_EXCHANGE: u64 = 4;

/// How long a gateway task's budget slot is held before its upstream answers (longer than one
/// exchange can take, its client's answers to the upstream's questions included).
#[cfg(feature = "gateway")]
const RESERVED_MS: i64 = 15 * 60_000;

/// Takes the tasks extension out of a 2026-07-28 call's client capabilities, so that its
/// upstream makes no task of it.
#[cfg(feature = "gateway")]
fn undeclare_tasks(params: &mut Value) {
    let caps = &mut params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    if let Some(e) = caps.get_mut("extensions").and_then(Value::as_object_mut) {
        e.remove(crate::protocol::initialize::TASKS_EXTENSION);
    }
}

#[cfg(feature = "gateway")]
impl Forward {
    /// The budget refused this call's task (`refusal`): a call that may not make one goes on,
    /// without declaring the tasks extension to its upstream (as at its principal's cap); else
    /// the refusal is the answer (`Err`).
    pub fn over_budget(&mut self, refusal: Error) -> Result<()> {
        match self.admit.take() {
            Some(a) if !a.certain => {
                undeclare_tasks(&mut self.params);
                Ok(())
            }
            _ => Err(refusal),
        }
    }
}

fn unknown_task(id: &str) -> Error {
    Error::params(format!("Unknown task: \"{id}\" (it may have expired)"))
}

impl Server {
    /// Binds the forward of `out` (if any) to the caller's session: a task method must name a
    /// task this session created; a task-creating call must fit under the live-task cap; ids are
    /// reserved in the session's upstream session. Stateless requests own no task, except in
    /// a gateway, where the holder of their principal's tasks is their session
    /// (`protocol::gateway_holder`).
    pub(crate) fn bind_forward(&self, session: &mut Option<Session>, env: &Env, out: &mut Outcome) -> Result<()> {
        let now_ms = env.now_ms;
        let Some(f) = out.forward.as_mut() else {
            return Ok(());
        };
        // Whether a call that creates a task (or may: a 2026-07-28 upstream decides) is admitted
        // in the server's task budget before it is sent (`options.maxTasks`, with this server's
        // own tasks; the caps below are the session's and the principal's).
        #[cfg(feature = "gateway")]
        let mut admit = None;
        let task_id = || match f.params.get("taskId") {
            Some(Value::String(id)) => Ok(id.clone()),
            Some(v) => Err(Error::params(format!(
                "params.taskId must be a string, got {}",
                type_name(v)
            ))),
            None => Err(Error::params("params.taskId is required")),
        };
        let owned: Vec<(String, String)> = match session.as_mut() {
            Some(s) => {
                let before = s.upstream_tasks.len();
                s.upstream_tasks.retain(|t| t.expires_ms.is_none_or(|e| e > now_ms));
                out.session_changed |= before != s.upstream_tasks.len();
                s.upstream_tasks
                    .iter()
                    .map(|t| (t.id.clone(), task_upstream(t)))
                    .collect()
            }
            None => Vec::new(),
        };
        match f.method.as_str() {
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/update" => {
                let id = task_id()?;
                let Some((_, up)) = owned.iter().find(|(t, _)| *t == id) else {
                    return Err(unknown_task(&id));
                };
                // The task is asked of the upstream that runs it.
                if let Some(i) = self.catalog.upstreams.iter().position(|u| u.name == *up) {
                    (f.upstream, f.upstream_name) = (i, up.clone());
                }
            }
            #[cfg(feature = "gateway")]
            "tasks/list" => {
                // Every upstream running the session's tasks is asked for its whole list; the
                // query is checked here, before any of them is asked.
                TaskQuery::parse(&f.params, self.catalog.options.reject_unsupported_task_criteria)?;
                if let Some(s) = session.as_mut() {
                    for (i, up) in self.catalog.upstreams.iter().enumerate() {
                        let tasks: Vec<String> = owned
                            .iter()
                            .filter(|(_, u)| *u == up.name)
                            .map(|(t, _)| t.clone())
                            .collect();
                        if tasks.is_empty() {
                            continue;
                        }
                        let link = link_of(s, &up.name);
                        let start = link.next_id.max(1);
                        link.next_id = start.saturating_add(IDS_PER_EXCHANGE);
                        f.gather.push(Gather {
                            upstream: i,
                            name: up.name.clone(),
                            link: UpstreamLink {
                                next_id: start,
                                ..link.clone()
                            },
                            tasks,
                        });
                    }
                    f.session = Some(s.id.clone());
                    out.session_changed = true;
                }
                return Ok(());
            }
            #[cfg(not(feature = "gateway"))]
            "tasks/list" => {
                // Only one upstream is asked: the one running the session's tasks (the first).
                let up = owned.first().map(|(_, u)| u.clone()).unwrap_or_default();
                if let Some(i) = self.catalog.upstreams.iter().position(|u| u.name == up) {
                    (f.upstream, f.upstream_name) = (i, up.clone());
                }
                f.owned_tasks = Some(owned.iter().filter(|(_, u)| *u == up).map(|(t, _)| t.clone()).collect())
            }
            // The call that brings the answer to a question its upstream asked before answering
            // (it may be the call creating a task) goes on with the exchange admitted then: no
            // second task is counted, capped or admitted for it.
            #[cfg(feature = "gateway")]
            "tools/call" if f.stateless && resumes(&f.params) => {}
            "tools/call" if creates_task(&f.params) && session.is_some() => {
                let cap = self.catalog.options.max_tasks_per_session;
                #[cfg(feature = "gateway")]
                let cap = match session.as_mut().filter(|s| s.task_holder) {
                    // A gateway's holder of one principal's tasks (`protocol::gateway_holder`),
                    // capped as this server's own 2026-07-28 tasks are (`task::budget`): at its
                    // cap, the oldest task the upstream said finished makes room, a working one
                    // never; else the call is refused before it reaches the upstream.
                    Some(s) => {
                        let per_principal = self.catalog.options.max_tasks_per_principal.max(1);
                        if s.upstream_tasks.len() >= per_principal {
                            let Some(i) = s.upstream_tasks.iter().position(|t| t.finished) else {
                                let who = s.budget_owner();
                                return Err(crate::task::budget::refusal(
                                    crate::task::budget::PER_PRINCIPAL,
                                    per_principal,
                                    who,
                                ));
                            };
                            s.upstream_tasks.remove(i);
                            out.session_changed = true;
                        }
                        usize::MAX
                    }
                    None => cap,
                };
                if owned.len() >= cap {
                    return Err(crate::protocol::tasks::too_many(cap));
                }
                #[cfg(feature = "gateway")]
                {
                    admit = Some(true);
                }
            }
            // A declaring client's call of a tool that lists no task support: a 2026-07-28
            // upstream may still make a task of it (SEP-2663: it decides). At the principal's cap
            // with no finished task to make room, the extension is not declared to the upstream
            // for it, so it runs without one (no task beyond the cap, and no refusal of a call
            // that may well not have been one).
            #[cfg(feature = "gateway")]
            "tools/call" if f.stateless && crate::protocol::declares_tasks(&f.params) => {
                if let Some(s) = session.as_mut().filter(|s| s.task_holder) {
                    let per_principal = self.catalog.options.max_tasks_per_principal.max(1);
                    admit = Some(false);
                    if s.upstream_tasks.len() >= per_principal {
                        match s.upstream_tasks.iter().position(|t| t.finished) {
                            Some(i) => {
                                s.upstream_tasks.remove(i);
                                out.session_changed = true;
                            }
                            None => {
                                undeclare_tasks(&mut f.params);
                                admit = None;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        let Some(s) = session.as_mut() else {
            return Ok(());
        };
        #[cfg(feature = "gateway")]
        {
            f.admit = admit.map(|certain| Admission {
                entry: budget::Entry {
                    id: budget::slot(&s.id, &env.fresh_id),
                    principal: s.budget_owner().to_string(),
                    // Working, until the upstream's answer settles it (for its TTL, or freed):
                    // a slot whose answer never came (the exchange failed midway) frees itself.
                    finishes_ms: now_ms.saturating_add(RESERVED_MS),
                    expires_ms: now_ms.saturating_add(RESERVED_MS),
                },
                certain,
            });
        }
        let link = link_of(s, &f.upstream_name);
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
        let mut params = call.params.clone();
        if call.stateless && method == "tools/call" {
            // SEP-2663: the server decides and the client's `params.task` is ignored: a task is
            // asked of the upstream when the client declares the extension and the upstream's tool
            // supports tasks (`runs_as_task`), else none.
            let task = crate::protocol::runs_as_task(self, &params);
            if let Some(p) = params.as_object_mut() {
                match task {
                    true => p.insert("task".into(), serde_json::json!({})),
                    false => p.remove("task"),
                };
            }
        }
        // The client's own params but for the name routing gives (not when `task` was taken out).
        #[cfg(feature = "gateway")]
        let verbatim = params.get("task").is_some() == call.params.get("task").is_some();
        let upstream = self.route(method, &mut params);
        out.forward = Some(Forward {
            id: call.ctx.request_id.clone(),
            method: method.into(),
            params,
            stateless: call.stateless,
            upstream,
            upstream_name: self
                .catalog
                .upstreams
                .get(upstream)
                .map(|u| u.name.clone())
                .unwrap_or_default(),
            #[cfg(feature = "gateway")]
            principal: call.ctx.principal.clone(),
            #[cfg(feature = "gateway")]
            roots: call.ctx.initialize["capabilities"]
                .get("roots")
                .filter(|r| r.is_object())
                .cloned(),
            #[cfg(feature = "gateway")]
            url_elicitation: call.ctx.initialize["capabilities"]["elicitation"]["url"].is_object(),
            #[cfg(feature = "gateway")]
            verbatim,
            ..Forward::default()
        });
        Some(String::new())
    }

    /// Without the `gateway` feature there is at most the one upstream.
    #[cfg(not(feature = "gateway"))]
    fn route(&self, _method: &str, _params: &mut Value) -> usize {
        0
    }

    /// The upstream that serves the item `params` name (a tool or prompt by its listed name,
    /// which becomes the name that upstream knows; a resource by URI); the first upstream when
    /// the item names none (tasks are routed by their owner in `bind_forward`).
    #[cfg(feature = "gateway")]
    fn route(&self, method: &str, params: &mut Value) -> usize {
        let origins = &self.catalog.origins;
        let rename = |map: &std::collections::HashMap<String, (usize, String)>, v: &mut Value| {
            let (up, name) = map.get(v.as_str()?)?;
            *v = Value::String(name.clone());
            Some(*up)
        };
        if method == "tools/call" {
            // A rewritten tool's arguments go back to the upstream's own names and values.
            let rules = params
                .get("name")
                .and_then(Value::as_str)
                .and_then(|n| origins.arguments.get(n));
            if let (Some(rules), true) = (rules, params.is_object()) {
                if !params["arguments"].is_object() {
                    params["arguments"] = Value::Object(Default::default());
                }
                if let Value::Object(args) = &mut params["arguments"] {
                    crate::catalog::ArgRule::back(rules, args);
                }
            }
        }
        let routed = match method {
            "tools/call" => params.get_mut("name").and_then(|v| rename(&origins.tools, v)),
            "prompts/get" => params.get_mut("name").and_then(|v| rename(&origins.prompts, v)),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                params["uri"].as_str().and_then(|u| origins.resource(u))
            }
            "completion/complete" => match params["ref"]["type"].as_str() {
                Some("ref/prompt") => params
                    .get_mut("ref")
                    .and_then(|r| r.get_mut("name"))
                    .and_then(|v| rename(&origins.prompts, v)),
                _ => params["ref"]["uri"].as_str().and_then(|u| origins.resource(u)),
            },
            _ => None,
        };
        routed.unwrap_or(0)
    }

    /// Whether this server fronts upstreams.
    pub fn is_gateway(&self) -> bool {
        !self.catalog.upstreams.is_empty()
    }
}
