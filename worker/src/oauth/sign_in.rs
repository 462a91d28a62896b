//! The front Worker's side of per-principal upstream sign-in: the routes `START` (authenticated
//! as the principal: redirects to the upstream's authorization server) and `CALLBACK` (where the
//! authorization server sends the browser back; its `state` names the principal's object and a
//! nonce that object holds), `LOGOUT` (authenticated: deletes the principal's tokens for one
//! upstream), [`widen`] (step-up: the scopes an upstream's 403 asked for, kept for the next
//! sign-in), and [`bearer`]: the `Authorization` header a principal's request
//! carries to an upstream, asked of that principal's `UpstreamTokens` object (which refreshes
//! it when due). A principal without a token gets [`sign_in_error`]: MCP's URL elicitation
//! error (`-32042`, 2025-11-25) with the sign-in URL on this Worker. [`gateway_bearer`]: the
//! gateway's own token for a `client_credentials` upstream, asked of the gateway's object.

use std::cell::RefCell;
use std::collections::HashMap;

use mcp_sieve::http;
use mcp_sieve::Error;
use serde_json::{json, Value};
use worker::{Env, Method, ObjectNamespace, Request, RequestInit, Response, Result, Url};

use crate::oauth::sealed;
pub use crate::oauth::upstream_tokens::CALLBACK;
use crate::oauth::upstream_tokens::{signing_upstream, Ask, AuthAsk, BINDING, GATEWAY};
use crate::telemetry::log;

/// The route that begins a sign-in: `?upstream=NAME`.
pub const START: &str = "/mcp-sieve/oauth/start";
/// The route that signs the caller out of an upstream (`GET` or `POST`): `?upstream=NAME`.
pub const LOGOUT: &str = "/mcp-sieve/oauth/logout";
/// MCP's error for "the user must open a URL first" (URL-mode elicitation, 2025-11-25).
pub const URL_ELICITATION_REQUIRED: i32 = -32042;
/// The header that carries this Worker's public origin from the front to a session's object.
pub const ORIGIN_HEADER: &str = "x-mcp-sieve-origin";

thread_local! {
    /// This Worker's public origin (`https://host`), as the requests it serves name it.
    static ORIGIN: RefCell<String> = const { RefCell::new(String::new()) };
    /// The gateway's own tokens this isolate was given ([`gateway_bearer`]), by upstream name.
    /// Everyone's requests carry them, so one isolate keeping them gives nobody anything.
    static GATEWAY_TOKENS: RefCell<HashMap<String, Held>> = RefCell::new(HashMap::new());
}

/// A gateway's token an isolate holds.
struct Held {
    /// The upstream's URL it was given for.
    url: String,
    /// The `Authorization` header.
    header: String,
    /// Until when it is used without asking the gateway's object again (ms; none: until the
    /// upstream refuses it).
    until: Option<i64>,
}

/// Remembers this Worker's public origin (for the sign-in URLs errors give).
pub fn set_origin(origin: &str) {
    if !origin.is_empty() {
        ORIGIN.with_borrow_mut(|o| {
            if o != origin {
                *o = origin.to_string();
            }
        });
    }
}

/// This Worker's public origin, once a request named it.
pub fn origin() -> String {
    ORIGIN.with_borrow(Clone::clone)
}

/// The origin (`scheme://host[:port]`) of a URL, as the URL Standard serializes it (the `url`
/// crate: scheme and host lowercased, userinfo and a default port dropped, IPv6 in brackets);
/// empty when it is not a URL with a host.
pub fn origin_of(url: &str) -> String {
    match Url::parse(url).map(|u| u.origin()) {
        Ok(o) if o.is_tuple() => o.ascii_serialization(),
        _ => String::new(),
    }
}

/// The principal and nonce of a `state`.
fn parse_state(state: &str) -> Option<(String, String)> {
    let (p, nonce) = state.split_once('.')?;
    let principal = String::from_utf8(sealed::unhex(p)?).ok()?;
    (!principal.is_empty() && !nonce.is_empty()).then(|| (principal, nonce.to_string()))
}

/// Where a principal begins the sign-in to upstream `name` on this Worker.
pub fn start_url(name: &str) -> String {
    format!(
        "{}{START}?upstream={}",
        origin(),
        mcp_sieve::upstream::oauth::form_encode(name)
    )
}

