//! Property test: on random catalogs of 1,000+ primitives and random filters and concern
//! configurations, the compiled index returns exactly what the plain loop over the written rules
//! returns, for every kind of primitive.
#![cfg(not(target_arch = "wasm32"))]

use mcp_sieve::concern::ConcernConfig;
use mcp_sieve::filter::naive;
use mcp_sieve::model::Kind;
use mcp_sieve::synth::{self, CONCERNS, GROUPS, TAGS};
use mcp_sieve::{Catalog, Filter};
use proptest::prelude::*;
use serde_json::{json, Value};

fn group() -> impl Strategy<Value = String> {
    (0..GROUPS + 2).prop_map(|g| format!("g{g}")) // g24, g25: names no primitive uses
}

fn tag() -> impl Strategy<Value = String> {
    (0..TAGS + 1).prop_map(|t| format!("t{t}"))
}

fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("get_*".to_string()),
        Just("*_tool_1*".to_string()),
        Just("list_?ool_*".to_string()),
        (0..1200usize).prop_map(|i| format!("*_{i}")),
        Just("delete_tool_3".to_string()),
    ]
}

fn concern_pair() -> impl Strategy<Value = (String, String)> {
    (0..CONCERNS.len(), 0..4usize).prop_map(|(c, v)| {
        let (name, vals) = CONCERNS[c];
        (
            name.to_string(),
            vals.get(v).copied().unwrap_or("unheard-of").to_string(),
        )
    })
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        group().prop_map(|g| json!({"group": g})),
        tag().prop_map(|t| json!({"tag": t})),
        pattern().prop_map(|p| json!({"name": p})),
        concern_pair().prop_map(|(c, v)| json!({"concern": {c: v}})),
        any::<bool>().prop_map(|b| json!({"annotation": {"readOnlyHint": b}})),
        any::<bool>().prop_map(|b| json!({"annotation": {"destructiveHint": b}})),
    ]
}

fn expr() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"all": v})),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| json!({"any": v})),
            inner.prop_map(|e| json!({"not": e})),
        ]
    })
}

fn filter() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(group(), 0..3),
        prop::collection::vec(tag(), 0..3),
        prop::collection::vec(tag(), 0..2),
        prop::collection::vec(pattern(), 0..2),
        prop::option::of(expr()),
    )
        .prop_map(|(g, t, x, n, e)| {
            let mut f = json!({"groups": g, "tags": t, "excludeTags": x, "namePatterns": n});
            if let Some(e) = e {
                f["expr"] = e;
            }
            f
        })
}

fn concerns() -> impl Strategy<Value = ConcernConfig> {
    prop::collection::vec(concern_pair(), 0..3).prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn index_equals_plain_loop(seed in any::<u64>(), tools in 1000usize..1300, f in filter(), c in concerns()) {
        let doc = synth::catalog(seed, tools, 60);
        let catalog = Catalog::load(&doc).unwrap();
        let parsed = Filter::parse(&f, "filter").unwrap();
        for kind in Kind::ALL {
            let s = catalog.section(kind);
            let fast: Vec<&str> = s.select(&parsed, &c).ones().map(|i| s.items[i].name.as_str()).collect();
            let slow: Vec<&str> = naive::filter(&doc, kind.key(), &parsed, &c).iter().map(|v| v["name"].as_str().unwrap()).collect();
            prop_assert_eq!(fast, slow, "kind {:?}, filter {}, concerns {:?}", kind, f, c);
        }
    }
}

#[test]
fn random_catalogs_are_not_trivial() {
    // Guards the property test against generators that make every filter match all or nothing.
    let doc = synth::catalog(7, 1000, 10);
    let catalog = Catalog::load(&doc).unwrap();
    let s = catalog.section(Kind::Tool);
    let some = s.select(
        &Filter::parse(&json!({"groups": ["g1"], "tags": ["t2"]}), "f").unwrap(),
        &ConcernConfig::new(),
    );
    assert!(some.count() > 0 && some.count() < 1000 / 4, "{}", some.count());
    let by_parent = s
        .select(
            &Filter::parse(&json!({"groups": ["g2"]}), "f").unwrap(),
            &ConcernConfig::new(),
        )
        .count();
    let direct = s.items.iter().filter(|t| t.groups.iter().any(|g| g == "g2")).count();
    assert!(
        by_parent > direct,
        "parent groups must add members: {by_parent} vs {direct}"
    );
}
