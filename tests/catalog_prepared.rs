//! A document's prepared form (`catalog::prepared`: written by `mcp-sieve prepare`, read by the
//! Worker) loads to the catalog its JSON loads to — the same primitives, wire fragments byte for
//! byte, aliases, groups and tags — on hand-written documents, the default and a synthetic
//! catalog, and random tools; a form of another format or version, a malformed first line and an
//! index cut or changed anywhere are refused with an error, never a panic; what cannot be
//! prepared (an invalid document, a gateway's) is refused with the load's error.
#![cfg(all(not(target_arch = "wasm32"), feature = "large-catalogs", feature = "standards"))]

mod common;

use mcp_sieve::catalog::prepared::{self, Header, PreparedError};
use mcp_sieve::model::Primitive;
use mcp_sieve::Catalog;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Every primitive of a catalog, its aliases (old name, name), sorted, the names of its groups
/// and tags in their order, and its other parts as Rust prints them (the fragments compared by
/// `Primitive`'s equality, the rest by their debug text without the primitives).
type Loaded = (Vec<Primitive>, Vec<(String, String)>, Vec<String>, Vec<String>, String);

fn loaded(c: Result<Catalog, String>) -> Result<Loaded, String> {
    c.map(|c| {
        let mut aliases: Vec<(String, String)> = c.aliases.clone().into_iter().collect();
        aliases.sort();
        let mut parents: Vec<_> = c.parents.iter().collect();
        parents.sort();
        let rest = format!(
            "{:?} {:?} {parents:?} {:?} {:?} {:?} {:?}",
            c.server, c.concerns, c.options, c.views, c.lockdown, c.middleware
        );
        (
            c.sections.iter().flat_map(|s| s.items.clone()).collect(),
            aliases,
            c.groups.iter().map(|g| g.name.clone()).collect(),
            c.tags.iter().map(|t| t.name.clone()).collect(),
            rest,
        )
    })
}

/// The prepared form of `text`, its first line and its index.
fn prepare(text: &str) -> (Vec<u8>, Header) {
    let value = prepared::prepare(text).unwrap_or_else(|e| panic!("not prepared: {e}\n{text}"));
    let header = prepared::header(&value)
        .expect("a prepared form")
        .expect("its first line");
    (value, header)
}

/// Loads a prepared value as the Worker does: its JSON, then the index.
fn load(value: &[u8]) -> Result<Catalog, PreparedError> {
    let header = prepared::header(value).expect("a prepared form")?;
    let json = std::str::from_utf8(&value[header.json.clone()]).expect("UTF-8");
    Catalog::from_prepared(json, &header, &value[header.index.clone()])
}

fn assert_same(text: &str) {
    let (value, header) = prepare(text);
    assert_eq!(
        &value[header.json.clone()],
        text.as_bytes(),
        "the JSON is kept as given"
    );
    let from_json = loaded(Catalog::from_json_str(text).map_err(|e| e.to_string()));
    assert!(from_json.is_ok(), "{text}");
    let from_prepared = loaded(load(&value).map_err(|e| e.to_string()));
    let (Ok(a), Ok(b)) = (&from_prepared, &from_json) else {
        panic!("{from_prepared:?}\n{text}");
    };
    for (x, y) in a.0.iter().zip(&b.0) {
        assert_eq!(x, y, "{text}");
    }
    assert_eq!((a.0.len(), &a.1, &a.2, &a.3), (b.0.len(), &b.1, &b.2, &b.3), "{text}");
    assert_eq!(a.4, b.4, "{text}");
    // Each section's index read from the form is the one the JSON's load builds from its items.
    let (a, b) = (load(&value).unwrap(), Catalog::from_json_str(text).unwrap());
    for (x, y) in a.sections.iter().zip(&b.sections) {
        assert!(x.index == y.index, "{text}\n{:?}\n{:?}", x.index, y.index);
    }
}

