//! 2026-07-28 tasks over stdio (`stdio::Connection`, the core of `mcp-sieve stdio`) are kept as
//! over HTTP (`http::holder`, `http::admit`): a gateway's in the holder of the principal's tasks
//! (the process's one client: no principal), where its later `tasks/get` finds them in the
//! upstream session they were made in; the server's task budget (`options.maxTasks`) admits
//! a gateway's task before it leaves, and this server's own.

mod common;

use common::{declaring_tasks, T0};
use mcp_sieve::catalog::Upstream;
use mcp_sieve::http::{self, MemoryStore, SessionStore};
use mcp_sieve::model::Kind;
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::stdio::{Connection, Step};
use mcp_sieve::upstream::{build_many, Lists, Source};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

/// A gateway over one session-era upstream, `everything`, whose `research` runs as a task.
fn gateway(options: Value) -> Server {
    let doc = json!({"upstreams": {"everything": {"url": "http://127.0.0.1:9/mcp"}}, "options": options});
    let ups = Upstream::parse_all(doc.get("upstream"), doc.get("upstreams")).unwrap();
    let mut lists = Lists::new(json!({"capabilities": {"tools": {}}}));
    let tools =
        json!([{"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}]);
    lists.set(Kind::Tool, serde_json::from_value(tools).unwrap());
    let sources = [Source {
        index: 0,
        upstream: &ups[0],
        lists: &lists,
    }];
    Server::new(build_many(&doc, &sources).unwrap())
}

/// One stdio line: a stateless request of a client declaring the tasks extension.
fn line(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": declaring_tasks(params)}).to_string()
}

/// Runs one line, with an id of its own (as the shell draws one per line).
fn receive(c: &mut Connection, s: &Server, store: &mut MemoryStore, l: &str) -> Step {
    static FRESH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let env = Env {
        now_ms: T0,
        fresh_id: format!("fresh-{}", FRESH.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
        ..Env::default()
    };
    c.receive(s, l, store, &env)
}

/// The step's one line, parsed.
fn answer(step: &Step) -> Value {
    assert_eq!(step.lines.len(), 1, "{:?}", step.lines);
    serde_json::from_str(&step.lines[0]).unwrap()
}

/// Completes the step's forward with the upstream's `result` in upstream session `up`, as the
/// shell does; the client's answer.
fn complete(step: Step, store: &mut MemoryStore, result: Value) -> Value {
    let f = step.forward.expect("forwarded");
    let link = f.link.clone().unwrap_or_default();
    let conv = mcp_sieve::upstream::Conversation::resume(
        mcp_sieve::upstream::ClientConfig::default(),
        mcp_sieve::protocol::UpstreamLink {
            session: Some("up".into()),
            version: "2025-11-25".into(),
            next_id: link.next_id + 1,
        },
    );
    let reply = mcp_sieve::upstream::Reply {
        response: Some(json!({"jsonrpc": "2.0", "id": link.next_id, "result": result})),
        notifications: vec![],
    };
    let pending = http::Response {
        forward: Some(f),
        ..Default::default()
    };
    let done = mcp_sieve::upstream::forwarded(pending, &conv, Ok(reply), store, T0);
    serde_json::from_str(&done.body).unwrap()
}

fn made(id: &str) -> Value {
    json!({"task": {"taskId": id, "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                    "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": 60000, "pollInterval": 500}})
}

#[test]
fn a_gateways_tasks_over_stdio_are_held_for_the_one_client_and_found_again() {
    let (s, mut store, mut c) = (gateway(json!({})), MemoryStore::default(), Connection::default());
    let step = receive(
        &mut c,
        &s,
        &mut store,
        &line(1, "tools/call", json!({"name": "everything_research"})),
    );
    assert_eq!(
        step.forward.as_ref().and_then(|f| f.session.as_deref()),
        Some("tasks:#"),
        "the holder of the one client's tasks (no principal)"
    );
    let created = complete(step, &mut store, made("t-1"));
    assert_eq!(created["result"]["resultType"], json!("task"), "{created}");
    assert_eq!(store.load("tasks:#").unwrap().upstream_tasks[0].id, "t-1");
    assert_eq!(c.session_id(), None, "a holder is not the client's 2025-11-25 session");
    // Its tasks/get reaches the task in the upstream session it was made in.
    let got = receive(&mut c, &s, &mut store, &line(2, "tasks/get", json!({"taskId": "t-1"})));
    let link = got.forward.expect("forwarded").link.unwrap();
    assert_eq!(link.session.as_deref(), Some("up"));
    // A task it never made is unknown, not forwarded.
    let unknown = receive(&mut c, &s, &mut store, &line(3, "tasks/get", json!({"taskId": "t-2"})));
    assert!(unknown.forward.is_none());
    assert!(answer(&unknown)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unknown task"));
}

#[test]
fn the_servers_task_budget_admits_a_gateways_task_over_stdio_before_it_leaves() {
    let (s, mut store, mut c) = (
        gateway(json!({"maxTasks": 1})),
        MemoryStore::default(),
        Connection::default(),
    );
    let call = |id| line(id, "tools/call", json!({"name": "everything_research"}));
    let first = receive(&mut c, &s, &mut store, &call(1));
    complete(first, &mut store, made("t-1"));
    let refused = receive(&mut c, &s, &mut store, &call(2));
    assert!(refused.forward.is_none(), "never sent");
    let e = answer(&refused);
    assert_eq!(e["id"], json!(2));
    assert_eq!(e["error"]["code"], json!(-32602), "{e}");
    assert_eq!(e["error"]["data"]["option"], json!("maxTasks"), "{e}");
}

#[test]
fn the_servers_own_tasks_over_stdio_count_in_its_task_budget() {
    let mut doc = common::catalog_json();
    doc["options"] = json!({"maxTasks": 1});
    let s = Server::new(Catalog::load(&doc).unwrap());
    let (mut store, mut c) = (MemoryStore::default(), Connection::default());
    let call = |id| {
        line(
            id,
            "tools/call",
            json!({"name": "long_report", "arguments": {"seconds": 30}}),
        )
    };
    let first = answer(&receive(&mut c, &s, &mut store, &call(1)));
    assert_eq!(first["result"]["resultType"], json!("task"), "{first}");
    let refused = answer(&receive(&mut c, &s, &mut store, &call(2)));
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    assert_eq!(refused["error"]["data"]["option"], json!("maxTasks"), "{refused}");
}
