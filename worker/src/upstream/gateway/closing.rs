//! Upstream sessions ended: those of a downstream session that ended, and one a stateless
//! request's exchange ran in alone — a `DELETE` each, signed as the session's POSTs were.

use std::time::Duration;

use futures_util::future::{select, Either};
use mcp_sieve::protocol::{Forward, Server};
use mcp_sieve::upstream;
use worker::Delay;

use super::auth::bodiless;
use super::with;
use crate::telemetry::log;

/// How long closing an upstream session (its DELETE) may take.
const DEADLINE_MS: u64 = 30_000;

/// Sends each HTTP `DELETE` of `closing` (an upstream and the headers naming its session), one
/// after the other, each within [`DEADLINE_MS`], on behalf of `principal` (whose sessions they
/// are); a failure is only logged (the upstream expires the session on its own then).
pub(crate) async fn close(closing: Vec<(usize, Vec<(String, String)>)>, principal: Option<&str>) {
    for (member, headers) in closing {
        let sent = bodiless(member, "DELETE", &headers, None, principal);
        let deadline = Delay::from(Duration::from_millis(DEADLINE_MS));
        match select(std::pin::pin!(sent), std::pin::pin!(deadline)).await {
            Either::Left((None | Some(Ok(_)), _)) => {}
            Either::Left((Some(Err(e)), _)) => log::error(format_args!("an upstream session was not closed: {e}")),
            Either::Right(_) => log::error("an upstream session was not closed in time"),
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
