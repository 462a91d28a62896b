//! A document's primitives read from its text without a tree (`Primitive::from_text`, the
//! Worker's and the native server's load) give what the parsed document gives
//! (`Catalog::load_owned`, the general path): the same primitives, wire fragments byte for byte,
//! aliases and errors — on hand-written texts with the escapes, numbers and layouts serde_json
//! writes otherwise, and as a property test on random tools, compact and pretty-printed; and a
//! settled catalog's one buffer of wire objects holds the same bytes.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use mcp_sieve::model::Primitive;
use mcp_sieve::Catalog;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Every primitive of a catalog, its aliases (old name, name), sorted, and the names of its
/// groups and tags in their order (the undeclared ones a primitive names among them).
type Loaded = (Vec<Primitive>, Vec<(String, String)>, Vec<String>, Vec<String>);

/// What a load gives: every primitive, the aliases, the groups and tags, or the error. The
/// primitives compare their fragments (written from the text when first asked for).
fn loaded(c: mcp_sieve::Result<Catalog>) -> Result<Loaded, String> {
    c.map(|c| {
        let mut aliases: Vec<(String, String)> = c.aliases.clone().into_iter().collect();
        aliases.sort();
        (
            c.sections.iter().flat_map(|s| s.items.clone()).collect(),
            aliases,
            c.groups.iter().map(|g| g.name.clone()).collect(),
            c.tags.iter().map(|t| t.name.clone()).collect(),
        )
    })
    .map_err(|e| e.to_string())
}

fn assert_same(text: &str) {
    let general = serde_json::from_str::<Value>(text)
        .map_err(|e| mcp_sieve::Error::Catalog(format!("not valid JSON: {e}")))
        .and_then(Catalog::load_owned);
    assert_eq!(loaded(Catalog::from_json_str(text)), loaded(general), "{text}");
    assert_settled_same(text);
}

/// A settled catalog's pages read each item's wire object from one buffer: the same bytes as
/// the item's own fragment, for every item (those written at settling and those not).
fn assert_settled_same(text: &str) {
    let Ok(mut settled) = Catalog::from_json_str(text) else {
        return;
    };
    settled.settle();
    let own = Catalog::from_json_str(text).unwrap();
    for (s, o) in settled.sections.iter().zip(&own.sections) {
        for i in 0..s.items.len() {
            assert_eq!(s.fragment(i), o.items[i].fragment(), "{text}");
            assert_eq!(s.fragment(i), s.items[i].fragment(), "{text}");
        }
    }
}

#[test]
fn texts_serde_json_writes_otherwise_load_as_parsed() {
    let docs = [
        // Items the text reader leaves to the general path, which names the fault.
        r#"{"tools": [{"name": ""}]}"#,
        r#"{"tools": [{"name": 3}]}"#,
        r#"{"tools": [{"description": "no name"}]}"#,
        r#"{"tools": [{"name": "a", "_meta": "x"}]}"#,
        r#"{"tools": [{"name": "a", "groups": ["g", 1]}]}"#,
        r#"{"tools": [{"name": "a", "tags": {"t": 1}}]}"#,
        r#"{"tools": [{"name": "a", "_meta": {"concerns": {"cost": [1]}}}]}"#,
        r#"{"tools": [{"name": "a", "aliases": "old"}]}"#,
        r#"{"concernMapping": {"a": {"cost": {}}}, "tools": [{"name": "a"}]}"#,
        r#"{"resources": [{"name": "r"}]}"#,
        r#"{"tools": ["a", 1, null]}"#,
        // Aliases that clash.
        r#"{"tools": [{"name": "a", "aliases": ["b"]}, {"name": "b"}]}"#,
        // A list written twice (the last one), null, or under an escaped key; a list that is
        // not an array beside one that is.
        r#"{"tools": [{"name": "a"}], "prompts": [{"name": "p"}], "tools": [{"name": "b"}]}"#,
        r#"{"tools": [{"name": "a"}], "tools": null, "prompts": [{"name": "p"}]}"#,
        r#"{"tool\u0073": [{"name": "a", "groups": ["g"]}]}"#,
        r#"{"prompts": [{"name": "p"}], "tools": {"name": "a"}}"#,
        // Concerns written twice, as numbers and booleans, under escaped keys; the fields read
        // at load written twice (the last value), an escaped key among them.
        r#"{"tools": [{"name": "c", "_meta": {"concerns": {"cost": "low", "risk": 2, "cost": 1.0, "ok": true, "r\u0069sk": 3}}},
                      {"name": "d", "groups": ["x"], "tags": ["t"], "group\u0073": ["y"], "tags": null, "_meta": {"concerns": {"cost": "low"}}, "_meta": null},
                      {"name": "e", "_meta": {"io.modelcontextprotocol/groups": ["g1"], "concerns": [1], "io.modelcontextprotocol/groups": ["g2"]}}]}"#,
        // Groups and tags declared and not, met in the primitives in another order.
        r#"{"groups": [{"name": "b"}], "tags": [{"name": "t2"}],
            "tools": [{"name": "x", "groups": ["c", "b", "a"], "tags": ["t3", "t2", "t1", "t3"]}, {"name": "y", "groups": ["a", "d"], "tags": ["t1"]}],
            "prompts": [{"name": "p", "groups": ["e"], "tags": ["t0"]}]}"#,
        // Many tags, some twice (deduplicated with a set past a few).
        r#"{"tools": [{"name": "m", "tags": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q","a","r","b"]}]}"#,
    ];
    for doc in common::documents::TRICKY.iter().chain(&docs) {
        assert_same(doc);
    }
    // The default catalog, as written (pretty-printed) and compact.
    let default = mcp_sieve::catalog::DEMO_CATALOG;
    assert_same(default);
    assert_same(&serde_json::from_str::<Value>(default).unwrap().to_string());
}

