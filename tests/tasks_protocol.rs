//! MCP 2025-11-25 tasks end to end through `http::handle`, with the harness's clock: a task-augmented
//! `tools/call` of `long_report`, `tasks/get` before and after it is due, `tasks/result` (and its
//! retry time while the task works), `tasks/cancel`, TTL expiry, and `tasks/list` with every
//! SEP-1904 field both at the top of `params` and under `params.filter`.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{messages, notifications_of, response_of, Harness, T0};
use mcp_sieve::time::format_iso;
use serde_json::{json, Value};

const RELATED: &str = "io.modelcontextprotocol/related-task";

fn iso(ms: i64) -> String {
    format_iso(ms, 0)
}

/// Starts `long_report` as a task; returns the `task` object of the `CreateTaskResult`.
fn start(h: &mut Harness, seconds: i64, ttl: i64) -> Value {
    let r = h.rpc_ok(
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": seconds}, "task": {"ttl": ttl}}),
    );
    assert!(
        r.get("content").is_none(),
        "a CreateTaskResult holds no tool result: {r}"
    );
    r["task"].clone()
}

fn task_id(t: &Value) -> String {
    t["taskId"].as_str().expect("taskId is a string").to_string()
}

fn session() -> Harness {
    let mut h = Harness::new();
    h.init();
    h
}

#[test]
fn a_task_runs_completes_and_yields_its_result() {
    let mut h = session();
    // The CreateTaskResult, streamed after the first status notification.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "long_report", "arguments": {"seconds": 2}, "task": {"ttl": 60000}}});
    let r = h.post(&body, &[]);
    assert_eq!(r.status, 200);
    let task = response_of(&r)["result"]["task"].clone();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60000);
    assert_eq!(task["createdAt"], iso(T0));
    assert_eq!(task["lastUpdatedAt"], iso(T0));
    assert!(task["pollInterval"].as_i64().unwrap() > 0);
    let id = task_id(&task);
    let notes = notifications_of(&r);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["method"], "notifications/tasks/status");
    assert_eq!(notes[0]["params"]["taskId"], id.as_str());
    assert_eq!(notes[0]["params"]["status"], "working");

    let got = h.rpc_ok("tasks/get", json!({"taskId": id}));
    assert_eq!(got["status"], "working");
    assert_eq!(got["taskId"], id.as_str());
    assert_eq!(got["ttl"], 60000);
    assert!(
        got["_meta"].get(RELATED).is_none(),
        "tasks/get carries no related-task meta"
    );

    h.advance(1999);
    assert_eq!(h.rpc_ok("tasks/get", json!({"taskId": id}))["status"], "working");
    h.advance(1001);
    let got = h.rpc_ok("tasks/get", json!({"taskId": id}));
    assert_eq!(got["status"], "completed");
    assert_eq!(got["createdAt"], iso(T0));
    assert_eq!(
        got["lastUpdatedAt"],
        iso(T0 + 2000),
        "completed when due, not when polled"
    );

    let result = h.rpc_ok("tasks/result", json!({"taskId": id}));
    assert_eq!(
        result["content"][0]["text"],
        format!("report ready: ran 2 s, finished at {}", iso(T0 + 2000))
    );
    assert_eq!(result["_meta"][RELATED]["taskId"], id.as_str());
    // The result can be fetched again while the task lives.
    let again = h.rpc_ok("tasks/result", json!({"taskId": id}));
    assert_eq!(again, result);
}

