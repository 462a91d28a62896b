//! Code mode's runs in the native servers (issue 62), `serve`'s and `stdio`'s alike: a
//! `tools/call` of `run_code` through a code-mode view runs its program in QuickJS ([`sandbox`])
//! on a thread of its own, and each tool call the program makes comes back here as a `tools/call`
//! of `call_tool` ([`request`]) that the server it runs in — its [`Host`] — serves as the caller's
//! own request (`serve`: through `serve::handle` with the run's headers; `stdio`: as a line of
//! its one client): the view, filter, concerns, policy, pins, rate limits, audit (its record
//! marked `"via": "run_code"` with the run's id: [`Via`]) and trace span (a child of the run's)
//! apply to it as to a direct call, so a tool hidden from the caller is unknown inside a program.
//! The thread and the async side meet over channels: a call answers the program a promise, and
//! the host serves up to [`MAX_CALLS_AT_ONCE`] of a run's calls at once (a `Promise.all`'s
//! overlap), each answer settling its promise as it comes. A run ends at its wall time, memory,
//! calls or answer bound, when its client goes away (its request's future is dropped: [`Cancel`]), or when its client cancels it
//! (`notifications/cancelled`, where the host registers the run: [`Stop`]).

pub(crate) mod sandbox;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use mcp_sieve::filter::EndpointView;
use mcp_sieve::protocol::code::{self, RUN};
use mcp_sieve::protocol::jsonrpc::{self, Head};
use serde_json::{json, Value};

/// Most programs running in this process at once, whoever runs them (each is a thread with up
/// to `code.memoryMb` of engine memory).
const MAX_RUNS: usize = 16;
/// Most of one run's calls served at once; its further calls wait their turn (in the order made).
const MAX_CALLS_AT_ONCE: usize = 8;

/// A request made by a program's run (its id): the audit record of its use says so.
#[derive(Clone, Debug)]
pub(crate) struct Via(pub String);

/// Why a program's tool call failed: what the program's `await` throws (its message).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// The run ended before the call could be handed over.
    #[error("the run has ended")]
    Ended,
    /// The host dropped the call (the tool's name).
    #[error("the call of {0} got no answer")]
    NoAnswer(String),
    /// The run's wall time ended during the call (the tool's name).
    #[error("the run's time ran out while {0} was called")]
    OutOfTime(String),
    /// The answer is a JSON-RPC error (its `message`, else the whole error).
    #[error("{0}")]
    Rpc(String),
    /// The answer has neither `result` nor `error` (the answer).
    #[error("the call got no result: {0}")]
    NoResult(Value),
    /// The tool asked a question mid-call (its method, or `input_required`), which is not passed
    /// on from a program.
    #[error(
        "the tool asked a question mid-call ({0}); questions are not passed on from run_code here: call it directly"
    )]
    Question(String),
    /// A tool error (`isError`) without text.
    #[error("the tool failed")]
    ToolFailed,
    /// A tool error (`isError`): its text contents, one a line.
    #[error("{0}")]
    Tool(String),
    /// The HTTP request of the call could not be built.
    #[error("the call of {name} could not be made: {source}")]
    Request {
        /// The tool.
        name: String,
        /// Why.
        #[source]
        source: hyper::http::Error,
    },
    /// The server answered the call with a body that is not a JSON-RPC message.
    #[error("the call of {name} was refused (HTTP {status}): {body}")]
    Refused {
        /// The tool.
        name: String,
        /// The HTTP status.
        status: u16,
        /// The body's first 300 bytes.
        body: String,
    },
    /// The call's event stream grew past what one message may be.
    #[error("the call's answer is too large")]
    TooLarge,
    /// The call's event stream ended before its answer.
    #[error("the call's stream ended without its answer")]
    StreamEnded,
    /// The call's answer line is not JSON.
    #[error("the call of {name} got an answer that is not JSON: {source}")]
    NotJson {
        /// The tool.
        name: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
}

/// A boxed future a [`Host`] answers with.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What code mode needs of the server a program runs in: a program's call served as its
/// caller's own request. `serve` and `stdio` each implement it; everything else is here.
pub(crate) trait Host: Send + Sync {
    /// Serves `call` — a JSON-RPC `tools/call` of `call_tool` made by run `run` ([`request`]) —
    /// as the caller's own request is served (its view, limits and audit, marked [`Via`] `run`;
    /// its span a child of the run's): the JSON-RPC message that answers it, or why none came.
    fn serve<'a>(&'a self, run: &'a str, call: Value) -> BoxFuture<'a, Result<Value, CallError>>;
}

