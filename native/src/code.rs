//! Code mode's runs in the native server (issue 62): a `tools/call` of `run_code` through a
//! code-mode view runs its program in QuickJS ([`sandbox`]) on a thread of its own, and each tool
//! call the program makes comes back here as a `tools/call` of `call_tool` from the same caller —
//! same path, query, headers (session, token, view headers) — through `serve::handle`, the path
//! every request takes: the view, filter, concerns, policy, pins, rate limits, audit (its record
//! marked `"via": "run_code"` with the run's id: [`Via`]) and trace span (a child of the run's)
//! apply to it as to a direct call, so a tool hidden from the caller is unknown inside a program.
//! The thread and the async side meet over channels: the program blocks on its call while the
//! request is served here. A run ends at its wall time, memory, calls or answer bound, or when its
//! client goes away (its request's future is dropped: [`Cancel`]).

pub(crate) mod sandbox;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::HeaderMap;
use mcp_sieve::filter::EndpointView;
use mcp_sieve::protocol::code::{self, RUN};
use mcp_sieve::protocol::jsonrpc::Head;
use serde_json::{json, Value};

use crate::app::{App, Reply};

/// Most programs running in this process at once, whoever runs them (each is a thread with up
/// to `code.memoryMb` of engine memory).
const MAX_RUNS: usize = 16;
/// How often a program waiting on a tool call looks at its deadline and its cancellation.
const TICK: Duration = Duration::from_millis(50);

/// A request made by a program's run (its id): the audit record of its use says so.
#[derive(Clone, Debug)]
pub(crate) struct Via(pub String);

/// The `run_code` call a message of `head` makes through `view`: its id and program, or `None`
/// when it is not one (another message, or a view not in code mode).
pub(crate) fn asked(head: &Head, view: Option<&Arc<EndpointView>>) -> Option<(Value, Value)> {
    if !view.is_some_and(|v| v.code) || head.method() != Some("tools/call") || head.params.name.as_deref() != Some(RUN)
    {
        return None;
    }
    Some((
        head.id.clone(),
        head.params.arguments.get("code").cloned().unwrap_or(Value::Null),
    ))
}

/// The answer to a `run_code` request whose core answer is `checked`: that answer itself unless
/// the core found the request valid (it then refuses only to run it: [`code::NOT_RUN_HERE`]);
/// else the run's result in its place (as JSON or as the SSE event the core wrote).
pub(crate) async fn answer(
    app: &Arc<App>,
    mut checked: mcp_sieve::http::Response,
    id: Value,
    program: Value,
    origin: Origin,
    limits: &code::Limits,
) -> mcp_sieve::http::Response {
    if !checked.body.contains(code::NOT_RUN_HERE) {
        return checked;
    }
    let message = match run(app, origin, program, limits).await {
        Ok(result) => mcp_sieve::protocol::jsonrpc::ok(&id, &result),
        Err(why) => mcp_sieve::protocol::jsonrpc::error(&id, &mcp_sieve::Error::params(why)),
    };
    let sse = checked
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with("text/event-stream"));
    checked.body = if sse {
        checked
            .body
            .split_inclusive('\n')
            .map(
                |line| match line.starts_with("data:") && line.contains(code::NOT_RUN_HERE) {
                    true => format!("data: {message}\n"),
                    false => line.to_string(),
                },
            )
            .collect()
    } else {
        message
    };
    checked
}

/// What a program's calls are sent as: the run_code request's own target and headers.
pub(crate) struct Origin {
    /// The request's path and query.
    pub target: String,
    /// Its headers (the token, the session, the view headers, the protocol version).
    pub headers: HeaderMap,
    /// Its `params._meta` (the protocol version of a 2026-07-28 request travels there).
    pub meta: Option<Value>,
    /// Who runs it, for the runs-at-once limit: the principal, else the session.
    pub owner: String,
    /// The trace context a call's span is a child of (the run's span), when traced.
    pub trace: Vec<(String, String)>,
    /// How a call is served: `serve`'s own request path, handed in (this module does not name
    /// `serve`, which calls it: no cycle between the two).
    pub serve: Serve,
}

