//! Streamable HTTP rules as pure functions: (method, headers, body) + session store → status,
//! headers and body. The Worker and the native server only move bytes and persist sessions.

use serde_json::Value;

use crate::error::Error;
use crate::protocol::jsonrpc::{self, Incoming, Limits};
use crate::protocol::{is_supported_version, Ask, Env, Server, Session, Watch, LEGACY_VERSIONS, MODERN_VERSION};

mod security;
mod session_id;
mod view;
pub use security::{
    authorized, cors_headers, declared_length, failed, gate, identify, misconfigured, misconfigured_privately, serve,
    too_large,
};
pub use session_id::{same_secret, Secret};
pub use view::{endpoint_view, ENDPOINT};

/// Where sessions live between requests (memory, a Durable Object, ...).
pub trait SessionStore {
    /// The session with this id, if it exists.
    fn load(&mut self, id: &str) -> Option<Session>;
    /// Stores (creates or replaces) a session.
    fn save(&mut self, session: &Session);
    /// Ends a session.
    fn remove(&mut self, id: &str);
}

/// Sessions in a map: for a single process (the native server, one Worker isolate, tests).
#[derive(Debug, Clone, Default)]
pub struct MemoryStore(std::collections::HashMap<String, Session>);

impl MemoryStore {
    /// Removes the sessions last used before `cutoff_ms`; returns how many.
    pub fn evict_idle(&mut self, cutoff_ms: i64) -> usize {
        let before = self.0.len();
        self.0.retain(|_, s| s.last_seen_ms >= cutoff_ms);
        before - self.0.len()
    }
}

impl SessionStore for MemoryStore {
    fn load(&mut self, id: &str) -> Option<Session> {
        self.0.get(id).cloned()
    }
    fn save(&mut self, session: &Session) {
        self.0.insert(session.id.clone(), session.clone());
    }
    fn remove(&mut self, id: &str) {
        self.0.remove(id);
    }
}

/// An HTTP request as the shell received it.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// `GET`, `POST`, `DELETE`, ...
    pub method: &'a str,
    /// Header lookup (case-insensitive name → value).
    pub header: &'a dyn Fn(&str) -> Option<String>,
    /// The body.
    pub body: &'a [u8],
}

/// What to answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Headers to set.
    pub headers: Vec<(String, String)>,
    /// The body (JSON or an SSE stream).
    pub body: String,
    /// Handle the same request again at this time (see `Outcome::retry_at`).
    pub retry_at: Option<i64>,
    /// Log lines of the outcome (policy filter failures, ignored concern entries): the shell
    /// writes them to the platform's log. They carry no conversation content.
    pub log: Vec<String>,
    /// Gateway mode: perform this request at the upstream, then answer with
    /// [`complete`].
    pub forward: Option<crate::protocol::Forward>,
    /// A long-lived SSE answer (a session's GET stream, `subscriptions/listen`): after `body`,
    /// keep the stream open and send what the watch reports (see [`Watch::tick`]).
    pub watch: Option<Watch>,
    /// A tool asked the client mid-call: after `body` (which carries the request), keep the
    /// stream open until the answer comes (see `protocol::Answers`), then send [`Ask::finish`].
    pub ask: Option<Ask>,
    /// The client answered a question: hand it to the stream waiting under this key.
    pub answered: Option<(String, Value)>,
}

/// Finishes an HTTP response that carried a [`Forward`] (`response.forward`) with the
/// upstream's reply to it (see [`crate::protocol::Forward::answer`]) and the notifications that
/// came with that reply (sent ahead of it as SSE events when the client accepts SSE).
pub fn complete(mut response: Response, reply: std::result::Result<&Value, &Error>, notes: &[Value]) -> Response {
    let Some(f) = response.forward.take() else {
        return response;
    };
    let answer = f.answer(reply);
    if f.sse && !notes.is_empty() {
        let notes: Vec<String> = notes.iter().map(Value::to_string).collect();
        response.body = sse_body(&notes, Some(&answer));
        response.headers.extend(sse_headers());
    } else {
        response.body = answer;
        response
            .headers
            .push(("Content-Type".into(), "application/json".into()));
    }
    response
}