#[test]
fn prepared_forms_load_as_their_json() {
    let docs = [
        // Undeclared groups and tags across sections, in the order first named, a declared
        // parent between them (the catalog's are added from the index's order).
        r#"{"groups": [{"name": "p"}, {"name": "c", "parent": "p"}],
            "tools": [{"name": "t1", "groups": ["z", "c"], "tags": ["y"]}, {"name": "t2", "groups": ["a", "z"], "tags": ["b", "y"]}],
            "resources": [{"name": "r", "uri": "file:///r", "groups": ["m", "a", "p"], "tags": ["x", "b"]}],
            "prompts": [{"name": "p1", "tags": ["c0"], "groups": ["q"]}]}"#,
        // An item whose first key has an escape (the document split in two passes).
        r#"{"tools": [{"n\u0061me": "a"}, {"name": "b"}]}"#,
        // The other top-level fields: server, options, policy, views, lockdown, middleware.
        r#"{"server": {"name": "s", "version": "1"}, "options": {"pageSize": 2},
            "policy": {"rules": []}, "lockdown": {"readOnly": true}, "tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}"#,
        r#"{}"#,
    ];
    for doc in common::documents::TRICKY.iter().chain(&docs) {
        assert_same(doc);
    }
    let default = mcp_sieve::catalog::DEMO_CATALOG;
    assert_same(default);
    assert_same(&serde_json::from_str::<Value>(default).unwrap().to_string());
    assert_same(&mcp_sieve::synth::catalog(42, 300, 20).to_string());
}

#[test]
fn a_json_document_is_not_a_prepared_form() {
    assert!(prepared::header(mcp_sieve::catalog::DEMO_CATALOG.as_bytes()).is_none());
    assert!(prepared::header(b"").is_none());
    assert!(prepared::header(b"mcp-sieve-preparedX").is_none());
}

/// The value with its first line replaced (the JSON and the index as they were).
fn with_line(value: &[u8], header: &Header, line: &str) -> Vec<u8> {
    let mut out = line.as_bytes().to_vec();
    out.extend_from_slice(&value[header.json.start..]);
    out
}

#[test]
fn another_format_or_version_is_refused_and_its_json_found() {
    let text = r#"{"tools": [{"name": "a", "groups": ["g"]}]}"#;
    let (value, h) = prepare(text);
    let (json, index) = (h.json.len(), h.index.len());
    for (line, format, version) in [
        (
            format!(
                "mcp-sieve-prepared 999 json={json} index={index} version={} tag=x\n",
                prepared::VERSION
            ),
            999,
            prepared::VERSION,
        ),
        (
            format!(
                "mcp-sieve-prepared {} json={json} index={index} version=0.0.1 tag=x\n",
                prepared::FORMAT
            ),
            prepared::FORMAT,
            "0.0.1",
        ),
        // A later format may add words: the lengths are still found.
        (
            format!("mcp-sieve-prepared 2 future=1 index={index} json={json}\n"),
            2,
            "",
        ),
    ] {
        let other = with_line(&value, &h, &line);
        let header = prepared::header(&other).unwrap().unwrap();
        assert_eq!(&other[header.json.clone()], text.as_bytes(), "{line}");
        match load(&other) {
            Err(PreparedError::Stale { format: f, version: v }) => assert_eq!((f, v.as_str()), (format, version)),
            other => panic!("{line}: {other:?}"),
        }
        let message = load(&other).unwrap_err().to_string();
        assert!(message.contains("mcp-sieve prepare"), "{message}");
    }
}

