//! The concern conversation of a 2025-11-25 session, end to end through `http::handle`:
//! concerns in `notifications/initialized` (Option A), `concerns/update` (Option B) announcing the
//! lists it changed, `concerns/list`, concerns in `initialize` (Option C), invalid values and
//! undeclared concerns. Expected sets are computed from the catalog document itself: a primitive's
//! concern values are its `_meta.concerns` overlaid by the document's `concernMapping`, which wins.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{catalog_json, messages, Harness, LEGACY};
use serde_json::{json, Map, Value};

const WARNINGS: &str = "dev.mcp-sieve/warnings";

/// The concern values of one catalog item: `_meta.concerns`, then `concernMapping[name]` on top.
fn effective_concerns(doc: &Value, item: &Value) -> Map<String, Value> {
    let mut c = item["_meta"]["concerns"].as_object().cloned().unwrap_or_default();
    let name = item["name"].as_str().unwrap();
    if let Some(m) = doc["concernMapping"][name].as_object() {
        c.extend(m.clone());
    }
    c
}

/// Names of the items of `key` (`tools`, `resources`, ...) that pass `config` under the rule of
/// ARCHITECTURE.md "Concerns": for every configured concern, unmapped or equal. In catalog order.
fn expected(key: &str, config: &[(&str, &str)]) -> Vec<String> {
    let doc = catalog_json();
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| {
            let c = effective_concerns(&doc, item);
            config.iter().all(|(k, v)| c.get(*k).is_none_or(|x| x == &json!(v)))
        })
        .map(|item| item["name"].as_str().unwrap().to_string())
        .collect()
}

fn list(h: &mut Harness, method: &str, key: &str) -> Vec<String> {
    h.list_all(method, key, json!({}))
}

/// A session: initialize (with `init_extra` merged into its params) + notifications/initialized
/// with `initialized_params`.
fn session(init_extra: Value, initialized_params: Value) -> (Harness, Value) {
    let mut h = Harness::new();
    let r = h.initialize(Harness::init_params(LEGACY, init_extra));
    h.initialized(initialized_params);
    (h, r)
}

#[test]
fn the_expected_sets_are_not_trivial() {
    // The mapping matters for these tools: without it the sets below would differ.
    let high = expected("tools", &[("security", "high")]);
    let low = expected("tools", &[("security", "low")]);
    let all = expected("tools", &[]);
    assert_eq!(all.len(), 74);
    for t in [
        "send_email",
        "run_query",
        "export_table",
        "echo",
        "ping",
        "get_system_health",
    ] {
        assert!(high.contains(&t.to_string()), "{t}");
    }
    for t in ["list_pull_requests", "draft_reply", "generate_uuid", "list_directory"] {
        assert!(!high.contains(&t.to_string()), "{t}");
    }
    // list_pull_requests and draft_reply say "low" in _meta.concerns but are "medium" by mapping.
    for t in ["list_pull_requests", "draft_reply", "echo"] {
        assert!(!low.contains(&t.to_string()), "{t}");
    }
    assert!(low.contains(&"generate_uuid".to_string()));
    assert!(high.len() > 30 && high.len() < all.len() && low.len() < high.len());
}

#[test]
fn the_concern_conversation() {
    // initialize, then notifications/initialized carrying the host's concerns (Option A).
    let (mut h, init) = session(Value::Null, json!({"concerns": {"security": "high"}}));
    let declared = &init["result"]["capabilities"]["concerns"];
    assert_eq!(declared[0]["name"], "security");
    assert_eq!(declared[0]["values"], json!(["high", "medium", "low"]));

    // tools/list shows only tools whose effective security is high, or that have none.
    let high = list(&mut h, "tools/list", "tools");
    assert_eq!(high, expected("tools", &[("security", "high")]));
    // The other kinds are filtered by the same rule.
    assert_eq!(
        list(&mut h, "resources/list", "resources"),
        expected("resources", &[("security", "high")])
    );
    assert_eq!(
        list(&mut h, "prompts/list", "prompts"),
        expected("prompts", &[("security", "high")])
    );
    assert_eq!(
        list(&mut h, "resources/templates/list", "resourceTemplates"),
        expected("resourceTemplates", &[("security", "high")])
    );

    // concerns/update to low, with Accept allowing SSE: list_changed comes before the response.
    let body = json!({"jsonrpc": "2.0", "id": "upd", "method": "concerns/update",
                      "params": {"concerns": {"security": "low"}}});
    let r = h.post(&body, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v == "text/event-stream"),
        "{:?}",
        r.headers
    );
    let msgs = messages(&r);
    let pos = |pred: &dyn Fn(&Value) -> bool| msgs.iter().position(pred);
    let tools_changed = pos(&|m| m["method"] == "notifications/tools/list_changed").expect("tools/list_changed");
    let response = pos(&|m| m["id"] == "upd").expect("the response");
    assert!(tools_changed < response, "{msgs:?}");
    assert_eq!(response, msgs.len() - 1, "the response ends the stream");
    assert_eq!(msgs[response]["result"]["configuration"], json!({"security": "low"}));
    // Every kind whose visible set changed is announced once: resources and prompts changed too.
    let methods: Vec<&str> = msgs[..response].iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "notifications/tools/list_changed",
            "notifications/resources/list_changed",
            "notifications/prompts/list_changed"
        ]
    );

    // tools/list again shows the new set.
    let low = list(&mut h, "tools/list", "tools");
    assert_eq!(low, expected("tools", &[("security", "low")]));
    assert_ne!(low, high);

    // A tool outside the view can still be called (view filters only narrow lists).
    let r = h.rpc_ok(
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "still here"}}),
    );
    assert_eq!(r["content"][0]["text"], "still here");

    // concerns/list reports the declaration, what the host configured and what is in effect.
    let r = h.rpc_ok("concerns/list", json!({}));
    assert_eq!(r["configuration"], json!({"security": "low"}));
    assert_eq!(r["applyDefaults"], false);
    let security = &r["concerns"][0];
    assert_eq!(security["name"], "security");
    assert_eq!(security["default"], "medium");
    assert_eq!(security["configured"], "low");
    assert_eq!(security["effective"], "low");
    let cost = &r["concerns"][1];
    assert_eq!(cost["name"], "cost");
    assert_eq!(cost["default"], "moderate");
    assert_eq!(cost["configured"], Value::Null);
    // Unconfigured concerns are ignored by default (applyDefaults false): nothing in effect.
    assert_eq!(cost["effective"], Value::Null);

    // An update that changes no list announces nothing: a plain JSON answer.
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "concerns/update", "params": {"concerns": {"security": "low"}}}),
        &[],
    );
    assert_eq!(messages(&r).len(), 1, "{}", r.body);
    assert!(r
        .headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v == "application/json"));
}

