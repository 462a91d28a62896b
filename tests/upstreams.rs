//! Many named upstreams in the core: one catalog over several upstreams' lists (prefixes, a group
//! per upstream, imported metadata, the overlay on top), filters, views, policy and search mode
//! across all of them, uses routed to the right upstream with the name it knows, each downstream
//! session's own session at each upstream, and tasks kept per upstream and per session (a
//! 2026-07-28 upstream's asked one by one with `tasks/get`).

mod common;

use common::Harness;
use mcp_sieve::catalog::Upstream;
use mcp_sieve::http::SessionStore;
use mcp_sieve::model::Kind;
use mcp_sieve::upstream::{build_many, Lists, Source};
use mcp_sieve::{http, Catalog};
use serde_json::{json, Value};

fn lists(kind_items: &[(Kind, Value)]) -> Lists {
    let mut l = Lists::new(json!({"capabilities": {"tools": {}, "prompts": {}, "resources": {}}}));
    for (k, v) in kind_items {
        l.set(*k, serde_json::from_value(v.clone()).unwrap());
    }
    l
}

fn local() -> Value {
    json!({
        "upstreams": {
            "github": {"url": "http://127.0.0.1:9/mcp", "title": "GitHub", "headers": {"Authorization": "Bearer ${GH}"}},
            "files": {"command": "node", "args": ["fs.js"], "tagsFromAnnotations": true},
            "py": {"url": "http://127.0.0.1:9/py", "prefix": "fast."}
        },
        "groups": [{"name": "code", "title": "Code"}, {"name": "github", "title": "GitHub (ours)", "parent": "code"}],
        "overlay": {"files_write_*": {"tags": ["writes"]}},
        "policy": {"rules": [{"hide": {"tags": ["destructive"]}}]},
        "views": {"readonly": {"filter": {"tags": ["read-only"]}}, "find": {"mode": "search"}}
    })
}

fn catalog() -> Catalog {
    catalog_of(local())
}

fn catalog_of(doc: Value) -> Catalog {
    let ups = Upstream::parse_all(doc.get("upstream"), doc.get("upstreams")).unwrap();
    let names: Vec<&str> = ups.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["files", "github", "py"]);
    let files = lists(&[
        (
            Kind::Tool,
            json!([
                {"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
                {"name": "write_file", "description": "Write a file", "inputSchema": {"type": "object"}},
                {"name": "delete_tree", "description": "Delete", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}
            ]),
        ),
        (Kind::Resource, json!([{"name": "root", "uri": "file:///root"}])),
        (
            Kind::ResourceTemplate,
            json!([{"name": "any", "uriTemplate": "file:///{path}"}]),
        ),
    ]);
    let github = lists(&[
        (
            Kind::Tool,
            json!([
                {"name": "create_issue", "description": "Open an issue", "inputSchema": {"type": "object"},
                 "execution": {"taskSupport": "optional"}},
                {"name": "read_file", "description": "Read a file in a repository", "inputSchema": {"type": "object"}}
            ]),
        ),
        (
            Kind::Prompt,
            json!([{"name": "triage", "description": "Triage issues"}]),
        ),
    ]);
    let py = lists(&[(
        Kind::Tool,
        json!([{"name": "add", "description": "Adds", "inputSchema": {"type": "object"},
                "_meta": {"fastmcp": {"tags": ["math", "read-only"]}}, "execution": {"taskSupport": "required"}}]),
    )]);
    let all = [&files, &github, &py];
    let sources: Vec<Source> = ups
        .iter()
        .zip(all)
        .enumerate()
        .map(|(index, (upstream, lists))| Source { index, upstream, lists })
        .collect();
    build_many(&doc, &sources).unwrap()
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
fn one_catalog_over_many_upstreams() {
    let mut h = Harness::with_catalog(catalog());
    h.init();
    let all = h.rpc_ok("tools/list", json!({}));
    assert_eq!(
        names(&all, "tools"),
        [
            "files_read_file",
            "files_write_file",
            "github_create_issue",
            "github_read_file",
            "fast.add"
        ],
        "prefixed; the destructive tool is hidden by policy across upstreams"
    );
    let fw = &all["tools"][1];
    assert_eq!(fw["groups"], json!(["files"]));
    assert_eq!(fw["tags"], json!(["writes"]), "the overlay applies to prefixed names");
    let groups = h.rpc_ok("groups/list", json!({}));
    assert_eq!(names(&groups, "groups"), ["code", "github", "files", "py"]);
    assert_eq!(
        groups["groups"][1]["title"],
        json!("GitHub (ours)"),
        "the document's group wins"
    );
    let by_group = h.rpc_ok("tools/list", json!({"filter": {"groups": ["code"]}}));
    assert_eq!(names(&by_group, "tools"), ["github_create_issue", "github_read_file"]);
    let read_only = h.rpc_ok("tools/list", json!({"filter": {"tags": ["read-only"]}}));
    assert_eq!(
        names(&read_only, "tools"),
        ["files_read_file", "fast.add"],
        "annotations as tags (asked by files) and FastMCP tags (py)"
    );
    assert_eq!(
        names(&h.rpc_ok("prompts/list", json!({})), "prompts"),
        ["github_triage"]
    );
    assert_eq!(names(&h.rpc_ok("resources/list", json!({})), "resources"), ["root"]);
}

fn forward_of(h: &mut Harness, method: &str, params: Value) -> mcp_sieve::protocol::Forward {
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        &[],
    );
    r.forward
        .unwrap_or_else(|| panic!("{method} should be forwarded: {}", r.body))
}

