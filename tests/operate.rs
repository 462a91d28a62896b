//! Operating a server (issue 42): rate limits (the document's `limits`: parsing, matching, token
//! bucket math, the refusal's shape), the reason a use was refused, and the audit record.
#![cfg(feature = "operate")]

use mcp_sieve::operate::audit::{self, Audit, Ended, Query};
use mcp_sieve::operate::limits::{Bucket, Limiter, Limits, Take};
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn server(extra: Value) -> Server {
    let mut doc = json!({
        "groups": [{"name": "github"}, {"name": "pulls", "parent": "github"}],
        "tools": [
            {"name": "gh_search", "inputSchema": {"type": "object"}, "groups": ["pulls"]},
            {"name": "gh_delete", "inputSchema": {"type": "object"}, "groups": ["github"], "tags": ["destructive"]},
            {"name": "echo", "inputSchema": {"type": "object"}}
        ],
        "prompts": [{"name": "greet"}]
    });
    for (k, v) in extra.as_object().unwrap() {
        doc[k] = v.clone();
    }
    Server::new(Catalog::load(&doc).unwrap())
}

fn env(principal: Option<&str>) -> Env {
    Env {
        now_ms: 1_000_000,
        principal: principal.map(str::to_string),
        ..Default::default()
    }
}

fn call(name: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": {"q": "x"}}})
        .to_string()
        .into_bytes()
}

fn take(rate: u32, window_ms: i64, burst: u32) -> Take {
    Take {
        id: "t".into(),
        key: "k".into(),
        burst,
        rate,
        window_ms,
    }
}

#[test]
fn a_bucket_allows_its_burst_then_asks_to_wait_for_the_next_token() {
    let t = take(3, 60_000, 3);
    let mut b = Bucket::full(&t, 0);
    for _ in 0..3 {
        b = b.take(&t, 0).unwrap();
    }
    // One token every 20 s.
    assert_eq!(b.take(&t, 0), Err(20_000));
    assert_eq!(b.take(&t, 15_000), Err(5_000));
    assert!(b.take(&t, 20_000).is_ok());
    // Never more than the burst, however long it waited; time going back adds nothing.
    let long = b.at(&t, 10_000_000);
    assert_eq!(long.tokens, 3.0);
    assert_eq!(b.at(&t, -5).tokens, b.tokens);
}

#[test]
fn burst_and_rate_differ() {
    // 60 per minute, 10 at once: ten pass at once, then one a second.
    let t = take(60, 60_000, 10);
    let mut b = Bucket::full(&t, 0);
    for _ in 0..10 {
        b = b.take(&t, 0).unwrap();
    }
    assert_eq!(b.take(&t, 0), Err(1000));
    assert!(b.take(&t, 1000).is_ok());
}

#[test]
fn a_limiter_takes_from_every_bucket_or_from_none() {
    let mut l = Limiter::default();
    let a = Take {
        id: "a".into(),
        ..take(1, 1000, 1)
    };
    let b = Take {
        id: "b".into(),
        ..take(5, 1000, 5)
    };
    l.take(&[a.clone(), b.clone()], 0).unwrap();
    // a is empty: refused, and b keeps its tokens (4 left, not 3).
    let r = l.take(&[a.clone(), b.clone()], 0).unwrap_err();
    assert_eq!((r.id.as_str(), r.retry_after_ms), ("a", 1000));
    for _ in 0..4 {
        l.take(std::slice::from_ref(&b), 0).unwrap();
    }
    assert!(l.take(&[b], 0).is_err());
}

#[test]
fn a_limiters_buckets_are_apart_whatever_text_their_ids_and_keys_hold() {
    let mut l = Limiter::default();
    // Ids and keys that written one after the other read the same ("a" + "1x", "a1" + "x").
    let t = |id: &str, key: &str| Take {
        id: id.into(),
        key: key.into(),
        ..take(1, 1000, 1)
    };
    l.take(&[t("a", "1x")], 0).unwrap();
    l.take(&[t("a1", "x")], 0).unwrap();
    l.take(&[t("1:a", "")], 0).unwrap();
    assert_eq!(l.kept(), 3);
    assert!(l.take(&[t("a", "1x")], 0).is_err());
    assert!(l.take(&[t("a1", "x")], 0).is_err());
}

