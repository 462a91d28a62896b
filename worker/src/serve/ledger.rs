//! The Durable Object that keeps the budget of tasks (`task::budget`). Each 2026-07-28 task of
//! this server's own lives in a session object of its own, named after its id, so no object sees
//! more than one task: the count per principal and for the whole server lives here, in one object
//! (named [`NAME`]) that the front Worker asks before it creates a task and tells when one is
//! cancelled. A gateway's tasks at its upstreams count in the same total: the session object
//! keeping their records (a session's, or a principal's holder) asks before the call leaves
//! ([`admit`]) and tells what the upstream's answers said ([`defer`], [`flush`]). One object for
//! all is a serialization point for task *creations* only (lists and other calls never reach it);
//! it holds at most `options.maxTasks` rows. It deletes the session objects of this server's
//! finished tasks it evicts (expired ones delete themselves by their alarm), and has a gateway
//! task's record dropped from its session object ([`FORGET_PATH`]).

use std::cell::RefCell;

use crate::telemetry::log;
use mcp_sieve::error::Error;
use mcp_sieve::http;
use mcp_sieve::protocol::{jsonrpc, BudgetStep, Server};
use mcp_sieve::task::budget::{Budget, Entry, Ledger};
use serde::{Deserialize, Serialize};
use worker::{
    durable_object, DurableObject, Env, Method, Request, RequestInit, Response, Result, SqlStorageValue, State,
};

/// The Durable Object namespace binding of the ledger.
pub const BINDING: &str = "TASK_LEDGER";
/// The name of the one ledger object.
pub const NAME: &str = "tasks";
/// The path on which a session object deletes itself (only this object calls it: the front
/// Worker passes only `/mcp` paths to session objects).
pub const EVICT_PATH: &str = "/internal/evict";
/// The path on which a session object drops the record of the gateway task whose budget slot is
/// the body (only this object calls it, as [`EVICT_PATH`]).
pub const FORGET_PATH: &str = "/internal/forget";

thread_local! {
    /// This isolate's way to the ledger (set by the session objects).
    static LEDGER: RefCell<Option<worker::ObjectNamespace>> = const { RefCell::new(None) };
    /// Steps the session objects' stores took (`SessionStore::budget`), not yet told.
    static PENDING: RefCell<Vec<BudgetStep>> = const { RefCell::new(Vec::new()) };
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS task (id TEXT PRIMARY KEY, seq INTEGER NOT NULL,
  principal TEXT NOT NULL, finishes_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL);";

/// What the front Worker asks.
#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Ask {
    /// Admit a new task within the caps.
    Admit {
        /// The task.
        entry: Entry,
        /// `options.maxTasksPerPrincipal`.
        per_principal: usize,
        /// `options.maxTasks`.
        total: usize,
        /// The time, ms.
        now: i64,
    },
    /// A task was cancelled: it may be evicted from now on.
    Finish {
        /// Its owner as the caller claims.
        principal: String,
        /// The task id.
        id: String,
        /// The time, ms.
        now: i64,
    },
    /// A gateway call's slot: kept until `expires_ms` for the task it made, else freed.
    Settle {
        /// The slot.
        id: String,
        /// When the task's record expires (none: no task).
        expires_ms: Option<i64>,
    },
}

/// The answer: `refusal` is the message and data of the `-32602` error, when refused.
#[derive(Serialize, Deserialize)]
pub struct Answer {
    /// Why the task is refused (none: admitted).
    pub refusal: Option<(String, Option<serde_json::Value>)>,
}

/// The request for `step` (the catalog's caps from `server`; `session`: a task a session keeps —
/// a gateway's, or a 2025-11-25 session's own — capped only by the server's total).
fn ask_of(server: &Server, step: BudgetStep, session: bool) -> Ask {
    let now = crate::platform::now_ms();
    match step {
        BudgetStep::Admit(entry) => {
            let b = match session {
                true => mcp_sieve::protocol::gateway_budget(server),
                false => mcp_sieve::protocol::task_budget(server),
            };
            Ask::Admit {
                entry,
                per_principal: b.per_principal,
                total: b.total,
                now,
            }
        }
        BudgetStep::Finish { principal, id } => Ask::Finish { principal, id, now },
        BudgetStep::Settle { id, expires_ms } => Ask::Settle { id, expires_ms },
    }
}