#[test]
fn uses_reach_the_right_upstream_with_its_own_name() {
    let mut h = Harness::with_catalog(catalog());
    h.init();
    let f = forward_of(
        &mut h,
        "tools/call",
        json!({"name": "github_read_file", "arguments": {"p": 1}}),
    );
    assert_eq!((f.upstream, f.upstream_name.as_str()), (1, "github"));
    assert_eq!(f.params, json!({"name": "read_file", "arguments": {"p": 1}}));
    let f = forward_of(&mut h, "tools/call", json!({"name": "fast.add"}));
    assert_eq!((f.upstream, f.params["name"].clone()), (2, json!("add")));
    // The client's own params (the routed name aside): a shell may splice its upstream request.
    assert!(f.verbatim);
    let f = forward_of(&mut h, "prompts/get", json!({"name": "github_triage"}));
    assert_eq!((f.upstream, f.params["name"].clone()), (1, json!("triage")));
    let f = forward_of(&mut h, "resources/read", json!({"uri": "file:///notes.txt"}));
    assert_eq!(f.upstream, 0, "a URI of a template goes to the template's upstream");
    let f = forward_of(
        &mut h,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "github_triage"}, "argument": {"name": "a", "value": ""}}),
    );
    assert_eq!((f.upstream, f.params["ref"]["name"].clone()), (1, json!("triage")));
    // Hidden by policy: unknown, never forwarded.
    let e = h.rpc_err("tools/call", json!({"name": "files_delete_tree"}));
    assert_eq!(e["code"], json!(-32602));
    // Search mode: call_tool reaches the inner tool's upstream.
    let mut s = Harness::with_catalog(catalog());
    s.view = http::endpoint_view(
        s.server.catalog(),
        "/mcp/find",
        "",
        &common::header_fn(vec![], &[]),
        None,
    )
    .unwrap();
    s.init();
    let found = s.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "read a file"}}),
    );
    let text = found["content"][0]["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("files_read_file") && text.contains("github_read_file"),
        "{text}"
    );
    let f = forward_of(
        &mut s,
        "tools/call",
        json!({"name": "call_tool", "arguments": {"name": "files_write_file", "arguments": {}}}),
    );
    assert_eq!((f.upstream, f.params["name"].clone()), (0, json!("write_file")));
    // Params the core built from call_tool's arguments: not the client's text.
    assert!(!f.verbatim);
}

#[test]
fn each_session_keeps_a_link_and_its_tasks_per_upstream() {
    let mut h = Harness::with_catalog(catalog());
    h.init();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "github_create_issue", "arguments": {}, "task": {"ttl": 60000}}});
    let r = h.post(&call, &[]);
    let f = r.forward.clone().unwrap();
    let link = f.link.clone().unwrap();
    let upstream = json!({"jsonrpc": "2.0", "id": link.next_id,
                          "result": {"task": {"taskId": "t-1", "status": "working", "ttl": 60000}}});
    // The shell performs it and records the outcome in the session.
    let conv = mcp_sieve::upstream::Conversation::resume(
        mcp_sieve::upstream::ClientConfig::default(),
        mcp_sieve::protocol::UpstreamLink {
            session: Some("gh-session".into()),
            version: "2025-11-25".into(),
            next_id: link.next_id + 1,
        },
    );
    let done = mcp_sieve::upstream::forwarded(
        r,
        &conv,
        Ok(mcp_sieve::upstream::Reply {
            response: Some(upstream),
            notifications: vec![],
        }),
        &mut h.store,
        h.now_ms,
    );
    assert_eq!(done.status, 200);
    let s = h.store.load(h.session.as_deref().unwrap()).unwrap();
    assert_eq!(s.upstream_links["github"].session.as_deref(), Some("gh-session"));
    assert!(s.upstream.is_none(), "no link at the others");
    assert_eq!(
        (s.upstream_tasks[0].id.as_str(), s.upstream_tasks[0].upstream.as_str()),
        ("t-1", "github")
    );
    // The task is asked of the upstream that runs it, in that upstream's session.
    let f = forward_of(&mut h, "tasks/get", json!({"taskId": "t-1"}));
    assert_eq!((f.upstream, f.upstream_name.as_str()), (1, "github"));
    assert_eq!(f.link.unwrap().session.as_deref(), Some("gh-session"));
    let e = h.rpc_err("tasks/get", json!({"taskId": "t-2"}));
    assert!(e["message"].as_str().unwrap().contains("Unknown task"));
}

#[test]
fn collisions_are_refused_and_transports_are_configuration_errors() {
    let doc =
        json!({"upstreams": {"a": {"url": "http://x/mcp", "prefix": ""}, "b": {"url": "http://y/mcp", "prefix": ""}}});
    let ups = Upstream::parse_all(None, doc.get("upstreams")).unwrap();
    let one = lists(&[(Kind::Tool, json!([{"name": "same", "inputSchema": {}}]))]);
    let sources = [
        Source {
            index: 0,
            upstream: &ups[0],
            lists: &one,
        },
        Source {
            index: 1,
            upstream: &ups[1],
            lists: &one,
        },
    ];
    // Two unprefixed upstreams serving one name with neither holding it before: a tie nobody
    // wins (no order lets one capture the other's name); both items are refused and reported,
    // not their upstreams.
    let c = build_many(&doc, &sources).unwrap();
    assert!(c.origins.tools.is_empty());
    let whys: Vec<&str> = c.origins.refused.iter().map(|(_, w)| w.as_str()).collect();
    assert_eq!(whys.len(), 2, "{whys:?}");
    assert!(
        whys[0].contains("\"same\" is also claimed by upstream \"a\""),
        "{whys:?}"
    );
    assert!(
        whys[1].contains("\"same\" is also claimed by another upstream"),
        "{whys:?}"
    );
    let e = Catalog::load(&json!({"upstreams": {"x": {"url": "http://x", "service": "B"}}})).unwrap_err();
    assert!(e.to_string().contains("exactly one of url, command, service"), "{e}");
    let e = Catalog::load(&json!({"upstreams": [1]})).unwrap_err();
    assert!(e.to_string().contains("upstreams must be an object"), "{e}");
    // Both spellings at once: the unnamed one first, unprefixed.
    let c = Catalog::load(&json!({"upstream": {"url": "http://x/mcp"}, "upstreams": {"b": {"url": "http://y/mcp"}}}))
        .unwrap();
    let got: Vec<(&str, &str)> = c
        .upstreams
        .iter()
        .map(|u| (u.name.as_str(), u.prefix.as_str()))
        .collect();
    assert_eq!(got, [("", ""), ("b", "b_")]);
}

