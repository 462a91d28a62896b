//! Task methods of MCP 2025-11-25: `tools/call` with `params.task`, `tasks/get`, `tasks/result`,
//! `tasks/cancel`, and `tasks/list` with the SEP-1904 filter; status notifications. A stateless
//! (2026-07-28) task holder answers in the tasks extension's shapes (SEP-2663): the task inline
//! beside `resultType: "task"`, `ttlMs`/`pollIntervalMs`, a finished task's `result` on `tasks/get`.

use serde_json::{json, Map, Value};

use crate::error::{code, type_name, Error, Result};
use crate::filter::Filter;
use crate::model::Primitive;
use crate::protocol::initialize::TASKS_EXTENSION;
use crate::protocol::jsonrpc;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Call, Env, Server};
#[cfg(feature = "gateway")]
use crate::protocol::Forward;
use crate::protocol::{cursor, demo, Session, EXT};
use crate::task::budget::{self, BudgetStep};
use crate::task::{extension_names, Status, Task, TaskQuery, MAX_TTL_MS};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn status_note(t: &Task) -> String {
    jsonrpc::notification("notifications/tasks/status", Some(t.to_json()))
}

/// Drops expired tasks and completes due ones, announcing status changes when `announce` (not
/// for `tasks/get`: the spec says not to upgrade its answers to SSE, and the answer is the news).
fn refresh(s: &mut Session, now_ms: i64, announce: bool, out: &mut Outcome) {
    let before = s.tasks.len();
    s.tasks.retain(|t| !t.expired(now_ms));
    for t in s.tasks.iter_mut() {
        if t.advance(now_ms) {
            out.session_changed = true;
            if announce {
                out.notifications.push(status_note(t));
            }
        }
    }
    out.session_changed |= before != s.tasks.len();
}

/// SEP-2663: whether a 2026-07-28 request declares the tasks extension in its own client
/// capabilities (`_meta["io.modelcontextprotocol/clientCapabilities"].extensions`). Only such a
/// request may be answered with a task, and only such a request may use `tasks/*`.
pub fn declares_tasks(params: &Value) -> bool {
    // Members found by a scan of the few keys (`json::member`), as indexing would find them.
    let at = crate::json::member;
    let extensions = at(
        at(at(params, "_meta"), "io.modelcontextprotocol/clientCapabilities"),
        "extensions",
    );
    crate::json::get(extensions, TASKS_EXTENSION).is_some_and(Value::is_object)
}

/// `-32021` (Missing Required Client Capability, 2026-07-28): `what` needs `needed` (a
/// capability's name, named as `required` in `data.requiredCapabilities`), which the request's
/// clientCapabilities do not declare.
pub(crate) fn missing_capability(what: &str, needed: &str, required: Value) -> Error {
    Error::Rpc {
        code: code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: format!(
            "Missing required client capability: {what} needs the {needed}, \
             which this request's clientCapabilities do not declare"
        ),
        data: Some(json!({"requiredCapabilities": required})),
    }
}

/// SEP-2663's `-32021` for a request from a client that did not declare the tasks extension:
/// `what` needs it (a task method, a tool that only runs as a task).
pub(crate) fn tasks_undeclared(what: &str) -> Error {
    missing_capability(
        what,
        &format!("{TASKS_EXTENSION} extension"),
        json!({"extensions": {TASKS_EXTENSION: {}}}),
    )
}

/// SEP-2663: whether a stateless (2026-07-28) `tools/call` runs as a task. The server alone
/// decides; the extension removed `params.task`, which is ignored: for a client that declares the
/// extension, a tool whose `execution.taskSupport` is `optional` or `required` runs as one, any
/// other tool never; for a client that does not, none.
pub fn runs_as_task(server: &Server, params: &Value) -> bool {
    declares_tasks(params)
        && params["name"].as_str().is_some_and(|name| {
            let tools = server.catalog.section(crate::model::Kind::Tool);
            tools
                .find(name)
                .is_some_and(|pos| matches!(tools.items[pos].task_support.as_deref(), Some("optional" | "required")))
        })
}

/// The id prefix of a 2026-07-28 task holder.
pub const HOLDER_PREFIX: &str = "tasks:";

