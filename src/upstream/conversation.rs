//! Our session at one Streamable HTTP MCP server, and one exchange in it: open the session when
//! needed (`initialize`, then `notifications/initialized`), send the request with the session and
//! protocol headers, re-open once when the server answers 404 (it forgot the session), and read
//! the reply. In gateway mode the conversation first discovers the upstream's era (`era.rs`).

use serde_json::{json, Map, Value};

use super::reply::{parse_reply, Reply};
use super::{HttpAnswer, Machine, Post, Step, PROTOCOL_VERSION};
use crate::error::{Error, Result};
use crate::protocol::UpstreamLink as Link;

#[cfg(feature = "gateway")]
mod era;
#[cfg(feature = "gateway")]
pub use era::{Era, SentModern};

/// How the client introduces itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// `clientInfo` of `initialize`.
    pub client_info: Value,
    /// `capabilities` of `initialize`.
    pub capabilities: Value,
    /// The protocol version asked for.
    pub protocol_version: String,
    /// Params of `notifications/initialized` (e.g. `{"concerns": {…}}`), if any.
    pub initialized: Option<Value>,
    /// Headers sent with every request (e.g. `Authorization`).
    pub headers: Vec<(String, String)>,
    /// Whether to ask `server/discover` first and speak 2026-07-28 statelessly to an upstream
    /// that offers it (the gateway does; otherwise `initialize` of `protocol_version`).
    #[cfg(feature = "gateway")]
    pub discover: bool,
    /// The secrets this upstream is sent (its headers' and env's `${NAME}`s), redacted from what
    /// it answers before the answer is relayed.
    #[cfg(feature = "gateway")]
    pub secrets: super::redact::Secrets,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_info: json!({"name": "mcp-sieve", "version": env!("CARGO_PKG_VERSION")}),
            capabilities: json!({}),
            protocol_version: PROTOCOL_VERSION.into(),
            initialized: None,
            headers: Vec::new(),
            #[cfg(feature = "gateway")]
            discover: false,
            #[cfg(feature = "gateway")]
            secrets: Default::default(),
        }
    }
}

#[cfg(feature = "gateway")]
impl Conversation {
    /// The secrets this conversation's upstream is sent (to redact from its answers).
    pub fn secrets(&self) -> &super::redact::Secrets {
        &self.config.secrets
    }
}

/// Our side of one MCP session at the upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    config: ClientConfig,
    session: Option<String>,
    version: String,
    initialize: Option<Value>,
    /// Whether `initialize` was answered (also true for a conversation resumed from a [`Link`],
    /// which does not keep the `initialize` result).
    opened: bool,
    next_id: u64,
    list_changed: bool,
    #[cfg(feature = "gateway")]
    era: Era,
    /// Whether `era` was found by this conversation's own `server/discover`.
    #[cfg(feature = "gateway")]
    found: bool,
}

impl Conversation {
    /// A conversation not yet opened.
    pub fn new(config: ClientConfig) -> Self {
        let version = config.protocol_version.clone();
        Conversation {
            config,
            session: None,
            version,
            initialize: None,
            opened: false,
            next_id: 1,
            list_changed: false,
            #[cfg(feature = "gateway")]
            era: Era::Unknown,
            #[cfg(feature = "gateway")]
            found: false,
        }
    }

    /// Goes on with the upstream session `link` remembers (a new one is opened when `link` has
    /// none).
    pub fn resume(config: ClientConfig, link: Link) -> Self {
        let mut c = Conversation::new(config);
        c.next_id = link.next_id.max(1);
        if !link.version.is_empty() {
            c.opened = true;
            c.session = link.session;
            #[cfg(feature = "gateway")]
            if c.config.discover {
                c.era = if link.version == crate::protocol::MODERN_VERSION {
                    Era::Modern
                } else {
                    Era::Legacy
                };
            }
            c.version = link.version;
        }
        c
    }

    /// What [`Conversation::resume`] needs to go on with this session (no version while it is
    /// not open).
    pub fn link(&self) -> Link {
        Link {
            session: self.session.clone().filter(|_| self.opened),
            version: if self.opened {
                self.version.clone()
            } else {
                String::new()
            },
            next_id: self.next_id,
        }
    }

