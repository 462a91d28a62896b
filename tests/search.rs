//! Search mode (issue 15, item 5) through the protocol: the list is `find_tools`, `call_tool` and
//! the pinned tools, never changing; `find_tools` ranks only what the view and policy show;
//! `call_tool` follows the view's rules. And its measure on `catalog/public-servers.json` (362
//! tools from public MCP servers) with the 67 labelled queries of `tests/search/queries.json` (and 23 held out from tuning):
//! top-5 hit rate ≥ 0.9, search-mode `tools/list` under 5% of the full list's bytes.

mod common;

use common::{header_fn, Harness};
use mcp_sieve::http::endpoint_view;
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn public_servers() -> Catalog {
    Catalog::from_json_str(include_str!("../catalog/public-servers.json")).unwrap()
}

fn on(catalog: Catalog, path: &str, query: &str) -> Harness {
    let view = endpoint_view(&catalog, path, query, &header_fn(vec![], &[]), None).unwrap();
    let mut h = Harness::with_catalog(catalog);
    h.view = view;
    h.init();
    h
}

fn found(h: &mut Harness, query: &str, limit: u64) -> Vec<String> {
    let r = h.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": query, "limit": limit}}),
    );
    let tools = r["structuredContent"]["tools"].as_array().unwrap();
    let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap_or(Value::Null);
    assert_eq!(
        &text, &r["structuredContent"]["tools"],
        "the text is the same definitions"
    );
    tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

/// The top-5 hit rate of `set` in `tests/search/queries.json`, printing the misses.
fn hit_rate(set: &str) -> f64 {
    let queries: Value = serde_json::from_str(include_str!("search/queries.json")).unwrap();
    let queries = queries[set].as_array().unwrap();
    let mut h = on(public_servers(), "/mcp/search", "");
    let mut misses = Vec::new();
    for q in queries {
        let query = q["query"].as_str().unwrap();
        let top = found(&mut h, query, 5);
        assert!(top.len() <= 5);
        if !q["expect"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| top.iter().any(|t| t == e))
        {
            misses.push(format!("{query:?} → {top:?}, expected {}", q["expect"]));
        }
    }
    let rate = 1.0 - misses.len() as f64 / queries.len() as f64;
    println!(
        "{set}: top-5 hit rate {rate:.3} ({} of {}); misses:\n{}",
        queries.len() - misses.len(),
        queries.len(),
        misses.join("\n")
    );
    rate
}

#[test]
fn labelled_queries_find_their_tool_in_the_top_five() {
    assert!(hit_rate("queries") >= 0.9);
}

#[test]
fn held_out_queries_find_their_tool_in_the_top_five() {
    assert!(hit_rate("heldOut") >= 0.9);
}

#[test]
fn the_search_mode_list_is_small_and_fixed() {
    let mut full = Harness::with_catalog(public_servers());
    full.init();
    let full_bytes: usize = full
        .list_all_items("tools/list", "tools", json!({}))
        .iter()
        .map(|t| t.to_string().len())
        .sum();
    let mut h = on(public_servers(), "/mcp/search", "");
    let list = h.rpc_ok("tools/list", json!({}));
    let names = common::names(&list, "tools");
    assert_eq!(names, ["find_tools", "call_tool"]);
    assert!(list.get("nextCursor").is_none());
    let bytes = list.to_string().len();
    let share = bytes as f64 / full_bytes as f64;
    println!(
        "search-mode tools/list {bytes} bytes, full list {full_bytes} bytes: {:.2}%",
        share * 100.0
    );
    assert!(share < 0.05, "{bytes} of {full_bytes} bytes");
    assert!(list["tools"][0]["description"].as_str().unwrap().contains("362 tools"));
    // Searching and calling do not change the list.
    found(&mut h, "create a branch", 3);
    assert_eq!(h.rpc_ok("tools/list", json!({})), list);
    let e = h.rpc_err("tools/list", json!({"cursor": "abc"}));
    assert!(e["message"].as_str().unwrap().contains("params.cursor"), "{e}");
}

#[test]
fn find_tools_honours_the_view_and_call_tool_its_rules() {
    // The default catalog, searched through a query view narrowed to the email group.
    let catalog = Catalog::from_json_str(common::CATALOG).unwrap();
    let mut h = on(catalog, "/mcp", "groups=email&mode=search");
    let top = found(&mut h, "send an email", 20);
    assert!(top.contains(&"send_email".to_string()), "{top:?}");
    assert!(found(&mut h, "echo a message back", 20).iter().all(|t| t != "echo"));
    // call_tool reaches a tool inside the view and refuses one outside it, as "Unknown".
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
    // Malformed search arguments name the field.
    for (args, field) in [
        (json!({}), "params.arguments.query"),
        (json!({"query": 3}), "params.arguments.query"),
        (json!({"query": "x".repeat(1001)}), "params.arguments.query"),
        (json!({"query": "x", "limit": 0}), "params.arguments.limit"),
        (json!({"query": "x", "limit": 21}), "params.arguments.limit"),
    ] {
        let e = h.rpc_err("tools/call", json!({"name": "find_tools", "arguments": args}));
        assert_eq!(e["code"], -32602);
        assert!(e["message"].as_str().unwrap().contains(field), "{e}");
    }
    for (args, field) in [
        (json!({}), "params.arguments.name"),
        (json!({"name": "call_tool"}), "params.arguments.name"),
        (
            json!({"name": "list_messages", "arguments": [1]}),
            "params.arguments.arguments",
        ),
    ] {
        let e = h.rpc_err("tools/call", json!({"name": "call_tool", "arguments": args}));
        assert!(e["message"].as_str().unwrap().contains(field), "{e}");
    }
}