/// Sends `ask` to the ledger object; the refusal it answers, if any.
async fn send(ns: &worker::ObjectNamespace, ask: &Ask) -> Result<Option<Error>> {
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(serde_json::to_string(ask)?.into()));
    let req = Request::new_with_init("https://ledger.internal/", &init)?;
    let mut res = ns.get_by_name(NAME)?.fetch_with_request(req).await?;
    let answer: Answer = res.json().await?;
    Ok(answer.refusal.map(|(message, data)| match data {
        Some(d) => Error::params_with(message, d),
        None => Error::params(message),
    }))
}

/// Applies a task's budget step at the ledger; `Some` is the refusal to answer (a JSON-RPC
/// `-32602` for the request in `body`).
pub async fn ask(
    env: &Env,
    server: &Server,
    step: BudgetStep,
    session: bool,
    body: &[u8],
) -> Result<Option<http::Response>> {
    let refusal = send(&env.durable_object(BINDING)?, &ask_of(server, step, session)).await?;
    Ok(refusal.map(|e| {
        let id = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or_default();
        http::Response {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: jsonrpc::error(&id, &e),
            ..Default::default()
        }
    }))
}

/// Sets this isolate's way to the ledger (a session object's `env`).
pub fn bind(env: &Env) {
    if let Ok(ns) = env.durable_object(BINDING) {
        LEDGER.with(|l| *l.borrow_mut() = Some(ns));
    }
}

/// Admits the gateway task `answer`'s forward may create (`Forward::admit`) before it is sent:
/// `answer` as it was, or sent without declaring the tasks extension when the call only may be a
/// task, or answered with the refusal. An unreachable ledger refuses nothing (logged).
pub async fn admit(server: &Server, mut answer: http::Response) -> http::Response {
    let Some(f) = answer.forward.as_mut() else {
        return answer;
    };
    let (Some(a), Some(ns)) = (f.admit.clone(), LEDGER.with(|l| l.borrow().clone())) else {
        return answer;
    };
    let refusal = match send(&ns, &ask_of(server, BudgetStep::Admit(a.entry), true)).await {
        Ok(r) => r,
        Err(e) => {
            log::error(format_args!("the task ledger could not be asked: {e}"));
            None
        }
    };
    match refusal.map(|e| f.over_budget(e)) {
        Some(Err(e)) => {
            let refused = jsonrpc::error(&f.id, &e);
            http::complete_json(answer, refused)
        }
        _ => answer,
    }
}

/// Keeps a step a session object's store took, for [`flush`].
pub fn defer(step: BudgetStep) {
    PENDING.with(|p| p.borrow_mut().push(step));
}

/// Whether steps were [`defer`]red and not yet told ([`flush`] has something to send).
pub fn pending() -> bool {
    PENDING.with(|p| !p.borrow().is_empty())
}

/// Tells the ledger the steps [`defer`]red (before the answer that took them leaves, so the next
/// request finds them applied).
pub async fn flush(server: &Server) {
    let steps = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    let Some(ns) = LEDGER.with(|l| l.borrow().clone()) else {
        return;
    };
    for step in steps {
        if let Err(e) = send(&ns, &ask_of(server, step, true)).await {
            log::error(format_args!("the task ledger could not be told: {e}"));
        }
    }
}

#[derive(Deserialize)]
struct Row {
    id: String,
    principal: String,
    finishes_ms: f64,
    expires_ms: f64,
}

/// The budget of 2026-07-28 tasks.
#[durable_object]
pub struct TaskLedger {
    state: State,
    env: Env,
    /// The ledger as last loaded or written (`None`: read SQLite on the next request).
    cache: RefCell<Option<Ledger>>,
}