#[test]
fn a_limiter_drops_full_buckets_past_ten_thousand_and_keeps_counting() {
    let mut l = Limiter::default();
    let per = |key: usize| Take {
        key: format!("p{key}"),
        ..take(1, 1000, 1)
    };
    for key in 0..10_001 {
        l.take(&[per(key)], 0).unwrap();
    }
    assert_eq!(l.kept(), 10_001);
    // Still empty at 500 ms: kept, and refused.
    assert!(l.take(&[per(7)], 500).is_err());
    // A second later every bucket is full again, as a new one would be: dropped, and the new
    // caller's bucket is the one kept.
    l.take(&[per(20_000)], 1_000).unwrap();
    assert_eq!(l.kept(), 1);
    assert!(l.take(&[per(20_000)], 1_000).is_err());
    l.take(&[per(7)], 1_000).unwrap();
    assert_eq!(l.kept(), 2);
}

#[test]
fn limits_match_as_policy_does_and_count_per_key() {
    let s = server(json!({"limits": {"rates": [
        {"id": "paid", "per": "principal", "match": {"tools": ["gh_*"], "principals": ["alice", "role:ops"]}, "rate": 3, "perSeconds": 60},
        {"id": "grp", "per": "group", "match": {"groups": ["github"]}, "rate": 100, "window": "1h", "burst": 10},
        {"id": "all", "per": "global", "match": {"methods": ["prompts/get"]}, "rate": 1, "window": "1m"}
    ]}}));
    let alice = s.use_of(&call("gh_search"), &env(Some("alice"))).unwrap();
    assert_eq!(alice.groups, ["pulls", "github"]);
    let takes = s.limits().takes(&alice);
    let keys: Vec<_> = takes.iter().map(|t| (t.id.as_str(), t.key.as_str())).collect();
    // Per group: only the groups match.groups names (github, which pulls is inside).
    assert_eq!(keys, [("paid", "alice"), ("grp", "github")]);
    assert_eq!((takes[1].burst, takes[1].window_ms), (10, 3_600_000));
    // Another principal, another tool: not under "paid".
    let bob = s.use_of(&call("gh_search"), &env(Some("bob"))).unwrap();
    assert!(s.limits().takes(&bob).iter().all(|t| t.id != "paid"));
    let echo = s.use_of(&call("echo"), &env(Some("alice"))).unwrap();
    assert!(s.limits().takes(&echo).is_empty());
    let prompt = json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "greet"}});
    let p = s.use_of(prompt.to_string().as_bytes(), &env(None)).unwrap();
    let keys: Vec<_> = s.limits().takes(&p).into_iter().map(|t| (t.id, t.key)).collect();
    assert_eq!(keys, [("all".to_string(), "*".to_string())]);
    // Not a use: lists, notifications, bodies that do not parse.
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call""#,
    ] {
        assert!(s.use_of(body.as_bytes(), &env(None)).is_none(), "{body}");
    }
}

#[test]
fn a_use_takes_from_its_buckets_as_its_takes_list_them() {
    let limits = |rate: u32, burst: u32| {
        server(json!({"limits": {"rates": [
            {"id": "per", "per": "principal", "rate": rate, "window": "1m", "burst": burst},
            {"id": "grp", "per": "group", "match": {"groups": ["github"]}, "rate": 1, "window": "1m"}
        ]}}))
    };
    let s = limits(1, 2);
    let mut l = Limiter::default();
    // echo counts against one bucket (alice's): the first use keeps it, the second finds it,
    // the third is refused naming it.
    let echo = s.use_of(&call("echo"), &env(Some("alice"))).unwrap();
    l.take_use(s.limits(), &echo, 0).unwrap();
    l.take_use(s.limits(), &echo, 0).unwrap();
    let r = l.take_use(s.limits(), &echo, 0).unwrap_err();
    assert_eq!(
        (r.id.as_str(), r.key.as_str(), r.retry_after_ms),
        ("per", "alice", 60_000)
    );
    assert_eq!(l.kept(), 1);
    // Another caller, no principal: a bucket of its own.
    let anonymous = s.use_of(&call("echo"), &env(None)).unwrap();
    l.take_use(s.limits(), &anonymous, 0).unwrap();
    assert_eq!(l.kept(), 2);
    // gh_delete counts against two (bob's and github's): from both or from neither.
    let delete = s.use_of(&call("gh_delete"), &env(Some("bob"))).unwrap();
    l.take_use(s.limits(), &delete, 0).unwrap();
    let r = l.take_use(s.limits(), &delete, 0).unwrap_err();
    assert_eq!(r.id, "grp");
    // The refused use took nothing: bob has one use of his two left.
    let bob = s.use_of(&call("echo"), &env(Some("bob"))).unwrap();
    l.take_use(s.limits(), &bob, 0).unwrap();
    assert_eq!(l.take_use(s.limits(), &bob, 0).unwrap_err().id, "per");
    // A reload that made the limit faster (one a second): alice's kept bucket refills as the new
    // limit says, not as the one it was kept under (one a minute).
    let faster = limits(60, 5);
    assert!(l.take_use(s.limits(), &echo, 1_000).is_err());
    l.take_use(faster.limits(), &echo, 1_000).unwrap();
}

