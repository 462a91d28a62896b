//! Gateway mode in the Worker: moves the bytes of the core's upstream conversation
//! (`mcp_sieve::upstream`) over `worker::Fetch`. This isolate keeps one conversation with the
//! upstream and the catalog served over it; every rule — sessions, ids, re-open, paging, refresh
//! (one in flight), catalog building, forwarding — is in the core.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use mcp_sieve::http;
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, HttpAnswer, Machine, Post, Serving, Step};
use mcp_sieve::Error;
use worker::{console_error, Delay, Fetch, Headers, Method, Request, RequestInit};

use crate::shell::now_ms;

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

async fn post(url: &str, post: Post) -> Result<HttpAnswer, Error> {
    let unreachable = |e: worker::Error| Error::Upstream(format!("cannot reach {url}: {e}"));
    let headers = Headers::new();
    for (k, v) in &post.headers {
        headers.set(k, v).map_err(unreachable)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(post.body.into()));
    let mut resp = Fetch::Request(Request::new_with_init(url, &init).map_err(unreachable)?)
        .send()
        .await
        .map_err(unreachable)?;
    let h = resp.headers();
    let (session, content_type) = (
        h.get("mcp-session-id").ok().flatten(),
        h.get("content-type").ok().flatten().unwrap_or_default(),
    );
    let body = resp.text().await.map_err(unreachable)?;
    Ok(HttpAnswer {
        status: resp.status_code(),
        session,
        content_type,
        body,
    })
}

/// Runs `m` to its end; the state is borrowed only between the bytes, never across a fetch.
async fn drive<M: Machine>(server: &Server, url: &str, m: &mut M) -> Result<M::Output, Error> {
    let missing = || Error::Internal("gateway mode without an upstream".into());
    loop {
        let step = with(server, |g| m.step(g.conversation())).ok_or_else(missing)??;
        let p = match step {
            Step::Done(out) => return Ok(out),
            Step::Send(p) => p,
        };
        let answer = post(url, p).await?;
        with(server, |g| m.receive(g.conversation(), answer)).ok_or_else(missing)??;
    }
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
                let lists = drive(local, &url, &mut *refresh).await;
                let done = with(local, |g| g.refreshed(local.catalog(), lists, now_ms()))
                    .ok_or_else(|| Error::Internal("gateway mode without an upstream".into()))??;
                if let Some(e) = done.failure {
                    console_error!("mcp-sieve: upstream refresh failed, serving the cached lists: {e}");
                }
                return Ok(Some(done.server));
            }
        }
    }
}

/// Performs the core's `Forward` effect of `answer`, if any, at the upstream and completes the
/// answer with the upstream's reply, passed through.
pub async fn finish(answer: http::Response, server: &Server) -> http::Response {
    let Some(f) = answer.forward.clone() else {
        return answer;
    };
    let Some((url, mut exchange)) = with(server, |g| (g.upstream().url.clone(), g.forward(&f))) else {
        return http::complete(answer, Err(&Error::Internal("no upstream is configured".into())));
    };
    upstream::forwarded(answer, drive(server, &url, &mut exchange).await)
}