/// A request served as any other: `serve::handle`, boxed (a request may, in its type, run a
/// program again, and a plain function's declared type ends that cycle).
pub(crate) type Serve =
    for<'a> fn(&'a Arc<App>, hyper::Request<Full<Bytes>>) -> Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

/// The JSON-RPC result of `run_code` with `code` (the argument as sent) under `limits`:
/// `{structuredContent: {result, logs}}`, or an error result saying which limit stopped it. An
/// argument that is not a program is `Err` (a JSON-RPC invalid-params message naming it).
pub(crate) async fn run(
    app: &Arc<App>,
    origin: Origin,
    program: Value,
    limits: &code::Limits,
) -> Result<Value, String> {
    let program = match program {
        Value::String(s) if s.len() <= code::MAX_CODE => s,
        Value::String(s) => {
            return Err(format!(
                "params.arguments.code is {} bytes, longer than {}",
                s.len(),
                code::MAX_CODE
            ))
        }
        Value::Null => return Err("params.arguments.code is required (a string: the program)".into()),
        v => {
            return Err(format!(
                "params.arguments.code must be a string (the program), got {}",
                mcp_sieve::error::type_name(&v)
            ))
        }
    };
    let Some(_slot) = Slot::take(&origin.owner, limits.max_concurrent_runs as usize) else {
        return Ok(code::answer(
            None,
            Vec::new(),
            Some(format!(
                "too many programs at once: a caller may run {} (code.maxConcurrentRuns), this server {MAX_RUNS}; \
                 wait for one to end",
                limits.max_concurrent_runs
            )),
        ));
    };
    let run_id = crate::platform::fresh_id().map_err(|e| e.to_string())?;
    let limits = sandbox::Limits::from(limits);
    let cancel = Cancel(Arc::new(AtomicBool::new(false)));
    let deadline = Instant::now() + limits.wall;
    let (calls_tx, mut calls_rx) = tokio::sync::mpsc::channel::<Asked>(1);
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<sandbox::Ran>();
    let flag = cancel.0.clone();
    let started = Instant::now();
    let spawned = std::thread::Builder::new()
        .name("run_code".into())
        .stack_size(sandbox::THREAD_STACK_BYTES)
        .spawn(move || {
            let stop = flag.clone();
            let call: sandbox::Call = Box::new(move |name, args| {
                let (tx, rx) = std::sync::mpsc::channel();
                calls_tx
                    .blocking_send(Asked {
                        name: name.to_string(),
                        args,
                        answer: tx,
                    })
                    .map_err(|_| "the run has ended".to_string())?;
                loop {
                    match rx.recv_timeout(TICK) {
                        Ok(answer) => return answer,
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                            return Err(format!("the call of {name} got no answer"))
                        }
                        Err(_) if stop.load(Ordering::Relaxed) => return Err("the run was cancelled".into()),
                        Err(_) if Instant::now() > deadline => {
                            return Err(format!("the run's time ran out while {name} was called"))
                        }
                        Err(_) => {}
                    }
                }
            });
            let ran = sandbox::run(&program, limits, flag, call);
            let _ = done_tx.send(ran);
        });
    if let Err(e) = spawned {
        return Ok(code::answer(
            None,
            Vec::new(),
            Some(format!("cannot start the program's thread: {e}")),
        ));
    }
    let (mut made, mut open) = (0u64, true);
    // The engine stops itself at the deadline; this bound only guards against one that did not.
    let last = tokio::time::Instant::from_std(deadline + Duration::from_secs(5));
    let ran = loop {
        tokio::select! {
            ran = &mut done_rx => break ran.ok(),
            _ = tokio::time::sleep_until(last) => break None,
            asked = calls_rx.recv(), if open => {
                let Some(asked) = asked else {
                    open = false;
                    continue;
                };
                made += 1;
                let left = deadline.saturating_duration_since(Instant::now());
                let call = call(app, &origin, &run_id, made, &asked.name, asked.args);
                let answer = match tokio::time::timeout(left, call).await {
                    Ok(a) => a,
                    Err(_) => Err(format!("the run's time ran out while {} was called", asked.name)),
                };
                let _ = asked.answer.send(answer);
            }
        }
    };
    drop(cancel);
    let Some(ran) = ran else {
        return Ok(code::answer(
            None,
            Vec::new(),
            Some("the program's thread ended without an answer".into()),
        ));
    };
    tracing::info!(
        run = %run_id,
        calls = ran.calls,
        ms = started.elapsed().as_millis() as u64,
        ok = ran.result.is_ok(),
        "run_code ended"
    );
    let mut answer = match ran.result {
        Ok(v) => code::answer(Some(v), ran.logs, None),
        Err(e) => code::answer(None, ran.logs, Some(e.to_string())),
    };
    answer["_meta"] = json!({"dev.mcp-sieve/run": {"id": run_id, "calls": ran.calls}});
    Ok(answer)
}

