//! Conversions between JS values and the core's JSON — JSON text (one `JSON.stringify` /
//! `JSON.parse`), measured faster than crossing value by value for anything but the smallest
//! results (bench/convert.mjs; docs/src/package.md's table), which serde-wasm-bindgen's
//! serializer builds as plain JS objects — and errors as real JS `Error` objects carrying `code`
//! and `data`.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::error::Error;
use crate::model::Kind;

/// Estimated tokens of a JSON text: about four bytes a token for tool definitions.
pub fn estimate_tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// A JS `Error` with `message`, a numeric `code` and `data` (or `null`).
pub(crate) fn error_object(message: &str, code: i32, data: Option<&Value>) -> JsValue {
    let err = js_sys::Error::new(message);
    let _ = js_sys::Reflect::set(&err, &"code".into(), &JsValue::from(code));
    let data = data.map_or(JsValue::NULL, to_js);
    let _ = js_sys::Reflect::set(&err, &"data".into(), &data);
    err.into()
}

/// The core error as a JS `Error`.
pub(crate) fn js_error(e: &Error) -> JsValue {
    error_object(&e.to_string(), e.code(), e.data())
}

/// A JSON value as a plain JS value (objects, not `Map`s). Crosses as JSON text: one
/// `JSON.parse`, measured faster than serde-wasm-bindgen for lists, facets, groups, concern
/// declarations and resolved concerns (bench/convert.mjs), and used for a server's results.
pub(crate) fn to_js(v: &Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL)
}

/// A small result (a selection's counts, facets, a size, a search's ranking, stored preferences)
/// as a plain JS value: objects, not `Map`s (serde-wasm-bindgen's JSON-compatible serializer).
pub(crate) fn small<T: Serialize + ?Sized>(v: &T) -> Result<JsValue, JsValue> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(JsValue::from)
}

/// JSON text as a JS value (one `JSON.parse`: much faster than crossing value by value).
pub(crate) fn parse_js(text: &str) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(text)
}

/// A plain JS value as JSON; `undefined` and `null` are `Value::Null`. `what` names it in errors.
pub(crate) fn from_js(v: impl Into<Option<JsValue>>, what: &str) -> Result<Value, JsValue> {
    parse_json(v.into(), what)
}

/// `from_js`'s body, not generic: one copy in the wasm for `JsValue` and `Option<JsValue>`
/// arguments (two copies measured 0.4 KB more).
fn parse_json(v: Option<JsValue>, what: &str) -> Result<Value, JsValue> {
    let Some(v) = v.filter(|v| !v.is_undefined() && !v.is_null()) else {
        return Ok(Value::Null);
    };
    let not_json = |why: &str| js_error(&Error::params(format!("{what} is not plain JSON: {why}")));
    // `JSON.stringify` throws on a BigInt or a cycle, and gives `undefined` for a function.
    let text = js_sys::JSON::stringify(&v)
        .ok()
        .and_then(|s| s.as_string())
        .ok_or_else(|| not_json("it has no JSON text (a function, a symbol, a BigInt or a cycle)"))?;
    serde_json::from_str(&text).map_err(|e| not_json(&e.to_string()))
}

/// The kind named by `tools` | `resources` | `resourceTemplates` | `prompts` (default `tools`).
pub(crate) fn parse_kind(v: Option<String>) -> Result<Kind, JsValue> {
    match v.as_deref() {
        None | Some("tools") => Ok(Kind::Tool),
        Some(k) => Kind::ALL.into_iter().find(|x| x.key() == k).ok_or_else(|| {
            js_error(&Error::params(format!(
                "kind must be one of \"tools\", \"resources\", \"resourceTemplates\", \"prompts\"; got \"{k}\""
            )))
        }),
    }
}

/// Logs warnings to the console (`console.warn`), one line each.
pub(crate) fn warn_all(lines: &[String]) {
    for l in lines {
        web_sys::console::warn_1(&JsValue::from_str(&format!("mcp-sieve: {l}")));
    }
}
