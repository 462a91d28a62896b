//! The fast path of a stateless request: a POST with a `Content-Length` and no session, whose
//! URL, headers and body `entry.mjs` has read, answered in one synchronous call. It costs no
//! futures, no per-request entrypoint object and no guard timer (a trap in a synchronous call is
//! thrown to its caller, which answers it). In gateway mode it answers lists from the upstream's
//! cached lists while they are fresh, and a use of an upstream's item (`tools/call`, …) with the
//! upstream's POST sent by `entry.mjs` (`fast/forward.rs`) while no refresh or retry is due. What this
//! path does not take — before the configuration is loaded or when the catalog document in KV is
//! due to be read again (`config`), a method that may wait, stream or ask the client, in gateway
//! mode a refresh or a retry that is due, an audited use, a use under rate limits in gateway mode
//! or without a token this isolate holds on lease (`operate::limiter`), a body that is not a JSON-RPC
//! request — returns `undefined`, and `entry.mjs` hands the request, with its body, to the full
//! path (`fetch` in lib.rs), which answers every request alike.

pub mod forward;
pub mod splice;

use mcp_sieve::http;
use mcp_sieve::protocol::code;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::config;
use crate::operate::limiter;
use crate::serve::shell;
use crate::telemetry::log;
use crate::upstream::gateway;

/// The largest body the fast path takes (the configured body limit), or 0 while it takes none
/// (before the configuration is loaded, or when it is invalid).
#[wasm_bindgen]
pub fn sieve_fast_limit() -> f64 {
    match config::loaded().as_deref() {
        // With `auth`, tokens are verified asynchronously (WebCrypto, key fetches): no fast path.
        Some(config::Config {
            transport: Ok(cfg),
            server: Ok(_),
        }) if cfg.auth.is_none() => cfg.limits.max_body as f64,
        _ => 0.0,
    }
}

/// Loads this isolate's configuration for the fast path, on its first POST (`entry.mjs`), and
/// gives [`sieve_fast_limit`]: without it an isolate's first request took the full path (`fetch`
/// in lib.rs) only to load the configuration, and V8, which compiles a wasm function on its first
/// call, compiled that path's code (its futures, the gate's authentication, the gateway's,
/// search's and operate's steps: about a quarter of the bytes the first `tools/list` compiled)
/// before the answer. What the full path keeps for the isolate besides the configuration is kept
/// here too: the analytics dataset, and in gateway mode the public origin (sign-in URLs).
#[wasm_bindgen]
pub async fn sieve_fast_prepare(env: JsValue, url: String) -> f64 {
    let env: worker::Env = env.unchecked_into();
    let loaded = config::load(&env).await;
    crate::operate::bind(&env);
    if loaded.server.as_ref().is_ok_and(|s| s.is_gateway()) {
        crate::oauth::sign_in::set_origin(&crate::oauth::sign_in::origin_of(&url));
    }
    sieve_fast_limit()
}

/// Builds the server at the module's load (`entry.mjs`, global scope): [`config::preload`].
#[wasm_bindgen]
pub fn sieve_preload(env: JsValue) {
    config::preload(&env.unchecked_into());
}

/// The caller a static token names (this path is not taken when the catalog has `auth`).
fn static_caller(cfg: &http::Config, header: &dyn Fn(&str) -> Option<String>) -> http::Caller {
    match http::who(cfg, header) {
        http::Who::Known(c) => c,
        _ => http::Caller::default(),
    }
}

/// Methods the fast path answers: those whose answer is complete at once (no session to open,
/// no task, no stream, no question to the client), and that mint no id (so none is drawn).
fn is_fast(method: &str) -> bool {
    !matches!(method, "initialize" | "tools/call" | "subscriptions/listen") && !method.starts_with("tasks/")
}

/// Methods a gateway answers from its cached lists alone (a use of an item is forwarded).
fn is_listing(method: &str) -> bool {
    method.ends_with("/list") || matches!(method, "ping" | "server/discover")
}