    /// The `initialize` result, once the session is open.
    pub fn initialize_result(&self) -> Option<&Value> {
        self.initialize.as_ref()
    }

    /// The upstream's `Mcp-Session-Id`, if it gave one.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The protocol version agreed on (the one asked for until `initialize` answers).
    pub fn protocol_version(&self) -> &str {
        &self.version
    }

    /// Whether the upstream announced a list change not yet taken.
    pub fn list_changed(&self) -> bool {
        self.list_changed
    }

    /// Whether the upstream announced a list change since the last call (and forgets it).
    pub fn take_list_changed(&mut self) -> bool {
        std::mem::take(&mut self.list_changed)
    }

    /// Sets the params of `notifications/initialized` for the next time the session opens.
    pub fn set_initialized(&mut self, params: Option<Value>) {
        self.config.initialized = params;
    }

    /// Forgets the session (and, discovering, the era): the next exchange opens a new one.
    pub fn reset(&mut self) {
        self.session = None;
        self.initialize = None;
        self.opened = false;
        self.version = self.config.protocol_version.clone();
        #[cfg(feature = "gateway")]
        {
            // Another server may answer there now: its era is discovered again.
            (self.era, self.found) = (Era::Unknown, false);
        }
    }

    /// A request; its output is the [`Reply`] holding the response.
    pub fn request(&self, method: &str, params: Value) -> Exchange {
        Exchange::new(Some(method), params, false)
    }

    /// A notification; its output is an empty [`Reply`] (or the notifications that came back).
    pub fn notify(&self, method: &str, params: Value) -> Exchange {
        Exchange::new(Some(method), params, true)
    }

    /// An exchange answered here with `result`, without asking the upstream.
    #[cfg(feature = "gateway")]
    pub fn answered(&self, result: Value) -> Exchange {
        let mut e = Exchange::new(None, Value::Null, false);
        e.phase = Phase::Done(Reply {
            response: Some(json!({"jsonrpc": "2.0", "id": 0, "result": result})),
            notifications: Vec::new(),
        });
        e
    }

    /// Opens the session if it is not open; its output is the reply to `initialize` (empty when
    /// the session was open already).
    pub fn open(&self) -> Exchange {
        Exchange::new(None, Value::Null, false)
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn post(&self, message: Value) -> Post {
        #[cfg(feature = "gateway")]
        if self.config.discover {
            let mut message = message;
            if self.modern() {
                return self.post_modern(message);
            }
            if let Some(p) = message.get_mut("params") {
                era::strip_envelope(p);
            }
            return self.post_legacy(&message);
        }
        self.post_legacy(&message)
    }

    fn post_legacy(&self, message: &Value) -> Post {
        let mut headers = vec![
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Accept".to_string(), "application/json, text/event-stream".to_string()),
        ];
        if let Some(s) = &self.session {
            headers.push(("Mcp-Session-Id".into(), s.clone()));
        }
        if self.opened {
            headers.push(("MCP-Protocol-Version".into(), self.version.clone()));
        }
        headers.extend(self.config.headers.iter().cloned());
        Post {
            headers,
            body: message.to_string(),
        }
    }
}

fn message(id: Option<u64>, method: &str, params: &Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), json!("2.0"));
    if let Some(id) = id {
        m.insert("id".into(), json!(id));
    }
    m.insert("method".into(), json!(method));
    if !params.is_null() {
        m.insert("params".into(), params.clone());
    }
    Value::Object(m)
}

