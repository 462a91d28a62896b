//! Concern preferences stored per server in `localStorage` (the concern proposal's Option D:
//! host-side preference storage), so a user's choices survive a reload.

use gloo_storage::errors::StorageError;
use gloo_storage::{LocalStorage, Storage};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{error_object, from_js, small};

/// The storage key of one server's preferences.
fn key(server: &str) -> String {
    format!("mcp-sieve/concerns/{server}")
}

/// Whether this host has a browser window with `localStorage` (Node has neither). Asked first:
/// gloo-storage throws when there is none.
fn has_storage() -> bool {
    let global = js_sys::global();
    let has = |name: &str| js_sys::Reflect::get(&global, &name.into()).is_ok_and(|v| !v.is_undefined() && !v.is_null());
    has("window") && has("localStorage")
}

/// A storage failure (a full or disabled `localStorage`) as a JS `Error`.
fn storage_error(what: &str, e: &StorageError) -> JsValue {
    error_object(&format!("{what}: {e}"), -32603, None)
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
    if !has_storage() {
        return Err(error_object(
            "concern preferences are stored in localStorage, which this host (not a browser window) lacks; keep them yourself",
            -32603,
            None,
        ));
    }
    LocalStorage::set(key(server), &value).map_err(|e| storage_error("could not store the preferences", &e))
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
    // Only an object is a stored configuration (anything else stored there reads as none).
    if !has_storage() {
        return JsValue::NULL;
    }
    // Read as a `Value` (the deserializer the package has anyway; a `Map` would add a second).
    match LocalStorage::get::<Value>(key(server)) {
        Ok(stored @ Value::Object(_)) => small(&stored).unwrap_or(JsValue::NULL),
        _ => JsValue::NULL,
    }
}

/// Forgets the preferences stored for `server`.
#[wasm_bindgen(js_name = clearConcernPreferences)]
pub fn clear_concern_preferences(server: &str) {
    if has_storage() {
        LocalStorage::delete(key(server));
    }
}
