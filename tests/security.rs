//! Transport gatekeeping (`http::serve`): Origin allow-list, bearer token, CORS, body limit, the
//! configuration read from variables, and the answer of a misconfigured server.

mod common;

use common::CATALOG;
use mcp_sieve::http::{self, same_secret, MemoryStore};
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn send(cfg: &http::Config, method: &str, headers: &[(&str, &str)], body: &str) -> http::Response {
    let server = Server::new(Catalog::from_json_str(CATALOG).unwrap());
    let base = vec![
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json, text/event-stream".into()),
    ];
    let header = common::header_fn(base, headers);
    let env = Env {
        now_ms: common::T0,
        fresh_id: "s1".into(),
        ..Default::default()
    };
    let req = http::Request {
        method,
        header: &header,
        body: body.as_bytes(),
    };
    http::serve(&server, cfg, req, &mut MemoryStore::default(), &env)
}

/// A request that needs no session: `initialize`.
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn header<'a>(r: &'a http::Response, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

#[test]
fn same_secret_is_equality() {
    assert!(same_secret("secret", "secret"));
    assert!(!same_secret("secret", "secreT"));
    assert!(!same_secret("secret", "secret2"));
    assert!(!same_secret("", "x"));
    assert!(same_secret("", ""));
}

#[test]
fn foreign_origin_is_403_and_configured_one_passes() {
    let cfg = http::Config::default();
    let r = send(&cfg, "POST", &[("origin", "https://evil.example")], PING);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("evil.example"), "{}", r.body);
    assert_eq!(
        send(&cfg, "POST", &[("origin", "http://localhost:5173")], PING).status,
        200
    );
    let cfg = http::Config::from_vars(&vars(&[(
        "MCP_SIEVE_ALLOWED_ORIGINS",
        "https://host.example, https://b.example",
    )]))
    .unwrap();
    assert_eq!(send(&cfg, "POST", &[("origin", "https://b.example")], PING).status, 200);
    assert_eq!(send(&cfg, "POST", &[("origin", "https://c.example")], PING).status, 403);
}

#[test]
fn bearer_token_is_required_when_configured() {
    let cfg = http::Config::from_vars(&vars(&[("MCP_SIEVE_TOKEN", "s3cret-token")])).unwrap();
    for auth in [None, Some("Bearer wrong"), Some("Basic s3cret-token"), Some("Bearer ")] {
        let hs: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", *a)).collect();
        let r = send(&cfg, "POST", &hs, PING);
        assert_eq!(r.status, 401, "{auth:?}: {}", r.body);
        assert!(header(&r, "www-authenticate").unwrap().starts_with("Bearer"));
        assert!(!r.body.contains("s3cret"), "the token must not leak: {}", r.body);
    }
    let r = send(&cfg, "POST", &[("authorization", "Bearer s3cret-token")], PING);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = send(&cfg, "POST", &[("authorization", "bearer s3cret-token")], PING);
    assert_eq!(r.status, 200, "the scheme is case-insensitive: {}", r.body);
}

#[test]
fn cors_preflight_and_response_headers() {
    let cfg = http::Config::from_vars(&vars(&[
        ("MCP_SIEVE_ALLOWED_ORIGINS", "https://host.example"),
        ("MCP_SIEVE_TOKEN", "t"),
    ]))
    .unwrap();
    assert!(cfg.cors, "CORS is on unless MCP_SIEVE_CORS=false");
    // A preflight carries no credentials and is answered without them.
    let r = send(
        &cfg,
        "OPTIONS",
        &[
            ("origin", "https://host.example"),
            ("access-control-request-method", "POST"),
        ],
        "",
    );
    assert_eq!(r.status, 204);
    assert_eq!(header(&r, "access-control-allow-origin"), Some("https://host.example"));
    assert!(header(&r, "access-control-allow-methods").unwrap().contains("POST"));
    assert!(header(&r, "access-control-allow-headers")
        .unwrap()
        .contains("Mcp-Session-Id"));
    let r = send(
        &cfg,
        "POST",
        &[("origin", "https://host.example"), ("authorization", "Bearer t")],
        PING,
    );
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "access-control-allow-origin"), Some("https://host.example"));
    assert!(header(&r, "access-control-expose-headers")
        .unwrap()
        .contains("Mcp-Session-Id"));
    // Refusals carry CORS headers too, so the browser host can read the 401.
    let r = send(&cfg, "POST", &[("origin", "https://host.example")], PING);
    assert_eq!(r.status, 401);
    assert_eq!(header(&r, "access-control-allow-origin"), Some("https://host.example"));
    // Without CORS, no such headers.
    let off = http::Config::from_vars(&vars(&[("MCP_SIEVE_CORS", "false")])).unwrap();
    let r = send(&off, "POST", &[("origin", "http://localhost:3000")], PING);
    assert_eq!(r.status, 200);
    assert_eq!(header(&r, "access-control-allow-origin"), None);
}

