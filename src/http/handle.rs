//! A request through the Streamable HTTP rules: method, `Content-Type`, `Accept`, the body's
//! size and JSON-RPC shape, the protocol version (2025-11-25 sessions or 2026-07-28 stateless
//! requests), the session, then the protocol server; its outcome becomes the status, headers and
//! body (JSON or SSE), or the effect a shell carries out (a forward, a watch, a question).

use super::config::{origin_allowed, Config};
use super::exchange::{logged, plain, rpc_error, sse_body, sse_headers, Request, Response};
use super::modern::{check_modern, check_search_call};
use super::sessions;
use super::store::SessionStore;
use crate::error::Error;
use crate::protocol::jsonrpc::{self, Incoming};
use crate::protocol::{is_supported_version, Env, Server, LEGACY_VERSIONS, MODERN_VERSION};

/// Handles one HTTP request to the MCP endpoint.
pub fn handle(server: &Server, cfg: &Config, req: Request<'_>, store: &mut dyn SessionStore, env: &Env) -> Response {
    handle_parsed(server, cfg, req, None, store, env)
}

/// [`handle`] of a body a shell already parsed (`parsed`: what `jsonrpc::parse` gave for
/// `req.body` with `cfg.limits`; `None`: parsed here), so it is not parsed twice. The answer is
/// the same either way.
pub(crate) fn handle_parsed(
    server: &Server,
    cfg: &Config,
    req: Request<'_>,
    parsed: Option<Incoming>,
    store: &mut dyn SessionStore,
    env: &Env,
) -> Response {
    let h = req.header;
    if let Some(origin) = h("origin") {
        if !origin_allowed(&origin, cfg) {
            return plain(403, &format!("Origin \"{origin}\" is not allowed"));
        }
    }
    let session_id = h("mcp-session-id");
    match req.method {
        "POST" => {}
        "GET" => return sessions::open_stream(server, cfg, session_id, store, env, h("accept")),
        "DELETE" => return sessions::end(cfg, session_id, store, env),
        _ => {
            let mut r = plain(
                405,
                "this endpoint accepts POST, GET (a session's stream of list changes) and DELETE (to end a session)",
            );
            r.headers.push(("Allow".into(), "GET, POST, DELETE".into()));
            return r;
        }
    }
    let ctype = h("content-type").unwrap_or_default();
    if !ctype.to_ascii_lowercase().starts_with("application/json") {
        return plain(415, "Content-Type must be application/json");
    }
    let accept = h("accept").unwrap_or_default().to_ascii_lowercase();
    let (json_ok, sse_ok) = (
        accept.contains("application/json") || accept.contains("*/*") || accept.is_empty(),
        accept.contains("text/event-stream"),
    );
    if !json_ok && !sse_ok {
        return plain(406, "Accept must include application/json and text/event-stream");
    }
    if req.body.len() > cfg.limits.max_body {
        return plain(413, &format!("body is larger than {} bytes", cfg.limits.max_body));
    }
    let msg = match parsed.map_or_else(|| jsonrpc::parse(req.body, &cfg.limits), Ok) {
        Ok(m) => m,
        Err(rejected) => return rpc_error(400, &rejected.0, &rejected.1),
    };
    let header_version = h("mcp-protocol-version");
    let meta = msg.meta();
    let meta_version = crate::json::member(meta, "io.modelcontextprotocol/protocolVersion").as_str();
    let stateless = meta_version.is_some() || header_version.as_deref() == Some(MODERN_VERSION);
    if stateless {
        if let Err(e) = check_modern(
            &msg,
            header_version.as_deref(),
            meta_version,
            h("mcp-method").as_deref(),
            h("mcp-name").as_deref(),
        )
        .and_then(|()| {
            let searching = env.view.as_ref().is_some_and(|v| v.search);
            check_search_call(&msg, searching, h("mcp-param-tool").as_deref())
        }) {
            return rpc_error(400, msg.request_id(), &e);
        }
    } else if let Some(v) = &header_version {
        if !is_supported_version(v) {
            return plain(
                400,
                &format!(
                    "unsupported MCP-Protocol-Version \"{v}\"; supported: {MODERN_VERSION}, {}",
                    LEGACY_VERSIONS.join(", ")
                ),
            );
        }
    }
    let is_init = msg.method() == Some("initialize");
    let mut session = match sessions::find(server, cfg, &session_id, &msg, stateless, store, env) {
        Ok(s) => s,
        Err(refusal) => return *refusal,
    };
    let is_request = matches!(msg, Incoming::Request { .. });
    // A session's task of this server's own counts in `options.maxTasks` (admitted first).
    #[cfg(feature = "gateway")]
    let own = match sessions::admit_own(server, &msg, session.as_ref(), store, env) {
        Ok(slot) => slot,
        Err(e) => return rpc_error(200, msg.request_id(), &e),
    };
    #[cfg(feature = "gateway")]
    let cancelled = match msg.method() {
        Some("tasks/cancel") => msg.params()["taskId"].as_str().map(str::to_string),
        _ => None,
    };
    let mut out = server.handle(msg, &mut session, env);
    let log = std::mem::take(&mut out.log);
    if let Some(s) = session.as_mut() {
        if env.now_ms.saturating_sub(s.last_seen_ms) >= cfg.touch_every_ms() {
            s.last_seen_ms = env.now_ms;
            out.session_changed = true;
        }
    }
    if out.retry_at.is_some() {
        return logged(
            log,
            Response {
                retry_at: out.retry_at,
                ..Default::default()
            },
        );
    }
    let mut headers = Vec::new();
    if let Some(s) = &session {
        if out.session_changed {
            store.save(s);
        }
        #[cfg(feature = "gateway")]
        sessions::settle_own(own, cancelled.as_deref(), s, store, env.now_ms);
        if is_init {
            headers.push(("Mcp-Session-Id".to_string(), s.id.clone()));
        }
    }
    if !is_request {
        return logged(
            log,
            Response {
                status: 202,
                headers,
                answered: out.answered,
                ..Default::default()
            },
        );
    }
    if let Some(ask) = out.ask {
        if !sse_ok {
            let e = Error::InvalidRequest(format!(
                "tool \"{}\" asks the client mid-call over an SSE stream: Accept must include text/event-stream",
                ask.tool
            ));
            return logged(log, rpc_error(200, &ask.call_id, &e));
        }
        headers.extend(sse_headers());
        let mut events = out.notifications;
        events.push(ask.request.clone());
        return logged(
            log,
            Response {
                status: 200,
                headers,
                body: sse_body(&events, None),
                ask: Some(ask),
                ..Default::default()
            },
        );
    }
    if let Some(watch) = out.watch {
        headers.extend(sse_headers());
        return logged(
            log,
            Response {
                status: 200,
                headers,
                body: sse_body(&out.notifications, None),
                watch: Some(watch),
                ..Default::default()
            },
        );
    }
    if let Some(mut forward) = out.forward {
        forward.sse = sse_ok;
        if let Err(e) = admit(&mut forward, server, store, env.now_ms) {
            return logged(log, rpc_error(200, &forward.id, &e));
        }
        return logged(
            log,
            Response {
                status: 200,
                headers,
                forward: Some(forward),
                ..Default::default()
            },
        );
    }
    // 2026-07-28: an unknown method is also HTTP 404; a missing client capability, 400.
    let status = match out.error_code.filter(|_| stateless) {
        Some(crate::error::code::METHOD_NOT_FOUND) => 404,
        Some(crate::error::code::MISSING_REQUIRED_CLIENT_CAPABILITY) => 400,
        _ => 200,
    };
    let response = out.response.unwrap_or_default();
    if sse_ok && (!out.notifications.is_empty() || !json_ok) {
        let body = sse_body(&out.notifications, Some(&response));
        headers.extend(sse_headers());
        return logged(
            log,
            Response {
                status,
                headers,
                body,
                ..Default::default()
            },
        );
    }
    headers.push(("Content-Type".into(), "application/json".into()));
    logged(
        log,
        Response {
            status,
            headers,
            body: response,
            ..Default::default()
        },
    )
}

/// Admits `forward` in the server's task budget before it leaves, over HTTP and stdio alike: a
/// gateway task counts against it with this server's own (`options.maxTasks`); beyond it the
/// call is refused (`Err`), or sent without declaring the tasks extension when it only may be a
/// task. The Worker's session objects keep no budget (they admit every task): its shell asks the
/// budget's own object.
pub fn admit(
    forward: &mut crate::protocol::Forward,
    server: &Server,
    store: &mut dyn SessionStore,
    now_ms: i64,
) -> Result<(), Error> {
    #[cfg(feature = "gateway")]
    if let Some(a) = forward.admit.clone() {
        let budget = crate::protocol::gateway_budget(server);
        if let Err(e) = store.budget(crate::protocol::BudgetStep::Admit(a.entry), budget, now_ms) {
            forward.over_budget(e)?;
        }
    }
    let _ = (forward, server, store, now_ms);
    Ok(())
}
