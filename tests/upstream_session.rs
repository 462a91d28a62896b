//! The upstream conversation (`mcp_sieve::upstream`) driven natively against a scripted server:
//! opening the session, the 404 re-open, list_changed, paging and its limit, single-flight
//! refresh, and errors. The scripted server is a closure over the POSTs the machine asks for.

mod common;

use common::run;
use mcp_sieve::catalog::Upstream;
use mcp_sieve::model::Kind;
use mcp_sieve::protocol::Forward;
use mcp_sieve::upstream::{
    ClientConfig, Conversation, Gateway, HttpAnswer, Job, Pages, Post, Refresh, Serving, MAX_PAGES, REFRESH_DEADLINE_MS,
};
use mcp_sieve::{Catalog, Error};
use serde_json::{json, Value};

fn json_answer(v: Value) -> HttpAnswer {
    HttpAnswer {
        status: 200,
        session: None,
        content_type: "application/json".into(),
        body: v.to_string(),
    }
}

fn accepted() -> HttpAnswer {
    HttpAnswer {
        status: 202,
        ..Default::default()
    }
}

fn header<'a>(post: &'a Post, name: &str) -> Option<&'a str> {
    post.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A small upstream: sessions "s1", "s2", … ; tools in pages of `page` items; answers 404 to a
/// session it was told to forget.
struct Upstream1 {
    sessions: u32,
    forgotten: Option<String>,
    tools: Vec<Value>,
    page: usize,
    inits: u32,
    /// Resources and templates, listed in one page each (none: no resources capability).
    resources: Vec<Value>,
    templates: Vec<Value>,
    /// Prompts, listed in one page (none: no prompts capability).
    prompts: Vec<Value>,
}

impl Upstream1 {
    fn new(tools: usize, page: usize) -> Self {
        Upstream1 {
            sessions: 0,
            forgotten: None,
            tools: (0..tools)
                .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
                .collect(),
            page,
            inits: 0,
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
        }
    }

    fn answer(&mut self, msg: &Value, post: &Post) -> HttpAnswer {
        let id = msg["id"].clone();
        match msg["method"].as_str().unwrap() {
            "initialize" => {
                self.inits += 1;
                self.sessions += 1;
                let mut capabilities = json!({"tools": {"listChanged": true}});
                if !self.resources.is_empty() || !self.templates.is_empty() {
                    capabilities["resources"] = json!({});
                }
                if !self.prompts.is_empty() {
                    capabilities["prompts"] = json!({});
                }
                HttpAnswer {
                    session: Some(format!("s{}", self.sessions)),
                    ..json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": capabilities,
                        "serverInfo": {"name": "up", "version": "1"}}}))
                }
            }
            _ if header(post, "mcp-session-id").is_some()
                && header(post, "mcp-session-id") == self.forgotten.as_deref() =>
            {
                HttpAnswer {
                    status: 404,
                    ..Default::default()
                }
            }
            "notifications/initialized" => accepted(),
            "tools/list" => {
                let start: usize = msg["params"]["cursor"].as_str().map_or(0, |c| c.parse().unwrap());
                let end = (start + self.page).min(self.tools.len());
                let mut result = json!({"tools": self.tools[start..end]});
                if end < self.tools.len() {
                    result["nextCursor"] = json!(end.to_string());
                }
                json_answer(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            }
            "resources/list" => {
                json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"resources": self.resources}}))
            }
            "prompts/list" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"prompts": self.prompts}})),
            "resources/templates/list" => {
                json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"resourceTemplates": self.templates}}))
            }
            "tools/call" => HttpAnswer {
                status: 200,
                session: None,
                content_type: "text/event-stream".into(),
                body: format!(
                    "event: message\ndata: {}\n\nevent: message\ndata: {}\n\n",
                    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}})
                ),
            },
            _ => {
                json_answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}))
            }
        }
    }
}

