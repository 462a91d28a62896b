//! Which protocol era the gateway speaks to each upstream (`upstream::Era`): `server/discover`
//! first; 2026-07-28 statelessly to an upstream that offers it — checked against this crate's own
//! server (`http::handle`, the rules a chained mcp-sieve applies), so the requests are exactly
//! what a modern server expects — and a session of the newest legacy version to the rest
//! (negotiated down when refused), discovered again after a version error.

mod common;

use common::{run, Harness};
use mcp_sieve::catalog::Upstream;
use mcp_sieve::http;
use mcp_sieve::protocol::{Forward, UpstreamLink};
use mcp_sieve::upstream::{Conversation, Era, Gateway, HttpAnswer, Post, Serving};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn header<'a>(post: &'a Post, name: &str) -> Option<&'a str> {
    post.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// `post` answered by a real mcp-sieve server (the default catalog) through `http::handle`.
fn sieve(h: &mut Harness, post: &Post) -> HttpAnswer {
    let extra: Vec<(&str, &str)> = post.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let (session, version) = (h.session.take(), h.protocol_version.take());
    let r: http::Response = h.post_raw(&post.body, &extra);
    (h.session, h.protocol_version) = (session, version);
    let find = |name: &str| {
        r.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    HttpAnswer {
        status: r.status,
        session: find("mcp-session-id"),
        content_type: find("content-type").unwrap_or_default(),
        body: r.body,
    }
}

fn json_answer(status: u16, v: Value) -> HttpAnswer {
    HttpAnswer {
        status,
        session: None,
        content_type: "application/json".into(),
        body: v.to_string(),
    }
}

/// A legacy upstream as the official SDK's stateful transport is: a request without a session
/// other than `initialize` is HTTP 400; `initialize` answers `version` (or, when `only` is set,
/// refuses any other version, naming `only`).
struct Legacy {
    only: Option<&'static str>,
    sessions: u32,
}

impl Legacy {
    fn answer(&mut self, msg: &Value, post: &Post) -> HttpAnswer {
        let id = msg["id"].clone();
        match msg["method"].as_str().unwrap() {
            "initialize" => {
                let asked = msg["params"]["protocolVersion"].as_str().unwrap().to_string();
                if let Some(only) = self.only.filter(|o| *o != asked) {
                    return json_answer(
                        200,
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "Unsupported protocol version",
                               "data": {"supported": [only], "requested": asked}}}),
                    );
                }
                self.sessions += 1;
                HttpAnswer {
                    session: Some(format!("s{}", self.sessions)),
                    ..json_answer(
                        200,
                        json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": asked,
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "1"}}}),
                    )
                }
            }
            _ if header(post, "mcp-session-id").is_none() => json_answer(
                400,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}),
            ),
            "notifications/initialized" => HttpAnswer {
                status: 202,
                ..Default::default()
            },
            "tools/list" => json_answer(
                200,
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "old", "inputSchema": {"type": "object"}}]}}),
            ),
            _ => json_answer(
                200,
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [], "params": msg["params"]}}),
            ),
        }
    }
}

fn up() -> Upstream {
    let doc = json!({"upstream": {"url": "http://127.0.0.1:9/mcp", "refreshSeconds": 60}});
    Catalog::load(&doc).unwrap().upstreams[0].clone()
}

fn call(name: &str, args: Value) -> Forward {
    Forward {
        id: json!(1),
        method: "tools/call".into(),
        params: json!({"name": name, "arguments": args}),
        ..Forward::default()
    }
}

