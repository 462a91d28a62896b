//! The package's search with a host's sentence vectors (issue 40 item 4, in the published
//! package since it became part of the `wasm` feature), in Chromium: real
//! all-MiniLM-L6-v2 vectors of twelve Stripe tools and of paraphrased queries
//! (tests/fixtures/search-vectors.json, made by `mcp-sieve serve`'s /v1/embeddings) make the
//! meant tool win where the words' ranking alone answers another; without a query vector the
//! answer is `tool_filter`'s ranking; a wrong dimension, count, name or filter throws an `Error`
//! with `code` -32602 naming the field.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use mcp_sieve::wasm::Sieve;
use serde_json::Value;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn js(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap()
}

fn get(v: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(v, &key.into()).unwrap()
}

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/search-vectors.json")).unwrap()
}

/// The fixture's numbers (stored × 1000) as floats.
fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32 / 1000.0)
        .collect()
}

fn sieve(f: &Value) -> Sieve {
    Sieve::from_catalog(js(&serde_json::json!({"tools": f["tools"]}).to_string())).unwrap()
}

/// `(ranking, names best first)` of `sieve.search(query, {k: 3, queryVector})`.
fn search(s: &Sieve, query: &str, vector: Option<&[f32]>) -> (String, Vec<String>) {
    let options = js_sys::Object::new();
    js_sys::Reflect::set(&options, &"k".into(), &3.into()).unwrap();
    if let Some(v) = vector {
        js_sys::Reflect::set(&options, &"queryVector".into(), &js_sys::Float32Array::from(v).into()).unwrap();
    }
    let out = s.search(query, Some(options.into())).unwrap();
    let names = js_sys::Array::from(&get(&out, "tools"))
        .iter()
        .map(|t| get(&t, "name").as_string().unwrap())
        .collect();
    (get(&out, "ranking").as_string().unwrap(), names)
}

fn error_message(e: JsValue) -> String {
    assert_eq!(get(&e, "code").as_f64(), Some(-32602.0));
    get(&e, "message").as_string().unwrap()
}

fn vectors(f: &Value) -> Vec<f32> {
    f["toolVectors"].as_array().unwrap().iter().flat_map(floats).collect()
}