#[test]
fn a_request_opens_the_session_first_and_carries_its_headers() {
    let mut up = Upstream1::new(3, 10);
    let mut conv = Conversation::new(ClientConfig {
        initialized: Some(json!({"concerns": {"security": "high"}})),
        headers: vec![("Authorization".into(), "Bearer t".into())],
        ..ClientConfig::default()
    });
    let mut posts = Vec::new();
    let mut ex = conv.request("tools/list", json!({}));
    let (reply, sent) = run(&mut conv, &mut ex, |m, p| {
        posts.push(p.clone());
        up.answer(m, p)
    });
    let reply = reply.unwrap();
    assert_eq!(
        reply.result("tools/list").unwrap()["tools"].as_array().unwrap().len(),
        3
    );
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/list"]);
    assert_eq!(sent[1]["params"], json!({"concerns": {"security": "high"}}));
    assert!(sent[1].get("id").is_none(), "a notification has no id");
    assert_eq!(header(&posts[0], "mcp-session-id"), None);
    assert_eq!(header(&posts[2], "mcp-session-id"), Some("s1"));
    assert_eq!(header(&posts[2], "mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(header(&posts[2], "authorization"), Some("Bearer t"));
    assert_eq!(conv.session_id(), Some("s1"));
    // Open now: the next request is sent at once, with a new id.
    let mut ex = conv.request("tools/list", json!({}));
    let (_, sent2) = run(&mut conv, &mut ex, |m, p| up.answer(m, p));
    assert_eq!(sent2.len(), 1);
    assert_ne!(sent2[0]["id"], sent[2]["id"]);
}

#[test]
fn a_forgotten_session_is_reopened_once() {
    let mut up = Upstream1::new(1, 10);
    let mut conv = Conversation::new(ClientConfig::default());
    let mut open = conv.open();
    run(&mut conv, &mut open, |m, p| up.answer(m, p)).0.unwrap();
    up.forgotten = Some("s1".into());
    let mut ex = conv.request("tools/list", json!({}));
    let (reply, sent) = run(&mut conv, &mut ex, |m, p| up.answer(m, p));
    assert!(reply.is_ok(), "{reply:?}");
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["tools/list", "initialize", "notifications/initialized", "tools/list"]
    );
    assert_eq!(conv.session_id(), Some("s2"));
    // An upstream that forgets every session: one re-open, then an error.
    let mut conv = Conversation::new(ClientConfig::default());
    let mut ex = conv.request("tools/list", json!({}));
    let (reply, sent) = run(&mut conv, &mut ex, |m, p| {
        let mut a = up.answer(m, p);
        if m["method"] == "tools/list" {
            a.status = 404;
        }
        a
    });
    let e = reply.unwrap_err();
    assert_eq!(e.code(), -32603);
    assert!(e.to_string().contains("HTTP 404"), "{e}");
    assert_eq!(sent.iter().filter(|m| m["method"] == "initialize").count(), 2);
}

#[test]
fn pages_are_followed_to_the_end_and_limited() {
    let mut up = Upstream1::new(25, 10);
    let mut conv = Conversation::new(ClientConfig::default());
    let mut pages = Pages::of(Kind::Tool);
    let (items, sent) = run(&mut conv, &mut pages, |m, p| up.answer(m, p));
    assert_eq!(items.unwrap().len(), 25);
    let cursors: Vec<&Value> = sent
        .iter()
        .filter(|m| m["method"] == "tools/list")
        .map(|m| &m["params"]["cursor"])
        .collect();
    assert_eq!(cursors, [&Value::Null, &json!("10"), &json!("20")]);
    // A cursor that never ends stops at the page limit.
    let mut pages = Pages::of(Kind::Tool);
    let (items, sent) = run(&mut conv, &mut pages, |m, _| {
        json_answer(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [], "nextCursor": "again"}}))
    });
    let e = items.unwrap_err().to_string();
    assert!(e.contains(&format!("more than {MAX_PAGES} pages")), "{e}");
    assert_eq!(sent.len(), MAX_PAGES);
    // A server without the method has no items of that kind.
    let mut pages = Pages::of(Kind::ResourceTemplate);
    let (items, _) = run(&mut conv, &mut pages, |m, p| up.answer(m, p));
    assert_eq!(items.unwrap(), Vec::<Value>::new());
}

