//! Moving bytes between the platform and the core: request parts in, `http::Response` out, the
//! `tasks/result` wait loop; and, with `MCP_SIEVE_DIAGNOSTICS` set (tests only), a
//! deliberate panic on request (`X-Sieve-Panic`) and the isolate's wasm memory size on every
//! response (`X-Sieve-Wasm-Memory`), so tests can prove panic recovery and a flat heap.

use std::time::Duration;

use futures_util::future::{select, Either};
use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::{Env as CoreEnv, Server};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Delay, Response, ResponseBuilder, Result};

use crate::platform::heap;
use crate::platform::now_ms;
use crate::search::meaning;
use crate::serve::ledger;
use crate::telemetry::log;
use crate::upstream::gateway;

/// Request header that makes the shell panic (with diagnostics on).
const PANIC_HEADER: &str = "X-Sieve-Panic";
/// Response header marking an answer of the fast path (`serve::fast`, `fast::forward`; with diagnostics on).
pub const PATH_HEADER: &str = "X-Sieve-Path";
/// Response header carrying the wasm memory size in bytes (with diagnostics on).
const MEMORY_HEADER: &str = "X-Sieve-Wasm-Memory";
/// The diagnostics header with the bytes the heap holds ([`crate::platform::heap`]).
const HEAP_HEADER: &str = "X-Sieve-Wasm-Heap";

/// Longest a `tasks/result` waits in one request.
const MAX_WAIT_MS: i64 = 30_000;

/// Longest the rest of a body past the limit is read and dropped (counted, nothing kept) before
/// the 413; a body that keeps coming longer is cancelled. Read to its end, a refused body leaves
/// nothing behind: `wrangler dev`'s proxy (its ProxyWorker) pipes the client's body on after the
/// Worker has answered, fails reading it ("Can't read from request stream after response has been
/// sent") and then answers the next request with a 503 ("Your worker restarted mid-request").
/// Workers in production have no such proxy; the runtime drops an unread body itself.
const DRAIN_MS: u64 = 1_000;

/// Reads a request body. A body whose `Content-Length` the gate accepted (at most `limit`; the
/// runtime holds the body to it) is read in one call; one without (chunked) is read as a stream,
/// counting bytes as they arrive: past `limit` nothing more is kept and the answer is 413, and a
/// body that keeps coming is refused within [`DRAIN_MS`] of passing the limit.
pub async fn read_body(
    req: &web_sys::Request,
    declared: Option<String>,
    limit: usize,
) -> std::result::Result<Vec<u8>, http::Response> {
    let failed = |_: JsValue| http::failed();
    if http::declared_length(declared).is_some_and(|n| n <= limit as u64) {
        let buffer = JsFuture::from(req.array_buffer().map_err(failed)?)
            .await
            .map_err(failed)?;
        return Ok(js_sys::Uint8Array::new(&buffer).to_vec());
    }
    let Some(stream) = req.body() else {
        return Ok(Vec::new());
    };
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().dyn_into().map_err(|_| http::failed())?;
    let (mut body, mut seen, mut over_at) = (Vec::new(), 0usize, None::<i64>);
    loop {
        let read = JsFuture::from(reader.read());
        let step = match over_at {
            None => read.await.map_err(failed)?,
            Some(at) => {
                let left = (at + DRAIN_MS as i64 - now_ms()).max(0) as u64;
                let drain = std::pin::pin!(Delay::from(Duration::from_millis(left)));
                match select(read, drain).await {
                    Either::Left((step, _)) => step.map_err(failed)?,
                    Either::Right(_) => {
                        let _ = JsFuture::from(reader.cancel()).await;
                        return Err(http::too_large(limit));
                    }
                }
            }
        };
        if js_sys::Reflect::get(&step, &"done".into()).map_err(failed)?.is_truthy() {
            return if seen > limit {
                Err(http::too_large(limit))
            } else {
                Ok(body)
            };
        }
        let chunk = js_sys::Uint8Array::new(&js_sys::Reflect::get(&step, &"value".into()).map_err(failed)?);
        seen = seen.saturating_add(chunk.length() as usize);
        if seen <= limit {
            body.extend_from_slice(&chunk.to_vec());
        } else if over_at.is_none() {
            body = Vec::new(); // over the limit: nothing more is kept
            over_at = Some(now_ms());
        }
    }
}