#[test]
fn an_item_that_collides_stays_out_and_every_upstream_serves() {
    use mcp_sieve::upstream::{Gateway, Serving};
    let local = Catalog::load(&json!({"upstreams": {
        "a": {"url": "http://x/mcp", "prefix": ""},
        "b": {"url": "http://y/mcp", "prefix": ""},
        "c": {"url": "http://z/mcp"}
    }}))
    .unwrap();
    let mut gw = Gateway::new_many(&local.upstreams);
    let Serving::Refresh(jobs) = gw.serving(0) else {
        panic!()
    };
    assert_eq!(jobs.len(), 3, "every upstream is fetched at once");
    let same = lists(&[(Kind::Tool, json!([{"name": "same", "inputSchema": {}}]))]);
    let done = jobs.into_iter().map(|j| (j, Ok(same.clone()))).collect();
    let r = gw.refreshed(&local, done, 1).unwrap();
    let names: Vec<&str> = r
        .server
        .catalog()
        .section(Kind::Tool)
        .items
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["c_same"],
        "a and b tie over \"same\": neither serves it; every upstream is up"
    );
    assert!(r.failure.is_none());
    let st = gw.status(1);
    let states: Vec<&str> = st["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["up", "up", "up"]);
    assert_eq!(st["upstreams"][1]["refusedCount"], 1);
    let said = "upstream \"b\": the tool \"same\" is also claimed by upstream \"a\"";
    assert!(r.log.iter().any(|l| l.contains(said)), "{:?}", r.log);
}

#[test]
fn an_ended_session_names_the_upstream_sessions_to_close() {
    let doc = local();
    let ups = Upstream::parse_all(doc.get("upstream"), doc.get("upstreams")).unwrap();
    let secret = |n: &str| (n == "GH").then(|| "t0ken".to_string());
    let g = mcp_sieve::upstream::Gateway::with_secrets(&ups, &secret).unwrap();
    let link = |s: Option<&str>| mcp_sieve::protocol::UpstreamLink {
        session: s.map(str::to_string),
        version: "2025-11-25".into(),
        next_id: 3,
    };
    let mut ended = mcp_sieve::protocol::Session::default();
    ended.upstream_links.insert("github".into(), link(Some("gh-1")));
    ended.upstream_links.insert("files".into(), link(Some("ignored"))); // stdio: shared, stays open
    ended.upstream_links.insert("py".into(), link(None)); // never opened
    let closing = g.closing(&ended);
    assert_eq!(closing.len(), 1, "{closing:?}");
    let (member, headers) = &closing[0];
    assert_eq!(g.upstream_at(*member).unwrap().name, "github");
    let has = |k: &str, v: &str| headers.iter().any(|(a, b)| a == k && b == v);
    assert!(has("Mcp-Session-Id", "gh-1") && has("MCP-Protocol-Version", "2025-11-25"));
    assert!(
        has("Authorization", "Bearer t0ken"),
        "the upstream's own credentials go along: {headers:?}"
    );
    assert!(g.closing(&mcp_sieve::protocol::Session::default()).is_empty());
}

/// A task-creating call of `tool` through `h`, answered by its upstream with the task `id`,
/// recorded in the session as a shell does.
fn create_task(h: &mut Harness, tool: &str, id: &str) {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": {}, "task": {"ttl": 600000}}});
    let r = h.post(&call, &[]);
    let link = r.forward.clone().unwrap().link.unwrap();
    let conv = mcp_sieve::upstream::Conversation::resume(mcp_sieve::upstream::ClientConfig::default(), link);
    let answer =
        json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {"taskId": id, "status": "working", "ttl": 600000}}});
    let reply = mcp_sieve::upstream::Reply {
        response: Some(answer),
        notifications: vec![],
    };
    mcp_sieve::upstream::forwarded(r, &conv, Ok(reply), &mut h.store, h.now_ms);
}

fn wire_task(id: &str, status: &str, created: &str) -> Value {
    json!({"taskId": id, "status": status, "createdAt": created, "lastUpdatedAt": created, "ttl": 600000, "pollInterval": 500})
}

