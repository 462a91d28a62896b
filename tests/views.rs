//! Views (issue 15, items 1–4): the endpoint chooses what a client that sends no filter sees —
//! `/mcp/{view}`, a URL query, GitHub-compatible headers — and the view is policy: every list is
//! narrowed and every use outside it is "Unknown"; a session stays on the view it was opened on.

mod common;

use common::{header_fn, Harness, CATALOG};
use mcp_sieve::http::endpoint_view;
use mcp_sieve::Catalog;
use serde_json::json;

fn view(
    path: &str,
    query: &str,
    headers: &[(&str, &str)],
) -> Result<Option<std::sync::Arc<mcp_sieve::filter::EndpointView>>, Box<mcp_sieve::http::Response>> {
    let catalog = Catalog::from_json_str(CATALOG).unwrap();
    let h = header_fn(vec![], headers);
    endpoint_view(&catalog, path, query, &h, None)
}

fn on(path: &str, query: &str, headers: &[(&str, &str)]) -> Harness {
    let mut h = Harness::new();
    h.view = view(path, query, headers).unwrap();
    h.init();
    h
}

#[test]
fn the_plain_endpoint_has_no_view_and_bad_views_are_refused_by_name() {
    assert!(view("/mcp", "", &[]).unwrap().is_none());
    let e = view("/mcp/nope", "", &[]).unwrap_err();
    assert_eq!(e.status, 404);
    assert!(
        e.body.contains("email") && e.body.contains("utilities"),
        "lists the views: {}",
        e.body
    );
    for (query, named) in [
        ("colour=red", "colour"),
        ("concerns.security=extreme", "extreme"),
        ("concerns.nonsense=1", "nonsense"),
        ("names=%ZZ", "%ZZ"),
        ("mode=fast", "mode"),
    ] {
        let e = view("/mcp", query, &[]).unwrap_err();
        assert_eq!(e.status, 400, "{query}");
        assert!(e.body.contains(named), "{query}: {}", e.body);
    }
    // GitHub's relaxed booleans: "yes" is true, "off" is false (issue 27).
    assert!(
        view("/mcp", "", &[("x-mcp-readonly", "yes")])
            .unwrap()
            .unwrap()
            .read_only
    );
    assert!(view("/mcp", "", &[("x-mcp-readonly", "off")]).unwrap().is_none());
    // Issue 23: a glob longer than 256 bytes is refused, naming where it came from.
    let long = "*".repeat(60_000) + "z";
    let e = view("/mcp", "", &[("x-mcp-tools", &format!("git*,{long}"))]).unwrap_err();
    assert_eq!(e.status, 400);
    assert!(
        e.body.contains("X-MCP-Tools") && e.body.contains("60001 bytes") && e.body.contains("256"),
        "{}",
        e.body
    );
    let e = view("/mcp", &format!("names={}", "a".repeat(257)), &[]).unwrap_err();
    assert_eq!(e.status, 400);
    assert!(e.body.contains("names") && e.body.contains("257 bytes"), "{}", e.body);
    let e = view("/mcp", "", &[("x-mcp-toolsets", &"g".repeat(300))]).unwrap_err();
    assert!(
        e.body.contains("X-MCP-Toolsets") && e.body.contains("300 bytes"),
        "{}",
        e.body
    );
    assert!(view("/mcp", &format!("names={}", "?".repeat(256)), &[])
        .unwrap()
        .is_some());
}

#[test]
fn a_named_view_narrows_every_list_and_refuses_every_use_outside_it() {
    let mut h = on("/mcp/email", "", &[]);
    let tools = h.tool_names(json!({}));
    assert!(!tools.is_empty());
    assert!(
        tools.iter().all(|t| [
            "list_messages",
            "read_message",
            "send_email",
            "search_emails",
            "draft_reply",
            "delete_message",
            "archive_message",
            "attach_file_to_email"
        ]
        .contains(&t.as_str())),
        "{tools:?}"
    );
    // The client's own filter narrows further.
    let narrowed = h.tool_names(json!({"filter": {"tags": ["destructive"]}}));
    assert!(narrowed.len() < tools.len() && narrowed.iter().all(|t| tools.contains(t)));
    // A use outside the view is Unknown, like a policy-hidden tool; inside, it works.
    let e = h.rpc_err("tools/call", json!({"name": "echo", "arguments": {"message": "x"}}));
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{e}");
    let groups = h.list_all("groups/list", "groups", json!({}));
    assert!(
        !groups.contains(&"calendar".to_string()),
        "groups outside the view are not listed: {groups:?}"
    );
}