#[test]
fn concerns_in_initialize_apply_option_c() {
    let (mut h, init) = session(json!({"concerns": {"security": "low"}}), Value::Null);
    assert!(init["result"].get("_meta").is_none(), "no warnings: {init}");
    assert_eq!(
        list(&mut h, "tools/list", "tools"),
        expected("tools", &[("security", "low")])
    );
    let r = h.rpc_ok("concerns/list", json!({}));
    assert_eq!(r["configuration"], json!({"security": "low"}));
    assert_eq!(r["concerns"][0]["configured"], "low");
}

#[test]
fn initialized_concerns_merge_over_initialize_concerns() {
    let (mut h, _) = session(
        json!({"concerns": {"security": "high"}}),
        json!({"concerns": {"cost": "minimal"}}),
    );
    let both = [("security", "high"), ("cost", "minimal")];
    assert_eq!(list(&mut h, "tools/list", "tools"), expected("tools", &both));
    let r = h.rpc_ok("concerns/list", json!({}));
    assert_eq!(r["configuration"], json!({"security": "high", "cost": "minimal"}));
}

#[test]
fn before_any_configuration_concerns_filter_nothing() {
    let (mut h, _) = session(Value::Null, Value::Null);
    assert_eq!(list(&mut h, "tools/list", "tools"), expected("tools", &[]));
    assert_eq!(list(&mut h, "prompts/list", "prompts"), expected("prompts", &[]));
    let r = h.rpc_ok("concerns/list", json!({}));
    assert_eq!(r["configuration"], json!({}));
}

#[test]
fn an_invalid_value_is_rejected_with_the_valid_values() {
    let (mut h, _) = session(Value::Null, json!({"concerns": {"security": "high"}}));
    let e = h.rpc_err("concerns/update", json!({"concerns": {"security": "extreme"}}));
    assert_eq!(e["code"], -32602);
    let m = e["message"].as_str().unwrap();
    assert!(
        m.contains("params.concerns.security") && m.contains("high, medium, low"),
        "{m}"
    );
    assert_eq!(e["data"]["validValues"], json!(["high", "medium", "low"]));
    assert_eq!(e["data"]["concern"], "security");
    assert_eq!(e["data"]["value"], "extreme");
    // A rejected update changes nothing, also for its valid entries.
    let e = h.rpc_err(
        "concerns/update",
        json!({"concerns": {"cost": "minimal", "security": 3}}),
    );
    assert_eq!(e["code"], -32602);
    let r = h.rpc_ok("concerns/list", json!({}));
    assert_eq!(r["configuration"], json!({"security": "high"}));
    assert_eq!(
        list(&mut h, "tools/list", "tools"),
        expected("tools", &[("security", "high")])
    );
}

#[test]
fn an_undeclared_concern_is_ignored_with_a_warning() {
    let (mut h, _) = session(Value::Null, Value::Null);
    let r = h.rpc_ok(
        "concerns/update",
        json!({"concerns": {"latency": "fast", "security": "medium"}}),
    );
    assert_eq!(r["configuration"], json!({"security": "medium"}));
    let warnings = r["_meta"][WARNINGS].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = warnings[0].as_str().unwrap();
    assert!(w.contains("latency") && w.contains("params.concerns.latency"), "{w}");
    assert_eq!(
        list(&mut h, "tools/list", "tools"),
        expected("tools", &[("security", "medium")])
    );
    // Option C warns the same way, in the initialize result.
    let (_, init) = session(json!({"concerns": {"latency": "fast"}}), Value::Null);
    let w = init["result"]["_meta"][WARNINGS][0].as_str().expect("warning");
    assert!(w.contains("latency"), "{w}");
}

#[test]
fn null_removes_a_configured_concern() {
    let (mut h, _) = session(Value::Null, json!({"concerns": {"security": "high"}}));
    let r = h.rpc_ok("concerns/update", json!({"concerns": {"security": null}}));
    assert_eq!(r["configuration"], json!({}));
    assert_eq!(list(&mut h, "tools/list", "tools"), expected("tools", &[]));
}
