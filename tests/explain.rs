//! Reasons and audit (issue 27 item 2): `sieve/explain` answers why an item is hidden from this
//! caller — the view, each policy rule by its id, the caller's concerns and filter, initial
//! checks, an upstream that is down, or the catalog itself — only to callers the document's
//! `explain` admits; a policy rule in `"mode": "audit"` hides nothing and logs what it would hide.

mod common;

use common::{header_fn, response_of, Harness};
use mcp_sieve::catalog::Upstream;
use mcp_sieve::http::endpoint_view;
use mcp_sieve::model::Kind;
use mcp_sieve::upstream::{build_many, Lists, Source};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn doc() -> Value {
    json!({
        "concerns": [{"name": "security", "values": ["high", "medium", "low"]}],
        "tools": [
            {"name": "read_mail", "inputSchema": {"type": "object"}, "groups": ["email"], "tags": ["read-only"]},
            {"name": "send_mail", "inputSchema": {"type": "object"}, "groups": ["email"], "tags": ["write"],
             "_meta": {"concerns": {"security": "low"}}},
            {"name": "drop_db", "inputSchema": {"type": "object"}, "groups": ["db"], "tags": ["destructive"]},
            {"name": "export_db", "inputSchema": {"type": "object"}, "groups": ["db"], "tags": ["write"]},
            {"name": "list_only", "inputSchema": {"type": "object"}, "groups": ["db"]}
        ],
        "prompts": [{"name": "summarize"}],
        "policy": {"rules": [
            {"hide": {"tags": ["destructive"]}},
            {"id": "no-export", "mode": "audit", "hide": {"namePatterns": ["export_*"]}},
            {"id": "not-listed", "when": {"method": "tools/list"}, "hide": {"namePatterns": ["list_only"]}},
            {"id": "bots", "when": {"principal": "bot*"}, "hide": {"groups": ["email"]}}
        ]},
        "views": {"mail": {"filter": {"groups": ["email"]}}},
        "explain": {"principals": ["alice", "bot"]}
    })
}

fn harness(doc: &Value, principal: Option<&str>) -> Harness {
    let mut h = Harness::with_catalog(Catalog::load(doc).unwrap());
    h.principal = principal.map(str::to_string);
    h.init();
    h
}

fn explain(h: &mut Harness, params: Value) -> Value {
    h.rpc_ok("sieve/explain", params)
}

