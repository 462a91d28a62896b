//! The in-memory harness shared by the protocol tests: a `Server` over the embedded catalog, a
//! `MemoryStore` of sessions, and a clock the test sets. Every request goes through
//! `http::handle`, the same Streamable HTTP rules the Worker and the native server use.
//!
//! Each test crate uses only part of this module.
#![allow(dead_code)]

pub mod documents;

use mcp_sieve::http::{self, MemoryStore};
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

/// 2025-11-20T10:30:00Z, the harness's initial clock.
pub const T0: i64 = 1_763_634_600_000;

/// The protocol version of the stateful era the harness initializes with.
pub const LEGACY: &str = "2025-11-25";

/// The stateless protocol version.
pub const MODERN: &str = "2026-07-28";

/// The embedded default catalog document.
pub const CATALOG: &str = include_str!("../../catalog/default.json");

/// The default catalog document, parsed.
pub fn catalog_json() -> Value {
    serde_json::from_str(CATALOG).unwrap()
}

/// `catalog/public-servers.json` with its tools repeated (names numbered) up to `n`, for the
/// search benchmarks (real text at 5,000 and 50,000 tools).
pub fn public_times(n: usize) -> Value {
    let mut doc: Value =
        serde_json::from_str(include_str!("../../catalog/public-servers.json")).expect("public catalog");
    let base = doc["tools"].as_array().cloned().unwrap_or_default();
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            let mut t = base[i % base.len()].clone();
            if i >= base.len() {
                t["name"] = json!(format!("{}_{}", t["name"].as_str().unwrap_or_default(), i / base.len()));
            }
            t
        })
        .collect();
    doc["tools"] = Value::Array(tools);
    doc.as_object_mut().map(|o| o.remove("views"));
    doc
}

/// One client talking to one server through `http::handle`.
pub struct Harness {
    pub server: Server,
    pub store: MemoryStore,
    /// The `Mcp-Session-Id` sent with each request (set by `init`).
    pub session: Option<String>,
    /// The `MCP-Protocol-Version` header sent with each request (set by `init` to the
    /// negotiated version, as a 2025-11-25 client does after initialization).
    pub protocol_version: Option<String>,
    /// Requests sent so far; also makes each `fresh_id` unique.
    pub n: u64,
    /// The clock passed to the server as `Env::now_ms`; tests set or advance it.
    pub now_ms: i64,
    /// The endpoint's view every request goes through (see `http::endpoint_view`).
    pub view: Option<std::sync::Arc<mcp_sieve::filter::EndpointView>>,
    /// The principal every request is made as.
    pub principal: Option<String>,
    /// The verified token behind the principal (roles, claims), with the `auth` feature.
    #[cfg(feature = "auth")]
    pub identity: Option<std::sync::Arc<mcp_sieve::auth::Identity>>,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// A harness over the embedded default catalog, clock at `T0`.
    pub fn new() -> Self {
        Self::with_catalog(Catalog::from_json_str(CATALOG).unwrap())
    }

    /// A harness over another catalog.
    pub fn with_catalog(catalog: Catalog) -> Self {
        Harness {
            server: Server::new(catalog),
            store: MemoryStore::default(),
            session: None,
            protocol_version: None,
            n: 0,
            now_ms: T0,
            view: None,
            principal: None,
            #[cfg(feature = "auth")]
            identity: None,
        }
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
    }

    /// POSTs `body` with the usual headers (JSON content type, Accept of both JSON and SSE, the
    /// session and protocol-version headers when known); `headers` are added last and win.
    pub fn post_raw(&mut self, body: &str, headers: &[(&str, &str)]) -> http::Response {
        self.send("POST", body, headers)
    }

    /// `DELETE` with the session header: the client ends its session.
    pub fn delete(&mut self) -> http::Response {
        self.send("DELETE", "", &[])
    }

    /// An HTTP request of `method` with `body`, the headers as in [`Harness::post_raw`].
    fn send(&mut self, method: &str, body: &str, headers: &[(&str, &str)]) -> http::Response {
        self.n += 1;
        let mut hs: Vec<(String, String)> = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        if let Some(s) = &self.session {
            hs.push(("mcp-session-id".into(), s.clone()));
        }
        if let Some(v) = &self.protocol_version {
            hs.push(("mcp-protocol-version".into(), v.clone()));
        }
        let header = header_fn(hs, headers);
        let env = Env {
            now_ms: self.now_ms,
            principal: self.principal.clone(),
            fresh_id: format!("id{}", self.n),
            view: self.view.clone(),
            #[cfg(feature = "auth")]
            identity: self.identity.clone(),
        };
        let req = http::Request {
            method,
            header: &header,
            body: body.as_bytes(),
        };
        http::handle(&self.server, &http::Config::default(), req, &mut self.store, &env)
    }