#[test]
fn a_use_is_read_as_the_core_reads_the_request_repeated_keys_and_escapes_included() {
    let s = server(json!({}));
    // A repeated key: the last one counts (as the core's parser reads it), so a client cannot
    // name one tool to the limits and call another.
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"gh_delete"}}"#;
    assert_eq!(s.use_of(body, &env(None)).unwrap().item, "gh_delete");
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","method":"tools/call","params":{"name":"echo"}}"#;
    assert_eq!(s.use_of(body, &env(None)).unwrap().method, "tools/call");
    // An escaped method is the same method: counted and audited like any other.
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"echo"}}"#;
    assert_eq!(s.use_of(body, &env(None)).unwrap().method, "tools/call");
    // An escaped name, a task, the arguments kept for audit payloads.
    let body = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"gh_\u0064elete","task":{},"arguments":{"q":1}}}"#;
    let u = s.use_of(body, &env(None)).unwrap();
    assert_eq!(
        (u.item.as_str(), u.task, &u.arguments, &u.id),
        ("gh_delete", true, &json!({"q": 1}), &json!("a"))
    );
    let body = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","task":null}}"#;
    assert!(!s.use_of(body, &env(None)).unwrap().task);
    // A name that is not a string, params or a request that are not objects: not a use.
    for body in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["echo"]}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
        r#"["tools/call",1,{"name":"echo"}]"#,
    ] {
        assert!(s.use_of(body.as_bytes(), &env(None)).is_none(), "{body}");
    }
}

#[test]
fn the_fourth_call_is_refused_naming_the_limit_and_when_to_retry() {
    let s = server(json!({"limits": {"rates": [
        {"id": "paid-api", "match": {"tools": ["gh_search"]}, "rate": 3, "perSeconds": 60}
    ]}}));
    let mut l = Limiter::default();
    let u = s.use_of(&call("gh_search"), &env(Some("alice"))).unwrap();
    for _ in 0..3 {
        l.take(&s.limits().takes(&u), 0).unwrap();
    }
    let r = l.take(&s.limits().takes(&u), 0).unwrap_err();
    assert_eq!(r.reason(), "rate-limit:paid-api");
    let resp = mcp_sieve::operate::refused(&r, &json!(7));
    assert_eq!(resp.status, 429);
    assert!(resp.headers.contains(&("Retry-After".into(), "20".into())));
    let body: Value = serde_json::from_str(&resp.body).unwrap();
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -32602);
    assert_eq!(
        body["error"]["data"],
        json!({"limit": "paid-api", "retryAfterMs": 20000, "reason": "rate-limit:paid-api"})
    );
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("rate limit \"paid-api\" reached: 3 uses per 1 min for alice; retry in 20 s"),
        "{msg}"
    );
}

#[test]
fn limit_documents_with_mistakes_are_refused_naming_the_field() {
    for (limits, wanted) in [
        (
            json!({"rates": [{"rate": 3, "perSeconds": 1}]}),
            "limits.rates[0].id is required",
        ),
        (
            json!({"rates": [{"id": "a", "perSeconds": 1}]}),
            "limits.rates[0].rate is required",
        ),
        (json!({"rates": [{"id": "a", "rate": 1}]}), "needs its window"),
        (
            json!({"rates": [{"id": "a", "rate": 1, "window": "1w"}]}),
            "\"1w\" is not a duration",
        ),
        (
            json!({"rates": [{"id": "a", "rate": 1, "window": "1m", "per": "planet"}]}),
            "per \"planet\" is not known",
        ),
        (
            json!({"rates": [{"id": "a", "rate": 0, "window": "1m"}]}),
            "rate must be an integer from 1",
        ),
        (
            json!({"rates": [{"id": "a", "rate": 1, "window": "1m", "match": {"tool": []}}]}),
            "unknown field \"tool\"",
        ),
        (
            json!({"rates": [{"id": "a", "rate": 1, "window": "1m", "match": {"methods": ["tools/list"]}}]}),
            "not a use",
        ),
        (
            json!({"rates": [{"id": "a", "rate": 1, "window": "1m"}, {"id": "a", "rate": 1, "window": "1m"}]}),
            "must be unique",
        ),
        (json!({"rate": []}), "limits has an unknown field \"rate\""),
    ] {
        let e = Limits::parse(Some(&limits)).unwrap_err().to_string();
        assert!(e.contains(wanted), "{limits}: {e}");
    }
}

