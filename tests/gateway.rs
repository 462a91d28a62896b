//! Gateway mode in the core: a catalog built from an upstream's lists plus the local document
//! (overlay, groups, concerns, policy), the router turning uses into `Forward` effects after the
//! policy check, and the upstream's reply passed through to the client's request id.

mod common;

use common::Harness;
use mcp_sieve::http;
use mcp_sieve::model::Kind;
use mcp_sieve::upstream::{self, HttpAnswer, Lists, Machine, Step};
use serde_json::{json, Value};

fn upstream_lists() -> Lists {
    let mut l = Lists::new(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {"listChanged": true}, "resources": {}, "prompts": {}},
        "serverInfo": {"name": "upstream", "version": "9.9.9"},
    }));
    let tool = |name: &str| json!({"name": name, "description": format!("upstream {name}"), "inputSchema": {"type": "object"}, "x-vendor": {"keep": [1, 2]}});
    l.set(
        Kind::Tool,
        vec![
            tool("git_status"),
            tool("git_push"),
            tool("git_reset_hard"),
            tool("weather"),
            tool("echo"),
        ],
    );
    l.set(
        Kind::Resource,
        vec![
            json!({"name": "readme", "uri": "up://readme"}),
            json!({"name": "secret", "uri": "up://secret"}),
        ],
    );
    l.set(
        Kind::ResourceTemplate,
        vec![json!({"name": "numbered", "uriTemplate": "up://from-a-template/{n}"})],
    );
    l.set(Kind::Prompt, vec![json!({"name": "greet"})]);
    l
}

fn local_doc() -> Value {
    json!({
        "upstream": {"url": "http://127.0.0.1:9/mcp", "refreshSeconds": 60},
        "groups": [{"name": "code", "title": "Code"}, {"name": "git", "parent": "code"}],
        "overlay": {
            "git_*": {"groups": ["git"], "tags": ["vcs"]},
            "git_reset_hard": {"tags": ["destructive"]},
            "weather": {"groups": ["outside"]},
            "secret": {"tags": ["private"]}
        },
        "concerns": [{"name": "security", "values": ["high", "low"]}],
        "concernMapping": {"git_push": {"security": "low"}},
        "policy": {"rules": [{"hide": {"tags": ["destructive"]}}, {"hide": {"tags": ["private"]}}]}
    })
}

fn harness() -> Harness {
    let mut h = Harness::with_catalog(upstream::build(&local_doc(), &upstream_lists()).unwrap());
    h.init();
    h
}

fn names(result: &Value, key: &str) -> Vec<String> {
    result[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lists_the_upstream_with_overlay_groups_tags_concerns_and_policy() {
    let mut h = harness();
    assert!(h.server.is_gateway());
    let all = h.rpc_ok("tools/list", json!({}));
    assert_eq!(names(&all, "tools"), ["git_status", "git_push", "weather", "echo"]);
    let git = h.rpc_ok("tools/list", json!({"filter": {"groups": ["code"]}}));
    assert_eq!(names(&git, "tools"), ["git_status", "git_push"]);
    let push = &git["tools"][1];
    assert_eq!(
        push["x-vendor"],
        json!({"keep": [1, 2]}),
        "unknown upstream fields survive"
    );
    assert_eq!(push["description"], json!("upstream git_push"));
    assert_eq!(push["groups"], json!(["git"]));
    assert_eq!(push["tags"], json!(["vcs"]));
    let high = h.rpc_ok(
        "tools/list",
        json!({"filter": {"groups": ["git"], "concerns": {"security": "high"}}}),
    );
    assert_eq!(names(&high, "tools"), ["git_status"]);
    let groups = h.rpc_ok("groups/list", json!({}));
    assert_eq!(names(&groups, "groups"), ["code", "git", "outside"]);
    assert_eq!(names(&h.rpc_ok("resources/list", json!({})), "resources"), ["readme"]);
    let init = h.server.catalog().server.clone();
    assert_eq!(
        init["name"],
        json!("upstream"),
        "serverInfo taken from the upstream when the document has none"
    );
}

#[test]
fn uses_become_forwards_after_the_policy_check() {
    let mut h = harness();
    let params = json!({"name": "git_push", "arguments": {"force": true}, "_meta": {"progressToken": 5}});
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": "c-1", "method": "tools/call", "params": params}),
        &[],
    );
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    let f = r.forward.clone().expect("a forward effect");
    assert_eq!(
        (f.id.clone(), f.method.as_str(), &f.params),
        (json!("c-1"), "tools/call", &params)
    );
    let upstream_result = json!({"content": [{"type": "text", "text": "pushed"}], "structuredContent": {"ok": true}});
    let done = http::complete(
        r,
        Ok(&json!({"jsonrpc": "2.0", "id": 41, "result": upstream_result})),
        &[],
    );
    let body: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(body, json!({"jsonrpc": "2.0", "id": "c-1", "result": upstream_result}));
    assert!(done
        .headers
        .iter()
        .any(|(k, v)| k == "Content-Type" && v == "application/json"));

    // Hidden by policy: refused here, never forwarded.
    let e = h.rpc_err("tools/call", json!({"name": "git_reset_hard"}));
    assert_eq!(e["code"], json!(-32602));
    assert!(e["message"].as_str().unwrap().contains("Unknown tool"));
    let e = h.rpc_err("resources/read", json!({"uri": "up://secret"}));
    assert_eq!(e["code"], json!(-32002), "resource not found (2025 era)");
    let e = h.rpc_err(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "hidden_prompt"}, "argument": {"name": "x", "value": ""}}),
    );
    assert_eq!(e["code"], json!(-32602));
    let e = h.rpc_err("tools/call", json!({"name": "not_upstream"}));
    assert_eq!(e["code"], json!(-32602));
    // An unlisted URI is forwarded only through a template the upstream lists.
    let e = h.rpc_err("resources/read", json!({"uri": "up://nowhere/7"}));
    assert_eq!(e["code"], json!(-32002));
    assert!(e["message"].as_str().unwrap().contains("Unknown resource"), "{e}");

    for (method, params) in [
        ("prompts/get", json!({"name": "greet", "arguments": {"who": "x"}})),
        ("resources/read", json!({"uri": "up://readme"})),
        ("resources/read", json!({"uri": "up://from-a-template/7"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "A"}}),
        ),
        ("tasks/list", json!({})),
        ("tools/call", json!({"name": "echo", "task": {"ttl": 1000}})),
    ] {
        let r = h.post(
            &json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}),
            &[],
        );
        let f = r
            .forward
            .unwrap_or_else(|| panic!("{method} should be forwarded: {}", r.body));
        assert_eq!((f.method.as_str(), f.params), (method, params));
    }
    // Lists and the rest stay local.
    assert!(h
        .post(&json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}), &[])
        .forward
        .is_none());
}

