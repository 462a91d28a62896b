//! `pii_redaction`: replaces each detected value with a handle like `[EMAIL_1]` (the same value
//! gets the same handle within a call, and handles that already occur in the text are never
//! reused), so that `pii_restoration` with `metadata.redactions` gives back the original text
//! exactly.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use crate::error::Result;
use crate::middleware::content;
use crate::middleware::detect::{self, Options, PiiType};
use crate::middleware::schema::parse_static;
use crate::middleware::Config;

/// The wire name.
pub const NAME: &str = "pii_redaction";
/// What it does, as `middleware/list` shows it.
pub const DESCRIPTION: &str = "Replace PII (emails, phone numbers, US SSNs, Luhn-valid payment cards, checksum-valid IBANs, IPv4/IPv6 addresses, API keys and secrets, configured names) with handles like [EMAIL_1]; metadata.redactions maps each handle to its value for pii_restoration";

/// `inputSchema` of `pii_redaction`.
pub fn schema() -> Value {
    let mut schema = parse_static(
        r#"{"type": "object", "properties": {
            "aggressiveness": {"type": "string", "enum": ["standard", "strict"], "default": "standard",
                "description": "strict also catches unformatted SSNs and phone numbers, Luhn-valid numbers without a known card prefix, high-entropy tokens, and capitalised names after cue words"},
            "types": {"type": "array", "items": {"type": "string", "enum": []}, "description": "only these types (default: all)"},
            "names": {"type": "array", "maxItems": 256, "items": {"type": "string", "minLength": 1, "maxLength": 256}, "description": "names to redact as PERSON, besides the configured ones"},
            "redactions": {"type": "object", "additionalProperties": {"type": "string"},
                "description": "handles from an earlier call of this conversation, to keep using them"}
        }, "additionalProperties": false}"#,
    );
    schema["properties"]["types"]["items"]["enum"] = PiiType::ALL.iter().map(|t| Value::from(t.wire())).collect();
    schema
}

/// Whether `s` is a handle name like `EMAIL_12`.
fn is_handle(s: &str) -> bool {
    let Some((label, n)) = s.rsplit_once('_') else {
        return false;
    };
    !label.is_empty()
        && label
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c == b'_' || c.is_ascii_digit())
        && !n.is_empty()
        && n.bytes().all(|c| c.is_ascii_digit())
}

/// Every `[HANDLE]` in `text`: (byte range including the brackets, handle name). A handle is at
/// most 40 bytes, so each `[` looks no further for its `]` (one pass over the text, however many
/// `[` it holds); `]` is ASCII, so the name ends on a character boundary.
pub(crate) fn handles_in(text: &str) -> impl Iterator<Item = (usize, usize, &str)> {
    text.match_indices('[').filter_map(move |(s, _)| {
        let rest = &text[s + 1..];
        let close = rest.bytes().take(41).position(|b| b == b']')?;
        let name = &rest[..close];
        is_handle(name).then_some((s, s + close + 2, name))
    })
}

/// The key of `value` of type `kind` in `Redactor::by_value` (labels hold no newline).
fn value_key(kind: PiiType, value: &str) -> String {
    format!("{}\n{value}", kind.label())
}

/// The state of one redaction call: value → handle, counters, handles to avoid.
#[derive(Debug, Default)]
pub struct Redactor {
    /// `"LABEL\nvalue"` → handle (a `String` key: one map type fewer in the browser package).
    by_value: HashMap<String, String>,
    /// handle → value, in creation order.
    pub redactions: Map<String, Value>,
    /// Handles made so far, by the type's position in `PiiType::ALL`.
    counts: [usize; PiiType::ALL.len()],
    taken: HashSet<String>,
    /// (handle, type, occurrences) in order of first appearance.
    pub entities: Vec<(String, PiiType, usize)>,
}

impl Redactor {
    /// A redactor that keeps `previous` handles and avoids handles already in `texts`.
    pub fn new<'a>(previous: Option<&Map<String, Value>>, texts: impl Iterator<Item = &'a str>) -> Self {
        let mut r = Redactor::default();
        for t in texts {
            for (_, _, h) in handles_in(t) {
                r.taken.insert(h.to_string());
            }
        }
        for (h, v) in previous.into_iter().flatten() {
            let h = h.trim_start_matches('[').trim_end_matches(']');
            let Some(v) = v.as_str() else { continue };
            let label = h.rsplit_once('_').map_or(h, |(l, _)| l);
            if let Some(kind) = PiiType::ALL.into_iter().find(|k| k.label() == label) {
                r.by_value.insert(value_key(kind, v), h.to_string());
            }
            r.taken.insert(h.to_string());
            r.redactions.insert(h.to_string(), Value::String(v.to_string()));
        }
        r
    }

    fn handle(&mut self, kind: PiiType, value: &str) -> String {
        if let Some(h) = self.by_value.get(&value_key(kind, value)) {
            if let Some(e) = self.entities.iter_mut().find(|e| &e.0 == h) {
                e.2 += 1;
            } else {
                self.entities.push((h.clone(), kind, 1));
            }
            return h.clone();
        }
        let slot = PiiType::ALL.iter().position(|k| *k == kind).unwrap_or_default();
        let n = &mut self.counts[slot];
        let h = loop {
            *n += 1;
            let h = format!("{}_{}", kind.label(), n);
            if !self.taken.contains(&h) {
                break h;
            }
        };
        self.taken.insert(h.clone());
        self.by_value.insert(value_key(kind, value), h.clone());
        self.redactions.insert(h.clone(), Value::String(value.to_string()));
        self.entities.push((h.clone(), kind, 1));
        h
    }

    /// Redacts one text; `None` when nothing was found.
    pub fn redact(&mut self, text: &str, opts: &Options) -> Option<String> {
        let spans = detect::detect(text, opts);
        if spans.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for s in spans {
            out.push_str(&text[last..s.start]);
            let h = self.handle(s.kind, &text[s.start..s.end]);
            out.push('[');
            out.push_str(&h);
            out.push(']');
            last = s.end;
        }
        out.push_str(&text[last..]);
        Some(out)
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// Runs `pii_redaction` (arguments already validated).
pub fn invoke(config: &Config, args: &Map<String, Value>, mut context: Vec<Value>) -> Result<Value> {
    let strict = args.get("aggressiveness").and_then(Value::as_str) == Some("strict");
    let mut names = config.names.clone();
    names.extend(strings(args.get("names")));
    crate::sort::sort_by(&mut names, |a, b| b.len().cmp(&a.len()));
    let types: Vec<PiiType> = strings(args.get("types"))
        .iter()
        .filter_map(|t| PiiType::from_wire(t))
        .collect();
    let opts = Options {
        strict,
        names: &names,
        types: &types,
    };
    let mut texts = Vec::new();
    content::for_each_text(&context, &mut |t| texts.push(t.to_string()));
    let mut r = Redactor::new(
        args.get("redactions").and_then(Value::as_object),
        texts.iter().map(String::as_str),
    );
    content::map_text(&mut context, &mut |t| r.redact(t, &opts));
    let entities: Vec<Value> = r
        .entities
        .iter()
        .map(|(h, k, n)| json!({"handle": h, "type": k.wire(), "count": n}))
        .collect();
    Ok(json!({"content": context, "metadata": {"redactions": r.redactions, "entities": entities}}))
}