#[test]
fn a_refused_use_names_the_policy_rule_or_unknown() {
    let s = server(json!({"policy": {"rules": [
        {"id": "no-destructive", "when": {"principal": "bob"}, "hide": {"tags": ["destructive"]}}
    ]}}));
    let e = env(Some("bob"));
    let u = s.use_of(&call("gh_delete"), &e).unwrap();
    assert_eq!(s.refusal_reason(&u, &e).as_deref(), Some("policy:no-destructive"));
    let u = s.use_of(&call("nope"), &e).unwrap();
    assert_eq!(s.refusal_reason(&u, &e).as_deref(), Some("unknown"));
    let u = s.use_of(&call("echo"), &e).unwrap();
    assert_eq!(s.refusal_reason(&u, &e), None);
}

#[test]
fn an_audit_record_holds_the_use_and_payloads_only_when_asked_redacted() {
    let s = server(json!({}));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "mail bob@example.com"}, "task": {"ttl": 1000}}});
    let u = s.use_of(body.to_string().as_bytes(), &env(Some("alice"))).unwrap();
    let ended = Ended::of_body(
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"reply to carol@example.org"}]}}"#,
    );
    let plain: Value = serde_json::from_str(&audit::record(&u, 0, 12, None, &ended, None)).unwrap();
    assert_eq!(
        plain,
        json!({"time": "1970-01-01T00:00:00.000Z", "principal": "alice", "view": null, "method": "tasks/create",
               "item": "echo", "decision": "allowed", "reason": "allowed", "upstream": null, "durationMs": 12, "outcome": "ok"})
    );
    let full: Value = serde_json::from_str(&audit::record(&u, 0, 12, None, &ended, Some(16_384))).unwrap();
    assert_eq!(full["arguments"]["text"], "mail [EMAIL_1]");
    assert!(!full.to_string().contains("bob@example.com"));
    assert!(!full.to_string().contains("carol@example.org"), "{full}");
    let refused = Ended::of_body(
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"x\"}}\n\n",
    );
    let r: Value = serde_json::from_str(&audit::record(&u, 0, 1, Some("rate-limit:paid"), &refused, None)).unwrap();
    assert_eq!(
        (
            r["decision"].as_str(),
            r["reason"].as_str(),
            r["outcome"].as_str(),
            r["errorCode"].as_i64()
        ),
        (Some("refused"), Some("rate-limit:paid"), Some("error"), Some(-32602))
    );
}

#[test]
fn a_body_the_core_refuses_is_recorded_as_refused_with_its_code() {
    let s = server(json!({}));
    let e = env(Some("alice"));
    // A string past the body limits: the core answers -32600 and runs nothing.
    let big = "a".repeat(300 * 1024);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": big}}})
        .to_string();
    let rejected = mcp_sieve::protocol::jsonrpc::parse(body.as_bytes(), &Default::default()).unwrap_err();
    let answer = mcp_sieve::protocol::jsonrpc::error(&json!(1), &rejected.1);
    let ended = Ended::of_body(&answer);
    assert_eq!(ended.error_code, Some(-32600), "{answer}");
    let u = s.use_of(body.as_bytes(), &e).unwrap();
    let reason = s.refusal_for(&u, &e, ended.error_code);
    assert_eq!(reason.as_deref(), Some("invalid-request"));
    let r: Value = serde_json::from_str(&audit::record(&u, 0, 1, reason.as_deref(), &ended, None)).unwrap();
    assert_eq!(
        (r["decision"].as_str(), r["reason"].as_str(), r["errorCode"].as_i64()),
        (Some("refused"), Some("invalid-request"), Some(-32600))
    );
    // Unusable items as before; other errors (an upstream's, a tool's) are no refusal.
    let u = s.use_of(&call("nope"), &e).unwrap();
    assert_eq!(s.refusal_for(&u, &e, Some(-32602)).as_deref(), Some("unknown"));
    assert_eq!(s.refusal_for(&u, &e, Some(-32002)).as_deref(), Some("unknown"));
    assert_eq!(s.refusal_for(&u, &e, Some(-32700)).as_deref(), Some("parse-error"));
    assert_eq!(s.refusal_for(&u, &e, Some(-32020)).as_deref(), Some("header-mismatch"));
    let u = s.use_of(&call("echo"), &e).unwrap();
    assert_eq!(s.refusal_for(&u, &e, Some(-32603)), None);
    assert_eq!(s.refusal_for(&u, &e, None), None);
}