/// Whether a path is the MCP endpoint or one of its views (`/mcp`, `/mcp/{view}`).
pub fn is_endpoint(path: &str) -> bool {
    path == http::ENDPOINT || path.strip_prefix(http::ENDPOINT).is_some_and(|r| r.starts_with('/'))
}

/// The path and query of a URL as the platform serializes it (`https://host/path?query#frag`),
/// without parsing it again: the serialization is already normalized.
pub fn path_and_query(url: &str) -> (&str, &str) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.find('/').map_or("/", |i| &rest[i..]);
    let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    rest.split_once('?').unwrap_or((rest, ""))
}

pub use crate::auth::Caller;

/// The caller `who` (authenticated already: `auth::authenticate`) of a request to `url`, with the
/// view it chooses; an error response for a view that is unknown, malformed or not open to it.
pub fn caller_of(
    server: &Server,
    url: &str,
    header: &dyn Fn(&str) -> Option<String>,
    who: http::Caller,
) -> std::result::Result<Caller, Box<http::Response>> {
    let (path, query) = path_and_query(url);
    // Over the catalog served: in gateway mode the upstreams' tools, whose overlay aliases
    // X-MCP-Tools and X-MCP-Exclude-Tools accept as over a plain catalog.
    let served = gateway::with(server, |g| g.server()).flatten();
    let view = http::endpoint_view_for(
        served.as_deref().unwrap_or(server).catalog(),
        path,
        query,
        header,
        who.principal.as_deref(),
        who.roles(),
    )?;
    Ok(Caller {
        principal: who.principal,
        identity: who.identity,
        view,
        via: None,
    })
}

/// Header lookup over the platform's headers.
pub fn header_fn(headers: &web_sys::Headers) -> impl Fn(&str) -> Option<String> + '_ {
    move |name| headers.get(name).ok().flatten()
}

/// Header lookup over the headers `entry.mjs` hands a synchronous call as one string (`name\nvalue\n`
/// each, as the platform's `Headers` iterate: names in lower case, repeated values joined): a
/// lookup through the platform's `Headers` costs a crossing and two string copies each.
pub fn head_fn(head: &str) -> impl Fn(&str) -> Option<String> + '_ {
    let mut lines = head.split('\n');
    let headers: Vec<(&str, &str)> = std::iter::from_fn(|| Some((lines.next()?, lines.next()?))).collect();
    move |name| {
        let found = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name));
        found.map(|(_, v)| v.to_string())
    }
}

/// Runs the transport ([`http::serve`]) for one request, waiting and retrying while the core
/// asks to (a `tasks/result` for a working task), up to [`MAX_WAIT_MS`]. `relay`: a forward the
/// session's object relays itself ([`relayable`]) is left in the answer, not performed.
pub async fn run(
    server: &Server,
    cfg: &http::Config,
    request: http::Request<'_>,
    store: &mut dyn SessionStore,
    fresh_id: String,
    caller: &Caller,
    relay: bool,
) -> http::Response {
    // Gateway mode: the catalog over the upstream's lists; calls are performed there.
    let gateway = match gateway::serving_for(server, caller.principal.as_deref()).await {
        Ok(g) => g,
        Err(e) => return mcp_sieve::upstream::unavailable(&e),
    };
    let server = gateway.as_deref().unwrap_or(server);
    let started = now_ms();
    // Its audit record and counters (`operate`), when the document audits or a dataset counts.
    let seen = crate::operate::seen(server, request.body, caller);
    // A `find_tools` query's sentence vector, when the document has `search.ai` or `search.embeddings`.
    meaning::prepare(server, request.body).await;
    loop {
        let answer = serve_now(server, cfg, request, store, &fresh_id, caller);
        // A gateway task is admitted in the server's task budget before its call leaves.
        let answer = match answer.forward.as_ref().is_some_and(|f| f.admit.is_some()) {
            true => ledger::admit(server, answer).await,
            false => answer,
        };
        match answer.retry_at {
            Some(at) if at - started <= MAX_WAIT_MS => {
                let wait = (at - now_ms()).clamp(1, MAX_WAIT_MS) as u64;
                Delay::from(Duration::from_millis(wait)).await;
            }
            _ if relay && gateway.is_some() && relayable(server, &answer) => {
                crate::operate::finish(server, caller, seen, &answer, None);
                return answer;
            }
            _ => {
                let answer = gateway::finish(answer, server, store, cfg.session_secret.as_ref()).await;
                crate::operate::finish(server, caller, seen, &answer, None);
                return answer;
            }
        }
    }
}

