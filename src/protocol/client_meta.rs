//! A stateless (2026-07-28) request's `_meta` and what the core builds from it — the client's
//! `initialize`-like params (`clientInfo`, `capabilities`) and its protocol version — read once
//! per client, not once per request: a client sends the same `_meta` with every request, and
//! reading it was a third of a native filtered `tools/list`'s parse, its copies into the filter
//! context another 5% of the request (callgrind, `scripts/bench-native-ir.sh`).
//!
//! With the servers' `large-catalogs` feature (serde_json's `raw_value`), each thread keeps the
//! last [`KEPT`] `_meta` texts of at most [`LONGEST`] bytes with what was read from them. A list
//! request whose `_meta` is one of them carries what was read before beside its params
//! (`jsonrpc::Kept`: no parse, no copy); any other message gets a copy of the value in its
//! params (no parse). Their filter contexts share the value, the `initialize` and the version
//! built before (no copies). A `_meta` that differs by a byte (a `progressToken`, a trace
//! context) is read as any other. Without the feature (the npm package) nothing is kept: every
//! `_meta` is read and built anew.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::protocol::MODERN_VERSION;

/// What the core reads from one `_meta`, shared by the filter contexts of its requests.
#[derive(Debug)]
pub(crate) struct Known {
    /// The `_meta` value.
    pub meta: Arc<Value>,
    /// `{"clientInfo": .., "capabilities": ..}` from its `io.modelcontextprotocol/` members, as a
    /// session's `initialize` params hold them.
    pub initialize: Arc<Value>,
    /// Its `io.modelcontextprotocol/protocolVersion` (2026-07-28 when absent).
    pub version: String,
}

impl Known {
    /// What `meta` says, built member by member (`json!` would copy each value twice).
    fn of(meta: Value) -> Known {
        let at = crate::json::member;
        let initialize = Value::Object(Map::from_iter([
            (
                "clientInfo".to_string(),
                at(&meta, "io.modelcontextprotocol/clientInfo").clone(),
            ),
            (
                "capabilities".to_string(),
                crate::json::get(&meta, "io.modelcontextprotocol/clientCapabilities")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            ),
        ]));
        let version = at(&meta, "io.modelcontextprotocol/protocolVersion")
            .as_str()
            .unwrap_or(MODERN_VERSION)
            .to_string();
        Known {
            meta: Arc::new(meta),
            initialize: Arc::new(initialize),
            version,
        }
    }
}

/// What the core reads from a stateless request's `_meta`: the one read from the same value on
/// this thread before, or read now. (A list's `_meta` kept here comes with its request:
/// `jsonrpc::Kept`, not looked up again.)
pub(crate) fn known(meta: &Value) -> Arc<Known> {
    #[cfg(feature = "large-catalogs")]
    if let Some(k) = kept::find(|k| same(&k.meta, meta)) {
        return k;
    }
    Arc::new(Known::of(meta.clone()))
}

/// Whether `a` and `b` are the same JSON with their members in the same order (what a copy of
/// one value is; two equal objects in other orders are told apart, and only miss a kept one).
#[cfg(feature = "large-catalogs")]
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        _ => a == b,
    }
}

/// The `_meta` whose text is `text` (valid JSON, checked by the caller's parse): a copy of the
/// value read from the same text on this thread before, or read now (and kept when it is an
/// object of at most [`LONGEST`] bytes).
#[cfg(feature = "large-catalogs")]
pub(crate) fn value_of(text: &str) -> serde_json::Result<Value> {
    if let Some(k) = kept::find_text(text) {
        return Ok(Value::clone(&k.meta));
    }
    let meta: Value = serde_json::from_str(text)?;
    if text.len() <= LONGEST && meta.is_object() {
        kept::keep(text, Known::of(meta.clone()));
    }
    Ok(meta)
}

/// What was read from `text` on this thread before, if it is kept (no copy of its value).
#[cfg(feature = "large-catalogs")]
pub(crate) fn kept(text: &str) -> Option<Arc<Known>> {
    kept::find_text(text)
}

/// How many `_meta` texts a thread keeps (a few clients at once).
#[cfg(feature = "large-catalogs")]
pub(crate) const KEPT: usize = 8;

/// The longest `_meta` text kept, bytes (a client's version, info and capabilities take a few
/// hundred).
#[cfg(feature = "large-catalogs")]
pub(crate) const LONGEST: usize = 2048;

#[cfg(feature = "large-catalogs")]
mod kept {
    use std::cell::RefCell;
    use std::sync::Arc;

    use super::{Known, KEPT};

    thread_local! {
        /// The texts kept and what was read from them, the latest first.
        static KEPT_HERE: RefCell<Vec<(Box<str>, Arc<Known>)>> = const { RefCell::new(Vec::new()) };
    }

    /// The kept entry for `text`.
    pub(super) fn find_text(text: &str) -> Option<Arc<Known>> {
        KEPT_HERE.with_borrow(|kept| kept.iter().find(|(t, _)| **t == *text).map(|(_, k)| Arc::clone(k)))
    }

    /// The first kept entry `pick` accepts.
    pub(super) fn find(pick: impl Fn(&Known) -> bool) -> Option<Arc<Known>> {
        KEPT_HERE.with_borrow(|kept| kept.iter().find(|(_, k)| pick(k)).map(|(_, k)| Arc::clone(k)))
    }

    /// Keeps `known` for `text`, the oldest past [`KEPT`] dropped.
    pub(super) fn keep(text: &str, known: Known) {
        KEPT_HERE.with_borrow_mut(|kept| {
            kept.insert(0, (text.into(), Arc::new(known)));
            kept.truncate(KEPT);
        });
    }
}

#[cfg(all(test, feature = "large-catalogs"))]
mod tests {
    use serde_json::json;

    use super::*;

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}"#;

    #[test]
    fn a_kept_meta_is_the_value_its_text_reads_as_and_shares_what_was_built() {
        let first = value_of(META).unwrap();
        assert_eq!(first, serde_json::from_str::<Value>(META).unwrap());
        let (a, b) = (known(&first), known(&value_of(META).unwrap()));
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second request's context shares the first one's"
        );
        assert_eq!(
            *a.initialize,
            json!({"clientInfo": {"name": "c", "version": "1"}, "capabilities": {"sampling": {}}})
        );
        assert_eq!(a.version, "2026-07-28");
    }

    #[test]
    fn a_meta_that_differs_is_read_and_built_for_itself() {
        let _ = value_of(META).unwrap();
        let other = META.replace(r#""name":"c""#, r#""name":"d""#);
        let k = known(&value_of(&other).unwrap());
        assert_eq!(k.initialize["clientInfo"]["name"], "d");
        // Same members in another order: not the kept one, but what it says is the same.
        let reordered = json!({"io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}});
        let k = known(&reordered);
        assert_eq!(k.initialize["clientInfo"]["name"], "c");
        assert_eq!(k.version, "2026-07-28");
    }

    #[test]
    fn a_thread_keeps_a_few_short_metas() {
        for i in 0..KEPT + 3 {
            value_of(&format!(r#"{{"n":{i}}}"#)).unwrap();
        }
        assert!(kept::find_text(r#"{"n":0}"#).is_none(), "the oldest are dropped");
        assert!(kept::find_text(&format!(r#"{{"n":{}}}"#, KEPT + 2)).is_some());
        let long = format!(r#"{{"x":"{}"}}"#, "a".repeat(LONGEST));
        assert_eq!(value_of(&long).unwrap()["x"].as_str().map(str::len), Some(LONGEST));
        assert!(kept::find_text(&long).is_none(), "a long one is read, not kept");
    }
}
