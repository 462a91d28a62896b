//! Task records and the SEP-1904 `tasks/list` query: lifecycle, wire shape, expiry, every filter
//! field at the top of `params` and under `params.filter`, ordering, unsupported criteria,
//! concerns and the capability. Runs natively and in Chromium.

use mcp_sieve::concern::ConcernConfig;
use mcp_sieve::task::{concerns_match, filter_capability, OrderBy, Status, Task, TaskQuery};
use mcp_sieve::time::{format_iso, parse_iso};
use serde_json::{json, Value};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// 2025-11-20T10:30:00Z
const T: i64 = 1_763_634_600_000;

fn config(pairs: &[(&str, &str)]) -> ConcernConfig {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn task(id: &str, method: &str, status: Status, created: i64, updated: i64) -> Task {
    let mut t = Task::new(id.into(), method, T + created, None, ConcernConfig::new());
    t.status = status;
    t.updated_ms = T + updated;
    t
}

/// Five tasks; `a` and `d` share their `lastUpdatedAt`.
fn tasks() -> Vec<Task> {
    vec![
        task("d", "tools/call", Status::Cancelled, 3000, 5000),
        task("b", "tools/call", Status::Completed, 1000, 2000),
        task("e", "elicitation/create", Status::InputRequired, 4000, 4000),
        task("a", "tools/call", Status::Working, 0, 5000),
        task("c", "sampling/createMessage", Status::Failed, 2000, 3000),
    ]
}

fn ids(q: &TaskQuery, ts: &[Task], concerns: &ConcernConfig) -> Vec<String> {
    q.apply(ts, concerns).into_iter().map(|t| t.id.clone()).collect()
}

fn run(params: Value) -> Vec<String> {
    let q = TaskQuery::parse(&params, false).unwrap();
    assert!(q.unsupported.is_empty(), "{:?}", q.unsupported);
    ids(&q, &tasks(), &ConcernConfig::new())
}

fn iso(offset_ms: i64) -> String {
    format_iso(T + offset_ms, 0)
}

#[test]
fn statuses_have_their_wire_names() {
    let names = ["working", "input_required", "completed", "failed", "cancelled"];
    for (s, n) in Status::ALL.into_iter().zip(names) {
        assert_eq!(s.as_str(), n);
        assert_eq!(Status::parse(n), Some(s));
    }
    assert_eq!(Status::parse("done"), None);
    assert_eq!(Status::parse("Working"), None);
    let terminal: Vec<Status> = Status::ALL.into_iter().filter(|s| s.is_terminal()).collect();
    assert_eq!(terminal, [Status::Completed, Status::Failed, Status::Cancelled]);
}

#[test]
fn only_lifecycle_transitions_are_allowed() {
    use Status::*;
    let allowed = [
        (Working, InputRequired),
        (Working, Completed),
        (Working, Failed),
        (Working, Cancelled),
        (InputRequired, Working),
        (InputRequired, Completed),
        (InputRequired, Failed),
        (InputRequired, Cancelled),
    ];
    for from in Status::ALL {
        for to in Status::ALL {
            let want = allowed.contains(&(from, to));
            assert_eq!(from.can_become(to), want, "{from:?} -> {to:?}");
            let mut t = task("t1", "tools/call", from, 0, 0);
            let res = t.transition(to, Some("why".into()), T + 500);
            if want {
                res.unwrap();
                assert_eq!(t.status, to);
                assert_eq!(t.status_message.as_deref(), Some("why"));
                assert_eq!(t.updated_ms, T + 500);
            } else {
                let e = res.unwrap_err();
                assert_eq!(e.code(), -32602, "{from:?} -> {to:?}");
                let msg = e.to_string();
                assert!(
                    msg.contains("t1") && msg.contains(from.as_str()) && msg.contains(to.as_str()),
                    "{msg}"
                );
                assert_eq!(t.status, from, "a refused transition changes nothing");
                assert_eq!(t.updated_ms, T);
            }
        }
    }
}

#[test]
fn terminal_states_reject_every_further_transition() {
    let mut t = Task::new("t9".into(), "tools/call", T, None, ConcernConfig::new());
    t.transition(Status::InputRequired, None, T + 1).unwrap();
    t.transition(Status::Working, None, T + 2).unwrap();
    t.transition(Status::Completed, None, T + 3).unwrap();
    for to in Status::ALL {
        let e = t.transition(to, None, T + 4).unwrap_err();
        assert_eq!(e.code(), -32602);
        assert!(e.to_string().contains("completed"), "{e}");
    }
    assert_eq!(t.status, Status::Completed);
    assert_eq!(t.updated_ms, T + 3);
}

#[test]
fn to_json_has_the_task_shape() {
    let t = Task::new("t1".into(), "tools/call", T, Some(60_000), ConcernConfig::new());
    assert_eq!(
        t.to_json(),
        json!({
            "taskId": "t1",
            "status": "working",
            "createdAt": "2025-11-20T10:30:00.000Z",
            "lastUpdatedAt": "2025-11-20T10:30:00.000Z",
            "ttl": 60000,
            "pollInterval": 1000
        })
    );
    let mut t = t;
    t.transition(Status::InputRequired, Some("need a file".into()), T + 1500)
        .unwrap();
    let v = t.to_json();
    assert_eq!(v["status"], "input_required");
    assert_eq!(v["statusMessage"], "need a file");
    assert_eq!(v["lastUpdatedAt"], "2025-11-20T10:30:01.500Z");
    for k in ["createdAt", "lastUpdatedAt"] {
        parse_iso(v[k].as_str().unwrap(), k).unwrap();
    }
    assert_eq!(parse_iso(v["lastUpdatedAt"].as_str().unwrap(), "t").unwrap(), T + 1500);

    // No TTL is an explicit null; no poll interval leaves the field out.
    let mut t = Task::new("t2".into(), "tools/call", T, None, ConcernConfig::new());
    t.poll_interval_ms = None;
    let v = t.to_json();
    assert_eq!(v["ttl"], Value::Null);
    assert!(v.as_object().unwrap().contains_key("ttl"));
    assert!(!v.as_object().unwrap().contains_key("pollInterval"));
    assert!(!v.as_object().unwrap().contains_key("statusMessage"));
}

#[test]
fn tasks_expire_when_their_ttl_has_passed() {
    let t = Task::new("t".into(), "tools/call", T, Some(60_000), ConcernConfig::new());
    assert!(!t.expired(T));
    assert!(!t.expired(T + 59_999));
    assert!(t.expired(T + 60_000));
    assert!(t.expired(T + 3_600_000));
    // TTL counts from creation, not from the last update.
    let mut t = t;
    t.transition(Status::Completed, None, T + 50_000).unwrap();
    assert!(t.expired(T + 60_000));
    let forever = Task::new("f".into(), "tools/call", T, None, ConcernConfig::new());
    assert!(!forever.expired(i64::MAX));
    let huge = Task::new("h".into(), "tools/call", T, Some(i64::MAX), ConcernConfig::new());
    assert!(!huge.expired(T + 1_000_000));
}

#[test]
fn work_with_a_due_time_completes_when_it_comes() {
    let mut t = Task::new("t".into(), "tools/call", T, None, ConcernConfig::new());
    t.due_ms = Some(T + 2000);
    assert!(!t.advance(T + 1999));
    assert_eq!(t.status, Status::Working);
    assert!(t.advance(T + 5000));
    assert_eq!(t.status, Status::Completed);
    assert_eq!(t.updated_ms, T + 2000, "it finished when it was due");
    assert!(!t.advance(T + 6000));
}

#[test]
fn every_field_works_at_the_top_of_params_and_under_filter() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"methods": ["tools/call"]}), vec!["a", "d", "b"]),
        (
            json!({"methods": ["sampling/createMessage", "elicitation/create"]}),
            vec!["e", "c"],
        ),
        (json!({"taskIds": ["b", "e", "zzz"]}), vec!["e", "b"]),
        (json!({"status": ["working", "input_required"]}), vec!["a", "e"]),
        (json!({"status": ["completed"]}), vec!["b"]),
        (json!({"createdAfter": iso(1000)}), vec!["d", "e", "c"]),
        (json!({"createdBefore": iso(2000)}), vec!["a", "b"]),
        (json!({"lastUpdatedAfter": iso(3000)}), vec!["a", "d", "e"]),
        (json!({"lastUpdatedBefore": iso(4000)}), vec!["c", "b"]),
        // Any offset names the same instant: 12:30:01+02:00 is T + 1000.
        (
            json!({"createdAfter": "2025-11-20T12:30:01+02:00"}),
            vec!["d", "e", "c"],
        ),
        (json!({"orderBy": "createdAt"}), vec!["e", "d", "c", "b", "a"]),
        (
            json!({"orderBy": "createdAt", "order": "asc"}),
            vec!["a", "b", "c", "d", "e"],
        ),
        (json!({"order": "asc"}), vec!["b", "c", "e", "a", "d"]),
        (
            json!({"orderBy": "lastUpdatedAt", "order": "desc"}),
            vec!["a", "d", "e", "c", "b"],
        ),
        (
            json!({"methods": ["tools/call"], "status": ["working", "cancelled", "completed"],
                   "createdAfter": iso(-1), "lastUpdatedBefore": iso(5001), "order": "asc"}),
            vec!["b", "a", "d"],
        ),
        (json!({"taskIds": []}), vec!["a", "d", "e", "c", "b"]),
    ];
    for (fields, want) in cases {
        assert_eq!(run(fields.clone()), want, "top: {fields}");
        assert_eq!(run(json!({ "filter": fields })), want, "filter: {fields}");
    }
}