/// A JSON value of a few levels: strings with characters serde_json escapes, numbers of every
/// kind it reads, objects and arrays.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        prop::sample::select(vec![0.5, -0.0, 1e-7, 1e21, 3.0]).prop_map(Value::from),
        "[a-z\"\\\\/\n\t\u{8}\u{1f}é😀 ]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z\"/é]{1,4}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn tool() -> impl Strategy<Value = Value> {
    (
        0..6u8,
        prop::option::of(common::documents::names("g")),
        prop::option::of(common::documents::names("t")),
        prop::option::of(prop::option::of((
            prop::option::of(common::documents::names("g")),
            prop::option::of(value()),
        ))),
        prop::option::of(value()),
        prop::option::of(value()),
        prop::option::of(common::documents::names("old")),
    )
        .prop_map(|(n, groups, tags, meta, schema, annotations, aliases)| {
            let mut t = Map::new();
            t.insert("name".into(), json!(format!("tool{n}")));
            if let Some(s) = schema {
                t.insert("inputSchema".into(), s);
            }
            if let Some(g) = groups {
                t.insert("groups".into(), json!(g));
            }
            if let Some(m) = meta {
                let m = m.map(|(g, c)| {
                    let mut m = Map::new();
                    if let Some(g) = g {
                        m.insert("io.modelcontextprotocol/groups".into(), json!(g));
                    }
                    if let Some(c) = c {
                        m.insert("concerns".into(), json!({"cost": c}));
                    }
                    m.insert("x".into(), json!(1.5));
                    Value::Object(m)
                });
                t.insert("_meta".into(), m.unwrap_or(Value::Null));
            }
            if let Some(a) = annotations {
                t.insert("annotations".into(), a);
            }
            if let Some(tg) = tags {
                t.insert("tags".into(), json!(tg));
            }
            if let Some(a) = aliases {
                t.insert("aliases".into(), json!(a));
            }
            t.insert("description".into(), json!("last"));
            Value::Object(t)
        })
}

/// A fragment written from the text when first asked for is the same asked again, and in a
/// clone made before and after it was written.
#[test]
fn fragments_written_on_first_use_stay_the_same() {
    let text = r#"{"concernMapping": {"a": {"cost": "high"}}, "tools": [{"name": "a", "groups": ["g"], "aliases": ["old"], "x": 1.50}]}"#;
    let catalog = Catalog::from_json_str(text).unwrap();
    let before = catalog.sections[0].items[0].clone();
    let tool = &catalog.sections[0].items[0];
    let first = tool.fragment().to_string();
    assert_eq!(
        first,
        r#"{"name":"a","groups":["g"],"x":1.5,"_meta":{"concerns":{"cost":"high"},"io.modelcontextprotocol/groups":["g"]}}"#
    );
    assert_eq!(tool.fragment(), first);
    assert_eq!(tool.clone().fragment(), first);
    assert_eq!(before.fragment(), first);
    // An item written compact with nothing to add: its text as it stands.
    let plain = Catalog::from_json_str(r#"{"tools": [{"name":"b","x":[1,{"y":"\n"}]}]}"#).unwrap();
    assert_eq!(
        plain.sections[0].items[0].fragment(),
        r#"{"name":"b","x":[1,{"y":"\n"}]}"#
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_tools_load_from_text_as_parsed(
        tools in prop::collection::vec(tool(), 0..5),
        mapped in prop::collection::vec((0..6u8, prop::sample::select(vec![json!("low"), json!(2), json!(2.0), json!([1])])), 0..3),
        pretty in any::<bool>(),
    ) {
        let mapping: Map<String, Value> = mapped.into_iter().map(|(n, v)| (format!("tool{n}"), json!({"cost": v}))).collect();
        let doc = json!({"concernMapping": mapping, "tools": tools});
        let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
        // The parsed text, not `doc`: serde_json reads a float back within a unit of its last place.
        let general = Catalog::load_owned(serde_json::from_str(&text).unwrap());
        prop_assert_eq!(loaded(Catalog::from_json_str(&text)), loaded(general), "{}", text);
        assert_settled_same(&text);
    }
}