#[test]
fn tasks_result_of_a_working_task_retries_when_it_is_due() {
    let mut h = session();
    h.advance(500);
    let id = task_id(&start(&mut h, 5, 60000));
    h.advance(1000);
    let body = json!({"jsonrpc": "2.0", "id": "res", "method": "tasks/result", "params": {"taskId": id}});
    let r = h.post(&body, &[]);
    assert_eq!(r.retry_at, Some(T0 + 500 + 5000), "blocks until the task's due time");
    assert!(r.body.is_empty(), "no answer yet: {}", r.body);
    // The shell handles the same request again at that time.
    h.now_ms = r.retry_at.unwrap();
    let r = h.post(&body, &[]);
    assert_eq!(r.retry_at, None);
    assert_eq!(r.status, 200);
    let res = response_of(&r);
    assert_eq!(res["id"], "res");
    assert!(res["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("report ready: ran 5 s"));
    assert_eq!(res["result"]["_meta"][RELATED]["taskId"], id.as_str());
}

#[test]
fn cancel_a_working_task_then_cancel_again() {
    let mut h = session();
    let id = task_id(&start(&mut h, 10, 60000));
    h.advance(1000);
    let c = h.rpc_ok("tasks/cancel", json!({"taskId": id}));
    assert_eq!(c["taskId"], id.as_str());
    assert_eq!(c["status"], "cancelled");
    assert_eq!(c["lastUpdatedAt"], iso(T0 + 1000));
    assert_eq!(h.rpc_ok("tasks/get", json!({"taskId": id}))["status"], "cancelled");
    // Terminal: a second cancel is -32602 (MCP 2025-11-25), and the work never completes it.
    let e = h.rpc_err("tasks/cancel", json!({"taskId": id}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("cancelled"), "{e}");
    h.advance(20_000);
    assert_eq!(h.rpc_ok("tasks/get", json!({"taskId": id}))["status"], "cancelled");
    // Cancelling a completed task is refused the same way.
    let done = task_id(&start(&mut h, 1, 60000));
    h.advance(1000);
    assert_eq!(h.rpc_ok("tasks/get", json!({"taskId": done}))["status"], "completed");
    let e = h.rpc_err("tasks/cancel", json!({"taskId": done}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("completed"), "{e}");
    // Unknown ids.
    let e = h.rpc_err("tasks/cancel", json!({"taskId": "nope"}));
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("Unknown task"), "{e}");
}

#[test]
fn ttl_expiry_removes_a_task() {
    let mut h = session();
    let id = task_id(&start(&mut h, 1, 5000));
    let keep = task_id(&start(&mut h, 1, 60000));
    h.advance(4999);
    assert_eq!(h.rpc_ok("tasks/get", json!({"taskId": id}))["status"], "completed");
    h.advance(1);
    let e = h.rpc_err("tasks/get", json!({"taskId": id}));
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("Unknown task: \"{id}\"")),
        "{e}"
    );
    assert_eq!(h.rpc_err("tasks/result", json!({"taskId": id}))["code"], -32602);
    let listed: Vec<String> = h.rpc_ok("tasks/list", json!({}))["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(task_id)
        .collect();
    assert_eq!(listed, [keep]);
}

#[test]
fn task_requests_need_a_tool_with_task_support() {
    let mut h = session();
    // echo has no execution.taskSupport ("forbidden" by default).
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "x"}, "task": {"ttl": 60000}}),
    );
    // The brief asks for -32602; MCP 2025-11-25 (tasks, tool-level negotiation) says servers SHOULD
    // answer -32601 here. Either is a refusal naming the cause; which one is a decision to make.
    assert!(e["code"] == -32602 || e["code"] == -32601, "{e}");
    assert!(e["message"].as_str().unwrap().contains("taskSupport"), "{e}");
    assert!(h.rpc_ok("tasks/list", json!({}))["tasks"]
        .as_array()
        .unwrap()
        .is_empty());
    // Bad task parameters name the field.
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 1}, "task": {"ttl": -1}}),
    );
    assert_eq!(e["code"], -32602);
    assert!(e["message"].as_str().unwrap().contains("params.task.ttl"), "{e}");
    let e = h.rpc_err(
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 1}, "task": "soon"}),
    );
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"].as_str().unwrap().contains("params.task must be an object"),
        "{e}"
    );
}

/// Three tasks, listed at T0 + 22 s:
/// - `a`: created T0, 1 s → completed, last updated T0 + 1 s;
/// - `b`: created T0 + 10 s, 30 s → working, last updated T0 + 10 s;
/// - `c`: created T0 + 20 s, cancelled at T0 + 21 s.
fn three_tasks() -> (Harness, [String; 3]) {
    let mut h = session();
    let a = task_id(&start(&mut h, 1, 3_600_000));
    h.advance(10_000);
    let b = task_id(&start(&mut h, 30, 3_600_000));
    h.advance(10_000);
    let c = task_id(&start(&mut h, 5, 3_600_000));
    h.advance(1000);
    h.rpc_ok("tasks/cancel", json!({"taskId": c}));
    h.advance(1000);
    (h, [a, b, c])
}

