//! The transport's gatekeeping as pure functions: `Origin` allow-list (DNS-rebinding protection),
//! bearer-token authentication compared by keyed digest in constant time, CORS for browser hosts, the body-size
//! limit before the body is read; and [`serve`], the whole transport behind that gate. The options
//! these read are `config.rs`'s. Nothing here logs: tokens and bodies never leave these functions.

use serde_json::Value;

use super::config::{origin_allowed, Config};
use super::exchange::{json_response, Request, Response};
use super::handle::handle_parsed;
use super::session_id::same_secret;
use super::store::SessionStore;
use crate::error::Error;
use crate::protocol::jsonrpc::{self, Incoming};
use crate::protocol::{Env, Server};

/// Request headers a browser host may send cross-origin.
pub const CORS_ALLOW_HEADERS: &str =
    "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID";
/// Methods of the endpoint.
pub const CORS_ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// Response headers a browser host may read.
pub const CORS_EXPOSE_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate";

/// Whether an `Authorization` header satisfies `token` (`None`: no authentication configured).
pub fn authorized(authorization: Option<&str>, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    let given = authorization
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, t)| t.trim());
    // Compare even when absent, so a missing header costs the same as a wrong one.
    same_secret(given, token) && !given.is_empty()
}

/// Who a request is (see `MCP_SIEVE_TOKENS`): `Ok(Some(principal))` for a principal's token,
/// `Ok(None)` for the anonymous `MCP_SIEVE_TOKEN` or when no token is configured, `Err(())` when
/// tokens are configured and the request carries none of them. Every token is compared (by
/// keyed digest), so the time does not say which one matched.
#[allow(clippy::result_unit_err)]
pub fn identify(cfg: &Config, authorization: Option<&str>) -> Result<Option<String>, ()> {
    if cfg.bearer_token.is_none() && cfg.tokens.is_empty() {
        return Ok(None);
    }
    let mut found = Err(());
    if authorized(authorization, cfg.bearer_token.as_deref()) && cfg.bearer_token.is_some() {
        found = Ok(None);
    }
    for (principal, token) in &cfg.tokens {
        if authorized(authorization, Some(token)) && found.is_err() {
            found = Ok(Some(principal.clone()));
        }
    }
    found
}

/// The answer of a server whose transport options are invalid, to a caller that could not be
/// authenticated: HTTP 500 with no detail (the shell logs it).
pub fn misconfigured_privately() -> Response {
    let e = Error::Internal("the server configuration is invalid; its log names the problem".into());
    json_response(500, jsonrpc::error(&Value::Null, &e))
}

/// The answer of a server whose configuration is invalid: HTTP 500 with a JSON-RPC `-32603`
/// error whose message names the bad field. Every request gets it; nothing is half served.
pub fn misconfigured(detail: &Error) -> Response {
    let e = Error::Internal(format!("the server configuration is invalid: {detail}"));
    json_response(500, jsonrpc::error(&Value::Null, &e))
}

/// The answer to a request the platform could not complete (say, its session object crashed):
/// 500 with a JSON-RPC internal error. The shell logs the cause; the client is told to retry.
pub fn failed() -> Response {
    let e =
        Error::Internal("the request failed inside the server and was not completed; it was logged, retry it".into());
    json_response(500, jsonrpc::error(&Value::Null, &e))
}

/// CORS headers for a response to `origin` (none when CORS is off, no `Origin` was sent, or the
/// origin is not allowed).
pub fn cors_headers(cfg: &Config, origin: Option<&str>) -> Vec<(String, String)> {
    match origin {
        Some(o) if cfg.cors && origin_allowed(o, cfg) => vec![
            ("Access-Control-Allow-Origin".into(), o.into()),
            ("Access-Control-Expose-Headers".into(), CORS_EXPOSE_HEADERS.into()),
            ("Vary".into(), "Origin".into()),
        ],
        _ => Vec::new(),
    }
}

/// The body length a `Content-Length` header declares (`None`: absent or not a number).
pub fn declared_length(header: Option<String>) -> Option<u64> {
    header.and_then(|l| l.trim().parse::<u64>().ok())
}

