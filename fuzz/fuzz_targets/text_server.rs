//! Text from a caller through the whole server (issue 23, item 1): any Unicode as a `find_tools`
//! query in a search-mode view, as the context and arguments of every middleware built-in, as a
//! resource URI and prompt arguments (templates), as a URL query and `X-MCP-Tools` /
//! `X-MCP-Toolsets` headers (view parsing) and as filter globs → an answer or an error, never a
//! panic. The input is split at NUL bytes into text, pattern and name. (`text` fuzzes the same
//! functions directly, many times faster.)
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_sieve::http::{self, MemoryStore};
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

const BUILTINS: [&str; 5] = ["pii_redaction", "pii_restoration", "content_moderation", "timestamp_injector", "tool_filter"];

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| {
        let mut doc: Value = serde_json::from_str(include_str!("../../catalog/default.json")).unwrap();
        doc["middleware"] = json!({"enabled": BUILTINS, "pii": {"names": ["Jane Smith", "丸山"]}});
        Server::new(Catalog::load(&doc).unwrap())
    })
}

fn through_the_server(text: &str, pattern: &str, name: &str) {
    let header = |h: &str| match h {
        "x-mcp-tools" => Some(pattern.to_string()),
        "x-mcp-toolsets" => Some(name.to_string()),
        _ => None,
    };
    // View parsing: any URL query and headers → a view or an HTTP error.
    let _ = http::endpoint_view(server().catalog(), "/mcp", text, &header, None);
    let _ = http::endpoint_view(server().catalog(), &format!("/mcp/{name}"), "", &|_| None, None);
    let view = http::endpoint_view(server().catalog(), "/mcp", "mode=search", &|_| None, None).unwrap();
    let mut store = MemoryStore::default();
    let env = Env { now_ms: 1_763_634_600_000, principal: None, fresh_id: "s1".into(), view };
    let cfg = http::Config::default();
    let plain = |h: &str| match h {
        "content-type" => Some("application/json".to_string()),
        "accept" => Some("application/json, text/event-stream".to_string()),
        _ => None,
    };
    let with_session = |h: &str| match h {
        "mcp-session-id" => Some("s1".to_string()),
        other => plain(other),
    };
    let mut post = |n: u64, method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params}).to_string();
        let header: &dyn Fn(&str) -> Option<String> = if n == 0 { &plain } else { &with_session };
        let r = http::handle(server(), &cfg, http::Request { method: "POST", header, body: body.as_bytes() }, &mut store, &env);
        assert!(r.status == 200 || r.status == 400, "{method}: {} {}", r.status, r.body);
    };
    // The client's name is capped (a long one is refused, and then there is no session).
    let client: String = name.chars().take(32).collect();
    post(0, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": client, "version": "1"}}));
    post(1, "tools/call", json!({"name": "find_tools", "arguments": {"query": text}}));
    let ctx = json!([{"type": "text", "text": text}, {"type": "text", "text": name}]);
    let args = [
        json!({"aggressiveness": "strict", "names": [name]}),
        json!({"redactions": {pattern: name, "EMAIL_1": text}}),
        json!({}),
        json!({"timeZone": pattern, "label": name}),
        json!({"availableTools": [pattern, name]}),
    ];
    for (i, (b, a)) in BUILTINS.iter().zip(args).enumerate() {
        post(2 + i as u64, "middleware/invoke", json!({"name": b, "arguments": a, "context": ctx}));
    }
    post(8, "resources/read", json!({"uri": text}));
    post(9, "prompts/get", json!({"name": pattern, "arguments": {"code": text, "language": name}}));
    post(10, "tools/list", json!({"filter": {"namePatterns": [pattern, name]}}));
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let mut parts = s.splitn(3, '\0');
    let (text, pattern, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    through_the_server(text, pattern, name);
});
