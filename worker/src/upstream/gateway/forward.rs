//! A request's item used at its upstream: the core's `Forward` effect performed (its rounds, a
//! 2026-07-28 upstream's questions passed to the caller), what the core learns from it, a
//! session's upstream stream opened once confirmed, `tasks/list` gathered, and a client's
//! notification passed on.

use std::time::Duration;

use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, Post};
use mcp_sieve::Error;
use worker::Delay;

use super::auth::Reach;
use super::closing::{close_session, close_stateless};
use super::relaying::{LocalFuture, Refusing, Relaying};
use super::with;
use crate::platform::now_ms;
use crate::telemetry::log;

/// What opens the standalone stream of a session's upstream session once it is confirmed: upstream,
/// the headers of its `GET`, the downstream session it is read for (`standalone::open`, set by
/// the session's Durable Object; none in the front Worker, which serves no session's call).
pub type Opener = fn(Reach, Vec<(String, String)>, String) -> LocalFuture<'static, ()>;

thread_local! {
    static OPENER: std::cell::Cell<Option<Opener>> = const { std::cell::Cell::new(None) };
}

/// Sets what opens the standalone streams of sessions' upstream sessions (see [`Opener`]).
pub fn set_opener(open: Opener) {
    OPENER.with(|o| o.set(Some(open)));
}

/// Passes `body`, a notification the client of `session` sent, on to its upstream sessions
/// when the core says so (a roots change; `upstream::Gateway::notifying`).
pub async fn pass_on(server: &Server, session: &mcp_sieve::protocol::Session, body: &[u8]) {
    let sends = with(server, |g| g.notifying(session, body)).unwrap_or_default();
    // Each upstream reached as found now (a reload meanwhile may number them anew).
    let sends: Vec<_> = sends
        .into_iter()
        .filter_map(|(m, c, e)| Some((Reach::of(m)?, c, e)))
        .collect();
    for (reach, mut conv, mut exchange) in sends {
        let principal = session.principal.as_deref();
        if let Err(e) = upstream::drive(&mut conv, &mut exchange, |p| reach.send_for(p, None, principal)).await {
            log::error(format_args!("a client's notification was not passed on: {e}"));
        }
    }
}

/// Performs the core's `Forward` effect of `answer`, if any, at the upstream that serves the
/// item (in the session's own session there, remembered in `store`) and completes the answer
/// with the upstream's reply, passed through; a failure names the upstream.
/// `secret`: the key of the `requestState` a 2026-07-28 caller gets with an upstream's questions
/// (`upstream::wrap_input`; the transport's session secret).
pub async fn finish(
    answer: http::Response,
    server: &Server,
    store: &mut dyn SessionStore,
    secret: Option<&http::Secret>,
) -> http::Response {
    if let Some(ended) = &answer.ended {
        // The session ended (DELETE, or found expired): so do its upstream sessions.
        close_session(server, ended).await;
    }
    let Some(mut f) = answer.forward.clone() else {
        return answer;
    };
    if let Some(jobs) = with(server, |g| g.gather(&f)).flatten() {
        return finish_gather(answer, server, jobs, store, f.principal.as_deref()).await;
    }
    // A 2026-07-28 client's answers to an upstream's questions, back in the upstream's terms.
    if let Some(secret) = secret {
        if let Err(e) = upstream::unwrap_input(&mut f, secret, now_ms()) {
            return http::complete(answer, Ok(&upstream::refusal(&serde_json::Value::Null, &e)), &[]);
        }
    }
    let forward =
        with(server, |g| g.forward(&f)).unwrap_or_else(|| Err(Error::Internal("no upstream is configured".into())));
    let (member, mut conv, exchange, reach) = match found(forward) {
        Ok(x) => x,
        Err(e) => return http::complete(answer, Err(&e), &[]),
    };
    // Its client cannot be reached meanwhile: what the upstream asks is refused at once.
    let refusing = Refusing::new(&f);
    let began = conv.session_id().map(str::to_string);
    let reply = rounds(&f, &reach, &mut conv, exchange, &refusing, secret).await;
    let reply = noted(server, &reach, member, &mut conv, reply);
    if f.session.is_none() {
        close_stateless(server, member, &f, began.as_deref(), &conv).await;
    }
    upstream::forwarded(answer, &conv, reply, store, now_ms())
}

/// The core's forward (`forward`, or `forward_in` whose exchange may be answered already) with the
/// upstream's [`Reach`] taken where its number was found (a reload during the exchange may number
/// the upstreams anew: its POSTs still reach this one).
pub(crate) fn found<E>(
    forward: Result<(usize, upstream::Conversation, E), Error>,
) -> Result<(usize, upstream::Conversation, E, Reach), Error> {
    let (member, conv, exchange) = forward?;
    Ok((member, conv, exchange, Reach::found(member)?))
}