/// `tasks/list` with `params` through `h`, each upstream asked answering from `answers` (by
/// index; an error when absent); returns the result (or error) and the upstreams asked.
fn list_tasks(h: &mut Harness, params: Value, answers: &[(usize, Value)]) -> (Value, Vec<usize>) {
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/list", "params": params}),
        &[],
    );
    let Some(f) = r.forward.clone() else {
        return (serde_json::from_str(&r.body).unwrap(), vec![]);
    };
    let gw = mcp_sieve::upstream::Gateway::new_many(&h.server.catalog().upstreams);
    let jobs = gw.gather(&f).expect("tasks/list gathers");
    let asked: Vec<usize> = jobs.iter().map(|(i, ..)| *i).collect();
    let mut done = Vec::new();
    for (i, mut conv, mut pages) in jobs {
        let (out, sent) = common::run(&mut conv, &mut pages, |m, _| {
            let body = match answers.iter().find(|(a, _)| *a == i) {
                Some((_, tasks)) => json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tasks": tasks}}),
                None => {
                    json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32603, "message": "tasks are gone"}})
                }
            };
            mcp_sieve::upstream::HttpAnswer {
                status: 200,
                session: Some("up".into()),
                content_type: "application/json".into(),
                body: body.to_string(),
            }
        });
        assert!(
            sent.iter().all(|m| m["params"].get("status").is_none()),
            "each upstream is asked for its whole list"
        );
        done.push((i, conv, out));
    }
    let server = h.server.clone();
    let r = mcp_sieve::upstream::gathered(&server, r, done, &mut h.store, h.now_ms);
    (serde_json::from_str(&r.body).unwrap(), asked)
}

fn ids(r: &Value) -> Vec<&str> {
    r["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect()
}

#[test]
fn tasks_list_gathers_every_upstream_running_the_sessions_tasks() {
    let mut doc = local();
    doc["options"] = json!({"pageSize": 2});
    let mut h = Harness::with_catalog(catalog_of(doc));
    h.init();
    let (r, asked) = list_tasks(&mut h, json!({}), &[]);
    assert_eq!((ids(&r), asked), (vec![], vec![]), "no task: no upstream is asked");
    create_task(&mut h, "github_create_issue", "g-1");
    create_task(&mut h, "github_create_issue", "g-2");
    create_task(&mut h, "fast.add", "p-1");
    let github = json!([
        wire_task("g-1", "working", "2025-11-20T10:00:02Z"),
        wire_task("g-2", "completed", "2025-11-20T10:00:03Z"),
        wire_task("someone-elses", "working", "2025-11-20T10:00:04Z")
    ]);
    let py = json!([wire_task("p-1", "working", "2025-11-20T10:00:01Z")]);
    let answers = [(1, github), (2, py)];
    // One list over both upstreams, in the default order (lastUpdatedAt, newest first), paged.
    let (r, asked) = list_tasks(&mut h, json!({}), &answers);
    assert_eq!(asked, [1, 2], "github and py run the session's tasks; files runs none");
    assert_eq!(ids(&r), ["g-2", "g-1"]);
    assert_eq!(
        r["result"]["tasks"][0]["pollInterval"],
        json!(500),
        "the upstream's objects, whole"
    );
    let cursor = r["result"]["nextCursor"].clone();
    let (r, _) = list_tasks(&mut h, json!({"cursor": cursor}), &answers);
    assert_eq!(ids(&r), ["p-1"]);
    assert!(r["result"].get("nextCursor").is_none());
    // SEP-1904 filter and ordering over the merged set.
    let q = json!({"status": ["working"], "orderBy": "createdAt", "order": "asc"});
    let (r, _) = list_tasks(&mut h, q.clone(), &answers);
    assert_eq!(ids(&r), ["p-1", "g-1"]);
    let (r, _) = list_tasks(
        &mut h,
        json!({"filter": {"createdAfter": "2025-11-20T10:00:01Z"}}),
        &answers,
    );
    assert_eq!(ids(&r), ["g-2", "g-1"]);
    // A cursor of another query is refused; so is a bad query, before any upstream is asked.
    let (r, _) = list_tasks(&mut h, json!({"status": ["failed"], "cursor": cursor}), &answers);
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    let (r, asked) = list_tasks(&mut h, json!({"status": ["sleeping"]}), &answers);
    assert_eq!(
        (r["error"]["code"].clone(), asked),
        (json!(-32602), vec![]),
        "a bad query asks no upstream: {r}"
    );
    // An upstream that fails leaves its tasks out, with a warning naming it.
    let (r, _) = list_tasks(&mut h, json!({}), &answers[..1]);
    assert_eq!(ids(&r), ["g-2", "g-1"]);
    let warning = r["result"]["_meta"]["dev.mcp-sieve/warnings"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        warning.contains("upstream \"py\"") && warning.contains("tasks are gone"),
        "{warning}"
    );
}

#[test]
fn a_modern_upstreams_tasks_are_asked_one_by_one_with_tasks_get() {
    use mcp_sieve::upstream::{ClientConfig, Conversation, Era, HttpAnswer, TaskList};
    let config = ClientConfig {
        discover: true,
        ..ClientConfig::default()
    };
    let mut conv = Conversation::new(config).knowing(Era::Modern);
    let ids = ["t-1".to_string(), "gone".to_string(), "t-2".to_string()];
    let mut tasks = TaskList::new(conv.era(), &ids);
    let (out, sent) = common::run(&mut conv, &mut tasks, |m, _| {
        let body = match m["params"]["taskId"].as_str() {
            Some("gone") => {
                json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602, "message": "Unknown task"}})
            }
            Some(id) => {
                let mut t = wire_task(id, "working", "2025-11-20T10:00:01Z");
                t["resultType"] = json!("complete");
                json!({"jsonrpc": "2.0", "id": m["id"], "result": t})
            }
            None => json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}),
        };
        HttpAnswer {
            status: 200,
            session: None,
            content_type: "application/json".into(),
            body: body.to_string(),
        }
    });
    let methods: Vec<(&str, &str)> = sent
        .iter()
        .map(|m| (m["method"].as_str().unwrap(), m["params"]["taskId"].as_str().unwrap()))
        .collect();
    assert_eq!(
        methods,
        [("tasks/get", "t-1"), ("tasks/get", "gone"), ("tasks/get", "t-2")],
        "no tasks/list: the extension has none"
    );
    assert!(sent
        .iter()
        .all(|m| m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"));
    let out = out.unwrap();
    assert_eq!(
        out,
        [
            wire_task("t-1", "working", "2025-11-20T10:00:01Z"),
            wire_task("t-2", "working", "2025-11-20T10:00:01Z")
        ],
        "a task the upstream no longer knows is left out; resultType is not part of a task"
    );
    // Another error is the upstream's failure (the merge names it and leaves its tasks out).
    let mut tasks = TaskList::new(Era::Modern, &ids[..1]);
    let (out, _) = common::run(&mut conv, &mut tasks, |m, _| HttpAnswer {
        status: 200,
        session: None,
        content_type: "application/json".into(),
        body: json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32603, "message": "down"}}).to_string(),
    });
    assert!(out.is_err());
    // A session-era upstream is asked for its whole list.
    let mut conv = Conversation::new(ClientConfig::default());
    let mut tasks = TaskList::new(conv.era(), &ids);
    let (_, sent) = common::run(&mut conv, &mut tasks, |m, _| {
        HttpAnswer {
        status: 200,
        session: Some("up".into()),
        content_type: "application/json".into(),
        body: match m["method"].as_str() {
            Some("initialize") => json!({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}),
            _ => json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tasks": []}}),
        }
        .to_string(),
    }
    });
    assert!(sent.iter().any(|m| m["method"] == "tasks/list"), "{sent:?}");
}

