//! Code mode (issue 62) through the protocol: `?mode=code` and a view's `"mode": "code"` list
//! `find_tools`, `describe_tools` and `run_code` (not `call_tool`); the search tools answer each
//! tool as a TypeScript declaration too; `call_tool` still routes (a program's calls come back
//! through it) under the view's rules; the core alone does not run programs and says so; the
//! document's `code` limits are parsed with errors naming the field.

mod common;

use common::{header_fn, names, Harness};
use mcp_sieve::http::endpoint_view;
use mcp_sieve::Catalog;
use serde_json::json;

fn on(catalog: Catalog, path: &str, query: &str) -> Harness {
    let view = endpoint_view(&catalog, path, query, &header_fn(vec![], &[]), None).unwrap();
    let mut h = Harness::with_catalog(catalog);
    h.view = view;
    h.init();
    h
}

#[test]
fn the_code_mode_list_is_the_search_tools_and_run_code() {
    let catalog = Catalog::from_json_str(common::CATALOG).unwrap();
    let mut h = on(catalog, "/mcp", "mode=code");
    let list = h.rpc_ok("tools/list", json!({}));
    assert_eq!(names(&list, "tools"), ["find_tools", "describe_tools", "run_code"]);
    let run = &list["tools"][2];
    assert_eq!(run["inputSchema"]["required"], json!(["code"]));
    // A named view in code mode, with a pinned tool beside them.
    let mut doc = common::catalog_json();
    doc["views"]["scripted"] = json!({"mode": "code", "pinned": ["echo"]});
    let mut h = on(Catalog::load(&doc).unwrap(), "/mcp/scripted", "");
    assert_eq!(
        names(&h.rpc_ok("tools/list", json!({})), "tools"),
        ["find_tools", "describe_tools", "run_code", "echo"]
    );
    // Search mode is unchanged.
    let mut h = on(Catalog::from_json_str(common::CATALOG).unwrap(), "/mcp", "mode=search");
    assert_eq!(
        names(&h.rpc_ok("tools/list", json!({})), "tools"),
        ["find_tools", "describe_tools", "call_tool"]
    );
}

#[test]
fn the_search_tools_answer_typescript_declarations_in_code_mode() {
    let mut h = on(Catalog::from_json_str(common::CATALOG).unwrap(), "/mcp", "mode=code");
    let found = h.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "add two numbers", "limit": 3}}),
    );
    let ts = found["structuredContent"]["typescript"].as_str().unwrap();
    assert!(ts.starts_with("declare const tools: {"), "{ts}");
    assert!(ts.contains("  add(args: {"), "{ts}");
    assert_eq!(
        found["content"][0]["text"].as_str(),
        Some(ts),
        "the text is the declaration"
    );
    assert!(found["structuredContent"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    let described = h.rpc_ok(
        "tools/call",
        json!({"name": "describe_tools", "arguments": {"names": ["echo", "no_such_tool"]}}),
    );
    let ts = described["structuredContent"]["typescript"].as_str().unwrap();
    assert!(ts.contains("echo(args: {"), "{ts}");
    assert!(!ts.contains("no_such_tool"), "{ts}");
    assert_eq!(described["structuredContent"]["unknown"], json!(["no_such_tool"]));
    let text = described["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(ts) && text.contains("Unknown tools: no_such_tool"),
        "{text}"
    );
    // Compact answers stay compact; search mode answers no declaration.
    let compact = h.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "add two numbers", "detail": "compact"}}),
    );
    assert!(compact["structuredContent"].get("typescript").is_none(), "{compact}");
    let mut s = on(Catalog::from_json_str(common::CATALOG).unwrap(), "/mcp", "mode=search");
    let found = s.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "add"}}),
    );
    assert!(found["structuredContent"].get("typescript").is_none(), "{found}");
}

#[test]
fn run_code_is_refused_by_the_core_alone_and_call_tool_keeps_the_view() {
    let mut h = on(
        Catalog::from_json_str(common::CATALOG).unwrap(),
        "/mcp",
        "groups=email&mode=code",
    );
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "run_code", "arguments": {"code": "return 1"}}),
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("only the native mcp-sieve runs code-mode programs"),
        "{e}"
    );
    // A program's calls come back as call_tool: inside the view it runs, outside it is unknown.
    let r = h.rpc_ok(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "list_messages", "arguments": {}}}),
    );
    assert!(r.get("content").is_some(), "{r}");
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "echo", "arguments": {"message": "x"}}}),
    );
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{e}");
    // In list mode run_code is an unknown tool like any other name.
    let mut l = on(Catalog::from_json_str(common::CATALOG).unwrap(), "/mcp", "groups=email");
    let e = l.rpc_err(
        "tools/call",
        json!({"name": "run_code", "arguments": {"code": "return 1"}}),
    );
    assert!(e["message"].as_str().unwrap().contains("run_code"), "{e}");
}

#[test]
fn a_malformed_code_block_or_mode_is_an_error_naming_it() {
    let mut doc = common::catalog_json();
    doc["code"] = json!({"timeoutSeconds": 0});
    let e = Catalog::load(&doc).unwrap_err().to_string();
    assert!(
        e.contains("code.timeoutSeconds must be a whole number from 1 to 600, got 0"),
        "{e}"
    );
    doc["code"] = json!({"timeoutSeconds": 5, "maxCalls": 2});
    let c = Catalog::load(&doc).unwrap();
    assert_eq!((c.code.timeout_seconds, c.code.max_calls, c.code.memory_mb), (5, 2, 64));
    let catalog = Catalog::from_json_str(common::CATALOG).unwrap();
    let Err(r) = endpoint_view(&catalog, "/mcp", "mode=script", &header_fn(vec![], &[]), None) else {
        panic!("mode=script was accepted")
    };
    assert_eq!(r.status, 400);
    assert!(r.body.contains("mode must be list, search or code"), "{}", r.body);
}