/// Drives `exchange` (forward `f` at the upstream `reach` reaches) to its end, a 2026-07-28
/// upstream's questions passed to the caller through `relaying` (`upstream::drive_rounds`).
async fn rounds(
    f: &mcp_sieve::protocol::Forward,
    reach: &Reach,
    conv: &mut upstream::Conversation,
    exchange: upstream::Exchange,
    relaying: &dyn Relaying,
    secret: Option<&http::Secret>,
) -> Result<upstream::Reply, Error> {
    // A session's own upstream session: its standalone stream is read for it (`standalone`).
    let listener = f.session.clone().filter(|_| !f.stateless);
    let send = |p: Post| {
        let opens = listener.clone().zip(upstream::opens_stream(&p));
        async move {
            let answer = reach.send_for(p, Some(relaying), f.principal.as_deref()).await;
            if let (Some((session, headers)), Ok(a)) = (opens, &answer) {
                if let (true, Some(open)) = ((200..300).contains(&a.status), OPENER.with(|o| o.get())) {
                    open(reach.clone(), headers, session).await;
                }
            }
            answer
        }
    };
    // A 2025-11-25 tasks/result waiting for a task at an upstream without one sleeps here: in the
    // session's Durable Object, which serves its other requests meanwhile.
    let wait = |ms| Delay::from(Duration::from_millis(ms));
    let signer = secret.map(|s| (s, now_ms()));
    upstream::drive_rounds(f, conv, exchange, send, |q| relaying.handle(q), wait, signer).await
}

/// Whether the stateless call `f` is relayed (`upstream::Gateway::relays_stateless`).
pub fn relays_stateless(server: &Server, f: &mcp_sieve::protocol::Forward) -> bool {
    with(server, |g| g.relays_stateless(f)).unwrap_or(false)
}

/// What the core learns from an exchange with upstream `member` (its list changes, that it is
/// unreachable), and its `reply` with a failure naming the upstream `reach` reaches. When a
/// reload meanwhile changed the upstreams (`server` is no longer the gateway's), the core learns
/// nothing and the reply goes back as it came.
pub(crate) fn noted(
    server: &Server,
    reach: &Reach,
    member: usize,
    conv: &mut upstream::Conversation,
    reply: Result<upstream::Reply, Error>,
) -> Result<upstream::Reply, Error> {
    with(server, |g| {
        g.note_changes(member, conv);
        if matches!(reply, Err(Error::Upstream(_))) {
            g.note_unreachable(member);
        }
    });
    reply.map_err(|e| reach.named(e))
}

/// [`finish`] for a session's call whose upstream's questions and notifications are relayed
/// to its client meanwhile (`relay`); `params`: the call's, with the relay's progress token.
pub async fn finish_relayed(
    answer: http::Response,
    server: &Server,
    params: serde_json::Value,
    relaying: &dyn Relaying,
) -> http::Response {
    let Some(mut f) = answer.forward.clone() else {
        return answer;
    };
    f.params = params;
    let forward =
        with(server, |g| g.forward(&f)).unwrap_or_else(|| Err(Error::Internal("no upstream is configured".into())));
    let (member, mut conv, exchange, reach) = match found(forward) {
        Ok(x) => x,
        Err(e) => return http::complete(answer, Err(&e), &[]),
    };
    let began = conv.session_id().map(str::to_string);
    let reply = rounds(&f, &reach, &mut conv, exchange, relaying, None).await;
    // Notifications the relay took as they came are not passed on again with the result.
    let reply = reply.map(|mut r| {
        r.notifications.retain(|n| !relaying.relays(n));
        r
    });
    let reply = noted(server, &reach, member, &mut conv, reply);
    if f.session.is_none() {
        close_stateless(server, member, &f, began.as_deref(), &conv).await;
    }
    relaying.forwarded(answer, &conv, reply)
}

/// `tasks/list`: the whole list of each upstream running the session's tasks (one after
/// another), merged, filtered and paged by the core (`upstream::gathered`).
async fn finish_gather(
    answer: http::Response,
    server: &Server,
    jobs: Vec<(usize, upstream::Conversation, upstream::TaskList)>,
    store: &mut dyn SessionStore,
    principal: Option<&str>,
) -> http::Response {
    let mut done = Vec::new();
    let jobs: Vec<_> = jobs
        .into_iter()
        .filter_map(|(m, c, t)| Some((m, c, t, Reach::of(m)?)))
        .collect();
    for (member, mut conv, mut tasks, reach) in jobs {
        let lists = upstream::drive(&mut conv, &mut tasks, |p| reach.send_for(p, None, principal)).await;
        with(server, |g| g.note_changes(member, &mut conv));
        done.push((member, conv, lists));
    }
    match with(server, |g| g.server()).flatten() {
        Some(s) => upstream::gathered(&s, answer, done, store, now_ms()),
        None => http::complete(answer, Err(&Error::Upstream("no upstream answered yet".into())), &[]),
    }
}
