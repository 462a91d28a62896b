//! Concerns (ARCHITECTURE.md "Concerns"): declarations, validating and merging the host's
//! configuration under each invalid-value policy, defaults, the filtering rule on every kind of
//! primitive, and that primitives keep their unknown fields. Runs natively and in Chromium.

use mcp_sieve::concern::{ConcernConfig, ConcernValues, Concerns, InvalidValuePolicy};
use mcp_sieve::filter::{index, naive};
use mcp_sieve::model::{Kind, META_GROUPS};
use mcp_sieve::{Catalog, Error, Filter};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Three declarations: an ordered enum with a default, an enum without one, a numeric range.
fn declarations() -> Value {
    json!([
        {"name": "security", "description": "Security level", "values": ["high", "medium", "low"],
         "default": "medium", "x-ui": {"icon": "lock"}},
        {"name": "cost", "values": ["minimal", "moderate", "high"]},
        {"name": "level", "values": {"min": 0, "max": 10}, "default": 5}
    ])
}

/// A catalog holding the declarations, one tool, and `options`.
fn with_options(options: Value) -> Catalog {
    Catalog::load(&json!({
        "concerns": declarations(),
        "tools": [{"name": "noop", "inputSchema": {"type": "object"}}],
        "options": options,
    }))
    .unwrap()
}

fn concerns(options: Value) -> Concerns {
    with_options(options).concerns
}

/// Concern name/value pairs.
type Pairs<'a> = &'a [(&'a str, &'a str)];

