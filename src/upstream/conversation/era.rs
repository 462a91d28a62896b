//! Which protocol era an upstream is spoken to in (gateway mode): `server/discover` first; an
//! upstream that lists 2026-07-28 among its `supportedVersions` is spoken to statelessly (no
//! `initialize`, no session: each request carries the version, our client info and capabilities
//! in `_meta`, and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, as
//! `http::modern` expects them); any other answer means a session of the newest legacy version
//! it accepts (`initialize`, negotiated down when it refuses ours and names the ones it speaks).
//! A version error (`-32022`) makes the conversation discover again, once per exchange.

use serde_json::{json, Map, Value};

use super::super::reply::parse_reply;
use super::super::{HttpAnswer, Post};
use super::Conversation;
use crate::base64::{encode, Alphabet};
use crate::error::code;
use crate::protocol::{LEGACY_VERSIONS, MODERN_VERSION};

/// What a conversation knows of its upstream's era.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Era {
    /// Not asked yet (or forgotten after a version error): `server/discover` comes first.
    #[default]
    Unknown,
    /// It speaks 2026-07-28: stateless requests.
    Modern,
    /// It does not: `initialize` and a session.
    Legacy,
}

/// The `_meta` keys of the 2026-07-28 request envelope.
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_INFO: &str = "io.modelcontextprotocol/clientInfo";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";

/// A header value as the 2026-07-28 revision mirrors it: as is when it is visible ASCII (spaces
/// inside allowed), else `=?base64?…?=`.
pub(crate) fn header_value(s: &str) -> String {
    let plain = s.bytes().all(|b| (0x20..0x7f).contains(&b)) && s.trim() == s;
    if plain {
        s.to_string()
    } else {
        format!("=?base64?{}?=", encode(s.as_bytes(), Alphabet::Standard))
    }
}

impl Conversation {
    /// The era this conversation speaks in (what `server/discover` found).
    pub fn era(&self) -> Era {
        self.era
    }

    /// Whether this conversation found its era itself (its own `server/discover`), rather than
    /// taking it from another or from a remembered session.
    pub fn discovered(&self) -> bool {
        self.found
    }

    /// Starts in `era` (what another conversation with the same upstream found), without a
    /// session: a modern conversation is open at once, a legacy one opens with `initialize`
    /// without asking `server/discover` again.
    pub fn knowing(mut self, era: Era) -> Self {
        if self.opened || !self.config.discover {
            return self;
        }
        self.era = era;
        if era == Era::Modern {
            self.opened = true;
            self.version = MODERN_VERSION.into();
        }
        self
    }

    pub(super) fn modern(&self) -> bool {
        self.opened && self.era == Era::Modern
    }

    /// Whether the next opening asks `server/discover` first.
    pub(super) fn discovers(&self) -> bool {
        self.config.discover && self.era == Era::Unknown
    }

    /// Takes the `server/discover` result `init` (already checked to offer 2026-07-28): the
    /// conversation is open, statelessly.
    pub(super) fn open_modern(&mut self, init: Value) {
        self.found = true;
        self.era = Era::Modern;
        self.opened = true;
        self.session = None;
        self.version = MODERN_VERSION.into();
        self.initialize = Some(init);
    }

    /// The POST of `message` in 2026-07-28: our envelope in `params._meta`, the headers mirroring it.
    pub(super) fn post_modern(&self, mut message: Value) -> Post {
        let method = message["method"].as_str().unwrap_or_default().to_string();
        let name = crate::protocol::jsonrpc::mirrored_param(&method).and_then(|f| message["params"][f].as_str());
        let headers = self.modern_headers(&method, name);
        if let Value::Object(m) = &mut message {
            let params = m.entry("params").or_insert_with(|| json!({}));
            if !params.is_object() {
                *params = json!({});
            }
            let meta = params
                .as_object_mut()
                .map(|p| p.entry("_meta").or_insert_with(|| json!({})));
            if let Some(Value::Object(meta)) = meta {
                meta.insert(META_VERSION.into(), json!(MODERN_VERSION));
                meta.insert(META_INFO.into(), self.config.client_info.clone());
                meta.insert(META_CAPS.into(), self.config.capabilities.clone());
            }
        }
        Post {
            headers,
            body: message.to_string(),
        }
    }