/// Whether a Durable Object relays `answer`'s forward itself (`relay`: a session's call that
/// accepts SSE, or a stateless call whose client may be asked), rather than [`run`] performing
/// it at once.
pub fn relayable(server: &Server, answer: &http::Response) -> bool {
    answer.forward.as_ref().is_some_and(|f| {
        f.gather.is_empty()
            && ((f.sse && !f.stateless && f.session.is_some())
                || gateway::relays_stateless(server, f)
                // A stateless client's task in its holder, which may park the task's question there.
                || f.session.is_some() && mcp_sieve::upstream::parked_name(f).is_some())
    })
}

/// One pass of the transport ([`http::serve`]) now: what [`run`] repeats, and all of the fast
/// path (`serve::fast`).
pub fn serve_now(
    server: &Server,
    cfg: &http::Config,
    request: http::Request<'_>,
    store: &mut dyn SessionStore,
    fresh_id: &str,
    caller: &Caller,
) -> http::Response {
    if crate::config::diagnostics() && (request.header)(PANIC_HEADER).is_some() {
        panic!("mcp-sieve: deliberate panic ({PANIC_HEADER} with MCP_SIEVE_DIAGNOSTICS set)");
    }
    let env = CoreEnv {
        now_ms: now_ms(),
        principal: caller.principal.clone(),
        fresh_id: fresh_id.to_string(),
        view: caller.view.clone(),
        identity: caller.identity.clone(),
    };
    let answer = http::serve(server, cfg, request, store, &env);
    // Filter failures and ignored inputs reach the platform's log (no conversation content).
    if !answer.log.is_empty() {
        let about = log::About::of(caller.principal.as_deref(), caller.view_label(), request.body);
        answer.log.iter().for_each(|line| about.info(line));
    }
    answer
}

/// The platform response for a core response.
pub fn respond(a: http::Response) -> Result<Response> {
    // Status 0: still waiting after the longest wait.
    let mut b = ResponseBuilder::new().with_status(if a.status == 0 { 504 } else { a.status });
    for (k, v) in &a.headers {
        b = b.with_header(k, v)?;
    }
    if crate::config::diagnostics() {
        b = b.with_header(MEMORY_HEADER, &wasm_memory_bytes().to_string())?;
        b = b.with_header(HEAP_HEADER, &heap::live_bytes().to_string())?;
    }
    Ok(if a.body.is_empty() {
        b.empty()
    } else {
        b.fixed(a.body.into_bytes())
    })
}

/// Size of this instance's linear memory (it only grows: a leak shows as growth).
fn wasm_memory_bytes() -> usize {
    #[cfg(target_arch = "wasm32")]
    return core::arch::wasm32::memory_size(0) * 65536;
    #[cfg(not(target_arch = "wasm32"))]
    return 0;
}

#[cfg(test)]
mod tests {
    use super::{head_fn, path_and_query};

    #[test]
    fn head_fn_finds_a_header_by_any_case_of_its_name() {
        let head = "content-type\napplication/json\nmcp-session-id\nabc\naccept\na, b\n";
        let header = head_fn(head);
        assert_eq!(header("Mcp-Session-Id").as_deref(), Some("abc"));
        assert_eq!(header("ACCEPT").as_deref(), Some("a, b"), "a joined value stays whole");
        assert_eq!(header("origin"), None);
        assert_eq!(head_fn("")("accept"), None, "no headers");
        assert_eq!(
            head_fn("x-empty\n\n")("x-empty").as_deref(),
            Some(""),
            "an empty value is a value"
        );
    }

    #[test]
    fn path_and_query_split_a_serialized_url() {
        for (url, path, query) in [
            ("https://example.com/mcp", "/mcp", ""),
            (
                "http://127.0.0.1:8787/mcp/email?groups=a,b&mode=search",
                "/mcp/email",
                "groups=a,b&mode=search",
            ),
            ("https://h/mcp?x=1#frag", "/mcp", "x=1"),
            ("https://h/mcp#frag?not-a-query", "/mcp", ""),
            ("https://h", "/", ""),
        ] {
            assert_eq!(path_and_query(url), (path, query), "{url}");
        }
    }
}
