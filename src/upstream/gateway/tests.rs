//! Which upstream session a forward goes in, and what that session declares: a client's
//! `roots`, the session stateless callers share at a legacy-era upstream.

use serde_json::{json, Value};

use super::*;
use crate::upstream::{Machine, Step};

const LEGACY: &str = "2025-11-25";

/// A relaying gateway in front of `upstream` whose lists were fetched in a legacy-era session.
fn gateway(upstream: Value) -> Gateway {
    let up = Upstream::parse(Some(&upstream)).unwrap().unwrap();
    let mut g = Gateway::new(up).relaying().with_roots();
    let lists = UpstreamLink {
        session: Some("lists".into()),
        version: LEGACY.into(),
        next_id: 9,
    };
    g.members[0].conv = Conversation::resume(g.members[0].list_config(), lists);
    g
}

fn http() -> Gateway {
    gateway(json!({"url": "http://127.0.0.1:9/mcp"}))
}

fn call(roots: Option<Value>, link: Option<UpstreamLink>) -> Forward {
    Forward {
        id: json!(1),
        method: "tools/call".into(),
        params: json!({"name": "get-roots-list"}),
        stateless: link.is_none(),
        session: link.as_ref().map(|_| "s1".to_string()),
        link,
        roots,
        ..Forward::default()
    }
}

/// The first message the forward sends, and its `Mcp-Session-Id` header.
fn first(g: &mut Gateway, f: &Forward) -> (Value, Option<String>) {
    let (_, mut conv, mut ex) = g.forward(f).unwrap();
    let Step::Send(post) = ex.step(&mut conv).unwrap() else {
        panic!("nothing sent")
    };
    let session = post
        .headers
        .iter()
        .find(|(k, _)| k == "Mcp-Session-Id")
        .map(|(_, v)| v.clone());
    (serde_json::from_str(&post.body).unwrap(), session)
}

fn link(session: &str, next_id: u64) -> UpstreamLink {
    UpstreamLink {
        session: Some(session.into()),
        version: LEGACY.into(),
        next_id,
    }
}

#[test]
fn a_client_with_roots_gets_an_upstream_session_declaring_them() {
    let mut g = http();
    // The lists' session declares roots (tools offered only to such clients are listed).
    assert_eq!(g.members[0].list_config().capabilities["roots"], json!({}));
    let (init, _) = first(
        &mut g,
        &call(Some(json!({"listChanged": true})), Some(UpstreamLink::default())),
    );
    assert_eq!(init["method"], json!("initialize"));
    let caps = &init["params"]["capabilities"];
    assert_eq!(caps["roots"], json!({"listChanged": true}));
    assert!(caps.get("sampling").is_some() && caps.get("elicitation").is_some());
    // Declared without listChanged when the client did not declare it.
    let (init, _) = first(&mut g, &call(Some(json!({})), Some(UpstreamLink::default())));
    assert_eq!(init["params"]["capabilities"]["roots"], json!({}));
    // A client without roots: its session declares none.
    let (init, _) = first(&mut g, &call(None, Some(UpstreamLink::default())));
    assert!(init["params"]["capabilities"].get("roots").is_none());
    // A shell that reads no standalone stream (the Worker) declares none.
    let mut plain = Gateway::new(g.members[0].upstream.clone()).relaying();
    assert!(plain.members[0].list_config().capabilities.get("roots").is_none());
    let (_, conv, _) = plain
        .forward(&call(Some(json!({})), Some(UpstreamLink::default())))
        .unwrap();
    assert_eq!(conv, Conversation::new(plain.members[0].config.clone()));
    // A stdio process's one session is everyone's: never declared there.
    let mut g = gateway(json!({"command": "node", "args": ["x.js"]}));
    let f = call(Some(json!({"listChanged": true})), Some(UpstreamLink::default()));
    let (_, conv, _) = g.forward(&f).unwrap();
    assert_eq!(
        conv,
        Conversation::new(g.members[0].config.clone()).knowing(Era::Legacy)
    );
}