#[test]
fn an_upstream_offering_2026_07_28_is_spoken_to_statelessly() {
    let mut sieve_up = Harness::new();
    let mut gw = Gateway::new(up());
    let Serving::Refresh(mut jobs) = gw.serving(1_000) else {
        panic!("a cold gateway refreshes")
    };
    let mut job = jobs.pop().unwrap();
    let mut posts = Vec::new();
    let (lists, sent) = run(&mut job.conv, &mut job.refresh, |_, p| {
        posts.push(p.clone());
        sieve(&mut sieve_up, p)
    });
    let lists = lists.unwrap();
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods[0], "server/discover");
    assert!(!methods.contains(&"initialize"), "no initialize: {methods:?}");
    assert!(
        methods.contains(&"tools/list") && methods.contains(&"prompts/list"),
        "{methods:?}"
    );
    for (p, m) in posts.iter().zip(&sent) {
        assert_eq!(header(p, "MCP-Protocol-Version"), Some("2026-07-28"));
        assert_eq!(header(p, "Mcp-Method"), m["method"].as_str());
        assert_eq!(header(p, "Mcp-Session-Id"), None);
        let meta = &m["params"]["_meta"];
        assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], json!("2026-07-28"));
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            json!("mcp-sieve-gateway")
        );
        assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    }
    assert_eq!(lists.items(mcp_sieve::model::Kind::Tool).len(), 74);
    assert_eq!(
        lists.initialize["serverInfo"]["name"],
        sieve_up.server.catalog().server["name"]
    );
    assert_eq!(job.conv.era(), Era::Modern);
    assert_eq!(job.conv.session_id(), None);
    let local = Catalog::load(&json!({"upstream": {"url": "http://127.0.0.1:9/mcp"}})).unwrap();
    gw.refreshed(&local, vec![(job, Ok(lists))], 1_000).unwrap();
    let status = gw.status(1_000);
    assert_eq!(status["upstreams"][0]["protocolVersion"], json!("2026-07-28"));
    assert_eq!(status["upstreams"][0]["stateless"], json!(true));

    // A forwarded call: stateless at once (no discover again), its name mirrored in Mcp-Name.
    let (_, mut conv, mut ex) = gw.forward(&call("echo", json!({"text": "hi"}))).unwrap();
    let mut posts = Vec::new();
    let (reply, sent) = run(&mut conv, &mut ex, |_, p| {
        posts.push(p.clone());
        sieve(&mut sieve_up, p)
    });
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(header(&posts[0], "Mcp-Name"), Some("echo"));
    let reply = reply.unwrap();
    assert_eq!(
        reply.result("tools/call").unwrap()["resultType"],
        json!("complete"),
        "{reply:?}"
    );
    // What a downstream session remembers: no session there, the version it speaks.
    assert_eq!(
        conv.link(),
        UpstreamLink {
            session: None,
            version: "2026-07-28".into(),
            next_id: 2
        }
    );
    // A session's remembered link goes on statelessly too.
    let resumed = Forward {
        link: Some(conv.link()),
        ..call("echo", json!({"text": "again"}))
    };
    let (_, mut conv, mut ex) = gw.forward(&resumed).unwrap();
    let (reply, sent) = run(&mut conv, &mut ex, |_, p| sieve(&mut sieve_up, p));
    assert_eq!(sent.len(), 1);
    assert!(reply.unwrap().result("tools/call").is_ok());
}

/// `method` with `params` sent statelessly (2026-07-28) to a real mcp-sieve server: its reply and
/// the POSTs that carried it.
fn modern_request(
    h: &mut Harness,
    method: &str,
    params: Value,
) -> (Result<mcp_sieve::upstream::Reply, mcp_sieve::Error>, Vec<Post>) {
    let mut conv = Conversation::new(mcp_sieve::upstream::ClientConfig {
        discover: true,
        // A client that may use tasks/* (SEP-2663).
        capabilities: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        ..Default::default()
    })
    .knowing(Era::Modern);
    let mut ex = conv.request(method, params);
    let mut posts = Vec::new();
    let (reply, _) = run(&mut conv, &mut ex, |_, p| {
        posts.push(p.clone());
        sieve(h, p)
    });
    (reply, posts)
}

#[test]
fn a_name_outside_visible_ascii_is_mirrored_in_base64() {
    let mut sieve_up = Harness::new();
    let (reply, posts) = modern_request(&mut sieve_up, "tools/call", json!({"name": "café", "arguments": {}}));
    assert_eq!(header(&posts[0], "Mcp-Name"), Some("=?base64?Y2Fmw6k=?="));
    // The header agreed with the body (no -32020): the upstream looked the tool up.
    let e = reply.unwrap().response.unwrap();
    assert_eq!(e["error"]["code"], json!(-32602), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("Unknown tool"), "{e}");
}

