//! Concerns and policy through the protocol (issue 14, items 5–7): a list shows the mapping it
//! filters by; a configuration that cannot be refused never fails open; `ignore`, `clamp` and
//! `applyDefaults` as a client meets them; a policy rule by concern hides only mapped items;
//! `groups/list` and `tags/list` leave out what policy hides entirely; `server/discover`
//! advertises middleware only to clients allowed to use it.

mod common;

use common::{Harness, CATALOG};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn harness_with(edit: impl FnOnce(&mut Value)) -> Harness {
    let mut doc: Value = serde_json::from_str(CATALOG).unwrap();
    edit(&mut doc);
    let mut h = Harness::with_catalog(Catalog::load(&doc).unwrap());
    h.init();
    h
}

fn tool_names(h: &mut Harness, filter: Value) -> Vec<String> {
    h.list_all("tools/list", "tools", json!({ "filter": filter }))
}

#[test]
fn a_listed_mapping_is_the_one_filtered_by() {
    let mut h = harness_with(|_| {});
    // send_email says security "medium" in its own _meta; the internal mapping says "high" and wins.
    let listed = h.list_all_items("tools/list", "tools", json!({}));
    let send = listed.iter().find(|t| t["name"] == "send_email").unwrap();
    assert_eq!(send["_meta"]["concerns"]["security"], json!("high"));
    assert!(tool_names(&mut h, json!({"concerns": {"security": "high"}})).contains(&"send_email".to_string()));
    assert!(!tool_names(&mut h, json!({"concerns": {"security": "medium"}})).contains(&"send_email".to_string()));
    // Every listed mapping agrees with filtering: an item shown with value v passes a filter on v.
    for t in &listed {
        if let Some(Value::String(v)) = t["_meta"]["concerns"].get("security") {
            let name = t["name"].as_str().unwrap().to_string();
            assert!(
                tool_names(&mut h, json!({"concerns": {"security": v}})).contains(&name),
                "{name} {v}"
            );
        }
    }
}

#[test]
fn an_unrefusable_configuration_keeps_its_valid_entries() {
    let mut h = Harness::new();
    h.initialize(Harness::init_params("2025-11-25", json!({})));
    h.initialized(json!({"concerns": {"security": "bogus", "cost": "minimal"}}));
    let all = h.list_all("tools/list", "tools", json!({}));
    let minimal = {
        let mut fresh = Harness::new();
        fresh.init();
        fresh.list_all(
            "tools/list",
            "tools",
            json!({"filter": {"concerns": {"cost": "minimal"}}}),
        )
    };
    assert_eq!(all, minimal, "the valid entry applies; the list is not everything");
    let listed = h.rpc_ok("concerns/list", json!({}));
    assert_eq!(listed["configuration"], json!({"cost": "minimal"}));
    let warnings = listed["warnings"].to_string();
    assert!(
        warnings.contains("params.concerns.security") && warnings.contains("dropped"),
        "{warnings}"
    );
}

#[test]
fn ignore_clamp_and_apply_defaults_through_the_protocol() {
    let mut ignore = harness_with(|d| d["options"]["invalidConcernValue"] = json!("ignore"));
    let r = ignore.rpc_ok(
        "concerns/update",
        json!({"concerns": {"security": "bogus", "cost": "high"}}),
    );
    assert_eq!(r["configuration"], json!({"cost": "high"}));
    assert!(r["_meta"]["dev.mcp-sieve/warnings"].to_string().contains("ignored"));

    let mut clamp = harness_with(|d| {
        d["concerns"][1] = json!({"name": "cost", "values": {"min": 0, "max": 10}});
        d["options"]["invalidConcernValue"] = json!("clamp");
    });
    let r = clamp.rpc_ok("concerns/update", json!({"concerns": {"cost": 99}}));
    assert_eq!(r["configuration"], json!({"cost": "10"}));
    assert!(r["_meta"]["dev.mcp-sieve/warnings"].to_string().contains("clamped"));

    let mut defaults = harness_with(|d| d["options"]["applyDefaults"] = json!(true));
    let before = defaults.rpc_ok("concerns/list", json!({}));
    assert_eq!(
        before["configuration"],
        json!({}),
        "nothing configured: defaults do not apply yet"
    );
    let r = defaults.rpc_ok("concerns/update", json!({"concerns": {"cost": "high"}}));
    assert_eq!(
        r["configuration"],
        json!({"cost": "high", "security": "medium"}),
        "the declared default fills security"
    );
    let names = defaults.list_all("tools/list", "tools", json!({}));
    assert!(
        !names.contains(&"send_email".to_string()),
        "security defaults to medium: send_email (high) is hidden"
    );
}

#[test]
fn a_policy_rule_by_concern_hides_only_mapped_items() {
    let everything = harness_with(|d| d.as_object_mut().unwrap().remove("policy").map(drop).unwrap_or(())).list_all(
        "tools/list",
        "tools",
        json!({}),
    );
    let mut h = harness_with(|d| d["policy"] = json!({"rules": [{"hide": {"concerns": {"security": "high"}}}]}));
    let visible = h.list_all("tools/list", "tools", json!({}));
    assert!(!visible.contains(&"send_email".to_string()), "mapped to high: hidden");
    assert!(visible.contains(&"search_files".to_string()), "unmapped: not hidden");
    let high = h.list_all(
        "tools/list",
        "tools",
        json!({"filter": {"concerns": {"security": "high"}}}),
    );
    assert!(high.iter().all(|n| visible.contains(n)));
    assert!(visible.len() < everything.len());
    // A value nobody maps hides nothing.
    let mut none = harness_with(|d| d["policy"] = json!({"rules": [{"hide": {"concerns": {"cost": "no-such"}}}]}));
    let e = none.list_all("tools/list", "tools", json!({}));
    assert_eq!(e, everything);
}

#[test]
fn groups_and_tags_whose_items_policy_hides_are_not_listed() {
    let mut open = harness_with(|d| d.as_object_mut().unwrap().remove("policy").map(drop).unwrap_or(()));
    let groups = open.list_all("groups/list", "groups", json!({}));
    assert!(groups.contains(&"email".to_string()));
    let mut h = harness_with(|d| d["policy"] = json!({"rules": [{"hide": {"groups": ["email"]}}]}));
    let groups = h.list_all("groups/list", "groups", json!({}));
    assert!(!groups.contains(&"email".to_string()), "{groups:?}");
    assert!(groups.contains(&"calendar".to_string()));
    let tags = h.list_all("tags/list", "tags", json!({}));
    assert!(!tags.is_empty());
}

#[test]
fn discover_advertises_middleware_only_to_allowed_clients() {
    let with_middleware = |allow: &str| {
        let allow = allow.to_string();
        harness_with(move |d| {
            d["middleware"] = json!({"enabled": ["timestamp_injector"], "allowClients": [allow]});
        })
    };
    for (allow, advertised) in [("t", true), ("internal-*", false)] {
        let mut h = with_middleware(allow);
        let d = common::response_of(&h.modern(json!(1), "server/discover", json!({})));
        assert_eq!(
            d["result"]["capabilities"].get("contextMiddleware").is_some(),
            advertised,
            "allowClients {allow}: {d}"
        );
    }
}
