//! The Cloudflare Worker: a thin shell that hands `/mcp` requests to the core's Streamable HTTP
//! rules (`mcp_sieve::http`) and answers with what comes back. The demo page and the package
//! are static assets served by the platform before this code runs.

use std::cell::RefCell;
use std::time::Duration;

use mcp_sieve::http::{self, MemoryStore};
use mcp_sieve::protocol::{Env as CoreEnv, Server};
use mcp_sieve::Catalog;
use wasm_bindgen::JsCast;
use worker::{event, Context, Date, Delay, Env, Request, Response, ResponseBuilder, Result};

/// The embedded default catalog.
const DEFAULT_CATALOG: &str = include_str!("../../catalog/default.json");
/// Longest a `tasks/result` waits in one request.
const MAX_WAIT_MS: i64 = 30_000;

thread_local! {
    static SERVER: RefCell<Option<std::result::Result<Server, String>>> = const { RefCell::new(None) };
    /// Sessions held in this isolate's memory.
    static SESSIONS: RefCell<MemoryStore> = RefCell::new(MemoryStore::default());
}

/// The catalog document: the `MCP_SIEVE_CONFIG` variable when set, else the embedded default.
fn load_server(env: &Env) -> std::result::Result<Server, String> {
    let text = env.var("MCP_SIEVE_CONFIG").map(|v| v.to_string()).ok();
    let text = text.as_deref().unwrap_or(DEFAULT_CATALOG);
    Catalog::from_json_str(text).map(Server::new).map_err(|e| e.to_string())
}

fn with_server<T>(env: &Env, f: impl FnOnce(&Server) -> T) -> std::result::Result<T, String> {
    SERVER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let server = slot.get_or_insert_with(|| load_server(env));
        server.as_ref().map(f).map_err(Clone::clone)
    })
}

/// A random id from the platform's `crypto.randomUUID()`.
fn fresh_id() -> String {
    let global = js_sys::global();
    js_sys::Reflect::get(&global, &"crypto".into())
        .and_then(|c| {
            let f: js_sys::Function = js_sys::Reflect::get(&c, &"randomUUID".into())?.dyn_into()?;
            f.call0(&c)
        })
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| format!("{:x}", (js_sys::Math::random() * 1e16) as u64))
}

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    if req.path() != "/mcp" {
        return Response::error("Not found: MCP is served at /mcp, the demo page at /", 404);
    }
    let method = req.method().to_string();
    let body = if method == "POST" {
        req.bytes().await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let headers = req.headers().clone();
    let header = move |name: &str| headers.get(name).ok().flatten();
    let cfg = http::Config::default();
    let id = fresh_id();
    let started = Date::now().as_millis() as i64;
    loop {
        let core_env = CoreEnv {
            now_ms: Date::now().as_millis() as i64,
            principal: None,
            fresh_id: id.clone(),
        };
        let request = http::Request {
            method: &method,
            header: &header,
            body: &body,
        };
        let answer = with_server(&env, |server| {
            SESSIONS.with(|s| http::handle(server, &cfg, request, &mut *s.borrow_mut(), &core_env))
        });
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return Response::error(format!("invalid catalog: {e}"), 500),
        };
        match answer.retry_at {
            Some(at) if at - started <= MAX_WAIT_MS => {
                let wait = (at - core_env.now_ms).clamp(1, MAX_WAIT_MS) as u64;
                Delay::from(Duration::from_millis(wait)).await;
            }
            _ => return respond(answer),
        }
    }
}

fn respond(a: http::Response) -> Result<Response> {
    let mut b = ResponseBuilder::new().with_status(if a.status == 0 { 500 } else { a.status });
    for (k, v) in &a.headers {
        b = b.with_header(k, v)?;
    }
    Ok(if a.body.is_empty() {
        b.empty()
    } else {
        b.fixed(a.body.into_bytes())
    })
}