/// `tasks/list` with `criteria` at the top of `params` and again under `params.filter`; both must
/// give the same ids; returns them.
fn listed(h: &mut Harness, criteria: Value) -> Vec<String> {
    let ids = |r: Value| -> Vec<String> { r["tasks"].as_array().unwrap().iter().map(task_id).collect() };
    let top = h.rpc_ok("tasks/list", criteria.clone());
    let nested = h.rpc_ok("tasks/list", json!({ "filter": criteria }));
    assert!(top.get("_meta").is_none(), "no warnings: {top}");
    assert!(nested.get("_meta").is_none(), "no warnings: {nested}");
    assert!(top.get("nextCursor").is_none());
    let (top, nested) = (ids(top), ids(nested));
    assert_eq!(top, nested, "params vs params.filter for {criteria}");
    top
}

#[test]
fn tasks_list_with_each_sep_1904_field() {
    let (mut h, [a, b, c]) = three_tasks();
    let ids = |v: &[&String]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    // Statuses as set up.
    let all = h.rpc_ok("tasks/list", json!({}));
    let status = |id: &str| {
        all["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["taskId"] == id)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(
        [status(&a), status(&b), status(&c)],
        [json!("completed"), json!("working"), json!("cancelled")]
    );

    // No criteria: every task, lastUpdatedAt descending (the SEP-1904 default).
    assert_eq!(listed(&mut h, json!({})), ids(&[&c, &b, &a]));
    // status
    assert_eq!(listed(&mut h, json!({"status": ["working"]})), ids(&[&b]));
    assert_eq!(
        listed(&mut h, json!({"status": ["completed", "cancelled"]})),
        ids(&[&c, &a])
    );
    assert_eq!(listed(&mut h, json!({"status": ["failed"]})), ids(&[]));
    // taskIds
    assert_eq!(listed(&mut h, json!({"taskIds": [a, c]})), ids(&[&c, &a]));
    assert_eq!(listed(&mut h, json!({"taskIds": ["nope"]})), ids(&[]));
    // methods
    assert_eq!(listed(&mut h, json!({"methods": ["tools/call"]})), ids(&[&c, &b, &a]));
    assert_eq!(listed(&mut h, json!({"methods": ["sampling/createMessage"]})), ids(&[]));
    // createdAfter / createdBefore (strict)
    assert_eq!(listed(&mut h, json!({"createdAfter": iso(T0 + 5000)})), ids(&[&c, &b]));
    assert_eq!(listed(&mut h, json!({"createdAfter": iso(T0 + 10_000)})), ids(&[&c]));
    assert_eq!(
        listed(&mut h, json!({"createdBefore": iso(T0 + 20_000)})),
        ids(&[&b, &a])
    );
    // The same instant with an offset.
    assert_eq!(
        listed(&mut h, json!({"createdAfter": "2025-11-20T12:30:05+02:00"})),
        ids(&[&c, &b])
    );
    // lastUpdatedAfter / lastUpdatedBefore
    assert_eq!(
        listed(&mut h, json!({"lastUpdatedAfter": iso(T0 + 5000)})),
        ids(&[&c, &b])
    );
    assert_eq!(
        listed(&mut h, json!({"lastUpdatedBefore": iso(T0 + 15_000)})),
        ids(&[&b, &a])
    );
    // orderBy / order
    assert_eq!(
        listed(&mut h, json!({"orderBy": "createdAt", "order": "asc"})),
        ids(&[&a, &b, &c])
    );
    assert_eq!(listed(&mut h, json!({"orderBy": "createdAt"})), ids(&[&c, &b, &a]));
    assert_eq!(listed(&mut h, json!({"order": "asc"})), ids(&[&a, &b, &c]));
    assert_eq!(
        listed(&mut h, json!({"orderBy": "lastUpdatedAt", "order": "desc"})),
        ids(&[&c, &b, &a])
    );
    // Criteria AND together.
    assert_eq!(
        listed(
            &mut h,
            json!({"status": ["working", "completed"], "createdBefore": iso(T0 + 15_000), "orderBy": "createdAt", "order": "asc"})
        ),
        ids(&[&a, &b])
    );
}

#[test]
fn tasks_list_rejects_bad_criteria_naming_the_field() {
    let (mut h, _) = three_tasks();
    for (params, field) in [
        (json!({"createdAfter": "yesterday"}), "params.createdAfter"),
        (
            json!({"filter": {"createdAfter": "2025-11-20T25:00:00Z"}}),
            "params.filter.createdAfter",
        ),
        (json!({"createdBefore": "2025-13-01T00:00:00Z"}), "params.createdBefore"),
        (
            json!({"lastUpdatedAfter": 1_763_634_600_000_i64}),
            "params.lastUpdatedAfter",
        ),
        (
            json!({"filter": {"lastUpdatedBefore": "2025-11-20T10:30:00+020"}}),
            "params.filter.lastUpdatedBefore",
        ),
        (json!({"status": ["running"]}), "params.status"),
        (json!({"filter": {"status": "working"}}), "params.filter.status"),
        (json!({"taskIds": "a"}), "params.taskIds"),
        (json!({"methods": [1]}), "params.methods"),
        (json!({"orderBy": "taskId"}), "params.orderBy"),
        (json!({"filter": {"order": "ascending"}}), "params.filter.order"),
        (json!({"filter": "working"}), "params.filter must be an object"),
    ] {
        let e = h.rpc_err("tasks/list", params.clone());
        assert_eq!(e["code"], -32602, "{params}: {e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains(field), "{params}: {m}");
    }
    // An ISO 8601 error says what a valid timestamp looks like.
    let e = h.rpc_err("tasks/list", json!({"createdAfter": "yesterday"}));
    assert!(e["message"].as_str().unwrap().contains("2025-11-20T10:30:00Z"), "{e}");
}

#[test]
fn task_status_notifications_follow_the_lifecycle() {
    let mut h = session();
    let id = task_id(&start(&mut h, 1, 60000));
    h.advance(1000);
    // The poll that observes completion also streams the status change before its response.
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/list", "params": {}}),
        &[],
    );
    let all = messages(&r);
    let last = all.last().unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["tasks"][0]["status"], "completed");
    let notes = notifications_of(&r);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["params"]["taskId"], id.as_str());
    assert_eq!(notes[0]["params"]["status"], "completed");
    // Nothing more to announce on the next poll.
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/list", "params": {}}),
        &[],
    );
    assert!(notifications_of(&r).is_empty());
}