/// A program's tool call, waiting for its answer on the program's thread.
struct Asked {
    name: String,
    args: Value,
    answer: std::sync::mpsc::Sender<Result<Value, String>>,
}

/// Cancels the run when dropped: when the request's future is (its client went away), or when
/// the run is over.
struct Cancel(Arc<AtomicBool>);

impl Drop for Cancel {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs at once, by owner, and in all.
static RUNS: LazyLock<Mutex<(HashMap<String, usize>, usize)>> = LazyLock::new(Mutex::default);

/// One run's place among the runs at once; given back when dropped.
struct Slot(String);

impl Slot {
    fn take(owner: &str, most: usize) -> Option<Slot> {
        let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
        let (by_owner, all) = &mut *runs;
        let mine = by_owner.entry(owner.to_string()).or_default();
        if *mine >= most || *all >= MAX_RUNS {
            return None;
        }
        *mine += 1;
        *all += 1;
        Some(Slot(owner.to_string()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
        let (by_owner, all) = &mut *runs;
        *all = all.saturating_sub(1);
        if let Some(n) = by_owner.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                by_owner.remove(&self.0);
            }
        }
    }
}

/// One call of the program, as its caller's `tools/call` of `call_tool` through `serve::handle`:
/// the tool's `structuredContent`, else its `content`; a JSON-RPC error or a tool error is `Err`
/// with its message.
async fn call(app: &Arc<App>, origin: &Origin, run_id: &str, n: u64, name: &str, args: Value) -> Result<Value, String> {
    let id = format!("run_code:{run_id}:{n}");
    let mut params = json!({"name": mcp_sieve::protocol::search::CALL, "arguments": {"name": name, "arguments": args}});
    if let Some(meta) = &origin.meta {
        let mut meta = meta.clone();
        if let Some(m) = meta.as_object_mut() {
            // The run's progress is not the call's.
            m.remove("progressToken");
        }
        params["_meta"] = meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
    let mut headers = origin.headers.clone();
    headers.remove(hyper::header::CONTENT_LENGTH);
    let set = |h: &mut HeaderMap, k: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(HeaderName::from_static(k), v);
        }
    };
    // A 2026-07-28 request mirrors its method and names into headers.
    if headers.contains_key("mcp-method") {
        set(&mut headers, "mcp-method", "tools/call");
    }
    if headers.contains_key("mcp-name") {
        set(&mut headers, "mcp-name", mcp_sieve::protocol::search::CALL);
        set(&mut headers, "mcp-param-tool", name);
    }
    headers.remove("traceparent");
    headers.remove("tracestate");
    for (k, v) in &origin.trace {
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            headers.insert(k, v);
        }
    }
    let mut req = hyper::Request::post(origin.target.as_str())
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("the call of {name} could not be made: {e}"))?;
    *req.headers_mut() = headers;
    req.extensions_mut().insert(Via(run_id.to_string()));
    let reply = (origin.serve)(app, req).await;
    let status = reply.status().as_u16();
    let sse = reply
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let message = if sse {
        answer_in_stream(reply.into_body(), &id).await?
    } else {
        let bytes = reply
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => v,
            Err(_) => {
                return Err(format!(
                    "the call of {name} was refused (HTTP {status}): {}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
                ))
            }
        }
    };
    resolved(message)
}

