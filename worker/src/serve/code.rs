//! Code mode's runs in the Worker (issue 62): a `tools/call` of `run_code` through a code-mode
//! view goes the way of every request (gate, authentication, view, rate limits, session object,
//! the core), and when the core's answer is its refusal to run a valid program
//! ([`code::NOT_RUN_HERE`]) the program runs here instead — in a Dynamic Worker through the Worker
//! Loader binding, by worker/code/run.mjs (reached as `globalThis.__sieve_run_code`, which
//! entry.mjs sets). Each call the program makes comes back as a request of the same caller through
//! this Worker's `fetch`, with the run's id in the environment it is served with ([`RUN_KEY`]):
//! [`via`] reads it there (no request can set it), so the call's audit record is marked
//! `"via": "run_code"` with the run's id, in the front Worker or, over [`RUN_HEADER`], which the
//! front always sets itself, in the session's object. A client's `notifications/cancelled` of a
//! run's request goes to its owner's count of runs ([`cancel`]; worker/code/runs.mjs), which
//! tells the isolate running it to end it; the request's signal goes to the runner too.

use mcp_sieve::filter::EndpointView;
use mcp_sieve::protocol::{code, jsonrpc};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Env, Response, ResponseBuilder, Result};

/// The environment key carrying the run's id into the requests its program makes
/// (worker/code/run.mjs `RUN_KEY`).
pub const RUN_KEY: &str = "MCP_SIEVE_RUN";
/// The header carrying it from the front Worker to a session's object (a client's is replaced).
pub const RUN_HEADER: &str = "x-mcp-sieve-run";
/// The function entry.mjs sets: worker/code/run.mjs `runCode` over this Worker's own `fetch`.
const RUNNER: &str = "__sieve_run_code";
/// The function entry.mjs sets: worker/code/runs.mjs `cancel`.
const CANCELLER: &str = "__sieve_cancel_run";

