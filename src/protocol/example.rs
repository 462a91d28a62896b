//! An example instance of a JSON Schema: what a simulated demo tool that declares an
//! `outputSchema` answers as its `structuredContent`, so that clients which validate results
//! against the schema (the official SDKs do) accept it. The simplest value that conforms: every
//! declared property (required or not) with a value of its type, `const`/`enum`/`default`/
//! `examples` when given, numbers within their bounds, strings of their `format` and length.

use serde_json::{json, Map, Value};

use crate::time::format_iso;

/// Deepest nesting followed; below it a schema's example is `null` (or `{}` for an object).
const MAX_DEPTH: usize = 16;

/// An instance of `schema` (a JSON Schema object), with `now_ms` for date and time formats.
pub fn instance(schema: &Value, now_ms: i64) -> Value {
    of(schema, now_ms, 0)
}

fn of(schema: &Value, now_ms: i64, depth: usize) -> Value {
    let Some(s) = schema.as_object() else {
        // `true` (anything) or a malformed schema: an empty object is the least surprising.
        return json!({});
    };
    if depth > MAX_DEPTH {
        return json!({});
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(first) = s.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    for key in ["default", "examples"] {
        let v = match s.get(key) {
            Some(Value::Array(a)) if key == "examples" => a.first(),
            v => v,
        };
        if let Some(v) = v {
            return v.clone();
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = s.get(key).and_then(Value::as_array).and_then(|b| b.first()) {
            if key != "allOf" || s.get(key).and_then(Value::as_array).is_some_and(|b| b.len() == 1) {
                return of(first, now_ms, depth + 1);
            }
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // A list of types: the first that is not null (null only when it is the only one).
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or_else(|| ts.first().and_then(Value::as_str))
            .unwrap_or("object"),
        _ if s.contains_key("properties") => "object",
        _ if s.contains_key("items") => "array",
        _ => "object",
    };
    match ty {
        "object" => object(s, now_ms, depth),
        "array" => {
            let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(1).min(8);
            let max = s.get("maxItems").and_then(Value::as_u64).unwrap_or(u64::MAX);
            let item = s.get("items").map_or(json!("example"), |i| of(i, now_ms, depth + 1));
            Value::Array(vec![item; min.min(max) as usize])
        }
        "string" => Value::String(string(s, now_ms)),
        "integer" => {
            let lo = s.get("minimum").and_then(Value::as_f64).map(f64::ceil);
            let hi = s.get("maximum").and_then(Value::as_f64).map(f64::floor);
            let ex_lo = s
                .get("exclusiveMinimum")
                .and_then(Value::as_f64)
                .map(|m| m.floor() + 1.0);
            let ex_hi = s
                .get("exclusiveMaximum")
                .and_then(Value::as_f64)
                .map(|m| m.ceil() - 1.0);
            json!(number(either(lo, ex_lo, f64::max), either(hi, ex_hi, f64::min)) as i64)
        }
        "number" => {
            let lo = s.get("minimum").and_then(Value::as_f64);
            let hi = s.get("maximum").and_then(Value::as_f64);
            let ex_lo = s.get("exclusiveMinimum").and_then(Value::as_f64);
            let ex_hi = s.get("exclusiveMaximum").and_then(Value::as_f64);
            let n = match (lo, ex_lo, ex_hi) {
                (_, Some(l), Some(h)) => (l + h) / 2.0,
                (_, Some(l), None) => l + 1.0,
                _ => number(lo, hi.or(ex_hi.map(|h| h - 1.0))),
            };
            json!(n)
        }
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!({}),
    }
}

/// The tighter of two optional bounds (`pick` chooses between two).
fn either(a: Option<f64>, b: Option<f64>, pick: fn(f64, f64) -> f64) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

/// Zero, or the nearest bound to it.
fn number(lo: Option<f64>, hi: Option<f64>) -> f64 {
    match (lo, hi) {
        (Some(l), _) if l > 0.0 => l,
        (_, Some(h)) if h < 0.0 => h,
        _ => 0.0,
    }
}

fn object(s: &Map<String, Value>, now_ms: i64, depth: usize) -> Value {
    let mut out = Map::new();
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            out.insert(k.clone(), of(p, now_ms, depth + 1));
        }
    }
    // A required name without a declared property: any value is allowed unless
    // `additionalProperties` says otherwise.
    for k in s.get("required").and_then(Value::as_array).into_iter().flatten() {
        if let Some(k) = k.as_str().filter(|k| !out.contains_key(*k)) {
            let extra = s.get("additionalProperties").unwrap_or(&Value::Bool(true));
            out.insert(k.to_string(), of(extra, now_ms, depth + 1));
        }
    }
    Value::Object(out)
}

fn string(s: &Map<String, Value>, now_ms: i64) -> String {
    let base = match s.get("format").and_then(Value::as_str).unwrap_or_default() {
        "date-time" => format_iso(now_ms, 0),
        "date" => format_iso(now_ms, 0).chars().take(10).collect(),
        "time" => format_iso(now_ms, 0).chars().skip(11).collect(),
        "uri" | "url" | "iri" => "https://example.com/".into(),
        "uri-reference" | "iri-reference" => "/example".into(),
        "email" | "idn-email" => "user@example.com".into(),
        "hostname" | "idn-hostname" => "example.com".into(),
        "ipv4" => "192.0.2.1".into(),
        "ipv6" => "2001:db8::1".into(),
        "uuid" => "00000000-0000-4000-8000-000000000000".into(),
        _ => "example".into(),
    };
    let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0).min(1024) as usize;
    let max = s
        .get("maxLength")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |m| m as usize);
    let mut v: String = base.chars().take(max).collect();
    while v.chars().count() < min {
        v.push('x');
    }
    v
}

#[cfg(test)]
mod tests {
    use super::instance;
    use serde_json::json;

    #[test]
    fn every_declared_property_gets_a_value_of_its_type() {
        let schema = json!({"type": "object", "properties": {
            "id": {"type": "string"}, "n": {"type": "integer", "minimum": 3},
            "when": {"type": "string", "format": "date-time"},
            "kind": {"type": "string", "enum": ["file", "directory"]},
            "rows": {"type": "array", "items": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
        }, "required": ["id", "n", "extra"]});
        let v = instance(&schema, 0);
        assert_eq!(v["id"], "example");
        assert_eq!(v["n"], 3);
        assert_eq!(v["when"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["kind"], "file");
        assert_eq!(v["rows"], json!([{"ok": false}]));
        assert_eq!(v["tags"], json!({}));
        assert!(
            v.get("extra").is_some(),
            "a required name without a property still appears"
        );
    }

    #[test]
    fn bounds_lengths_and_nesting_are_respected() {
        assert_eq!(instance(&json!({"type": "integer", "maximum": -2}), 0), json!(-2));
        assert_eq!(
            instance(&json!({"type": "integer", "exclusiveMinimum": 0}), 0),
            json!(1)
        );
        assert_eq!(
            instance(&json!({"type": "string", "minLength": 9}), 0),
            json!("examplexx")
        );
        assert_eq!(instance(&json!({"type": "string", "maxLength": 2}), 0), json!("ex"));
        assert_eq!(instance(&json!({"type": ["null", "number"]}), 0), json!(0.0));
        assert_eq!(instance(&json!({"type": "array", "maxItems": 0}), 0), json!([]));
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"type": "object", "properties": {"a": deep}, "required": ["a"]});
        }
        assert!(
            instance(&deep, 0).is_object(),
            "deep schemas end without recursion trouble"
        );
    }
}
