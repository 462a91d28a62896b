//! The Cloudflare Worker: a thin shell around the core. `/mcp` requests pass the transport's
//! gate (Origin, CORS preflight, bearer token, body limit), then go to the Durable Object of
//! their session (`Mcp-Session-Id`, or a freshly minted id for `initialize`), or are answered
//! here when they need no session (stateless 2026-07-28 requests). The demo page and the package
//! are static assets served by the platform before this code runs.

mod auth;
mod config;
mod oauth;
mod operate;
mod platform;
mod relay;
mod search;
mod serve;
mod sessions;
mod telemetry;
mod upstream;

use mcp_sieve::http;
use mcp_sieve::protocol::{self, jsonrpc, BudgetStep};
use worker::{event, Context, Env, Headers, Method, Request, RequestInit, Response, Result};

pub use oauth::upstream_tokens::UpstreamTokens;
pub use operate::limiter::RateLimiter;
pub use serve::ledger::TaskLedger;
pub use sessions::SessionObject;

use oauth::sign_in;
use operate::limiter;
use serve::{code, ledger, shell, watch};
use telemetry::log;
use upstream::gateway;

/// The Durable Object namespace binding of sessions.
const SESSIONS: &str = "SESSIONS";

// The platform's request as it comes: `worker::Request` would read its `cf` object and parse its
// URL on every request, which the profile showed as a tenth of the isolate's time.
#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> Result<Response> {
    let url = req.url();
    let (path, query) = shell::path_and_query(&url);
    if path.starts_with(mcp_sieve::auth::WELL_KNOWN) {
        // Protected Resource Metadata (RFC 9728), public.
        let loaded = config::load(&env).await;
        if let Some(r) = loaded
            .transport
            .as_ref()
            .ok()
            .and_then(|c| http::metadata(c, &req.method(), path))
        {
            return shell::respond(r);
        }
    }
    if sign_in::is_route(path) {
        return sign_in_routes(&req, &env, &url, path, query).await;
    }
    let status = path == mcp_sieve::upstream::STATUS_PATH;
    if !status && !shell::is_endpoint(path) {
        return Response::error("Not found: MCP is served at /mcp, the demo page at /", 404);
    }
    let loaded = config::load(&env).await;
    operate::bind(&env);
    let cfg = match &loaded.transport {
        Ok(c) => c,
        // Without valid transport options no caller can be authenticated: the detail goes to
        // the log, not to whoever asks.
        Err(e) => {
            log::error(format_args!("invalid transport configuration: {e}"));
            return shell::respond(http::misconfigured_privately());
        }
    };
    let method = req.method();
    let headers = req.headers();
    let header = shell::header_fn(&headers);
    let head_only = http::Request {
        method: &method,
        header: &header,
        body: &[],
    };
    if let Some(refusal) = http::gate(cfg, &head_only) {
        return shell::respond(refusal);
    }
    // A catalog error is shown only to callers that passed the gate.
    let server = match &loaded.server {
        Ok(s) => s,
        Err(e) => return shell::respond(http::misconfigured(e)),
    };
    // The caller's principal and the endpoint's view (`/mcp/{view}`, a URL query, `X-MCP-*`
    // headers): a malformed or closed view is refused here.
    let who = match auth::authenticate(cfg, &header).await {
        Ok(c) => c,
        Err(refusal) => return shell::respond(*refusal),
    };
    // The sign-in URLs that errors give are on this origin.
    let public_origin = sign_in::origin_of(&url);
    sign_in::set_origin(&public_origin);
    if status {
        // The upstreams' state as this isolate knows it (behind the same gate as /mcp).
        return shell::respond(gateway::status(server, &method, who.principal.as_deref()).await);
    }
    let identity = cfg.auth.as_ref().map(|_| auth::encode(&who));
    let mut caller = match shell::caller_of(server, &url, &header, who) {
        Ok(c) => c,
        Err(refusal) => return shell::respond(*refusal),
    };
    // A call a code-mode program makes: the run's id is in the env it is served with (which no
    // request can set).
    caller.via = code::via(&env);
    let body = if method == "POST" {
        // Counted while read: a body without Content-Length (chunked) is refused at the limit.
        match shell::read_body(&req, header("content-length"), cfg.limits.max_body).await {
            Ok(b) => b,
            Err(refusal) => return shell::respond(refusal),
        }
    } else {
        Vec::new()
    };
    // Rate limits (their Durable Objects) before anything of the use runs.
    if !server.limits().is_empty() {
        let served = match gateway::serving_for(server, caller.principal.as_deref()).await {
            Ok(g) => g,
            Err(e) => return shell::respond(mcp_sieve::upstream::unavailable(&e)),
        };
        let served = served.as_deref().unwrap_or(server);
        if let Some(u) = served.use_of(&body, &operate::core_env(&caller)) {
            if let Some((r, refusal)) = limiter::check(&env, &ctx, served, &u).await {
                let seen = operate::seen(served, &body, &caller);
                operate::finish(served, &caller, seen, &refusal, Some(&r.reason()));
                return shell::respond(refusal);
            }
        }
    }
    // Routed by the method the core will read (the same parser: a repeated key is the last one).
    let peeked = jsonrpc::peek(&body);
    let is_init = peeked.as_ref().is_some_and(|(m, _)| m == "initialize");
    // A program to run (code mode) once the core has checked its request, wherever it is checked.
    let asked = code::asked(peeked.as_ref().map(|(m, _)| m.as_str()), &body, caller.view.as_deref());
    let origin = |limits: &mcp_sieve::protocol::code::Limits| code::Origin {
        limits: *limits,
        owner: code::owner(caller.principal.as_deref(), header("mcp-session-id").as_deref()),
        session: header("mcp-session-id"),
        signal: req.signal(),
        url: url.clone(),
        headers: headers.clone(),
        env: env.clone(),
        ctx: wasm_bindgen::JsValue::from(ctx.as_ref()),
    };
    let session = header("mcp-session-id").filter(|id| !id.is_empty());
    if session
        .as_deref()
        .is_some_and(|id| id.len() > sessions::MAX_SESSION_ID || !cfg.session_id_valid(id))
    {
        // Not an id this server minted: no Durable Object is asked about it.
        return Response::error("unknown or expired session; initialize a new one", 404);
    }
    // A client's cancel of a run: the run ends wherever it runs (the notification itself is then
    // answered as any other). After the session check: no object is asked for a session not ours.
    if let Some(request) = code::cancelled(peeked.as_ref().map(|(m, _)| m.as_str()), &body, caller.view.as_deref()) {
        let session = header("mcp-session-id");
        let owner = code::owner(caller.principal.as_deref(), session.as_deref());
        if let Err(e) = code::cancel(&env, &owner, session.as_deref(), request).await {
            log::About::of(caller.principal.as_deref(), caller.view_label(), &body).error(e);
        }
    }
    let fresh = platform::fresh_id();
    // A 2026-07-28 task lives in a Durable Object named after its id (its "holder"); in a
    // gateway, the upstream tasks of one principal in one named after the principal.
    let holder = match (&session, &peeked, server.is_gateway()) {
        (None, Some((method, params)), false) => protocol::task_holder(server, method, params, &fresh),
        (None, Some((method, params)), true) => {
            protocol::gateway_holder(method, params, caller.principal.as_deref()).map(|h| (h, false))
        }
        _ => None,
    };
    // The task budget first (its own Durable Object): a task beyond it is never created. A
    // 2025-11-25 session's task of this server's own counts too (capped by the total only), under
    // a slot named by the session and the id minted here, which its object is then given.
    let now = platform::now_ms();
    let (step, session_task) = match (&holder, &session, &peeked, server.is_gateway()) {
        (Some(h), _, Some((method, params)), false) => (
            protocol::budget_step(method, params, h, caller.principal.as_deref(), now),
            false,
        ),
        (None, Some(id), Some((method, params)), _) => {
            let owner = (id.as_str(), caller.principal.as_deref());
            let entry = protocol::session_task_entry(server, method, params, owner, &fresh, now);
            let admits = entry.is_some();
            (entry.map(BudgetStep::Admit), admits)
        }
        _ => (None, false),
    };
    if let Some(step) = step {
        if let Some(refusal) = ledger::ask(&env, server, step, session_task, &body).await? {
            return shell::respond(refusal);
        }
    }
    let (name, minted) = match (is_init, session, holder) {
        // An initialize inside a session reaches that session, which refuses it.
        (_, Some(id), _) => (id, session_task.then(|| fresh.clone())),
        (true, None, _) => {
            let id = cfg.session_id(&fresh);
            (id.clone(), Some(id))
        }
        (false, None, Some((holder, created))) => (holder, created.then(|| fresh.clone())),
        (false, None, None) => {
            let principal = caller.principal.clone();
            // The answer to a question a relayed call's upstream asked: to the object (of this
            // caller) where its exchange waits.
            let waiting = peeked
                .as_ref()
                .filter(|_| server.is_gateway())
                .and_then(|(m, p)| mcp_sieve::upstream::waiting_for(m, p, principal.as_deref()));
            match waiting {
                Some(name) => (name, None),
                None => {
                    let request = http::Request {
                        method: &method,
                        header: &header,
                        body: &body,
                    };
                    // Stateless: no Durable Object; a request that needs a session is refused by
                    // the core.
                    let mut store = http::MemoryStore::default();
                    let answer = shell::run(server, cfg, request, &mut store, fresh.clone(), &caller, true).await;
                    if !shell::relayable(server, &answer) {
                        let answered = watch::respond(answer, loaded.clone())?;
                        return match asked {
                            Some(asked) => code::answer(answered, asked, origin(&server.catalog().code)).await,
                            None => Ok(answered),
                        };
                    }
                    // Its client may be asked: the call runs in an object of its own (`relay`),
                    // where the exchange can wait for it to call again.
                    (
                        mcp_sieve::upstream::waiting_name(&fresh, principal.as_deref()),
                        Some(fresh.clone()),
                    )
                }
            }
        }
    };
    let forwarded = web_sys::Headers::new_with_headers(&headers)?;
    forwarded.delete(sessions::MINTED_ID_HEADER)?;
    // Who the caller is, as verified here: the object trusts this header, so a client's is dropped.
    forwarded.delete(auth::IDENTITY_HEADER)?;
    if let Some(who) = &identity {
        forwarded.set(auth::IDENTITY_HEADER, who)?;
    }
    if let Some(id) = &minted {
        forwarded.set(sessions::MINTED_ID_HEADER, id)?;
    }
    // The run whose program makes this call, as known here: the object trusts this header too.
    forwarded.delete(code::RUN_HEADER)?;
    if let Some(run) = &caller.via {
        forwarded.set(code::RUN_HEADER, run)?;
    }
    forwarded.set(sign_in::ORIGIN_HEADER, &public_origin)?;
    let mut init = RequestInit::new();
    init.with_method(Method::from(method.clone()))
        .with_headers(Headers(forwarded));
    if !body.is_empty() {
        init.with_body(Some(js_sys::Uint8Array::from(body.as_slice()).into()));
    }
    // The object sees the same path and query, so it serves the same view.
    let target = match query {
        "" => format!("https://session.internal{path}"),
        q => format!("https://session.internal{path}?{q}"),
    };
    let inner = Request::new_with_init(&target, &init)?;
    let answer = env
        .durable_object(SESSIONS)?
        .get_by_name(&name)?
        .fetch_with_request(inner)
        .await;
    // A session object that failed (a panic, a storage outage) is logged without content; the
    // client gets a JSON-RPC error, and the object starts afresh from its storage next time.
    let answered = answer.or_else(|e| {
        log::About::of(caller.principal.as_deref(), caller.view_label(), &body)
            .error(format_args!("a session object failed: {e}"));
        shell::respond(http::failed())
    })?;
    match asked {
        Some(asked) => code::answer(answered, asked, origin(&server.catalog().code)).await,
        None => Ok(answered),
    }
}

/// The sign-in routes (`oauth::sign_in`): the start and the sign-out, behind the same gate and
/// authentication as `/mcp`;
/// the callback, reached by the browser coming back from the authorization server (its `state`
/// is the credential).
async fn sign_in_routes(req: &web_sys::Request, env: &Env, url: &str, path: &str, query: &str) -> Result<Response> {
    if path == sign_in::CALLBACK {
        return sign_in::callback(env, url, query).await;
    }
    let loaded = config::load(env).await;
    let (cfg, server) = match (&loaded.transport, &loaded.server) {
        (Ok(c), Ok(s)) => (c, s),
        _ => return shell::respond(http::misconfigured_privately()),
    };
    let method = req.method();
    let headers = req.headers();
    let header = shell::header_fn(&headers);
    if let Some(refusal) = sign_in::gate(cfg, &method, &header) {
        return shell::respond(refusal);
    }
    let who = match auth::authenticate(cfg, &header).await {
        Ok(c) => c,
        Err(refusal) => return shell::respond(*refusal),
    };
    if path == sign_in::LOGOUT {
        return sign_in::logout(env, server, who.principal.as_deref(), query).await;
    }
    sign_in::start(env, server, who.principal.as_deref(), url, query).await
}
