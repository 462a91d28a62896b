//! The JSON-RPC engine end to end in memory: initialize, ping, filtered lists, tool calls and the
//! error codes, through the same Streamable HTTP rules the Worker uses.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::{Env, Server, Session};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

#[derive(Default)]
struct Memory(HashMap<String, Session>);

impl SessionStore for Memory {
    fn load(&mut self, id: &str) -> Option<Session> {
        self.0.get(id).cloned()
    }
    fn save(&mut self, s: &Session) {
        self.0.insert(s.id.clone(), s.clone());
    }
    fn remove(&mut self, id: &str) {
        self.0.remove(id);
    }
}

struct Harness {
    server: Server,
    store: Memory,
    session: Option<String>,
    n: u64,
}

impl Harness {
    fn new() -> Self {
        let catalog = Catalog::from_json_str(include_str!("../catalog/default.json")).unwrap();
        Harness {
            server: Server::new(catalog),
            store: Memory::default(),
            session: None,
            n: 0,
        }
    }

    fn post_raw(&mut self, body: &str, headers: &[(&str, &str)]) -> http::Response {
        self.n += 1;
        let mut hs: Vec<(String, String)> = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        if let Some(s) = &self.session {
            hs.push(("mcp-session-id".into(), s.clone()));
        }
        hs.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let header = move |name: &str| {
            hs.iter()
                .rev()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let env = Env {
            now_ms: 1_763_634_600_000,
            principal: None,
            fresh_id: format!("id{}", self.n),
        };
        let req = http::Request {
            method: "POST",
            header: &header,
            body: body.as_bytes(),
        };
        http::handle(&self.server, &http::Config::default(), req, &mut self.store, &env)
    }

    fn rpc(&mut self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": self.n + 1, "method": method, "params": params}).to_string();
        let r = self.post_raw(&body, &[]);
        assert_eq!(r.status, 200, "{}", r.body);
        let body = r
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .next_back()
            .map(str::to_string)
            .unwrap_or(r.body);
        serde_json::from_str(&body).unwrap()
    }

    fn init(&mut self) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let r = self.post_raw(&body.to_string(), &[]);
        assert_eq!(r.status, 200);
        let sid = r
            .headers
            .iter()
            .find(|(k, _)| k == "Mcp-Session-Id")
            .map(|(_, v)| v.clone())
            .expect("session id");
        self.session = Some(sid);
        let n = self.post_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, &[]);
        assert_eq!(n.status, 202);
        assert!(n.body.is_empty());
        serde_json::from_str(&r.body).unwrap()
    }
}

#[test]
fn initialize_declares_filtering_and_negotiates_the_version() {
    let mut h = Harness::new();
    let r = h.init();
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(r["result"]["capabilities"]["filtering"]["groups"]["listChanged"], true);
    assert_eq!(r["result"]["serverInfo"]["name"], "mcp-sieve-demo");
    let mut h2 = Harness::new();
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r: Value = serde_json::from_str(&h2.post_raw(&body.to_string(), &[]).body).unwrap();
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn ping_groups_tags_and_filtered_tools() {
    let mut h = Harness::new();
    h.init();
    assert_eq!(h.rpc("ping", Value::Null)["result"], json!({}));
    let groups = h.rpc("groups/list", json!({}));
    assert!(groups["result"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "calendar"));
    let tags = h.rpc("tags/list", json!({}));
    assert!(tags["result"]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "destructive"));
    let r = h.rpc(
        "tools/list",
        json!({"filter": {"groups": ["calendar"], "tags": ["read-only"]}}),
    );
    let tools = r["result"]["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    for t in tools {
        assert!(t["groups"].as_array().unwrap().contains(&json!("calendar")));
        assert!(t["tags"].as_array().unwrap().contains(&json!("read-only")));
    }
}

#[test]
fn pages_follow_cursors_and_cursors_are_bound_to_the_filter() {
    let mut h = Harness::new();
    h.init();
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let r = h.rpc("tools/list", json!({"cursor": cursor}));
        names.extend(
            r["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone()),
        );
        cursor = r["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
        let wrong = h.rpc("tools/list", json!({"cursor": cursor, "filter": {"tags": ["beta"]}}));
        assert_eq!(wrong["error"]["code"], -32602);
    }
    assert_eq!(
        names.len(),
        h.server.catalog().section(mcp_sieve::model::Kind::Tool).items.len()
    );
}

#[test]
fn demo_tools_run() {
    let mut h = Harness::new();
    h.init();
    let r = h.rpc("tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 40}}));
    assert_eq!(r["result"]["content"][0]["text"], "42");
    let r = h.rpc(
        "tools/call",
        json!({"name": "text_stats", "arguments": {"text": "one two\nthree"}}),
    );
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"characters": 13, "words": 3, "lines": 2})
    );
    let r = h.rpc("tools/call", json!({"name": "current_time", "arguments": {}}));
    assert_eq!(r["result"]["content"][0]["text"], "2025-11-20T10:30:00.000Z");
    let r = h.rpc("tools/call", json!({"name": "add", "arguments": {"a": "2"}}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("params.arguments.a"));
}

#[test]
fn error_codes() {
    let mut h = Harness::new();
    h.init();
    assert_eq!(h.rpc("nope/nothing", json!({}))["error"]["code"], -32601);
    let r = h.rpc("tools/list", json!({"filter": {"groups": "calendar"}}));
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("filter.groups must be an array of strings"));
    assert_eq!(
        h.rpc("tools/call", json!({"name": "no_such_tool"}))["error"]["code"],
        -32602
    );
    let bad = h.post_raw("{oops", &[]);
    assert_eq!(
        serde_json::from_str::<Value>(&bad.body).unwrap()["error"]["code"],
        -32700
    );
    let batch = h.post_raw("[]", &[]);
    assert_eq!(
        serde_json::from_str::<Value>(&batch.body).unwrap()["error"]["code"],
        -32600
    );
}

#[test]
fn session_header_rules() {
    let mut h = Harness::new();
    h.init();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    assert_eq!(h.post_raw(body, &[("mcp-session-id", "nope")]).status, 404);
    h.session = None;
    assert_eq!(h.post_raw(body, &[]).status, 400);
    assert_eq!(h.post_raw(body, &[("content-type", "text/plain")]).status, 415);
    assert_eq!(h.post_raw(body, &[("origin", "https://evil.example")]).status, 403);
}