#[test]
fn a_malformed_first_line_is_refused() {
    let (value, h) = prepare(r#"{"tools": [{"name": "a"}]}"#);
    let (json, index) = (h.json.len(), h.index.len());
    for line in [
        "mcp-sieve-prepared \n".to_string(),
        format!("mcp-sieve-prepared 1 json={json}\n"),
        format!("mcp-sieve-prepared 1 json={} index={index}\n", json + 1),
        format!("mcp-sieve-prepared 1 json={json} index={index} novalue\n"),
        format!("mcp-sieve-prepared 1 json=99999999999999999999999 index={index}\n"),
    ] {
        let bad = with_line(&value, &h, &line);
        match prepared::header(&bad) {
            Some(Err(e @ PreparedError::Header(_))) => assert!(e.to_string().contains("expected"), "{e}"),
            other => panic!("{line:?}: {other:?}"),
        }
    }
    // No end of line in its first 512 bytes.
    let long = format!("mcp-sieve-prepared {}", "x".repeat(600));
    assert!(matches!(
        prepared::header(long.as_bytes()),
        Some(Err(PreparedError::Header(_)))
    ));
}

#[test]
fn an_index_cut_or_changed_anywhere_is_refused_or_loads_without_a_panic() {
    let text = r#"{"concernMapping": {"a": {"cost": "high"}}, "options": {"pageSize": 3},
        "tools": [{"name": "a", "groups": ["g"], "aliases": ["old"], "annotations": {"readOnlyHint": true}, "execution": {"taskSupport": "optional"}},
                  {"name": "b", "tags": ["t"]}],
        "resources": [{"name": "r", "uri": "file:///r"}]}"#;
    let (value, h) = prepare(text);
    let index = value[h.index.clone()].to_vec();
    let json = std::str::from_utf8(&value[h.json.clone()]).unwrap();
    // Cut short: refused as corrupt.
    for len in 0..index.len() {
        match Catalog::from_prepared(json, &h, &index[..len]) {
            Err(PreparedError::Corrupt { .. }) => {}
            other => panic!("cut at {len}: {:?}", other.map(|_| "loaded")),
        }
    }
    // One more byte: refused.
    let mut longer = index.clone();
    longer.push(0);
    assert!(matches!(
        Catalog::from_prepared(json, &h, &longer),
        Err(PreparedError::Corrupt { .. })
    ));
    // Every byte changed to a few values: an error or a catalog, and its fragments written.
    for at in 0..index.len() {
        for b in [0u8, 1, 0x7f, 0x80, 0xff, index[at] ^ 1] {
            let mut changed = index.clone();
            changed[at] = b;
            if let Ok(c) = Catalog::from_prepared(json, &h, &changed) {
                for s in &c.sections {
                    for p in &s.items {
                        let _ = p.fragment();
                    }
                    // The index's bits name items of the section only.
                    let names = c.groups.iter().map(|g| s.index.group(&g.name));
                    for bits in names.chain(c.tags.iter().map(|t| s.index.tag(&t.name))).flatten() {
                        assert_eq!(bits.len(), s.items.len());
                        assert!(bits.ones().all(|i| i < s.items.len()), "byte {at} to {b}");
                    }
                }
            }
        }
    }
    let message = Catalog::from_prepared(json, &h, &index[..3]).unwrap_err().to_string();
    assert!(
        message.starts_with("the prepared form's index is corrupt: "),
        "{message}"
    );
}

#[test]
fn a_bitset_naming_an_item_past_the_section_is_refused() {
    // 65 tools (two words a bitset), the last in the group "g": its bits end 0x01 0 0 0 0 0 0 0.
    let tools: Vec<Value> = (0..65)
        .map(|i| match i {
            64 => json!({"name": format!("t{i}"), "groups": ["g"]}),
            _ => json!({"name": format!("t{i}")}),
        })
        .collect();
    let text = json!({"tools": tools}).to_string();
    let (value, h) = prepare(&text);
    let json = std::str::from_utf8(&value[h.json.clone()]).unwrap();
    let index = value[h.index.clone()].to_vec();
    // The group's key, then its two words: the second is 1 (position 64).
    let key = index
        .windows(3)
        .rposition(|w| w == [1, b'g', 0])
        .expect("the group's bits")
        + 2;
    let second = key + 8;
    assert_eq!(&index[second..second + 8], &[1, 0, 0, 0, 0, 0, 0, 0]);
    let loaded = Catalog::from_prepared(json, &h, &index).unwrap();
    assert_eq!(
        loaded.sections[0].index.group("g").unwrap().ones().collect::<Vec<_>>(),
        [64]
    );
    let mut past = index.clone();
    past[second] = 2; // position 65: past the 65 items
    match Catalog::from_prepared(json, &h, &past) {
        Err(PreparedError::Corrupt { what, .. }) => assert_eq!(what, "a bitset with a position past the items"),
        other => panic!("{:?}", other.map(|_| "loaded")),
    }
}

