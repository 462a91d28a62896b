//! Small helpers to read JSON fields with errors that name the path and the expected type.

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};

/// A required non-empty string field.
pub fn req_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<String> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(Error::params(format!("{path}.{key} must be a non-empty string"))),
        Some(v) => Err(Error::params(format!(
            "{path}.{key} must be a string, got {}",
            type_name(v)
        ))),
        None => Err(Error::params(format!("{path}.{key} is required (a string)"))),
    }
}

/// An optional string field.
pub fn opt_str(obj: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(Error::params(format!(
            "{path}.{key} must be a string, got {}",
            type_name(v)
        ))),
    }
}

/// An optional array of strings (absent or null is empty).
pub fn str_array(v: Option<&Value>, path: &str) -> Result<Vec<String>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(Error::params(format!(
                    "{path} must be an array of strings; {path}[{i}] is {}",
                    type_name(other)
                ))),
            })
            .collect(),
        Some(other) => Err(Error::params(format!(
            "{path} must be an array of strings, got {}",
            type_name(other)
        ))),
    }
}

/// An array of strings at `path`, as a catalog setting (errors are catalog errors naming `path`
/// and the item).
pub(crate) fn catalog_strings(v: &Value, path: &str) -> Result<Vec<String>> {
    let arr = v
        .as_array()
        .ok_or_else(|| Error::Catalog(format!("{path} must be an array of strings, got {}", type_name(v))))?;
    arr.iter()
        .enumerate()
        .map(|(i, s)| {
            s.as_str()
                .map(str::to_string)
                .ok_or_else(|| Error::Catalog(format!("{path}[{i}] must be a string, got {}", type_name(s))))
        })
        .collect()
}

/// Numbers as text, integral values without a fraction (`5.0` and `5` are both `"5"`), others
/// in the shortest form that reads back as the same number, as JSON writes them (`0.25`,
/// `1e-7`). Written by serde_json: `f64`'s `Display` would add about 20 KB of float formatting
/// to the browser package.
pub fn canonical_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        (n as i64).to_string()
    } else {
        serde_json::Number::from_f64(n).map_or_else(
            || {
                (if n.is_nan() {
                    "NaN"
                } else if n > 0.0 {
                    "inf"
                } else {
                    "-inf"
                })
                .to_string()
            },
            |x| x.to_string(),
        )
    }
}

/// The canonical text of a scalar concern/annotation value: strings as is, others as JSON.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.as_f64().map_or_else(|| n.to_string(), canonical_number)),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// An object of strings (absent or null: empty), in its order; errors name `path` and the key.
pub(crate) fn string_map(v: Option<&Value>, path: &str) -> Result<Vec<(String, String)>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(Error::Catalog(format!(
                    "{path}[\"{k}\"] must be a string, got {}",
                    type_name(other)
                ))),
            })
            .collect(),
        Some(other) => Err(Error::Catalog(format!(
            "{path} must be an object of strings, got {}",
            type_name(other)
        ))),
    }
}

/// Objects up to this many members are searched by a scan of their keys (see [`member`]).
const SCANNED: usize = 8;

/// `v[key]` (`Value::Null` when `v` is not an object or has no such member), found in a small
/// object by comparing its few keys instead of hashing `key`: `serde_json`'s map keeps its order
/// (`preserve_order`, an `IndexMap` with SipHash), and a request's `params` and `_meta` are read
/// about twenty times for every stateless `tools/list` — each a hash of the key, 2-3% of the
/// native server's samples under scripts/bench-native.sh's stateless load. A parsed object holds
/// each key once, so the scan finds what `get` finds.
pub(crate) fn member<'a>(v: &'a Value, key: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    get(v, key).unwrap_or(&NULL)
}

/// `v.get(key)`, found as [`member`] finds it (`None`: not an object, or no such member).
pub(crate) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    let map = v.as_object()?;
    match map.len() <= SCANNED {
        true => map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v),
        false => map.get(key),
    }
}

#[cfg(test)]
mod tests {
    use super::{canonical_number, get, member};
    use serde_json::json;

    #[test]
    fn canonical_numbers_read_back_as_the_same_number() {
        assert_eq!(canonical_number(5.0), "5");
        assert_eq!(canonical_number(-3.0), "-3");
        assert_eq!(canonical_number(0.25), "0.25");
        assert_eq!(canonical_number(-1.5), "-1.5");
        for n in [0.1, 2.5e-7, 1e300, 123456.789] {
            assert_eq!(canonical_number(n).parse::<f64>().unwrap(), n);
        }
    }

    #[test]
    fn a_member_is_what_indexing_gives_in_small_and_large_objects() {
        let mut large = serde_json::Map::new();
        for i in 0..20 {
            large.insert(format!("k{i}"), json!(i));
        }
        let values = [
            json!({"filter": {"groups": ["a"]}, "_meta": {"x": 1}}),
            json!({"a": 1, "b": null, "c": [1], "d": "x", "e": {}, "f": 2, "g": 3, "h": 4}),
            json!({"only": true}),
            json!({}),
            json!([1, 2]),
            json!("text"),
            json!(null),
            serde_json::Value::Object(large),
            serde_json::from_str(r#"{"k": 1, "k": 2, "j": 3}"#).unwrap(),
        ];
        for v in &values {
            for key in [
                "filter", "_meta", "a", "b", "h", "only", "k", "k7", "k19", "missing", "",
            ] {
                assert_eq!(member(v, key), &v[key], "{v} [{key}]");
                assert_eq!(get(v, key), v.get(key), "{v} [{key}]");
            }
        }
    }
}
