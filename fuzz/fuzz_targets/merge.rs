//! The merge of upstreams' lists: any JSON as the lists of a hostile upstream `a` (names,
//! aliases, groups, URIs, templates, malformed items) beside an honest `b` that held its items
//! first → never a panic, never an error, and `b`'s items still reach `b`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_sieve::catalog::Upstream;
use mcp_sieve::model::Kind;
use mcp_sieve::pin::Pins;
use mcp_sieve::upstream::{build_claimed, Claims, Lists, Source};
use serde_json::{json, Value};

fn lists(v: &Value) -> Lists {
    let mut l = Lists::new(json!({"capabilities": {"tools": {}, "resources": {}, "prompts": {}}}));
    for kind in Kind::ALL {
        if let Some(Value::Array(items)) = v.get(kind.key()) {
            l.set(kind, items.clone());
        }
    }
    l
}

fuzz_target!(|data: &[u8]| {
    let Ok(hostile) = serde_json::from_slice::<Value>(data) else { return };
    let prefix = hostile.get("prefix").and_then(Value::as_str).unwrap_or("a_");
    let doc = json!({
        "upstreams": {"a": {"url": "http://a/mcp", "prefix": prefix}, "b": {"url": "http://b/mcp"}},
        "groups": [{"name": "docs", "parent": "b"}],
        "overlay": {"b_read": {"aliases": ["read_old"]}}
    });
    let Ok(ups) = Upstream::parse_all(None, doc.get("upstreams")) else { return };
    let b = lists(&json!({
        "tools": [{"name": "read", "groups": ["docs"]}],
        "resources": [{"name": "d", "uri": "b://doc-1"}],
        "resourceTemplates": [{"name": "t", "uriTemplate": "b://doc-{n}"}]
    }));
    let a = lists(&hostile);
    fn src<'a>(ups: &'a [Upstream], index: usize, lists: &'a Lists) -> Source<'a> {
        Source { index, upstream: &ups[index], lists }
    }
    let alone = build_claimed(&doc, &[src(&ups, 1, &b)], &Pins::default(), &Claims::default()).unwrap();
    let claims = Claims::default().after_build(&alone.origins);
    // A catalog error here would be a hostile upstream taking the others down: not allowed.
    let both = build_claimed(&doc, &[src(&ups, 0, &a), src(&ups, 1, &b)], &Pins::default(), &claims)
        .unwrap_or_else(|e| panic!("the merge failed over a hostile upstream's lists: {e}"));
    assert_eq!(both.origins.tools.get("b_read").map(|t| t.0), Some(1));
    assert_eq!(both.origins.resource("b://doc-1"), Some(1));
    assert_eq!(both.origins.resource("b://doc-9"), Some(1));
    assert_eq!(both.aliases.get("read_old").map(String::as_str), Some("b_read"));
});