/// Why a program could not be run or its run's answer read, or a cancel not told.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// entry.mjs set no function under this name (a build that is not this one's).
    #[error("the program could not be run: entry.mjs did not set {0}")]
    NoRunner(&'static str),
    /// The runner threw or its promise was rejected (the JS error's text).
    #[error("the program could not be run: {0}")]
    Runner(String),
    /// The runner's promise resolved something other than text.
    #[error("the program could not be run: the code runner answered no text")]
    NoText,
    /// The runner's text is not the answer worker/code/run.mjs writes.
    #[error("the run's answer could not be read: {0}")]
    Answer(#[source] serde_json::Error),
    /// The value the program returned, as the runner gave it, is not JSON.
    #[error("the program returned a value that is not JSON ({0})")]
    NotJson(#[source] serde_json::Error),
    /// A cancel's ask could not be written, or the count of runs could not be told.
    #[error("the cancel of a run could not be told: {0}")]
    Cancel(String),
}

/// A thrown JS value's text: an `Error`'s message, a string, else its debug form.
fn js_text(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// The function entry.mjs set under `name`.
fn entry_fn(name: &'static str) -> std::result::Result<js_sys::Function, RunError> {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or(RunError::NoRunner(name))
}

/// The run whose program made this request, if one did.
pub fn via(env: &Env) -> Option<String> {
    js_sys::Reflect::get(env, &JsValue::from_str(RUN_KEY))
        .ok()
        .and_then(|v| v.as_string())
}

/// A `run_code` call a request makes through a code-mode view: its JSON-RPC id, its `code`
/// argument and its `_meta`.
pub struct Asked {
    id: Value,
    code: Value,
    meta: Option<Value>,
}

/// The `run_code` call `body` makes (`method`: its method as peeked) through `view`, or `None`
/// when it is not one (another message, or a view not in code mode).
pub fn asked(method: Option<&str>, body: &[u8], view: Option<&EndpointView>) -> Option<Asked> {
    if !view.is_some_and(|v| v.code) || method != Some("tools/call") {
        return None;
    }
    let message: Value = serde_json::from_slice(body).ok()?;
    let params = message.get("params")?;
    if params.get("name").and_then(Value::as_str) != Some(code::RUN) {
        return None;
    }
    Some(Asked {
        id: message.get("id").cloned().unwrap_or(Value::Null),
        code: params
            .get("arguments")
            .and_then(|a| a.get("code"))
            .cloned()
            .unwrap_or(Value::Null),
        meta: params.get("_meta").cloned(),
    })
}

/// The request id a client's `notifications/cancelled` (`method`, `body`) through a code-mode
/// `view` cancels: its `params.requestId`, or `None` when it is not one.
pub fn cancelled(method: Option<&str>, body: &[u8], view: Option<&EndpointView>) -> Option<Value> {
    if !view.is_some_and(|v| v.code) || method != Some("notifications/cancelled") {
        return None;
    }
    let mut message: Value = serde_json::from_slice(body).ok()?;
    message
        .get_mut("params")?
        .get_mut("requestId")
        .map(Value::take)
        .filter(|id| id.is_string() || id.is_number())
}

/// Tells `owner`'s count of runs that the request `request` of `session` (if any) is cancelled:
/// its run ends, in whichever isolate it runs (worker/code/runs.mjs `cancel`). How many it ended.
pub async fn cancel(
    env: &Env,
    owner: &str,
    session: Option<&str>,
    request: Value,
) -> std::result::Result<u64, RunError> {
    let ask = json!({"owner": owner, "session": session, "request": request}).to_string();
    let promise: js_sys::Promise = entry_fn(CANCELLER)?
        .call2(&JsValue::UNDEFINED, &JsValue::from_str(&ask), env)
        .and_then(|p| p.dyn_into())
        .map_err(|e| RunError::Cancel(js_text(&e)))?;
    let ended = JsFuture::from(promise)
        .await
        .map_err(|e| RunError::Cancel(js_text(&e)))?;
    Ok(ended.as_f64().unwrap_or(0.0) as u64)
}

/// Who a run belongs to, for the runs-at-once limit: the principal, else the session (anonymous
/// stateless callers share one count).
pub fn owner(principal: Option<&str>, session: Option<&str>) -> String {
    match (principal, session) {
        (Some(p), _) => format!("principal:{p}"),
        (None, Some(s)) => format!("session:{s}"),
        (None, None) => String::new(),
    }
}

/// What a run is made of besides its request: the caller's limits and owner, the request's URL
/// and headers (the program's calls are sent with them), the platform's env and context.
pub struct Origin {
    /// The document's `code` block.
    pub limits: code::Limits,
    /// Who the run belongs to ([`owner`]).
    pub owner: String,
    /// The request's session, if any (with its JSON-RPC id, what a client's cancel names).
    pub session: Option<String>,
    /// The request's signal, which ends the run when aborted: when its client goes away, if the
    /// Worker runs with the `enable_request_signal` compatibility flag (not on: docs/src/code-mode.md).
    pub signal: web_sys::AbortSignal,
    /// The `run_code` request's URL (its view's path and query).
    pub url: String,
    /// Its headers (the token, the session, the view headers, the protocol version).
    pub headers: web_sys::Headers,
    /// The platform's env (the Worker Loader binding; each call is served with it).
    pub env: Env,
    /// The request's context (as JS: it is only handed to the runner).
    pub ctx: JsValue,
}

/// The answer to `asked` whose core answer is `checked`: that answer itself unless the core found
/// the request valid (it then refuses only to run it: [`code::NOT_RUN_HERE`]); else the run's
/// result in its place, as JSON or as the SSE event the core wrote.
pub async fn answer(mut checked: Response, asked: Asked, origin: Origin) -> Result<Response> {
    let status = checked.status_code();
    let headers = checked.headers().clone();
    let body = checked.text().await?;
    let again = |body: String| {
        ResponseBuilder::new()
            .with_status(status)
            .with_headers(headers.clone())
            .fixed(body.into_bytes())
    };
    if !body.contains(code::NOT_RUN_HERE) {
        return Ok(again(body));
    }
    let message = match code::program(&asked.code) {
        Err(e) => jsonrpc::error(&asked.id, &e),
        Ok(program) => code::finished(&asked.id, asked.meta.as_ref(), run(program, &asked, &origin).await),
    };
    let sse = headers
        .get("content-type")
        .ok()
        .flatten()
        .is_some_and(|t| t.starts_with("text/event-stream"));
    Ok(again(code::splice(&body, sse, &message)))
}

/// What worker/code/run.mjs answers of a run.
#[derive(serde::Deserialize)]
struct Ran {
    /// The returned value as JSON text.
    result: Option<String>,
    error: Option<String>,
    #[serde(default)]
    logs: Vec<String>,
    #[serde(default)]
    calls: u64,
    run: Option<String>,
}

/// The result of `run_code` with `program`: `{structuredContent: {result, logs}}` and the run's
/// id and calls in `_meta`, or an error result saying why it has no answer.
async fn run(program: &str, asked: &Asked, origin: &Origin) -> Value {
    let l = origin.limits;
    let ask = json!({
        "program": program,
        "meta": asked.meta,
        "owner": origin.owner,
        "session": origin.session,
        "request": asked.id,
        "url": origin.url,
        "limits": {
            "timeoutSeconds": l.timeout_seconds,
            "memoryMb": l.memory_mb,
            "maxCalls": l.max_calls,
            "maxAnswerBytes": l.max_answer_bytes,
            "maxConcurrentRuns": l.max_concurrent_runs,
        },
    });
    let ran = started(&ask.to_string(), origin)
        .await
        .and_then(|text| serde_json::from_str::<Ran>(&text).map_err(RunError::Answer));
    let ran = match ran {
        Ok(r) => r,
        Err(e) => return code::answer(None, Vec::new(), Some(e.to_string())),
    };
    // The program's own error is its run's data (worker/code/run.mjs wrote it), not ours.
    let result = match (&ran.result, ran.error) {
        (_, Some(e)) => Err(e),
        (Some(text), None) => serde_json::from_str(text).map_err(|e| RunError::NotJson(e).to_string()),
        (None, None) => Ok(Value::Null),
    };
    let mut answer = match result {
        Ok(v) => code::answer(Some(v), ran.logs, None),
        Err(e) => code::answer(None, ran.logs, Some(e)),
    };
    if let Some(id) = ran.run {
        answer["_meta"] = json!({"dev.mcp-sieve/run": {"id": id, "calls": ran.calls}});
    }
    answer
}

/// Calls the runner entry.mjs set with `ask` (JSON text), the request's headers, env, context and
/// signal; its answer's JSON text.
async fn started(ask: &str, origin: &Origin) -> std::result::Result<String, RunError> {
    let args = js_sys::Array::of5(
        &JsValue::from_str(ask),
        &origin.headers,
        &origin.env,
        &origin.ctx,
        &origin.signal,
    );
    let promise: js_sys::Promise = entry_fn(RUNNER)?
        .apply(&JsValue::UNDEFINED, &args)
        .and_then(|p| p.dyn_into())
        .map_err(|e| RunError::Runner(js_text(&e)))?;
    JsFuture::from(promise)
        .await
        .map_err(|e| RunError::Runner(js_text(&e)))?
        .as_string()
        .ok_or(RunError::NoText)
}