#[test]
fn query_views_and_github_headers() {
    let mut h = on("/mcp", "groups=utilities&names=e*", &[]);
    assert_eq!(h.tool_names(json!({})), ["echo"]);
    let ok = h.rpc_ok("tools/call", json!({"name": "echo", "arguments": {"message": "hi"}}));
    assert_eq!(ok["content"][0]["text"], json!("hi"));
    let e = h.rpc_err("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}));
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"), "{e}");

    let mut h = on(
        "/mcp",
        "",
        &[("x-mcp-toolsets", "utilities"), ("x-mcp-readonly", "true")],
    );
    let tools = h.tool_names(json!({}));
    assert!(!tools.is_empty() && tools.len() <= 5, "{tools:?}");
    let mut h = on("/mcp", "", &[("x-mcp-tools", "add,echo")]);
    assert_eq!(h.tool_names(json!({})), ["echo", "add"]);
    // Concerns in the query: send_email is mapped to security high.
    let mut h = on("/mcp", "concerns.security=medium", &[]);
    assert!(!h.tool_names(json!({})).contains(&"send_email".to_string()));
}

#[test]
fn a_session_stays_on_its_view() {
    let mut h = on("/mcp/utilities", "", &[]);
    assert!(!h.tool_names(json!({})).is_empty());
    // The same session id through the plain endpoint (or another view) is refused.
    h.view = None;
    let r = h.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), &[]);
    assert_eq!(r.status, 404, "{}", r.body);
    h.view = view("/mcp/email", "", &[]).unwrap();
    let r = h.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), &[]);
    assert_eq!(r.status, 404);
}

#[test]
fn identity_names_the_principal_binds_sessions_and_opens_views() {
    let vars = |pairs: &[(&str, &str)]| {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    };
    let cfg = mcp_sieve::http::Config::from_vars(&vars(&[
        ("MCP_SIEVE_TOKENS", r#"{"alice": "token-a", "bot": "token-b"}"#),
        ("MCP_SIEVE_TOKEN", "anon"),
    ]))
    .unwrap();
    use mcp_sieve::http::identify;
    assert_eq!(identify(&cfg, Some("Bearer token-a")), Ok(Some("alice".into())));
    assert_eq!(identify(&cfg, Some("Bearer token-b")), Ok(Some("bot".into())));
    assert_eq!(identify(&cfg, Some("Bearer anon")), Ok(None));
    assert_eq!(identify(&cfg, Some("Bearer nope")), Err(()));
    assert_eq!(identify(&cfg, None), Err(()));
    let bad = mcp_sieve::http::Config::from_vars(&vars(&[("MCP_SIEVE_TOKENS", "[1]")])).unwrap_err();
    assert!(bad.to_string().contains("MCP_SIEVE_TOKENS"), "{bad}");

    // A policy rule by principal and a view open to some principals.
    let mut doc: serde_json::Value = serde_json::from_str(CATALOG).unwrap();
    doc["policy"] = json!({"rules": [{"when": {"principal": "bot*"}, "hide": {"tags": ["destructive"]}}]});
    doc["views"]["team"] = json!({"filter": {"groups": ["email"]}, "principals": ["alice"]});
    let catalog = Catalog::load(&doc).unwrap();
    let h = header_fn(vec![], &[]);
    assert_eq!(
        endpoint_view(&catalog, "/mcp/team", "", &h, None).unwrap_err().status,
        403
    );
    assert_eq!(
        endpoint_view(&catalog, "/mcp/team", "", &h, Some("bot"))
            .unwrap_err()
            .status,
        403
    );
    assert!(endpoint_view(&catalog, "/mcp/team", "", &h, Some("alice"))
        .unwrap()
        .is_some());
    let mut bot = Harness::with_catalog(catalog.clone());
    bot.principal = Some("bot".into());
    bot.init();
    let mut alice = Harness::with_catalog(catalog);
    alice.principal = Some("alice".into());
    alice.init();
    let (b, a) = (bot.tool_names(json!({})), alice.tool_names(json!({})));
    assert!(a.contains(&"delete_message".to_string()) && !b.contains(&"delete_message".to_string()));
    // Alice's session id in bot's hands is unknown.
    alice.principal = Some("bot".into());
    let r = alice.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), &[]);
    assert_eq!(r.status, 404);
}

#[test]
fn a_view_from_headers_makes_2026_lists_private_a_view_in_the_url_keeps_them_public() {
    // The default catalog without its policy rule about the client's name (which makes every
    // list private).
    let mut doc = common::catalog_json();
    doc.as_object_mut().unwrap().remove("policy");
    let catalog = Catalog::load(&doc).unwrap();
    let scope = |path: &str, query: &str, headers: &[(&str, &str)]| {
        let mut h = Harness::with_catalog(catalog.clone());
        let hs = header_fn(vec![], headers);
        h.view = endpoint_view(&catalog, path, query, &hs, None).unwrap();
        let r = common::response_of(&h.modern(json!(1), "tools/list", json!({})));
        r["result"]["cacheScope"].clone()
    };
    // A shared cache keys on the URL: what the URL chooses may be shared.
    assert_eq!(scope("/mcp", "", &[]), json!("public"));
    assert_eq!(scope("/mcp/email", "", &[]), json!("public"));
    assert_eq!(scope("/mcp", "tags=read-only", &[]), json!("public"));
    // What a header chooses is not in the URL: the same URL answers others differently.
    for header in [
        ("x-mcp-toolsets", "email"),
        ("x-mcp-tools", "get_*"),
        ("x-mcp-readonly", "true"),
    ] {
        assert_eq!(scope("/mcp", "", &[header]), json!("private"), "{header:?}");
        assert_eq!(scope("/mcp/email", "", &[header]), json!("private"), "{header:?}");
    }
}

