//! The JSON-RPC engine end to end in memory: initialize, ping, filtered lists, tool calls and the
//! error codes, through the same Streamable HTTP rules the Worker uses.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::Harness;
use serde_json::{json, Value};

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
    // Bad arguments are a tool execution error the model can correct (isError), not a protocol error.
    let r = h.rpc("tools/call", json!({"name": "add", "arguments": {"a": "2"}}));
    assert_eq!(r["result"]["isError"], true);
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("params.arguments.a must be a number"));
    // A task request for a tool without task support is -32601 (MCP 2025-11-25 tasks).
    let r = h.rpc(
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "x"}, "task": {}}),
    );
    assert_eq!(r["error"]["code"], -32601);
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

#[test]
fn a_catalog_change_announces_what_changed_and_stales_cursors() {
    let mut h = Harness::new();
    h.init();
    let first = h.rpc("tools/list", json!({}));
    let cursor = first["result"]["nextCursor"].clone();
    assert!(cursor.is_string());
    let mut doc: Value = serde_json::from_str(include_str!("../catalog/default.json")).unwrap();
    doc["tools"].as_array_mut().unwrap().pop();
    doc["tags"].as_array_mut().unwrap().push(json!({"name": "new-tag"}));
    let notes = h.server.replace_catalog(mcp_sieve::Catalog::load(&doc).unwrap());
    let methods: Vec<String> = notes
        .iter()
        .map(|n| {
            serde_json::from_str::<Value>(n).unwrap()["method"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        methods,
        ["notifications/tools/list_changed", "notifications/tags/list_changed"]
    );
    let stale = h.rpc("tools/list", json!({ "cursor": cursor }));
    assert_eq!(stale["error"]["code"], -32602);
    assert!(stale["error"]["message"].as_str().unwrap().contains("stale"));
}

#[test]
fn stateless_requests_follow_the_2026_07_28_header_rules() {
    let mut h = Harness::new();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": common::modern_params(json!({"name": "echo", "arguments": {"message": "hi"}}))});
    let body = call.to_string();
    let code = |r: &mcp_sieve::http::Response| serde_json::from_str::<Value>(&r.body).unwrap()["error"]["code"].clone();
    let ok = h.post_raw(
        &body,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ],
    );
    assert_eq!(ok.status, 200, "{}", ok.body);
    for (headers, status, want) in [
        (
            vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "add"),
            ],
            400,
            -32020,
        ),
        (
            vec![("mcp-protocol-version", "2026-07-28"), ("mcp-name", "echo")],
            400,
            -32020,
        ),
        (
            vec![
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ],
            400,
            -32020,
        ),
    ] {
        let r = h.post_raw(&body, &headers);
        assert_eq!((r.status, code(&r)), (status, json!(want)), "{headers:?}: {}", r.body);
    }
    let mut old = call.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let r = h.post_raw(
        &old.to_string(),
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "echo"),
        ],
    );
    assert_eq!(code(&r), json!(-32022));
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).unwrap()["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
    // No ping and no unknown methods in 2026-07-28: -32601 with HTTP 404.
    for method in ["ping", "nope/nothing"] {
        let r = h.modern(json!(2), method, json!({}));
        assert_eq!((r.status, code(&r)), (404, json!(-32601)), "{method}");
    }
    let d = common::response_of(&h.modern(json!(3), "server/discover", json!({})));
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-sieve-demo"
    );
    assert!(d["result"]["capabilities"]["extensions"]["dev.mcp-sieve/filtering"].is_object());
    assert!(d["result"]["instructions"].is_string());
}

#[test]
fn modern_lists_carry_ttl_and_cache_scope() {
    // The default catalog without its policy rule about the client's name.
    let mut doc: Value = serde_json::from_str(common::CATALOG).unwrap();
    doc.as_object_mut().unwrap().remove("policy");
    let mut h = Harness::with_catalog(mcp_sieve::Catalog::load(&doc).unwrap());
    let lists = [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "groups/list",
        "tags/list",
        "concerns/list",
        "server/discover",
    ];
    for method in lists {
        let r = common::response_of(&h.modern(json!(1), method, json!({})))["result"].clone();
        assert_eq!(
            (r["resultType"].clone(), r["ttlMs"].clone(), r["cacheScope"].clone()),
            (json!("complete"), json!(300_000), json!("public")),
            "{method}"
        );
    }
    let listed = common::response_of(&h.modern(json!(2), "resources/list", json!({})));
    let uri = listed["result"]["resources"][0]["uri"].clone();
    let read = common::response_of(&h.modern(json!(2), "resources/read", json!({"uri": uri})))["result"].clone();
    assert_eq!(
        (read["ttlMs"].clone(), read["cacheScope"].clone()),
        (json!(300_000), json!("public"))
    );
    // An answer shaped by the caller's concerns is private.
    let mine = json!({"filter": {"concerns": {"security": "high"}}});
    let r = common::response_of(&h.modern(json!(3), "tools/list", mine))["result"].clone();
    assert_eq!(r["cacheScope"], json!("private"));
    // Calls carry no cache fields.
    let call = common::response_of(&h.modern(
        json!(4),
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "x"}}),
    ));
    assert!(call["result"].get("ttlMs").is_none(), "{call}");
    // options.listTtlSeconds sets ttlMs; a policy rule about the caller makes every list private.
    doc["options"] = json!({"listTtlSeconds": 60});
    doc["policy"] = json!({"rules": [{"when": {"clientName": "bot*"}, "hide": {"tags": ["destructive"]}}]});
    let mut h = Harness::with_catalog(mcp_sieve::Catalog::load(&doc).unwrap());
    let r = common::response_of(&h.modern(json!(5), "tools/list", json!({})))["result"].clone();
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(60_000), json!("private"))
    );
}
