//! Code mode's runs in the Worker (issue 62): a `tools/call` of `run_code` through a code-mode
//! view goes the way of every request (gate, authentication, view, rate limits, session object,
//! the core), and when the core's answer is its refusal to run a valid program
//! ([`code::NOT_RUN_HERE`]) the program runs here instead — in a Dynamic Worker through the Worker
//! Loader binding, by worker/code/run.mjs (reached as `globalThis.__sieve_run_code`, which
//! entry.mjs sets). Each call the program makes comes back as a request of the same caller through
//! this Worker's `fetch`, with the run's id in the environment it is served with ([`RUN_KEY`]):
//! [`via`] reads it there (no request can set it), so the call's audit record is marked
//! `"via": "run_code"` with the run's id, in the front Worker or, over [`RUN_HEADER`], which the
//! front always sets itself, in the session's object.

use mcp_sieve::filter::EndpointView;
use mcp_sieve::protocol::{code, jsonrpc};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Context, Env, Response, ResponseBuilder, Result};

/// The environment key carrying the run's id into the requests its program makes
/// (worker/code/run.mjs `RUN_KEY`).
pub const RUN_KEY: &str = "MCP_SIEVE_RUN";
/// The header carrying it from the front Worker to a session's object (a client's is replaced).
pub const RUN_HEADER: &str = "x-mcp-sieve-run";
/// The function entry.mjs sets: worker/code/run.mjs `runCode` over this Worker's own `fetch`.
const RUNNER: &str = "__sieve_run_code";

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
pub struct Origin<'a> {
    /// The document's `code` block.
    pub limits: &'a code::Limits,
    /// Who the run belongs to ([`owner`]).
    pub owner: String,
    /// The `run_code` request's URL (its view's path and query).
    pub url: &'a str,
    /// Its headers (the token, the session, the view headers, the protocol version).
    pub headers: &'a web_sys::Headers,
    /// The platform's env (the Worker Loader binding; each call is served with it).
    pub env: &'a Env,
    /// The request's context.
    pub ctx: &'a Context,
}

/// The answer to `asked` whose core answer is `checked`: that answer itself unless the core found
/// the request valid (it then refuses only to run it: [`code::NOT_RUN_HERE`]); else the run's
/// result in its place, as JSON or as the SSE event the core wrote.
pub async fn answer(mut checked: Response, asked: Asked, origin: Origin<'_>) -> Result<Response> {
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
        Ok(program) => jsonrpc::ok(&asked.id, &run(program, asked.meta, &origin).await),
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
async fn run(program: &str, meta: Option<Value>, origin: &Origin<'_>) -> Value {
    let l = origin.limits;
    let ask = json!({
        "program": program,
        "meta": meta,
        "owner": origin.owner,
        "url": origin.url,
        "limits": {
            "timeoutSeconds": l.timeout_seconds,
            "memoryMb": l.memory_mb,
            "maxCalls": l.max_calls,
            "maxAnswerBytes": l.max_answer_bytes,
            "maxConcurrentRuns": l.max_concurrent_runs,
        },
    });
    let ran = match started(&ask.to_string(), origin).await {
        Ok(text) => serde_json::from_str::<Ran>(&text).map_err(|e| format!("the run's answer could not be read: {e}")),
        Err(e) => Err(format!("the program could not be run: {e}")),
    };
    let ran = match ran {
        Ok(r) => r,
        Err(e) => return code::answer(None, Vec::new(), Some(e)),
    };
    let result = match (&ran.result, ran.error) {
        (_, Some(e)) => Err(e),
        (Some(text), None) => {
            serde_json::from_str(text).map_err(|e| format!("the program returned a value that is not JSON ({e})"))
        }
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

/// Calls the runner entry.mjs set with `ask` (JSON text), the request's headers, env and context;
/// its answer's JSON text.
async fn started(ask: &str, origin: &Origin<'_>) -> std::result::Result<String, String> {
    let runner: js_sys::Function = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str(RUNNER))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or("entry.mjs did not set the code runner")?;
    let args = js_sys::Array::of4(&JsValue::from_str(ask), origin.headers, origin.env, origin.ctx.as_ref());
    let promise: js_sys::Promise = runner
        .apply(&JsValue::UNDEFINED, &args)
        .and_then(|p| p.dyn_into())
        .map_err(|e| format!("{e:?}"))?;
    JsFuture::from(promise)
        .await
        .map_err(|e| format!("{e:?}"))?
        .as_string()
        .ok_or_else(|| "the code runner answered no text".into())
}
