//! `pii_restoration`: puts the values behind handles like `[EMAIL_1]` back, given the
//! `redactions` map `pii_redaction` returned, in one pass (restored values are not scanned again).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::error::Result;
use crate::middleware::content;
use crate::middleware::pii_redaction::handles_in;
use crate::middleware::schema::parse_static;

/// The wire name.
pub const NAME: &str = "pii_restoration";
/// What it does, as `middleware/list` shows it.
pub const DESCRIPTION: &str =
    "Put the values behind handles like [EMAIL_1] back, given arguments.redactions from pii_redaction";

/// `inputSchema` of `pii_restoration`.
pub fn schema() -> Value {
    parse_static(
        r#"{"type": "object", "properties": {
            "redactions": {"type": "object", "additionalProperties": {"type": "string"},
                "description": "handle → value, as returned in pii_redaction's metadata.redactions"}
        }, "required": ["redactions"], "additionalProperties": false}"#,
    )
}

/// Replaces every `[HANDLE]` found in `map` by its value, in one pass (restored values are not
/// scanned again). Returns the text and the handles that were not in the map.
pub fn restore(text: &str, map: &HashMap<&str, &str>, unknown: &mut Vec<String>) -> Option<String> {
    let mut out = String::new();
    let mut last = 0;
    for (s, e, h) in handles_in(text) {
        if s < last {
            continue;
        }
        match map.get(h) {
            Some(v) => {
                out.push_str(&text[last..s]);
                out.push_str(v);
                last = e;
            }
            None if !unknown.iter().any(|u| u == h) => unknown.push(h.to_string()),
            None => {}
        }
    }
    (last > 0).then(|| {
        out.push_str(&text[last..]);
        out
    })
}

/// Runs `pii_restoration` (arguments already validated).
pub fn invoke(args: &Map<String, Value>, mut context: Vec<Value>) -> Result<Value> {
    let map: HashMap<&str, &str> = args
        .get("redactions")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(h, v)| Some((h.trim_start_matches('[').trim_end_matches(']'), v.as_str()?)))
        .collect();
    let mut unknown = Vec::new();
    let mut restored = 0usize;
    content::map_text(&mut context, &mut |t| {
        let r = restore(t, &map, &mut unknown);
        restored += usize::from(r.is_some());
        r
    });
    Ok(json!({"content": context, "metadata": {"restoredTexts": restored, "unknownHandles": unknown}}))
}