#[test]
fn pinned_tools_are_listed_beside_the_search_tools() {
    let mut doc = common::catalog_json();
    doc["views"]["finder"] = json!({"mode": "search", "pinned": ["echo", "no_such_tool"]});
    let catalog = Catalog::load(&doc).unwrap();
    let mut h = on(catalog, "/mcp/finder", "");
    let list = h.rpc_ok("tools/list", json!({}));
    assert_eq!(common::names(&list, "tools"), ["find_tools", "call_tool", "echo"]);
    // A pinned tool is called directly; the request's own filter narrows the pinned ones.
    h.rpc_ok("tools/call", json!({"name": "echo", "arguments": {"message": "hi"}}));
    let narrowed = h.rpc_ok("tools/list", json!({"filter": {"tags": ["destructive"]}}));
    assert_eq!(common::names(&narrowed, "tools"), ["find_tools", "call_tool"]);
    // The same URL with mode=list lists the tools themselves.
    let catalog = Catalog::load(&doc).unwrap();
    let mut listed = on(catalog, "/mcp/finder", "mode=list");
    assert!(listed.tool_names(json!({})).len() > 3);
}

#[test]
fn a_policy_rule_that_hides_a_tool_from_the_list_hides_it_from_the_search() {
    // Issue 23, item 8: one rule hides echo from tools/list only (`when.method`), another hides
    // the calendar group everywhere. In search mode find_tools stands for tools/list: neither
    // may be found, nor called through call_tool.
    let mut doc = common::catalog_json();
    doc["policy"] = json!({"rules": [
        {"when": {"method": "tools/list"}, "hide": {"namePatterns": ["echo"]}},
        {"hide": {"groups": ["calendar"]}}
    ]});
    let mut list = Harness::with_catalog(Catalog::load(&doc).unwrap());
    list.init();
    let listed = list.tool_names(json!({}));
    assert!(!listed.contains(&"echo".to_string()) && !listed.contains(&"list_events".to_string()));
    let mut h = on(Catalog::load(&doc).unwrap(), "/mcp", "mode=search");
    for q in [
        "echo a message back",
        "send a message",
        "list calendar events",
        "create a calendar event",
    ] {
        let top = found(&mut h, q, 20);
        assert!(
            top.iter().all(|t| listed.contains(t)),
            "{q}: {top:?} has a tool tools/list hides"
        );
    }
    for name in ["echo", "list_events"] {
        let e = h.rpc_err(
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": name, "arguments": {"message": "x"}}}),
        );
        assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{name}: {e}");
    }
    // What the list shows is found and called.
    assert!(found(&mut h, "send an email", 5).contains(&"send_email".to_string()));
}

/// `n` distinct made-up words (no catalog word, no stop word).
fn junk(n: usize) -> String {
    (0..n).map(|i| format!("zq{i}x")).collect::<Vec<_>>().join(" ")
}

#[test]
fn the_work_of_one_search_is_capped_by_distinct_query_words() {
    // Issue 23, item 3: every distinct query word costs a pass over every tool's words; a query
    // (or a conversation, for tool_filter) of many distinct words weighs the 32 most frequent.
    let mut h = on(public_servers(), "/mcp/search", "");
    let query = format!("create a branch {}", junk(130));
    assert!(query.len() <= 1000);
    let t0 = std::time::Instant::now();
    let top = found(&mut h, &query, 5);
    let long = t0.elapsed();
    let t0 = std::time::Instant::now();
    let plain = found(&mut h, "create a branch", 5);
    let short = t0.elapsed();
    assert_eq!(top, plain, "the words that occur first are the ones weighed");
    println!("find_tools: {long:?} for 132 distinct words, {short:?} for 2");
    assert!(
        long < short * 30 + std::time::Duration::from_millis(50),
        "{long:?} against {short:?}"
    );
}

#[test]
fn tool_filter_over_a_long_conversation_weighs_its_frequent_words() {
    let mut doc = common::catalog_json();
    doc["middleware"] = json!({"enabled": ["tool_filter"]});
    let mut h = Harness::with_catalog(Catalog::load(&doc).unwrap());
    h.init();
    // 20,000 distinct words once each, and the conversation's subject many times (before the cap:
    // 5.4 s in a debug build; after: 0.46 s).
    let text = format!("{} {}", junk(20_000), "please send an email to the team ".repeat(200));
    let t0 = std::time::Instant::now();
    let r = h.rpc_ok(
        "middleware/invoke",
        json!({"name": "tool_filter", "arguments": {}, "context": [{"type": "text", "text": text}]}),
    );
    let took = t0.elapsed();
    println!("tool_filter over {} bytes: {took:?}", text.len());
    assert_eq!(r["metadata"]["suggestedToolSet"][0], "send_email", "{}", r["metadata"]);
    assert!(took.as_secs_f64() < 3.0, "{took:?}");
}