#[test]
fn a_task_request_mirrors_its_task_id_in_mcp_name_and_a_server_checks_it() {
    // SEP-2663's HTTP binding: tasks/get, tasks/update and tasks/cancel carry `Mcp-Name: <taskId>`
    // (the official SDK v2's server requires it).
    let mut sieve_up = Harness::new();
    let (reply, posts) = modern_request(&mut sieve_up, "tasks/get", json!({"taskId": "t-1"}));
    assert_eq!(header(&posts[0], "Mcp-Name"), Some("t-1"));
    // The header agreed with the body: the server looked the task up.
    let e = reply.unwrap().response.unwrap();
    assert_eq!(e["error"]["code"], json!(-32602), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("task"), "{e}");
    // Naming another task in the header is refused before the method runs.
    let mut wrong = posts[0].clone();
    for (k, v) in wrong.headers.iter_mut() {
        if k == "Mcp-Name" {
            *v = "t-2".into();
        }
    }
    let answer: Value = serde_json::from_str(&sieve(&mut sieve_up, &wrong).body).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32020), "{answer}");
    assert!(
        answer["error"]["message"].as_str().unwrap().contains("params.taskId"),
        "{answer}"
    );
    // Without it the task is still looked up (clients written before the binding poll so).
    let mut bare = posts[0].clone();
    bare.headers.retain(|(k, _)| k != "Mcp-Name");
    let answer: Value = serde_json::from_str(&sieve(&mut sieve_up, &bare).body).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32602), "{answer}");
}

#[test]
fn a_legacy_upstream_gets_a_session_and_is_not_asked_again() {
    let mut legacy = Legacy {
        only: None,
        sessions: 0,
    };
    let mut gw = Gateway::new(up());
    let Serving::Refresh(mut jobs) = gw.serving(1_000) else {
        panic!()
    };
    let mut job = jobs.pop().unwrap();
    let (lists, sent) = run(&mut job.conv, &mut job.refresh, |m, p| legacy.answer(m, p));
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    assert_eq!(sent[1]["params"]["protocolVersion"], json!("2025-11-25"));
    assert_eq!(job.conv.era(), Era::Legacy);
    let local = Catalog::load(&json!({"upstream": {"url": "http://127.0.0.1:9/mcp"}})).unwrap();
    gw.refreshed(&local, vec![(job, lists)], 1_000).unwrap();
    assert_eq!(gw.status(1_000)["upstreams"][0]["protocolVersion"], json!("2025-11-25"));
    // A stateless downstream request opens its own session, without asking server/discover.
    // The envelope of a modern downstream client is not passed on: the upstream would read it
    // as a 2026-07-28 request.
    let mut f = call("old", json!({}));
    f.params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": 5});
    let (_, mut conv, mut ex) = gw.forward(&f).unwrap();
    let mut posts = Vec::new();
    let (reply, sent) = run(&mut conv, &mut ex, |m, p| {
        posts.push(p.clone());
        legacy.answer(m, p)
    });
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["initialize", "notifications/initialized", "tools/call"]);
    assert_eq!(header(&posts[2], "MCP-Protocol-Version"), Some("2025-11-25"));
    assert_eq!(header(&posts[2], "Mcp-Session-Id"), Some("s2"));
    let echoed = &reply.unwrap().response.unwrap()["result"]["params"];
    assert_eq!(echoed["_meta"], json!({"progressToken": 5}), "{echoed}");
}

#[test]
fn initialize_is_negotiated_down_to_a_version_the_upstream_names() {
    let mut legacy = Legacy {
        only: Some("2025-03-26"),
        sessions: 0,
    };
    let mut conv = Conversation::new(mcp_sieve::upstream::ClientConfig {
        discover: true,
        // A client that may use tasks/* (SEP-2663).
        capabilities: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        ..Default::default()
    });
    let mut ex = conv.request("tools/list", json!({}));
    let (reply, sent) = run(&mut conv, &mut ex, |m, p| legacy.answer(m, p));
    let asked: Vec<&Value> = sent
        .iter()
        .filter(|m| m["method"] == "initialize")
        .map(|m| &m["params"]["protocolVersion"])
        .collect();
    assert_eq!(asked, [&json!("2025-11-25"), &json!("2025-03-26")]);
    assert!(reply.unwrap().result("tools/list").is_ok());
    assert_eq!(conv.protocol_version(), "2025-03-26");
    // An upstream that names none of ours: the refusal is the error.
    let mut odd = Legacy {
        only: Some("2024-01-01"),
        sessions: 0,
    };
    let mut conv = Conversation::new(mcp_sieve::upstream::ClientConfig {
        discover: true,
        // A client that may use tasks/* (SEP-2663).
        capabilities: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        ..Default::default()
    });
    let mut ex = conv.request("tools/list", json!({}));
    let (reply, _) = run(&mut conv, &mut ex, |m, p| odd.answer(m, p));
    assert!(reply.unwrap_err().to_string().contains("Unsupported protocol version"));
}

