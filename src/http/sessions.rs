//! A request's session: the 2025-11-25 session's SSE stream (`GET`), ending a session
//! (`DELETE`), and finding the session a `POST` runs in (or the 2026-07-28 task holder it
//! concerns). On every method, an id that is forged, unknown, expired, another principal's or
//! another view's is a 404.

use super::config::Config;
use super::exchange::{plain, rpc_error, sse_headers, Response};
use super::store::SessionStore;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::{Env, Server, Session, Watch, MODERN_VERSION};

/// `GET` on the endpoint: a 2025-11-25 session's SSE stream of list changes (the shell keeps it
/// open and asks its watch what to send).
pub(super) fn open_stream(
    server: &Server,
    cfg: &Config,
    session_id: Option<String>,
    store: &mut dyn SessionStore,
    env: &Env,
    accept: Option<String>,
) -> Response {
    if !accept
        .unwrap_or_default()
        .to_ascii_lowercase()
        .contains("text/event-stream")
    {
        return plain(406, "GET opens an SSE stream: Accept must include text/event-stream");
    }
    let Some(id) = session_id else {
        return plain(
            400,
            "GET needs the Mcp-Session-Id header (a 2025-11-25 session's stream); in 2026-07-28, POST subscriptions/listen",
        );
    };
    if let Err(refusal) = owned(cfg, &id, store, env) {
        return *refusal;
    }
    Response {
        status: 200,
        headers: sse_headers().to_vec(),
        body: ": listening for list changes\n\n".into(),
        watch: Some(Watch::session(server)),
        ..Default::default()
    }
}

/// `DELETE` on the endpoint: ends the session named by `Mcp-Session-Id`, when the caller owns it.
pub(super) fn end(cfg: &Config, session_id: Option<String>, store: &mut dyn SessionStore, env: &Env) -> Response {
    let Some(id) = session_id else {
        return plain(400, "DELETE needs the Mcp-Session-Id header");
    };
    let ended = match owned(cfg, &id, store, env) {
        Ok(s) => s,
        Err(refusal) => return *refusal,
    };
    released(&ended, store, env.now_ms);
    store.remove(&id);
    Response {
        status: 204,
        ended: Some(Box::new(ended)),
        ..Default::default()
    }
}

/// Tells the task budget that session `s` ended: the tasks it kept, a gateway's and its own,
/// finish (`protocol::ended_steps`).
pub fn released(s: &Session, store: &mut dyn SessionStore, now_ms: i64) {
    for step in crate::protocol::ended_steps(s) {
        // A finish admits no task: nothing to refuse.
        let _ = store.budget(step, crate::task::budget::Budget::UNCAPPED, now_ms);
    }
}

/// Admits the task a 2025-11-25 session's `msg` may ask of this server's own tools in the
/// server's `options.maxTasks` (`protocol::session_task_entry`) before it runs: the slot admitted,
/// if any, for [`settle_own`]; `Err` refuses the task. (The Worker's session objects keep no
/// budget: its front Worker asks the budget's own object for the same entry.)
#[cfg(feature = "gateway")]
pub(super) fn admit_own(
    server: &Server,
    msg: &Incoming,
    session: Option<&Session>,
    store: &mut dyn SessionStore,
    env: &Env,
) -> Result<Option<String>, crate::error::Error> {
    let (Some(s), Some(method)) = (session.filter(|s| !s.task_holder), msg.method()) else {
        return Ok(None);
    };
    let session = (s.id.as_str(), s.principal.as_deref());
    let entry = crate::protocol::session_task_entry(server, method, msg.params(), session, &env.fresh_id, env.now_ms);
    let Some(entry) = entry else {
        return Ok(None);
    };
    let slot = entry.id.clone();
    let step = crate::protocol::BudgetStep::Admit(entry);
    store.budget(step, crate::protocol::gateway_budget(server), env.now_ms)?;
    Ok(Some(slot))
}

/// What the server's task budget learns once a 2025-11-25 session's request ran: the slot
/// [`admit_own`] admitted is freed when no task was made under it; a task of its own that
/// `tasks/cancel` cancelled finishes.
#[cfg(feature = "gateway")]
pub(super) fn settle_own(
    admitted: Option<String>,
    cancelled: Option<&str>,
    s: &Session,
    store: &mut dyn SessionStore,
    now_ms: i64,
) {
    let made = |slot: &str| s.tasks.iter().any(|t| t.slot.as_deref() == Some(slot));
    let mut steps = Vec::new();
    if let Some(slot) = admitted.filter(|slot| !made(slot)) {
        steps.push(crate::protocol::BudgetStep::Settle {
            id: slot,
            expires_ms: None,
        });
    }
    let finished = s
        .tasks
        .iter()
        .filter(|t| cancelled == Some(t.id.as_str()) && t.status.is_terminal());
    for slot in finished.filter_map(|t| t.slot.clone()) {
        steps.push(crate::protocol::BudgetStep::Finish {
            principal: s.budget_owner().to_string(),
            id: slot,
        });
    }
    for step in steps {
        // Neither admits a task: nothing to refuse.
        let _ = store.budget(step, crate::task::budget::Budget::UNCAPPED, now_ms);
    }
}

