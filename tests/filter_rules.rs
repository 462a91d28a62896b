//! The SEP-1300 filter rules and the rest of the filter language on the embedded default catalog.
//! The same tests run natively (`cargo test`) and in Chromium (`wasm-pack test --headless --chrome`).

use mcp_sieve::concern::ConcernConfig;
use mcp_sieve::filter::naive;
use mcp_sieve::model::Kind;
use mcp_sieve::{Catalog, Filter};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

const DEFAULT: &str = include_str!("../catalog/default.json");

fn doc() -> Value {
    serde_json::from_str(DEFAULT).unwrap()
}

fn names(catalog: &Catalog, filter: Value, concerns: &[(&str, &str)]) -> Vec<String> {
    let f = Filter::parse(&filter, "filter").unwrap();
    let c: ConcernConfig = concerns.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let s = catalog.section(Kind::Tool);
    s.select(&f, &c).ones().map(|i| s.items[i].name.clone()).collect()
}

fn naive_names(filter: Value, concerns: &[(&str, &str)]) -> Vec<String> {
    let d = doc();
    let f = Filter::parse(&filter, "filter").unwrap();
    let c: ConcernConfig = concerns.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    naive::filter(&d, "tools", &f, &c)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn tool_groups(t: &Value) -> Vec<&str> {
    t["groups"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn default_catalog_is_big_enough() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    assert!(c.section(Kind::Tool).items.len() >= 60);
    assert!(c.groups.len() >= 8);
    for real in ["echo", "add", "text_stats", "current_time"] {
        assert!(c.section(Kind::Tool).find(real).is_some(), "{real}");
    }
}

#[test]
fn groups_match_any_listed_group() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    let got = names(&c, json!({"groups": ["calendar", "email"]}), &[]);
    let d = doc();
    let want: Vec<String> = d["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| tool_groups(t).iter().any(|g| *g == "calendar" || *g == "email"))
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

#[test]
fn tags_match_all_listed_tags() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    let got = names(&c, json!({"tags": ["stable", "read-only"]}), &[]);
    let d = doc();
    for t in d["tools"].as_array().unwrap() {
        let tags: Vec<&str> = t["tags"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let name = t["name"].as_str().unwrap().to_string();
        assert_eq!(
            got.contains(&name),
            tags.contains(&"stable") && tags.contains(&"read-only"),
            "{name}"
        );
    }
}

#[test]
fn tool_without_groups_never_matches_a_group_list() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    let all_groups: Vec<String> = c.groups.iter().map(|g| g.name.clone()).collect();
    let got = names(&c, json!({ "groups": all_groups }), &[]);
    let ungrouped: Vec<&str> = c
        .section(Kind::Tool)
        .items
        .iter()
        .filter(|t| t.groups.is_empty())
        .map(|t| t.name.as_str())
        .collect();
    assert!(
        !ungrouped.is_empty(),
        "the default catalog should have tools without groups"
    );
    for name in ungrouped {
        assert!(!got.iter().any(|g| g == name), "{name} has no groups but matched");
    }
    // ...while an empty group list is no constraint.
    assert_eq!(
        names(&c, json!({"groups": []}), &[]).len(),
        c.section(Kind::Tool).items.len()
    );
}

#[test]
fn groups_are_transitive_through_parents() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    let child = c
        .groups
        .iter()
        .find(|g| g.parent.is_some())
        .expect("a group with a parent");
    let parent = child.parent.clone().unwrap();
    let got = names(&c, json!({ "groups": [parent] }), &[]);
    let in_child = names(&c, json!({ "groups": [child.name] }), &[]);
    assert!(!in_child.is_empty());
    assert!(in_child.iter().all(|n| got.contains(n)));
}

#[test]
fn exclude_tags_names_concerns_and_expr_agree_with_the_plain_loop() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    let cases = [
        (json!({"excludeTags": ["destructive"]}), vec![]),
        (json!({"namePatterns": ["get_*", "*_email"]}), vec![]),
        (json!({}), vec![("security", "high")]),
        (
            json!({"groups": ["files"]}),
            vec![("security", "low"), ("cost", "minimal")],
        ),
        (
            json!({"expr": {"any": [{"tag": "beta"}, {"not": {"group": "code"}}]}}),
            vec![],
        ),
        (
            json!({"expr": {"all": [{"annotation": {"readOnlyHint": true}}, {"concern": {"cost": "minimal"}}]}}),
            vec![],
        ),
    ];
    for (f, conc) in cases {
        assert_eq!(
            names(&c, f.clone(), &conc),
            naive_names(f.clone(), &conc),
            "{f} {conc:?}"
        );
    }
}

#[test]
fn malformed_filters_are_invalid_params_naming_the_field() {
    for (f, path) in [
        (
            json!({"groups": "calendar"}),
            "filter.groups must be an array of strings",
        ),
        (json!({"tags": [1]}), "filter.tags"),
        (json!({"expr": {"all": 3}}), "filter.expr.all"),
        (json!({"colour": []}), "unknown field \"colour\""),
        (json!([]), "filter must be an object"),
        (
            json!({"namePatterns": vec!["a*"; 10_000]}),
            "filter.namePatterns has 10000 entries; at most 256",
        ),
        (
            json!({"groups": vec!["g"; 257]}),
            "filter.groups has 257 entries; at most 256",
        ),
        (
            json!({"expr": {"any": vec![json!({"tag": "t"}); 10_000]}}),
            "filter.expr has 10001 nodes; at most 512",
        ),
        // Issue 23: each glob (and group or tag) is at most 256 bytes.
        (
            json!({"namePatterns": ["git*", "*".repeat(60_000) + "z"]}),
            "filter.namePatterns has a value of 60001 bytes; at most 256 are allowed",
        ),
        (
            json!({"expr": {"not": {"name": "丸".repeat(86)}}}),
            "filter.expr.not.name has a value of 258 bytes; at most 256",
        ),
        (
            json!({"tags": ["x".repeat(257)]}),
            "filter.tags has a value of 257 bytes",
        ),
    ] {
        let e = Filter::parse(&f, "filter").unwrap_err();
        assert_eq!(e.code(), -32602);
        assert!(e.to_string().contains(path), "{e} should mention {path}");
    }
}

#[test]
fn unknown_fields_survive_and_membership_is_written_twice() {
    let c = Catalog::from_json_str(DEFAULT).unwrap();
    let d = doc();
    let s = c.section(Kind::Tool);
    for original in d["tools"].as_array().unwrap() {
        let listed = &s.items[s.find(original["name"].as_str().unwrap()).unwrap()].json();
        for (k, v) in original.as_object().unwrap() {
            if k != "_meta" {
                assert_eq!(listed.get(k), Some(v), "{k}");
            }
        }
        if !tool_groups(original).is_empty() {
            assert_eq!(listed["_meta"]["io.modelcontextprotocol/groups"], original["groups"]);
        }
    }
}