#[test]
fn tasks_list_accepts_the_iso_8601_forms_sep_1904_allows() {
    let mut h = Harness::new();
    h.init();
    for t in [
        "2025-11-20",
        "2025-11-20T10:30:00",
        "2025-11-20T12:30:00+0200",
        "2025-11-20T12:30:00+02",
    ] {
        let r = h.rpc_ok("tasks/list", json!({"filter": {"createdAfter": t}}));
        assert!(r["tasks"].is_array(), "{t}: {r}");
    }
}

#[test]
fn tasks_in_2026_07_28_live_in_a_holder_named_by_the_task_id() {
    let mut h = Harness::new();
    // SEP-2663: the server decides (the tool supports tasks); `params.task` and its ttl are
    // ignored, so the task has the server's TTL (a day).
    let created = response_of(&h.modern_tasks(
        json!(1),
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 2}, "task": {"ttl": 60_000}}),
    ));
    let result = &created["result"];
    assert_eq!(result["resultType"], json!("task"), "{created}");
    // SEP-2663's CreateTaskResult: the task's fields inline, under the extension's names.
    let id = result["taskId"].as_str().unwrap().to_string();
    assert_eq!(result["status"], json!("working"));
    assert_eq!(
        (result["ttlMs"].clone(), result["pollIntervalMs"].clone()),
        (json!(86_400_000), json!(1000)),
        "{created}"
    );
    assert!(
        ["task", "ttl", "pollInterval"].iter().all(|k| result.get(*k).is_none()),
        "{created}"
    );
    // Any stateless request naming the id reaches the task (no session).
    let got = response_of(&h.modern_tasks(json!(2), "tasks/get", json!({"taskId": id})));
    assert_eq!(got["result"]["status"], json!("working"), "{got}");
    assert_eq!(got["result"]["resultType"], json!("complete"), "{got}");
    assert_eq!(got["result"]["ttlMs"], json!(86_400_000), "{got}");
    assert!(got["result"].get("result").is_none(), "{got}");
    let update = response_of(&h.modern_tasks(json!(3), "tasks/update", json!({"taskId": id, "inputResponses": {}})));
    assert!(
        update["error"]["message"]
            .as_str()
            .unwrap()
            .contains("waits for no input"),
        "{update}"
    );
    h.advance(3_000);
    let done = response_of(&h.modern_tasks(json!(4), "tasks/get", json!({"taskId": id})));
    assert_eq!(done["result"]["status"], json!("completed"), "{done}");
    // A finished task's tasks/get carries its result (the extension has no tasks/result).
    assert!(
        done["result"]["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("report ready")),
        "{done}"
    );
    // SEP-2663 (2026-07-28): "tasks/result is removed; clients calling it MUST receive -32601".
    for r in [
        h.modern_tasks(json!(5), "tasks/result", json!({"taskId": id})),
        h.modern(json!(5), "tasks/result", json!({"taskId": id})),
    ] {
        assert_eq!(response_of(&r)["error"]["code"], json!(-32601), "{}", r.body);
    }
    let cancel = response_of(&h.modern_tasks(json!(6), "tasks/cancel", json!({"taskId": id})));
    assert!(
        cancel["error"].is_object(),
        "a completed task cannot be cancelled: {cancel}"
    );
    // A made-up id is unknown; tasks/list is not part of this era.
    let unknown = response_of(&h.modern_tasks(json!(7), "tasks/get", json!({"taskId": "nope"})));
    assert!(
        unknown["error"]["message"].as_str().unwrap().contains("Unknown task"),
        "{unknown}"
    );
    let list = h.modern_tasks(json!(8), "tasks/list", json!({}));
    assert_eq!(response_of(&list)["error"]["code"], json!(-32601));
    // server/discover advertises the extension (the catalog has task tools).
    let d = response_of(&h.modern_tasks(json!(9), "server/discover", json!({})));
    assert!(
        d["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object(),
        "{d}"
    );
}

#[test]
fn a_2026_07_28_task_belongs_to_the_principal_that_created_it() {
    let mut h = Harness::new();
    h.principal = Some("alice".into());
    let created = response_of(&h.modern_tasks(
        json!(1),
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 2}, "task": {"ttl": 60_000}}),
    ));
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    // Another principal, or none, cannot see, wait for or cancel it.
    for principal in [Some("bob"), None] {
        h.principal = principal.map(String::from);
        for method in ["tasks/get", "tasks/cancel"] {
            let r = response_of(&h.modern_tasks(json!(2), method, json!({"taskId": id})));
            assert!(
                r["error"]["message"].as_str().unwrap().contains("Unknown task"),
                "{principal:?} {method}: {r}"
            );
        }
    }
    // Its owner still can.
    h.principal = Some("alice".into());
    let got = response_of(&h.modern_tasks(json!(3), "tasks/get", json!({"taskId": id})));
    assert_eq!(got["result"]["status"], json!("working"), "{got}");
    let cancelled = response_of(&h.modern_tasks(json!(4), "tasks/cancel", json!({"taskId": id})));
    assert_eq!(cancelled["result"]["status"], json!("cancelled"), "{cancelled}");
}