#[test]
fn the_document_is_validated() {
    let mut doc = local_doc();
    doc["tools"] = json!([{"name": "local", "inputSchema": {}}]);
    let e = upstream::build(&doc, &upstream_lists()).unwrap_err().to_string();
    assert!(e.contains("tools must be empty when upstream is set"), "{e}");
    let mut doc = local_doc();
    doc["overlay"] = json!({"x": {"tags": [1]}});
    let e = mcp_sieve::Catalog::load(&doc).unwrap_err().to_string();
    assert!(e.contains("overlay[\"x\"].tags"), "{e}");
    let mut doc = local_doc();
    doc["upstream"] = json!({"url": "127.0.0.1:9"});
    let e = mcp_sieve::Catalog::load(&doc).unwrap_err().to_string();
    assert!(e.contains("upstream.url must be an http"), "{e}");
    let mut dup = upstream_lists();
    let mut tools = dup.items(Kind::Tool).to_vec();
    tools.push(json!({"name": "echo", "inputSchema": {}}));
    dup.set(Kind::Tool, tools);
    // An upstream listing a name twice keeps the first; the second is refused, reported.
    let c = upstream::build(&local_doc(), &dup).unwrap();
    assert_eq!(
        c.section(Kind::Tool).items.iter().filter(|t| t.name == "echo").count(),
        1
    );
    assert!(
        c.origins.refused[0].1.contains("\"echo\" is listed twice"),
        "{:?}",
        c.origins.refused
    );
    // The overlay applies to a local catalog too.
    let local = mcp_sieve::Catalog::load(&json!({
        "tools": [{"name": "a", "inputSchema": {}}], "overlay": {"a": {"groups": ["g"]}}
    }))
    .unwrap();
    assert_eq!(local.section(Kind::Tool).items[0].groups, ["g"]);
}

#[test]
fn stateless_forwards_get_result_type() {
    let mut h = harness();
    let r = h.modern(json!(3), "tools/call", json!({"name": "echo", "arguments": {}}));
    let f = r.forward.clone().expect("forwarded");
    assert!(f.stateless);
    let done = http::complete(r, Ok(&json!({"id": 1, "result": {"content": []}})), &[]);
    let body: Value = serde_json::from_str(&done.body).unwrap();
    assert_eq!(body["result"], json!({"resultType": "complete", "content": []}));
}