#[test]
fn a_views_selection_is_computed_once_and_kept_for_its_section() {
    // Issue 23, item 3: a view's selection is computed once per request (the list, the use
    // checks, the search tools' policy), not again for every use check.
    use mcp_sieve::model::Kind;
    let catalog = Catalog::from_json_str(CATALOG).unwrap();
    let v = view("/mcp", "names=*e*,*a*i*", &[("x-mcp-tools", "*_*")])
        .unwrap()
        .unwrap();
    let tools = catalog.section(Kind::Tool);
    assert!(!v.kept(Kind::Tool, tools));
    let first = v.visible(Kind::Tool, tools);
    assert!(v.kept(Kind::Tool, tools), "kept after the first use");
    assert!(!v.kept(Kind::Prompt, catalog.section(Kind::Prompt)));
    assert_eq!(v.visible(Kind::Tool, tools), first);
    // Another catalog (a view kept across a catalog replacement, as stdio keeps it) is computed
    // on its own section, never answered from the first one's.
    let mut doc = common::catalog_json();
    doc["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| t["name"] != "send_email");
    let other = Catalog::load(&doc).unwrap();
    let theirs = v.visible(Kind::Tool, other.section(Kind::Tool));
    assert_eq!(theirs.count() + 1, first.count());
    assert!(!v.kept(Kind::Tool, other.section(Kind::Tool)));
    // Through the protocol: one tools/call through a view keeps the tool selection.
    let mut h = Harness::new();
    h.view = view("/mcp", "groups=email", &[]).unwrap();
    h.init();
    h.rpc_ok("tools/call", json!({"name": "list_messages", "arguments": {}}));
    let section = h.server.catalog().section(Kind::Tool);
    assert!(h.view.as_ref().unwrap().kept(Kind::Tool, section));
}

#[test]
fn in_search_mode_call_tool_mirrors_the_inner_tool_name_in_mcp_param_tool() {
    let catalog = Catalog::from_json_str(CATALOG).unwrap();
    let mut h = Harness::with_catalog(catalog.clone());
    let hs = header_fn(vec![], &[]);
    h.view = endpoint_view(&catalog, "/mcp", "mode=search", &hs, None).unwrap();
    // The list tells clients to mirror call_tool's `name` argument (the 2026-07-28 x-mcp-header).
    let listed = common::response_of(&h.modern(json!(1), "tools/list", json!({})));
    let call_tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == json!("call_tool"))
        .unwrap()
        .clone();
    assert_eq!(
        call_tool["inputSchema"]["properties"]["name"]["x-mcp-header"],
        json!("Tool")
    );
    let call = |h: &mut Harness, inner: &str, header: Option<&str>| {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": common::modern_params(
            json!({"name": "call_tool", "arguments": {"name": inner, "arguments": {"message": "hi"}}}))});
        let mut hs = common::modern_headers(&body);
        if let Some(v) = header {
            hs.push(("mcp-param-tool", v.to_string()));
        }
        let hs: Vec<(&str, &str)> = hs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        h.post(&body, &hs)
    };
    // Mcp-Name stays "call_tool" (it mirrors params.name); Mcp-Param-Tool carries the inner name.
    let ok = call(&mut h, "echo", Some("echo"));
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(common::response_of(&ok)["result"]["content"][0]["text"], json!("hi"));
    let encoded = call(&mut h, "echo", Some("=?base64?ZWNobw==?="));
    assert_eq!(
        encoded.status, 200,
        "a Base64 sentinel value is decoded: {}",
        encoded.body
    );
    // A header that names another tool than the body, or none when the body names one: -32020.
    for (inner, header, says) in [
        ("echo", Some("add"), "does not match"),
        ("echo", None, "required"),
        ("echo", Some("=?base64?!!?="), "Base64"),
    ] {
        let r = call(&mut h, inner, header);
        assert_eq!(r.status, 400, "{header:?}: {}", r.body);
        let e = &common::response_of(&r)["error"];
        assert_eq!(e["code"], json!(-32020), "{e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains("Mcp-Param-Tool") && m.contains(says), "{m}");
    }
    // The inner tool's own checks answer: a tool outside the view is unknown, as if called directly.
    let mut narrow = Harness::with_catalog(catalog.clone());
    narrow.view = endpoint_view(&catalog, "/mcp", "groups=utilities&mode=search", &hs, None).unwrap();
    let r = call(&mut narrow, "send_email", Some("send_email"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        common::response_of(&r)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool"),
        "{}",
        r.body
    );
}