/// The error of a call that needs `principal`'s sign-in to upstream `name` first (`why`).
pub fn sign_in_error(name: &str, why: &str) -> Error {
    let url = start_url(name);
    let message = format!(
        "upstream \"{name}\" needs you to sign in ({why}): open {url} with your credentials for this server, then call again"
    );
    Error::Rpc {
        code: URL_ELICITATION_REQUIRED,
        message: message.clone(),
        data: Some(json!({
            "elicitations": [{"mode": "url", "elicitationId": format!("sign-in:{name}"), "url": url, "message": message}],
            "upstream": name,
        })),
    }
}

/// Why a principal's object could not answer an operation.
#[derive(Debug, thiserror::Error)]
enum AskError {
    /// The object could not be reached or its answer read.
    #[error(transparent)]
    Worker(#[from] worker::Error),
    /// The operation could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The object's refusal, in its words (`upstream_tokens::TokensError` there).
    #[error("{0}")]
    Refused(String),
}

/// `principal`'s object.
async fn ask(ns: &ObjectNamespace, op: &str, a: &Ask) -> std::result::Result<Value, AskError> {
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(serde_json::to_string(a)?.into()));
    let req = Request::new_with_init(&format!("https://tokens.internal/{op}"), &init)?;
    let stub = ns.get_by_name(&a.principal)?;
    let mut res = stub.fetch_with_request(req).await?;
    let v: Value = res.json().await?;
    match v["error"].as_str() {
        Some(e) => Err(AskError::Refused(e.to_string())),
        None => Ok(v),
    }
}

/// The `Authorization` header of `principal`'s request to upstream `name` at `url`, or the
/// error that says where to sign in; a refresh's requests take `sign_in_ms` each at most (the
/// upstream's `limits.signInTimeoutSeconds`).
pub async fn bearer(
    ns: &ObjectNamespace,
    principal: Option<&str>,
    name: &str,
    url: &str,
    sign_in_ms: u64,
) -> std::result::Result<String, Error> {
    let Some(principal) = principal.filter(|p| !p.is_empty()) else {
        return Err(sign_in_error(
            name,
            "this request names no principal, and upstream tokens are kept per principal",
        ));
    };
    let a = Ask {
        principal: principal.to_string(),
        upstream: name.to_string(),
        url: url.to_string(),
        sign_in_ms,
        ..Ask::default()
    };
    let v = ask(ns, "token", &a)
        .await
        .map_err(|e| Error::Upstream(format!("its sign-in could not be read: {e}")))?;
    match (v["authorization"].as_str(), v["signIn"].as_str()) {
        (Some(h), _) => Ok(h.to_string()),
        (None, Some(why)) => Err(sign_in_error(name, why)),
        _ => Err(Error::Upstream("its sign-in could not be read".into())),
    }
}

/// The gateway's own `Authorization` header for upstream `name` at `url` (`client_credentials`,
/// `auth` its document's): the one this isolate was given while it is fresh, else asked of the
/// gateway's object ([`GATEWAY`]), which keeps it sealed and asks the authorization server again
/// when it expires, when `renew` (the upstream refused it) or with the wider `scope` an
/// upstream's `insufficient_scope` asked for; each request of the object's sign-in within
/// `sign_in_ms` (the upstream's `limits.signInTimeoutSeconds`).
pub async fn gateway_bearer(
    ns: &ObjectNamespace,
    name: &str,
    url: &str,
    auth: &AuthAsk,
    renew: bool,
    scope: Option<&str>,
    sign_in_ms: u64,
) -> std::result::Result<String, Error> {
    let now = crate::platform::now_ms();
    let held = GATEWAY_TOKENS.with_borrow_mut(|held| {
        if renew || scope.is_some() {
            held.remove(name);
        }
        let h = held.get(name)?;
        (h.url == url && h.until.is_none_or(|u| now < u)).then(|| h.header.clone())
    });
    if let Some(header) = held {
        return Ok(header);
    }
    let a = Ask {
        principal: GATEWAY.to_string(),
        upstream: name.to_string(),
        url: url.to_string(),
        auth: Some(auth.clone()),
        scope: scope.map(str::to_string),
        renew,
        sign_in_ms,
        ..Ask::default()
    };
    let v = ask(ns, "gateway", &a)
        .await
        .map_err(|e| Error::Upstream(format!("the gateway's token could not be had: {e}")))?;
    let header = v["authorization"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| Error::Upstream("the gateway's token could not be had".into()))?;
    let until = v["freshUntilMs"].as_i64();
    let h = Held {
        url: url.to_string(),
        header: header.clone(),
        until,
    };
    GATEWAY_TOKENS.with_borrow_mut(|held| held.insert(name.to_string(), h));
    Ok(header)
}

