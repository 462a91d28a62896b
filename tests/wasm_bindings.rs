//! The browser class `Sieve` in Chromium: it filters with the core and throws real `Error`s
//! carrying `code` and `data`.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use mcp_sieve::wasm::Sieve;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn js(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap()
}

fn get(v: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(v, &key.into()).unwrap()
}

#[wasm_bindgen_test]
fn filters_the_default_catalog_and_reports_size() {
    let sieve = Sieve::from_catalog(js(include_str!("../catalog/default.json"))).unwrap();
    let all = sieve.filter_tools(js("{}")).unwrap();
    let some = sieve.filter_tools(js(r#"{"groups": ["calendar"]}"#)).unwrap();
    let (n_all, n_some) = (
        js_sys::Array::from(&get(&all, "tools")).length(),
        js_sys::Array::from(&get(&some, "tools")).length(),
    );
    assert_eq!(n_all as usize, sieve.tool_count());
    assert!(n_some > 0 && n_some < n_all);
    assert!(get(&some, "bytes").as_f64().unwrap() < get(&all, "bytes").as_f64().unwrap());
    assert!(get(&some, "tokens").as_f64().unwrap() > 0.0);
}

#[wasm_bindgen_test]
fn bad_filters_throw_errors_with_code() {
    let sieve = Sieve::from_catalog(js(include_str!("../catalog/default.json"))).unwrap();
    let err = sieve.filter_tools(js(r#"{"groups": "calendar"}"#)).unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(get(&err, "code").as_f64(), Some(-32602.0));
    let msg: String = js_sys::Error::from(err).message().into();
    assert!(msg.contains("filter.groups must be an array of strings"), "{msg}");
}
