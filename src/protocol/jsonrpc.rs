//! JSON-RPC 2.0 framing: classify an incoming body, guard its size and shape, write responses.

mod head;
mod kept;
mod members;

pub use head::{Head, Meta, Params};
pub use kept::Kept;

use head::Loose;
use members::Members;

use serde_json::{Map, Value};

use crate::error::{type_name, Error};

/// The list methods, whose requests carry some members beside their params ([`Kept`]).
pub const LIST_METHODS: [&str; 4] = [
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// Guards applied before a body is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest body, bytes.
    pub max_body: usize,
    /// Deepest nesting of arrays and objects.
    pub max_depth: usize,
    /// Longest string, bytes.
    pub max_string: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 1 << 20,
            max_depth: 64,
            max_string: 256 * 1024,
        }
    }
}

/// An incoming JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Incoming {
    /// A request with an id.
    Request {
        /// String or number id.
        id: Value,
        /// Method name.
        method: String,
        /// `params` (null when absent); without the members `kept` carries.
        params: Value,
        /// A list's `_meta` and `filter` kept beside its `params` ([`Kept`]); [`Incoming::meta`]
        /// reads the `_meta` from either, [`Incoming::whole`] puts them back.
        kept: Kept,
    },
    /// A notification (no id).
    Notification {
        /// Method name.
        method: String,
        /// `params` (null when absent).
        params: Value,
    },
    /// A response to a request the server sent (a client's answer to a question asked
    /// mid-call, see `protocol::ask`).
    Response {
        /// The server's request id it answers.
        id: Value,
        /// The whole message (`result` or `error`).
        reply: Value,
    },
}

impl PartialEq for Incoming {
    /// As parsed: a kept member compares as the `params` member it was.
    fn eq(&self, other: &Self) -> bool {
        match (self.clone().whole(), other.clone().whole()) {
            (
                Incoming::Request { id, method, params, .. },
                Incoming::Request {
                    id: i,
                    method: m,
                    params: p,
                    ..
                },
            ) => id == i && method == m && params == p,
            (Incoming::Notification { method, params }, Incoming::Notification { method: m, params: p }) => {
                method == m && params == p
            }
            (Incoming::Response { id, reply }, Incoming::Response { id: i, reply: r }) => id == i && reply == r,
            _ => false,
        }
    }
}

impl Incoming {
    /// The message with its kept members back in its `params` (as a shell that forwards or
    /// records them whole wants them).
    pub fn whole(self) -> Incoming {
        match self {
            Incoming::Request {
                id,
                method,
                mut params,
                kept,
            } => {
                kept.put_back(&mut params);
                Incoming::Request {
                    id,
                    method,
                    params,
                    kept: Kept::default(),
                }
            }
            other => other,
        }
    }

    /// `params._meta` (null when absent), kept beside them or in them.
    pub fn meta(&self) -> &Value {
        match self {
            Incoming::Request { params, kept, .. } => kept.meta_or_in(params),
            other => crate::json::member(other.params(), "_meta"),
        }
    }

    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Incoming::Request { method, .. } | Incoming::Notification { method, .. } => Some(method),
            Incoming::Response { .. } => None,
        }
    }

    /// The params (null for responses); a list request's kept members are not among them
    /// ([`Incoming::meta`], [`Incoming::whole`]).
    pub fn params(&self) -> &Value {
        match self {
            Incoming::Request { params, .. } | Incoming::Notification { params, .. } => params,
            Incoming::Response { .. } => &Value::Null,
        }
    }

    /// The id of a request (null for anything else), to answer it with.
    pub fn request_id(&self) -> &Value {
        match self {
            Incoming::Request { id, .. } => id,
            _ => &Value::Null,
        }
    }
}

