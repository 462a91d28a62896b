//! Sessions and tasks survive serialization: what a Durable Object stores (JSON text) is enough
//! to carry on a conversation — concerns, the initialize request, tasks and their lifecycle.

mod common;

use std::collections::HashMap;

use common::{Harness, LEGACY};
use mcp_sieve::http::SessionStore;
use mcp_sieve::protocol::Session;
use mcp_sieve::task::{Status, Task};
use serde_json::json;

/// Keeps only JSON text, as a persistent store does.
#[derive(Default)]
struct JsonStore(HashMap<String, String>);

impl SessionStore for JsonStore {
    fn load(&mut self, id: &str) -> Option<Session> {
        serde_json::from_str(self.0.get(id)?).ok()
    }
    fn save(&mut self, session: &Session) {
        self.0
            .insert(session.id.clone(), serde_json::to_string(session).unwrap());
    }
    fn remove(&mut self, id: &str) {
        self.0.remove(id);
    }
}

#[test]
fn status_serializes_as_its_wire_name() {
    for s in Status::ALL {
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
        assert_eq!(serde_json::from_value::<Status>(json!(s.as_str())).unwrap(), s);
    }
}

#[test]
fn session_with_concerns_and_tasks_round_trips() {
    let mut h = Harness::new();
    h.initialize(Harness::init_params(LEGACY, json!({"concerns": {"security": "high"}})));
    let created = h.rpc_ok(
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 2}, "task": {"ttl": 60000}}),
    );
    assert!(created["task"]["taskId"].is_string(), "{created}");
    let id = h.session.clone().unwrap();
    let session = h.store.load(&id).unwrap();
    assert_eq!(session.tasks.len(), 1);
    let text = serde_json::to_string(&session).unwrap();
    let back: Session = serde_json::from_str(&text).unwrap();
    assert_eq!(back, session);
    let task: Task = serde_json::from_str(&serde_json::to_string(&session.tasks[0]).unwrap()).unwrap();
    assert_eq!(task, session.tasks[0]);
}

#[test]
fn a_conversation_carries_on_through_a_json_only_store() {
    let mut h = Harness::new();
    h.initialize(Harness::init_params(LEGACY, json!({"concerns": {"security": "high"}})));
    // Move the session into a store that keeps only JSON text, and continue there.
    let id = h.session.clone().unwrap();
    let mut store = JsonStore::default();
    store.save(&h.store.load(&id).unwrap());
    let mut json_store = store;
    let mut call = |h: &mut Harness, method: &str, params: serde_json::Value| {
        h.store = Default::default();
        let body = json!({"jsonrpc": "2.0", "id": h.n + 1, "method": method, "params": params});
        // Re-hydrate the memory store from JSON before each request and persist after it.
        let s = json_store.load(&id).unwrap();
        h.store.save(&s);
        let r = common::response_of(&h.post(&body, &[]));
        json_store.save(&h.store.load(&id).unwrap());
        r
    };
    let listed = call(&mut h, "concerns/list", json!({}));
    let security = listed["result"]["concerns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "security")
        .cloned()
        .unwrap();
    assert_eq!(security["configured"], "high", "{listed}");
    let created = call(
        &mut h,
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 2}, "task": {"ttl": 60000}}),
    );
    let task_id = created["result"]["task"]["taskId"].as_str().unwrap().to_string();
    h.advance(2_500);
    let got = call(&mut h, "tasks/get", json!({"taskId": task_id}));
    assert_eq!(got["result"]["status"], "completed", "{got}");
    h.advance(60_000);
    let gone = call(&mut h, "tasks/get", json!({"taskId": task_id}));
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
}