#[test]
fn errors_name_what_went_wrong() {
    for (answer, want) in [
        (
            HttpAnswer {
                status: 500,
                ..Default::default()
            },
            "initialize with HTTP 500",
        ),
        (
            HttpAnswer {
                status: 200,
                content_type: "application/json".into(),
                body: "<html>".into(),
                ..Default::default()
            },
            "not JSON",
        ),
        (
            json_answer(json!({"jsonrpc": "2.0", "id": 99, "result": {}})),
            "no response to initialize",
        ),
        (
            json_answer(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "go away"}})),
            "go away",
        ),
    ] {
        let mut conv = Conversation::new(ClientConfig::default());
        let mut ex = conv.request("ping", Value::Null);
        let (r, _) = run(&mut conv, &mut ex, |_, _| answer.clone());
        let e = r.unwrap_err();
        assert!(
            matches!(e, Error::Upstream(_) | Error::Rpc { code: -32600, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains(want), "{e} should contain {want}");
        assert!(conv.session_id().is_none());
    }
    // A JSON-RPC error to the request itself is the reply, passed through to the caller.
    let mut up = Upstream1::new(1, 10);
    let mut conv = Conversation::new(ClientConfig::default());
    let mut ex = conv.request("nope/nothing", Value::Null);
    let (r, _) = run(&mut conv, &mut ex, |m, p| up.answer(m, p));
    assert_eq!(r.unwrap().response.unwrap()["error"]["code"], json!(-32601));
}

fn gateway_doc() -> Value {
    json!({"upstream": {"url": "http://127.0.0.1:9/mcp", "refreshSeconds": 60},
           "groups": [{"name": "low"}], "overlay": {"t1": {"groups": ["low"]}}})
}

/// Runs each refresh job against `answer` (per upstream index), ready for `Gateway::refreshed`.
fn run_jobs(
    jobs: Vec<Job>,
    mut answer: impl FnMut(usize, &Value, &Post) -> HttpAnswer,
) -> Vec<(Job, Result<mcp_sieve::upstream::Lists, Error>)> {
    jobs.into_iter()
        .map(|mut job| {
            let member = job.member;
            let (lists, _) = run(&mut job.conv, &mut job.refresh, |m, p| answer(member, m, p));
            (job, lists)
        })
        .collect()
}

#[test]
fn refresh_is_single_flight_and_list_changed_starts_the_next() {
    let local = Catalog::load(&gateway_doc()).unwrap();
    let mut gw = Gateway::new(local.upstreams[0].clone());
    let mut up = Upstream1::new(3, 2);
    // `ready` (a shell's synchronous path) agrees with `serving` and changes nothing.
    assert!(gw.ready(1_000).is_none(), "nothing cached yet");
    let Serving::Refresh(jobs) = gw.serving(1_000) else {
        panic!("the first request refreshes")
    };
    // While it runs, nobody else starts one: with nothing cached they wait.
    assert!(gw.ready(1_001).is_none());
    assert!(matches!(gw.serving(1_001), Serving::Wait));
    let done = gw
        .refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 1_002)
        .unwrap();
    assert!(done.failure.is_none());
    let tools = done.server.catalog().section(Kind::Tool);
    assert_eq!(tools.items.len(), 3);
    assert_eq!(tools.items[1].groups, ["low"], "the overlay applies to upstream items");
    // Fresh: served from the cache, no refresh.
    assert_eq!(gw.ready(2_000).map(|s| s.version), Some(done.server.version));
    let Serving::Ready(s) = gw.serving(2_000) else {
        panic!("fresh lists are served")
    };
    assert_eq!(s.version, done.server.version);
    // A forwarded call whose reply announces list_changed makes the next request refresh once.
    let (member, mut conv, mut call) = gw
        .forward(&Forward {
            method: "tools/call".into(),
            params: json!({"name": "t0"}),
            ..Forward::default()
        })
        .unwrap();
    let (reply, _) = run(&mut conv, &mut call, |m, p| up.answer(m, p));
    assert!(reply.unwrap().list_changed());
    gw.note_changes(member, &mut conv);
    up.tools.push(json!({"name": "t9", "inputSchema": {}}));
    assert!(gw.ready(2_001).is_none(), "a refresh is due: the full path starts it");
    let Serving::Refresh(jobs) = gw.serving(2_001) else {
        panic!("list_changed refreshes")
    };
    assert!(gw.ready(2_002).is_some(), "the stale server serves while it runs");
    let Serving::Ready(stale) = gw.serving(2_002) else {
        panic!("the stale server serves meanwhile")
    };
    assert_eq!(stale.catalog().section(Kind::Tool).items.len(), 3);
    let done = gw
        .refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 2_003)
        .unwrap();
    assert_eq!(done.server.catalog().section(Kind::Tool).items.len(), 4);
    assert!(
        done.server.version > stale.version,
        "cursors of the old lists are refused"
    );
    assert!(done
        .notifications
        .iter()
        .any(|n| n.contains("notifications/tools/list_changed")));
    assert_eq!(
        up.inits, 2,
        "the lists' session, and one for the forward (it came with no downstream session)"
    );
    // After refreshSeconds, the lists are fetched again.
    assert!(gw.ready(2_003 + 60_000).is_none());
    assert!(matches!(gw.serving(2_003 + 60_000), Serving::Refresh(_)));
}