#[test]
fn payloads_in_a_record_are_cut_at_their_cap_and_marked() {
    let s = server(json!({}));
    let args = json!({"a": "x".repeat(215 * 1024), "b": "\"quoted\" ".repeat(20_000), "c": "mail bob@example.com"});
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": args}});
    let u = s.use_of(body.to_string().as_bytes(), &env(None)).unwrap();
    let ended = Ended::of_body(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"short"}]}}"#);
    let line = audit::record(&u, 0, 1, None, &ended, Some(16_384));
    assert!(line.len() < 17 * 1024, "{} bytes", line.len());
    let r: Value = serde_json::from_str(&line).unwrap();
    let cut = r["arguments"].as_str().expect("the arguments' text, cut");
    assert!(cut.starts_with("{\"a\":\"xxx"), "{}", &cut[..40]);
    assert!(serde_json::to_string(cut).unwrap().len() <= 16_384 + 2);
    assert_eq!(r["argumentsTruncated"], json!(true));
    assert_eq!(
        r["argumentsBytes"].as_u64(),
        Some(audit::redacted(&u.arguments).to_string().len() as u64)
    );
    // A payload within its cap is kept whole, unmarked.
    assert_eq!(r["result"]["content"][0]["text"], "short");
    assert!(r.get("resultTruncated").is_none());
    // A cut falls between characters, whatever their width.
    let wide = json!({"name": "echo", "arguments": {"t": "é€😀".repeat(10_000)}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": wide});
    let u = s.use_of(body.to_string().as_bytes(), &env(None)).unwrap();
    for cap in [256, 257, 258, 259, 1000] {
        let r: Value = serde_json::from_str(&audit::record(&u, 0, 1, None, &ended, Some(cap))).unwrap();
        assert!(r["arguments"].as_str().unwrap().len() <= cap);
    }
    // The cap is the document's, at least 256 bytes.
    let a = Audit::parse(Some(&json!({"stdout": true, "payloads": true}))).unwrap();
    assert_eq!(a.payload_cap(), Some(16_384));
    let a = Audit::parse(Some(
        &json!({"stdout": true, "payloads": true, "maxPayloadBytes": 4096}),
    ))
    .unwrap();
    assert_eq!(a.payload_cap(), Some(4096));
    assert_eq!(
        Audit::parse(Some(&json!({"stdout": true}))).unwrap().payload_cap(),
        None
    );
    let e = Audit::parse(Some(&json!({"maxPayloadBytes": 10})))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("audit.maxPayloadBytes must be an integer of at least 256"),
        "{e}"
    );
}

#[test]
fn del_and_c1_controls_are_escaped_in_a_record_like_c0() {
    let s = server(json!({}));
    let name = "e\u{7f}c\u{85}h\u{9b}o\u{1b}\u{a0}";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {"t": "\u{9f}"}}});
    let u = s.use_of(body.to_string().as_bytes(), &env(None)).unwrap();
    let line = audit::record(&u, 0, 1, Some("unknown"), &Ended::unknown(), Some(16_384));
    assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
    for escaped in ["\\u007f", "\\u0085", "\\u009b", "\\u001b", "\\u009f"] {
        assert!(line.contains(escaped), "{escaped} in {line}");
    }
    // The same text once read back; U+00A0 is no control and stays as it is.
    let r: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(r["item"], name);
    assert_eq!(r["arguments"]["t"], "\u{9f}");
    assert!(line.contains('\u{a0}'));
    assert_eq!(audit::escape_controls("{\"a\":1}".into()), "{\"a\":1}");
}