/// The answer to a stateless POST to `url` whose headers are `head` (`name\nvalue\n` each, as
/// the platform's `Headers` iterate: names in lower case, repeated values joined) and whose body is
/// `body`, or `undefined` for the full path. The headers come as one string: a lookup through the
/// platform's `Headers` costs a crossing and two string copies each, and a request needs a dozen.
/// In gateway mode a use of an upstream's item is answered by `forward::start`: the response, the
/// upstream POST for `entry.mjs` to send (a string), or a promise of the response.
#[wasm_bindgen]
pub fn sieve_fast(url: &str, head: &str, body: &[u8]) -> JsValue {
    fast(url, head, body).unwrap_or(JsValue::UNDEFINED)
}

fn fast(url: &str, head: &str, body: &[u8]) -> Option<JsValue> {
    // A look at the catalog document in KV is due: the full path looks (it awaits the read).
    if config::check_due() {
        return None;
    }
    let loaded = config::loaded()?;
    let (Ok(cfg), Ok(server)) = (&loaded.transport, &loaded.server) else {
        return None;
    };
    let (path, _) = shell::path_and_query(url);
    if !shell::is_endpoint(path) || cfg.auth.is_some() {
        return None;
    }
    let (method, relays) = forward::peek(body)?;
    // A use audited, or under rate limits in gateway mode: the full path. Under rate limits
    // otherwise it stays here when this isolate holds leased tokens for it (`operate::limiter`).
    let is_use = matches!(method.as_str(), "tools/call" | "prompts/get" | "resources/read");
    let limited = is_use && !server.limits().is_empty();
    // A code-mode program runs on the full path (`serve::code`), after the core checked it.
    if is_use && body.windows(code::RUN.len()).any(|w| w == code::RUN.as_bytes()) {
        return None;
    }
    if is_use && (server.audit().on || (limited && server.is_gateway())) {
        return None;
    }
    let forwarding = server.is_gateway() && forward::is_use(&method);
    if forwarding && relays {
        // Its client may be asked, or it answers a question: the full path (a Durable Object).
        return None;
    }
    let cached = match (server.is_gateway(), forwarding) {
        (false, _) => None,
        (true, false) => Some(gateway::ready(server)?),
        (true, true) => Some(gateway::ready_to_forward(server)?),
    };
    let header = shell::head_fn(head);
    let taken = forwarding || (is_fast(&method) && (cached.is_none() || is_listing(&method)));
    if header("mcp-session-id").is_some() || !taken {
        return None;
    }
    let head_only = http::Request {
        method: "POST",
        header: &header,
        body: &[],
    };
    let answer = match http::gate(cfg, &head_only) {
        Some(refusal) => refusal,
        None => match shell::caller_of(server, url, &header, static_caller(cfg, &header)) {
            Err(refusal) => *refusal,
            Ok(caller) => {
                let request = http::Request { body, ..head_only };
                let mut store = http::MemoryStore::default();
                let served = cached.as_deref().unwrap_or(server);
                if limited {
                    let held = served
                        .use_of(body, &crate::operate::core_env(&caller))
                        .is_none_or(|u| limiter::spend_leased(served, &u));
                    if !held {
                        return None;
                    }
                }
                // No id is drawn: in gateway mode a stateless request without a session has no
                // task holder and no session, and only those mint one (a question to the client, a
                // task, a session: `initialize` is not on this path).
                shell::serve_now(served, cfg, request, &mut store, "", &caller)
            }
        },
    };
    if forwarding && answer.retry_at.is_none() {
        if let Some(server) = cached {
            return Some(forward::start(answer, server, loaded.clone(), body));
        }
    }
    let answer =
        if answer.retry_at.is_some() || answer.watch.is_some() || answer.ask.is_some() || answer.forward.is_some() {
            // `is_fast` keeps these methods off this path; an answer that still needs one is a bug.
            log::error("the fast path got an answer that needs the full path");
            http::failed()
        } else {
            answer
        };
    let response: web_sys::Response = shell::respond(answer).ok()?.into();
    if config::diagnostics() {
        // Tests tell the two paths apart by it (tests/e2e/fast-path.test.mjs).
        response.headers().set(shell::PATH_HEADER, "fast").ok()?;
    }
    Some(response.into())
}