const GONE: &str = "unknown or expired session; initialize a new one";

/// The session `id` names, for this caller: refused with 404 when the id is forged (before the
/// store is asked), unknown or expired (an expired one is removed), another principal's, or
/// opened on another endpoint view. The same for `POST`, `GET` and `DELETE`.
fn owned(cfg: &Config, id: &str, store: &mut dyn SessionStore, env: &Env) -> Result<Session, Box<Response>> {
    let gone = || Err(Box::new(plain(404, GONE)));
    if !cfg.session_id_valid(id) {
        return gone();
    }
    let Some(s) = store.load(id) else {
        return gone();
    };
    if env.now_ms.saturating_sub(s.last_seen_ms) > cfg.idle_ms() {
        released(&s, store, env.now_ms);
        store.remove(id);
        // Ended by expiry: a gateway closes its upstream sessions.
        return Err(Box::new(Response {
            ended: Some(Box::new(s)),
            ..plain(404, GONE)
        }));
    }
    // A session belongs to the principal that opened it.
    if s.principal != env.principal {
        return gone();
    }
    if s.view != env.view.as_ref().map(|v| v.label.as_str()).unwrap_or_default() {
        return Err(Box::new(plain(
            404,
            "this session was opened on another endpoint (view); use that URL, or initialize here",
        )));
    }
    Ok(s)
}

/// A new task holder named `id`, owned by the principal that created it, when there is one.
fn new_holder(id: String, env: &Env) -> Session {
    Session {
        id,
        task_holder: true,
        protocol_version: MODERN_VERSION.into(),
        initialized: true,
        last_seen_ms: env.now_ms,
        principal: env.principal.clone(),
        ..Session::default()
    }
}

/// The session a `POST` of `msg` runs in: the one its `Mcp-Session-Id` names, none for an
/// `initialize` or a stateless request (which gets a 2026-07-28 task holder when it concerns a
/// task), or the response that refuses it.
pub(super) fn find(
    server: &Server,
    cfg: &Config,
    session_id: &Option<String>,
    msg: &Incoming,
    stateless: bool,
    store: &mut dyn SessionStore,
    env: &Env,
) -> Result<Option<Session>, Box<Response>> {
    let is_init = msg.method() == Some("initialize");
    Ok(match (session_id, is_init || stateless) {
        // An initialize inside an existing session reaches the router, which refuses it.
        (Some(id), _) => Some(owned(cfg, id, store, env)?),
        (None, false) => {
            return Err(Box::new(plain(
                400,
                "the Mcp-Session-Id header is required after initialize",
            )))
        }
        (None, true) if stateless => {
            holder(server, msg, store, env).map_err(|e| Box::new(rpc_error(200, msg.request_id(), &e)))?
        }
        _ => None,
    })
}

/// The task holder a stateless (2026-07-28) request `msg` runs in, if it concerns a task, over
/// HTTP and stdio alike: this server's own task lives in a holder named after its id (a new one
/// for a call that runs as a task, admitted in the task budget first: `Err` refuses a task beyond
/// it); a gateway's tasks, in the holder of the caller's principal's tasks
/// (`protocol::gateway_holder`), made by its first `tools/call`. Another principal's holder is as
/// unknown as a made-up id.
pub fn holder(
    server: &Server,
    msg: &Incoming,
    store: &mut dyn SessionStore,
    env: &Env,
) -> Result<Option<Session>, crate::error::Error> {
    let method = msg.method().unwrap_or_default();
    if server.is_gateway() {
        return Ok(principals_holder(method, msg, store, env));
    }
    // 2026-07-28 tasks live in a holder of their own, named after the task id.
    let holder = crate::protocol::task_holder(server, method, msg.params(), &env.fresh_id);
    // The task budget first: a task beyond it is never created.
    let step = holder
        .as_ref()
        .and_then(|h| crate::protocol::budget_step(method, msg.params(), h, env.principal.as_deref(), env.now_ms));
    if let Some(step) = step {
        store.budget(step, crate::protocol::task_budget(server), env.now_ms)?;
    }
    Ok(match holder {
        Some((id, true)) => Some(new_holder(id, env)),
        // Another principal's task is as unknown as a made-up id.
        Some((id, false)) => store
            .load(&id)
            .filter(|s| s.task_holder && s.principal == env.principal),
        None => None,
    })
}

/// A gateway's: one holder per principal, for every task its stateless calls created (made by
/// the first `tools/call`).
#[cfg(feature = "gateway")]
fn principals_holder(method: &str, msg: &Incoming, store: &mut dyn SessionStore, env: &Env) -> Option<Session> {
    let id = crate::protocol::gateway_holder(method, msg.params(), env.principal.as_deref())?;
    // Another principal's holder is never this one (named after the principal).
    let held = store
        .load(&id)
        .filter(|s| s.task_holder && s.principal == env.principal);
    held.or_else(|| (method == "tools/call").then(|| new_holder(id, env)))
}

#[cfg(not(feature = "gateway"))]
fn principals_holder(_: &str, _: &Incoming, _: &mut dyn SessionStore, _: &Env) -> Option<Session> {
    None
}