/// Step-up: upstream `name` asked `principal`'s token for the scopes `scope` (403
/// `insufficient_scope`). Its object keeps them, joined to those granted and any asked for
/// before, for the principal's next sign-in; returns all of them.
pub async fn widen(
    ns: &ObjectNamespace,
    principal: Option<&str>,
    name: &str,
    scope: &str,
) -> std::result::Result<String, Error> {
    let Some(principal) = principal.filter(|p| !p.is_empty()) else {
        return Err(sign_in_error(name, "this request names no principal"));
    };
    let a = Ask {
        principal: principal.to_string(),
        upstream: name.to_string(),
        scope: Some(scope.to_string()),
        ..Ask::default()
    };
    let v = ask(ns, "widen", &a)
        .await
        .map_err(|e| Error::Upstream(format!("the wider scopes it asks for could not be kept: {e}")))?;
    Ok(v["scope"].as_str().unwrap_or(scope).to_string())
}

fn page(status: u16, text: &str) -> Result<Response> {
    let text = text.replace('&', "&amp;").replace('<', "&lt;");
    let body = format!("<!doctype html><meta charset=utf-8><title>mcp-sieve</title><p>{text}</p>");
    let mut r = Response::from_html(body)?.with_status(status);
    r.headers_mut().set("cache-control", "no-store")?;
    Ok(r)
}