/// What must be answered before the request reaches the protocol (and before a shell reads the
/// body or touches session storage): `None` lets it through. Checks, in order: `Origin` (403),
/// CORS preflight (`OPTIONS`, 204), bearer token (401 with `WWW-Authenticate: Bearer`), and a
/// declared `Content-Length` over the limit (413).
pub fn gate(cfg: &Config, req: &Request<'_>) -> Option<Response> {
    let h = req.header;
    let origin = h("origin");
    if let Some(o) = &origin {
        if !origin_allowed(o, cfg) {
            let e = Error::InvalidRequest(format!(
                "Origin \"{o}\" is not allowed; allowed are loopback origins and those configured"
            ));
            return Some(json_response(403, jsonrpc::error(&Value::Null, &e)));
        }
    }
    if req.method == "OPTIONS" {
        let mut r = Response {
            status: 204,
            ..Default::default()
        };
        if cfg.cors && origin.is_some() {
            r.headers = cors_headers(cfg, origin.as_deref());
            r.headers
                .push(("Access-Control-Allow-Methods".into(), CORS_ALLOW_METHODS.into()));
            r.headers
                .push(("Access-Control-Allow-Headers".into(), CORS_ALLOW_HEADERS.into()));
            r.headers.push(("Access-Control-Max-Age".into(), "600".into()));
        } else {
            r.headers.push(("Allow".into(), CORS_ALLOW_METHODS.into()));
        }
        return Some(r);
    }
    let refuse = |mut r: Response| {
        r.headers.extend(cors_headers(cfg, origin.as_deref()));
        Some(r)
    };
    #[cfg(feature = "auth")]
    let tokens_here = cfg.auth.is_none();
    #[cfg(not(feature = "auth"))]
    let tokens_here = true;
    if tokens_here && identify(cfg, h("authorization").as_deref()).is_err() {
        let e = Error::InvalidRequest("authentication required: send Authorization: Bearer <token>".into());
        let mut r = json_response(401, jsonrpc::error(&Value::Null, &e));
        r.headers.push((
            "WWW-Authenticate".into(),
            "Bearer realm=\"mcp-sieve\", error=\"invalid_token\"".into(),
        ));
        return refuse(r);
    }
    if declared_length(h("content-length")).is_some_and(|n| n > cfg.limits.max_body as u64) {
        return refuse(too_large(cfg.limits.max_body));
    }
    None
}

/// HTTP 413 for a body over `limit` bytes (declared, or counted while it is read).
pub fn too_large(limit: usize) -> Response {
    let e = Error::InvalidRequest(format!(
        "body is larger than {limit} bytes (MCP_SIEVE_MAX_BODY); send a smaller request"
    ));
    json_response(413, jsonrpc::error(&Value::Null, &e))
}

/// The whole transport: [`gate`], then the Streamable HTTP rules
/// ([`handle`](crate::http::handle)), then CORS headers.
pub fn serve(server: &Server, cfg: &Config, req: Request<'_>, store: &mut dyn SessionStore, env: &Env) -> Response {
    if let Some(r) = gate(cfg, &req) {
        return r;
    }
    serve_gated(server, cfg, req, None, store, env)
}

/// [`serve`] of a request that passed [`gate`] already (a shell gates it before it reads the
/// body; the gate's asks are not made twice), its body perhaps parsed by the shell (`parsed`:
/// what `jsonrpc::parse` gave for `req.body` with `cfg.limits`; `None`: parsed here), so it is
/// not parsed twice.
pub fn serve_gated(
    server: &Server,
    cfg: &Config,
    req: Request<'_>,
    parsed: Option<Incoming>,
    store: &mut dyn SessionStore,
    env: &Env,
) -> Response {
    let mut r = handle_parsed(server, cfg, req, parsed, store, env);
    if r.retry_at.is_none() {
        r.headers.extend(cors_headers(cfg, (req.header)("origin").as_deref()));
    }
    r
}