/// Which holder a stateless (2026-07-28) request to `server` concerns, if it concerns a task: a
/// `tools/call` that runs as a task ([`runs_as_task`]) creates a holder named after `fresh_id`;
/// `tasks/get`, `tasks/update` and `tasks/cancel` name an existing one by `params.taskId`. Only
/// when the request declares the tasks extension ([`declares_tasks`]): another's task methods are
/// refused by the core (and `tasks/result`, which the extension removed, is refused to all).
pub fn task_holder(server: &Server, method: &str, params: &Value, fresh_id: &str) -> Option<(String, bool)> {
    // The method first: a list (every stateless request asks) reads none of its params here.
    let concerns_a_task = matches!(method, "tools/call" | "tasks/get" | "tasks/update" | "tasks/cancel");
    if !concerns_a_task || !declares_tasks(params) {
        return None;
    }
    match method {
        "tools/call" if runs_as_task(server, params) => Some((format!("{HOLDER_PREFIX}{fresh_id}"), true)),
        "tasks/get" | "tasks/update" | "tasks/cancel" => params
            .get("taskId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && id.len() <= 200)
            .map(|id| (format!("{HOLDER_PREFIX}{id}"), false)),
        _ => None,
    }
}

/// The holder of a gateway's tasks that a stateless (2026-07-28) request concerns, if it concerns
/// one (a `tools/call`, which may run as a task, `tasks/get`, `tasks/update`, `tasks/cancel`):
/// one per principal, named after it (callers without one share one). It is a task holder
/// session ([`Session::task_holder`]) owning the upstream tasks its principal's calls created,
/// with its own session at each session-era upstream; another principal's request names another
/// holder, where that task is unknown. Only for a request that declares the tasks
/// extension ([`declares_tasks`]), as with [`task_holder`].
#[cfg(feature = "gateway")]
pub fn gateway_holder(method: &str, params: &Value, principal: Option<&str>) -> Option<String> {
    // Every `tools/call` of a declaring client: whether it runs as a task is known once it is
    // routed (`runs_as_task` of the upstream's tool).
    let concerns =
        declares_tasks(params) && matches!(method, "tools/call" | "tasks/get" | "tasks/update" | "tasks/cancel");
    concerns.then(|| match principal {
        Some(p) => format!("{HOLDER_PREFIX}@{p}"),
        None => format!("{HOLDER_PREFIX}#"),
    })
}

/// The budget step of a request (`None`: it neither creates nor cancels a task). A new task's
/// finish and expiry come from its parameters as `create_task` will read them (`long_report`
/// runs `arguments.seconds`, every other tool finishes at once; the TTL is `task.ttl` up to a
/// day); a request that will fail to create a task is recorded as finished, so it can be
/// evicted at once.
pub fn budget_step(
    method: &str,
    params: &Value,
    holder: &(String, bool),
    principal: Option<&str>,
    now_ms: i64,
) -> Option<BudgetStep> {
    let principal = principal.unwrap_or(budget::ANONYMOUS).to_string();
    let id = holder.0.trim_start_matches(HOLDER_PREFIX).to_string();
    match (method, holder.1) {
        // The extension has no `params.task.ttl`: the server's TTL.
        ("tools/call", true) => Some(BudgetStep::Admit(budget::Entry {
            id,
            principal,
            finishes_ms: now_ms.saturating_add(runs_ms(params)),
            expires_ms: now_ms.saturating_add(MAX_TTL_MS),
        })),
        ("tasks/cancel", false) => Some(BudgetStep::Finish { principal, id }),
        _ => None,
    }
}

/// How long the task a `tools/call` with `params` makes runs, as `create_task` will read it
/// (`long_report` runs `arguments.seconds`, every other tool finishes at once), ms.
fn runs_ms(params: &Value) -> i64 {
    let runs = match params["name"].as_str() {
        Some("long_report") => params["arguments"]
            .as_object()
            .and_then(|a| demo::report_seconds(a).ok()),
        _ => None,
    };
    runs.unwrap_or(0).saturating_mul(1000)
}

/// The budget entry of a 2025-11-25 session's `tools/call` that asks this server (no gateway) for
/// a task (`params.task`, a tool that supports tasks), to admit in the server's `options.maxTasks`
/// before it runs: under the slot of session `session_id` and the request's `fresh_id`
/// (`task::budget::slot`), which the task `create_task` makes keeps; owned by the session's
/// `principal`; finishing and expiring as it will (`params.task.ttl`, up to a day). `None` for any
/// other request. (A gateway's session tasks are admitted as they are forwarded, `Forward::admit`.)
#[cfg(feature = "gateway")]
pub fn session_task_entry(
    server: &Server,
    method: &str,
    params: &Value,
    (session_id, principal): (&str, Option<&str>),
    fresh_id: &str,
    now_ms: i64,
) -> Option<budget::Entry> {
    if server.is_gateway() || method != "tools/call" || !params["task"].is_object() {
        return None;
    }
    let tools = server.catalog.section(crate::model::Kind::Tool);
    let pos = params["name"].as_str().and_then(|n| tools.find(n))?;
    if !matches!(tools.items[pos].task_support.as_deref(), Some("optional" | "required")) {
        return None;
    }
    let ttl = params["task"]["ttl"]
        .as_i64()
        .filter(|t| *t > 0)
        .map_or(MAX_TTL_MS, |t| t.min(MAX_TTL_MS));
    Some(budget::Entry {
        id: budget::slot(session_id, fresh_id),
        principal: principal.unwrap_or(budget::ANONYMOUS).to_string(),
        finishes_ms: now_ms.saturating_add(runs_ms(params)),
        expires_ms: now_ms.saturating_add(ttl),
    })
}

/// The budget of 2026-07-28 tasks the catalog sets (`options.maxTasksPerPrincipal`, `maxTasks`).
pub fn task_budget(server: &Server) -> budget::Budget {
    let o = &server.catalog.options;
    budget::Budget {
        per_principal: o.max_tasks_per_principal,
        total: o.max_tasks,
    }
}

/// The budget a gateway's tasks at its upstreams are admitted in: only the server's total
/// (`options.maxTasks`); each principal's holder, and each session, caps its own.
pub fn gateway_budget(server: &Server) -> budget::Budget {
    budget::Budget {
        per_principal: usize::MAX,
        total: server.catalog.options.max_tasks,
    }
}

/// The refusal of a task past the per-session cap.
pub(crate) fn too_many(cap: usize) -> Error {
    Error::params(format!(
        "this session already has {cap} live tasks, the most it may hold (options.maxTasksPerSession); \
         cancel some or wait for them to expire"
    ))
}

impl Server {
    pub(crate) fn create_task(
        &self,
        tool: &Primitive,
        args: &Map<String, Value>,
        task: &Value,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        let s = session
            .as_mut()
            .ok_or_else(|| Error::InvalidRequest("tasks need a session; call initialize first".into()))?;
        let ttl = match task.get("ttl") {
            None | Some(Value::Null) => Some(MAX_TTL_MS),
            Some(v) => Some(
                v.as_i64()
                    .filter(|t| *t > 0)
                    .ok_or_else(|| {
                        Error::params(format!(
                            "params.task.ttl must be a positive integer (milliseconds), got {v}"
                        ))
                    })?
                    .min(MAX_TTL_MS),
            ),
        };
        if !task.is_object() {
            return Err(Error::params(format!(
                "params.task must be an object, got {}",
                type_name(task)
            )));
        }
        refresh(s, env.now_ms, false, out);
        let cap = self.catalog.options.max_tasks_per_session;
        if s.tasks.len() >= cap {
            return Err(too_many(cap));
        }
        s.next_task += 1;
        let id = match s.task_holder {
            // One task per holder, named by the holder's id (`tasks:<id>` holds task `<id>`).
            true => s.id.trim_start_matches(HOLDER_PREFIX).to_string(),
            false => format!("{}-{}", env.fresh_id, s.next_task),
        };
        let mut t = Task::new(
            id,
            "tools/call",
            env.now_ms,
            ttl,
            tool.concerns.iter().cloned().collect(),
        );
        if tool.name == "long_report" {
            let secs = demo::report_seconds(args)?;
            t.due_ms = Some(env.now_ms + secs * 1000);
            t.result = Some(demo::report_result(secs, env.now_ms + secs * 1000));
        } else {
            let schema = demo::output_schema(tool.fragment());
            t.result = Some(demo::run(&tool.name, args, env.now_ms, schema.as_ref()));
            t.due_ms = Some(env.now_ms);
        }
        // Admitted in the server's budget under this slot (`session_task_entry`), if the store
        // keeps one: what it learns of the task later names it so.
        #[cfg(feature = "gateway")]
        if !s.task_holder {
            t.slot = Some(budget::slot(&s.id, &env.fresh_id));
        }
        let json = t.to_json();
        s.tasks.push(t);
        out.session_changed = true;
        if s.task_holder {
            // 2026-07-28, the tasks extension: no stream to announce on; the result says "task",
            // with the task's fields inline (SEP-2663's CreateTaskResult).
            let mut o = Map::from_iter([("resultType".to_string(), json!("task"))]);
            o.extend(extension_names(json));
            return Ok(Value::Object(o).to_string());
        }
        out.notifications
            .push(jsonrpc::notification("notifications/tasks/status", Some(json.clone())));
        Ok(json!({"task": json}).to_string())
    }

    pub(crate) fn task_method(
        &self,
        method: &str,
        call: &Call,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        // SEP-2663 (2026-07-28): "tasks/result is removed; clients calling it MUST receive
        // -32601", through a gateway too (a completed task's result comes with tasks/get).
        if call.stateless && method == "tasks/result" {
            return Err(Error::MethodNotFound(
                "tasks/result is not part of the 2026-07-28 tasks extension (SEP-2663): \
                 tasks/get of a completed task carries its result"
                    .into(),
            ));
        }
        // SEP-2663: a 2026-07-28 client that did not declare the tasks extension gets -32021 for
        // tasks/get, tasks/update and tasks/cancel.
        if call.stateless && method != "tasks/list" && !declares_tasks(call.params) {
            return Err(tasks_undeclared(method));
        }
        if self.is_gateway() {
            if !matches!(call.params, Value::Null | Value::Object(_)) {
                return Err(Error::params(format!(
                    "params must be an object, got {}",
                    type_name(call.params)
                )));
            }
            return Ok(self.forward(method, call, out).unwrap_or_default());
        }
        let unknown = || match call.params.get("taskId") {
            Some(Value::String(id)) => Error::params(format!("Unknown task: \"{id}\" (it may have expired)")),
            _ => Error::params("params.taskId is required (a string)"),
        };
        if call.stateless && method == "tasks/list" {
            return Err(Error::MethodNotFound(
                "tasks/list is not part of the 2026-07-28 tasks extension; use tasks/get with a task id".into(),
            ));
        }
        let s = match session.as_mut() {
            Some(s) => s,
            None if call.stateless => return Err(unknown()),
            None => {
                return Err(Error::InvalidRequest(format!(
                    "{method} needs a session; call initialize first"
                )))
            }
        };
        if method == "tasks/update" {
            let t = s
                .tasks
                .iter()
                .find(|t| Some(t.id.as_str()) == call.params["taskId"].as_str())
                .ok_or_else(unknown)?;
            return Err(Error::params(format!(
                "task \"{}\" is {} and waits for no input; tasks/update supplies input to an input_required task",
                t.id,
                t.status.as_str()
            )));
        }
        refresh(s, env.now_ms, method != "tasks/get" && !s.task_holder, out);
        if method == "tasks/list" {
            return self.list_tasks(call, s);
        }
        let id = match call.params.get("taskId") {
            Some(Value::String(id)) => id.clone(),
            Some(v) => {
                return Err(Error::params(format!(
                    "params.taskId must be a string, got {}",
                    type_name(v)
                )))
            }
            None => return Err(Error::params("params.taskId is required")),
        };
        let t = s
            .tasks
            .iter_mut()
            .find(|t| t.id == id)
            .ok_or_else(|| Error::params(format!("Unknown task: \"{id}\" (it may have expired)")))?;
        match method {
            // The tasks extension's tasks/get: a finished task carries its `result` or `error`.
            "tasks/get" if s.task_holder => {
                let mut o = extension_names(t.to_json());
                match (t.status, &t.result) {
                    (Status::Completed, Some(r)) => o.insert("result".into(), r.clone()),
                    (Status::Failed, Some(r)) => o.insert("error".into(), r.clone()),
                    _ => None,
                };
                Ok(Value::Object(o).to_string())
            }
            "tasks/get" => Ok(t.to_json().to_string()),
            "tasks/cancel" => {
                t.transition(Status::Cancelled, Some("cancelled by the requestor".into()), env.now_ms)?;
                t.result = None;
                out.session_changed = true;
                out.notifications.push(status_note(t));
                if s.task_holder {
                    // The extension's acknowledgement, with the cancelled task's fields beside it:
                    // a 2025-11-25 session cancelling through a gateway gets its task back.
                    return Ok(Value::Object(extension_names(t.to_json())).to_string());
                }
                Ok(t.to_json().to_string())
            }
            _ => match (t.status, &t.result) {
                (Status::Completed | Status::Failed, Some(r)) => {
                    let mut r = r.clone();
                    r["_meta"] = json!({ RELATED: {"taskId": t.id} });
                    Ok(r.to_string())
                }
                (Status::Working, _) if t.due_ms.is_some() => {
                    out.retry_at = t.due_ms;
                    Ok(String::new())
                }
                (status, _) => Err(Error::params(format!(
                    "task \"{id}\" is {} and has no result",
                    status.as_str()
                ))),
            },
        }
    }

    fn list_tasks(&self, call: &Call, s: &Session) -> Result<String> {
        let q = TaskQuery::parse(call.params, self.catalog.options.reject_unsupported_task_criteria)?;
        let per_request = Filter {
            concerns: call.params.get("filter").and_then(|f| f.get("concerns")).cloned(),
            ..Filter::default()
        };
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &per_request, &mut warnings)?;
        let tasks = q.apply(&s.tasks, &concerns);
        let binding = format!("{}\n{concerns:?}", q.canonical());
        self.task_page(
            call.params,
            &q,
            &binding,
            tasks.len(),
            |o, n| tasks.iter().skip(o).take(n).map(|t| t.to_json()).collect(),
            warnings,
        )
    }

    /// One page of a task list of `len` tasks (`page(offset, size)` gives the page's objects) at
    /// the cursor `params` carry, bound to the query (`binding`); `warnings` go in `_meta`.
    fn task_page(
        &self,
        params: &Value,
        q: &TaskQuery,
        binding: &str,
        len: usize,
        page: impl FnOnce(usize, usize) -> Vec<Value>,
        mut warnings: Vec<String>,
    ) -> Result<String> {
        let offset = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => cursor::decode(c, "tasks/list", binding, self.version)?,
            Some(v) => {
                return Err(Error::params(format!(
                    "params.cursor must be a string, got {}",
                    type_name(v)
                )))
            }
        };
        let offset = cursor::within(offset, len)?;
        let size = self.catalog.options.page_size;
        let mut r = json!({"tasks": page(offset, size)});
        if offset.saturating_add(size) < len {
            r["nextCursor"] = json!(cursor::encode("tasks/list", binding, self.version, offset + size));
        }
        if !q.unsupported.is_empty() {
            warnings.push(format!(
                "unsupported task filter criteria ignored: {}",
                q.unsupported.join(", ")
            ));
        }
        if !warnings.is_empty() {
            r["_meta"] = json!({ format!("{EXT}/warnings"): warnings });
        }
        Ok(r.to_string())
    }

    /// Gateway mode's `tasks/list` over the lists each upstream of `f.gather` answered (in
    /// order; an error leaves its tasks out, with a warning naming it): each cut to the tasks this
    /// session runs there, merged, then filtered, ordered and paged by the SEP-1904 query of the
    /// request as one list. The JSON-RPC result, or the error for the client.
    #[cfg(feature = "gateway")]
    pub fn gathered_tasks(&self, f: &Forward, lists: Vec<Result<Vec<Value>>>) -> Result<Value> {
        let q = TaskQuery::parse(&f.params, self.catalog.options.reject_unsupported_task_criteria)?;
        let mut warnings = Vec::new();
        let mut merged = Vec::new();
        for (g, list) in f.gather.iter().zip(lists) {
            let at = if g.name.is_empty() {
                "the upstream".to_string()
            } else {
                format!("upstream \"{}\"", g.name)
            };
            match list {
                Ok(tasks) => merged.extend(tasks.into_iter().filter(|t| {
                    t["taskId"].as_str().is_some_and(|id| g.tasks.iter().any(|o| o == id))
                        && crate::task::from_wire(t, "task").is_ok()
                })),
                Err(e) => warnings.push(format!("the tasks at {at} could not be listed: {e}")),
            }
        }
        let kept = crate::task::kept(&merged, &q)?;
        let binding = format!("{}\ngathered", q.canonical());
        let page = |o: usize, n: usize| kept.iter().skip(o).take(n).map(|&i| merged[i].clone()).collect();
        let r = self.task_page(&f.params, &q, &binding, kept.len(), page, warnings)?;
        serde_json::from_str(&r).map_err(|e| Error::Internal(e.to_string()))
    }
}