fn query_value(query: &str, key: &str) -> Option<String> {
    mcp_sieve::upstream::oauth::query_pairs(&format!("/?{query}"))
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// `START`: the caller (authenticated as `principal`) is sent to the authorization server of
/// upstream `?upstream=NAME`.
pub async fn start(
    env: &Env,
    server: &mcp_sieve::protocol::Server,
    principal: Option<&str>,
    url: &str,
    query: &str,
) -> Result<Response> {
    let Some(principal) = principal.filter(|p| !p.is_empty()) else {
        return page(
            403,
            "Signing in to an upstream needs callers who are identified (MCP_SIEVE_TOKENS or the catalog's auth): tokens are kept per principal",
        );
    };
    let Some(name) = query_value(query, "upstream") else {
        return page(400, "Say which upstream: ?upstream=NAME");
    };
    let up = match signing_upstream(&server.catalog().upstreams, &name) {
        Ok(u) => u,
        Err(e) => return page(404, &e.to_string()),
    };
    let var = |n: &str| env.secret(n).or_else(|_| env.var(n)).ok().map(|v| v.to_string());
    let secret = match up.resolved_client_secret(&var) {
        Ok(s) => s,
        Err(e) => return page(500, &e.to_string()),
    };
    let a = Ask {
        principal: principal.to_string(),
        upstream: name.clone(),
        url: mcp_sieve::upstream::oauth::request_url(up.url().unwrap_or_default()),
        origin: origin_of(url),
        auth: Some(AuthAsk::of(up, secret)),
        sign_in_ms: up.limits.sign_in_ms,
        ..Ask::default()
    };
    match ask(&env.durable_object(BINDING)?, "begin", &a).await {
        Ok(v) => match v["authorize"].as_str() {
            Some(to) => {
                let mut r = Response::empty()?.with_status(302);
                r.headers_mut().set("location", to)?;
                r.headers_mut().set("cache-control", "no-store")?;
                Ok(r)
            }
            None => page(502, "The sign-in could not begin"),
        },
        Err(e) => {
            log::error(format_args!("sign-in to upstream \"{name}\" could not begin: {e}"));
            page(502, &format!("The sign-in to upstream \"{name}\" could not begin: {e}"))
        }
    }
}

/// `LOGOUT`: the caller (authenticated as `principal`) is signed out of upstream
/// `?upstream=NAME`: its object deletes that upstream's tokens (revoked first at the
/// authorization server when it offers revocation) and any step-up scopes kept for it. Its next
/// call to that upstream is sent nowhere and says where to sign in.
pub async fn logout(
    env: &Env,
    server: &mcp_sieve::protocol::Server,
    principal: Option<&str>,
    query: &str,
) -> Result<Response> {
    let Some(principal) = principal.filter(|p| !p.is_empty()) else {
        return page(
            403,
            "This server does not tell its callers apart (MCP_SIEVE_TOKENS or the catalog's auth): nobody is signed in to an upstream",
        );
    };
    let Some(name) = query_value(query, "upstream") else {
        return page(400, "Say which upstream: ?upstream=NAME");
    };
    let up = match signing_upstream(&server.catalog().upstreams, &name) {
        Ok(u) => u,
        Err(e) => return page(404, &e.to_string()),
    };
    let a = Ask {
        principal: principal.to_string(),
        upstream: name.clone(),
        sign_in_ms: up.limits.sign_in_ms,
        ..Ask::default()
    };
    match ask(&env.durable_object(BINDING)?, "forget", &a).await {
        Ok(v) if v["forgot"].as_bool() == Some(true) => page(
            200,
            &format!(
                "Signed out of upstream \"{name}\": your tokens for it were deleted{}.",
                v["revoked"].as_str().unwrap_or_default()
            ),
        ),
        Ok(_) => page(
            200,
            &format!("You were not signed in to upstream \"{name}\": nothing was kept for you."),
        ),
        Err(e) => {
            log::error(format_args!("sign-out of upstream \"{name}\" failed: {e}"));
            page(502, &format!("The sign-out of upstream \"{name}\" failed: {e}"))
        }
    }
}

/// `CALLBACK`: the authorization server's redirect; the code goes to the object its `state` names.
pub async fn callback(env: &Env, url: &str, query: &str) -> Result<Response> {
    let Some((principal, nonce)) = query_value(query, "state").as_deref().and_then(parse_state) else {
        return page(
            400,
            "This sign-in's redirect carries no state this server gave: discarded",
        );
    };
    let a = Ask {
        principal,
        nonce,
        query: query.to_string(),
        origin: origin_of(url),
        ..Ask::default()
    };
    match ask(&env.durable_object(BINDING)?, "finish", &a).await {
        Ok(v) => page(
            200,
            &format!(
                "Signed in to upstream \"{}\": its token is kept for you. You can close this tab and call again.",
                v["upstream"].as_str().unwrap_or_default()
            ),
        ),
        Err(e) => page(400, &format!("The sign-in failed: {e}")),
    }
}

/// Whether `path` is one of these routes.
pub fn is_route(path: &str) -> bool {
    path == START || path == CALLBACK || path == LOGOUT
}

/// The gate's refusal of a request to `START` (Origin, token), as for `/mcp`.
pub fn gate(cfg: &http::Config, method: &str, header: &dyn Fn(&str) -> Option<String>) -> Option<http::Response> {
    http::gate(
        cfg,
        &http::Request {
            method,
            header,
            body: &[],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::upstream_tokens::state;

    #[test]
    fn state_names_the_principal_and_the_nonce() {
        let s = state("alice@example.com", "n0nce");
        assert_eq!(parse_state(&s), Some(("alice@example.com".into(), "n0nce".into())));
        assert_eq!(parse_state("zz.n"), None);
        assert_eq!(parse_state(".n"), None);
        assert_eq!(parse_state("6161."), None);
        assert_eq!(parse_state("no-dot"), None);
    }

    #[test]
    fn origin_is_the_url_standards() {
        assert_eq!(
            origin_of("https://h.example/mcp-sieve/oauth/start?upstream=a"),
            "https://h.example"
        );
        assert_eq!(origin_of("http://127.0.0.1:8787/x"), "http://127.0.0.1:8787");
        assert_eq!(origin_of("http://h?x"), "http://h");
        // What a cut at the first '/', '?' or '#' after "://" gets wrong:
        // userinfo is no part of an origin (a cut kept "https://user:pw@h.example")
        assert_eq!(origin_of("https://user:pw@h.example/x"), "https://h.example");
        // scheme and host are lowercased, a default port dropped (a cut kept "HTTPS://H.Example:443")
        assert_eq!(origin_of("HTTPS://H.Example:443/x"), "https://h.example");
        assert_eq!(origin_of("http://h.example:80?q=/a"), "http://h.example");
        // IPv6 in brackets with its port; a zero-padded address written canonically
        assert_eq!(origin_of("http://[::1]:8787/mcp"), "http://[::1]:8787");
        assert_eq!(origin_of("http://[0:0:0:0:0:0:0:1]/"), "http://[::1]");
        // a backslash ends the host of an http(s) URL (a cut kept "https://h.example\\x")
        assert_eq!(origin_of("https://h.example\\x"), "https://h.example");
        // a path-only or opaque URL has no origin to send a browser back to
        assert_eq!(origin_of("nothing"), "");
        assert_eq!(origin_of("/mcp-sieve/oauth/start"), "");
        assert_eq!(origin_of("data:text/plain,x"), "");
    }
}