#[test]
fn an_index_naming_a_tool_twice_is_refused() {
    let text = r#"{"tools": [{"name": "aa"}, {"name": "bb"}], "resources": [{"name": "aa", "uri": "file:///1"}, {"name": "aa", "uri": "file:///2"}]}"#;
    let (value, h) = prepare(text);
    let json = std::str::from_utf8(&value[h.json.clone()]).unwrap();
    let mut index = value[h.index.clone()].to_vec();
    assert!(
        Catalog::from_prepared(json, &h, &index).is_ok(),
        "resources may share a name"
    );
    let at = index
        .windows(3)
        .position(|w| w == [2, b'b', b'b'])
        .expect("the tool bb")
        + 1;
    index[at..at + 2].copy_from_slice(b"aa");
    match Catalog::from_prepared(json, &h, &index) {
        Err(PreparedError::Catalog(e)) => {
            assert_eq!(
                e.to_string(),
                r#"invalid catalog: tools has the name "aa" twice; names must be unique"#
            )
        }
        other => panic!("{:?}", other.map(|_| "loaded")),
    }
}

#[test]
fn what_does_not_load_or_is_a_gateway_is_not_prepared() {
    let bad = r#"{"tools": [{"name": "a", "tags": {"t": 1}}]}"#;
    let err = prepared::prepare(bad).unwrap_err().to_string();
    assert_eq!(err, Catalog::from_json_str(bad).unwrap_err().to_string());
    let gateway = r#"{"upstream": {"url": "https://example.com/mcp"}}"#;
    let err = prepared::prepare(gateway).unwrap_err().to_string();
    assert!(err.contains("gateway"), "{err}");
    assert!(prepared::prepare("not json").is_err());
}

fn tool() -> impl Strategy<Value = Value> {
    (
        0..6u8,
        prop::option::of(common::documents::names("g")),
        prop::option::of(common::documents::names("t")),
        prop::option::of(common::documents::names("m")),
        prop::option::of(prop::sample::select(vec![
            json!({"readOnlyHint": true}),
            json!("x"),
            json!({"a": [1.5, "é\n"]}),
        ])),
        prop::option::of(prop::sample::select(vec![
            json!({"taskSupport": "optional"}),
            json!({"taskSupport": 1}),
        ])),
        prop::option::of(common::documents::names("old")),
        "[a-z\"\\\\/\n\u{8}é😀 ]{0,8}",
    )
        .prop_map(
            |(n, groups, tags, meta, annotations, execution, aliases, description)| {
                let mut t = Map::new();
                t.insert("name".into(), json!(format!("tool{n}")));
                t.insert("description".into(), json!(description));
                if let Some(g) = groups {
                    t.insert("groups".into(), json!(g));
                }
                if let Some(tg) = tags {
                    t.insert("tags".into(), json!(tg));
                }
                if let Some(m) = meta {
                    t.insert(
                        "_meta".into(),
                        json!({"io.modelcontextprotocol/groups": m, "concerns": {"cost": "low"}}),
                    );
                }
                if let Some(a) = annotations {
                    t.insert("annotations".into(), a);
                }
                if let Some(e) = execution {
                    t.insert("execution".into(), e);
                }
                if let Some(a) = aliases {
                    t.insert("aliases".into(), json!(a));
                }
                Value::Object(t)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_tools_load_prepared_as_from_json(
        tools in prop::collection::vec(tool(), 0..6),
        mapped in prop::collection::vec((0..6u8, prop::sample::select(vec![json!("high"), json!(2)])), 0..3),
        pretty in any::<bool>(),
    ) {
        let mapping: Map<String, Value> = mapped.into_iter().map(|(n, v)| (format!("tool{n}"), json!({"cost": v}))).collect();
        let doc = json!({"concerns": [{"name": "cost", "values": ["low", "high", "2"]}], "concernMapping": mapping, "tools": tools});
        let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
        match Catalog::from_json_str(&text) {
            Ok(_) => {
                let value = prepared::prepare(&text).unwrap();
                prop_assert_eq!(
                    loaded(load(&value).map_err(|e| e.to_string())),
                    loaded(Catalog::from_json_str(&text).map_err(|e| e.to_string())),
                    "{}", text
                );
            }
            Err(e) => prop_assert_eq!(prepared::prepare(&text).unwrap_err().to_string(), e.to_string()),
        }
    }
}