/// Starts a 30-second 2026-07-28 task as `principal`; the JSON-RPC response.
fn start_stateless(h: &mut Harness, principal: Option<&str>) -> Value {
    h.principal = principal.map(String::from);
    response_of(&h.modern_tasks(
        json!(1),
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 30}, "task": {"ttl": 600_000}}),
    ))
}

#[test]
fn stateless_tasks_are_bounded_per_principal_and_in_total_and_only_finished_ones_are_evicted() {
    let mut doc = common::catalog_json();
    doc["options"] = json!({"maxTasksPerPrincipal": 2, "maxTasks": 3});
    let mut h = Harness::with_catalog(mcp_sieve::Catalog::load(&doc).unwrap());
    let refusal = |r: &Value, option: &str| {
        assert_eq!(r["error"]["code"], json!(-32602), "{r}");
        let m = r["error"]["message"].as_str().unwrap();
        assert!(m.contains(&format!("(options.{option})")), "{m}");
        assert_eq!(r["error"]["data"]["option"], json!(option), "{r}");
    };
    // Callers without a principal share one budget.
    let first = start_stateless(&mut h, None)["result"]["taskId"].clone();
    start_stateless(&mut h, None);
    refusal(&start_stateless(&mut h, None), "maxTasksPerPrincipal");
    // Alice has a budget of her own, but the server holds three at most.
    let a1 = start_stateless(&mut h, Some("alice"))["result"]["taskId"].clone();
    assert!(a1.is_string());
    refusal(&start_stateless(&mut h, Some("alice")), "maxTasks");
    // Alice cancels hers (bob's cancel of it changes nothing): her next task evicts it.
    h.principal = Some("bob".into());
    assert!(response_of(&h.modern_tasks(json!(2), "tasks/cancel", json!({"taskId": a1})))["error"].is_object());
    refusal(&start_stateless(&mut h, Some("alice")), "maxTasks");
    h.principal = Some("alice".into());
    let cancelled = response_of(&h.modern_tasks(json!(3), "tasks/cancel", json!({"taskId": a1})));
    assert_eq!(cancelled["result"]["status"], json!("cancelled"), "{cancelled}");
    let a2 = start_stateless(&mut h, Some("alice"));
    assert_eq!(a2["result"]["status"], json!("working"), "{a2}");
    let gone = response_of(&h.modern_tasks(json!(4), "tasks/get", json!({"taskId": a1})));
    assert!(
        gone["error"]["message"].as_str().unwrap().contains("Unknown task"),
        "{gone}"
    );
    // Once the anonymous tasks have run their 30 s, they are evicted for new ones.
    h.advance(31_000);
    assert_eq!(start_stateless(&mut h, None)["result"]["status"], json!("working"));
    h.principal = None;
    let evicted = response_of(&h.modern_tasks(json!(5), "tasks/get", json!({"taskId": first})));
    assert!(
        evicted["error"].is_object(),
        "the oldest finished task made room: {evicted}"
    );
}

