//! A small JSON Schema validator for the subset the built-ins' `inputSchema`s use: `type`,
//! `properties`, `required`, `additionalProperties` (false or a schema), `enum`, `items`,
//! `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems`. An error is `-32602`
//! naming the failing path, e.g. `params.arguments.aggressiveness must be one of ...`.

use serde_json::Value;

use crate::error::{type_name, Error, Result};

/// A built-in's schema, written as JSON text: parsed on demand, which keeps the package far
/// smaller than the same object built by `json!` (every key and value becomes code there).
pub fn parse_static(text: &'static str) -> Value {
    // The texts are constants of this crate; a unit test parses each of them.
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.as_i64().is_some() || v.as_u64().is_some() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

fn article(t: &str) -> String {
    match t {
        "object" | "array" | "integer" => format!("an {t}"),
        _ => format!("a {t}"),
    }
}

/// Validates `value` against `schema`; `path` names `value` in errors.
pub fn validate(schema: &Value, value: &Value, path: &str) -> Result<()> {
    let Some(s) = schema.as_object() else { return Ok(()) };
    if let Some(t) = s.get("type").and_then(Value::as_str) {
        if !is_type(value, t) {
            return Err(Error::params(format!(
                "{path} must be {}, got {}",
                article(t),
                type_name(value)
            )));
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(Error::params_with(
                format!("{path} must be one of {}, got {value}", list.join(", ")),
                serde_json::json!({"path": path, "allowed": options}),
            ));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
            if n < min {
                return Err(Error::params(format!(
                    "{path} must be at least {}, got {value}",
                    s["minimum"]
                )));
            }
        }
        if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
            if n > max {
                return Err(Error::params(format!(
                    "{path} must be at most {}, got {value}",
                    s["maximum"]
                )));
            }
        }
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as u64;
        if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
            if len < min {
                return Err(Error::params(format!("{path} must have at least {min} characters")));
            }
        }
        if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
            if len > max {
                return Err(Error::params(format!("{path} must have at most {max} characters")));
            }
        }
    }
    if let Some(items) = value.as_array() {
        if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < min {
                return Err(Error::params(format!("{path} must have at least {min} items")));
            }
        }
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
            if items.len() as u64 > max {
                return Err(Error::params(format!("{path} must have at most {max} items")));
            }
        }
        if let Some(item_schema) = s.get("items") {
            for (i, item) in items.iter().enumerate() {
                validate(item_schema, item, &format!("{path}[{i}]"))?;
            }
        }
    }
    if let Some(obj) = value.as_object() {
        let props = s.get("properties").and_then(Value::as_object);
        for req in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            if let Some(r) = req.as_str() {
                if !obj.contains_key(r) {
                    return Err(Error::params(format!("{path}.{r} is required")));
                }
            }
        }
        for (k, v) in obj {
            let p = format!("{path}.{k}");
            match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                (Some(sub), _) => validate(sub, v, &p)?,
                (None, Some(Value::Bool(false))) => {
                    let known: Vec<&str> = props
                        .map(|p| p.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    return Err(Error::params(format!(
                        "{p} is not a known argument; expected one of: {}",
                        known.join(", ")
                    )));
                }
                (None, Some(sub @ Value::Object(_))) => validate(sub, v, &p)?,
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::middleware::Builtin;

    #[test]
    fn every_builtin_schema_text_parses_to_an_object() {
        for b in Builtin::ALL {
            let s = b.input_schema();
            assert_eq!(s["type"], "object", "{}", b.name());
            assert!(s["properties"].is_object(), "{}", b.name());
        }
        let types = &Builtin::PiiRedaction.input_schema()["properties"]["types"]["items"]["enum"];
        assert!(types.as_array().is_some_and(|t| t.len() > 5));
    }
}
