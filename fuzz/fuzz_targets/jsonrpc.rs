//! The JSON-RPC entry: any bytes as the body of a POST in an initialized session → a response,
//! never a panic; the server keeps serving.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_sieve::http::{self, MemoryStore};
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::Catalog;

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| Server::new(Catalog::from_json_str(include_str!("../../catalog/default.json")).unwrap()))
}

fuzz_target!(|data: &[u8]| {
    let mut store = MemoryStore::default();
    let env = Env { now_ms: 1_763_634_600_000, principal: None, fresh_id: "s1".into(), view: None };
    let cfg = http::Config::default();
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}"#;
    let plain = |name: &str| match name {
        "content-type" => Some("application/json".to_string()),
        "accept" => Some("application/json, text/event-stream".to_string()),
        _ => None,
    };
    let r = http::handle(server(), &cfg, http::Request { method: "POST", header: &plain, body: init }, &mut store, &env);
    assert_eq!(r.status, 200);
    let with_session = |name: &str| match name {
        "mcp-session-id" => Some("s1".to_string()),
        other => plain(other),
    };
    let r = http::handle(server(), &cfg, http::Request { method: "POST", header: &with_session, body: data }, &mut store, &env);
    assert!(r.status >= 200 && r.status < 500 || r.retry_at.is_some(), "status {}", r.status);
    let ping = br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;
    let r = http::handle(server(), &cfg, http::Request { method: "POST", header: &with_session, body: ping }, &mut store, &env);
    assert_eq!(r.status, 200);
});
