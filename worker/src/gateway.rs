//! Gateway mode in the Worker: moves the bytes of the core's upstream conversation
//! (`mcp_sieve::upstream`) over `worker::Fetch`. This isolate keeps one conversation with the
//! upstream and the catalog served over it; every rule — sessions, ids, re-open, paging, refresh
//! (one in flight), catalog building, forwarding — is in the core.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, HttpAnswer, Post, Serving};
use mcp_sieve::Error;
use worker::{console_error, AbortController, AbortSignal, Delay, Fetch, Headers, Method, Request, RequestInit};

use crate::platform::now_ms;

/// How long a request waits for a refresh another request runs, before answering 502.
const MAX_REFRESH_WAIT_MS: i64 = 60_000;

thread_local! {
    static STATE: RefCell<Option<upstream::Gateway>> = const { RefCell::new(None) };
}

/// Runs `f` on this isolate's gateway state (created for `server`'s upstream on first use).
fn with<T>(server: &Server, f: impl FnOnce(&mut upstream::Gateway) -> T) -> Option<T> {
    let up = server.catalog().upstream.clone()?;
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let g = s.get_or_insert_with(|| upstream::Gateway::new(up));
        Some(f(g))
    })
}

/// Largest upstream answer read, bytes (a larger one is an error, not a larger heap).
const MAX_ANSWER: usize = 16 << 20;
/// Longest one upstream POST (sending it and reading its answer) may take.
const DEADLINE_MS: u64 = 30_000;

/// One POST at the upstream within [`DEADLINE_MS`] (then it is aborted), its answer read up to
/// [`MAX_ANSWER`] bytes (an SSE stream that stays open is read until it carries the response).
async fn post(url: &str, post: Post) -> Result<HttpAnswer, Error> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = std::pin::pin!(post_once(url, post, &signal));
    let deadline = std::pin::pin!(Delay::from(Duration::from_millis(DEADLINE_MS)));
    match select(exchange, deadline).await {
        Either::Left((Ok(answer), _)) => Ok(answer),
        Either::Left((Err(e), _)) => {
            // Over the cap (or broken): stop the upstream's transfer rather than let it run on.
            controller.abort();
            Err(e)
        }
        Either::Right(_) => {
            controller.abort();
            Err(Error::Upstream(format!("no answer within {} s", DEADLINE_MS / 1000)))
        }
    }
}

async fn post_once(url: &str, post: Post, signal: &AbortSignal) -> Result<HttpAnswer, Error> {
    let unreachable = |e: worker::Error| Error::Upstream(format!("cannot reach {url}: {e}"));
    let headers = Headers::new();
    for (k, v) in &post.headers {
        headers.set(k, v).map_err(unreachable)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(post.body.as_str().into()));
    let mut resp = Fetch::Request(Request::new_with_init(url, &init).map_err(unreachable)?)
        .send_with_signal(signal)
        .await
        .map_err(unreachable)?;
    let h = resp.headers();
    let (session, content_type) = (
        h.get("mcp-session-id").ok().flatten(),
        h.get("content-type").ok().flatten().unwrap_or_default(),
    );
    let mut reader = upstream::AnswerReader::new(&content_type, &post.body, MAX_ANSWER);
    let mut stream = resp.stream().map_err(unreachable)?;
    while let Some(chunk) = stream.next().await {
        if reader.push(&chunk.map_err(unreachable)?)? {
            break;
        }
    }
    Ok(HttpAnswer {
        status: resp.status_code(),
        session,
        content_type,
        body: reader.body(),
    })
}

/// The gateway's server when its lists are cached and no refresh is due (`Gateway::ready`): what
/// the fast path answers from; `None` otherwise, and the full path ([`serving`]) runs.
pub fn ready(local: &Server) -> Option<Arc<Server>> {
    with(local, |g| g.ready(now_ms())).flatten()
}

/// The server to run requests on: `None` when `local` has no upstream; else the gateway's
/// server over the upstream's lists (refreshed when due, one refresh at a time; a stale one
/// keeps serving while it runs or when the upstream cannot be reached).
pub async fn serving(local: &Server) -> Result<Option<Arc<Server>>, Error> {
    let Some(url) = local.catalog().upstream.as_ref().map(|u| u.url.clone()) else {
        return Ok(None);
    };
    let started = now_ms();
    loop {
        let Some(serving) = with(local, |g| g.serving(now_ms())) else {
            return Ok(None);
        };
        match serving {
            Serving::Ready(s) => return Ok(Some(s)),
            Serving::Wait if now_ms() - started < MAX_REFRESH_WAIT_MS => Delay::from(Duration::from_millis(10)).await,
            Serving::Wait => return Err(Error::Upstream("its lists are still being fetched".into())),
            Serving::Refresh(mut refresh) => {
                let Some(mut conv) = with(local, |g| g.conversation()) else {
                    return Ok(None);
                };
                let lists = upstream::drive(&mut conv, &mut *refresh, |p| post(&url, p)).await;
                let done = with(local, |g| g.refreshed(local.catalog(), conv, lists, now_ms()))
                    .ok_or_else(|| Error::Internal("gateway mode without an upstream".into()))??;
                if let Some(e) = done.failure {
                    console_error!("mcp-sieve: upstream refresh failed, serving the cached lists: {e}");
                }
                return Ok(Some(done.server));
            }
        }
    }
}

/// Performs the core's `Forward` effect of `answer`, if any, at the upstream (in the session's
/// own upstream session, remembered in `store`) and completes the answer with the upstream's
/// reply, passed through.
pub async fn finish(answer: http::Response, server: &Server, store: &mut dyn SessionStore) -> http::Response {
    let Some(f) = answer.forward.clone() else {
        return answer;
    };
    let Some((url, (mut conv, mut exchange))) = with(server, |g| (g.upstream().url.clone(), g.forward(&f))) else {
        let missing = Error::Internal("no upstream is configured".into());
        return http::complete(answer, Err(&missing), &[]);
    };
    let reply = upstream::drive(&mut conv, &mut exchange, |p| post(&url, p)).await;
    with(server, |g| g.note_changes(&mut conv));
    upstream::forwarded(answer, &conv, reply, store, now_ms())
}