/// What a call's answer resolves to in the program.
fn resolved(message: Value) -> Result<Value, String> {
    if let Some(e) = message.get("error") {
        return Err(e["message"].as_str().map_or_else(|| e.to_string(), str::to_string));
    }
    let Some(result) = message.get("result") else {
        return Err(format!("the call got no result: {message}"));
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<&str> = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect();
        return Err(if text.is_empty() {
            "the tool failed".into()
        } else {
            text.join("\n")
        });
    }
    Ok(match result.get("structuredContent") {
        Some(s) if !s.is_null() => s.clone(),
        _ => result.get("content").cloned().unwrap_or(Value::Null),
    })
}

/// The response with `id` in an SSE answer, read as it comes; a question the server asks on the
/// way (elicitation, sampling, roots) fails the call: a program's caller is not asked.
async fn answer_in_stream(
    mut body: http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>,
    id: &str,
) -> Result<Value, String> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        while let Some(end) = find(&buf, b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            let data: String = String::from_utf8_lossy(&event)
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect::<Vec<_>>()
                .join("\n");
            let Ok(msg) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            if msg.get("method").is_some() && msg.get("id").is_some() {
                return Err(format!(
                    "the tool asked a question mid-call ({}); questions are not passed on from run_code: call it directly",
                    msg["method"].as_str().unwrap_or("a request")
                ));
            }
            if msg.get("id").and_then(Value::as_str) == Some(id) {
                return Ok(msg);
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    // One event is a message: past the body limit it is not one we read.
                    if buf.len() > 16 * 1024 * 1024 {
                        return Err("the call's answer is too large".into());
                    }
                }
            }
            _ => return Err("the call's stream ended without its answer".into()),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_resolves_to_structured_content_else_content_else_throws() {
        let ok = json!({"result": {"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": 3}}});
        assert_eq!(resolved(ok).unwrap(), json!({"sum": 3}));
        let plain = json!({"result": {"content": [{"type": "text", "text": "hi"}]}});
        assert_eq!(resolved(plain).unwrap(), json!([{"type": "text", "text": "hi"}]));
        let failed = json!({"result": {"isError": true, "content": [{"type": "text", "text": "bad input"}]}});
        assert_eq!(resolved(failed).unwrap_err(), "bad input");
        let unknown = json!({"error": {"code": -32602, "message": "Unknown tool: \"x\""}});
        assert_eq!(resolved(unknown).unwrap_err(), "Unknown tool: \"x\"");
    }

    #[test]
    fn runs_at_once_are_bounded_per_owner_and_given_back() {
        let a = Slot::take("code-test-owner", 2).unwrap();
        let b = Slot::take("code-test-owner", 2).unwrap();
        assert!(Slot::take("code-test-owner", 2).is_none());
        assert!(Slot::take("code-test-other", 2).is_some());
        drop(a);
        let c = Slot::take("code-test-owner", 2);
        assert!(c.is_some());
        drop((b, c));
    }

    #[tokio::test]
    async fn a_question_in_a_stream_fails_the_call_and_the_answer_is_found_by_id() {
        let stream = |s: &str| Full::new(Bytes::from(s.to_string())).boxed();
        let body =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r:1\",\"result\":{\"content\":[]}}\n\n";
        let m = answer_in_stream(stream(body), "r:1").await.unwrap();
        assert_eq!(m["result"], json!({"content": []}));
        let asks =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n";
        let e = answer_in_stream(stream(asks), "r:1").await.unwrap_err();
        assert!(e.contains("elicitation/create"), "{e}");
        let e = answer_in_stream(stream("event: message\ndata: {}\n\n"), "r:1")
            .await
            .unwrap_err();
        assert!(e.contains("ended without its answer"), "{e}");
    }
}