#[test]
fn a_failed_refresh_takes_the_upstream_out_until_a_retry_brings_it_back() {
    let local = Catalog::load(&gateway_doc()).unwrap();
    let mut gw = Gateway::new(Upstream::parse(Some(&gateway_doc()["upstream"])).unwrap().unwrap());
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!()
    };
    let failed = |_: usize, _: &Value, _: &Post| HttpAnswer {
        status: 503,
        ..Default::default()
    };
    // Nothing up at the start: the local document alone serves (initialize answers, empty
    // lists), saying why; the upstream joins when a retry brings it up.
    let empty = gw.refreshed(&local, run_jobs(jobs, failed), 1).unwrap();
    let e = empty.failure.unwrap();
    assert!(e.to_string().contains("HTTP 503"), "{e}");
    assert_eq!(empty.server.catalog().section(Kind::Tool).items.len(), 0);
    assert_eq!(gw.retries(1).len(), 0, "after the backoff");
    let mut up = Upstream1::new(2, 10);
    let jobs = gw.retries(1 + 1_000);
    assert_eq!(jobs.len(), 1, "retried off the request path once a server exists");
    let back = gw
        .refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 2)
        .unwrap();
    assert_eq!(back.server.catalog().section(Kind::Tool).items.len(), 2);
    assert!(back.notifications.iter().any(|n| n.contains("tools/list_changed")));
    let Serving::Refresh(jobs) = gw.serving(3 + 60_000) else {
        panic!()
    };
    let done = gw
        .refreshed(
            &local,
            run_jobs(jobs, |_, _, _| json_answer(json!("garbage"))),
            4 + 60_000,
        )
        .unwrap();
    assert!(done.failure.is_some());
    // Down: its tools leave the lists (list_changed), and a call is refused naming why.
    assert_eq!(done.server.catalog().section(Kind::Tool).items.len(), 0);
    assert!(done.notifications.iter().any(|n| n.contains("tools/list_changed")));
    let status = gw.status(5 + 60_000);
    assert_eq!(status["upstreams"][0]["state"], json!("down"));
    assert_eq!(status["upstreams"][0]["retryInMs"], json!(999));
    let e = gw.forward(&Forward::default()).unwrap_err().to_string();
    assert!(e.contains("the upstream is down"), "{e}");
    // Requests are not held by it: it is retried off the request path, after the backoff.
    assert!(matches!(gw.serving(5 + 60_000), Serving::Ready(_)));
    assert!(gw.retries(5 + 60_000).is_empty(), "not before the backoff");
    let jobs = gw.retries(4 + 61_000);
    assert_eq!(jobs.len(), 1);
    let done = gw
        .refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 4 + 61_000)
        .unwrap();
    assert_eq!(
        done.server.catalog().section(Kind::Tool).items.len(),
        2,
        "back by itself"
    );
    assert_eq!(gw.status(4 + 61_000)["upstreams"][0]["state"], json!("up"));
    let _ = Refresh::new(&Conversation::new(ClientConfig::default()));
}

