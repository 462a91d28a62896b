//! The fast path of a 2025-11-25 session's plain request — a list, `ping`, a notification: what
//! mints no task or session and cannot wait, stream or ask the client — POSTed with a
//! `Content-Length`: two synchronous calls and the one hop to the session's object. In the front,
//! `entry.mjs` hands [`sieve_fast_session`] the URL, headers and body it read; that checks the
//! request as the full path's front does (`fetch` in lib.rs) and names the session's object, and
//! `entry.mjs` sends the request there itself and answers with what comes back, untouched. In the
//! object, `entry.mjs` reads the body and calls [`SessionObject::sieve_fast`], which serves it from
//! the object's session in one pass of the transport, as the object's `fetch` does. Neither side
//! runs a Rust future, copies the request into a new `Request` or keeps a guard timer (a trap in
//! a synchronous call is thrown to `entry.mjs`, which answers it). In a profile of 4 sessions on
//! the full path (docs/src/performance.md), the front's Rust `fetch` was 28% of the isolate's busy
//! time, the two guards' timers 14%, and the core's own work in the object 2%.
//!
//! What this path does not take returns `undefined`, and the request goes the full way: no
//! configuration loaded yet or a look at the catalog document in KV due (`config`), the catalog's
//! `auth` (tokens verified asynchronously), gateway mode (its sessions relay upstream), a method
//! that may mint a task or session or wait (`initialize`, `tools/call`, `tasks/*`,
//! `subscriptions/listen`), a code-mode cancel, a use under rate limits, a header the front sets
//! for the object sent by the client, an empty session id, or a body that is not a JSON-RPC
//! request. The object serves on this path only what the front sent on it (its URL's host says
//! so), so a request takes one path or the other end to end.

use mcp_sieve::http;
use mcp_sieve::protocol::jsonrpc::Head;
use mcp_sieve::protocol::Server;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;
use worker::Response;

use super::{SessionObject, MAX_SESSION_ID, MINTED_ID_HEADER};
use crate::config::{self, Loaded};
use crate::serve::fast::forward;
use crate::serve::{code, ledger, shell, watch};
use crate::telemetry::log;
use crate::{auth, operate, platform};

/// The scheme and host of the object URL a request on this path is sent to (the full path's is
/// `https://session.internal`): the object serves only these synchronously.
const OBJECT_ORIGIN: &str = "https://fast.session.internal";

/// Headers the front sets for the object (the object trusts them): a request whose client sent
/// one takes the full path, which replaces or removes it.
const FRONT_HEADERS: [&str; 4] = [
    MINTED_ID_HEADER,
    auth::IDENTITY_HEADER,
    code::RUN_HEADER,
    crate::oauth::sign_in::ORIGIN_HEADER,
];

/// The configuration when this path may be taken: loaded and valid, no look at the catalog
/// document due, no `auth`, not a gateway.
fn plain() -> Option<Loaded> {
    if config::check_due() {
        return None;
    }
    let loaded = config::loaded()?;
    match (&loaded.transport, &loaded.server) {
        (Ok(cfg), Ok(server)) if cfg.auth.is_none() && !server.is_gateway() => Some(loaded),
        _ => None,
    }
}

/// Whether `body` is a request this path serves (read as the core reads it).
fn plain_method(server: &Server, body: &[u8]) -> bool {
    let Some((method, _)) = forward::peek(body) else {
        return false;
    };
    let m = method.as_str();
    let minting = matches!(m, "initialize" | "tools/call" | "subscriptions/listen") || m.starts_with("tasks/");
    // A use is checked against the rate limits in the front (their Durable Objects).
    let limited = matches!(m, "prompts/get" | "resources/read") && !server.limits().is_empty();
    !minting && !limited && m != "notifications/cancelled"
}

/// The caller a static token names (there is no `auth` on this path): as `auth::authenticate`.
fn static_caller(cfg: &http::Config, header: &dyn Fn(&str) -> Option<String>) -> http::Caller {
    match http::who(cfg, header) {
        http::Who::Known(c) => c,
        _ => http::Caller::default(),
    }
}

fn respond(answer: http::Response) -> JsValue {
    match shell::respond(answer) {
        Ok(r) => web_sys::Response::from(r).into(),
        Err(e) => {
            log::error(format_args!("an answer could not be built: {e}"));
            JsValue::UNDEFINED
        }
    }
}

/// The front's part for a session's POST to `url` with headers `head` (`name\nvalue\n` each) and
/// body `body`: the refusal to answer (a `Response`), the session's id and the object URL to send
/// the request to (`"{id}\n{url}"`, a string), or `undefined` for the full path.
#[wasm_bindgen]
pub fn sieve_fast_session(url: &str, head: &str, body: &[u8]) -> JsValue {
    front(url, head, body).unwrap_or(JsValue::UNDEFINED)
}