/// SSE events for `notes`, then `response` (if any).
pub fn sse_body(notes: &[String], response: Option<&str>) -> String {
    let mut body = String::new();
    for m in notes.iter().map(String::as_str).chain(response) {
        body.push_str("event: message\ndata: ");
        body.push_str(m);
        body.push_str("\n\n");
    }
    body
}

fn sse_headers() -> [(String, String); 2] {
    [
        ("Content-Type".into(), "text/event-stream".into()),
        ("Cache-Control".into(), "no-cache".into()),
    ]
}

/// Transport configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Body, depth and string guards.
    pub limits: Limits,
    /// Allowed `Origin` values besides loopback ones (`*` allows any).
    pub allowed_origins: Vec<String>,
    /// Bearer token every request must carry (`None`: no authentication).
    pub bearer_token: Option<String>,
    /// Whether allowed cross-origin browser hosts get CORS headers and preflight answers.
    pub cors: bool,
    /// Idle time after which a session is gone (404); `None`: [`DEFAULT_SESSION_IDLE_MS`].
    pub session_idle_ms: Option<i64>,
    /// Principals and their bearer tokens (`MCP_SIEVE_TOKENS`).
    pub tokens: Vec<(String, String)>,
    /// The key session ids are tagged with (`None`: ids are not checked; the shells set a random
    /// one when `MCP_SIEVE_SESSION_SECRET` is not given).
    pub session_secret: Option<Secret>,
}

/// Sessions idle this long are gone: 24 hours.
pub const DEFAULT_SESSION_IDLE_MS: i64 = 24 * 3600 * 1000;

impl Config {
    /// A new session id from the random string `random`: tagged with the session secret.
    pub fn session_id(&self, random: &str) -> String {
        match &self.session_secret {
            Some(s) => s.sign(random),
            None => random.to_string(),
        }
    }

    /// Whether `id` can be a session id of this server (a forged one is not, and is refused
    /// before any store is asked).
    pub fn session_id_valid(&self, id: &str) -> bool {
        self.session_secret.as_ref().is_none_or(|s| s.verify(id))
    }

    /// The idle time after which a session expires.
    pub fn idle_ms(&self) -> i64 {
        self.session_idle_ms.unwrap_or(DEFAULT_SESSION_IDLE_MS)
    }

    /// How far `last_seen_ms` may lag: a session is written for its use at most this often.
    fn touch_every_ms(&self) -> i64 {
        (self.idle_ms() / 4).clamp(1, 60_000)
    }
}

/// Standard Base64 (RFC 4648, padding optional); `None` when `s` is not Base64.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6).then_some(out)
}

/// `r` with the outcome's log lines.
fn logged(log: Vec<String>, r: Response) -> Response {
    Response { log, ..r }
}

/// A JSON answer with no session or forwarding effects.
pub(crate) fn json_response(status: u16, body: String) -> Response {
    Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body,
        ..Default::default()
    }
}

fn plain(status: u16, message: &str) -> Response {
    json_response(
        status,
        jsonrpc::error(&Value::Null, &Error::InvalidRequest(message.into())),
    )
}

fn rpc_error(status: u16, id: &Value, e: &Error) -> Response {
    json_response(status, jsonrpc::error(id, e))
}

/// Whether `origin` is loopback or allowed by configuration.
pub fn origin_allowed(origin: &str, cfg: &Config) -> bool {
    let host = origin.split("://").nth(1).unwrap_or(origin);
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    ["localhost", "127.0.0.1", "[::1]"].contains(&host) || cfg.allowed_origins.iter().any(|o| o == "*" || o == origin)
}