#[test]
fn stateless_callers_share_one_session_at_a_legacy_upstream() {
    let mut g = http();
    let f = call(None, None);
    // The first opens it (no roots declared) and it is kept.
    let (init, session) = first(&mut g, &f);
    assert_eq!((init["method"].as_str(), session), (Some("initialize"), None));
    assert!(init["params"]["capabilities"].get("roots").is_none());
    assert_eq!(g.stateless_done(0, &f, None, &link("A", 3)), None);
    // The next ones go in it, each with ids of its own.
    let (a, sa) = first(&mut g, &f);
    let (b, sb) = first(&mut g, &f);
    assert_eq!((sa.as_deref(), sb.as_deref()), (Some("A"), Some("A")));
    assert_eq!(a["method"], json!("tools/call"));
    assert_ne!(a["id"], b["id"]);
    assert_eq!(g.stateless_done(0, &f, Some("A"), &link("A", 5)), None);
    // One opened at the same time as the kept one served its call alone: closed.
    let closing = g.stateless_done(0, &f, None, &link("B", 3)).expect("closed");
    assert!(closing.contains(&("Mcp-Session-Id".into(), "B".into())));
    // The upstream forgot it (the exchange opened another): the new one is shared from now on.
    assert_eq!(g.stateless_done(0, &f, Some("A"), &link("C", 3)), None);
    assert_eq!(first(&mut g, &f).1.as_deref(), Some("C"));
    // The upstream forgot it, saying so with a 400 (as the SDK's example servers do): the
    // exchange opens another at once.
    let (_, mut conv, mut ex) = g.forward(&f).unwrap();
    assert!(matches!(ex.step(&mut conv).unwrap(), Step::Send(_)));
    let forgot = crate::upstream::HttpAnswer {
        status: 400,
        content_type: "application/json".into(),
        body: r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#.into(),
        ..Default::default()
    };
    ex.receive(&mut conv, forgot).unwrap();
    let Step::Send(again) = ex.step(&mut conv).unwrap() else {
        panic!()
    };
    // (Discovering its era first, as after a 404.)
    assert!(again.body.contains("\"server/discover\""), "{}", again.body);
    assert!(!again.headers.iter().any(|(k, _)| k == "Mcp-Session-Id"));
    // A stateless caller with roots gets a session of its own, declaring them, closed after.
    let rooted = call(Some(json!({})), None);
    let (init, session) = first(&mut g, &rooted);
    assert_eq!((init["method"].as_str(), session), (Some("initialize"), None));
    assert_eq!(init["params"]["capabilities"]["roots"], json!({}));
    assert!(g.stateless_done(0, &rooted, None, &link("D", 3)).is_some());
    assert_eq!(first(&mut g, &f).1.as_deref(), Some("C"));
}

#[test]
fn its_own_sessions_are_closed_as_its_process_ends() {
    let mut g = http();
    let session = |c: &[(usize, Vec<(String, String)>)]| -> Vec<String> {
        let id = |h: &Vec<(String, String)>| h.iter().find(|(k, _)| k == "Mcp-Session-Id").map(|(_, v)| v.clone());
        c.iter().filter_map(|(_, h)| id(h)).collect()
    };
    // The lists' session only, until a stateless caller opened the shared one.
    assert_eq!(session(&g.closing_own()), ["lists"]);
    let f = call(None, None);
    first(&mut g, &f);
    assert_eq!(g.stateless_done(0, &f, None, &link("A", 3)), None);
    assert_eq!(session(&g.closing_own()), ["A", "lists"]);
    // A stdio process's one session stays open (the process is stopped instead).
    let mut stdio = gateway(json!({"command": "node", "args": ["x.js"]}));
    stdio.members[0].shared = link("B", 3);
    assert!(stdio.closing_own().is_empty());
}

#[test]
fn a_clients_roots_change_reaches_its_upstream_sessions() {
    let g = http();
    let changed = br#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#;
    let mut s = Session {
        initialize: json!({"capabilities": {"roots": {"listChanged": true}}}).into(),
        upstream: Some(link("A", 7)),
        ..Session::default()
    };
    let mut sent = g.notifying(&s, changed);
    assert_eq!(sent.len(), 1);
    let (member, conv, ex) = &mut sent[0];
    let Step::Send(post) = ex.step(conv).unwrap() else {
        panic!()
    };
    assert_eq!(*member, 0);
    assert!(post.headers.contains(&("Mcp-Session-Id".into(), "A".into())));
    assert_eq!(
        serde_json::from_str::<Value>(&post.body).unwrap()["method"],
        json!("notifications/roots/list_changed")
    );
    // Nothing else is passed on; nor from a client without roots, nor to no session.
    assert!(g
        .notifying(&s, br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#)
        .is_empty());
    s.upstream = Some(UpstreamLink::default());
    assert!(g.notifying(&s, changed).is_empty());
    s.upstream = Some(link("A", 7));
    s.initialize = json!({"capabilities": {}}).into();
    assert!(g.notifying(&s, changed).is_empty());
}

#[test]
fn a_sessions_subscription_is_made_upstream_when_the_upstream_offers_them() {
    let mut g = http();
    let sub = Forward {
        method: "resources/subscribe".into(),
        params: json!({"uri": "demo://resource/static/document/architecture.md"}),
        ..call(None, Some(link("A", 3)))
    };
    // It offers none (or its lists are not known): answered here, nothing sent.
    let (_, mut conv, mut ex) = g.forward(&sub).unwrap();
    let Step::Done(reply) = ex.step(&mut conv).unwrap() else {
        panic!("sent upstream")
    };
    assert_eq!(reply.response.unwrap()["result"], json!({}));
    assert_eq!(conv.link(), link("A", 3), "the session's upstream session is kept");
    // It offers them: asked, in the session's own session there.
    g.members[0].lists = Some(Lists::new(json!({"capabilities": {"resources": {"subscribe": true}}})));
    let (sent, session) = first(&mut g, &sub);
    assert_eq!(
        (sent["method"].as_str(), session.as_deref()),
        (Some("resources/subscribe"), Some("A"))
    );
}