#[test]
fn metrics_count_items_the_server_does_not_have_as_one_name() {
    let s = server(json!({"resourceTemplates": [{"uriTemplate": "file:///logs/{day}", "name": "log"}]}));
    let e = env(None);
    let item = |body: Value| {
        let u = s.use_of(body.to_string().as_bytes(), &e).unwrap();
        s.counted_item(&u).map(str::to_string)
    };
    assert_eq!(
        item(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}})).as_deref(),
        Some("echo")
    );
    assert_eq!(
        item(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "made_up_1"}})),
        None
    );
    assert_eq!(
        item(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "greet"}})).as_deref(),
        Some("greet")
    );
    assert_eq!(
        item(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "echo"}})),
        None
    );
    // A URI a template serves counts under the template, not one series a URI.
    assert_eq!(
        item(
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///logs/2026-11-27"}})
        )
        .as_deref(),
        Some("file:///logs/{day}")
    );
    assert_eq!(
        item(json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "file:///etc/x"}})),
        None
    );
    assert_eq!(mcp_sieve::operate::UNKNOWN_ITEM, "unknown");
    // Label values are cut at 128 bytes, between characters.
    let long = "é".repeat(100);
    assert_eq!(mcp_sieve::operate::label_value(&long).len(), 128);
    let odd = format!("a{long}");
    assert_eq!(mcp_sieve::operate::label_value(&odd).len(), 127);
    assert_eq!(mcp_sieve::operate::label_value("echo"), "echo");
}

#[test]
fn audit_settings_and_queries() {
    let a = Audit::parse(Some(
        &json!({"file": "a.jsonl", "maxBytes": 2048, "keep": 2, "payloads": true}),
    ))
    .unwrap();
    assert_eq!(
        (a.on, a.file.as_deref(), a.max_bytes, a.keep, a.payloads),
        (true, Some("a.jsonl"), 2048, 2, true)
    );
    assert!(!Audit::parse(None).unwrap().on);
    for (v, wanted) in [
        (json!({"file": "a", "stdout": true}), "choose one sink"),
        (
            json!({"maxBytes": 10}),
            "audit.maxBytes must be an integer of at least 1024",
        ),
        (json!({"files": "a"}), "unknown field \"files\""),
        (json!("a.jsonl"), "audit must be an object"),
    ] {
        let e = Audit::parse(Some(&v)).unwrap_err().to_string();
        assert!(e.contains(wanted), "{v}: {e}");
    }
    let now = 10 * 86_400_000;
    let q = Query {
        item: Some("delete_*".into()),
        principal: None,
        since_ms: Some(audit::since("7d", now).unwrap()),
    };
    let rec = |item: &str, day: i64| json!({"item": item, "principal": "a", "time": mcp_sieve::time::format_iso(day * 86_400_000, 0)});
    assert!(q.keeps(&rec("delete_repo", 5)));
    assert!(!q.keeps(&rec("delete_repo", 2)));
    assert!(!q.keeps(&rec("create_repo", 5)));
    assert_eq!(audit::since("1970-01-02", now).unwrap(), 86_400_000);
    assert!(audit::since("soon", now)
        .unwrap_err()
        .to_string()
        .contains("neither a duration"));
}

#[test]
fn explain_names_the_rate_limits_a_use_counts_against_without_hiding_the_item() {
    use mcp_sieve::protocol::Incoming;
    let s = server(json!({"explain": true, "limits": {"rates": [
        {"id": "paid-api", "match": {"tools": ["gh_*"]}, "rate": 3, "perSeconds": 60}
    ]}}));
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}});
    let ask = |name: &str| {
        let msg = Incoming::Request {
            id: json!(1),
            method: "sieve/explain".into(),
            params: json!({"name": name, "_meta": meta}),
            kept: Default::default(),
        };
        let out = s.handle(msg, &mut None, &env(Some("alice")));
        let v: Value = serde_json::from_str(&out.response.unwrap()).unwrap();
        v["result"].clone()
    };
    let r = ask("gh_search");
    assert_eq!(
        (r["visible"].as_bool(), r["callable"].as_bool()),
        (Some(true), Some(true)),
        "{r}"
    );
    assert!(r.get("cause").is_none(), "{r}");
    assert_eq!(r["reasons"][0]["code"], "rate-limit:paid-api");
    assert_eq!(r["reasons"][0]["key"], "alice");
    assert_eq!(r["reasons"][0]["windowMs"], 60000);
    assert_eq!(ask("echo")["reasons"], json!([]));
}