/// Fires when the run's client cancels it (`notifications/cancelled` of its request, registered
/// by the host in `relay::cancels`); the run then makes no further call, and answers that it was
/// cancelled.
pub(crate) type Stop = tokio::sync::oneshot::Receiver<()>;

/// What a run cancelled by its client answers (as the Worker's does).
const CANCELLED: &str = "the run was cancelled by its client (notifications/cancelled)";

/// A `run_code` call: its JSON-RPC id, its `code` argument as sent, and its `params._meta`.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    pub id: Value,
    pub program: Value,
    /// The request's `params._meta` (a 2026-07-28 request's protocol version travels there, and
    /// each of the program's calls carries it too).
    pub meta: Option<Value>,
}

/// The `run_code` call a message of `head` (whose bytes are `body`) makes through `view`, or
/// `None` when it is not one (another message, or a view not in code mode).
pub(crate) fn asked(head: &Head, view: Option<&Arc<EndpointView>>, body: &[u8]) -> Option<Asked> {
    if !view.is_some_and(|v| v.code) || head.method() != Some("tools/call") || head.params.name.as_deref() != Some(RUN)
    {
        return None;
    }
    Some(Asked {
        id: head.id.clone(),
        program: head.params.arguments.get("code").cloned().unwrap_or(Value::Null),
        meta: serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|m| m["params"].get("_meta").cloned()),
    })
}

/// The answer to the `run_code` request `asked` whose core answer is `checked` (its body; `sse`
/// when it is an event stream): `None` to keep that answer (the core refused the request), else
/// that answer with the run's result in place of the core's refusal to run it
/// ([`code::NOT_RUN_HERE`]). `owner` is who runs it, for the runs-at-once limit; `stop`, when
/// given, cancels it.
pub(crate) async fn answer(
    host: &dyn Host,
    owner: &str,
    checked: &str,
    sse: bool,
    asked: Asked,
    limits: &code::Limits,
    stop: Option<Stop>,
) -> Option<String> {
    if !checked.contains(code::NOT_RUN_HERE) {
        return None;
    }
    let message = match code::program(&asked.program) {
        Ok(program) => {
            let result = run(host, owner, asked.meta.as_ref(), program, limits, stop).await;
            code::finished(&asked.id, asked.meta.as_ref(), result)
        }
        Err(e) => jsonrpc::error(&asked.id, &e),
    };
    Some(code::splice(checked, sse, &message))
}