fn config(pairs: Pairs) -> ConcernConfig {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn declarations_are_read_as_enums_and_ranges() {
    let c = concerns(Value::Null);
    assert_eq!(c.invalid_value, InvalidValuePolicy::Reject);
    assert!(!c.apply_defaults);
    let sec = c.get("security").unwrap();
    assert_eq!(
        sec.values,
        ConcernValues::Enum(vec!["high".into(), "medium".into(), "low".into()])
    );
    assert_eq!(sec.default.as_deref(), Some("medium"));
    let cost = c.get("cost").unwrap();
    assert_eq!(cost.default, None);
    let level = c.get("level").unwrap();
    assert_eq!(level.values, ConcernValues::Range { min: 0.0, max: 10.0 });
    assert_eq!(level.default.as_deref(), Some("5"));
    assert!(c.get("colour").is_none());
    // The declarations go out as written, unknown fields included.
    assert_eq!(c.declarations_json(), declarations());
}

#[test]
fn bad_declarations_are_catalog_errors_naming_the_field() {
    let good = json!({"name": "ok", "values": ["a"]});
    let cases = [
        (json!([{"name": "a", "values": []}]), "concerns[0].values"),
        (json!([{"name": "a", "values": "high"}]), "concerns[0].values"),
        (json!([{"name": "a"}]), "concerns[0].values"),
        (json!([{"name": "a", "values": [{"x": 1}]}]), "concerns[0].values[0]"),
        (json!([{"name": "a", "values": {"min": 0}}]), "concerns[0].values.max"),
        (
            json!([{"name": "a", "values": {"min": "0", "max": 3}}]),
            "concerns[0].values.min",
        ),
        (
            json!([{"name": "a", "values": {"min": 5, "max": 1}}]),
            "concerns[0].values.min",
        ),
        (json!([{"values": ["a"]}]), "concerns[0].name"),
        (json!([{"name": "", "values": ["a"]}]), "concerns[0].name"),
        (
            json!([{"name": "a", "description": 3, "values": ["a"]}]),
            "concerns[0].description",
        ),
        (
            json!([{"name": "a", "values": ["x"], "default": "y"}]),
            "concerns[0].default",
        ),
        (
            json!([good.clone(), {"name": "b", "values": {"min": 0, "max": 10}, "default": 11}]),
            "concerns[1].default",
        ),
        (json!([good.clone(), "security"]), "concerns[1] must be an object"),
        (
            json!([good.clone(), good.clone()]),
            "concerns has the name \"ok\" twice",
        ),
        (json!({"name": "a"}), "concerns must be an array"),
    ];
    for (decls, want) in cases {
        let e = Catalog::load(&json!({"concerns": decls, "tools": []})).unwrap_err();
        assert!(matches!(e, Error::Catalog(_)), "{e:?}");
        assert_eq!(e.code(), -32602);
        assert!(e.to_string().contains(want), "{e} should mention {want}");
    }
}

#[test]
fn valid_values_are_accepted_in_canonical_form() {
    let c = concerns(Value::Null);
    let (r, removed) = c
        .resolve(
            &json!({"security": "high", "cost": "minimal", "level": 7}),
            "params.concerns",
        )
        .unwrap();
    assert_eq!(
        r.config,
        config(&[("security", "high"), ("cost", "minimal"), ("level", "7")])
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(removed.is_empty());
    // A range value may come as a string or a fraction.
    let (r, _) = c.resolve(&json!({"level": "3"}), "p").unwrap();
    assert_eq!(r.config, config(&[("level", "3")]));
    let (r, _) = c.resolve(&json!({"level": 2.5}), "p").unwrap();
    assert_eq!(r.config, config(&[("level", "2.5")]));
    // The configuration must be an object.
    let e = c.resolve(&json!(["security"]), "params.concerns").unwrap_err();
    assert_eq!(e.code(), -32602);
    assert!(e.to_string().contains("params.concerns must be an object"), "{e}");
}

#[test]
fn reject_is_the_default_and_lists_the_valid_values() {
    let c = concerns(Value::Null);
    let e = c.resolve(&json!({"security": "ultra"}), "params.concerns").unwrap_err();
    assert_eq!(e.code(), -32602);
    let msg = e.to_string();
    assert!(msg.contains("params.concerns.security"), "{msg}");
    assert!(msg.contains("ultra") && msg.contains("high, medium, low"), "{msg}");
    let data = e.data().unwrap();
    assert_eq!(data["concern"], "security");
    assert_eq!(data["value"], "ultra");
    assert_eq!(data["validValues"], json!(["high", "medium", "low"]));
    assert_eq!(e.to_json()["data"]["validValues"], json!(["high", "medium", "low"]));
    assert_eq!(e.to_json()["code"], -32602);

    let e = c.resolve(&json!({"level": 11}), "params.concerns").unwrap_err();
    assert_eq!(e.code(), -32602);
    let range = &e.data().unwrap()["validValues"];
    assert_eq!(range["min"].as_f64(), Some(0.0));
    assert_eq!(range["max"].as_f64(), Some(10.0));
    assert!(e.to_string().contains("from 0 to 10"), "{e}");

    // Reject is also what `"invalidConcernValue": "reject"` says, and an unknown policy is an error.
    let explicit = concerns(json!({"invalidConcernValue": "reject"}));
    assert_eq!(explicit.invalid_value, InvalidValuePolicy::Reject);
    let e = Catalog::load(&json!({"tools": [], "options": {"invalidConcernValue": "round"}})).unwrap_err();
    assert!(e.to_string().contains("options.invalidConcernValue"), "{e}");
}

#[test]
fn ignore_drops_the_entry_with_a_warning() {
    let c = concerns(json!({"invalidConcernValue": "ignore"}));
    assert_eq!(c.invalid_value, InvalidValuePolicy::Ignore);
    let (r, removed) = c
        .resolve(
            &json!({"security": "ultra", "cost": "minimal", "level": 99}),
            "params.concerns",
        )
        .unwrap();
    assert_eq!(r.config, config(&[("cost", "minimal")]));
    assert!(removed.is_empty());
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("params.concerns.security") && w.contains("ignored")));
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("params.concerns.level") && w.contains("ignored")));
}

#[test]
fn clamp_picks_the_nearest_value_of_a_range() {
    let c = concerns(json!({"invalidConcernValue": "clamp"}));
    assert_eq!(c.invalid_value, InvalidValuePolicy::Clamp);
    for (sent, want) in [
        (json!(15), "10"),
        (json!(-3), "0"),
        (json!("12"), "10"),
        (json!(10.5), "10"),
    ] {
        let (r, _) = c.resolve(&json!({ "level": sent }), "params.concerns").unwrap();
        assert_eq!(r.config, config(&[("level", want)]), "{sent}");
        assert_eq!(r.warnings.len(), 1);
        assert!(
            r.warnings[0].contains(&format!("clamped to \"{want}\"")),
            "{:?}",
            r.warnings
        );
    }
    // A valid value is not a clamp.
    let (r, _) = c.resolve(&json!({"level": 4}), "p").unwrap();
    assert_eq!(r.config, config(&[("level", "4")]));
    assert!(r.warnings.is_empty());
    // Something that is no number cannot be clamped into a range: dropped, with a warning.
    let (r, _) = c.resolve(&json!({"level": "lots"}), "params.concerns").unwrap();
    assert!(r.config.is_empty());
    assert!(r.warnings[0].contains("cannot be clamped"), "{:?}", r.warnings);
}

