//! Context middleware in the npm package, in Chromium: `middlewareList`, a redaction →
//! restoration round trip through `middlewareInvoke`, errors as real `Error`s with `code`, and
//! the redaction throughput of the wasm build over about 1 MB (printed, not asserted).
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use mcp_sieve::middleware::detect::Options;
use mcp_sieve::middleware::pii_redaction::Redactor;
use mcp_sieve::middleware::sample;
use mcp_sieve::wasm::Sieve;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn js(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap()
}

fn json(v: &JsValue) -> String {
    js_sys::JSON::stringify(v).unwrap().into()
}

fn get(v: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(v, &key.into()).unwrap()
}

fn sieve() -> Sieve {
    Sieve::from_catalog(js(include_str!("../catalog/default.json"))).unwrap()
}

/// `performance.now()` in ms.
fn now() -> f64 {
    let perf = get(&js_sys::global(), "performance");
    let f: js_sys::Function = get(&perf, "now").into();
    f.call0(&perf).unwrap().as_f64().unwrap()
}

#[wasm_bindgen_test]
fn lists_every_builtin_locally() {
    let list = sieve().middleware_list().unwrap();
    let names: Vec<String> = js_sys::Array::from(&get(&list, "middleware"))
        .iter()
        .map(|m| get(&m, "name").as_string().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "pii_redaction",
            "pii_restoration",
            "content_moderation",
            "timestamp_injector",
            "tool_filter"
        ]
    );
}

#[wasm_bindgen_test]
fn redaction_round_trip_and_tool_filter() {
    let s = sieve();
    let context = js(
        r#"[{"type": "text", "text": "Mail jane.smith@example.com, card 4111 1111 1111 1111, ssn 123-45-6789"},
                         {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]"#,
    );
    let red = s
        .middleware_invoke("pii_redaction".into(), context.clone(), JsValue::UNDEFINED)
        .unwrap();
    let content = get(&red, "content");
    assert_eq!(
        json(&get(&js_sys::Array::from(&content).get(0), "text")),
        r#""Mail [EMAIL_1], card [CARD_1], ssn [SSN_1]""#
    );
    let args = js_sys::Object::new();
    js_sys::Reflect::set(&args, &"redactions".into(), &get(&get(&red, "metadata"), "redactions")).unwrap();
    let back = s
        .middleware_invoke("pii_restoration".into(), content, args.into())
        .unwrap();
    assert_eq!(json(&get(&back, "content")), json(&context));
    let ranked = s
        .middleware_invoke(
            "tool_filter".into(),
            js(r#"[{"type": "text", "text": "merge the approved pull request"}]"#),
            js(r#"{"k": 3}"#),
        )
        .unwrap();
    let top = js_sys::Array::from(&get(&get(&ranked, "metadata"), "suggestedToolSet")).get(0);
    assert_eq!(top.as_string().unwrap(), "merge_pull_request");
}

#[wasm_bindgen_test]
fn bad_arguments_throw_errors_with_code() {
    let err = sieve()
        .middleware_invoke("pii_redaction".into(), js("[]"), js(r#"{"aggressiveness": "ultra"}"#))
        .unwrap_err();
    assert_eq!(get(&err, "code").as_f64(), Some(-32602.0));
    let msg = get(&err, "message").as_string().unwrap();
    assert!(msg.contains("params.arguments.aggressiveness"), "{msg}");
}

#[wasm_bindgen_test]
fn redaction_throughput_in_wasm() {
    let text = sample::text(1 << 20);
    let mb = text.len() as f64 / 1e6;
    let names = vec!["Jane Smith".to_string()];
    let opts = Options {
        strict: false,
        names: &names,
        types: &[],
    };
    let mut best = f64::MAX;
    let mut found = 0;
    for _ in 0..5 {
        let t0 = now();
        let mut r = Redactor::new(None, std::iter::once(text.as_str()));
        let out = r.redact(&text, &opts);
        best = best.min(now() - t0);
        found = r.entities.iter().map(|e| e.2).sum::<usize>();
        assert!(out.is_some());
    }
    // Through the JS API, conversions included.
    let context = js_sys::Array::new();
    let part = js_sys::Object::new();
    js_sys::Reflect::set(&part, &"type".into(), &"text".into()).unwrap();
    // One call carries at most MAX_TEXT bytes of context (issue 13's work bound).
    let api_text = sample::text(mcp_sieve::middleware::content::MAX_TEXT * 3 / 4);
    let api_mb = api_text.len() as f64 / 1e6;
    js_sys::Reflect::set(&part, &"text".into(), &JsValue::from_str(&api_text)).unwrap();
    context.push(&part);
    let s = sieve();
    let t0 = now();
    s.middleware_invoke("pii_redaction".into(), context.into(), JsValue::UNDEFINED)
        .unwrap();
    let api = now() - t0;
    console_log!(
        "wasm redaction: {mb:.2} MB, {found} values, core {:.1} MB/s (best of 5, {best:.1} ms), via middlewareInvoke {:.1} MB/s ({api:.1} ms)",
        mb / (best / 1000.0),
        api_mb / (api / 1000.0)
    );
}