/// SEP-2663's `-32021` for a request that needs the tasks extension it did not declare.
fn missing_tasks_capability(r: &mcp_sieve::http::Response, what: &str) {
    assert_eq!(
        r.status, 400,
        "{what}: HTTP 400, as the 2026-07-28 schema says: {}",
        r.body
    );
    let e = response_of(r);
    assert_eq!(e["error"]["code"], json!(-32021), "{what}: {e}");
    assert_eq!(
        e["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        "{what}: {e}"
    );
}

#[test]
fn sep_2663_a_client_that_does_not_declare_the_tasks_extension_never_gets_a_task() {
    let mut h = Harness::new();
    // Its `params.task` is ignored: the call runs as any other and answers the tool's result.
    let r = h.modern(
        json!(1),
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 1}, "task": {"ttl": 60_000}}),
    );
    let plain = response_of(&r);
    assert_eq!(r.status, 200, "{plain}");
    assert!(
        plain["result"].get("resultType") != Some(&json!("task")) && plain["result"].get("taskId").is_none(),
        "a CallToolResult, not a task: {plain}"
    );
    assert!(plain["result"]["content"].is_array(), "{plain}");
    // Its task requests are -32021, whatever the id.
    let id = response_of(&h.modern_tasks(
        json!(2),
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 30}, "task": {}}),
    ))["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        missing_tasks_capability(&h.modern(json!(3), method, json!({"taskId": id})), method);
    }
    // The same requests from a client that declares it reach the task.
    let got = response_of(&h.modern_tasks(json!(4), "tasks/get", json!({"taskId": id})));
    assert_eq!(got["result"]["status"], json!("working"), "{got}");
}