#[test]
fn clamp_on_ordered_values_goes_by_position() {
    let c = concerns(json!({"invalidConcernValue": "clamp"}));
    for (sent, want) in [(json!(-1), "high"), (json!(7), "low"), (json!(1), "medium")] {
        let (r, _) = c.resolve(&json!({ "security": sent }), "params.concerns").unwrap();
        assert_eq!(r.config, config(&[("security", want)]), "{sent}");
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    }
    // A valid name stays as it is.
    let (r, _) = c.resolve(&json!({"security": "low"}), "p").unwrap();
    assert_eq!(r.config, config(&[("security", "low")]));
    assert!(r.warnings.is_empty());
}

#[test]
fn undeclared_concerns_are_ignored_with_a_warning() {
    for policy in ["reject", "ignore", "clamp"] {
        let c = concerns(json!({ "invalidConcernValue": policy }));
        let (r, removed) = c
            .resolve(
                &json!({"colour": "red", "security": "high", "mood": null}),
                "params.concerns",
            )
            .unwrap();
        assert_eq!(r.config, config(&[("security", "high")]), "{policy}");
        assert!(removed.is_empty(), "{policy}");
        assert_eq!(r.warnings.len(), 2, "{policy}: {:?}", r.warnings);
        assert!(r.warnings[0].contains("params.concerns.colour"), "{:?}", r.warnings);
        assert!(r.warnings[0].contains("no concern \"colour\""), "{:?}", r.warnings);
        assert!(r.warnings[1].contains("mood"), "{:?}", r.warnings);
    }
}

#[test]
fn null_removes_a_concern_on_merge() {
    let c = concerns(Value::Null);
    let mut current = config(&[("security", "high"), ("cost", "minimal")]);
    let (r, removed) = c
        .resolve(&json!({"security": null, "level": 3}), "params.concerns")
        .unwrap();
    assert_eq!(removed, vec!["security".to_string()]);
    assert!(r.warnings.is_empty());
    Concerns::merge(&mut current, &r, &removed);
    assert_eq!(current, config(&[("cost", "minimal"), ("level", "3")]));
    // A later value replaces an earlier one; untouched entries stay.
    let (r, removed) = c.resolve(&json!({"cost": "high"}), "p").unwrap();
    Concerns::merge(&mut current, &r, &removed);
    assert_eq!(current, config(&[("cost", "high"), ("level", "3")]));
    // Removing what was never configured is harmless.
    let (r, removed) = c.resolve(&json!({"security": null}), "p").unwrap();
    Concerns::merge(&mut current, &r, &removed);
    assert_eq!(current, config(&[("cost", "high"), ("level", "3")]));
}

#[test]
fn effective_follows_the_filtering_rule_unless_apply_defaults() {
    let plain = concerns(Value::Null);
    assert!(plain.effective(&ConcernConfig::new()).is_empty());
    let one = config(&[("cost", "minimal")]);
    assert_eq!(plain.effective(&one), one);

    let defaults = concerns(json!({"applyDefaults": true}));
    assert!(defaults.apply_defaults);
    // Before the host configures anything, nothing filters, defaults or not.
    assert!(defaults.effective(&ConcernConfig::new()).is_empty());
    // Once it has, declared defaults fill the concerns it left out (cost declares none).
    assert_eq!(
        defaults.effective(&one),
        config(&[("cost", "minimal"), ("security", "medium"), ("level", "5")])
    );
    // ...and never override what it configured.
    assert_eq!(
        defaults.effective(&config(&[("security", "high")])),
        config(&[("security", "high"), ("level", "5")])
    );
    let e = Catalog::load(&json!({"tools": [], "options": {"applyDefaults": "yes"}})).unwrap_err();
    assert!(e.to_string().contains("options.applyDefaults"), "{e}");
}