    /// The headers of a 2026-07-28 POST of `method` whose mirrored param (`Mcp-Name`) is `name`.
    fn modern_headers(&self, method: &str, name: Option<&str>) -> Vec<(String, String)> {
        let mut headers = Vec::with_capacity(5 + self.config.headers.len());
        headers.extend([
            ("Content-Type".to_string(), "application/json".to_string()),
            ("Accept".to_string(), "application/json, text/event-stream".to_string()),
            ("MCP-Protocol-Version".to_string(), MODERN_VERSION.to_string()),
            ("Mcp-Method".to_string(), method.to_string()),
        ]);
        if let Some(n) = name {
            headers.push(("Mcp-Name".into(), header_value(n)));
        }
        headers.extend(self.config.headers.iter().cloned());
        headers
    }

    /// A 2026-07-28 request of `method` whose POST body the caller writes itself (the Worker's
    /// fast forward splices the client's text): the exchange, already sent as
    /// [`super::Exchange`]'s step would send it (`params` kept for a send again after a version
    /// error), and what that step's POST would carry — its id, its headers (`name`: the value of
    /// the param `Mcp-Name` mirrors) and the members it puts in `params._meta`, each name with
    /// its value as JSON text. `None` unless this conversation speaks 2026-07-28.
    pub fn sent_modern(&mut self, method: &str, params: Value, name: Option<&str>) -> Option<SentModern> {
        if !self.modern() {
            return None;
        }
        let id = self.take_id();
        let exchange = super::Exchange::sent(method, params, id);
        Some(SentModern {
            exchange,
            id,
            headers: self.modern_headers(method, name),
            envelope: [
                (META_VERSION, format!("\"{MODERN_VERSION}\"")),
                (META_INFO, self.config.client_info.to_string()),
                (META_CAPS, self.config.capabilities.to_string()),
            ],
        })
    }
}

impl super::Exchange {
    /// An exchange of request `method` already sent under `id` (its POST written by the caller:
    /// [`Conversation::sent_modern`]).
    fn sent(method: &str, params: Value, id: u64) -> Self {
        let mut e = super::Exchange::new(Some(method), params, false);
        e.phase = super::Phase::Sent(Some(id));
        e
    }
}

