//! The Durable Object that keeps the budget of 2026-07-28 tasks (`task::budget`). Each such task
//! lives in a session object of its own, named after its id, so no object sees more than one
//! task: the count per principal and for the whole server lives here, in one object (named
//! [`NAME`]) that the front Worker asks before it creates a task and tells when one is cancelled.
//! One object for all is a serialization point for task *creations* only (lists, calls and task
//! polls never reach it); it holds at most `options.maxTasks` rows. It deletes the session
//! objects of the finished tasks it evicts; expired ones delete themselves by their alarm.

use std::cell::RefCell;

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
}

/// The answer: `refusal` is the message and data of the `-32602` error, when refused.
#[derive(Serialize, Deserialize)]
pub struct Answer {
    /// Why the task is refused (none: admitted).
    pub refusal: Option<(String, Option<serde_json::Value>)>,
}

/// Applies a task's budget step at the ledger; `Some` is the refusal to answer (a JSON-RPC
/// `-32602` for the request in `body`).
pub async fn ask(env: &Env, server: &Server, step: BudgetStep, body: &[u8]) -> Result<Option<http::Response>> {
    let now = crate::platform::now_ms();
    let ask = match step {
        BudgetStep::Admit(entry) => {
            let b = mcp_sieve::protocol::task_budget(server);
            Ask::Admit {
                entry,
                per_principal: b.per_principal,
                total: b.total,
                now,
            }
        }
        BudgetStep::Finish { principal, id } => Ask::Finish { principal, id, now },
    };
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(serde_json::to_string(&ask)?.into()));
    let req = Request::new_with_init("https://ledger.internal/", &init)?;
    let mut res = env
        .durable_object(BINDING)?
        .get_by_name(NAME)?
        .fetch_with_request(req)
        .await?;
    let answer: Answer = res.json().await?;
    Ok(answer.refusal.map(|(message, data)| {
        let id = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or_default();
        let e = match data {
            Some(d) => Error::params_with(message, d),
            None => Error::params(message),
        };
        http::Response {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: jsonrpc::error(&id, &e),
            ..Default::default()
        }
    }))
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

    /// Deletes the session object of an evicted task (its result goes with it).
    async fn evict(&self, id: &str) -> Result<()> {
        let mut init = RequestInit::new();
        init.with_method(Method::Post);
        let req = Request::new_with_init(&format!("https://session.internal{EVICT_PATH}"), &init)?;
        let holder = format!("{}{id}", mcp_sieve::protocol::HOLDER_PREFIX);
        self.env
            .durable_object(crate::SESSIONS)?
            .get_by_name(&holder)?
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
        }
        self.cache.replace(Some(ledger));
        for id in &evicted {
            // A failed deletion leaves a finished task to its own TTL; the budget already let it go.
            if let Err(e) = self.evict(id).await {
                worker::console_error!("mcp-sieve: cannot delete an evicted task: {e}");
            }
        }
        Response::from_json(&answer)
    }
}