/// Completes `r` (a forwarded request) with the upstream's `result`, in upstream session `up`,
/// as a shell does; returns the client's answer.
fn complete_with(h: &mut Harness, r: http::Response, up: &str, result: Value) -> Value {
    let link = r.forward.clone().unwrap().link.unwrap_or_default();
    let conv = mcp_sieve::upstream::Conversation::resume(
        mcp_sieve::upstream::ClientConfig::default(),
        mcp_sieve::protocol::UpstreamLink {
            session: Some(up.into()),
            version: "2025-11-25".into(),
            next_id: link.next_id + 1,
        },
    );
    let reply = mcp_sieve::upstream::Reply {
        response: Some(json!({"jsonrpc": "2.0", "id": link.next_id, "result": result})),
        notifications: vec![],
    };
    let done = mcp_sieve::upstream::forwarded(r, &conv, Ok(reply), &mut h.store, h.now_ms);
    common::response_of(&done)
}

#[test]
fn a_stateless_callers_upstream_tasks_are_its_principals() {
    let mut h = Harness::with_catalog(catalog());
    h.principal = Some("alice".into());
    let create = json!({"name": "github_create_issue", "arguments": {}, "task": {"ttl": 60000}});
    let r = h.modern_tasks(json!(1), "tools/call", create.clone());
    let f = r.forward.clone().expect("forwarded");
    assert!(f.stateless);
    assert_eq!(
        f.session.as_deref(),
        Some("tasks:@alice"),
        "the holder of alice's tasks"
    );
    let legacy = json!({"task": {"taskId": "t-1", "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                                 "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": 60000, "pollInterval": 500}});
    let answer = complete_with(&mut h, r, "gh-session", legacy);
    let created = &answer["result"];
    assert_eq!(created["resultType"], "task", "{answer}");
    assert_eq!(
        (
            created["taskId"].clone(),
            created["ttlMs"].clone(),
            created["pollIntervalMs"].clone()
        ),
        (json!("t-1"), json!(60000), json!(500)),
        "the task's fields inline under the extension's names: {answer}"
    );
    let held = h.store.load("tasks:@alice").expect("alice's holder is stored");
    assert_eq!(held.principal.as_deref(), Some("alice"));
    assert_eq!(
        (
            held.upstream_tasks[0].id.as_str(),
            held.upstream_tasks[0].upstream.as_str()
        ),
        ("t-1", "github")
    );
    // Alice's later requests reach the task, in the upstream session it was created in.
    for method in ["tasks/get", "tasks/cancel"] {
        let f = h
            .modern_tasks(json!(2), method, json!({"taskId": "t-1"}))
            .forward
            .expect(method);
        assert_eq!((f.upstream, f.upstream_name.as_str()), (1, "github"), "{method}");
        assert_eq!(f.link.unwrap().session.as_deref(), Some("gh-session"), "{method}");
    }
    let got = h.modern_tasks(json!(3), "tasks/get", json!({"taskId": "t-1"}));
    let got = complete_with(
        &mut h,
        got,
        "gh-session",
        wire_task("t-1", "working", "2025-11-20T10:00:00Z"),
    );
    assert_eq!(
        (got["result"]["resultType"].clone(), got["result"]["ttlMs"].clone()),
        (json!("complete"), json!(600000))
    );
    // Another principal, or a caller without one, does not know it; nothing is forwarded.
    for who in [Some("bob"), None] {
        h.principal = who.map(String::from);
        let r = h.modern_tasks(json!(4), "tasks/get", json!({"taskId": "t-1"}));
        assert!(r.forward.is_none(), "{who:?}");
        let e = common::response_of(&r);
        assert!(
            e["error"]["message"].as_str().unwrap().contains("Unknown task"),
            "{who:?}: {e}"
        );
    }
    // Callers without a principal share one holder. SEP-2663: the server decides which calls
    // are tasks and `params.task` is ignored: one is asked of the upstream for a tool that
    // supports tasks, without `params.task` too, and none for another, with it too.
    let r = h.modern_tasks(json!(5), "tools/call", create);
    assert_eq!(r.forward.unwrap().session.as_deref(), Some("tasks:#"));
    let r = h.modern_tasks(
        json!(6),
        "tools/call",
        json!({"name": "github_create_issue", "arguments": {}}),
    );
    assert!(r.forward.unwrap().params["task"].is_object());
    let r = h.modern_tasks(
        json!(7),
        "tools/call",
        json!({"name": "github_read_file", "arguments": {}, "task": {"ttl": 60000}}),
    );
    assert!(r.forward.unwrap().params.get("task").is_none());
}

#[test]
fn a_session_sees_a_modern_upstreams_tasks_in_2025_shapes() {
    let mut h = Harness::with_catalog(catalog());
    h.init();
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "github_create_issue", "arguments": {}, "task": {"ttl": 60000}}}),
        &[],
    );
    // SEP-2663's CreateTaskResult: the task's fields inline.
    let flat = json!({"resultType": "task", "taskId": "t-9", "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                      "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttlMs": 60000, "pollIntervalMs": 500});
    let answer = complete_with(&mut h, r, "gh-session", flat);
    assert_eq!(
        answer["result"],
        json!({"task": {"taskId": "t-9", "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                        "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": 60000, "pollInterval": 500}})
    );
    let s = h.store.load(h.session.as_deref().unwrap()).unwrap();
    assert_eq!(s.upstream_tasks[0].id, "t-9", "the session owns it");
    // tasks/get: the task with the 2025-11-25 names, without the extension's inline result.
    let r = h.post(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "t-9"}}),
        &[],
    );
    let done = json!({"resultType": "complete", "taskId": "t-9", "status": "completed", "createdAt": "2025-11-20T10:00:00Z",
                      "lastUpdatedAt": "2025-11-20T10:00:05Z", "ttlMs": 60000, "result": {"content": []}});
    let got = complete_with(&mut h, r, "gh-session", done);
    assert_eq!(
        got["result"],
        json!({"taskId": "t-9", "status": "completed", "createdAt": "2025-11-20T10:00:00Z",
               "lastUpdatedAt": "2025-11-20T10:00:05Z", "ttl": 60000})
    );
}

#[test]
fn a_modern_upstreams_task_joins_a_sessions_list_in_the_2025_shape() {
    use mcp_sieve::upstream::{ClientConfig, Conversation, Era, HttpAnswer, TaskList};
    let mut conv = Conversation::new(ClientConfig::default()).knowing(Era::Modern);
    let mut tasks = TaskList::new(Era::Modern, &["t-1".to_string()]);
    let (out, _) = common::run(&mut conv, &mut tasks, |m, _| HttpAnswer {
        status: 200,
        session: None,
        content_type: "application/json".into(),
        body: json!({"jsonrpc": "2.0", "id": m["id"], "result": {"resultType": "complete", "taskId": "t-1",
            "status": "completed", "createdAt": "2025-11-20T10:00:00Z", "lastUpdatedAt": "2025-11-20T10:00:09Z",
            "ttlMs": 60000, "pollIntervalMs": 500, "result": {"content": []}}})
        .to_string(),
    });
    assert_eq!(
        out.unwrap(),
        [
            json!({"taskId": "t-1", "status": "completed", "createdAt": "2025-11-20T10:00:00Z",
                "lastUpdatedAt": "2025-11-20T10:00:09Z", "ttl": 60000, "pollInterval": 500})
        ],
        "SEP-2663's names become 2025-11-25's; its inline result is not part of a listed task"
    );
}

#[test]
fn sep_2663_a_stateless_client_that_does_not_declare_the_tasks_extension_gets_no_task_through_the_gateway() {
    let mut h = Harness::with_catalog(catalog());
    h.principal = Some("alice".into());
    // Its `params.task` is not passed on: the upstream runs the call as any other, outside any
    // holder of tasks.
    let r = h.modern(
        json!(1),
        "tools/call",
        json!({"name": "github_create_issue", "arguments": {}, "task": {"ttl": 60000}}),
    );
    let f = r.forward.expect("forwarded");
    assert!(f.params.get("task").is_none(), "{}", f.params);
    assert_eq!(f.session, None, "no holder of tasks");
    assert!(h.store.load("tasks:@alice").is_none());
    // A tool the upstream only runs as a task: -32021, nothing forwarded.
    let r = h.modern(
        json!(2),
        "tools/call",
        json!({"name": "fast.add", "arguments": {}, "task": {}}),
    );
    assert!(r.forward.is_none());
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(common::response_of(&r)["error"]["code"], json!(-32021), "{}", r.body);
    // SEP-2663 (2026-07-28): tasks/result is removed, -32601 for every client.
    let r = h.modern(json!(3), "tasks/result", json!({"taskId": "t-1"}));
    assert!(r.forward.is_none());
    assert_eq!(common::response_of(&r)["error"]["code"], json!(-32601), "{}", r.body);
    // Task requests: -32021, nothing forwarded.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = h.modern(json!(3), method, json!({"taskId": "t-1"}));
        assert!(r.forward.is_none(), "{method}");
        assert_eq!(
            common::response_of(&r)["error"]["code"],
            json!(-32021),
            "{method}: {}",
            r.body
        );
    }
    // Declared, the same call is a task in alice's holder.
    let r = h.modern_tasks(
        json!(4),
        "tools/call",
        json!({"name": "fast.add", "arguments": {}, "task": {}}),
    );
    let f = r.forward.expect("forwarded");
    assert!(f.params["task"].is_object());
    assert_eq!(f.session.as_deref(), Some("tasks:@alice"));
}