#[test]
fn filter_wins_over_the_top_of_params() {
    assert_eq!(
        run(json!({"status": ["completed"], "filter": {"status": ["failed"]}})),
        ["c"]
    );
    assert_eq!(
        run(json!({"order": "asc", "orderBy": "createdAt", "filter": {"order": "desc"}})),
        ["e", "d", "c", "b", "a"]
    );
    // Fields the filter leaves out still apply from the top.
    assert_eq!(
        run(json!({"methods": ["tools/call"], "filter": {"status": ["working", "completed"]}})),
        ["a", "b"]
    );
    let q = TaskQuery::parse(
        &json!({"createdAfter": iso(0), "filter": {"createdAfter": iso(2000)}}),
        false,
    )
    .unwrap();
    assert_eq!(q.created_after, Some(T + 2000));
}

#[test]
fn no_filter_lists_every_task_newest_update_first() {
    for params in [Value::Null, json!({}), json!({"filter": {}}), json!({"filter": null})] {
        let q = TaskQuery::parse(&params, true).unwrap();
        assert_eq!(q, TaskQuery::default(), "{params}");
        assert_eq!(q.order_by, OrderBy::LastUpdatedAt);
        assert!(!q.ascending);
        assert_eq!(ids(&q, &tasks(), &ConcernConfig::new()), ["a", "d", "e", "c", "b"]);
    }
}

