//! The Durable Object that holds one legacy-era session: its state (initialize request, concern
//! configuration, task counter) and its tasks, in the object's SQLite storage, so they outlive
//! isolates and restarts. Task records expire by their TTL through the object's alarm. The object
//! is the only writer of its storage, so it also keeps the session in memory and reads SQLite only
//! when it wakes.

use std::cell::RefCell;
use std::rc::Rc;

use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::Session;
use mcp_sieve::task::Task;
use serde::Deserialize;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};
use worker::{ScheduledTime, SqlStorage, SqlStorageValue, Storage};

use crate::oauth::sign_in;
use crate::relay::standalone;
use crate::relay::task_asks;
use crate::serve::ledger;
use crate::serve::shell;
use crate::serve::watch;
use crate::telemetry::log;
use crate::upstream::gateway;
use crate::{config, platform};

mod fast;

/// Longest `Mcp-Session-Id` worth looking up (ours are a UUID and a 32-digit tag).
pub const MAX_SESSION_ID: usize = 128;

/// Header by which the Worker passes the id it minted for an `initialize` (the core's
/// `Env::fresh_id`, hence the new session's id and this object's name).
pub const MINTED_ID_HEADER: &str = "X-Sieve-Session-Id";

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS session (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS task (session TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL,
  expires_ms INTEGER, data TEXT NOT NULL, PRIMARY KEY (session, id));";

#[derive(Deserialize)]
struct Data {
    data: String,
}

#[derive(Deserialize)]
struct Next {
    next: Option<f64>,
}

/// Sessions in the object's SQL storage: a `session` row (the session without its tasks, as
/// JSON) and one `task` row per task, with its expiry time for the alarm. The tables are created
/// on the first write, so a request naming an unknown session stores nothing.
struct SqlStore {
    sql: SqlStorage,
    /// The object's in-memory copy of its session (written through to SQLite).
    cache: Rc<RefCell<Option<Session>>>,
    /// Whether this request wrote (then the alarm is rescheduled).
    wrote: bool,
}

impl SqlStore {
    /// Runs a statement to completion; returns the rows written.
    fn exec(&self, query: &str, binds: Vec<SqlStorageValue>) -> Result<usize> {
        let cursor = self.sql.exec(query, binds)?;
        for row in cursor.raw() {
            row?;
        }
        Ok(cursor.rows_written())
    }

    fn rows<T: serde::de::DeserializeOwned>(&self, query: &str, binds: Vec<SqlStorageValue>) -> Result<Vec<T>> {
        self.sql.exec(query, binds)?.to_array()
    }

    /// Whether the tables exist (the object has ever stored a session).
    fn has_tables(&self) -> Result<bool> {
        let q = "SELECT name AS data FROM sqlite_master WHERE type = 'table' AND name = 'session'";
        Ok(!self.rows::<Data>(q, vec![])?.is_empty())
    }

    fn try_load(&self, id: &str) -> Result<Option<Session>> {
        if !self.has_tables()? {
            return Ok(None);
        }
        let rows: Vec<Data> = self.rows("SELECT data FROM session WHERE id = ?", vec![id.into()])?;
        let Some(row) = rows.into_iter().next() else {
            return Ok(None);
        };
        let mut session: Session = serde_json::from_str(&row.data)?;
        let tasks: Vec<Data> = self.rows("SELECT data FROM task WHERE session = ? ORDER BY seq", vec![id.into()])?;
        session.tasks = tasks
            .iter()
            .map(|t| serde_json::from_str::<Task>(&t.data))
            .collect::<std::result::Result<_, _>>()?;
        Ok(Some(session))
    }

    /// Writes the session head and only the tasks that changed since `before` (the copy in
    /// memory; without one, every task).
    fn try_save(&self, s: &Session, before: Option<&Session>) -> Result<()> {
        self.sql.exec(SCHEMA, None)?;
        let head = Session {
            tasks: Vec::new(),
            ..s.clone()
        };
        self.exec(
            "INSERT OR REPLACE INTO session (id, data) VALUES (?, ?)",
            vec![s.id.as_str().into(), serde_json::to_string(&head)?.into()],
        )?;
        let before = before.filter(|b| b.id == s.id);
        let Some(before) = before else {
            self.exec("DELETE FROM task WHERE session = ?", vec![s.id.as_str().into()])?;
            return s.tasks.iter().try_for_each(|t| self.put_task(&s.id, t));
        };
        for gone in before.tasks.iter().filter(|b| !s.tasks.iter().any(|t| t.id == b.id)) {
            self.exec(
                "DELETE FROM task WHERE session = ? AND id = ?",
                vec![s.id.as_str().into(), gone.id.as_str().into()],
            )?;
        }
        for t in &s.tasks {
            if before.tasks.iter().any(|b| b == t) {
                continue; // unchanged: not written again
            }
            self.put_task(&s.id, t)?;
        }
        Ok(())
    }

    /// Inserts or replaces one task row (a new task goes last; a changed one keeps its place).
    fn put_task(&self, session: &str, t: &Task) -> Result<()> {
        let expires = t.ttl_ms.map(|ttl| t.created_ms.saturating_add(ttl));
        self.exec(
            "INSERT OR REPLACE INTO task (session, seq, id, expires_ms, data) VALUES (?, \
             COALESCE((SELECT seq FROM task WHERE session = ? AND id = ?), \
                      (SELECT COALESCE(MAX(seq), -1) + 1 FROM task WHERE session = ?)), ?, ?, ?)",
            vec![
                session.into(),
                session.into(),
                t.id.as_str().into(),
                session.into(),
                t.id.as_str().into(),
                expires.into(),
                serde_json::to_string(t)?.into(),
            ],
        )?;
        Ok(())
    }

    /// Deletes tasks whose TTL has passed; returns how many.
    fn expire(&self, now_ms: i64) -> Result<usize> {
        if !self.has_tables()? {
            return Ok(0);
        }
        self.exec("DELETE FROM task WHERE expires_ms <= ?", vec![now_ms.into()])
    }

    /// The stored session without its tasks, if there is one.
    fn head(&self) -> Result<Option<Session>> {
        if !self.has_tables()? {
            return Ok(None);
        }
        let rows: Vec<Data> = self.rows("SELECT data FROM session LIMIT 1", vec![])?;
        Ok(match rows.first() {
            Some(r) => Some(serde_json::from_str::<Session>(&r.data)?),
            None => None,
        })
    }

    /// When the stored session was last used, if there is one.
    fn last_seen(&self) -> Result<Option<i64>> {
        Ok(self.head()?.map(|s| s.last_seen_ms))
    }

    /// Deletes the session and its tasks (it expired).
    fn delete_all(&self) -> Result<()> {
        if self.has_tables()? {
            self.exec("DELETE FROM task", vec![])?;
            self.exec("DELETE FROM session", vec![])?;
        }
        Ok(())
    }

    /// The earliest expiry of a stored task.
    fn next_expiry(&self) -> Result<Option<i64>> {
        if !self.has_tables()? {
            return Ok(None);
        }
        let rows: Vec<Next> = self.rows("SELECT MIN(expires_ms) AS next FROM task", vec![])?;
        Ok(rows.first().and_then(|r| r.next).map(|n| n as i64))
    }
}

// Storage failures are logged (without content) and treated as a missing session: the client
// gets a clear 404 and starts over rather than a half-saved state.
impl SessionStore for SqlStore {
    fn load(&mut self, id: &str) -> Option<Session> {
        if let Some(s) = self.cache.borrow().as_ref().filter(|s| s.id == id) {
            return Some(s.clone());
        }
        let loaded = self
            .try_load(id)
            .inspect_err(|e| log::error(format_args!("cannot load a session: {e}")))
            .ok()
            .flatten();
        self.cache.replace(loaded.clone());
        loaded
    }
    fn save(&mut self, session: &Session) {
        self.wrote = true;
        let before = self.cache.borrow().clone();
        match self.try_save(session, before.as_ref()) {
            Ok(()) => self.cache.replace(Some(session.clone())),
            Err(e) => {
                log::error(format_args!("cannot save a session: {e}"));
                self.cache.replace(None)
            }
        };
    }
    /// A gateway task's admission is asked of the ledger object by the shell
    /// (`ledger::admit`); what the upstream's answers teach it is told before the answer leaves
    /// (`ledger::flush`).
    fn budget(
        &mut self,
        step: mcp_sieve::protocol::BudgetStep,
        _: mcp_sieve::task::budget::Budget,
        _: i64,
    ) -> mcp_sieve::Result<()> {
        if !matches!(step, mcp_sieve::protocol::BudgetStep::Admit(_)) {
            ledger::defer(step);
        }
        Ok(())
    }
    fn remove(&mut self, id: &str) {
        self.wrote = true;
        self.cache.replace(None);
        let gone = self
            .exec("DELETE FROM task WHERE session = ?", vec![id.into()])
            .and_then(|_| self.exec("DELETE FROM session WHERE id = ?", vec![id.into()]));
        if let Err(e) = gone {
            log::error(format_args!("cannot delete a session: {e}"));
        }
    }
}

/// One session (named by its `Mcp-Session-Id`) and its tasks.
#[durable_object]
pub struct SessionObject {
    state: State,
    env: Env,
    /// The session as last loaded or saved (`None`: read SQLite on the next request).
    cache: Rc<RefCell<Option<Session>>>,
    /// A stateless call's upstream exchange waiting for its client to call again (`relay`).
    waiting: crate::relay::Waiting,
    /// The holder of a principal's tasks: their `tasks/result` exchanges waiting for the
    /// client's `tasks/update` (`task_asks`).
    asking: task_asks::Asking,
}

impl SessionObject {
    fn store(&self) -> SqlStore {
        SqlStore {
            sql: self.state.storage().sql(),
            cache: self.cache.clone(),
            wrote: false,
        }
    }

    /// Sets the alarm to the earliest task expiry or the session's idle expiry, or clears it.
    async fn schedule(&self, store: &SqlStore, idle_ms: i64) -> Result<()> {
        schedule(&self.state.storage(), store, idle_ms).await
    }
}

/// [`SessionObject::schedule`] with the object's storage (`fast`: in a future of its own).
async fn schedule(storage: &Storage, store: &SqlStore, idle_ms: i64) -> Result<()> {
    let idle = store.last_seen()?.map(|t| t.saturating_add(idle_ms).saturating_add(1));
    let next = match (store.next_expiry()?, idle) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    match next {
        Some(at) => {
            let date = js_sys::Date::new(&(at as f64).into());
            storage.set_alarm(ScheduledTime::new(date)).await
        }
        None => storage.delete_alarm().await,
    }
}

impl DurableObject for SessionObject {
    fn new(state: State, env: Env) -> Self {
        // The upstream sessions of this object's session have their standalone streams read here.
        gateway::set_opener(|reach, headers, session| Box::pin(standalone::open(reach, headers, session)));
        // The gateway tasks whose records it keeps count in the server's task budget.
        ledger::bind(&env);
        crate::operate::bind(&env);
        SessionObject {
            state,
            env,
            cache: Rc::default(),
            waiting: crate::relay::Waiting::default(),
            asking: task_asks::Asking::default(),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        if req.path() == ledger::EVICT_PATH {
            // The task ledger evicted this object's (finished) 2026-07-28 task.
            self.store().delete_all()?;
            self.cache.replace(None);
            self.state.storage().delete_alarm().await?;
            return Response::empty();
        }
        if req.path() == ledger::FORGET_PATH {
            // The task ledger let one of this session's gateway tasks go (it finished, and the
            // server needed its room).
            let slot = req.text().await?;
            let mut store = self.store();
            if let Some(mut s) = store.load(&http::kept_by(&slot).0) {
                if mcp_sieve::protocol::forget_slot(&mut s, &slot) {
                    store.save(&s);
                }
            }
            return Response::empty();
        }
        if let Ok(Some(o)) = req.headers().get(sign_in::ORIGIN_HEADER) {
            // The front's public origin (the sign-in URLs of errors).
            sign_in::set_origin(&o);
        }
        let loaded = config::load(&self.env).await;
        let (server, cfg) = match (&loaded.server, &loaded.transport) {
            // The Worker checked the id's tag before asking this object (whose isolate may hold
            // another random secret when none is configured).
            (Ok(s), Ok(c)) => (
                s,
                http::Config {
                    session_secret: None,
                    ..c.clone()
                },
            ),
            (Err(e), _) | (_, Err(e)) => return shell::respond(http::misconfigured(e)),
        };
        let cfg = &cfg;
        let method = req.method().to_string();
        let body = req.bytes().await.unwrap_or_default();
        let headers = req.inner().headers();
        let header = shell::header_fn(&headers);
        let fresh = header(MINTED_ID_HEADER).unwrap_or_else(platform::fresh_id);
        let nonce = fresh.clone();
        let request = http::Request {
            method: &method,
            header: &header,
            body: &body,
        };
        let mut store = self.store();
        let session_id = header("mcp-session-id");
        // The front Worker authenticated the request and says who it is (its own header).
        let who = match cfg.auth {
            Some(_) => crate::auth::decode(header(crate::auth::IDENTITY_HEADER)),
            None => match http::who(cfg, &header) {
                http::Who::Known(c) => c,
                _ => http::Caller::default(),
            },
        };
        let mut caller = match shell::caller_of(server, &req.inner().url(), &header, who) {
            Ok(c) => c,
            Err(refusal) => return shell::respond(*refusal),
        };
        // A call a code-mode program makes, as the front Worker says (its own header).
        caller.via = header(crate::serve::code::RUN_HEADER);
        let answer = shell::run(server, cfg, request, &mut store, fresh, &caller, true).await;
        ledger::flush(server).await;
        if store.wrote {
            self.schedule(&store, cfg.idle_ms()).await?;
        }
        if shell::relayable(server, &answer) {
            // A stateless client's task in its principal's holder (this object): `task_asks`.
            if let Some(name) = answer.forward.as_ref().and_then(mcp_sieve::upstream::parked_name) {
                let (sql, cache) = (self.state.storage().sql(), self.cache.clone());
                let stores = move || -> Box<dyn SessionStore> {
                    Box::new(SqlStore {
                        sql,
                        cache,
                        wrote: false,
                    })
                };
                let asking = &self.asking;
                let mut store = self.store();
                return task_asks::respond(answer, loaded.clone(), name, asking, &self.state, &mut store, stores).await;
            }
            // A call whose upstream may ask its client: relayed from here (`relay`).
            if answer.forward.as_ref().is_some_and(|f| f.stateless) {
                let waiting = &self.waiting;
                let store = Box::new(self.store());
                return crate::relay::respond_stateless(answer, loaded.clone(), nonce, waiting, &self.state, store)
                    .await;
            }
            return crate::relay::respond(answer, loaded.clone(), Box::new(self.store())).await;
        }
        if method == "POST" && answer.status == 202 {
            // A notification: passed on to its upstream sessions when the core says so.
            if let Some(s) = session_id.as_deref().and_then(|id| self.store().load(id)) {
                gateway::pass_on(server, &s, &body).await;
            }
        }
        // The session's GET stream: what its upstream sessions' streams bring goes on it too.
        let relayed = match (&session_id, answer.watch.is_some() && server.is_gateway()) {
            (Some(id), true) => {
                let (sql, cache) = (self.state.storage().sql(), self.cache.clone());
                let stores: standalone::Stores = Rc::new(move || {
                    Box::new(SqlStore {
                        sql: sql.clone(),
                        cache: cache.clone(),
                        wrote: false,
                    })
                });
                let listening: watch::Relayed = Box::new(standalone::listen(server, id, stores));
                Some(listening)
            }
            _ => None,
        };
        watch::respond_in(answer, loaded.clone(), relayed)
    }

    async fn alarm(&self) -> Result<Response> {
        let mut store = self.store();
        let loaded = config::load(&self.env).await;
        let idle_ms = match &loaded.transport {
            Ok(cfg) => cfg.idle_ms(),
            Err(_) => http::DEFAULT_SESSION_IDLE_MS,
        };
        let now = platform::now_ms();
        let head = store.head()?;
        if let Some(idle) = head.filter(|s| now.saturating_sub(s.last_seen_ms) > idle_ms) {
            // Idle past the limit: the session and its tasks are deleted; its id is 404 from now
            // on; its upstream sessions are closed, as when its client ends it.
            if let Ok(server) = &loaded.server {
                gateway::close_session(server, &idle).await;
                // Its tasks stop counting as working in the task budget (told now: no answer follows).
                http::released(&idle, &mut store, now);
                ledger::flush(server).await;
            }
            store.delete_all()?;
            self.cache.replace(None);
            self.state.storage().delete_alarm().await?;
            log::info("alarm deleted an idle session");
            return Response::empty();
        }
        let removed = store.expire(now)?;
        // The expired tasks are gone from SQLite; the next request reads the session afresh.
        self.cache.replace(None);
        // Counts only: no ids, no content.
        log::info(format_args!("alarm removed {removed} expired task(s)"));
        self.schedule(&store, idle_ms).await?;
        Response::empty()
    }
}