/// The 2026-07-28 rules for a stateless request: the version travels in `_meta`, the
/// `MCP-Protocol-Version` and `Mcp-Method` headers must agree with the body (`-32020`), and the
/// version must be one this server speaks statelessly (`-32022`).
fn check_modern(
    msg: &Incoming,
    header: Option<&str>,
    meta: Option<&str>,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<(), Error> {
    let meta = meta.ok_or_else(|| {
        Error::HeaderMismatch("MCP-Protocol-Version is 2026-07-28 but params._meta[\"io.modelcontextprotocol/protocolVersion\"] is missing".into())
    })?;
    if let Some(hv) = header.filter(|hv| *hv != meta) {
        return Err(Error::HeaderMismatch(format!(
            "MCP-Protocol-Version header \"{hv}\" does not match params._meta protocolVersion \"{meta}\""
        )));
    }
    let body_method = msg.method().unwrap_or_default();
    match method {
        None => {
            return Err(Error::HeaderMismatch(format!(
                "the Mcp-Method header is required (here \"{body_method}\")"
            )))
        }
        Some(m) if m != body_method => {
            return Err(Error::HeaderMismatch(format!(
                "Mcp-Method header \"{m}\" does not match the body's method \"{body_method}\""
            )))
        }
        _ => {}
    }
    let mirrored = match body_method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    // A body without the mirrored field is left to the method, which names what is missing.
    if let Some((field, want)) = mirrored.and_then(|f| Some((f, msg.params().get(f)?.as_str()?))) {
        match name {
            None => {
                return Err(Error::HeaderMismatch(format!(
                    "the Mcp-Name header is required for {body_method}"
                )))
            }
            Some(n) => {
                // Values outside visible ASCII arrive Base64-encoded (`=?base64?…?=`).
                let decoded = match n.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
                    Some(b64) => base64_decode(b64)
                        .and_then(|b| String::from_utf8(b).ok())
                        .ok_or_else(|| {
                            Error::HeaderMismatch(format!("the Mcp-Name header \"{n}\" is not valid =?base64?…?= text"))
                        })?,
                    None => n.to_string(),
                };
                if decoded != want {
                    return Err(Error::HeaderMismatch(format!(
                        "Mcp-Name header \"{n}\" does not match params.{field} \"{want}\""
                    )));
                }
            }
        }
    }
    if meta != MODERN_VERSION {
        return Err(Error::UnsupportedVersion(meta.into(), MODERN_VERSION.into()));
    }
    if matches!(msg, Incoming::Request { .. })
        && !msg.params()["_meta"]
            .get("io.modelcontextprotocol/clientCapabilities")
            .is_some_and(Value::is_object)
    {
        return Err(Error::params(
            "params._meta[\"io.modelcontextprotocol/clientCapabilities\"] is required (an object) in protocol version 2026-07-28",
        ));
    }
    Ok(())
}

/// `GET` on the endpoint: a 2025-11-25 session's SSE stream of list changes (the shell keeps it
/// open and asks its watch what to send).
fn open_stream(
    server: &Server,
    cfg: &Config,
    session_id: Option<String>,
    store: &mut dyn SessionStore,
    env: &Env,
    accept: Option<String>,
) -> Response {
    if !accept
        .unwrap_or_default()
        .to_ascii_lowercase()
        .contains("text/event-stream")
    {
        return plain(406, "GET opens an SSE stream: Accept must include text/event-stream");
    }
    let Some(id) = session_id else {
        return plain(
            400,
            "GET needs the Mcp-Session-Id header (a 2025-11-25 session's stream); in 2026-07-28, POST subscriptions/listen",
        );
    };
    let live = cfg.session_id_valid(&id)
        && store
            .load(&id)
            .is_some_and(|s| env.now_ms.saturating_sub(s.last_seen_ms) <= cfg.idle_ms());
    if !live {
        return plain(404, "unknown or expired session; initialize a new one");
    }
    Response {
        status: 200,
        headers: sse_headers().to_vec(),
        body: ": listening for list changes\n\n".into(),
        watch: Some(Watch::session(server)),
        ..Default::default()
    }
}

