//! Concern preferences stored per server in `localStorage` (the concern proposal's Option D:
//! host-side preference storage), so a user's choices survive a reload.

use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::convert::{error_object, from_js};

/// The storage key of one server's preferences.
fn key(server: &str) -> String {
    format!("mcp-sieve/concerns/{server}")
}

/// This host's `localStorage`, when it has a browser window with one (Node has neither).
fn storage() -> Option<JsValue> {
    let global = js_sys::global();
    let get = |name: &str| {
        js_sys::Reflect::get(&global, &name.into())
            .ok()
            .filter(|v| !v.is_undefined() && !v.is_null())
    };
    get("window")?;
    get("localStorage")
}

/// `storage.<method>(args...)`, called through `Reflect` (no `web-sys` or `gloo-storage`
/// bindings: about 0.7 KB gzipped less in the package).
fn call(storage: &JsValue, method: &str, args: &[&str]) -> Result<JsValue, JsValue> {
    let f: js_sys::Function = js_sys::Reflect::get(storage, &method.into())?.dyn_into()?;
    let args: js_sys::Array = args.iter().map(|a| JsValue::from_str(a)).collect();
    f.apply(storage, &args)
}

/// A thrown JS value as `name: message` (an `Error`'s), or its string form.
fn storage_error(what: &str, e: &JsValue) -> JsValue {
    let why = match e.dyn_ref::<js_sys::Error>() {
        Some(err) => format!("{}: {}", String::from(err.name()), String::from(err.message())),
        None => e.as_string().unwrap_or_default(),
    };
    error_object(&format!("{what}: {why}"), -32603, None)
}

/// Stores the concern configuration chosen for `server` (any stable key, usually its URL).
///
/// @example
/// ```js
/// saveConcernPreferences('https://example.com/mcp', { security: 'high' });
/// ```
#[wasm_bindgen(js_name = saveConcernPreferences)]
pub fn save_concern_preferences(
    server: &str,
    #[wasm_bindgen(unchecked_param_type = "ConcernConfig")] concerns: JsValue,
) -> Result<(), JsValue> {
    let value = from_js(concerns, "concerns")?;
    if !value.is_object() {
        return Err(error_object(
            "concerns must be an object mapping concern names to values",
            -32602,
            None,
        ));
    }
    let Some(storage) = storage() else {
        return Err(error_object(
            "concern preferences are stored in localStorage, which this host (not a browser window) lacks; keep them yourself",
            -32603,
            None,
        ));
    };
    call(&storage, "setItem", &[&key(server), &value.to_string()])
        .map(|_| ())
        .map_err(|e| storage_error("could not store the preferences", &e))
}

/// The concern configuration stored for `server`, or `null` when none (or unreadable, or no
/// `localStorage` on this host, as in Node).
///
/// @example
/// ```js
/// const concerns = loadConcernPreferences('https://example.com/mcp') ?? {};
/// ```
#[wasm_bindgen(js_name = loadConcernPreferences, unchecked_return_type = "ConcernConfig | null")]
pub fn load_concern_preferences(server: &str) -> JsValue {
    let text = storage().and_then(|s| call(&s, "getItem", &[&key(server)]).ok()?.as_string());
    // Only an object is a stored configuration; its own text becomes the JS value.
    match text {
        Some(t) if matches!(serde_json::from_str::<Value>(&t), Ok(Value::Object(_))) => {
            js_sys::JSON::parse(&t).unwrap_or(JsValue::NULL)
        }
        _ => JsValue::NULL,
    }
}

/// Forgets the preferences stored for `server`.
#[wasm_bindgen(js_name = clearConcernPreferences)]
pub fn clear_concern_preferences(server: &str) {
    if let Some(storage) = storage() {
        let _ = call(&storage, "removeItem", &[&key(server)]);
    }
}