#[test]
fn a_sign_in_makes_its_upstream_due_at_once() {
    let local = Catalog::load(&gateway_doc()).unwrap();
    let mut gw = Gateway::new(Upstream::parse(Some(&gateway_doc()["upstream"])).unwrap().unwrap());
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!()
    };
    let refused = |_: usize, _: &Value, _: &Post| HttpAnswer {
        status: 401,
        ..Default::default()
    };
    assert!(gw
        .refreshed(&local, run_jobs(jobs, refused), 1)
        .unwrap()
        .failure
        .is_some());
    assert!(gw.retries(2).is_empty(), "down: its backoff first");
    // A person signed in: retried now, not after the backoff.
    gw.due_now(0);
    let jobs = gw.retries(2);
    assert_eq!(jobs.len(), 1, "retried at once");
    let mut up = Upstream1::new(2, 10);
    let back = gw
        .refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 3)
        .unwrap();
    assert_eq!(back.server.catalog().section(Kind::Tool).items.len(), 2);
    assert!(back.notifications.iter().any(|n| n.contains("tools/list_changed")));
    // Up (a step-up sign-in): its lists are fetched again by the next request.
    assert!(matches!(gw.serving(4), Serving::Ready(_)));
    gw.due_now(0);
    assert!(matches!(gw.serving(5), Serving::Refresh(_)));
}

#[test]
fn an_abandoned_or_overdue_refresh_does_not_hold_the_gateway() {
    let local = Catalog::load(&gateway_doc()).unwrap();
    let mut gw = Gateway::new(local.upstreams[0].clone());
    let mut up = Upstream1::new(2, 10);
    // Nothing cached: the first refresh's request is dropped (its client left).
    let Serving::Refresh(dropped) = gw.serving(0) else {
        panic!("the first request refreshes")
    };
    assert!(matches!(gw.serving(1), Serving::Wait), "in flight: the others wait");
    gw.abandoned(&dropped.iter().map(|j| j.member).collect::<Vec<_>>());
    let Serving::Refresh(jobs) = gw.serving(2) else {
        panic!("after the refresh was abandoned, the next request refreshes")
    };
    gw.refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 3)
        .unwrap();
    // Cached and due: a refresh that is never ended (its request stopped without being dropped)
    // holds the single flight until its deadline only; the stale lists serve meanwhile.
    let due = 3 + 60_000;
    let Serving::Refresh(_lost) = gw.serving(due) else {
        panic!("due")
    };
    assert!(matches!(gw.serving(due + REFRESH_DEADLINE_MS - 1), Serving::Ready(_)));
    assert!(gw.ready(due + REFRESH_DEADLINE_MS - 1).is_some());
    assert!(
        gw.ready(due + REFRESH_DEADLINE_MS).is_none(),
        "past the deadline a refresh is due again"
    );
    let Serving::Refresh(jobs) = gw.serving(due + REFRESH_DEADLINE_MS) else {
        panic!("past the deadline, the next request refreshes")
    };
    up.tools.push(json!({"name": "t9", "inputSchema": {}}));
    let done = gw
        .refreshed(
            &local,
            run_jobs(jobs, |_, m, p| up.answer(m, p)),
            due + REFRESH_DEADLINE_MS + 1,
        )
        .unwrap();
    assert_eq!(done.server.catalog().section(Kind::Tool).items.len(), 3);
}

/// Runs each check against `answer` (per upstream index), ready for `Gateway::checked`.
fn run_checks(
    checks: Vec<mcp_sieve::upstream::Check>,
    mut answer: impl FnMut(usize, &Value, &Post) -> HttpAnswer,
) -> Vec<(mcp_sieve::upstream::Check, Result<mcp_sieve::upstream::Reply, Error>)> {
    checks
        .into_iter()
        .map(|mut check| {
            let member = check.member;
            let (reply, _) = run(&mut check.conv, &mut check.exchange, |m, p| answer(member, m, p));
            (check, reply)
        })
        .collect()
}

