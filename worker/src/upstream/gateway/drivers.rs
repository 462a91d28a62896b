//! How the bytes reach one upstream ([`Driver`]: its URL over the platform's fetch, or a
//! service binding), and one POST there within its `limits`: aborted when late, its answer read
//! up to `maxAnswerBytes`, what the upstream sends meanwhile carried out by the call's relaying.

use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use mcp_sieve::catalog::Limits;
use mcp_sieve::upstream::{self, HttpAnswer, Post};
use mcp_sieve::Error;
use wasm_bindgen::JsCast;
use worker::{AbortController, AbortSignal, Delay, Fetcher, Request};

use super::relaying::Relaying;
use super::{late, DRIVERS};
use crate::telemetry::log;

/// How the bytes reach one upstream.
#[derive(Clone)]
pub(super) enum Driver {
    Http(String),
    Service(String, Fetcher),
}

/// Where upstream `member` is reached: its URL, and the service binding that reaches it, if any
/// (whose requests go to its `/mcp`).
pub(super) fn target(member: usize) -> Option<(String, Option<Fetcher>)> {
    DRIVERS.with(|d| match d.borrow().get(member)? {
        Driver::Http(url) => Some((url.clone(), None)),
        Driver::Service(b, f) => Some((format!("https://{b}.service/mcp"), Some(f.clone()))),
    })
}

/// One request to `url` over `via` (a service binding) or the platform's fetch, its answer as it
/// comes (the platform's `Response`, no `worker::Response` around it: the per-call crossings are
/// what a forwarded call costs above a plain JS proxy). `signal` aborts it over HTTP; a service
/// binding's fetch takes none (a deadline drops it, and its body, dropped unread, is cancelled).
pub(super) async fn fetch(
    url: &str,
    via: Option<Fetcher>,
    method: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    signal: Option<&AbortSignal>,
) -> worker::Result<web_sys::Response> {
    let h = web_sys::Headers::new()?;
    for (k, v) in headers {
        h.set(k, v)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    init.set_headers(&h);
    if let Some(b) = body {
        init.set_body(&b.into());
    }
    match via {
        Some(fetcher) => {
            let req = web_sys::Request::new_with_str_and_init(url, &init)?;
            Ok(fetcher.fetch_request(Request::from(req)).await?.into())
        }
        None => {
            if let Some(s) = signal {
                init.set_signal(Some(s));
            }
            let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
            let sent = wasm_bindgen_futures::JsFuture::from(scope.fetch_with_str_and_init(url, &init));
            Ok(sent.await?.dyn_into()?)
        }
    }
}

/// The URL of upstream `member` when it is reached over HTTP (not a service binding).
pub(crate) fn http_url(member: usize) -> Option<String> {
    DRIVERS.with(|d| match d.borrow().get(member) {
        Some(Driver::Http(url)) => Some(url.clone()),
        _ => None,
    })
}

/// One POST at the upstream within its `limits.callTimeoutSeconds` (then it is aborted; longer by
/// the client's time to answer when its questions are relayed), its answer read up to its
/// `limits.maxAnswerBytes`
/// (an SSE stream that stays open is read until it carries the response).
pub(super) async fn post(
    url: &str,
    via: Option<Fetcher>,
    post: Post,
    relaying: Option<&dyn Relaying>,
    limits: Limits,
) -> Result<(HttpAnswer, Option<String>), Error> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = std::pin::pin!(post_once(url, via, post, &signal, relaying, limits.max_answer_bytes));
    let deadline = std::pin::pin!(Delay::from(Duration::from_millis(limits.call_ms)));
    let outcome = match select(exchange, deadline).await {
        Either::Left((answer, _)) => Some(answer),
        // A question went to the client: the upstream waits on its answer, so it gets that long too.
        Either::Right((_, exchange)) if relaying.is_some_and(|r| r.asked()) => {
            let more = std::pin::pin!(Delay::from(Duration::from_millis(
                mcp_sieve::protocol::ask::ANSWER_WAIT_MS as u64
            )));
            match select(exchange, more).await {
                Either::Left((answer, _)) => Some(answer),
                Either::Right(_) => None,
            }
        }
        Either::Right(_) => None,
    };
    match outcome {
        Some(Ok(answer)) => Ok(answer),
        Some(Err(e)) => {
            // Over the cap (or broken): stop the upstream's transfer rather than let it run on.
            controller.abort();
            Err(e)
        }
        None => {
            controller.abort();
            Err(late(&limits))
        }
    }
}