/// Checks nesting depth and string lengths on the raw bytes, so a hostile body is refused
/// before it is parsed. A string's length is its bytes after the opening quote through the
/// closing one (to the end when it has none); a string is crossed by a search for its next quote
/// or backslash (`memchr2`), not byte by byte (the byte loop was 4% of a native `tools/list`'s
/// user time: bodies are mostly strings).
fn check_shape(body: &[u8], limits: &Limits) -> Result<(), Error> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let open = i;
                let mut at = i + 1;
                // One past the closing quote, or the end.
                let end = loop {
                    match memchr::memchr2(b'"', b'\\', body.get(at..).unwrap_or_default()) {
                        Some(k) if body[at + k] == b'\\' => at += k + 2, // the escaped byte is skipped
                        Some(k) => break at + k + 1,
                        None => break body.len(),
                    }
                };
                if end - open - 1 > limits.max_string {
                    return Err(Error::InvalidRequest(format!(
                        "a string is longer than {} bytes",
                        limits.max_string
                    )));
                }
                i = end;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limits.max_depth {
                    return Err(Error::InvalidRequest(format!(
                        "nesting is deeper than {} levels",
                        limits.max_depth
                    )));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// A message refused before routing: the id (if one could be read) and the error.
pub type Rejected = Box<(Value, Error)>;

fn reject(e: Error) -> Rejected {
    Box::new((Value::Null, e))
}

/// Parses and classifies a body.
pub fn parse(body: &[u8], limits: &Limits) -> Result<Incoming, Rejected> {
    if body.len() > limits.max_body {
        return Err(reject(Error::InvalidRequest(format!(
            "body is larger than {} bytes",
            limits.max_body
        ))));
    }
    // Past a shape limit the body is still JSON: its id, when it has a usable one, goes back with
    // the refusal, so the client pairs the error with its request (a stdio client waits for it).
    check_shape(body, limits).map_err(|e| {
        let id = Head::read(body).id;
        let id = if id.is_string() || id.is_number() {
            id
        } else {
            Value::Null
        };
        Box::new((id, e))
    })?;
    let invalid = |e: serde_json::Error| reject(Error::Parse(format!("body is not valid JSON: {e}")));
    // An object's members read straight from the text; anything else (refused) read whole, for
    // the error to name what it is.
    match serde_json::from_slice::<Loose<Members>>(body).map_err(invalid)? {
        Loose(Some(members)) => classify_members(members),
        Loose(None) => classify(serde_json::from_slice(body).map_err(invalid)?),
    }
}

/// The requests during which a server may ask its client: 2026-07-28's multi-round-trip requests,
/// whose results may be `input_required` (a gateway relays an upstream's questions during these,
/// and a shell routes the answers by their `params`).
pub const ASKING_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The param a 2026-07-28 request's `Mcp-Name` header mirrors (SEP-2243; the tasks extension's
/// `tasks/get`, `tasks/update` and `tasks/cancel` mirror their `taskId`, SEP-2663), for the client
/// that sends the header and the server that checks it.
pub fn mirrored_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The methods `tasks::task_holder` reads the `params` of (a shell that routes by it needs them).
const HOLDER_METHODS: [&str; 5] = [
    "tools/call",
    "tasks/get",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
];

/// The method and `params` of a body, read as the core will read it (for a shell's routing);
/// `params` is `Null` unless the method is routed by them (a task's holder, or a request during
/// which an upstream may ask the client: [`ASKING_METHODS`]). The method comes from the body's
/// [`Head`]; only a routed method's body is read whole, for its `params`.
pub fn peek(body: &[u8]) -> Option<(String, Value)> {
    let method = Head::read(body).method?.into_owned();
    if !(HOLDER_METHODS.contains(&method.as_str()) || ASKING_METHODS.contains(&method.as_str())) {
        return Some((method, Value::Null));
    }
    let mut v: Value = serde_json::from_slice(body).ok()?;
    Some((method, v.get_mut("params").map(Value::take).unwrap_or(Value::Null)))
}

impl Head<'_> {
    /// Whether the message may need `Env::fresh_id` (a shell then mints it: random bits and a
    /// signature): the lists ([`LIST_METHODS`]) and `ping` never read it (no session, task,
    /// holder or question to the client is made for them); anything else (no method: a body
    /// that is not a message) is said to need one.
    pub fn needs_fresh_id(&self) -> bool {
        !self.method().is_some_and(|m| m == "ping" || LIST_METHODS.contains(&m))
    }
}

