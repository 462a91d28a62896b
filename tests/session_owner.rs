//! A session belongs to the principal (and the endpoint view) that opened it, on every method:
//! `POST`, `DELETE` and the `GET` stream all answer 404 to anyone else (issue 23, item 5).

mod common;

use std::sync::Arc;

use common::{header_fn, CATALOG, T0};
use mcp_sieve::filter::EndpointView;
use mcp_sieve::http::{self, endpoint_view, MemoryStore};
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::Catalog;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

struct World {
    server: Server,
    store: MemoryStore,
}

/// Who sends a request: a principal and the view of the URL it used.
#[derive(Clone, Default)]
struct Caller {
    principal: Option<&'static str>,
    view: Option<Arc<EndpointView>>,
}

impl World {
    fn new() -> Self {
        World {
            server: Server::new(Catalog::from_json_str(CATALOG).unwrap()),
            store: MemoryStore::default(),
        }
    }

    fn send(&mut self, who: &Caller, method: &str, session: Option<&str>, body: &str) -> http::Response {
        let mut extra = vec![];
        if let Some(s) = session {
            extra.push(("mcp-session-id", s));
        }
        let base = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        let header = header_fn(base, &extra);
        let env = Env {
            now_ms: T0,
            principal: who.principal.map(String::from),
            view: who.view.clone(),
            fresh_id: "s1".into(),
            #[cfg(feature = "auth")]
            identity: None,
        };
        let req = http::Request {
            method,
            header: &header,
            body: body.as_bytes(),
        };
        http::handle(&self.server, &http::Config::default(), req, &mut self.store, &env)
    }

    /// A session opened by `who`.
    fn open(&mut self, who: &Caller) -> String {
        let r = self.send(who, "POST", None, INIT);
        let id = r.headers.iter().find(|(k, _)| k == "Mcp-Session-Id").unwrap().1.clone();
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(self.send(who, "POST", Some(&id), note).status, 202);
        id
    }
}

fn alice() -> Caller {
    Caller {
        principal: Some("alice"),
        ..Caller::default()
    }
}

fn bob() -> Caller {
    Caller {
        principal: Some("bob"),
        ..Caller::default()
    }
}

#[test]
fn another_principal_cannot_end_a_session() {
    let mut w = World::new();
    let id = w.open(&alice());
    for stranger in [bob(), Caller::default()] {
        let r = w.send(&stranger, "DELETE", Some(&id), "");
        assert_eq!(r.status, 404, "DELETE of alice's session by another caller: {}", r.body);
    }
    assert_eq!(
        w.send(&alice(), "POST", Some(&id), LIST).status,
        200,
        "alice's session lives on"
    );
    assert_eq!(
        w.send(&alice(), "DELETE", Some(&id), "").status,
        204,
        "alice may end it"
    );
    assert_eq!(w.send(&alice(), "POST", Some(&id), LIST).status, 404, "and it is gone");
}

#[test]
fn another_principal_cannot_open_a_sessions_stream() {
    let mut w = World::new();
    let id = w.open(&alice());
    for stranger in [bob(), Caller::default()] {
        let r = w.send(&stranger, "GET", Some(&id), "");
        assert_eq!(
            r.status, 404,
            "GET stream of alice's session by another caller: {}",
            r.body
        );
        assert!(r.watch.is_none(), "no stream is opened");
    }
    let r = w.send(&alice(), "GET", Some(&id), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.watch.is_some());
}

#[test]
fn a_session_is_used_and_ended_only_on_the_view_it_was_opened_on() {
    let mut w = World::new();
    let catalog = w.server.catalog().clone();
    let none = |_: &str| None;
    let view = endpoint_view(&catalog, "/mcp", "tags=git", &none, None).unwrap();
    assert!(view.is_some(), "a query makes a view");
    let narrow = Caller {
        view,
        ..Caller::default()
    };
    let id = w.open(&narrow);
    let plain = Caller::default();
    assert_eq!(
        w.send(&plain, "POST", Some(&id), LIST).status,
        404,
        "POST on another view"
    );
    assert_eq!(w.send(&plain, "GET", Some(&id), "").status, 404, "GET on another view");
    assert_eq!(
        w.send(&plain, "DELETE", Some(&id), "").status,
        404,
        "DELETE on another view"
    );
    assert_eq!(w.send(&narrow, "GET", Some(&id), "").status, 200);
    assert_eq!(w.send(&narrow, "DELETE", Some(&id), "").status, 204);
}

#[test]
fn an_expired_session_is_404_on_every_method() {
    let mut w = World::new();
    let id = w.open(&alice());
    let idle = http::DEFAULT_SESSION_IDLE_MS + 1;
    let late = |w: &mut World, method: &str, body: &str| {
        let mut store = std::mem::take(&mut w.store);
        let base = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
        ];
        let header = header_fn(base, &[("mcp-session-id", &id)]);
        let env = Env {
            now_ms: T0 + idle,
            principal: Some("alice".into()),
            fresh_id: "s2".into(),
            ..Default::default()
        };
        let req = http::Request {
            method,
            header: &header,
            body: body.as_bytes(),
        };
        let r = http::handle(&w.server, &http::Config::default(), req, &mut store, &env);
        w.store = store;
        r.status
    };
    assert_eq!(late(&mut w, "GET", ""), 404);
    assert_eq!(late(&mut w, "DELETE", ""), 404);
    assert_eq!(late(&mut w, "POST", LIST), 404);
}
