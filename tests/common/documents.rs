//! Catalog documents written the ways serde_json would not write them (escapes, numbers,
//! whitespace, keys written twice), with concerns, annotations, aliases, every kind and an overlay:
//! each loads to the same catalog by every path that reads a document's text
//! (`tests/catalog_text.rs`: the text against the tree; `tests/catalog_prepared.rs`: the prepared
//! form against the JSON); and the names both files' random tools draw from.

/// Valid documents every load path must read alike.
pub const TRICKY: &[&str] = &[
    // Escapes it writes otherwise (`\/`, `\u00e9`, `\u0008`), in values and in keys.
    r#"{"tools": [{"name": "a\/b", "description": "caf\u00e9 \b\u0008 \"q\" \\ \n", "x\u0041": {"k\/": "\/"}}]}"#,
    // Numbers: fractions, exponents, -0, integers past 64 bits, small and large.
    r#"{"tools": [{"name": "n", "inputSchema": {"a": 1.50, "b": 1e3, "c": -0, "d": -0.0, "e": 123456789012345678901234, "f": -12, "g": 0, "h": 18446744073709551615, "i": 2.5E-7}}]}"#,
    // Whitespace everywhere, nested; a key written twice (the later value in the first place).
    "{ \"tools\" : [ { \"name\" : \"w\" ,\n\t\"x\" : [ 1 , { \"y\" : null } , true ] , \"name\" : \"w2\" , \"z\" : \"a b\" } ] }",
    // Concerns and a mapping over them; membership in both places; duplicate tags.
    r#"{"concerns": [{"name": "cost", "values": ["low", "high"]}, {"name": "risk", "values": ["1", "2"]}],
        "concernMapping": {"m1": {"cost": "high"}, "m2": {"risk": 2}, "m3": {"cost": "low"}},
        "groups": [{"name": "g"}, {"name": "k", "parent": "g"}], "tags": [{"name": "t"}],
        "tools": [
          {"name": "m0", "_meta": null, "groups": ["g"]},
          {"name": "m1", "_meta": null},
          {"name": "m2", "_meta": {"concerns": {"risk": 2.0, "cost": "low"}, "other": [1]}},
          {"name": "m3", "groups": ["g", "h"], "_meta": {"io.modelcontextprotocol/groups": ["h", "i"], "concerns": "odd"}},
          {"name": "m4", "tags": ["t", "t", "u"], "groups": null, "tags": ["t", "t"]}
        ]}"#,
    // Annotations, execution, aliases (taken out, the other fields in their order).
    r#"{"tools": [{"name": "t", "aliases": ["old_t"], "annotations": {"readOnlyHint": true, "title": "T"}, "execution": {"taskSupport": "optional"}, "after": 1},
                  {"name": "u", "annotations": "no", "execution": [1], "aliases": null}]}"#,
    // Resources, templates and prompts by their identity.
    r#"{"resources": [{"name": "r", "uri": "file:///a", "groups": ["g"]}],
        "resourceTemplates": [{"name": "rt", "uriTemplate": "file:///{x}"}],
        "prompts": [{"name": "p", "arguments": [{"name": "a", "required": true}]}]}"#,
    // An overlay: the general path for every item.
    r#"{"overlay": {"a*": {"groups": ["g"], "aliases": ["old_a"]}}, "tools": [{"name": "ab", "groups": ["h"]}]}"#,
];

/// Names from a small set, so groups, tags and mapped names meet (the property tests' random
/// tools; proptest is not a dependency on wasm32).
#[cfg(not(target_arch = "wasm32"))]
pub fn names(prefix: &'static str) -> impl proptest::strategy::Strategy<Value = Vec<String>> {
    use proptest::prelude::*;
    prop::collection::vec((0..4u8).prop_map(move |i| format!("{prefix}{i}")), 0..3)
}