async fn post_once(
    url: &str,
    via: Option<Fetcher>,
    post: Post,
    signal: &AbortSignal,
    relaying: Option<&dyn Relaying>,
    max: usize,
) -> Result<(HttpAnswer, Option<String>), Error> {
    let unreachable = |e: worker::Error| Error::Upstream(format!("cannot reach {url}: {e}"));
    let resp = fetch(url, via.clone(), "POST", &post.headers, Some(&post.body), Some(signal))
        .await
        .map_err(unreachable)?;
    let www = matches!(resp.status(), 401 | 403)
        .then(|| resp.headers().get("www-authenticate").ok().flatten())
        .flatten();
    let answer = read_answer(url, via, &post, resp, signal, relaying, max).await?;
    Ok((answer, www))
}

/// Reads the upstream's answer `resp` to `post` (sent to `url`, over `via`) up to `max` bytes
/// (its `limits.maxAnswerBytes`): a JSON body of known length in one go, an SSE stream as it comes, carrying out what the
/// upstream sends meanwhile with `relaying` (an answer to its question goes back in the same
/// upstream session, aborted with `signal`).
pub(crate) async fn read_answer(
    url: &str,
    via: Option<Fetcher>,
    post: &Post,
    resp: web_sys::Response,
    signal: &AbortSignal,
    relaying: Option<&dyn Relaying>,
    max: usize,
) -> Result<HttpAnswer, Error> {
    let unreachable = |e: worker::Error| Error::Upstream(format!("cannot reach {url}: {e}"));
    let js = |e: wasm_bindgen::JsValue| unreachable(worker::Error::from(e));
    let h = resp.headers();
    let (session, content_type) = (
        h.get("mcp-session-id").ok().flatten(),
        h.get("content-type").ok().flatten().unwrap_or_default(),
    );
    let length = h
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|l| l.trim().parse::<usize>().ok());
    let status = resp.status();
    let mut reader = upstream::AnswerReader::new(&content_type, &post.body, max);
    match length {
        // A body of known length within the cap, not an SSE stream: read in one go (one crossing
        // and one copy, where a stream takes a promise per chunk).
        Some(n) if n <= max && !content_type.to_ascii_lowercase().starts_with("text/event-stream") => {
            let buffer = wasm_bindgen_futures::JsFuture::from(resp.array_buffer().map_err(js)?)
                .await
                .map_err(js)?;
            reader.push(&js_sys::Uint8Array::new(&buffer).to_vec())?;
        }
        _ => {
            let mut resp = worker::Response::from(resp);
            let mut stream = resp.stream().map_err(unreachable)?;
            while let Some(chunk) = stream.next().await {
                let done = reader.push(&chunk.map_err(unreachable)?)?;
                // What the upstream asks or tells the caller meanwhile goes to it now.
                if let Some(r) = relaying {
                    for msg in reader.take_events() {
                        let Some(answer) = r.handle(msg).await else {
                            continue;
                        };
                        // In the same upstream session; its reply (202) carries nothing.
                        let answered = upstream::answer_post(&post.headers, &answer);
                        if let Err(e) = Box::pin(post_once(url, via.clone(), answered, signal, None, max)).await {
                            log::error(format_args!(
                                "an answer to an upstream's request was not delivered: {e}"
                            ));
                        }
                    }
                }
                if done {
                    break;
                }
            }
        }
    }
    Ok(HttpAnswer {
        status,
        session,
        content_type,
        body: reader.body(),
    })
}