/// The error for an answer that is not 2xx: the JSON-RPC error it carries, if any, else the status.
fn http_failure(what: &str, a: &HttpAnswer, id: Option<u64>) -> Error {
    let carried = parse_reply(&a.content_type, &a.body, id.map(|i| json!(i)).as_ref())
        .ok()
        .and_then(|r| r.response)
        .or_else(|| serde_json::from_str::<Value>(&a.body).ok());
    match carried.as_ref().and_then(|m| m.get("error")) {
        // A JSON-RPC error with a message: the upstream's own words.
        Some(e) if e.get("message").is_some_and(Value::is_string) => Error::from_rpc(what, e),
        // Anything else (an OAuth-style `{"error": "invalid_token", "error_description": …}` of
        // a 401, a bare status): the status and what the body says of it.
        // (The package's client says the status only: its wasm has a size budget.)
        _ => {
            #[cfg(feature = "gateway")]
            let detail = format!(
                "{}{}",
                reason(a.status).map(|r| format!(" {r}")).unwrap_or_default(),
                carried
                    .as_ref()
                    .and_then(oauth_error)
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default()
            );
            #[cfg(not(feature = "gateway"))]
            let detail = "";
            Error::Upstream(format!("it refused {what} with HTTP {}{detail}", a.status))
        }
    }
}

/// An OAuth error body's `error` and `error_description` (RFC 6750), shortened.
#[cfg(feature = "gateway")]
fn oauth_error(body: &Value) -> Option<String> {
    let short = |s: &str| s.chars().take(200).collect::<String>();
    let code = short(body.get("error")?.as_str()?);
    Some(match body.get("error_description").and_then(Value::as_str) {
        Some(d) => format!("{code} ({})", short(d)),
        None => code,
    })
}

/// The reason phrase of an HTTP status an upstream may refuse with.
#[cfg(feature = "gateway")]
fn reason(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => return None,
    })
}

/// Where an exchange stands.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Open the session if needed, else send the request.
    Start,
    /// `server/discover` (this id) is in flight.
    #[cfg(feature = "gateway")]
    Discovering(u64),
    /// `initialize` (this id) is in flight.
    Initializing(u64),
    /// `initialize` answered; `notifications/initialized` is next.
    Initialized,
    /// `notifications/initialized` is in flight.
    Confirming,
    /// The request (this id; none for a notification) is in flight.
    Sent(Option<u64>),
    /// Answered.
    Done(Reply),
    /// The output was handed out.
    Taken,
}

/// One request (or notification) at the upstream, opening the session first when needed.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    method: Option<String>,
    params: Value,
    notification: bool,
    phase: Phase,
    reopened: bool,
    opened: Option<Reply>,
    /// Whether the era was discovered again (after a version error) or `initialize`
    /// negotiated down, in this exchange: each at most once.
    #[cfg(feature = "gateway")]
    again: (bool, bool),
}

impl Exchange {
    fn new(method: Option<&str>, params: Value, notification: bool) -> Self {
        Exchange {
            method: method.map(str::to_string),
            params,
            notification,
            phase: Phase::Start,
            reopened: false,
            opened: None,
            #[cfg(feature = "gateway")]
            again: (false, false),
        }
    }

    fn what(&self) -> &str {
        self.method.as_deref().unwrap_or("initialize")
    }

    /// The id of the request awaiting its answer: the exchange's own request once sent (not an
    /// `initialize` or `server/discover` before it, nor a notification).
    #[cfg(feature = "gateway")]
    pub fn request_in_flight(&self) -> Option<u64> {
        match self.phase {
            Phase::Sent(id) => id,
            _ => None,
        }
    }
}

impl Machine for Exchange {
    type Output = Reply;

    fn step(&mut self, conv: &mut Conversation) -> Result<Step<Reply>> {
        match std::mem::replace(&mut self.phase, Phase::Taken) {
            #[cfg(feature = "gateway")]
            Phase::Start if !conv.opened && conv.discovers() => {
                let id = conv.take_id();
                self.phase = Phase::Discovering(id);
                Ok(Step::Send(conv.post_modern(message(
                    Some(id),
                    "server/discover",
                    &Value::Null,
                ))))
            }
            Phase::Start if !conv.opened => {
                let id = conv.take_id();
                let params = json!({
                    "protocolVersion": conv.version,
                    "capabilities": conv.config.capabilities,
                    "clientInfo": conv.config.client_info,
                });
                self.phase = Phase::Initializing(id);
                Ok(Step::Send(conv.post(message(Some(id), "initialize", &params))))
            }
            Phase::Start => match self.method.clone() {
                None => Ok(Step::Done(self.opened.take().unwrap_or_default())),
                Some(method) => {
                    let id = (!self.notification).then(|| conv.take_id());
                    self.phase = Phase::Sent(id);
                    Ok(Step::Send(conv.post(message(id, &method, &self.params))))
                }
            },
            Phase::Initialized => {
                let params = conv.config.initialized.clone().unwrap_or(Value::Null);
                self.phase = Phase::Confirming;
                Ok(Step::Send(conv.post(message(
                    None,
                    "notifications/initialized",
                    &params,
                ))))
            }
            Phase::Done(reply) => Ok(Step::Done(reply)),
            Phase::Taken => Err(Error::Internal("the upstream exchange is finished".into())),
            other => {
                self.phase = other;
                Err(Error::Internal("the upstream exchange awaits an answer".into()))
            }
        }
    }