/// Classifies a parsed JSON value as a JSON-RPC message.
pub fn classify(v: Value) -> Result<Incoming, Rejected> {
    let obj: Map<String, Value> = match v {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(reject(Error::InvalidRequest(
                "batches (JSON arrays) are not supported; send one JSON-RPC object per request".into(),
            )))
        }
        other => {
            return Err(reject(Error::InvalidRequest(format!(
                "expected a JSON-RPC object, got {}",
                type_name(&other)
            ))))
        }
    };
    classify_members(Members::of(obj))
}

/// [`classify`] for the members of a message object.
fn classify_members(m: Members) -> Result<Incoming, Rejected> {
    let Members {
        jsonrpc,
        id,
        method,
        params,
        mut kept,
        rest,
    } = m;
    let id_for_error = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    let fail = |m: String| Err(Box::new((id_for_error.clone(), Error::InvalidRequest(m))));
    if jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return fail("\"jsonrpc\" must be \"2.0\"".into());
    }
    if let Some(id) = &id {
        if !matches!(id, Value::String(_) | Value::Number(_)) {
            return fail(format!("\"id\" must be a string or a number, got {}", type_name(id)));
        }
    }
    let mut params = match params {
        None | Some(Value::Null) => Value::Null,
        Some(p @ Value::Object(_)) => p,
        Some(p) => return fail(format!("\"params\" must be an object, got {}", type_name(&p))),
    };
    // A list request carries its kept members beside its params (it reads its `_meta` only
    // through `Incoming::meta`, its filter through `Kept::filter`); any other message has them
    // back in them.
    let list = matches!((&method, &id), (Some(Value::String(m)), Some(_)) if LIST_METHODS.contains(&m.as_str()));
    if !list {
        std::mem::take(&mut kept).put_back(&mut params);
    }
    match (method, id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request {
            id,
            method,
            params,
            kept,
        }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(m), _) => fail(format!("\"method\" must be a string, got {}", type_name(&m))),
        (None, Some(id)) if rest.contains_key("result") || rest.contains_key("error") => {
            // The message as it came, but its id and params (its `jsonrpc` is "2.0", checked above).
            let mut reply = Map::with_capacity(rest.len() + 1);
            reply.insert("jsonrpc".into(), "2.0".into());
            reply.extend(rest);
            Ok(Incoming::Response {
                id,
                reply: Value::Object(reply),
            })
        }
        (None, _) => fail("missing \"method\"".into()),
    }
}

/// `{"jsonrpc":"2.0","id":..,"result":<raw>}` around an already-serialized result, written
/// around it in place: a page's bytes move once within their buffer, not into a second one.
pub fn ok_raw(id: &Value, result: String) -> String {
    ok_raw_with(id, result, "")
}

/// [`ok_raw`] with `fields` (`"name":value` pairs, comma-separated, no trailing comma) put first
/// in the result object, which must then start with `{`.
pub fn ok_raw_with(id: &Value, mut result: String, fields: &str) -> String {
    let mut head = String::with_capacity(48 + fields.len());
    head.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    head.push_str(&id.to_string());
    head.push_str(",\"result\":");
    if fields.is_empty() || !result.starts_with('{') {
        result.insert_str(0, &head);
    } else {
        head.push('{');
        head.push_str(fields);
        if result != "{}" {
            head.push(',');
        }
        result.replace_range(..1, &head);
    }
    result.push('}');
    result
}

/// A success response.
pub fn ok(id: &Value, result: &Value) -> String {
    ok_raw(id, result.to_string())
}

/// An error response.
pub fn error(id: &Value, e: &Error) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": e.to_json()}).to_string()
}