#[test]
fn an_upstream_nobody_calls_is_checked_and_leaves_the_lists_when_it_is_dead() {
    use mcp_sieve::upstream::{CHECK_AFTER_MS, CHECK_DEADLINE_MS};
    let doc = json!({"upstreams": {
        "a": {"url": "http://127.0.0.1:9/a", "refreshSeconds": 600},
        "b": {"url": "http://127.0.0.1:9/b", "refreshSeconds": 600}
    }});
    let local = Catalog::load(&doc).unwrap();
    let mut gw = Gateway::new_many(&local.upstreams);
    let (mut a, mut b) = (Upstream1::new(2, 10), Upstream1::new(1, 10));
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!("the first request refreshes")
    };
    gw.refreshed(
        &local,
        run_jobs(jobs, |i, m, p| if i == 0 { a.answer(m, p) } else { b.answer(m, p) }),
        1,
    )
    .unwrap();
    assert!(
        gw.checks(CHECK_AFTER_MS).is_empty(),
        "heard from within the bound: no check"
    );
    assert!(!gw.check_due(CHECK_AFTER_MS));
    // Nothing heard for CHECK_AFTER_MS: each upstream is pinged (no request needed).
    let now = 1 + CHECK_AFTER_MS;
    assert!(gw.check_due(now));
    let checks = gw.checks(now);
    assert_eq!(checks.iter().map(|c| c.member).collect::<Vec<_>>(), [0, 1]);
    assert!(gw.checks(now).is_empty(), "one check in flight per upstream");
    let mut pinged = Vec::new();
    let done = run_checks(checks, |i, m, p| {
        pinged.push((i, m["method"].clone()));
        match i {
            // a answers (an error is an answer too: it is there).
            0 => a.answer(m, p),
            // b's process died: nothing answers.
            _ => HttpAnswer {
                status: 502,
                ..Default::default()
            },
        }
    });
    assert_eq!(
        pinged,
        [(0, json!("ping")), (1, json!("ping"))],
        "a ping in the lists' session"
    );
    let changed = gw
        .checked(&local, done, now + CHECK_DEADLINE_MS)
        .unwrap()
        .expect("b is down: a new server");
    assert!(changed.failure.unwrap().to_string().contains("ping"));
    let tools: Vec<String> = changed
        .server
        .catalog()
        .section(Kind::Tool)
        .items
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(tools, ["a_t0", "a_t1"], "b's tools left the lists");
    assert!(changed.notifications.iter().any(|n| n.contains("tools/list_changed")));
    let status = gw.status(now + CHECK_DEADLINE_MS);
    assert_eq!(status["upstreams"][0]["state"], json!("up"));
    assert_eq!(status["upstreams"][1]["state"], json!("down"));
    assert!(
        status["upstreams"][1]["error"].as_str().unwrap().contains("ping"),
        "{status}"
    );
    // a answered: not checked again before another CHECK_AFTER_MS; b is retried, not checked.
    let later = now + CHECK_DEADLINE_MS + CHECK_AFTER_MS - 1;
    assert!(gw.checks(later).is_empty());
    assert_eq!(gw.checks(later + 1).iter().map(|c| c.member).collect::<Vec<_>>(), [0]);
    assert_eq!(gw.retries(later + 1).iter().map(|j| j.member).collect::<Vec<_>>(), [1]);
}

/// A client session on the gateway of `doc`'s upstreams `a` and `c` after both were listed and
/// then `c`'s health check failed with HTTP 503 (so `c` is down, its claims kept).
fn with_c_down(doc: &Value, mut a: Upstream1, mut c: Upstream1) -> common::Harness {
    use mcp_sieve::upstream::CHECK_AFTER_MS;
    let local = Catalog::load(doc).unwrap();
    let mut gw = Gateway::new_many(&local.upstreams);
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!("the first request refreshes")
    };
    gw.refreshed(
        &local,
        run_jobs(jobs, |i, m, p| if i == 0 { a.answer(m, p) } else { c.answer(m, p) }),
        1,
    )
    .unwrap();
    let now = 1 + CHECK_AFTER_MS;
    let done = run_checks(gw.checks(now), |i, m, p| match i {
        0 => a.answer(m, p),
        _ => HttpAnswer {
            status: 503,
            ..Default::default()
        },
    });
    let server = gw.checked(&local, done, now).unwrap().unwrap().server;
    let mut h = common::Harness::with_catalog(server.catalog().clone());
    h.init();
    h
}

