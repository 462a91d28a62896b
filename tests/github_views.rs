//! The GitHub MCP server's view semantics (issue 27, item 3), as its source defines them
//! (github/github-mcp-server `pkg/http/handler.go`, `pkg/inventory/filters.go`): `X-MCP-Tools`
//! adds to `X-MCP-Toolsets`, `X-MCP-Exclude-Tools` beats both, read-only beats everything, the
//! URL forms `/x/{toolset}`, `/readonly`, `/x/{toolset}/readonly`, the operator's lockdown as an
//! upper bound no header widens, and renamed tools' old names (aliases): callable, unlisted,
//! logged.

mod common;

use common::{header_fn, Harness, CATALOG};
use mcp_sieve::http::endpoint_view;
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn on(catalog: &Catalog, path: &str, headers: &[(&str, &str)]) -> Harness {
    let mut h = Harness::with_catalog(catalog.clone());
    let hs = header_fn(vec![], headers);
    h.view = endpoint_view(catalog, path, "", &hs, None).unwrap();
    h.init();
    h
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn default() -> Catalog {
    Catalog::from_json_str(CATALOG).unwrap()
}

fn with(extra: Value) -> Catalog {
    let mut doc = common::catalog_json();
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    Catalog::load(&doc).unwrap()
}

#[test]
fn tools_add_to_toolsets_exclude_beats_both_read_only_beats_all() {
    let c = default();
    // X-MCP-Tools adds to the toolsets' tools (GitHub's additionalTools), it does not narrow.
    let mut h = on(
        &c,
        "/mcp",
        &[("x-mcp-toolsets", "utilities"), ("x-mcp-tools", "send_email")],
    );
    let tools = h.tool_names(json!({}));
    assert!(
        tools.contains(&"send_email".into()) && tools.contains(&"echo".into()),
        "{tools:?}"
    );
    assert_eq!(tools.len(), 6, "{tools:?}");
    // Only X-MCP-Tools: just those tools.
    let mut h = on(&c, "/mcp", &[("x-mcp-tools", "add, echo")]);
    assert_eq!(sorted(h.tool_names(json!({}))), ["add", "echo"]);
    // Exclude beats include, even a tool named in X-MCP-Tools; its use is refused too.
    let mut h = on(
        &c,
        "/mcp",
        &[
            ("x-mcp-toolsets", "utilities"),
            ("x-mcp-tools", "add,send_email"),
            ("x-mcp-exclude-tools", "add,send_email"),
        ],
    );
    let tools = h.tool_names(json!({}));
    assert!(!tools.contains(&"add".into()) && !tools.contains(&"send_email".into()) && tools.contains(&"echo".into()));
    let e = h.rpc_err("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}));
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{e}");
    // Exclude alone: everything else.
    let mut h = on(&c, "/mcp", &[("x-mcp-exclude-tools", "echo")]);
    let all = c.section(mcp_sieve::model::Kind::Tool).items.len();
    assert_eq!(h.list_all("tools/list", "tools", json!({})).len(), all - 1);
    // Read-only beats an explicit X-MCP-Tools: send_email is not read-only.
    let mut h = on(
        &c,
        "/mcp",
        &[("x-mcp-tools", "send_email,list_messages"), ("x-mcp-readonly", "1")],
    );
    assert_eq!(h.tool_names(json!({})), ["list_messages"]);
}

#[test]
fn githubs_url_forms_sit_beside_named_views() {
    let c = default();
    let mut h = on(&c, "/mcp/x/email", &[]);
    let email = sorted(h.list_all("tools/list", "tools", json!({})));
    let mut by_header = on(&c, "/mcp", &[("x-mcp-toolsets", "email")]);
    assert_eq!(email, sorted(by_header.list_all("tools/list", "tools", json!({}))));
    assert!(email.contains(&"send_email".into()));
    let mut h = on(&c, "/mcp/x/email/readonly", &[]);
    assert_eq!(
        sorted(h.list_all("tools/list", "tools", json!({}))),
        ["list_messages", "read_message", "search_emails"]
    );
    let mut h = on(&c, "/mcp/readonly", &[]);
    let ro = h.list_all("tools/list", "tools", json!({}));
    assert!(ro.contains(&"echo".into()) && !ro.iter().any(|t| t == "send_email" || t == "drop_table"));
    // The URL form narrows further with headers, and is in the URL: lists stay public in 2026.
    let mut h = on(&c, "/mcp/x/email", &[("x-mcp-exclude-tools", "send_email")]);
    assert!(!h.tool_names(json!({})).contains(&"send_email".into()));
    let v = endpoint_view(&c, "/mcp/x/email", "", &|_| None, None).unwrap().unwrap();
    assert!(!v.from_headers());
    // A named view wins over the GitHub form of the same name; other paths stay 404.
    let named = with(json!({"views": {"readonly": {"filter": {"groups": ["calendar"]}}}}));
    let mut h = on(&named, "/mcp/readonly", &[]);
    assert!(h.tool_names(json!({})).contains(&"create_event".into()));
    for path in ["/mcp/x", "/mcp/x/", "/mcp/y/email", "/mcp/x/a/b", "/mcp/nope/readonly"] {
        let e = endpoint_view(&c, path, "", &|_| None, None).unwrap_err();
        assert_eq!(e.status, 404, "{path}");
    }
}

#[test]
fn the_operators_lockdown_is_a_bound_no_header_widens() {
    let locked = with(json!({"lockdown": {"enabled": true, "toolsets": ["utilities", "email"],
        "excludeTools": ["add"], "readOnly": false}}));
    // Every request, with no header at all.
    let mut h = on(&locked, "/mcp", &[]);
    let tools = h.tool_names(json!({}));
    assert!(
        tools.contains(&"send_email".into()) && !tools.contains(&"add".into()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"create_event".into()));
    // Headers only narrow inside it: X-MCP-Tools asking for an excluded or outside tool gets
    // nothing more, X-MCP-Lockdown: false does not turn it off.
    let mut h = on(
        &locked,
        "/mcp",
        &[("x-mcp-tools", "add,create_event,echo"), ("x-mcp-lockdown", "false")],
    );
    assert_eq!(h.tool_names(json!({})), ["echo"]);
    let e = h.rpc_err("tools/call", json!({"name": "create_event", "arguments": {}}));
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{e}");
    // Named views and URL forms are bounded too.
    let mut h = on(&locked, "/mcp/x/calendar", &[]);
    assert!(h.tool_names(json!({})).is_empty());
    // Not enabled by the operator: a request turns it on for itself (default bound: read-only).
    let c = default();
    let mut h = on(&c, "/mcp", &[("x-mcp-lockdown", "true")]);
    let ro = h.list_all("tools/list", "tools", json!({}));
    assert!(ro.contains(&"echo".into()) && !ro.contains(&"send_email".into()));
    let mut h = on(&c, "/mcp", &[("x-mcp-lockdown", "false")]);
    assert!(h.tool_names(json!({})).contains(&"send_email".into()));
    // MCP_SIEVE_LOCKDOWN's document edit turns the operator's switch on.
    let text = mcp_sieve::catalog::Lockdown::enable_in(CATALOG).unwrap();
    assert!(Catalog::from_json_str(&text).unwrap().lockdown.enabled);
    assert!(mcp_sieve::catalog::Lockdown::var_enables(Some(" TRUE ")));
    assert!(!mcp_sieve::catalog::Lockdown::var_enables(Some("0")));
    // Malformed lockdowns are refused naming the field.
    let mut doc = common::catalog_json();
    for (bad, want) in [
        (json!([]), "lockdown must be an object"),
        (json!({"enable": true}), "unknown field \"enable\""),
        (json!({"readOnly": "yes"}), "lockdown.readOnly must be true or false"),
        (json!({"excludeTools": "add"}), "lockdown.excludeTools"),
    ] {
        doc["lockdown"] = bad;
        let e = Catalog::load(&doc).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn a_renamed_tools_old_name_is_callable_unlisted_and_logged() {
    let mut doc = common::catalog_json();
    let echo = doc["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "echo")
        .unwrap();
    echo["aliases"] = json!(["say"]);
    doc["overlay"] = json!({"add": {"aliases": ["sum", "plus"]}});
    let c = Catalog::load(&doc).unwrap();
    assert_eq!(c.aliases.get("say").map(String::as_str), Some("echo"));
    assert_eq!(c.aliases.get("plus").map(String::as_str), Some("add"));
    let mut h = on(&c, "/mcp", &[]);
    let listed = h.list_all_items("tools/list", "tools", json!({}));
    assert!(
        listed.iter().all(|t| t.get("aliases").is_none()),
        "aliases are not on the wire"
    );
    let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&"say") && !names.contains(&"sum") && names.contains(&"echo"));
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "say", "arguments": {"message": "hi"}}}),
        &[],
    );
    assert_eq!(common::response_of(&r)["result"]["content"][0]["text"], json!("hi"));
    assert!(
        r.log
            .iter()
            .any(|l| l.contains("deprecated") && l.contains("\"say\"") && l.contains("\"echo\"")),
        "{:?}",
        r.log
    );
    let ok = h.rpc_ok("tools/call", json!({"name": "sum", "arguments": {"a": 2, "b": 3}}));
    assert!(ok["content"][0]["text"].as_str().unwrap().contains('5'), "{ok}");
    // Search mode's call_tool takes an old name as tools/call does.
    let mut h = Harness::with_catalog(c.clone());
    h.view = endpoint_view(&c, "/mcp", "mode=search", &header_fn(vec![], &[]), None).unwrap();
    h.init();
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "call_tool",
            "arguments": {"name": "say", "arguments": {"message": "found"}}}}),
        &[],
    );
    assert_eq!(
        common::response_of(&r)["result"]["content"][0]["text"],
        json!("found"),
        "{:?}",
        r
    );
    assert!(
        r.log.iter().any(|l| l.contains("deprecated") && l.contains("\"say\"")),
        "{:?}",
        r.log
    );
    // An alias is bounded by the view like its tool, and X-MCP-Tools accepts old names.
    let mut h = on(&c, "/mcp", &[("x-mcp-exclude-tools", "echo")]);
    let e = h.rpc_err("tools/call", json!({"name": "say", "arguments": {"message": "x"}}));
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{e}");
    let mut h = on(&c, "/mcp", &[("x-mcp-tools", "say")]);
    assert_eq!(h.tool_names(json!({})), ["echo"]);
    // An alias that is a tool's name, or names two tools, is a configuration error.
    for (overlay, want) in [
        (json!({"add": {"aliases": ["echo"]}}), "also a tool's name"),
        (json!({"add": {"aliases": ["say"]}}), "alias of both"),
    ] {
        doc["overlay"] = overlay;
        let e = Catalog::load(&doc).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn an_overlay_alias_counts_in_x_mcp_tools_over_a_gateway_catalog() {
    use mcp_sieve::catalog::Upstream;
    use mcp_sieve::model::Kind;
    use mcp_sieve::upstream::{build_many, Lists, Source};
    let doc = json!({
        "upstreams": {"gh": {"url": "http://127.0.0.1:9/gh"}},
        "overlay": {"gh_create_issue": {"aliases": ["open_issue"]}}
    });
    let ups = Upstream::parse_all(doc.get("upstream"), doc.get("upstreams")).unwrap();
    let mut lists = Lists::new(json!({"capabilities": {"tools": {}}}));
    lists.set(
        Kind::Tool,
        serde_json::from_value(json!([
            {"name": "create_issue", "description": "Open an issue", "inputSchema": {"type": "object"}},
            {"name": "list_issues", "description": "List issues", "inputSchema": {"type": "object"}}
        ]))
        .unwrap(),
    );
    let sources = [Source {
        index: 0,
        upstream: &ups[0],
        lists: &lists,
    }];
    let c = build_many(&doc, &sources).unwrap();
    assert_eq!(
        c.aliases.get("open_issue").map(String::as_str),
        Some("gh_create_issue"),
        "{:?}",
        c.aliases
    );
    let mut h = on(&c, "/mcp", &[("x-mcp-tools", "open_issue")]);
    assert_eq!(h.tool_names(json!({})), ["gh_create_issue"]);
    let mut h = on(&c, "/mcp", &[("x-mcp-exclude-tools", "open_issue")]);
    assert_eq!(h.tool_names(json!({})), ["gh_list_issues"]);
}