/// The JSON-RPC result of running `program` under `limits`, its calls served by `host` with
/// `meta` (the run's `params._meta`): `{structuredContent: {result, logs}}`, or an error result
/// saying which limit stopped it, or that `stop` fired.
pub(crate) async fn run(
    host: &dyn Host,
    owner: &str,
    meta: Option<&Value>,
    program: &str,
    limits: &code::Limits,
    stop: Option<Stop>,
) -> Value {
    let Some(_slot) = Slot::take(owner, limits.max_concurrent_runs as usize) else {
        return code::answer(
            None,
            Vec::new(),
            Some(format!(
                "too many programs at once: a caller may run {} (code.maxConcurrentRuns), this server {MAX_RUNS}; \
                 wait for one to end",
                limits.max_concurrent_runs
            )),
        );
    };
    let run_id = match crate::platform::fresh_id() {
        Ok(id) => id,
        Err(e) => return code::answer(None, Vec::new(), Some(e.to_string())),
    };
    let program = program.to_string();
    let limits = sandbox::Limits::from(limits);
    let cancel = Cancel(Arc::new(AtomicBool::new(false)));
    let deadline = Instant::now() + limits.wall;
    // Unbounded: a run makes at most code.maxCalls.
    let (calls_tx, mut calls_rx) = tokio::sync::mpsc::unbounded_channel::<Called>();
    let (answers_tx, answers) = std::sync::mpsc::channel();
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<sandbox::Ran>();
    let flag = cancel.0.clone();
    let started = Instant::now();
    let spawned = std::thread::Builder::new()
        .name("run_code".into())
        .stack_size(sandbox::THREAD_STACK_BYTES)
        .spawn(move || {
            let send = Box::new(move |n, name: &str, args| {
                let name = name.to_string();
                calls_tx.send(Called { n, name, args }).map_err(|_| CallError::Ended)
            });
            let ran = sandbox::run(&program, limits, flag, sandbox::Calls { send, answers });
            let _ = done_tx.send(ran);
        });
    if let Err(e) = spawned {
        return code::answer(
            None,
            Vec::new(),
            Some(format!("cannot start the program's thread: {e}")),
        );
    }
    let (mut open, mut stopped) = (true, false);
    // The client's cancel; without one, a future that never fires.
    let mut stop: BoxFuture<'static, ()> = match stop {
        Some(rx) => Box::pin(async move {
            if rx.await.is_err() {
                std::future::pending::<()>().await
            }
        }),
        None => Box::pin(std::future::pending()),
    };
    // The calls being served; dropped (with the requests they made) when the run is cancelled
    // or over.
    let mut serving = futures_util::stream::FuturesUnordered::new();
    // The engine stops itself at the deadline; this bound only guards against one that did not.
    let last = tokio::time::Instant::from_std(deadline + Duration::from_secs(5));
    let ran = loop {
        tokio::select! {
            ran = &mut done_rx => break ran.ok(),
            _ = tokio::time::sleep_until(last) => break None,
            _ = &mut stop, if !stopped => {
                // The engine stops at its next interruption check or wait; no call is served after.
                stopped = true;
                cancel.0.store(true, Ordering::Relaxed);
                serving.clear();
            }
            called = calls_rx.recv(), if open && !stopped && serving.len() < MAX_CALLS_AT_ONCE => {
                let Some(Called { n, name, args }) = called else {
                    open = false; // the program's thread is done
                    continue;
                };
                let left = deadline.saturating_duration_since(Instant::now());
                let message = request(&run_id, n.into(), &name, args, meta);
                let run_id = &run_id;
                serving.push(async move {
                    let answer = match tokio::time::timeout(left, host.serve(run_id, message)).await {
                        Ok(Ok(message)) => resolved(message),
                        Ok(Err(why)) => Err(why),
                        Err(_) => Err(CallError::OutOfTime(name)),
                    };
                    (n, answer)
                });
            }
            Some(answered) = futures_util::StreamExt::next(&mut serving), if !serving.is_empty() => {
                let _ = answers_tx.send(answered);
            }
        }
    };
    drop(serving);
    drop(cancel);
    let Some(ran) = ran else {
        return code::answer(
            None,
            Vec::new(),
            Some("the program's thread ended without an answer".into()),
        );
    };
    tracing::info!(
        run = %run_id,
        calls = ran.calls,
        ms = started.elapsed().as_millis() as u64,
        ok = ran.result.is_ok(),
        "run_code ended"
    );
    let mut answer = match ran.result {
        _ if stopped => code::answer(None, ran.logs, Some(CANCELLED.into())),
        Ok(v) => code::answer(Some(v), ran.logs, None),
        Err(e) => code::answer(None, ran.logs, Some(e.to_string())),
    };
    answer["_meta"] = json!({"dev.mcp-sieve/run": {"id": run_id, "calls": ran.calls}});
    answer
}

