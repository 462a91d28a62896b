//! The platform's clock and randomness, for every part of the Worker (a leaf: it imports no
//! other file of the Worker).

use wasm_bindgen::JsCast;

/// Now, ms since the epoch (`Date.now()`: no `Date` object per reading).
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// A random id from the platform's `crypto.randomUUID()`.
pub fn fresh_id() -> String {
    let global = js_sys::global();
    js_sys::Reflect::get(&global, &"crypto".into())
        .and_then(|c| {
            let f: js_sys::Function = js_sys::Reflect::get(&c, &"randomUUID".into())?.dyn_into()?;
            f.call0(&c)
        })
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| format!("{:x}", (js_sys::Math::random() * 1e16) as u64))
}