#[test]
fn a_call_of_a_down_upstreams_tool_names_it_and_why_but_a_hidden_tool_stays_unknown() {
    let doc = json!({"upstreams": {
        "a": {"url": "http://127.0.0.1:9/a", "refreshSeconds": 600},
        "c": {"url": "http://127.0.0.1:9/c", "refreshSeconds": 600}
    }, "policy": {"rules": [{"hide": {"namePatterns": ["a_t1"]}}]}});
    let mut c = Upstream1::new(2, 10);
    c.prompts = vec![json!({"name": "greet"})];
    let mut h = with_c_down(&doc, Upstream1::new(2, 10), c);
    let e = h.rpc_err("tools/call", json!({"name": "c_t0", "arguments": {}}));
    assert_eq!(e["code"], json!(-32602));
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("upstream \"c\" is down ("), "{msg}");
    assert!(msg.contains("HTTP 503"), "the last error: {msg}");
    assert!(msg.contains("\"c_t0\" is unavailable until it is back"), "{msg}");
    assert!(!msg.contains("Unknown"), "{msg}");
    // A tool the policy hides (its upstream up) and a name no upstream serves stay "Unknown".
    let hidden = h.rpc_err("tools/call", json!({"name": "a_t1", "arguments": {}}));
    assert_eq!(hidden["message"], json!("Unknown tool: \"a_t1\""));
    let nobody = h.rpc_err("tools/call", json!({"name": "zz_t0", "arguments": {}}));
    assert_eq!(nobody["message"], json!("Unknown tool: \"zz_t0\""));
    // In c's prefix but not a name c listed when it was up: not c's to answer for.
    let never = h.rpc_err("tools/call", json!({"name": "c_t9", "arguments": {}}));
    assert_eq!(never["message"], json!("Unknown tool: \"c_t9\""));
    // Prompts too.
    let p = h.rpc_err("prompts/get", json!({"name": "c_greet"}));
    assert!(p["message"].as_str().unwrap().contains("upstream \"c\" is down"), "{p}");
    let p = h.rpc_err("prompts/get", json!({"name": "c_other"}));
    assert_eq!(p["message"], json!("Unknown prompt: \"c_other\""));
}

#[test]
fn an_unprefixed_upstream_down_after_listing_is_named_for_its_own_tools_only() {
    let doc = json!({"upstreams": {
        "a": {"url": "http://127.0.0.1:9/a", "refreshSeconds": 600},
        "c": {"url": "http://127.0.0.1:9/c", "refreshSeconds": 600, "prefix": ""}
    }});
    let mut h = with_c_down(&doc, Upstream1::new(1, 10), Upstream1::new(2, 10));
    let e = h.rpc_err("tools/call", json!({"name": "t1", "arguments": {}}));
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("upstream \"c\" is down (") && msg.contains("\"t1\" is unavailable"),
        "{msg}"
    );
    // Its empty prefix starts every name: before, any unknown tool was blamed on it.
    for name in ["t7", "a_t5", "nobody"] {
        let e = h.rpc_err("tools/call", json!({"name": name, "arguments": {}}));
        assert_eq!(e["message"], json!(format!("Unknown tool: \"{name}\"")));
    }
}

#[test]
fn a_read_of_a_uri_a_down_upstream_held_names_it_and_why_with_the_not_found_code() {
    let doc = json!({"upstreams": {
        "a": {"url": "http://127.0.0.1:9/a", "refreshSeconds": 600},
        "c": {"url": "http://127.0.0.1:9/c", "refreshSeconds": 600}
    }});
    let mut c = Upstream1::new(1, 10);
    c.resources = vec![json!({"uri": "notes://c/readme", "name": "readme"})];
    c.templates = vec![json!({"uriTemplate": "notes://c/items/{id}", "name": "item"})];
    let mut h = with_c_down(&doc, Upstream1::new(1, 10), c);
    for uri in ["notes://c/readme", "notes://c/items/7"] {
        let e = h.rpc_err("resources/read", json!({ "uri": uri }));
        assert_eq!(e["code"], json!(-32002), "{e}");
        assert_eq!(e["data"]["uri"], json!(uri));
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("upstream \"c\" is down ("), "{msg}");
        assert!(msg.contains("HTTP 503"), "the last error: {msg}");
        assert!(msg.contains(&format!("its resource \"{uri}\" is unavailable")), "{msg}");
    }
    // A URI no upstream held stays unknown.
    let e = h.rpc_err("resources/read", json!({"uri": "notes://a/other"}));
    assert_eq!(e["message"], json!("Unknown resource: \"notes://a/other\""));
}