/// Performs `r`'s forward against a scripted upstream (its own session per `initialize`), as a
/// shell does, and returns the completed response and the methods the upstream received.
fn perform(h: &mut Harness, r: http::Response, upstream: &mut Vec<(Option<String>, String)>) -> http::Response {
    let f = r.forward.clone().expect("forwarded");
    let mut gw = upstream::Gateway::new(h.server.catalog().upstreams[0].clone());
    let now = h.now_ms;
    if let Some(jobs) = gw.gather(&f) {
        let done = jobs
            .into_iter()
            .map(|(i, mut conv, mut pages)| {
                let tasks = script(&mut conv, &mut pages, upstream);
                (i, conv, Ok(tasks))
            })
            .collect();
        let server = h.server.clone();
        return upstream::gathered(&server, r, done, &mut h.store, now);
    }
    let (_, mut conv, mut ex) = gw.forward(&f).unwrap();
    let reply = script(&mut conv, &mut ex, upstream);
    upstream::forwarded(r, &conv, Ok(reply), &mut h.store, now)
}

/// Runs `m` against the scripted upstream, recording what it receives.
fn script<M: Machine>(
    conv: &mut upstream::Conversation,
    m: &mut M,
    upstream: &mut Vec<(Option<String>, String)>,
) -> M::Output {
    loop {
        match m.step(conv).unwrap() {
            Step::Done(out) => return out,
            Step::Send(post) => {
                let msg: Value = serde_json::from_str(&post.body).unwrap();
                let session = post
                    .headers
                    .iter()
                    .find(|(k, _)| k == "Mcp-Session-Id")
                    .map(|(_, v)| v.clone());
                let method = msg["method"].as_str().unwrap().to_string();
                if method == "server/discover" {
                    // A legacy upstream (its era's discovery is `tests/upstream_eras.rs`'s).
                    let refusal = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}});
                    let answer = HttpAnswer {
                        status: 400,
                        session: None,
                        content_type: "application/json".into(),
                        body: refusal.to_string(),
                    };
                    m.receive(conv, answer).unwrap();
                    continue;
                }
                upstream.push((session.clone(), method.clone()));
                let fresh = format!("up-{}", upstream.len());
                let task = |id: &str| json!({"taskId": id, "status": "working", "createdAt": "2025-11-20T10:00:00Z", "ttl": 60_000});
                let result = match method.as_str() {
                    "initialize" => {
                        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "u"}})
                    }
                    "tools/call" => {
                        json!({"task": task(&format!("task-of-{}", session.unwrap()))})
                    }
                    _ => json!({"tasks": [task("task-of-up-1"), task("task-of-up-4"), task("task-of-up-5")]}),
                };
                let body = if msg.get("id").is_some() {
                    json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string()
                } else {
                    String::new()
                };
                let answer = HttpAnswer {
                    status: if body.is_empty() { 202 } else { 200 },
                    session: (method == "initialize").then_some(fresh),
                    content_type: "application/json".into(),
                    body,
                };
                m.receive(conv, answer).unwrap();
            }
        }
    }
}

#[test]
fn each_session_has_its_own_upstream_session_and_only_its_own_tasks() {
    let mut a = harness();
    let mut b = harness();
    let mut up = Vec::new();
    let task_call = json!({"name": "echo", "arguments": {}, "task": {"ttl": 60_000}});
    let r = a.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": task_call}),
        &[],
    );
    let done = perform(&mut a, r, &mut up);
    let task_a = serde_json::from_str::<Value>(&done.body).unwrap()["result"]["task"]["taskId"].clone();
    assert_eq!(task_a, json!("task-of-up-1"));
    assert_eq!(
        up.len(),
        3,
        "A opened its upstream session: initialize, initialized, the call"
    );
    // A's second use goes on in the same upstream session, with a new request id.
    let r = a.post(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": task_a}}),
        &[],
    );
    perform(&mut a, r, &mut up);
    assert_eq!(up[3], (Some("up-1".into()), "tasks/get".into()));
    // B: A's task id is unknown and nothing is forwarded.
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let e = b.rpc_err(method, json!({"taskId": task_a}));
        assert_eq!(e["code"], json!(-32602), "{method}");
        assert!(e["message"].as_str().unwrap().contains("Unknown task"), "{method}: {e}");
    }
    // B's own use opens B's own upstream session; its tasks/list shows only B's tasks.
    let r = b.post(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": task_call}),
        &[],
    );
    perform(&mut b, r, &mut up);
    assert_eq!(
        up[4],
        (None, "initialize".into()),
        "B does not reuse A's upstream session"
    );
    assert_eq!(up[6], (Some("up-5".into()), "tools/call".into()));
    let r = b.post(
        &json!({"jsonrpc": "2.0", "id": 10, "method": "tasks/list", "params": {}}),
        &[],
    );
    let listed = perform(&mut b, r, &mut up);
    let listed: Value = serde_json::from_str(&listed.body).unwrap();
    let ids: Vec<&str> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["task-of-up-5"], "an upstream listing A's task is cut to B's own");
    // A stateless request owns no task and shares no session.
    let e = b.modern_tasks(json!(11), "tasks/get", json!({"taskId": task_a}));
    assert!(e.forward.is_none() && e.body.contains("Unknown task"), "{}", e.body);
}