#[test]
fn ties_are_broken_by_task_id_so_pages_are_stable() {
    let make = |order: &[usize]| -> Vec<Task> {
        order
            .iter()
            .map(|i| {
                task(
                    &format!("task-{i:02}"),
                    "tools/call",
                    Status::Working,
                    (*i as i64 % 3) * 10,
                    100,
                )
            })
            .collect()
    };
    let forward = make(&(0..20).collect::<Vec<_>>());
    let scrambled = make(&[13, 2, 19, 0, 7, 11, 5, 16, 1, 18, 9, 3, 14, 6, 12, 17, 4, 10, 8, 15]);
    for params in [
        json!({}),
        json!({"order": "asc"}),
        json!({"orderBy": "createdAt"}),
        json!({"orderBy": "createdAt", "order": "asc"}),
    ] {
        let q = TaskQuery::parse(&params, false).unwrap();
        let a = ids(&q, &forward, &ConcernConfig::new());
        let b = ids(&q, &scrambled, &ConcernConfig::new());
        assert_eq!(a, b, "{params}");
        assert_eq!(a.len(), 20);
        // Within one key, ids ascend whatever the direction.
        let key = |id: &str| -> i64 {
            let t = forward.iter().find(|t| t.id == id).unwrap();
            if q.order_by == OrderBy::CreatedAt {
                t.created_ms
            } else {
                t.updated_ms
            }
        };
        for w in a.windows(2) {
            let (k0, k1) = (key(&w[0]), key(&w[1]));
            if k0 == k1 {
                assert!(w[0] < w[1], "{params}: {} before {}", w[0], w[1]);
            } else {
                assert_eq!(k0 < k1, q.ascending, "{params}: {} before {}", w[0], w[1]);
            }
        }
    }
    // With every key equal the order is the id order, in both directions.
    let same: Vec<Task> = [7, 3, 9, 1]
        .iter()
        .map(|i| task(&format!("t{i}"), "tools/call", Status::Working, 0, 0))
        .collect();
    for params in [json!({}), json!({"order": "asc"})] {
        let q = TaskQuery::parse(&params, false).unwrap();
        assert_eq!(
            ids(&q, &same, &ConcernConfig::new()),
            ["t1", "t3", "t7", "t9"],
            "{params}"
        );
    }
}

#[test]
fn bad_timestamps_are_invalid_params_naming_the_field() {
    let cases = [
        (json!({"createdAfter": "yesterday"}), "params.createdAfter"),
        (json!({"createdBefore": "2025-11-2"}), "params.createdBefore"),
        (
            json!({"lastUpdatedAfter": "2025-11-20T10:30:00+2"}),
            "params.lastUpdatedAfter",
        ),
        (json!({"lastUpdatedBefore": 1_763_634_600}), "params.lastUpdatedBefore"),
        (
            json!({"filter": {"createdAfter": "2025-02-30T00:00:00Z"}}),
            "params.filter.createdAfter",
        ),
        (
            json!({"filter": {"lastUpdatedBefore": "soon"}}),
            "params.filter.lastUpdatedBefore",
        ),
    ];
    for (params, field) in cases {
        let e = TaskQuery::parse(&params, false).unwrap_err();
        assert_eq!(e.code(), -32602, "{params}");
        let msg = e.to_string();
        assert!(msg.contains(field), "{msg} should name {field}");
        assert!(msg.contains("ISO 8601"), "{msg}");
    }
}

