//! Server-to-client requests mid-call (issue 14, item 9): a tool asks the client over its call's
//! SSE stream; the client's POSTed answer is handed to the waiting stream, which finishes the call.

mod common;

use common::{messages, Harness};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn conformance(capabilities: Value) -> Harness {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/catalog/conformance.json")).unwrap();
    let mut h = Harness::with_catalog(Catalog::from_json_str(&text).unwrap());
    h.initialize(Harness::init_params(
        "2025-11-25",
        json!({ "capabilities": capabilities }),
    ));
    h.initialized(Value::Null);
    h
}

#[test]
fn a_tool_asks_the_client_and_finishes_with_its_answer() {
    let mut h = conformance(json!({"sampling": {}, "elicitation": {}}));
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}});
    let r = h.post(&call, &[]);
    assert_eq!(r.status, 200);
    let asked = messages(&r);
    assert_eq!(asked.len(), 1, "only the question so far: {}", r.body);
    assert_eq!(asked[0]["method"], json!("sampling/createMessage"));
    assert_eq!(asked[0]["params"]["messages"][0]["content"]["text"], json!("Say hi"));
    let ask = r.ask.expect("the stream waits for the answer");
    // The client answers in the same session: 202, and the answer goes to the waiting stream.
    let answer = json!({"jsonrpc": "2.0", "id": asked[0]["id"],
                        "result": {"role": "assistant", "content": {"type": "text", "text": "hi!"}, "model": "m"}});
    let a = h.post(&answer, &[]);
    assert_eq!(a.status, 202);
    let (key, reply) = a.answered.expect("handed over");
    assert_eq!(key, ask.key());
    let done: Value = serde_json::from_str(&ask.finish(Some(&reply))).unwrap();
    assert_eq!(done["id"], json!(5));
    assert_eq!(done["result"]["content"][0]["text"], json!("LLM response: hi!"));
    // No answer in time: an error for the call, not a hang.
    let none: Value = serde_json::from_str(&ask.finish(None)).unwrap();
    assert_eq!(none["error"]["code"], json!(-32603));
}

#[test]
fn elicitation_schemas_and_refusals() {
    let mut h = conformance(json!({"elicitation": {}}));
    let call = |name: &str, args: Value| json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let r = h.post(&call("test_elicitation_sep1034_defaults", json!({})), &[]);
    let props = &messages(&r)[0]["params"]["requestedSchema"]["properties"];
    assert_eq!(props["age"], json!({"type": "integer", "default": 30}));
    assert_eq!(props["status"]["default"], json!("active"));
    let r = h.post(&call("test_elicitation_sep1330_enums", json!({})), &[]);
    let props = &messages(&r)[0]["params"]["requestedSchema"]["properties"];
    assert!(props["titledMulti"]["items"]["anyOf"].is_array() && props["legacyEnum"]["enumNames"].is_array());
    // A client without the sampling capability is refused, not asked.
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "x"}}),
    );
    assert!(e["message"].as_str().unwrap().contains("sampling capability"), "{e}");
    // Missing arguments name the field.
    let e = h.rpc_err("tools/call", json!({"name": "test_elicitation", "arguments": {}}));
    assert!(
        e["message"].as_str().unwrap().contains("params.arguments.message"),
        "{e}"
    );
    // An answer nobody waits for is accepted (202) and dropped by the shell's map.
    let a = h.post(&json!({"jsonrpc": "2.0", "id": "ask-nobody", "result": {}}), &[]);
    assert_eq!(a.status, 202);
}

#[test]
fn in_2026_07_28_the_question_is_input_required_and_the_retry_carries_the_answer() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/catalog/conformance.json")).unwrap();
    let mut h = Harness::with_catalog(Catalog::from_json_str(&text).unwrap());
    let caps = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}});
    let mut params = json!({"name": "test_sampling", "arguments": {"prompt": "p"}});
    params["_meta"] = caps["_meta"].clone();
    let first = common::response_of(&h.modern(json!(1), "tools/call", params.clone()))["result"].clone();
    assert_eq!(first["resultType"], json!("input_required"));
    assert_eq!(first["inputRequests"]["ask"]["method"], json!("sampling/createMessage"));
    params["inputResponses"] =
        json!({"ask": {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}});
    let done = common::response_of(&h.modern(json!(2), "tools/call", params))["result"].clone();
    assert_eq!(done["resultType"], json!("complete"));
    assert_eq!(done["content"][0]["text"], json!("LLM response: yes"));
    // Without the capability: refused with the 2026-07-28 schema's -32021 (Missing Required
    // Client Capability), HTTP 400, `data.requiredCapabilities` naming it.
    let r = h.modern(
        json!(3),
        "tools/call",
        json!({"name": "test_sampling", "arguments": {"prompt": "p"}}),
    );
    let bare = common::response_of(&r);
    assert_eq!(r.status, 400, "{bare}");
    assert_eq!(bare["error"]["code"], json!(-32021), "{bare}");
    assert_eq!(
        bare["error"]["data"],
        json!({"requiredCapabilities": {"sampling": {}}}),
        "{bare}"
    );
    assert!(
        bare["error"]["message"]
            .as_str()
            .unwrap()
            .contains("sampling capability"),
        "{bare}"
    );
}