#[test]
fn list_json_reports_configured_and_effective_values() {
    let c = concerns(json!({"applyDefaults": true}));
    let list = c.list_json(&config(&[("cost", "minimal")]));
    assert_eq!(list["applyDefaults"], true);
    assert_eq!(
        list["configuration"],
        json!({"cost": "minimal", "level": "5", "security": "medium"})
    );
    let items = list["concerns"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let (sec, cost, level) = (&items[0], &items[1], &items[2]);
    assert_eq!(sec["name"], "security");
    assert_eq!(sec["default"], "medium");
    assert_eq!(sec["x-ui"], json!({"icon": "lock"}));
    assert_eq!(sec["configured"], Value::Null);
    assert_eq!(sec["effective"], "medium");
    assert_eq!(cost["configured"], "minimal");
    assert_eq!(cost["effective"], "minimal");
    assert_eq!(level["configured"], Value::Null);
    assert_eq!(level["effective"], "5");
    assert_eq!(level["values"], json!({"min": 0, "max": 10}));

    let plain = concerns(Value::Null).list_json(&config(&[("cost", "minimal")]));
    assert_eq!(plain["applyDefaults"], false);
    assert_eq!(plain["configuration"], json!({"cost": "minimal"}));
    assert_eq!(plain["concerns"][0]["effective"], Value::Null);
    assert_eq!(plain["concerns"][0]["default"], "medium");
    // With nothing configured every value is null.
    let none = concerns(json!({"applyDefaults": true})).list_json(&ConcernConfig::new());
    assert_eq!(none["configuration"], json!({}));
    assert!(none["concerns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["configured"].is_null() && c["effective"].is_null()));
}

/// One primitive of `kind` named `name`, with `_meta.concerns` when given.
fn item(kind: Kind, name: &str, meta: Option<Value>) -> Value {
    let mut v = json!({ "name": name });
    match kind {
        Kind::Tool => v["inputSchema"] = json!({"type": "object"}),
        Kind::Resource => v["uri"] = json!(format!("file:///{name}")),
        Kind::ResourceTemplate => v["uriTemplate"] = json!(format!("file:///{name}/{{path}}")),
        Kind::Prompt => v["arguments"] = json!([]),
    }
    if let Some(m) = meta {
        v["_meta"] = json!({ "concerns": m });
    }
    v
}

/// Every kind holds: agnostic, high, low, high+minimal (as `_meta.concerns`).
fn mapped_doc() -> Value {
    let mut doc = json!({ "concerns": declarations() });
    for kind in Kind::ALL {
        let p = kind.key();
        doc[p] = json!([
            item(kind, &format!("{p}_agnostic"), None),
            item(kind, &format!("{p}_high"), Some(json!({"security": "high"}))),
            item(kind, &format!("{p}_low"), Some(json!({"security": "low"}))),
            item(
                kind,
                &format!("{p}_high_minimal"),
                Some(json!({"security": "high", "cost": "minimal"}))
            ),
        ]);
    }
    doc
}

fn selected(c: &Catalog, kind: Kind, filter: &Filter, conf: &ConcernConfig) -> Vec<String> {
    let s = c.section(kind);
    s.select(filter, conf).ones().map(|i| s.items[i].name.clone()).collect()
}

#[test]
fn every_kind_is_included_iff_each_configured_concern_is_unmapped_or_equal() {
    let doc = mapped_doc();
    let c = Catalog::load(&doc).unwrap();
    let cases: [(Pairs, &[&str]); 7] = [
        (&[], &["agnostic", "high", "low", "high_minimal"]),
        (&[("security", "high")], &["agnostic", "high", "high_minimal"]),
        (&[("security", "low")], &["agnostic", "low"]),
        // A value nobody maps leaves only the agnostic ones.
        (&[("security", "medium")], &["agnostic"]),
        (
            &[("security", "high"), ("cost", "minimal")],
            &["agnostic", "high", "high_minimal"],
        ),
        (&[("security", "high"), ("cost", "moderate")], &["agnostic", "high"]),
        // A configured concern no primitive maps constrains nothing.
        (&[("level", "3")], &["agnostic", "high", "low", "high_minimal"]),
    ];
    let none = Filter::default();
    for kind in Kind::ALL {
        let p = kind.key();
        for (conf, want) in cases {
            let conf = config(conf);
            let want: Vec<String> = want.iter().map(|w| format!("{p}_{w}")).collect();
            assert_eq!(selected(&c, kind, &none, &conf), want, "{p} {conf:?}");
            let plain: Vec<String> = naive::filter(&doc, p, &none, &conf)
                .iter()
                .map(|v| v["name"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(plain, want, "naive {p} {conf:?}");
        }
        // The same rule as an `expr` leaf.
        let f = Filter::parse(&json!({"expr": {"concern": {"security": "low"}}}), "filter").unwrap();
        assert_eq!(
            selected(&c, kind, &f, &ConcernConfig::new()),
            vec![format!("{p}_agnostic"), format!("{p}_low")]
        );
    }
}

#[test]
fn the_internal_mapping_wins_over_meta_concerns() {
    let doc = json!({
        "concerns": declarations(),
        "concernMapping": {
            "t": {"security": "high"},
            "p": {"cost": "moderate"},
            "r": {"security": "low"}
        },
        "tools": [{"name": "t", "inputSchema": {}, "_meta": {"concerns": {"security": "low", "cost": "minimal"}}}],
        "prompts": [{"name": "p", "_meta": {"concerns": {"cost": "minimal"}}}],
        "resources": [{"name": "r", "uri": "mem://r"}],
    });
    let c = Catalog::load(&doc).unwrap();
    let t = &c.section(Kind::Tool).items[0];
    assert_eq!(
        t.concerns.iter().cloned().collect::<ConcernConfig>(),
        config(&[("security", "high"), ("cost", "minimal")])
    );
    let p = &c.section(Kind::Prompt).items[0];
    assert_eq!(
        p.concerns.iter().cloned().collect::<ConcernConfig>(),
        config(&[("cost", "moderate")])
    );
    let r = &c.section(Kind::Resource).items[0];
    assert_eq!(
        r.concerns.iter().cloned().collect::<ConcernConfig>(),
        config(&[("security", "low")])
    );

    let none = Filter::default();
    assert_eq!(selected(&c, Kind::Tool, &none, &config(&[("security", "high")])), ["t"]);
    assert!(selected(&c, Kind::Tool, &none, &config(&[("security", "low")])).is_empty());
    assert_eq!(selected(&c, Kind::Tool, &none, &config(&[("cost", "minimal")])), ["t"]);
    assert_eq!(
        selected(&c, Kind::Prompt, &none, &config(&[("cost", "moderate")])),
        ["p"]
    );
    assert!(selected(&c, Kind::Prompt, &none, &config(&[("cost", "minimal")])).is_empty());
    assert!(selected(&c, Kind::Resource, &none, &config(&[("security", "high")])).is_empty());

    // The plain loop applies the same precedence.
    let conf = config(&[("security", "low")]);
    assert!(naive::filter(&doc, "tools", &none, &conf).is_empty());

    let e = Catalog::load(&json!({"tools": [], "concernMapping": {"t": "high"}})).unwrap_err();
    assert!(e.to_string().contains("concernMapping[\"t\"]"), "{e}");
    let e = Catalog::load(&json!({"tools": [], "concernMapping": []})).unwrap_err();
    assert!(e.to_string().contains("concernMapping must be an object"), "{e}");
    let e =
        Catalog::load(&json!({"tools": [{"name": "t", "_meta": {"concerns": {"security": ["high"]}}}]})).unwrap_err();
    assert!(e.to_string().contains("tools[0]._meta.concerns.security"), "{e}");
}

#[test]
fn unknown_fields_of_every_kind_survive_the_load() {
    let tool = json!({
        "name": "search", "title": "Search", "description": "Find things",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
        "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true, "x-hint": 1},
        "icons": [{"src": "data:,", "sizes": ["16x16"]}], "execution": {"taskSupport": "optional"},
        "x-vendor": {"nested": [1, 2.5, null, true]}, "tags": ["read-only"],
        "_meta": {"concerns": {"security": "high"}, "com.example/trace": "on"}
    });
    let resource = json!({
        "name": "readme", "uri": "file:///README.md", "mimeType": "text/markdown", "size": 1234,
        "annotations": {"audience": ["user"], "priority": 0.5}, "x-vendor": "kept"
    });
    let template = json!({
        "name": "file", "uriTemplate": "file:///{path}", "mimeType": "text/plain",
        "x-vendor": {"a": []}, "_meta": {"com.example/x": 1}
    });
    let prompt = json!({
        "name": "review", "title": "Review", "arguments": [{"name": "code", "required": true, "x-arg": 1}],
        "x-vendor": 42
    });
    let group = json!({"name": "search-tools", "title": "Search", "description": "d", "x-ui": {"order": 3}, "_meta": {"k": "v"}});
    let tag = json!({"name": "read-only", "description": "no writes", "color": "#0a0"});
    let c = Catalog::load(&json!({
        "concerns": declarations(),
        "groups": [group],
        "tags": [tag],
        "tools": [tool],
        "resources": [resource],
        "resourceTemplates": [template],
        "prompts": [prompt],
    }))
    .unwrap();
    for (kind, original) in [
        (Kind::Tool, &tool),
        (Kind::Resource, &resource),
        (Kind::ResourceTemplate, &template),
        (Kind::Prompt, &prompt),
    ] {
        let s = c.section(kind);
        let listed = &s.items[0];
        assert_eq!(&Value::Object(listed.json()), original, "{}", kind.key());
        // Field order too: the pre-serialized fragment is the original text.
        assert_eq!(listed.fragment(), original.to_string(), "{}", kind.key());
        let list = index::list_value(
            kind.key(),
            &s.items,
            &s.select(&Filter::default(), &ConcernConfig::new()),
        );
        assert_eq!(list[kind.key()], json!([original]), "{}", kind.key());
    }
    assert_eq!(Value::Object(c.groups[0].json.clone()), group);
    assert_eq!(Value::Object(c.tags[0].json.clone()), tag);
    assert_eq!(c.concerns.declarations_json(), declarations());
}

#[test]
fn membership_is_added_to_meta_and_the_rest_is_kept() {
    let tool = json!({
        "name": "t", "inputSchema": {}, "groups": ["g"], "x-vendor": [1],
        "_meta": {"com.example/trace": "on"}
    });
    let prompt = json!({"name": "p", "groups": ["g"], "x-vendor": {"b": 2}});
    let c = Catalog::load(&json!({"tools": [tool], "prompts": [prompt]})).unwrap();
    for (kind, original) in [(Kind::Tool, &tool), (Kind::Prompt, &prompt)] {
        let listed = Value::Object(c.section(kind).items[0].json());
        let mut want = original.clone();
        if want.get("_meta").is_none() {
            want["_meta"] = json!({});
        }
        want["_meta"][META_GROUPS] = json!(["g"]);
        assert_eq!(listed, want, "{}", kind.key());
    }
}

#[test]
fn clamp_on_numeric_ordered_values_picks_the_nearest_value() {
    let c = Catalog::load(&json!({
        "concerns": [{"name": "tier", "values": [1, 2, 5]}],
        "tools": [], "options": {"invalidConcernValue": "clamp"}
    }))
    .unwrap()
    .concerns;
    for (sent, want) in [(json!(3), "2"), (json!(1.4), "1"), (json!(4), "5"), (json!(99), "5")] {
        let (r, _) = c.resolve(&json!({ "tier": sent }), "params.concerns").unwrap();
        assert_eq!(r.config, config(&[("tier", want)]), "{sent}");
    }
}

#[test]
fn numbers_match_whatever_way_they_are_written() {
    let c = Catalog::load(&json!({
        "concerns": [{"name": "level", "values": {"min": 0, "max": 10}}, {"name": "tier", "values": [1, 2, 5]}],
        "tools": [{"name": "t", "inputSchema": {}, "_meta": {"concerns": {"level": 5.0, "tier": 2}}}]
    }))
    .unwrap();
    let (r, _) = c
        .concerns
        .resolve(&json!({"level": 5, "tier": 2.0}), "params.concerns")
        .unwrap();
    assert_eq!(r.config, config(&[("level", "5"), ("tier", "2")]));
    let s = c.section(Kind::Tool);
    assert_eq!(s.select(&Filter::default(), &r.config).count(), 1);
}

#[test]
fn null_meta_still_gets_group_membership() {
    let c =
        Catalog::load(&json!({"tools": [{"name": "t", "inputSchema": {}, "groups": ["g"], "_meta": null}]})).unwrap();
    let t = &c.section(Kind::Tool).items[0];
    assert_eq!(t.json()["_meta"]["io.modelcontextprotocol/groups"], json!(["g"]));
}