    /// POSTs one JSON-RPC message (a request or a notification) as JSON.
    pub fn post(&mut self, message: &Value, headers: &[(&str, &str)]) -> http::Response {
        self.post_raw(&message.to_string(), headers)
    }

    /// A request with the next id, answered with status 200; returns the JSON-RPC response (the
    /// last message when the answer is an SSE stream).
    pub fn rpc(&mut self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": self.n + 1, "method": method, "params": params});
        let r = self.post(&body, &[]);
        assert_eq!(r.status, 200, "{method}: {}", r.body);
        response_of(&r)
    }

    /// `rpc`, asserting a JSON-RPC error; returns the `error` object.
    pub fn rpc_err(&mut self, method: &str, params: Value) -> Value {
        let r = self.rpc(method, params);
        assert!(r.get("result").is_none(), "{method}: expected an error, got {r}");
        r["error"].clone()
    }

    /// `rpc`, asserting success; returns the `result` object.
    pub fn rpc_ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.rpc(method, params);
        assert!(r.get("error").is_none(), "{method}: expected a result, got {r}");
        r["result"].clone()
    }

    /// Initializes a 2025-11-25 session with these `initialize` params (the session and
    /// protocol-version headers are sent from then on); returns the initialize response. Does not
    /// send `notifications/initialized`.
    pub fn initialize(&mut self, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
        let r = self.post(&body, &[]);
        assert_eq!(r.status, 200, "{}", r.body);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        let sid = r
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("Mcp-Session-Id"))
            .map(|(_, v)| v.clone())
            .expect("initialize answers with an Mcp-Session-Id header");
        self.session = Some(sid);
        self.protocol_version = v["result"]["protocolVersion"].as_str().map(str::to_string);
        v
    }

    /// Sends `notifications/initialized` with these params (omitted when null); asserts 202 and
    /// an empty body.
    pub fn initialized(&mut self, params: Value) {
        let mut note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        if !params.is_null() {
            note["params"] = params;
        }
        let r = self.post(&note, &[]);
        assert_eq!(r.status, 202, "{}", r.body);
        assert!(r.body.is_empty(), "{}", r.body);
    }

    /// The usual `initialize` params for `version`, with extra fields merged in.
    pub fn init_params(version: &str, extra: Value) -> Value {
        let mut p = json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}
        });
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        p
    }

    /// initialize (2025-11-25) + notifications/initialized; returns the initialize response.
    pub fn init(&mut self) -> Value {
        let r = self.initialize(Self::init_params(LEGACY, Value::Null));
        self.initialized(Value::Null);
        r
    }

    /// A stateless (2026-07-28) request: no session header, the version in `_meta` and in the
    /// `MCP-Protocol-Version` header, client capabilities in `_meta`.
    pub fn modern(&mut self, id: Value, method: &str, params: Value) -> http::Response {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": modern_params(params)});
        let (session, version) = (self.session.take(), self.protocol_version.take());
        let hs = modern_headers(&body);
        let hs: Vec<(&str, &str)> = hs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let r = self.post(&body, &hs);
        (self.session, self.protocol_version) = (session, version);
        r
    }

    /// A stateless request from a client that declares the tasks extension (SEP-2663) in its
    /// per-request capabilities, as a client must to be answered with a task or use `tasks/*`.
    pub fn modern_tasks(&mut self, id: Value, method: &str, params: Value) -> http::Response {
        self.modern(id, method, declaring_tasks(params))
    }

    /// Every page of a list method with these params, following `nextCursor`; returns the `name`
    /// (or `uri`) of each item.
    pub fn list_all(&mut self, method: &str, key: &str, params: Value) -> Vec<String> {
        self.list_all_items(method, key, params)
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// Every item of a list method with these params, following `nextCursor`.
    pub fn list_all_items(&mut self, method: &str, key: &str, params: Value) -> Vec<Value> {
        let mut items = Vec::new();
        let mut params = params;
        loop {
            let r = self.rpc_ok(method, params.clone());
            items.extend(
                r[key]
                    .as_array()
                    .unwrap_or_else(|| panic!("{method}: no {key} in {r}"))
                    .iter()
                    .cloned(),
            );
            match r.get("nextCursor") {
                Some(Value::String(c)) => params["cursor"] = json!(c),
                _ => return items,
            }
        }
    }

    /// Every tool name `tools/list` shows with these params, across pages.
    pub fn tool_names(&mut self, params: Value) -> Vec<String> {
        self.list_all("tools/list", "tools", params)
    }
}