#[wasm_bindgen_test]
fn vectors_make_the_paraphrase_win_and_without_them_the_words_rank() {
    let f = fixture();
    let q = &f["queries"][0];
    let (text, qv) = (q["text"].as_str().unwrap(), floats(&q["vector"]));
    assert_eq!(text, "give this buyer their money back");
    let mut s = sieve(&f);
    // Before any vectors, and with vectors but no query vector: the words' ranking, the one
    // `tool_filter` gives (its `money` → `payment` synonym puts the payment intents first).
    let lexical = search(&s, text, None);
    assert_eq!(lexical.0, "lexical");
    assert_eq!(lexical.1[0], "list_payment_intents");
    let ranked = s
        .middleware_invoke(
            "tool_filter".into(),
            js(&serde_json::json!([{"type": "text", "text": text}]).to_string()),
            js(r#"{"k": 3}"#),
        )
        .unwrap();
    let suggested: Vec<String> = js_sys::Array::from(&get(&get(&ranked, "metadata"), "suggestedToolSet"))
        .iter()
        .map(|n| n.as_string().unwrap())
        .collect();
    assert_eq!(lexical.1, suggested);
    s.set_tool_vectors(vectors(&f), 384, None).unwrap();
    assert_eq!(search(&s, text, None), lexical);
    // With the query's vector the fusion (0.7 × cosine + 0.3 × BM25 / best) answers the refund.
    let hybrid = search(&s, text, Some(&qv));
    assert_eq!(hybrid.0, "hybrid");
    assert_eq!(hybrid.1[0], "create_refund", "{hybrid:?}");
    // The same vectors handed over by name, in another order, rank the same.
    let names: Vec<Value> = f["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .rev()
        .collect();
    let rows: Vec<f32> = f["toolVectors"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .flat_map(floats)
        .collect();
    let mut by_name = sieve(&f);
    by_name
        .set_tool_vectors(rows, 384, Some(js(&Value::Array(names).to_string())))
        .unwrap();
    assert_eq!(search(&by_name, text, Some(&qv)), hybrid);
    // A tool left out of `names` has no vector: it ranks by its words only.
    let mut some = sieve(&f);
    some.set_tool_vectors(floats(&f["toolVectors"][10]), 384, Some(js(r#"["create_refund"]"#)))
        .unwrap();
    assert_eq!(search(&some, text, Some(&qv)).1[0], "create_refund");
}

#[wasm_bindgen_test]
fn a_wrong_dimension_count_or_name_throws_naming_the_field() {
    let f = fixture();
    let mut s = sieve(&f);
    let q = floats(&f["queries"][0]["vector"]);
    let options = js_sys::Object::new();
    js_sys::Reflect::set(
        &options,
        &"queryVector".into(),
        &js_sys::Float32Array::from(&q[..]).into(),
    )
    .unwrap();
    let m = error_message(s.search("refund", Some(options.clone().into())).unwrap_err());
    assert!(m.contains("options.queryVector is given, but no tool vectors"), "{m}");
    let m = error_message(s.set_tool_vectors(vectors(&f), 383, None).unwrap_err());
    assert!(
        m.contains("vectors holds 4608 numbers: not whole vectors of dim 383"),
        "{m}"
    );
    let m = error_message(
        s.set_tool_vectors(vectors(&f)[..384 * 11].to_vec(), 384, None)
            .unwrap_err(),
    );
    assert!(
        m.contains("vectors holds 11 vectors of dim 384, the catalog 12 tools"),
        "{m}"
    );
    let m = error_message(
        s.set_tool_vectors(q.clone(), 384, Some(js(r#"["create_refund", "x"]"#)))
            .unwrap_err(),
    );
    assert!(m.contains("names has 2 names for 1 vectors"), "{m}");
    let m = error_message(
        s.set_tool_vectors(q.clone(), 384, Some(js(r#"["refund_all"]"#)))
            .unwrap_err(),
    );
    assert!(
        m.contains("names[0] is \"refund_all\": not a tool of this catalog"),
        "{m}"
    );
    let mut nan = q.clone();
    nan[7] = f32::NAN;
    let m = error_message(
        s.set_tool_vectors(nan, 384, Some(js(r#"["create_refund"]"#)))
            .unwrap_err(),
    );
    assert!(m.contains("vectors[7] is not a finite number"), "{m}");
    // No vector, named by no name, of a dimension whose rows for every tool the memory cannot hold.
    for dim in [1 << 28, 1 << 31] {
        let m = error_message(s.set_tool_vectors(Vec::new(), dim, Some(js("[]"))).unwrap_err());
        assert!(m.contains(&format!("12 tools of dim {dim} are more numbers")), "{m}");
    }
    s.set_tool_vectors(vectors(&f), 384, None).unwrap();
    let short = js_sys::Object::new();
    js_sys::Reflect::set(
        &short,
        &"queryVector".into(),
        &js_sys::Float32Array::from(&q[..100]).into(),
    )
    .unwrap();
    let m = error_message(s.search("refund", Some(short.into())).unwrap_err());
    assert!(
        m.contains("options.queryVector has 100 numbers, the tools' vectors 384"),
        "{m}"
    );
    let m = error_message(s.search("refund", Some(js(r#"{"k": 0}"#))).unwrap_err());
    assert!(m.contains("options.k must be an integer from 1 to 100"), "{m}");
    let m = error_message(
        s.search("refund", Some(js(r#"{"filter": {"groups": "stripe"}}"#)))
            .unwrap_err(),
    );
    assert!(m.contains("options.filter.groups"), "{m}");
    assert_eq!(
        get(&s.search("refund", Some(options.into())).unwrap(), "ranking")
            .as_string()
            .unwrap(),
        "hybrid"
    );
}