#[test]
fn body_limit_from_configuration() {
    let cfg = http::Config::from_vars(&vars(&[("MCP_SIEVE_MAX_BODY", "250")])).unwrap();
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(300)}}).to_string();
    assert_eq!(send(&cfg, "POST", &[], &big).status, 413);
    let declared = big.len().to_string();
    assert_eq!(send(&cfg, "POST", &[("content-length", &declared)], &big).status, 413);
    assert_eq!(send(&cfg, "POST", &[], PING).status, 200);
}

#[test]
fn bad_variables_name_themselves() {
    let e = http::Config::from_vars(&vars(&[("MCP_SIEVE_MAX_BODY", "lots")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("MCP_SIEVE_MAX_BODY"), "{e}");
    let e = http::Config::from_vars(&vars(&[("MCP_SIEVE_CORS", "maybe")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("MCP_SIEVE_CORS"), "{e}");
}

#[test]
fn misconfigured_server_answers_500_with_internal_error_naming_the_field() {
    let err = Catalog::from_json_str(r#"{"tools": [{"name": 5}]}"#).unwrap_err();
    let r = http::misconfigured(&err);
    assert_eq!(r.status, 500);
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["error"]["code"], -32603);
    assert!(
        body["error"]["message"].as_str().unwrap().contains("tools[0].name"),
        "{body}"
    );
}

/// A store that counts how often it is asked.
#[derive(Default)]
struct Counting {
    inner: MemoryStore,
    loads: usize,
}

impl http::SessionStore for Counting {
    fn load(&mut self, id: &str) -> Option<mcp_sieve::protocol::Session> {
        self.loads += 1;
        self.inner.load(id)
    }
    fn save(&mut self, s: &mcp_sieve::protocol::Session) {
        self.inner.save(s)
    }
    fn remove(&mut self, id: &str) {
        self.inner.remove(id)
    }
}

#[test]
fn session_ids_carry_the_secrets_tag_and_forged_ones_are_404_before_the_store() {
    let cfg = http::Config::from_vars(&vars(&[(
        "MCP_SIEVE_SESSION_SECRET",
        "a secret of 32 characters, ok!!",
    )]))
    .unwrap();
    let short = http::Config::from_vars(&vars(&[("MCP_SIEVE_SESSION_SECRET", "short")])).unwrap_err();
    assert!(
        short
            .to_string()
            .contains("MCP_SIEVE_SESSION_SECRET must be at least 16"),
        "{short}"
    );
    let server = Server::new(Catalog::from_json_str(CATALOG).unwrap());
    let mut store = Counting::default();
    let minted = cfg.session_id("0f1e2d3c");
    assert!(minted.starts_with("0f1e2d3c.") && cfg.session_id_valid(&minted));
    let post = |store: &mut Counting, session: Option<&str>, body: &str| {
        let mut extra = vec![];
        if let Some(s) = session {
            extra.push(("mcp-session-id", s));
        }
        let base = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        let header = common::header_fn(base, &extra);
        let env = Env {
            now_ms: common::T0,
            fresh_id: minted.clone(),
            ..Default::default()
        };
        let req = http::Request {
            method: "POST",
            header: &header,
            body: body.as_bytes(),
        };
        http::serve(&server, &cfg, req, store, &env)
    };
    let init = post(&mut store, None, PING);
    assert_eq!(header(&init, "mcp-session-id"), Some(minted.as_str()));
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert_eq!(post(&mut store, Some(&minted), list).status, 200);
    let loads = store.loads;
    for forged in [
        "0f1e2d3c",
        "0f1e2d3d.00000000000000000000000000000000",
        &minted.replace("0f1e", "0f1f"),
    ] {
        assert_eq!(post(&mut store, Some(forged), list).status, 404, "{forged}");
    }
    assert_eq!(store.loads, loads, "a forged id never reaches the store");
}