/// The headers a 2026-07-28 client mirrors from a request body: `MCP-Protocol-Version`,
/// `Mcp-Method`, and `Mcp-Name` (from `params.name` or `params.uri`) for `tools/call`,
/// `prompts/get` and `resources/read`.
pub fn modern_headers(message: &Value) -> Vec<(&'static str, String)> {
    let method = message["method"].as_str().unwrap_or_default();
    let version = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        .as_str()
        .unwrap_or(MODERN);
    let mut hs = vec![
        ("mcp-protocol-version", version.to_string()),
        ("mcp-method", method.to_string()),
    ];
    let name = match method {
        "tools/call" | "prompts/get" => message["params"]["name"].as_str(),
        "resources/read" => message["params"]["uri"].as_str(),
        _ => None,
    };
    if let Some(n) = name {
        hs.push(("mcp-name", n.to_string()));
    }
    hs
}

/// `params` whose client capabilities declare the tasks extension (SEP-2663).
pub fn declaring_tasks(params: Value) -> Value {
    let mut p = modern_params(params);
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"] = json!({});
    p
}

/// `params` with the stateless `_meta` fields added (an object's own `_meta` entries are kept).
pub fn modern_params(params: Value) -> Value {
    let mut p = match params {
        Value::Null => json!({}),
        other => other,
    };
    let meta = p
        .as_object_mut()
        .expect("params must be an object")
        .entry("_meta")
        .or_insert_with(|| json!({}));
    let meta = meta.as_object_mut().expect("_meta must be an object");
    meta.entry("io.modelcontextprotocol/protocolVersion")
        .or_insert_with(|| json!(MODERN));
    meta.entry("io.modelcontextprotocol/clientCapabilities")
        .or_insert_with(|| json!({}));
    meta.entry("io.modelcontextprotocol/clientInfo")
        .or_insert_with(|| json!({"name": "t", "version": "1"}));
    p
}

/// The messages of a response body: the JSON body, or each `data:` line of an SSE stream.
pub fn messages(r: &http::Response) -> Vec<Value> {
    let sse = r
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with("text/event-stream"));
    if sse {
        r.body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    } else if r.body.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&r.body).unwrap()]
    }
}

/// The JSON-RPC response of an HTTP response: the JSON body, or the last message of the stream.
pub fn response_of(r: &http::Response) -> Value {
    messages(r)
        .pop()
        .unwrap_or_else(|| panic!("no message in body {:?}", r.body))
}

/// The notifications (messages with a method) of an HTTP response, in order.
pub fn notifications_of(r: &http::Response) -> Vec<Value> {
    messages(r).into_iter().filter(|m| m.get("method").is_some()).collect()
}

/// The names of a tool list result.
pub fn names(result: &Value, key: &str) -> Vec<String> {
    result[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {result}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Header lookup (case-insensitive) over `base` followed by `extra`; a later header wins.
pub fn header_fn(mut base: Vec<(String, String)>, extra: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    base.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    move |name: &str| {
        base.iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

/// Runs the upstream machine `m` to its end against `server` (a closure over each POST it asks
/// for); returns the output and every message sent.
pub fn run<M: mcp_sieve::upstream::Machine>(
    conv: &mut mcp_sieve::upstream::Conversation,
    m: &mut M,
    mut server: impl FnMut(&Value, &mcp_sieve::upstream::Post) -> mcp_sieve::upstream::HttpAnswer,
) -> (Result<M::Output, mcp_sieve::Error>, Vec<Value>) {
    use mcp_sieve::upstream::Step;
    let mut sent = Vec::new();
    loop {
        match m.step(conv) {
            Err(e) => return (Err(e), sent),
            Ok(Step::Done(out)) => return (Ok(out), sent),
            Ok(Step::Send(post)) => {
                let msg: Value = serde_json::from_str(&post.body).unwrap();
                let answer = server(&msg, &post);
                sent.push(msg);
                if let Err(e) = m.receive(conv, answer) {
                    return (Err(e), sent);
                }
            }
        }
    }
}