#[test]
fn a_version_error_makes_the_era_discovered_again() {
    // The upstream spoke 2026-07-28 when the lists were fetched; now a legacy server answers there.
    let mut legacy = Legacy {
        only: None,
        sessions: 0,
    };
    let mut conv = Conversation::new(mcp_sieve::upstream::ClientConfig {
        discover: true,
        // A client that may use tasks/* (SEP-2663).
        capabilities: json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
        ..Default::default()
    })
    .knowing(Era::Modern);
    let mut ex = conv.request("tools/call", json!({"name": "old", "arguments": {}}));
    let (reply, sent) = run(&mut conv, &mut ex, |m, p| legacy.answer(m, p));
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        [
            "tools/call",
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/call"
        ]
    );
    assert!(reply.unwrap().result("tools/call").is_ok());
    assert_eq!((conv.era(), conv.discovered()), (Era::Legacy, true));
    // -32022 from a modern upstream (it moved on to another version): discovered again, once.
    let mut sieve_up = Harness::new();
    let mut conv = Conversation::resume(
        mcp_sieve::upstream::ClientConfig {
            discover: true,
            ..Default::default()
        },
        UpstreamLink {
            session: Some("gone".into()),
            version: "2025-11-25".into(),
            next_id: 5,
        },
    );
    let mut ex = conv.request("tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let mut first = true;
    let (reply, sent) = run(&mut conv, &mut ex, |_, p| {
        if std::mem::take(&mut first) {
            return json_answer(
                400,
                json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}}),
            );
        }
        sieve(&mut sieve_up, p)
    });
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["tools/call", "server/discover", "tools/call"]);
    assert!(reply.unwrap().result("tools/call").is_ok());
    assert_eq!(conv.era(), Era::Modern);
}

#[test]
fn a_forwarded_exchange_that_finds_another_era_refetches_the_lists_in_it() {
    let mut legacy = Legacy {
        only: None,
        sessions: 0,
    };
    let mut sieve_up = Harness::new();
    let mut gw = Gateway::new(up());
    let Serving::Refresh(mut jobs) = gw.serving(1_000) else {
        panic!()
    };
    let mut job = jobs.pop().unwrap();
    let (lists, _) = run(&mut job.conv, &mut job.refresh, |m, p| legacy.answer(m, p));
    let local = Catalog::load(&json!({"upstream": {"url": "http://127.0.0.1:9/mcp"}})).unwrap();
    gw.refreshed(&local, vec![(job, lists)], 1_000).unwrap();
    assert!(matches!(gw.serving(1_001), Serving::Ready(_)));
    // mcp-sieve took the legacy server's place: the forwarded call's session is unknown there
    // (404), so the call discovers it, and the gateway fetches the lists again, statelessly.
    let mut f = call("echo", json!({"text": "x"}));
    f.link = Some(UpstreamLink {
        session: Some("s9".into()),
        version: "2025-11-25".into(),
        next_id: 3,
    });
    let (member, mut conv, mut ex) = gw.forward(&f).unwrap();
    let (reply, sent) = run(&mut conv, &mut ex, |_, p| sieve(&mut sieve_up, p));
    assert_eq!(sent[1]["method"], json!("server/discover"), "{sent:?}");
    assert!(reply.unwrap().result("tools/call").is_ok());
    gw.note_changes(member, &mut conv);
    let Serving::Refresh(mut jobs) = gw.serving(1_002) else {
        panic!("the lists are fetched again in the era found")
    };
    let mut job = jobs.pop().unwrap();
    let (lists, sent) = run(&mut job.conv, &mut job.refresh, |_, p| sieve(&mut sieve_up, p));
    assert!(lists.is_ok());
    let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
    assert_eq!(methods[..2], ["server/discover", "tools/list"]);
    assert!(!methods.contains(&"initialize"));
}