/// The `n`th call of run `run` (tool `name` with `args`) as its caller's JSON-RPC request: a
/// `tools/call` of `call_tool` with the run's `_meta` (without its progress token: the run's
/// progress is not the call's) and the id `run_code:<run>:<n>`.
pub(crate) fn request(run: &str, n: u64, name: &str, args: Value, meta: Option<&Value>) -> Value {
    let mut params = json!({"name": mcp_sieve::protocol::search::CALL, "arguments": {"name": name, "arguments": args}});
    if let Some(meta) = meta {
        let mut meta = meta.clone();
        if let Some(m) = meta.as_object_mut() {
            m.remove("progressToken");
        }
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": format!("run_code:{run}:{n}"), "method": "tools/call", "params": params})
}

/// A program's tool call (its number in the run), handed over by the program's thread.
struct Called {
    n: u32,
    name: String,
    args: Value,
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

/// What the JSON-RPC answer to a program's call resolves to in the program: the tool's
/// `structuredContent`, else its `content`; a JSON-RPC error, a tool error or a question the
/// tool asks (a 2026-07-28 `input_required` result, which only the caller's own call could
/// answer) is `Err`.
fn resolved(message: Value) -> Result<Value, CallError> {
    if let Some(e) = message.get("error") {
        return Err(CallError::Rpc(
            e["message"].as_str().map_or_else(|| e.to_string(), str::to_string),
        ));
    }
    let Some(result) = message.get("result") else {
        return Err(CallError::NoResult(message));
    };
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Err(CallError::Question("input_required".into()));
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<&str> = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect();
        return Err(if text.is_empty() {
            CallError::ToolFailed
        } else {
            CallError::Tool(text.join("\n"))
        });
    }
    Ok(match result.get("structuredContent") {
        Some(s) if !s.is_null() => s.clone(),
        _ => result.get("content").cloned().unwrap_or(Value::Null),
    })
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
        assert_eq!(resolved(failed).unwrap_err().to_string(), "bad input");
        let unknown = json!({"error": {"code": -32602, "message": "Unknown tool: \"x\""}});
        assert_eq!(resolved(unknown).unwrap_err().to_string(), "Unknown tool: \"x\"");
        let asks = json!({"result": {"resultType": "input_required", "inputRequests": {}}});
        assert_eq!(
            resolved(asks).unwrap_err().to_string(),
            "the tool asked a question mid-call (input_required); questions are not passed on from run_code here: call it directly"
        );
        let silent = json!({"result": {"isError": true, "content": []}});
        assert_eq!(resolved(silent).unwrap_err().to_string(), "the tool failed");
        assert_eq!(
            resolved(json!({"id": 1})).unwrap_err().to_string(),
            "the call got no result: {\"id\":1}"
        );
    }

    #[test]
    fn a_call_is_the_callers_call_tool_with_the_runs_meta_but_not_its_progress() {
        let meta = json!({"progressToken": 7, "io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let r = request("abc", 2, "add", json!({"a": 1}), Some(&meta));
        assert_eq!(r["id"], "run_code:abc:2");
        assert_eq!(r["params"]["name"], "call_tool");
        assert_eq!(r["params"]["arguments"], json!({"name": "add", "arguments": {"a": 1}}));
        assert_eq!(
            r["params"]["_meta"],
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})
        );
        assert!(request("abc", 1, "add", json!({}), None)["params"]
            .get("_meta")
            .is_none());
    }

    /// Answers every call, counting them.
    struct Counting(std::sync::atomic::AtomicU64);

    impl Host for Counting {
        fn serve<'a>(&'a self, _run: &'a str, call: Value) -> BoxFuture<'a, Result<Value, CallError>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { Ok(json!({"id": call["id"], "result": {"structuredContent": {"ok": true}}})) })
        }
    }

    #[tokio::test]
    async fn a_stopped_run_makes_no_further_call_and_says_it_was_cancelled() {
        let host = Counting(Default::default());
        let limits = code::Limits {
            timeout_seconds: 20,
            max_calls: 10_000,
            ..Default::default()
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let program = "for (;;) { await tools.add({}); const t = Date.now(); while (Date.now() - t < 5) {} }";
        let running = run(&host, "code-test-stop", None, program, &limits, Some(rx));
        let stopping = async {
            while host.0.load(Ordering::SeqCst) < 3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tx.send(()).unwrap();
        };
        let (answer, ()) = tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(running, stopping) })
            .await
            .expect("the run ended at its stop, not at its wall time");
        assert_eq!(answer["structuredContent"]["error"], CANCELLED, "{answer}");
        let made = host.0.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(host.0.load(Ordering::SeqCst), made, "no call after the run ended");
        assert!(Slot::take("code-test-stop", 1).is_some(), "its place is given back");
    }

    /// Answers each call once three are being served at once.
    struct Meeting(tokio::sync::Barrier);

    impl Host for Meeting {
        fn serve<'a>(&'a self, _run: &'a str, call: Value) -> BoxFuture<'a, Result<Value, CallError>> {
            Box::pin(async move {
                self.0.wait().await;
                let n = call["id"]
                    .as_str()
                    .and_then(|id| id.rsplit(':').next())
                    .unwrap_or_default();
                Ok(json!({"id": call["id"], "result": {"structuredContent": {"n": n}}}))
            })
        }
    }

    #[tokio::test]
    async fn a_promise_alls_calls_are_served_at_once() {
        let host = Meeting(tokio::sync::Barrier::new(3));
        let limits = code::Limits {
            timeout_seconds: 5,
            ..Default::default()
        };
        let program = "return (await Promise.all([tools.a({}), tools.b({}), tools.c({})])).map((r) => r.n)";
        let answer = run(&host, "code-test-overlap", None, program, &limits, None).await;
        assert_eq!(
            answer["structuredContent"]["result"],
            json!(["1", "2", "3"]),
            "{answer}"
        );
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
}