#[test]
fn unknown_statuses_and_bad_orders_are_invalid_params() {
    let cases = [
        (json!({"status": ["done"]}), "params.status"),
        (json!({"status": ["working", "paused"]}), "params.status"),
        (json!({"filter": {"status": ["Completed"]}}), "params.filter.status"),
        (json!({"status": "working"}), "params.status"),
        (json!({"methods": [1]}), "params.methods"),
        (json!({"filter": {"taskIds": "a"}}), "params.filter.taskIds"),
        (json!({"orderBy": "name"}), "params.orderBy"),
        (json!({"filter": {"order": "up"}}), "params.filter.order"),
        (json!({"filter": []}), "params.filter must be an object"),
        (json!(["status"]), "params must be an object"),
    ];
    for (params, field) in cases {
        let e = TaskQuery::parse(&params, false).unwrap_err();
        assert_eq!(e.code(), -32602, "{params}");
        assert!(e.to_string().contains(field), "{e} should name {field}");
    }
    let e = TaskQuery::parse(&json!({"status": ["done"]}), false).unwrap_err();
    assert!(e.to_string().contains("\"done\""), "{e}");
    assert!(e.to_string().contains("input_required"), "{e}");
}

#[test]
fn unsupported_criteria_are_collected_or_rejected() {
    let params = json!({
        "priority": "high", "cursor": "abc", "_meta": {"progressToken": 1},
        "filter": {"owner": "me", "status": ["working"]}
    });
    let q = TaskQuery::parse(&params, false).unwrap();
    assert_eq!(q.unsupported, ["params.priority", "params.filter.owner"]);
    // The supported criteria still apply.
    assert_eq!(ids(&q, &tasks(), &ConcernConfig::new()), ["a"]);

    let e = TaskQuery::parse(&params, true).unwrap_err();
    assert_eq!(e.code(), -32602);
    let msg = e.to_string();
    assert!(
        msg.contains("params.priority") && msg.contains("params.filter.owner"),
        "{msg}"
    );
    assert!(msg.contains("createdAfter") && msg.contains("orderBy"), "{msg}");

    // Request fields that are not criteria are never unsupported.
    let q = TaskQuery::parse(&json!({"cursor": "abc", "_meta": {}}), true).unwrap();
    assert!(q.unsupported.is_empty());
}

#[test]
fn apply_also_filters_by_concerns() {
    let mut ts = tasks();
    ts[0].concerns = config(&[("security", "high")]); // d
    ts[1].concerns = config(&[("security", "low")]); // b
    ts[2].concerns = config(&[("security", "high"), ("cost", "minimal")]); // e
    let q = TaskQuery::parse(&json!({}), false).unwrap();
    assert_eq!(ids(&q, &ts, &ConcernConfig::new()), ["a", "d", "e", "c", "b"]);
    assert_eq!(ids(&q, &ts, &config(&[("security", "high")])), ["a", "d", "e", "c"]);
    assert_eq!(ids(&q, &ts, &config(&[("security", "low")])), ["a", "c", "b"]);
    assert_eq!(
        ids(&q, &ts, &config(&[("security", "high"), ("cost", "moderate")])),
        ["a", "d", "c"]
    );
    assert_eq!(ids(&q, &ts, &config(&[("security", "medium")])), ["a", "c"]);
    // Concerns AND with the query's criteria.
    let q = TaskQuery::parse(&json!({"filter": {"methods": ["tools/call"]}}), false).unwrap();
    assert_eq!(ids(&q, &ts, &config(&[("security", "high")])), ["a", "d"]);

    assert!(concerns_match(&ConcernConfig::new(), &config(&[("security", "high")])));
    assert!(concerns_match(&config(&[("security", "high")]), &ConcernConfig::new()));
    assert!(concerns_match(
        &config(&[("security", "high")]),
        &config(&[("security", "high"), ("cost", "minimal")])
    ));
    assert!(!concerns_match(
        &config(&[("security", "high"), ("cost", "high")]),
        &config(&[("security", "high"), ("cost", "minimal")])
    ));
}

#[test]
fn filter_capability_has_the_sep_1904_shape() {
    assert_eq!(
        filter_capability(&["tools/call"]),
        json!({
            "methods": ["tools/call"],
            "taskIds": true,
            "status": true,
            "createdAt": {"before": true, "after": true},
            "lastUpdatedAt": {"before": true, "after": true},
            "order": {"by": ["createdAt", "lastUpdatedAt"], "direction": ["asc", "desc"]}
        })
    );
    let client = filter_capability(&["sampling/createMessage", "elicitation/create"]);
    assert_eq!(
        client["methods"],
        json!(["sampling/createMessage", "elicitation/create"])
    );
}
