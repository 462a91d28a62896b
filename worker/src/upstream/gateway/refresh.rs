//! The upstreams' lists kept fresh along with requests: refreshes run at once over each
//! upstream's driver, upstreams that are down tried again, quiet ones checked with a `ping`, a
//! principal who has not signed in failing for nobody else; and the server a request runs on.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{select, Either};
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, Job, Serving};
use mcp_sieve::Error;
use worker::Delay;

use super::auth::Reach;
use super::pins::read_pins;
use super::with;
use crate::platform::now_ms;
use crate::telemetry::log;

/// How long a request waits for a refresh another request runs, before answering 502.
const MAX_REFRESH_WAIT_MS: i64 = 60_000;

/// The gateway's server when its lists are cached and no refresh is due (`Gateway::ready`): what
/// the fast path answers from; `None` otherwise, and the full path ([`serving`]) runs.
pub fn ready(local: &Server) -> Option<Arc<Server>> {
    with(local, |g| match g.check_due(now_ms()) {
        true => None,
        false => g.ready(now_ms()),
    })
    .flatten()
}

/// [`ready`], for a request that uses an item: also `None` while an upstream that is down is due
/// for another try (the full path runs it, [`serving`]).
pub fn ready_to_forward(local: &Server) -> Option<Arc<Server>> {
    with(local, |g| match g.retry_due(now_ms()) || g.check_due(now_ms()) {
        true => None,
        false => g.ready(now_ms()),
    })
    .flatten()
}

/// Ends the refreshes of its upstreams as abandoned when dropped armed (see
/// `upstream::Gateway::abandoned`).
struct Abandon<'a>(Option<(&'a Server, Vec<usize>)>);

impl Abandon<'_> {
    /// The refreshes reached their end: nothing to release.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if let Some((local, members)) = self.0.take() {
            with(local, |g| g.abandoned(&members));
        }
    }
}

/// Runs refreshes (each over its upstream's driver, all at once) and hands them to the core.
async fn run(local: &Server, jobs: Vec<Job>, principal: Option<&str>) -> Result<Option<Arc<Server>>, Error> {
    // Dropped before the refreshes end: the next request refreshes. (A request the runtime stops
    // without dropping it is covered by the refresh's deadline, `upstream::REFRESH_DEADLINE_MS`.)
    let guard = Abandon(Some((local, jobs.iter().map(|j| j.member).collect())));
    // Each upstream reached as found now (a reload meanwhile may number them anew).
    let reaches: Vec<_> = jobs.iter().map(|j| Reach::found(j.member)).collect();
    let running = jobs.into_iter().zip(reaches).map(|(mut job, reach)| async move {
        let lists = match reach {
            Ok(reach) => upstream::drive(&mut job.conv, &mut job.refresh, |p| reach.send_for(p, None, principal)).await,
            Err(e) => Err(e),
        };
        (job, lists)
    });
    let (done, ()) = futures_util::future::join(futures_util::future::join_all(running), read_pins(local)).await;
    guard.disarm();
    // A refresh for a principal who has not signed in to an upstream says nothing about it:
    // lists that others fetched stay (only one never listed fails for a principal, its status
    // saying where to sign in). One run for nobody (a session's GET stream ticking, a relay)
    // fails for no one either: it stays due for a request of someone who signed in (before, a
    // ticking stream took every retry, and the upstream stayed down after a sign-in).
    let (unsigned, done): (Vec<_>, Vec<_>) = done.into_iter().partition(|(job, lists)| {
        needs_sign_in(lists) && (principal.is_none() || with(local, |g| g.has_lists(job.member)) == Some(true))
    });
    if !unsigned.is_empty() {
        let members: Vec<usize> = unsigned.iter().map(|(job, _)| job.member).collect();
        with(local, |g| g.abandoned(&members));
        if done.is_empty() {
            return Ok(with(local, |g| g.server()).flatten());
        }
    }
    let done = with(local, |g| g.refreshed(local.catalog(), done, now_ms()))
        .ok_or_else(|| Error::Internal("gateway mode without an upstream".into()))??;
    if let Some(e) = done.failure {
        log::error(format_args!("{e}; the other upstreams keep serving"));
    }
    for line in &done.log {
        log::warn(line);
    }
    Ok(Some(done.server))
}

