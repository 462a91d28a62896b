//! Upstream sessions ended: those of a downstream session that ended, and one a stateless
//! request's exchange ran in alone — a `DELETE` each, signed as the session's POSTs were.

use std::time::Duration;

use futures_util::future::{select, Either};
use mcp_sieve::protocol::{Forward, Server};
use mcp_sieve::upstream;
use worker::Delay;

use super::auth::Reach;
use super::with;
use crate::telemetry::log;

/// How long closing an upstream session (its DELETE) may take.
const DEADLINE_MS: u64 = 30_000;
/// How long closing a replaced gateway's sessions may take, all of them ([`Retired::close`]).
const RETIRED_MS: u64 = 2_000;

/// Sends each HTTP `DELETE` of `closing` (an upstream and the headers naming its session), one
/// after the other ([`close_at`]), on behalf of `principal` (whose sessions they are).
pub(crate) async fn close(closing: Vec<(usize, Vec<(String, String)>)>, principal: Option<&str>) {
    // Each upstream reached as found now (a reload meanwhile may number them anew).
    let closing: Vec<_> = closing
        .into_iter()
        .filter_map(|(m, h)| Some((Reach::of(m)?, h)))
        .collect();
    for (reach, headers) in closing {
        close_at(&reach, &headers, principal).await;
    }
}

/// Sends the HTTP `DELETE` with `headers` (naming a session) to the upstream `reach` reaches,
/// within [`DEADLINE_MS`], on behalf of `principal`; a failure is only logged (the upstream
/// expires the session on its own then).
pub(crate) async fn close_at(reach: &Reach, headers: &[(String, String)], principal: Option<&str>) {
    let sent = reach.bodiless("DELETE", headers, None, principal);
    let deadline = Delay::from(Duration::from_millis(DEADLINE_MS));
    match select(std::pin::pin!(sent), std::pin::pin!(deadline)).await {
        Either::Left((Ok(_), _)) => {}
        Either::Left((Err(e), _)) => log::error(format_args!("an upstream session was not closed: {e}")),
        Either::Right(_) => log::error("an upstream session was not closed in time"),
    }
}

/// What a replaced gateway leaves open at its upstreams ([`install`](super::install)): its own
/// sessions — the one its lists were fetched over, the one stateless callers shared — at each
/// upstream the gateway after it did not carry over, each with how it is reached. Those at an
/// upstream each principal signs in to are left to expire (no principal's token is the
/// gateway's to send).
#[derive(Default)]
pub struct Retired(Vec<(Reach, Vec<(String, String)>)>);

impl Retired {
    /// `old`'s own sessions but those `next` carried over, reached as the drivers in place
    /// (`old`'s) reach them.
    pub(super) fn of(old: &upstream::Gateway, next: Option<&upstream::Gateway>) -> Retired {
        let carried = next.map(upstream::Gateway::closing_own).unwrap_or_default();
        let mut own = old.closing_own();
        own.retain(|(_, session)| !carried.iter().any(|(_, c)| c == session));
        Retired(
            own.into_iter()
                .filter_map(|(member, headers)| Some((Reach::at(old, member)?, headers)))
                .filter(|(reach, _)| !reach.per_principal())
                .collect(),
        )
    }

    /// Sends their `DELETE`s, all at once, within [`RETIRED_MS`] in all: the request that
    /// applied the reload waits for them (a Worker's work ends with its requests), and a failure
    /// is only logged (the upstream expires the session on its own then).
    pub async fn close(self) {
        if self.0.is_empty() {
            return;
        }
        let sent = futures_util::future::join_all(
            self.0
                .iter()
                .map(|(reach, headers)| reach.bodiless("DELETE", headers, None, None)),
        );
        let deadline = Delay::from(Duration::from_millis(RETIRED_MS));
        match select(std::pin::pin!(sent), std::pin::pin!(deadline)).await {
            Either::Left((done, _)) => done
                .into_iter()
                .filter_map(Result::err)
                .for_each(|e| log::error(format_args!("reload: a replaced upstream session was not closed: {e}"))),
            Either::Right(_) => log::error(format_args!(
                "reload: the replaced upstream sessions were not all closed within {} s; they expire at their upstreams",
                RETIRED_MS / 1000
            )),
        }
    }
}

/// Closes the upstream sessions of `ended`, a downstream session that ended.
pub async fn close_session(server: &Server, ended: &mcp_sieve::protocol::Session) {
    close(
        with(server, |g| g.closing(ended)).unwrap_or_default(),
        ended.principal.as_deref(),
    )
    .await;
}

/// Closes the upstream session a stateless request's exchange with upstream `member` ran in
/// (`began`: the one it began in) when it served that request alone; the one stateless callers
/// share is kept (`upstream::Gateway::stateless_done`).
pub(super) async fn close_stateless(
    server: &Server,
    member: usize,
    f: &Forward,
    began: Option<&str>,
    conv: &upstream::Conversation,
) {
    let closing = with(server, |g| g.stateless_done(member, f, began, &conv.link())).flatten();
    close(
        closing.map(|h| (member, h)).into_iter().collect(),
        f.principal.as_deref(),
    )
    .await;
}
