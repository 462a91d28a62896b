//! List changes that reach clients (issue 14, item 3): a 2025-11-25 session's GET stream and the
//! 2026-07-28 `subscriptions/listen`, each a `Watch` the shell ticks with the current server.

mod common;

use common::{header_fn, messages, Harness, CATALOG};
use mcp_sieve::http;
use mcp_sieve::protocol::Env;
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn get(h: &mut Harness, accept: &str, session: Option<&str>) -> http::Response {
    let mut hs = vec![("accept".to_string(), accept.to_string())];
    if let Some(s) = session {
        hs.push(("mcp-session-id".into(), s.into()));
    }
    let header = header_fn(hs, &[]);
    let env = Env {
        now_ms: h.now_ms,
        fresh_id: "x".into(),
        ..Default::default()
    };
    let req = http::Request {
        method: "GET",
        header: &header,
        body: &[],
    };
    http::handle(&h.server, &http::Config::default(), req, &mut h.store, &env)
}

/// The default catalog with one more tool.
fn grown() -> Catalog {
    let mut doc: Value = serde_json::from_str(CATALOG).unwrap();
    doc["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "brand_new", "inputSchema": {}}));
    Catalog::load(&doc).unwrap()
}

#[test]
fn a_sessions_get_stream_reports_list_changes() {
    let mut h = Harness::new();
    h.init();
    let sid = h.session.clone().unwrap();
    assert_eq!(get(&mut h, "application/json", Some(&sid)).status, 406);
    assert_eq!(get(&mut h, "text/event-stream", None).status, 400);
    assert_eq!(get(&mut h, "text/event-stream", Some("nobody")).status, 404);
    let r = get(&mut h, "text/event-stream", Some(&sid));
    assert_eq!(r.status, 200);
    assert!(r
        .headers
        .iter()
        .any(|(k, v)| k == "Content-Type" && v == "text/event-stream"));
    let mut watch = r.watch.expect("a stream to keep open");
    assert!(watch.tick(&h.server).is_empty(), "nothing changed");
    let mut server = h.server.clone();
    let notes = server.replace_catalog(grown());
    assert_eq!(notes.len(), 1);
    let events = watch.tick(&server);
    assert_eq!(events.len(), 1, "{events:?}");
    let note: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(note["method"], json!("notifications/tools/list_changed"));
    assert!(watch.tick(&server).is_empty(), "each change is reported once");
    assert!(watch.close().is_none(), "a GET stream has no final result");
}

#[test]
fn subscriptions_listen_acknowledges_then_reports_what_was_asked() {
    let mut h = Harness::new();
    let r = h.modern(json!(7), "subscriptions/listen", json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false, "resourceSubscriptions": ["x://y"]}}));
    assert_eq!(r.status, 200);
    let events = messages(&r);
    assert_eq!(
        events.len(),
        1,
        "the acknowledgement only; no response until the stream ends"
    );
    assert_eq!(events[0]["method"], json!("notifications/subscriptions/acknowledged"));
    assert_eq!(events[0]["params"]["notifications"], json!({"toolsListChanged": true}));
    assert_eq!(
        events[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(7)
    );
    let mut watch = r.watch.expect("a stream to keep open");
    let mut server = h.server.clone();
    server.replace_catalog(grown());
    let events = watch.tick(&server);
    let note: Value = serde_json::from_str(&events[0]).unwrap();
    assert_eq!(note["method"], json!("notifications/tools/list_changed"));
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(7)
    );
    let end: Value = serde_json::from_str(&watch.close().unwrap()).unwrap();
    assert_eq!(end["id"], json!(7));
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(7)
    );
    // A bad filter names the field.
    let r = h.modern(
        json!(8),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": "yes"}}),
    );
    assert!(r.watch.is_none());
    assert!(r.body.contains("params.notifications.toolsListChanged"), "{}", r.body);
}
