//! Request/expectation fixtures, one JSON file per method and protocol era, run through
//! `http::handle`.
//!
//! `tests/fixtures/legacy/*.json` (2025-11-25): every case runs in a new, initialized session
//! (`initialize` + `notifications/initialized`), except `initialize` cases, which run in a fresh
//! one. `tests/fixtures/modern/*.json` (2026-07-28): stateless; no session header, the version in
//! `params._meta["io.modelcontextprotocol/protocolVersion"]` and in the `MCP-Protocol-Version`
//! header.
//!
//! A file is an array of cases:
//!
//! ```json
//! {"name": "...", "request": {...}, "expect": {...},
//!  "setup": [{...request...}], "notifications": [{...}]}
//! ```
//!
//! `setup` (optional) are requests sent first in the same session; each must succeed.
//! `expect` is matched against the JSON-RPC response as a subset (see [`matches`]);
//! `notifications` (optional) against the notifications streamed before it (SSE).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{messages, modern_headers, Harness, LEGACY, MODERN};
use serde_json::{json, Value};

/// Matches `actual` against `expected`, returning the path and reason of the first mismatch.
///
/// - objects: every expected key must match recursively; other keys of `actual` are ignored;
/// - arrays: the same length, element-wise match;
/// - `"<any>"`: anything present and not null;
/// - `{"$contains": "text"}`: a string containing `text`;
/// - `null`: null or absent (so `"nextCursor": null` asserts the last page);
/// - numbers compare by value (`42` matches `42.0`); everything else by equality.
fn matches(expected: &Value, actual: Option<&Value>, path: &str) -> Result<(), String> {
    let actual_or_null = actual.unwrap_or(&Value::Null);
    match expected {
        Value::Null if actual_or_null.is_null() => Ok(()),
        Value::String(s) if s == "<any>" => {
            if actual_or_null.is_null() {
                Err(format!("{path}: expected a value, found none"))
            } else {
                Ok(())
            }
        }
        Value::Object(o) if o.len() == 1 && o.contains_key("$contains") => {
            let needle = o["$contains"].as_str().expect("$contains takes a string");
            match actual_or_null.as_str() {
                Some(s) if s.contains(needle) => Ok(()),
                _ => Err(format!(
                    "{path}: expected a string containing {needle:?}, found {actual_or_null}"
                )),
            }
        }
        Value::Object(o) => {
            let Some(a) = actual_or_null.as_object() else {
                return Err(format!("{path}: expected an object, found {actual_or_null}"));
            };
            for (k, v) in o {
                matches(v, a.get(k), &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        Value::Array(e) => {
            let Some(a) = actual_or_null.as_array() else {
                return Err(format!("{path}: expected an array, found {actual_or_null}"));
            };
            if e.len() != a.len() {
                let brief: Vec<&Value> = a.iter().map(|x| x.get("name").unwrap_or(x)).collect();
                return Err(format!(
                    "{path}: expected {} elements, found {}: {}",
                    e.len(),
                    a.len(),
                    json!(brief)
                ));
            }
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                matches(x, Some(y), &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        Value::Number(n) if actual_or_null.as_f64().is_some() && n.as_f64() == actual_or_null.as_f64() => Ok(()),
        other if Some(other) == actual => Ok(()),
        other => Err(format!("{path}: expected {other}, found {actual_or_null}")),
    }
}

/// Files of one era, sorted.
fn fixture_files(era: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(era);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn load(file: &Path) -> Vec<Value> {
    let text = fs::read_to_string(file).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let cases = v
        .as_array()
        .unwrap_or_else(|| panic!("{}: a fixture file is an array of cases", file.display()))
        .clone();
    assert!(!cases.is_empty(), "{}: no cases", file.display());
    for c in &cases {
        for key in c.as_object().expect("a case is an object").keys() {
            assert!(
                ["name", "request", "expect", "setup", "notifications"].contains(&key.as_str()),
                "{}: unknown case field {key}",
                file.display()
            );
        }
        assert!(c["name"].is_string() && c["request"].is_object() && c["expect"].is_object());
    }
    cases
}

/// Runs one case; `Err` describes the failure.
fn run(era: &str, case: &Value) -> Result<(), String> {
    let request = &case["request"];
    let method = request["method"].as_str().ok_or("request has no method")?;
    let mut h = Harness::new();
    let modern = era == "modern";
    if modern {
        let v = request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
        if v != Some(MODERN) {
            return Err(format!("a modern case must carry _meta protocolVersion {MODERN}"));
        }
    } else if method != "initialize" {
        h.init();
    }
    let post = |h: &mut Harness, msg: &Value| {
        if modern {
            let hs = modern_headers(msg);
            let hs: Vec<(&str, &str)> = hs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            h.post(msg, &hs)
        } else {
            h.post(msg, &[])
        }
    };
    for s in case["setup"].as_array().into_iter().flatten() {
        let r = post(&mut h, s);
        let m = messages(&r);
        let last = m.last();
        if r.status != 200 || last.is_none_or(|l| l.get("result").is_none()) {
            return Err(format!("setup {s} failed: {} {}", r.status, r.body));
        }
    }
    let r = post(&mut h, request);
    if r.status != 200 {
        return Err(format!("HTTP {} {}", r.status, r.body));
    }
    let mut all = messages(&r);
    let response = all.pop().ok_or("no response")?;
    if response.get("method").is_some() {
        return Err(format!("the last message is not a response: {response}"));
    }
    matches(&case["expect"], Some(&response), "response").map_err(|e| {
        let full = response.to_string();
        let cut = full.char_indices().nth(600).map_or(full.len(), |(i, _)| i);
        format!("{e}\n  response: {}", &full[..cut])
    })?;
    if let Some(n) = case.get("notifications") {
        matches(n, Some(&json!(all)), "notifications")?;
    }
    Ok(())
}

/// Runs every case of an era; returns the number of cases run.
fn run_era(era: &str) -> usize {
    let mut failures = Vec::new();
    let mut count = 0;
    for file in fixture_files(era) {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for case in load(&file) {
            count += 1;
            if let Err(e) = run(era, &case) {
                failures.push(format!("{era}/{name}: {}: {e}", case["name"].as_str().unwrap_or("?")));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} {era} fixture cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    count
}

fn file_stems(era: &str) -> Vec<String> {
    fixture_files(era)
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect()
}

#[test]
fn legacy_era_fixtures() {
    assert_eq!(LEGACY, "2025-11-25");
    let n = run_era("legacy");
    assert!(n >= 100, "only {n} legacy cases");
}

#[test]
fn modern_era_fixtures() {
    let n = run_era("modern");
    assert!(n >= 20, "only {n} modern cases");
}

#[test]
fn every_method_has_a_fixture_file() {
    let legacy = file_stems("legacy");
    for m in [
        "initialize",
        "ping",
        "tools_list",
        "resources_list",
        "resources_templates_list",
        "prompts_list",
        "groups_list",
        "tags_list",
        "concerns_list",
        "concerns_update",
        "tools_call",
        "prompts_get",
        "resources_read",
        "tasks_list",
        "tasks_get",
        "unknown_method",
    ] {
        assert!(legacy.contains(&m.to_string()), "no legacy fixture for {m}");
    }
    let modern = file_stems("modern");
    for m in ["server_discover", "tools_list", "tools_call"] {
        assert!(modern.contains(&m.to_string()), "no modern fixture for {m}");
    }
}

#[test]
fn error_cases_carry_codes_and_name_the_field() {
    // Every error expectation states its code; every -32602 says what was wrong.
    for era in ["legacy", "modern"] {
        for file in fixture_files(era) {
            for case in load(&file) {
                if let Some(e) = case["expect"].get("error") {
                    let code = e["code"].as_i64().unwrap_or_else(|| panic!("{case}: no code"));
                    assert!(
                        [-32700, -32600, -32601, -32602, -32603, -32002].contains(&code),
                        "{case}"
                    );
                    if code == -32602 || code == -32002 {
                        assert!(e["message"].get("$contains").is_some(), "{case}: say which field");
                    }
                }
            }
        }
    }
}

#[test]
fn the_matcher_is_strict_where_it_should_be() {
    let actual = json!({"a": 1, "b": [{"x": 1, "y": 2}, {"x": 3}], "s": "hello world", "n": null});
    let ok = |e: Value| matches(&e, Some(&actual), "r");
    assert!(ok(json!({})).is_ok());
    assert!(ok(json!({"a": 1.0})).is_ok());
    assert!(ok(json!({"b": [{"x": 1}, {}]})).is_ok());
    assert!(ok(json!({"b": [{"x": 1}]})).is_err(), "array length must match");
    assert!(ok(json!({"b": [{"x": 1}, {"x": 4}]})).is_err());
    assert!(ok(json!({"s": {"$contains": "lo wo"}})).is_ok());
    assert!(ok(json!({"s": {"$contains": "bye"}})).is_err());
    assert!(ok(json!({"a": "<any>", "s": "<any>"})).is_ok());
    assert!(ok(json!({"n": "<any>"})).is_err(), "<any> needs a non-null value");
    assert!(ok(json!({"missing": "<any>"})).is_err());
    assert!(ok(json!({"missing": null, "n": null})).is_ok());
    assert!(ok(json!({"a": null})).is_err());
    assert!(ok(json!({"a": "1"})).is_err());
    assert!(ok(json!({"b": {}})).is_err());
    let e = ok(json!({"b": [{"x": 1}, {"x": 5}]})).unwrap_err();
    assert!(e.starts_with("r.b[1].x:"), "{e}");
}