    fn receive(&mut self, conv: &mut Conversation, a: HttpAnswer) -> Result<()> {
        let what = self.what().to_string();
        match std::mem::replace(&mut self.phase, Phase::Taken) {
            #[cfg(feature = "gateway")]
            Phase::Discovering(id) => {
                match era::discovered(&a, id) {
                    Some(init) => {
                        self.opened = Some(Reply {
                            response: Some(json!({"jsonrpc": "2.0", "id": id, "result": init})),
                            notifications: Vec::new(),
                        });
                        conv.open_modern(init);
                    }
                    None => (conv.era, conv.found) = (Era::Legacy, true),
                }
                self.phase = Phase::Start;
                Ok(())
            }
            Phase::Initializing(id) => {
                #[cfg(feature = "gateway")]
                if conv.config.discover && !self.again.1 {
                    if let Some(v) = era::negotiated_down(&a, id, &conv.version) {
                        // It refused our version and named the ones it speaks: ask again in the
                        // newest of ours among them.
                        conv.version = v.to_string();
                        self.again.1 = true;
                        self.phase = Phase::Start;
                        return Ok(());
                    }
                }
                if a.status != 200 {
                    return Err(http_failure("initialize", &a, Some(id)));
                }
                let reply = parse_reply(&a.content_type, &a.body, Some(&json!(id)))?;
                let init = reply.result("initialize")?.clone();
                if let Some(v) = init["protocolVersion"].as_str() {
                    conv.version = v.to_string();
                }
                conv.session = a.session;
                conv.initialize = Some(init);
                conv.opened = true;
                self.opened = Some(reply);
                self.phase = Phase::Initialized;
                Ok(())
            }
            Phase::Confirming => {
                if !(200..300).contains(&a.status) {
                    conv.reset();
                    return Err(Error::Upstream(format!(
                        "it answered notifications/initialized with HTTP {}",
                        a.status
                    )));
                }
                self.phase = Phase::Start;
                Ok(())
            }
            Phase::Sent(id) => {
                let forgotten = a.status == 404;
                #[cfg(feature = "gateway")]
                let forgotten = forgotten || (conv.config.discover && era::session_unknown(&a, id));
                if forgotten && conv.session.is_some() && !self.reopened {
                    // The upstream forgot our session: open a new one and send again, once.
                    conv.reset();
                    self.reopened = true;
                    self.phase = Phase::Start;
                    return Ok(());
                }
                #[cfg(feature = "gateway")]
                if conv.config.discover && !self.again.0 && era::version_refused(conv, &a, id) {
                    // It no longer speaks the version we spoke: discover its era again, once.
                    conv.reset();
                    self.again.0 = true;
                    self.phase = Phase::Start;
                    return Ok(());
                }
                let answered = (200..300).contains(&a.status);
                #[cfg(feature = "gateway")]
                let answered = answered || era::error_answer(conv, &a, id);
                if !answered {
                    return Err(http_failure(&what, &a, id));
                }
                let reply = parse_reply(&a.content_type, &a.body, id.map(|i| json!(i)).as_ref())?;
                if reply.list_changed() {
                    conv.list_changed = true;
                }
                if id.is_some() && reply.response.is_none() {
                    return Err(Error::Upstream(format!("it sent no response to {what}")));
                }
                self.phase = Phase::Done(reply);
                Ok(())
            }
            other => {
                self.phase = other;
                Err(Error::Internal("an upstream answer came with no POST in flight".into()))
            }
        }
    }
}