fn codes(answer: &Value) -> Vec<String> {
    answer["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn only_callers_the_document_admits_may_ask() {
    let mut off = doc();
    off.as_object_mut().unwrap().remove("explain");
    let e = harness(&off, Some("alice")).rpc_err("sieve/explain", json!({"name": "drop_db"}));
    assert_eq!(e["code"], -32601);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("is off in this server's document"),
        "{e}"
    );

    let e = harness(&doc(), Some("mallory")).rpc_err("sieve/explain", json!({"name": "drop_db"}));
    assert_eq!(e["code"], -32601);
    assert!(
        e["message"].as_str().unwrap().contains("does not admit \"mallory\""),
        "{e}"
    );
    let e = harness(&doc(), None).rpc_err("sieve/explain", json!({"name": "drop_db"}));
    assert!(e["message"].as_str().unwrap().contains("without a principal"), "{e}");

    let mut anyone = doc();
    anyone["explain"] = json!(true);
    let a = explain(&mut harness(&anyone, None), json!({"name": "read_mail"}));
    assert_eq!((a["visible"].clone(), a["reasons"].clone()), (json!(true), json!([])));

    let e = harness(&doc(), Some("alice")).rpc_err("sieve/explain", json!({"kind": "widget", "name": "x"}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("expected tool, prompt"), "{e}");
    let e = harness(&doc(), Some("alice")).rpc_err("sieve/explain", json!({}));
    assert!(
        e["message"].as_str().unwrap().contains("params.name is required"),
        "{e}"
    );
}

#[test]
fn it_is_advertised_only_to_callers_who_may_use_it() {
    let mut h = Harness::with_catalog(Catalog::load(&doc()).unwrap());
    h.principal = Some("alice".into());
    let init = h.initialize(Harness::init_params(common::LEGACY, Value::Null));
    let caps = &init["result"]["capabilities"];
    assert_eq!(
        caps["experimental"]["dev.mcp-sieve/explain"],
        json!({"method": "sieve/explain"}),
        "{caps}"
    );
    let discover = response_of(&h.modern(json!(5), "server/discover", json!({})));
    let ext = &discover["result"]["capabilities"]["extensions"];
    assert_eq!(
        ext["dev.mcp-sieve/explain"],
        json!({"method": "sieve/explain"}),
        "{ext}"
    );

    let mut m = Harness::with_catalog(Catalog::load(&doc()).unwrap());
    m.principal = Some("mallory".into());
    let init = m.initialize(Harness::init_params(common::LEGACY, Value::Null));
    assert!(init["result"]["capabilities"].get("experimental").is_none(), "{init}");
    let discover = response_of(&m.modern(json!(5), "server/discover", json!({})));
    assert!(discover["result"]["capabilities"]["extensions"]
        .get("dev.mcp-sieve/explain")
        .is_none());
}

#[test]
fn policy_rules_are_named_by_id_and_the_catalog_answers_for_what_does_not_exist() {
    let mut h = harness(&doc(), Some("alice"));
    let a = explain(&mut h, json!({"name": "drop_db"}));
    assert_eq!(a["exists"], true);
    assert_eq!(
        (a["visible"].clone(), a["callable"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(a["cause"], "policy");
    assert_eq!(codes(&a), ["policy:rule-0"], "the default id is the rule's index");
    assert_eq!(
        a["reasons"][0]["rule"],
        json!({"hide": {"tags": ["destructive"]}, "id": "rule-0"})
    );
    assert_eq!(a["reasons"][0]["methods"], json!(["tools/list", "tools/call"]));

    // A rule limited to one method hides from the list only: the tool stays callable.
    let a = explain(&mut h, json!({"name": "list_only"}));
    assert_eq!(
        (a["visible"].clone(), a["callable"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(codes(&a), ["policy:not-listed"]);
    assert_eq!(a["reasons"][0]["methods"], json!(["tools/list"]));

    let a = explain(&mut h, json!({"name": "no_such_tool"}));
    assert_eq!(
        (
            a["exists"].clone(),
            a["visible"].clone(),
            a["cause"].clone(),
            a["reasons"].clone()
        ),
        (json!(false), json!(false), json!("catalog"), json!([]))
    );
    let a = explain(&mut h, json!({"kind": "prompt", "name": "summarize"}));
    assert_eq!(
        (a["kind"].clone(), a["visible"].clone()),
        (json!("prompt"), json!(true))
    );

    // The same rule for another caller: by principal.
    let mut bot = harness(&doc(), Some("bot"));
    let a = explain(&mut bot, json!({"name": "send_mail"}));
    assert_eq!(codes(&a), ["policy:bots"]);
    assert!(bot.tool_names(json!({})).iter().all(|n| n != "send_mail"));
}

#[test]
fn the_callers_view_concerns_and_filter_are_reasons_of_their_own() {
    let mut h = Harness::with_catalog(Catalog::load(&doc()).unwrap());
    h.principal = Some("alice".into());
    let catalog = Catalog::load(&doc()).unwrap();
    h.view = endpoint_view(&catalog, "/mcp/mail", "", &header_fn(vec![], &[]), None).unwrap();
    h.init();
    let a = explain(&mut h, json!({"name": "list_only"}));
    assert_eq!(codes(&a), ["view", "policy:not-listed"]);
    assert_eq!(
        (a["cause"].clone(), a["reasons"][0]["view"].clone()),
        (json!("view"), json!({"name": "mail"}))
    );
    assert_eq!(a["callable"], false, "a view is policy: a use outside it is refused");

    // In a search-mode view a visible tool is found by find_tools, not listed.
    let mut searching = Harness::with_catalog(Catalog::load(&doc()).unwrap());
    searching.principal = Some("alice".into());
    searching.view = endpoint_view(&catalog, "/mcp", "mode=search", &header_fn(vec![], &[]), None).unwrap();
    searching.init();
    let a = explain(&mut searching, json!({"name": "read_mail"}));
    assert_eq!(
        (a["visible"].clone(), a["via"].clone()),
        (json!(true), json!("find_tools"))
    );

    // Concerns and the filter a list would send narrow the list, not a use.
    let a = explain(
        &mut h,
        json!({"name": "send_mail", "concerns": {"security": "high"}, "filter": {"tags": ["read-only"]}}),
    );
    assert_eq!(codes(&a), ["concern:security", "filter"]);
    assert_eq!(a["reasons"][0]["configured"], "high");
    assert_eq!(a["reasons"][0]["mapped"], "low");
    assert_eq!(a["reasons"][1]["field"], "tags");
    assert_eq!(a["reasons"][1]["filter"], json!({"tags": ["read-only"]}));
    // Each field that hides it alone is a reason of its own; one that would show it is none.
    let parts = explain(
        &mut h,
        json!({"name": "send_mail", "filter": {"namePatterns": ["read_*"], "tags": ["read-only"], "groups": ["email"]}}),
    );
    let fields: Vec<&str> = parts["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["namePatterns", "tags"], "{parts}");
    assert_eq!(parts["reasons"][0]["filter"], json!({"namePatterns": ["read_*"]}));
    assert_eq!(
        (a["visible"].clone(), a["callable"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(a["cause"], "concern");
    // The same filter and concerns on tools/list agree.
    let listed = h.tool_names(json!({"concerns": {"security": "high"}, "filter": {"tags": ["read-only"]}}));
    assert_eq!(listed, ["read_mail"]);
}

#[test]
fn an_audit_rule_hides_nothing_and_logs_what_it_would_hide() {
    let mut h = harness(&doc(), Some("alice"));
    assert!(h.tool_names(json!({})).contains(&"export_db".to_string()));
    let list = h.post(
        &json!({"jsonrpc": "2.0", "id": 90, "method": "tools/list", "params": {}}),
        &[],
    );
    assert_eq!(
        list.log,
        ["audit: policy rule \"no-export\" (mode audit) would hide from tools/list (tools): \"export_db\""]
    );
    let call = h.post(
        &json!({"jsonrpc": "2.0", "id": 91, "method": "tools/call", "params": {"name": "export_db", "arguments": {}}}),
        &[],
    );
    assert!(response_of(&call)["result"].is_object(), "{}", call.body);
    assert_eq!(
        call.log,
        ["audit: policy rule \"no-export\" (mode audit) would hide from tools/call (tools): \"export_db\""]
    );
    // A use of another tool is not logged by it.
    let other = h.post(
        &json!({"jsonrpc": "2.0", "id": 92, "method": "tools/call", "params": {"name": "read_mail", "arguments": {}}}),
        &[],
    );
    assert!(other.log.is_empty(), "{:?}", other.log);

    let a = explain(&mut h, json!({"name": "export_db"}));
    assert_eq!(
        (a["visible"].clone(), a["callable"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(codes(&a), ["audit:no-export"]);
    assert_eq!(a["reasons"][0]["rule"]["mode"], "audit");
    assert!(a.get("cause").is_none());
}

#[test]
fn rule_ids_and_modes_are_checked() {
    let mut d = doc();
    d["policy"]["rules"][1]["id"] = json!("rule-0");
    let e = Catalog::load(&d).unwrap_err().to_string();
    assert!(
        e.contains("policy.rules[1] has the id \"rule-0\" of policy.rules[0]"),
        "{e}"
    );
    let mut d = doc();
    d["policy"]["rules"][1]["mode"] = json!("dry-run");
    let e = Catalog::load(&d).unwrap_err().to_string();
    assert!(e.contains("policy.rules[1].mode must be \"enforce\""), "{e}");
}

#[test]
fn a_failed_initial_check_is_named_to_a_stateless_caller_that_asks_why() {
    let mut d = doc();
    d["policy"]["initialChecks"] = json!([{"allowClients": ["good-*"]}]);
    let mut h = Harness::with_catalog(Catalog::load(&d).unwrap());
    h.principal = Some("alice".into());
    let refused = response_of(&h.modern(json!(1), "tools/list", json!({})));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let a = response_of(&h.modern(json!(2), "sieve/explain", json!({"name": "read_mail"})));
    let a = &a["result"];
    assert_eq!(codes(a), ["initial-check:allowClients"]);
    assert_eq!(
        (a["visible"].clone(), a["cause"].clone()),
        (json!(false), json!("initial-check"))
    );
    assert!(!a.to_string().contains("good-*"), "the allow-list is never named: {a}");
    // A caller the document does not admit is refused by the check first, as before.
    h.principal = Some("mallory".into());
    let r = response_of(&h.modern(json!(3), "sieve/explain", json!({"name": "read_mail"})));
    assert_eq!(r["error"]["code"], -32600, "{r}");
}

#[test]
fn an_item_of_an_upstream_that_is_down_names_it() {
    let local = json!({
        "upstreams": {
            "github": {"url": "http://127.0.0.1:9/gh", "prefix": "gh_"},
            "py": {"url": "http://127.0.0.1:9/py", "prefix": "py_"}
        },
        "explain": true
    });
    let ups = Upstream::parse_all(local.get("upstream"), local.get("upstreams")).unwrap();
    let mut gh = Lists::new(json!({"capabilities": {"tools": {}}}));
    gh.set(
        Kind::Tool,
        serde_json::from_value(json!([{"name": "create_issue", "inputSchema": {"type": "object"}}])).unwrap(),
    );
    // Only github answered; py is down.
    let sources = [Source {
        index: 0,
        upstream: &ups[0],
        lists: &gh,
    }];
    let mut h = Harness::with_catalog(build_many(&local, &sources).unwrap());
    h.init();
    let a = explain(&mut h, json!({"name": "py_add"}));
    assert_eq!(codes(&a), ["upstream-down:py"]);
    assert_eq!(
        (a["exists"].clone(), a["cause"].clone()),
        (json!(false), json!("upstream-down"))
    );
    let a = explain(&mut h, json!({"name": "gh_nope"}));
    assert_eq!(
        (a["cause"].clone(), a["reasons"].clone()),
        (json!("catalog"), json!([]))
    );
    let a = explain(&mut h, json!({"name": "gh_create_issue"}));
    assert_eq!(a["visible"], true);
}