#[test]
fn sep_2663_a_tool_that_only_runs_as_a_task_is_32021_for_a_client_that_did_not_declare_the_extension() {
    let mut doc = common::catalog_json();
    let tools = doc["tools"].as_array_mut().unwrap();
    let report = tools.iter_mut().find(|t| t["name"] == "long_report").unwrap();
    report["execution"]["taskSupport"] = json!("required");
    let mut h = Harness::with_catalog(mcp_sieve::Catalog::load(&doc).unwrap());
    let call = json!({"name": "long_report", "arguments": {"seconds": 1}, "task": {"ttl": 60_000}});
    missing_tasks_capability(&h.modern(json!(1), "tools/call", call.clone()), "tools/call");
    let created = response_of(&h.modern_tasks(json!(2), "tools/call", call));
    assert_eq!(created["result"]["resultType"], json!("task"), "{created}");
}

#[test]
fn sep_2663_the_server_decides_which_calls_run_as_tasks_and_ignores_params_task() {
    let mut h = Harness::new();
    // A tool that supports tasks runs as one for a declaring client that sends no `params.task`.
    let created = response_of(&h.modern_tasks(
        json!(1),
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 1}}),
    ));
    assert_eq!(created["result"]["resultType"], json!("task"), "{created}");
    // `params.task` on a tool without task support is ignored: the call runs and answers its
    // result (it was -32601 while `params.task` was an opt-in).
    let tool = common::catalog_json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["execution"]["taskSupport"].is_null() && t["name"] != "long_report")
        .map(|t| t["name"].as_str().unwrap().to_string())
        .unwrap();
    let plain = response_of(&h.modern_tasks(
        json!(2),
        "tools/call",
        json!({"name": tool, "arguments": {}, "task": {"ttl": 1000}}),
    ));
    assert!(
        plain["error"].is_null() || plain["error"]["code"] != json!(-32601),
        "{plain}"
    );
    assert_ne!(plain["result"]["resultType"], json!("task"), "{plain}");
}

#[test]
fn a_sessions_own_tasks_count_in_the_servers_total_until_cancelled_or_the_session_ends() {
    let mut doc = common::catalog_json();
    doc["options"] = json!({"maxTasks": 2});
    let mut h = Harness::with_catalog(mcp_sieve::Catalog::load(&doc).unwrap());
    let over = |r: &Value| {
        assert_eq!(r["error"]["code"], json!(-32602), "{r}");
        assert_eq!(r["error"]["data"]["option"], json!("maxTasks"), "{r}");
    };
    let call = json!({"name": "long_report", "arguments": {"seconds": 30}, "task": {"ttl": 600_000}});
    // One session's two working tasks fill the server's budget: a stateless caller's task, and
    // another session's, are refused; a call without a task still runs.
    h.init();
    let first = h.session.take();
    h.session = first.clone();
    let t1 = task_id(&start(&mut h, 30, 600_000));
    start(&mut h, 30, 600_000);
    h.session = None;
    over(&start_stateless(&mut h, None));
    h.init();
    let other = h.session.clone();
    over(&h.rpc("tools/call", call.clone()));
    let plain = h.rpc(
        "tools/call",
        json!({"name": "long_report", "arguments": {"seconds": 1}}),
    );
    assert!(plain["result"].is_object(), "{plain}");
    // The first session cancels one: it makes room, and leaves that session when it is taken.
    h.session = first.clone();
    assert_eq!(
        h.rpc_ok("tasks/cancel", json!({"taskId": t1}))["status"],
        json!("cancelled")
    );
    h.session = other.clone();
    start(&mut h, 30, 600_000);
    over(&h.rpc("tools/call", call));
    h.session = first.clone();
    assert!(
        h.rpc("tasks/get", json!({"taskId": t1}))["error"].is_object(),
        "evicted to make room"
    );
    // The first session ends: its working task no longer counts.
    assert_eq!(h.delete().status, 204);
    h.session = other;
    start(&mut h, 30, 600_000);
}