#[test]
fn an_upstream_refusing_a_call_with_an_http_status_is_named_with_the_status_and_its_error() {
    let local = Catalog::load(&json!({"upstreams": {"gh": {"url": "http://127.0.0.1:9/gh"}}})).unwrap();
    let mut gw = Gateway::new_many(&local.upstreams);
    let mut up = Upstream1::new(1, 10);
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!("the first request refreshes")
    };
    gw.refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 1)
        .unwrap();
    let mut call = |status: u16, body: &str| {
        let forward = Forward {
            method: "tools/call".into(),
            params: json!({"name": "t0", "arguments": {}}),
            upstream_name: "gh".into(),
            ..Forward::default()
        };
        let (_, mut conv, mut exchange) = gw.forward(&forward).unwrap();
        let mut up = Upstream1::new(1, 10);
        let (reply, _) = run(&mut conv, &mut exchange, |m, p| match m["method"].as_str() {
            Some("tools/call") => HttpAnswer {
                status,
                content_type: "application/json".into(),
                body: body.into(),
                ..Default::default()
            },
            _ => up.answer(m, p),
        });
        mcp_sieve::upstream::named(&local.upstreams[0], reply.unwrap_err()).to_string()
    };
    // A token that expired: RFC 6750's body, no JSON-RPC error.
    let e = call(
        401,
        r#"{"error": "invalid_token", "error_description": "The access token expired"}"#,
    );
    assert!(
        e.contains("upstream \"gh\": it refused tools/call with HTTP 401 Unauthorized: invalid_token (The access token expired)"),
        "{e}"
    );
    assert!(!e.contains("without a message"), "{e}");
    // Another status with no body.
    let e = call(429, "");
    assert!(
        e.contains("upstream \"gh\": it refused tools/call with HTTP 429 Too Many Requests"),
        "{e}"
    );
    // A JSON-RPC error with its message stays the upstream's own words.
    let e = call(
        400,
        r#"{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad arguments"}}"#,
    );
    assert!(e.contains("bad arguments"), "{e}");
}

/// Two stateless calls (no downstream session, no roots) at a legacy-era upstream with
/// `"auth": "oauth"` (the `authorization_code` grant): the upstream session each began in and
/// the `Mcp-Session-Id` each `stateless_done` closes.
fn two_stateless_calls(mut gw: Gateway) -> Vec<(Option<String>, Option<String>)> {
    let doc = json!({"upstreams": {"gh": {"url": "http://127.0.0.1:9/gh", "auth": "oauth"}}});
    let local = Catalog::load(&doc).unwrap();
    let mut up = Upstream1::new(1, 10);
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!("the first request refreshes")
    };
    gw.refreshed(&local, run_jobs(jobs, |_, m, p| up.answer(m, p)), 1)
        .unwrap();
    let forward = Forward {
        method: "tools/call".into(),
        params: json!({"name": "t0", "arguments": {}}),
        upstream_name: "gh".into(),
        stateless: true,
        ..Forward::default()
    };
    (0..2)
        .map(|_| {
            let (member, mut conv, mut exchange) = gw.forward(&forward).unwrap();
            let began = conv.link().session;
            let (reply, _) = run(&mut conv, &mut exchange, |m, p| up.answer(m, p));
            assert!(reply.is_ok());
            let closed = gw
                .stateless_done(member, &forward, began.as_deref(), &conv.link())
                .and_then(|h| h.into_iter().find(|(k, _)| k == "Mcp-Session-Id"))
                .map(|(_, v)| v);
            (began, closed)
        })
        .collect()
}

#[test]
fn stateless_calls_share_an_upstream_session_unless_each_principal_signs_in() {
    let upstreams = Catalog::load(&json!({"upstreams": {"gh": {"url": "http://127.0.0.1:9/gh", "auth": "oauth"}}}))
        .unwrap()
        .upstreams;
    // One token for all (native): the first call opens the shared session (s2; s1 holds the
    // lists), the second runs in it, nothing is closed.
    let shared = two_stateless_calls(Gateway::new_many(&upstreams));
    assert_eq!(shared, [(None, None), (Some("s2".into()), None)]);
    // Each principal's own token (the Worker): each call opens its own session, closed after it.
    let own = two_stateless_calls(Gateway::new_many(&upstreams).tokens_per_principal());
    assert_eq!(own, [(None, Some("s2".into())), (None, Some("s3".into()))]);
}