impl TaskLedger {
    fn exec(&self, query: &str, binds: Vec<SqlStorageValue>) -> Result<()> {
        let cursor = self.state.storage().sql().exec(query, binds)?;
        for row in cursor.raw() {
            row?;
        }
        Ok(())
    }

    fn load(&self) -> Result<Ledger> {
        if let Some(l) = self.cache.borrow().as_ref() {
            return Ok(l.clone());
        }
        self.exec(SCHEMA, vec![])?;
        let rows: Vec<Row> = self
            .state
            .storage()
            .sql()
            .exec(
                "SELECT id, principal, finishes_ms, expires_ms FROM task ORDER BY seq",
                None,
            )?
            .to_array()?;
        Ok(Ledger::from_entries(
            rows.into_iter()
                .map(|r| Entry {
                    id: r.id,
                    principal: r.principal,
                    finishes_ms: r.finishes_ms as i64,
                    expires_ms: r.expires_ms as i64,
                })
                .collect(),
        ))
    }

    /// Deletes the session object of an evicted task (its result goes with it); a gateway
    /// task's record is dropped from the session object that keeps it.
    async fn evict(&self, id: &str) -> Result<()> {
        let (name, slot) = http::kept_by(id);
        let mut init = RequestInit::new();
        init.with_method(Method::Post);
        if let Some(slot) = slot {
            init.with_body(Some(slot.into()));
        }
        let path = if slot.is_some() { FORGET_PATH } else { EVICT_PATH };
        let req = Request::new_with_init(&format!("https://session.internal{path}"), &init)?;
        self.env
            .durable_object(crate::SESSIONS)?
            .get_by_name(&name)?
            .fetch_with_request(req)
            .await?;
        Ok(())
    }
}

impl DurableObject for TaskLedger {
    fn new(state: State, env: Env) -> Self {
        TaskLedger {
            state,
            env,
            cache: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let ask: Ask = req.json().await?;
        let mut ledger = self.load()?;
        let mut answer = Answer { refusal: None };
        let mut evicted = Vec::new();
        match ask {
            Ask::Admit {
                entry,
                per_principal,
                total,
                now,
            } => {
                let budget = Budget { per_principal, total };
                let new = entry.clone();
                let d = ledger.admit(entry, budget, now);
                for id in d.expired.iter().chain(&d.evicted) {
                    self.exec("DELETE FROM task WHERE id = ?", vec![id.as_str().into()])?;
                }
                match d.admitted {
                    Ok(()) => self.exec(
                        "INSERT OR IGNORE INTO task (id, seq, principal, finishes_ms, expires_ms) VALUES \
                         (?, (SELECT COALESCE(MAX(seq), -1) + 1 FROM task), ?, ?, ?)",
                        vec![
                            new.id.as_str().into(),
                            new.principal.as_str().into(),
                            new.finishes_ms.into(),
                            new.expires_ms.into(),
                        ],
                    )?,
                    Err(Error::InvalidParams { message, data }) => answer.refusal = Some((message, data)),
                    Err(other) => answer.refusal = Some((other.to_string(), None)),
                }
                evicted = d.evicted;
            }
            Ask::Finish { principal, id, now } => {
                if ledger.finish(&principal, &id, now) {
                    self.exec(
                        "UPDATE task SET finishes_ms = ? WHERE id = ?",
                        vec![now.into(), id.as_str().into()],
                    )?;
                }
            }
            Ask::Settle { id, expires_ms } => {
                if ledger.settle(&id, expires_ms) {
                    match expires_ms {
                        Some(t) => self.exec(
                            "UPDATE task SET finishes_ms = ?, expires_ms = ? WHERE id = ?",
                            vec![t.into(), t.into(), id.as_str().into()],
                        )?,
                        None => self.exec("DELETE FROM task WHERE id = ?", vec![id.as_str().into()])?,
                    }
                }
            }
        }
        self.cache.replace(Some(ledger));
        for id in &evicted {
            // A failed deletion leaves a finished task to its own TTL; the budget already let it go.
            if let Err(e) = self.evict(id).await {
                log::error(format_args!("cannot delete an evicted task: {e}"));
            }
        }
        Response::from_json(&answer)
    }
}