/// Creates a task at the `github` upstream through the gateway as `h.principal` (a stateless
/// client declaring the tasks extension); the upstream answers task `id` with `ttl` (none: no
/// TTL). The client's response.
fn gateway_task(h: &mut Harness, id: &str, ttl: Option<i64>) -> Value {
    let r = h.modern_tasks(
        json!(1),
        "tools/call",
        json!({"name": "github_create_issue", "arguments": {}, "task": {}}),
    );
    if r.forward.is_none() {
        return common::response_of(&r);
    }
    let task = json!({"task": {"taskId": id, "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                               "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": ttl, "pollInterval": 500}});
    complete_with(h, r, "gh-session", task)
}

/// A gateway over the test upstreams with these catalog `options`.
fn gateway_with(options: Value) -> Harness {
    let mut doc = local();
    doc["options"] = options;
    Harness::with_catalog(catalog_of(doc))
}

/// Asserts that `r` is the task budget's refusal at its cap `option` of `limit` (`-32602`, the
/// option named in the message, which `says` what to do).
fn assert_over(r: &Value, limit: usize, option: &str, says: &str) {
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert_eq!(r["error"]["data"], json!({"limit": limit, "option": option}), "{r}");
    let m = r["error"]["message"].as_str().unwrap_or_default();
    assert!(m.contains(&format!("(options.{option})")) && m.contains(says), "{m}");
}

/// Asserts that task `id` is unknown to `h.principal` through the gateway (its record is gone).
fn assert_unknown_task(h: &mut Harness, id: &str) {
    let gone = common::response_of(&h.modern_tasks(json!(4), "tasks/get", json!({"taskId": id})));
    let message = gone["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Unknown task"), "{gone}");
}

#[test]
fn a_principals_gateway_tasks_are_capped_as_this_servers_own_and_a_finished_one_makes_room() {
    let mut h = gateway_with(json!({"maxTasksPerPrincipal": 2}));
    let refused = |r: &Value| assert_over(r, 2, "maxTasksPerPrincipal", "cancel one");
    h.principal = Some("alice".into());
    assert_eq!(
        gateway_task(&mut h, "a-1", Some(60_000))["result"]["taskId"],
        json!("a-1")
    );
    // An upstream task without a TTL counts too (kept a day at most).
    assert_eq!(gateway_task(&mut h, "a-2", None)["result"]["taskId"], json!("a-2"));
    refused(&gateway_task(&mut h, "a-3", None));
    // Bob has a budget of his own.
    h.principal = Some("bob".into());
    assert_eq!(gateway_task(&mut h, "b-1", None)["result"]["taskId"], json!("b-1"));
    // A task still working, as the upstream says, makes no room.
    h.principal = Some("alice".into());
    let got = h.modern_tasks(json!(2), "tasks/get", json!({"taskId": "a-1"}));
    let working = json!({"taskId": "a-1", "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                         "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": 60_000});
    complete_with(&mut h, got, "gh-session", working.clone());
    refused(&gateway_task(&mut h, "a-3", None));
    // Alice cancels a-1: the next task evicts its record (the oldest finished), as a cancelled
    // task of this server's own is evicted.
    let cancel = h.modern_tasks(json!(3), "tasks/cancel", json!({"taskId": "a-1"}));
    let cancelled = json!({"taskId": "a-1", "status": "cancelled", "createdAt": "2025-11-20T10:00:00Z",
                           "lastUpdatedAt": "2025-11-20T10:00:01Z", "ttl": 60_000});
    complete_with(&mut h, cancel, "gh-session", cancelled);
    assert_eq!(gateway_task(&mut h, "a-3", None)["result"]["taskId"], json!("a-3"));
    assert_unknown_task(&mut h, "a-1");
    refused(&gateway_task(&mut h, "a-4", None));
    // A day later the records are gone (the upstream's TTL, else a day).
    h.advance(86_400_001);
    assert_eq!(gateway_task(&mut h, "a-5", None)["result"]["taskId"], json!("a-5"));
}

#[test]
fn at_its_cap_a_principals_call_that_an_upstream_may_make_a_task_of_does_not_declare_the_extension() {
    let mut h = gateway_with(json!({"maxTasksPerPrincipal": 1}));
    h.principal = Some("alice".into());
    let declared = |h: &mut Harness| {
        let r = h.modern_tasks(
            json!(2),
            "tools/call",
            json!({"name": "github_read_file", "arguments": {}}),
        );
        let f = r.forward.expect("forwarded");
        assert!(
            f.params.get("task").is_none(),
            "the tool lists no task support: {}",
            f.params
        );
        mcp_sieve::protocol::declares_tasks(&f.params)
    };
    // Below the cap, a 2026-07-28 upstream is told the client takes a task (it decides).
    assert!(declared(&mut h));
    assert_eq!(
        gateway_task(&mut h, "a-1", Some(60_000))["result"]["taskId"],
        json!("a-1")
    );
    // At the cap, with a-1 working: the call runs, without the extension (never a task beyond it).
    assert!(!declared(&mut h));
    // Once a-1 is cancelled, it makes room and the extension is declared again.
    let cancel = h.modern_tasks(json!(3), "tasks/cancel", json!({"taskId": "a-1"}));
    let cancelled = json!({"taskId": "a-1", "status": "cancelled", "createdAt": "2025-11-20T10:00:00Z",
                           "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": 60_000});
    complete_with(&mut h, cancel, "gh-session", cancelled);
    assert!(declared(&mut h));
}

#[test]
fn the_servers_task_cap_counts_every_principals_and_sessions_gateway_tasks() {
    let mut h = gateway_with(json!({"maxTasks": 3}));
    let refused = |r: &Value| assert_over(r, 3, "maxTasks", "already holds 3 tasks");
    for (who, id) in [("alice", "a-1"), ("bob", "b-1")] {
        h.principal = Some(who.into());
        assert_eq!(gateway_task(&mut h, id, Some(60_000))["result"]["taskId"], json!(id));
    }
    // A call that made no task frees what was held for it.
    h.principal = Some("carol".into());
    let r = h.modern_tasks(
        json!(1),
        "tools/call",
        json!({"name": "github_create_issue", "arguments": {}}),
    );
    complete_with(&mut h, r, "gh-session", json!({"content": []}));
    assert_eq!(gateway_task(&mut h, "c-1", None)["result"]["taskId"], json!("c-1"));
    // The server holds 3: the next is refused before it reaches the upstream, whoever asks,
    // a 2025-11-25 session too.
    h.principal = Some("dave".into());
    refused(&gateway_task(&mut h, "d-1", None));
    h.principal = None;
    refused(&gateway_task(&mut h, "x-1", None));
    h.init();
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "github_create_issue", "arguments": {}, "task": {}}});
    refused(&common::response_of(&h.post(&call, &[])));
    h.session = None;
    // A call the upstream only may make a task of runs, without declaring the extension.
    h.principal = Some("dave".into());
    let r = h.modern_tasks(
        json!(2),
        "tools/call",
        json!({"name": "github_read_file", "arguments": {}}),
    );
    assert!(!mcp_sieve::protocol::declares_tasks(
        &r.forward.expect("forwarded").params
    ));
    // Bob's task finishes (the upstream says so): it makes room, and its record goes.
    h.principal = Some("bob".into());
    let got = h.modern_tasks(json!(3), "tasks/get", json!({"taskId": "b-1"}));
    complete_with(
        &mut h,
        got,
        "gh-session",
        wire_task("b-1", "completed", "2025-11-20T10:00:00Z"),
    );
    h.principal = Some("dave".into());
    assert_eq!(gateway_task(&mut h, "d-1", None)["result"]["taskId"], json!("d-1"));
    h.principal = Some("bob".into());
    assert_unknown_task(&mut h, "b-1");
    refused(&gateway_task(&mut h, "b-2", None));
    // Alice's task ends with its TTL: room again.
    h.advance(60_001);
    assert_eq!(gateway_task(&mut h, "b-2", None)["result"]["taskId"], json!("b-2"));
}

#[test]
fn a_session_that_ends_makes_room_with_the_gateway_tasks_it_kept() {
    let mut h = gateway_with(json!({"maxTasks": 2}));
    // Two sessions each keep a task their upstream still runs: the server holds 2.
    let mut sessions = Vec::new();
    for id in ["s-1", "s-2"] {
        h.init();
        create_task(&mut h, "github_create_issue", id);
        sessions.push(h.session.take());
    }
    h.principal = Some("alice".into());
    assert_over(
        &gateway_task(&mut h, "a-1", None),
        2,
        "maxTasks",
        "already holds 2 tasks",
    );
    // The first session's client ends it: nobody can reach its task any more, so it makes room.
    h.principal = None;
    h.session = sessions[0].clone();
    assert_eq!(h.delete().status, 204);
    h.session = None;
    h.principal = Some("alice".into());
    assert_eq!(gateway_task(&mut h, "a-1", None)["result"]["taskId"], json!("a-1"));
    // The second session's task still counts as working: room for no other.
    assert_over(
        &gateway_task(&mut h, "a-2", None),
        2,
        "maxTasks",
        "already holds 2 tasks",
    );
}

#[test]
fn the_call_that_answers_a_question_its_upstream_asked_while_creating_a_task_is_no_second_task() {
    let mut h = gateway_with(json!({"maxTasks": 1, "maxTasksPerPrincipal": 1}));
    h.principal = Some("alice".into());
    let call = json!({"name": "github_create_issue", "arguments": {}});
    let first = h.modern_tasks(json!(1), "tools/call", call.clone());
    let f = first.forward.clone().expect("forwarded");
    assert!(
        f.params.get("task").is_some() && f.admit.is_some(),
        "a task, admitted: {f:?}"
    );
    // The upstream asked during the call (the shell answered it input_required and keeps the
    // exchange); the call comes again with the answer under the relay's key: it goes on with
    // the exchange admitted first, neither capped nor admitted again (the budget is full).
    let mut again = call;
    again["inputResponses"] = json!({"relay-n1-1": {"action": "accept", "content": {}}});
    let r = h.modern_tasks(json!(2), "tools/call", again);
    let g = r.forward.clone().unwrap_or_else(|| panic!("refused: {}", r.body));
    assert!(g.admit.is_none(), "admitted twice: {g:?}");
    // The first exchange's answer records the task in the principal's holder.
    let task = json!({"task": {"taskId": "a-1", "status": "working", "createdAt": "2025-11-20T10:00:00Z",
                               "lastUpdatedAt": "2025-11-20T10:00:00Z", "ttl": 60_000, "pollInterval": 500}});
    let created = complete_with(&mut h, first, "gh-session", task);
    assert_eq!(created["result"]["resultType"], json!("task"), "{created}");
    let got = h.modern_tasks(json!(3), "tasks/get", json!({"taskId": "a-1"}));
    assert!(got.forward.is_some(), "alice's: {}", got.body);
    // One task held: the next call asking for one is at the caps.
    let refused = gateway_task(&mut h, "a-2", None);
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
}