/// Runs checks of upstreams nobody heard from lately (`upstream::Gateway::checks`: a `ping`
/// each, at once, within [`upstream::CHECK_DEADLINE_MS`]) and hands them to the core: one that
/// did not answer leaves the lists (list_changed) and is retried with backoff.
async fn check(local: &Server, checks: Vec<upstream::Check>, principal: Option<&str>) {
    let reaches: Vec<_> = checks.iter().map(|c| Reach::found(c.member)).collect();
    let running = checks.into_iter().zip(reaches).map(|(mut check, reach)| async move {
        let ping = async {
            let reach = reach?;
            upstream::drive(&mut check.conv, &mut check.exchange, |p| {
                reach.send_for(p, None, principal)
            })
            .await
        };
        let late = Delay::from(Duration::from_millis(upstream::CHECK_DEADLINE_MS as u64));
        let reply = match select(Box::pin(ping), late).await {
            Either::Left((reply, _)) => reply,
            Either::Right(_) => Err(Error::Upstream(format!(
                "no answer within {} s",
                upstream::CHECK_DEADLINE_MS / 1000
            ))),
        };
        (check, reply)
    });
    // A check for a principal who has not signed in did not reach the upstream: not a failure
    // (it stays due, for the next request).
    let (unsigned, done): (Vec<_>, Vec<_>) = futures_util::future::join_all(running)
        .await
        .into_iter()
        .partition(|(_, reply)| needs_sign_in(reply));
    if !unsigned.is_empty() {
        let members: Vec<usize> = unsigned.iter().map(|(check, _)| check.member).collect();
        with(local, |g| g.abandoned(&members));
    }
    match with(local, |g| g.checked(local.catalog(), done, now_ms())) {
        Some(Ok(Some(r))) => {
            if let Some(e) = r.failure {
                log::error(format_args!("{e}; it left the lists, the other upstreams keep serving"));
            }
        }
        Some(Err(e)) => log::error(format_args!("the lists were not rebuilt after a check: {e}")),
        _ => {}
    }
}

/// Whether `r` failed only because its principal has not signed in to the upstream
/// ([`crate::oauth::sign_in::sign_in_error`]).
fn needs_sign_in<T>(r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::Rpc { code, .. }) if *code == mcp_sieve::error::code::URL_ELICITATION_REQUIRED)
}

/// The server to run requests on: `None` when `local` has no upstream; else the gateway's
/// server over the upstreams' lists (refreshed when due, one refresh per upstream at a time; a
/// stale one keeps serving while it runs). Upstreams that are down are tried again (with
/// backoff) along with a request.
pub async fn serving(local: &Server) -> Result<Option<Arc<Server>>, Error> {
    serving_for(local, None).await
}

/// [`serving`] for a request of `principal`: the lists of an upstream its callers sign in to
/// are fetched with that principal's token (none: that upstream's refresh fails, saying where
/// to sign in, and the others serve).
pub async fn serving_for(local: &Server, principal: Option<&str>) -> Result<Option<Arc<Server>>, Error> {
    if !local.is_gateway() {
        return Ok(None);
    }
    let started = now_ms();
    if let Some(retries) = with(local, |g| g.retries(now_ms())).filter(|r| !r.is_empty()) {
        run(local, retries, principal).await?;
    }
    if let Some(checks) = with(local, |g| g.checks(now_ms())).filter(|c| !c.is_empty()) {
        check(local, checks, principal).await;
    }
    loop {
        let Some(serving) = with(local, |g| g.serving(now_ms())) else {
            return Ok(None);
        };
        match serving {
            Serving::Ready(s) => return Ok(Some(s)),
            Serving::Wait if now_ms() - started < MAX_REFRESH_WAIT_MS => Delay::from(Duration::from_millis(10)).await,
            Serving::Wait => return Err(Error::Upstream("its lists are still being fetched".into())),
            Serving::Refresh(jobs) => return run(local, jobs, principal).await,
        }
    }
}