fn front(url: &str, head: &str, body: &[u8]) -> Option<JsValue> {
    let loaded = plain()?;
    let (Ok(cfg), Ok(server)) = (&loaded.transport, &loaded.server) else {
        return None;
    };
    let (path, query) = shell::path_and_query(url);
    if !shell::is_endpoint(path) || !plain_method(server, body) {
        return None;
    }
    let header = shell::head_fn(head);
    let id = header("mcp-session-id").filter(|id| !id.is_empty())?;
    if FRONT_HEADERS.iter().any(|h| header(h).is_some()) {
        return None;
    }
    // The full path's checks, in its order.
    let head_only = http::Request {
        method: "POST",
        header: &header,
        body: &[],
    };
    if let Some(refusal) = http::gate(cfg, &head_only) {
        return Some(respond(refusal));
    }
    if let Err(refusal) = shell::caller_of(server, url, &header, static_caller(cfg, &header)) {
        return Some(respond(*refusal));
    }
    if id.len() > MAX_SESSION_ID || !cfg.session_id_valid(&id) {
        // Not an id this server minted: no Durable Object is asked about it.
        let gone = Response::error("unknown or expired session; initialize a new one", 404).ok()?;
        return Some(web_sys::Response::from(gone).into());
    }
    Some(
        match query {
            "" => format!("{id}\n{OBJECT_ORIGIN}{path}"),
            q => format!("{id}\n{OBJECT_ORIGIN}{path}?{q}"),
        }
        .into(),
    )
}

/// The answer when the session's object could not be asked (`error`), logged as the full path
/// logs it.
#[wasm_bindgen]
pub fn sieve_fast_session_failed(url: &str, head: &str, body: &[u8], error: JsValue) -> JsValue {
    let header = shell::head_fn(head);
    let caller = plain().and_then(|loaded| {
        let (Ok(cfg), Ok(server)) = (&loaded.transport, &loaded.server) else {
            return None;
        };
        shell::caller_of(server, url, &header, static_caller(cfg, &header)).ok()
    });
    let (principal, view) = caller
        .as_ref()
        .map_or((None, None), |c| (c.principal.as_deref(), c.view_label()));
    let error = worker::Error::from(error);
    log::About::of(principal, view, body).error(format_args!("a session object failed: {error}"));
    respond(http::failed())
}

#[wasm_bindgen]
impl SessionObject {
    /// The object's part: the answer to a request the front sent on this path (a `Response`, or
    /// a promise of it when the session was written and its alarm is to be set, or the task
    /// ledger is to be told what the request changed), or `undefined` for the object's `fetch`.
    pub fn sieve_fast(&self, url: &str, head: &str, body: &[u8]) -> JsValue {
        self.fast(url, head, body).unwrap_or(JsValue::UNDEFINED)
    }
}

impl SessionObject {
    fn fast(&self, url: &str, head: &str, body: &[u8]) -> Option<JsValue> {
        if !url.starts_with(OBJECT_ORIGIN) {
            return None;
        }
        let loaded = plain()?;
        let (Ok(transport), Ok(server)) = (&loaded.transport, &loaded.server) else {
            return None;
        };
        let header = shell::head_fn(head);
        if !plain_method(server, body) || header(MINTED_ID_HEADER).is_some() || header(code::RUN_HEADER).is_some() {
            return None;
        }
        // The front checked the id's tag (this isolate may hold another random secret).
        let cfg = http::Config {
            session_secret: None,
            ..transport.clone()
        };
        let caller = match shell::caller_of(server, url, &header, static_caller(&cfg, &header)) {
            Ok(c) => c,
            Err(refusal) => return Some(respond(*refusal)),
        };
        // Only a method that may make a session, task or question reads the fresh id.
        let fresh = match Head::read(body).needs_fresh_id() {
            true => platform::fresh_id(),
            false => String::new(),
        };
        let request = http::Request {
            method: "POST",
            header: &header,
            body,
        };
        let mut store = self.store();
        // As `shell::run`, which has nothing to wait for here (no gateway, no query to encode, no
        // task): its record and counters, one pass of the transport.
        let seen = operate::seen(server, body, &caller);
        let mut answer = shell::serve_now(server, &cfg, request, &mut store, &fresh, &caller);
        if answer.retry_at.is_some() || answer.forward.is_some() {
            // `plain_method` keeps the methods that need these off this path.
            log::error("the session's fast path got an answer that needs the full path");
            answer = http::failed();
        }
        operate::finish(server, &caller, seen, &answer, None);
        let response: web_sys::Response = match watch::respond_in(answer, loaded.clone(), None) {
            Ok(r) => r.into(),
            Err(e) => {
                log::error(format_args!("an answer could not be built: {e}"));
                return Some(respond(http::failed()));
            }
        };
        if config::diagnostics() {
            // Tests tell the paths apart by it (tests/e2e/session-fast-path.test.mjs).
            response.headers().set(shell::PATH_HEADER, "fast-session").ok()?;
        }
        if !store.wrote && !ledger::pending() {
            return Some(response.into());
        }
        // Then, as the object's `fetch`: the ledger told, the alarm set, before the answer leaves.
        let (storage, idle_ms) = (self.state.storage(), cfg.idle_ms());
        let done = async move {
            if let Ok(server) = &loaded.server {
                ledger::flush(server).await;
            }
            if store.wrote {
                super::schedule(&storage, &store, idle_ms).await?;
            }
            Ok(JsValue::from(response))
        };
        Some(
            wasm_bindgen_futures::future_to_promise(
                async move { done.await.map_err(|e: worker::Error| JsValue::from(e)) },
            )
            .into(),
        )
    }
}
