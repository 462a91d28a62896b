//! The browser package in Chromium: `Sieve` filters with the core over every kind, counts facets,
//! runs JS callbacks as policy filters (a throwing one is ignored), filters tasks by SEP-1904,
//! round-trips concern preferences through `localStorage`, and throws real `Error`s carrying
//! `code` and `data`.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use mcp_sieve::wasm::{filter_tasks, load_concern_preferences, save_concern_preferences, Sieve};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const DEFAULT: &str = include_str!("../catalog/default.json");

fn js(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap()
}

fn get(v: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(v, &key.into()).unwrap()
}

fn num(v: &JsValue, key: &str) -> f64 {
    get(v, key).as_f64().unwrap_or_else(|| panic!("{key} is not a number"))
}

fn json(v: &JsValue) -> String {
    js_sys::JSON::stringify(v).unwrap().into()
}

fn names(list: &JsValue, key: &str) -> Vec<String> {
    js_sys::Array::from(&get(list, key))
        .iter()
        .map(|t| get(&t, "name").as_string().unwrap())
        .collect()
}

fn small() -> Sieve {
    Sieve::from_catalog(js(r#"{
        "groups": [{"name": "code"}, {"name": "github", "parent": "code"}, {"name": "mail"}],
        "concerns": [{"name": "security", "values": ["high", "low"], "default": "high"}],
        "tools": [
            {"name": "a", "inputSchema": {}, "groups": ["github"], "tags": ["ro"], "_meta": {"concerns": {"security": "high"}}},
            {"name": "b", "inputSchema": {}, "groups": ["code"], "tags": ["ro", "beta"], "_meta": {"concerns": {"security": "low"}}},
            {"name": "c", "inputSchema": {}, "groups": ["mail"]}
        ],
        "prompts": [{"name": "p1", "groups": ["mail"]}, {"name": "p2", "groups": ["code"]}]
    }"#))
    .unwrap()
}

#[wasm_bindgen_test]
fn filters_the_default_catalog_and_reports_size() {
    let sieve = Sieve::from_catalog(js(DEFAULT)).unwrap();
    let all = sieve.filter_tools(Some(js("{}"))).unwrap();
    let some = sieve.filter_tools(Some(js(r#"{"groups": ["calendar"]}"#))).unwrap();
    let (n_all, n_some) = (names(&all, "tools").len(), names(&some, "tools").len());
    assert_eq!(n_all, sieve.tool_count());
    assert!(n_some > 0 && n_some < n_all);
    assert!(num(&some, "bytes") < num(&all, "bytes"));
    assert!(num(&some, "tokens") > 0.0);
    // `filter` (positions) and `list` (objects) agree with `filterTools`, bytes included.
    let sel = sieve.filter(Some(js(r#"{"groups": ["calendar"]}"#)), None).unwrap();
    let list = sieve.list(Some(js(r#"{"groups": ["calendar"]}"#)), None).unwrap();
    assert_eq!(num(&sel, "count") as usize, n_some);
    assert_eq!(num(&sel, "bytes"), num(&some, "bytes"));
    assert_eq!(num(&list, "bytes"), num(&some, "bytes"));
    assert_eq!(names(&list, "items"), names(&some, "tools"));
    let indices: Vec<u32> = js_sys::Uint32Array::from(get(&sel, "indices")).to_vec();
    let items = sieve.items(&indices, None).unwrap();
    assert_eq!(json(&items), json(&get(&some, "tools")));
    // The size of any value, measured the same way.
    let size = Sieve::size(get(&all, "tools")).unwrap();
    assert!(num(&size, "bytes") > 0.0 && num(&size, "tokens") == (num(&size, "bytes") / 4.0).ceil());
}

#[wasm_bindgen_test]
fn filters_every_kind_with_concerns_like_the_server() {
    let sieve = small();
    let list = |f: &str, kind: Option<&str>| names(&sieve.list(Some(js(f)), kind.map(String::from)).unwrap(), "items");
    assert_eq!(list(r#"{"groups": ["code"]}"#, None), ["a", "b"]);
    assert_eq!(
        list(r#"{"groups": ["code"], "concerns": {"security": "high"}}"#, None),
        ["a"]
    );
    assert_eq!(list(r#"{"concerns": {"security": "low"}}"#, None), ["b", "c"]);
    assert_eq!(list(r#"{"groups": ["mail"]}"#, Some("prompts")), ["p1"]);
    let err = sieve.filter(Some(js("{}")), Some("widgets".into())).unwrap_err();
    assert!(js_sys::Error::from(err)
        .message()
        .as_string()
        .unwrap()
        .contains("kind must be one of"));
    // Undeclared concerns are ignored with a warning, as on the server.
    let sel = sieve
        .filter(Some(js(r#"{"concerns": {"speed": "fast"}}"#)), None)
        .unwrap();
    assert_eq!(num(&sel, "count"), 3.0);
    assert!(json(&get(&sel, "warnings")).contains("speed"));
    let resolved = sieve
        .resolve_concerns(js(r#"{"security": "low", "speed": 1}"#))
        .unwrap();
    assert_eq!(json(&get(&resolved, "concerns")), r#"{"security":"low"}"#);
}

#[wasm_bindgen_test]
fn facets_count_what_each_option_would_leave() {
    let sieve = small();
    let f = sieve.facets(Some(js(r#"{"groups": ["mail"]}"#)), None).unwrap();
    assert_eq!(num(&f, "total"), 1.0);
    assert_eq!(
        json(&get(&f, "groups")),
        r#"[{"name":"code","count":2},{"name":"github","count":1},{"name":"mail","count":1}]"#
    );
    let f = sieve.facets(Some(js("{}")), None).unwrap();
    assert_eq!(
        json(&get(&f, "tags")),
        r#"[{"name":"ro","require":2,"exclude":1},{"name":"beta","require":1,"exclude":2}]"#
    );
    assert_eq!(
        json(&get(&f, "concerns")),
        r#"[{"name":"security","values":[{"value":"high","count":2},{"value":"low","count":2}]}]"#
    );
    // Each facet count equals the count of the filter with that option added.
    let with_tag = sieve.filter(Some(js(r#"{"tags": ["beta"]}"#)), None).unwrap();
    assert_eq!(num(&with_tag, "count"), 1.0);
}

#[wasm_bindgen_test]
fn js_callbacks_filter_in_priority_order_and_a_throwing_one_is_ignored() {
    let mut sieve = small();
    let calls = js_sys::Array::new();
    let no_b = js_sys::Function::new_with_args(
        "item, kind",
        "globalThis.__calls.push('no_b:' + kind); return item.name !== 'b';",
    );
    let boom = js_sys::Function::new_with_args(
        "item",
        "globalThis.__calls.push('boom'); throw new Error('boom on ' + item.name);",
    );
    js_sys::Reflect::set(&js_sys::global(), &"__calls".into(), &calls).unwrap();
    let low = sieve
        .add_filter(no_b, Some(js(r#"{"priority": 1, "kinds": ["tools"]}"#)))
        .unwrap();
    let high = sieve.add_filter(boom, Some(js(r#"{"priority": 5}"#))).unwrap();
    assert_eq!(names(&sieve.list(Some(js("{}")), None).unwrap(), "items"), ["a", "c"]);
    // Higher priority first; the throwing filter kept everything.
    assert_eq!(calls.get(0).as_string().unwrap(), "boom");
    assert_eq!(calls.get(3).as_string().unwrap(), "no_b:tools");
    // Facets stay inside what policy leaves visible.
    assert_eq!(num(&sieve.facets(Some(js("{}")), None).unwrap(), "total"), 2.0);
    // Only tools: prompts untouched by the tools-only filter.
    assert_eq!(
        names(&sieve.list(Some(js("{}")), Some("prompts".into())).unwrap(), "items"),
        ["p1", "p2"]
    );
    assert!(sieve.remove_filter(low));
    assert!(!sieve.remove_filter(low));
    assert_eq!(
        names(&sieve.list(Some(js("{}")), None).unwrap(), "items"),
        ["a", "b", "c"]
    );
    assert!(sieve.remove_filter(high));
    let bad = sieve.add_filter(
        js_sys::Function::new_no_args("return true"),
        Some(js(r#"{"kinds": ["nope"]}"#)),
    );
    assert!(bad.is_err());
}

/// `explain`: each part that hides an item alone (filter fields, effective concerns, JS
/// filters), in agreement with `list` for every item and filter tried.
#[wasm_bindgen_test]
fn explain_names_each_part_that_hides_an_item_and_agrees_with_list() {
    let mut sieve = small();
    let reasons = |v: &JsValue| json(&get(v, "reasons"));
    // b: outside mail, carries beta, and security=high hides its "low".
    let why = sieve
        .explain(
            "b",
            Some(js(
                r#"{"groups": ["mail"], "excludeTags": ["beta"], "concerns": {"security": "high"}}"#,
            )),
            None,
        )
        .unwrap();
    assert_eq!(get(&why, "visible").as_bool(), Some(false));
    assert_eq!(get(&why, "cause").as_string().unwrap(), "filter");
    assert_eq!(
        reasons(&why),
        r#"[{"code":"filter","field":"groups","filter":{"groups":["mail"]}},{"code":"filter","field":"excludeTags","filter":{"excludeTags":["beta"]}},{"code":"concern:security","configured":"high","mapped":"low"}]"#
    );
    // a, in github under code: shown by groups ["code"] (parents), hidden by nothing.
    let shown = sieve.explain("a", Some(js(r#"{"groups": ["code"]}"#)), None).unwrap();
    assert_eq!(get(&shown, "visible").as_bool(), Some(true));
    assert_eq!(reasons(&shown), "[]");
    assert!(get(&shown, "cause").is_undefined());
    // Unknown name; another kind; a bad filter throws as list does.
    let none = sieve.explain("zz", None, None).unwrap();
    assert_eq!(
        (get(&none, "exists").as_bool(), get(&none, "cause").as_string().unwrap()),
        (Some(false), "catalog".to_string())
    );
    let prompt = sieve
        .explain("p2", Some(js(r#"{"groups": ["mail"]}"#)), Some("prompts".into()))
        .unwrap();
    assert_eq!(get(&prompt, "kind").as_string().unwrap(), "prompts");
    assert_eq!(get(&prompt, "visible").as_bool(), Some(false));
    assert!(sieve.explain("a", Some(js(r#"{"groups": "mail"}"#)), None).is_err());
    // A JS filter that refuses it, by id.
    let id = sieve
        .add_filter(
            js_sys::Function::new_with_args("item", "return item.name !== 'c';"),
            None,
        )
        .unwrap();
    let c = sieve
        .explain("c", Some(js(r#"{"concerns": {"security": "low"}}"#)), None)
        .unwrap();
    assert_eq!(reasons(&c), format!(r#"[{{"code":"js-filter:{id}","id":{id}}}]"#));
    assert_eq!(get(&c, "cause").as_string().unwrap(), "js-filter");
    // Agrees with list: visible exactly when listed.
    for filter in [
        "{}",
        r#"{"groups": ["code"]}"#,
        r#"{"tags": ["ro"], "concerns": {"security": "low"}}"#,
        r#"{"concerns": {"security": "high"}}"#,
        r#"{"namePatterns": ["a*", "c"]}"#,
        r#"{"expr": {"not": {"tag": "beta"}}, "concerns": {"security": "low"}}"#,
    ] {
        let listed = names(&sieve.list(Some(js(filter)), None).unwrap(), "items");
        for name in ["a", "b", "c"] {
            let why = sieve.explain(name, Some(js(filter)), None).unwrap();
            assert_eq!(
                get(&why, "visible").as_bool(),
                Some(listed.iter().any(|n| n == name)),
                "{name} with {filter}: {}",
                json(&why)
            );
        }
    }
}

#[wasm_bindgen_test]
fn tasks_are_filtered_and_ordered_by_sep_1904() {
    let tasks = js_sys::Array::from(&js(r#"[
        {"taskId": "t1", "status": "working", "createdAt": "2025-11-20T10:00:00Z", "lastUpdatedAt": "2025-11-20T10:05:00Z"},
        {"taskId": "t2", "status": "completed", "createdAt": "2025-11-20T09:00:00Z", "lastUpdatedAt": "2025-11-20T11:00:00Z"},
        {"taskId": "t3", "status": "working", "createdAt": "2025-11-20T08:00:00Z", "lastUpdatedAt": "2025-11-20T08:00:00Z", "extra": 1}
    ]"#));
    let ids = |q: &str| -> Vec<String> {
        filter_tasks(tasks.clone(), js(q))
            .unwrap()
            .iter()
            .map(|t| get(&t, "taskId").as_string().unwrap())
            .collect()
    };
    assert_eq!(ids("{}"), ["t2", "t1", "t3"]);
    assert_eq!(
        ids(r#"{"status": ["working"], "orderBy": "createdAt", "order": "asc"}"#),
        ["t3", "t1"]
    );
    assert_eq!(ids(r#"{"createdAfter": "2025-11-20T08:30:00Z"}"#), ["t2", "t1"]);
    assert_eq!(ids(r#"{"methods": ["tools/call"], "taskIds": ["t3"]}"#), ["t3"]);
    // The same objects come back, unknown fields included.
    assert_eq!(ids(r#"{"taskIds": ["t3"]}"#).len(), 1);
    let err = filter_tasks(tasks.clone(), js(r#"{"status": ["sleeping"]}"#)).unwrap_err();
    assert_eq!(get(&err, "code").as_f64(), Some(-32602.0));
    // Criteria it does not know are ignored, as SEP-1904 allows a receiver to.
    let all = filter_tasks(tasks.clone(), js("{}")).unwrap().length();
    assert_eq!(filter_tasks(tasks, js(r#"{"priority": 1}"#)).unwrap().length(), all);
}

#[wasm_bindgen_test]
fn concern_preferences_round_trip_through_local_storage() {
    let server = "https://example.test/mcp";
    mcp_sieve::wasm::clear_concern_preferences(server);
    assert!(load_concern_preferences(server).is_null());
    save_concern_preferences(server, js(r#"{"security": "high", "cost": "minimal"}"#)).unwrap();
    assert_eq!(
        json(&load_concern_preferences(server)),
        r#"{"security":"high","cost":"minimal"}"#
    );
    // Stored per server, under a readable key.
    assert!(load_concern_preferences("https://other.test/mcp").is_null());
    let storage = web_sys_local_storage();
    let raw = js_sys::Reflect::get(&storage, &"mcp-sieve/concerns/https://example.test/mcp".into()).unwrap();
    assert!(raw.as_string().unwrap().contains("minimal"));
    assert!(save_concern_preferences(server, js("[1]")).is_err());
    mcp_sieve::wasm::clear_concern_preferences(server);
    assert!(load_concern_preferences(server).is_null());
}

fn web_sys_local_storage() -> JsValue {
    js_sys::Reflect::get(&js_sys::global(), &"localStorage".into()).unwrap()
}

#[wasm_bindgen_test]
fn bad_input_throws_errors_with_code_and_data() {
    let sieve = Sieve::from_catalog(js(DEFAULT)).unwrap();
    let err = sieve.filter_tools(Some(js(r#"{"groups": "calendar"}"#))).unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(get(&err, "code").as_f64(), Some(-32602.0));
    let msg: String = js_sys::Error::from(err).message().into();
    assert!(msg.contains("filter.groups must be an array of strings"), "{msg}");
    // An invalid concern value: data lists the valid values.
    let err = small()
        .filter(Some(js(r#"{"concerns": {"security": "ultra"}}"#)), None)
        .unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
    assert_eq!(json(&get(&get(&err, "data"), "validValues")), r#"["high","low"]"#);
    let err = Sieve::from_catalog(js(r#"{"tools": "nope"}"#)).err().unwrap();
    assert!(js_sys::Error::from(err)
        .message()
        .as_string()
        .unwrap()
        .contains("tools must be an array"));
    let err = Sieve::from_lists(js(r#"{"tools": [{"name": 1}]}"#), None, None, None)
        .err()
        .unwrap();
    assert_eq!(get(&err, "code").as_f64(), Some(-32602.0));
}

#[wasm_bindgen_test]
fn from_lists_takes_concern_declarations() {
    let sieve = Sieve::from_lists(
        js(r#"{"tools": [{"name": "x", "inputSchema": {}, "_meta": {"concerns": {"cost": "high"}}}, {"name": "y", "inputSchema": {}}]}"#),
        Some(js(r#"{"groups": []}"#)),
        None,
        Some(js(r#"[{"name": "cost", "values": ["low", "high"]}]"#)),
    )
    .unwrap();
    assert_eq!(json(&sieve.concerns()), r#"[{"name":"cost","values":["low","high"]}]"#);
    assert_eq!(
        num(
            &sieve
                .filter(Some(js(r#"{"concerns": {"cost": "low"}}"#)), None)
                .unwrap(),
            "count"
        ),
        1.0
    );
    let only_tools = Sieve::from_tools_list(js(r#"{"tools": [{"name": "z", "inputSchema": {}}]}"#)).unwrap();
    assert_eq!(only_tools.tool_count(), 1);
}