/// Handles one HTTP request to the MCP endpoint.
pub fn handle(server: &Server, cfg: &Config, req: Request<'_>, store: &mut dyn SessionStore, env: &Env) -> Response {
    let h = req.header;
    if let Some(origin) = h("origin") {
        if !origin_allowed(&origin, cfg) {
            return plain(403, &format!("Origin \"{origin}\" is not allowed"));
        }
    }
    let session_id = h("mcp-session-id");
    match req.method {
        "POST" => {}
        "GET" => return open_stream(server, cfg, session_id, store, env, h("accept")),
        "DELETE" => {
            return match session_id {
                None => plain(400, "DELETE needs the Mcp-Session-Id header"),
                Some(id) if !cfg.session_id_valid(&id) || store.load(&id).is_none() => {
                    plain(404, "unknown or expired session")
                }
                Some(id) => {
                    store.remove(&id);
                    Response {
                        status: 204,
                        ..Default::default()
                    }
                }
            }
        }
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
    let msg = match jsonrpc::parse(req.body, &cfg.limits) {
        Ok(m) => m,
        Err(rejected) => return rpc_error(400, &rejected.0, &rejected.1),
    };
    let header_version = h("mcp-protocol-version");
    let meta_version = msg
        .params()
        .get("_meta")
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str);
    let stateless = meta_version.is_some() || header_version.as_deref() == Some(MODERN_VERSION);
    if stateless {
        if let Err(e) = check_modern(
            &msg,
            header_version.as_deref(),
            meta_version,
            h("mcp-method").as_deref(),
            h("mcp-name").as_deref(),
        ) {
            let id = match &msg {
                Incoming::Request { id, .. } => id.clone(),
                _ => Value::Null,
            };
            return rpc_error(400, &id, &e);
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
    let mut session = match (&session_id, is_init || stateless) {
        // An initialize inside an existing session reaches the router, which refuses it.
        (Some(id), _) if !cfg.session_id_valid(id) => {
            return plain(404, "unknown or expired session; initialize a new one")
        }
        (Some(id), _) => match store.load(id) {
            Some(s) if env.now_ms.saturating_sub(s.last_seen_ms) > cfg.idle_ms() => {
                store.remove(id);
                return plain(404, "unknown or expired session; initialize a new one");
            }
            // A session belongs to the principal that opened it.
            Some(s) if s.principal != env.principal => {
                return plain(404, "unknown or expired session; initialize a new one")
            }
            Some(s) if s.view != env.view.as_ref().map(|v| v.label.as_str()).unwrap_or_default() => {
                return plain(
                    404,
                    "this session was opened on another endpoint (view); use that URL, or initialize here",
                )
            }
            Some(s) => Some(s),
            None => return plain(404, "unknown or expired session; initialize a new one"),
        },
        (None, false) => return plain(400, "the Mcp-Session-Id header is required after initialize"),
        // 2026-07-28 tasks live in a holder of their own, named after the task id.
        (None, true) if stateless && !server.is_gateway() => {
            match crate::protocol::task_holder(msg.method().unwrap_or_default(), msg.params(), &env.fresh_id) {
                Some((id, true)) => Some(Session {
                    id,
                    task_holder: true,
                    protocol_version: MODERN_VERSION.into(),
                    initialized: true,
                    last_seen_ms: env.now_ms,
                    // Owned by the principal that created it, when there is one.
                    principal: env.principal.clone(),
                    ..Session::default()
                }),
                // Another principal's task is as unknown as a made-up id.
                Some((id, false)) => store
                    .load(&id)
                    .filter(|s| s.task_holder && s.principal == env.principal),
                None => None,
            }
        }
        _ => None,
    };
    let is_request = matches!(msg, Incoming::Request { .. });
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
            let e = crate::error::Error::InvalidRequest(format!(
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
    // 2026-07-28: an unknown method is also HTTP 404.
    let status = if stateless && out.error_code == Some(crate::error::code::METHOD_NOT_FOUND) {
        404
    } else {
        200
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

#[cfg(test)]
mod tests {
    use super::base64_decode;

    #[test]
    fn base64_decodes_the_standard_alphabet() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("w6lj").unwrap(), "éc".as_bytes());
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("a*b=").is_none());
        assert!(base64_decode("a").is_none(), "a lone sextet is not a byte");
    }
}