/// What [`Conversation::sent_modern`] gives a caller that writes the POST's body itself.
#[derive(Debug)]
pub struct SentModern {
    /// The exchange, its request in flight.
    pub exchange: super::Exchange,
    /// The request's id.
    pub id: u64,
    /// The POST's headers.
    pub headers: Vec<(String, String)>,
    /// The members our envelope puts in `params._meta` (replacing the client's of those names
    /// where they are, else after its others, in this order): name, value as JSON.
    pub envelope: [(&'static str, String); 3],
}

/// A legacy upstream must not read a forwarded request as a 2026-07-28 one: the envelope a
/// modern downstream client put in `params._meta` is not passed on.
pub(super) fn strip_envelope(params: &mut Value) {
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        for k in [META_VERSION, META_INFO, META_CAPS] {
            meta.remove(k);
        }
        if meta.is_empty() {
            if let Value::Object(p) = params {
                p.remove("_meta");
            }
        }
    }
}

/// The `server/discover` answer `a` (to request `id`) as an `initialize`-like result
/// (`protocolVersion`, `capabilities`, `serverInfo`, `instructions`) when it offers 2026-07-28;
/// `None` for anything else (an error, a legacy server's refusal of a request without session,
/// a list without our version).
pub(super) fn discovered(a: &HttpAnswer, id: u64) -> Option<Value> {
    if !(200..300).contains(&a.status) {
        return None;
    }
    let reply = parse_reply(&a.content_type, &a.body, Some(&json!(id))).ok()?;
    let result = reply.result("server/discover").ok()?;
    let offers = result["supportedVersions"]
        .as_array()
        .is_some_and(|v| v.iter().any(|v| v == MODERN_VERSION));
    if !offers {
        return None;
    }
    let mut init = Map::new();
    init.insert("protocolVersion".into(), json!(MODERN_VERSION));
    init.insert("capabilities".into(), result["capabilities"].clone());
    let info = result["_meta"]["io.modelcontextprotocol/serverInfo"].clone();
    init.insert(
        "serverInfo".into(),
        if info.is_null() {
            result["serverInfo"].clone()
        } else {
            info
        },
    );
    if let Some(i) = result.get("instructions") {
        init.insert("instructions".into(), i.clone());
    }
    Some(Value::Object(init))
}

/// The JSON-RPC error `a` carries for the request `id`, if any.
fn carried_error(a: &HttpAnswer, id: Option<u64>) -> Option<Value> {
    let msg = parse_reply(&a.content_type, &a.body, id.map(|i| json!(i)).as_ref())
        .ok()
        .and_then(|r| r.response)
        .or_else(|| serde_json::from_str::<Value>(&a.body).ok())?;
    msg.get("error").cloned()
}

/// Whether `a` is a 400 whose error says the upstream does not know our session: what servers
/// built on the official SDK's examples answer for a session they forgot ("Bad Request: No
/// valid session ID provided") where the specification says 404.
pub(super) fn session_unknown(a: &HttpAnswer, id: Option<u64>) -> bool {
    a.status == 400
        && carried_error(a, id)
            .and_then(|e| {
                e["message"]
                    .as_str()
                    .map(|m| m.to_ascii_lowercase().contains("session"))
            })
            .unwrap_or(false)
}

/// Whether `a`, a 4xx answer to request `id` sent in 2026-07-28, is the upstream's JSON-RPC error
/// for it: that revision's HTTP binding answers an error with the status it maps to (the official
/// SDK v2's server: `-32601` with 404, `-32602` with 400), and it is relayed as any error is.
pub(super) fn error_answer(conv: &Conversation, a: &HttpAnswer, id: Option<u64>) -> bool {
    conv.modern() && (400..500).contains(&a.status) && id.is_some() && carried_error(a, id).is_some()
}

/// Whether `a` refuses the version we spoke in: `-32022` in either era, or — speaking
/// 2026-07-28 — a 400 or 404 that is no complaint about the request itself (a legacy server
/// took our place and wants a session). Then the era is discovered again.
pub(super) fn version_refused(conv: &Conversation, a: &HttpAnswer, id: Option<u64>) -> bool {
    let error = carried_error(a, id);
    let code = error.as_ref().and_then(|e| e["code"].as_i64());
    if code == Some(code::UNSUPPORTED_PROTOCOL_VERSION as i64) {
        return true;
    }
    let about_request = [code::INVALID_PARAMS, code::METHOD_NOT_FOUND, code::HEADER_MISMATCH]
        .iter()
        .any(|c| code == Some(*c as i64));
    conv.modern() && matches!(a.status, 400 | 404) && !about_request
}

/// The version to ask again in `initialize` when the upstream refused `asked` and named the
/// ones it speaks (`error.data.supported`, as the specification's example has it): the newest of
/// ours among them.
pub(super) fn negotiated_down(a: &HttpAnswer, id: u64, asked: &str) -> Option<&'static str> {
    let error = carried_error(a, Some(id))?;
    let supported = error["data"]["supported"].as_array()?;
    LEGACY_VERSIONS
        .into_iter()
        .find(|v| *v != asked && supported.iter().any(|s| s == v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_are_base64_outside_visible_ascii() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
    }
}