/// A notification message.
pub fn notification(method: &str, params: Option<Value>) -> String {
    let mut v = serde_json::json!({"jsonrpc": "2.0", "method": method});
    if let Some(p) = params {
        v["params"] = p;
    }
    v.to_string()
}

/// The JSON-RPC error code in the head of a response body a server wrote (its first 300 bytes:
/// after `jsonrpc` and `id`, where it would be; read up to a `result`), so a large list is not
/// parsed to count it.
pub fn error_code_in(body: &[u8]) -> Option<i32> {
    const KEY: &[u8] = b"\"error\":{\"code\":";
    let head = &body[..body.len().min(300)];
    // From quote to quote (a head has a few before its result), not a window at every byte.
    let mut at = None;
    for i in head.iter().enumerate().filter(|&(_, c)| *c == b'"').map(|(i, _)| i) {
        if head[i..].starts_with(b"\"result\":") {
            return None;
        }
        if head[i..].starts_with(KEY) {
            at = Some(i + KEY.len());
            break;
        }
    }
    let at = at?;
    let digits = head[at..]
        .iter()
        .enumerate()
        .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && *c == b'-'))
        .count();
    std::str::from_utf8(&head[at..at + digits]).ok()?.parse().ok()
}

/// The shape check against the byte loop it replaced (proptest: not on wasm32, where it is not a
/// dependency).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod shape_tests {
    use super::*;
    use proptest::prelude::*;

    /// The shape check byte by byte (the form before `memchr2`), to compare with.
    fn shape_bytewise(body: &[u8], limits: &Limits) -> Result<(), String> {
        let (mut depth, mut in_str, mut esc, mut str_len) = (0usize, false, false, 0usize);
        for &b in body {
            if in_str {
                str_len += 1;
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                }
                if str_len > limits.max_string {
                    return Err("long".into());
                }
                continue;
            }
            match b {
                b'"' => (in_str, str_len) = (true, 0),
                b'[' | b'{' => {
                    depth += 1;
                    if depth > limits.max_depth {
                        return Err("deep".into());
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn the_shape_check_refuses_what_a_byte_by_byte_check_refuses(
            body in prop::collection::vec(prop::sample::select(b"\"\\{}[]ab:,".to_vec()), 0..64),
            max_string in 0usize..8,
            max_depth in 0usize..6,
        ) {
            let limits = Limits { max_body: 1 << 20, max_depth, max_string };
            let got = check_shape(&body, &limits).map_err(|e| {
                if e.to_string().contains("string") { "long".to_string() } else { "deep".to_string() }
            });
            prop_assert_eq!(got, shape_bytewise(&body, &limits), "{:?}", String::from_utf8_lossy(&body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_lists_and_ping_go_without_a_fresh_id() {
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools\/list","params":{"method":"initialize"}}"#;
        let needs_fresh_id = |b: &[u8]| Head::read(b).needs_fresh_id();
        assert!(!needs_fresh_id(list));
        assert!(!needs_fresh_id(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
        for needs in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}"#,
            // A repeated key: the core reads the last one.
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"initialize"}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            b"not json",
        ] {
            assert!(needs_fresh_id(needs), "{}", String::from_utf8_lossy(needs));
        }
    }

    #[test]
    fn a_body_is_classified_as_its_parsed_object_would_be() {
        const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let with_meta = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"cursor":"c",{META}}}}}"#);
        let bodies: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"filter":{"groups":["a"]}}}"#,
            // A `_meta` read, then the same again (kept: `client_meta`), given twice, or odd.
            with_meta.as_bytes(),
            with_meta.as_bytes(),
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":1},"x":[1,{"b":null}],"_meta":{"a":2}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":"text"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a":}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"a\u0041":"\n"}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":"text"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":-1.5}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":true}"#,
            br#"{"method":"ping","id":"x","jsonrpc":"2.0"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"extra":true}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#,
            // A member given twice: its last value.
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list","id":2}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            br#"{"jsonrpc":2,"id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
            br#"{"jsonrpc":"2.0","id":1}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            br#""text""#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping",}"#,
        ];
        for &body in bodies {
            let whole = serde_json::from_slice::<Value>(body)
                .map_err(|e| reject(Error::Parse(format!("body is not valid JSON: {e}"))))
                .and_then(classify);
            let text = String::from_utf8_lossy(body);
            assert_eq!(parse(body, &Limits::default()), whole, "{text}");
        }
    }

    #[cfg(feature = "large-catalogs")]
    #[test]
    fn a_list_carries_its_kept_meta_and_plain_filter_beside_its_params_and_any_other_request_has_them_in_them() {
        const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"only":"this test"}}"#;
        let body = |method: &str, params: String| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
        };
        let read = |b: &str| parse(b.as_bytes(), &Limits::default()).unwrap();
        // The params as the body's text has them (members in their order).
        let as_sent = |b: &str| serde_json::from_str::<Value>(b).unwrap()["params"].to_string();
        let list = body(
            "tools/list",
            format!(r#"{{"cursor":"c","_meta":{META},"filter":{{}}}}"#),
        );
        let first = read(&list);
        assert!(first.params().get("_meta").is_some(), "read, and kept for the next");
        assert_eq!(first.clone().whole().params().to_string(), as_sent(&list));
        let again = read(&list);
        assert_eq!(again.params().get("_meta"), None, "kept: not copied into the params");
        assert_eq!(*again.meta(), serde_json::from_str::<Value>(META).unwrap());
        assert_eq!(
            again.meta()["io.modelcontextprotocol/clientCapabilities"]["only"],
            "this test"
        );
        assert_eq!(again, first);
        assert_eq!(
            again.clone().whole().params().to_string(),
            as_sent(&list),
            "back in its place"
        );
        // Any other request (here a call) has it in its params, in its place.
        let call = body(
            "tools/call",
            format!(r#"{{"name":"x","_meta":{META},"arguments":{{}}}}"#),
        );
        assert_eq!(read(&call).params().to_string(), as_sent(&call));
        assert_eq!(read(&call).meta(), again.meta());
        // A plain filter is read as a filter, beside the params; any other filter is in them.
        let filter_of = |m: &Incoming| match m {
            Incoming::Request { kept, .. } => kept.filter().cloned(),
            _ => None,
        };
        let plain = body(
            "tools/list",
            format!(r#"{{"filter":{{"groups":["a"]}},"_meta":{META},"cursor":"c"}}"#),
        );
        let msg = read(&plain);
        assert_eq!(msg.params().to_string(), r#"{"cursor":"c"}"#, "both kept");
        assert_eq!(filter_of(&msg).map(|f| f.groups), Some(vec!["a".to_string()]));
        let with_expr = body("tools/list", r#"{"filter":{"expr":{"group":"a"}}}"#.into());
        assert_eq!(read(&with_expr).params().to_string(), as_sent(&with_expr));
        // Not a list, or not known to be one when its params are read: in the params.
        let explain = body("sieve/explain", r#"{"filter":{"groups":["a"]}}"#.into());
        assert_eq!(read(&explain).params().to_string(), as_sent(&explain));
        let params_first = r#"{"jsonrpc":"2.0","id":1,"params":{"filter":{"groups":["a"]}},"method":"tools/list"}"#;
        assert_eq!(read(params_first).params().to_string(), as_sent(params_first));
        let turned = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"filter":{"groups":["a"]}},"method":"sieve/explain"}"#;
        assert_eq!(read(turned).params().to_string(), as_sent(turned), "put back");
        // Given twice: the first one's place, the last one's value, whichever of them is kept.
        for twice in [
            format!(r#"{{"_meta":{{"a":1}},"cursor":"c","_meta":{META}}}"#),
            format!(r#"{{"_meta":{META},"cursor":"c","_meta":{{"a":2}}}}"#),
            format!(r#"{{"_meta":{META},"filter":{{"groups":["a"]}},"filter":{{"tags":["t"]}}}}"#),
            format!(r#"{{"filter":{{"groups":["a"]}},"_meta":{META},"_meta":{{"a":2}}}}"#),
            format!(r#"{{"filter":{{"groups":["a"]}},"_meta":{META},"filter":{{"expr":{{"group":"a"}}}}}}"#),
            format!(r#"{{"filter":{{"expr":{{"group":"a"}}}},"x":1,"_meta":{META},"filter":{{"tags":["t"]}}}}"#),
        ] {
            let twice = body("tools/list", twice);
            let msg = read(&twice);
            assert_eq!(msg.whole().params().to_string(), as_sent(&twice), "{twice}");
        }
    }

    #[test]
    fn peek_reads_the_method_as_the_core_does() {
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"filter":{"groups":["a"]}}}"#;
        assert_eq!(peek(list), Some(("tools/list".into(), Value::Null)));
        // A repeated key: the last one, as `parse` reads it.
        let twice = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"initialize"}"#;
        assert_eq!(peek(twice).map(|(m, _)| m).as_deref(), Some("initialize"));
        assert_eq!(parse(twice, &Limits::default()).unwrap().method(), Some("initialize"));
        // Methods routed by their params carry them.
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}"#;
        assert_eq!(
            peek(call),
            Some(("tools/call".into(), json!({"name": "x", "task": {}})))
        );
        let read = br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a:b"}}"#;
        assert_eq!(peek(read), Some(("resources/read".into(), json!({"uri": "a:b"}))));
        let escaped = br#"{"method":"tasks\/get","params":{"taskId":"t"}}"#;
        assert_eq!(peek(escaped), Some(("tasks/get".into(), json!({"taskId": "t"}))));
        // No method (what else is not a message: `head`'s tests).
        assert_eq!(peek(b"{\"id\":1}"), None);
        assert_eq!(peek(b"[]"), None);
    }

    #[test]
    fn a_body_past_a_shape_limit_is_refused_with_its_id() {
        let limits = Limits::default();
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"a","arguments":{{"t":"{}"}}}}}}"#,
            "x".repeat(limits.max_string + 1)
        );
        let rejected = parse(long.as_bytes(), &limits).unwrap_err();
        assert_eq!(rejected.0, serde_json::json!(7));
        assert!(rejected.1.to_string().contains("a string is longer than 262144 bytes"));
        let deep = format!(
            r#"{{"id":"d","method":"ping","params":{}{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert_eq!(parse(deep.as_bytes(), &limits).unwrap_err().0, serde_json::json!("d"));
        // An id that is not one (an object), or none: null.
        let odd = format!(
            r#"{{"id":{{"a":1}},"method":"ping","params":{}{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert_eq!(parse(odd.as_bytes(), &limits).unwrap_err().0, Value::Null);
    }

    #[test]
    fn the_error_code_is_read_from_the_head_of_a_body() {
        assert_eq!(
            error_code_in(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#),
            Some(-32602)
        );
        assert_eq!(error_code_in(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
        // A result's content is not read, even where it quotes an error.
        assert_eq!(
            error_code_in(br#"{"jsonrpc":"2.0","id":1,"result":{"text":"\"error\":{\"code\":5"}}"#),
            None
        );
        assert_eq!(
            error_code_in(br#"{"jsonrpc":"2.0","id":"result","error":{"code":-32601,"message":"x"}}"#),
            Some(-32601)
        );
        // A multi-byte character across byte 300 of the body: no panic (the head is cut from bytes).
        let body = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{}\",\"result\":{{}}}}", "é".repeat(200));
        assert_eq!(error_code_in(body.as_bytes()), None);
        // Past the head: not read.
        let late = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"{}\",\"error\":{{\"code\":1}}}}",
            "x".repeat(300)
        );
        assert_eq!(error_code_in(late.as_bytes()), None);
    }
}
