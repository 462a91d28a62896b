//! Gateway mode in the Worker: when the catalog document names an `upstream`, this isolate keeps
//! one MCP session with that server over `worker::Fetch`, lists its tools, resources and prompts
//! (cached; fetched again after `refreshSeconds` or when the upstream announces a list change),
//! serves the core's catalog built from them, and performs the core's `Forward` effects there.
//! Every rule (overlay, policy, pass-through) is in `mcp_sieve::gateway`; this file moves bytes.

use std::cell::RefCell;
use std::rc::Rc;

use mcp_sieve::gateway::{self, client, Upstream};
use mcp_sieve::http;
use mcp_sieve::protocol::{jsonrpc, Server};
use mcp_sieve::Error;
use serde_json::{json, Value};
use worker::{console_error, Fetch, Headers, Method, Request, RequestInit};

use crate::shell::now_ms;

/// Our session at the upstream.
#[derive(Clone)]
struct Conn {
    session: Option<String>,
    version: String,
    initialize: Value,
}

/// What this isolate knows of the upstream.
#[derive(Default)]
struct State {
    conn: Option<Conn>,
    next_id: u64,
    server: Option<Rc<Server>>,
    fetched_ms: i64,
    stale: bool,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// One HTTP answer of the upstream.
struct Answer {
    status: u16,
    session: Option<String>,
    content_type: String,
    body: String,
}

async fn post(url: &str, conn: Option<&Conn>, body: String) -> Result<Answer, String> {
    let step = |e: worker::Error| format!("cannot reach the upstream: {e}");
    let headers = Headers::new();
    headers.set("Content-Type", "application/json").map_err(step)?;
    headers
        .set("Accept", "application/json, text/event-stream")
        .map_err(step)?;
    if let Some(c) = conn {
        if let Some(s) = &c.session {
            headers.set("Mcp-Session-Id", s).map_err(step)?;
        }
        headers.set("MCP-Protocol-Version", &c.version).map_err(step)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_body(Some(body.into()));
    let mut resp = Fetch::Request(Request::new_with_init(url, &init).map_err(step)?)
        .send()
        .await
        .map_err(step)?;
    let h = resp.headers();
    let (session, content_type) = (
        h.get("mcp-session-id").ok().flatten(),
        h.get("content-type").ok().flatten().unwrap_or_default(),
    );
    let body = resp.text().await.map_err(step)?;
    Ok(Answer {
        status: resp.status_code(),
        session,
        content_type,
        body,
    })
}

/// Opens a session at the upstream: `initialize`, then `notifications/initialized`.
async fn connect(url: &str) -> Result<Conn, String> {
    let a = post(url, None, client::initialize()).await?;
    if a.status != 200 {
        return Err(format!("the upstream answered initialize with HTTP {}", a.status));
    }
    let reply = client::parse_reply(&a.content_type, &a.body, &json!(0)).map_err(|e| e.to_string())?;
    let initialize = reply.result("initialize").map_err(|e| e.to_string())?.clone();
    let version = initialize["protocolVersion"]
        .as_str()
        .unwrap_or(client::PROTOCOL_VERSION)
        .to_string();
    let conn = Conn {
        session: a.session,
        version,
        initialize,
    };
    post(url, Some(&conn), client::initialized()).await?;
    Ok(conn)
}

/// One request at the upstream, over the isolate's session (opened, or reopened once when the
/// upstream no longer knows it).
async fn request(url: &str, method: &str, params: &Value) -> Result<client::Reply, String> {
    for attempt in 0..2 {
        let conn = match STATE.with(|s| s.borrow().conn.clone()) {
            Some(c) => c,
            None => {
                let c = connect(url).await?;
                STATE.with(|s| s.borrow_mut().conn = Some(c.clone()));
                c
            }
        };
        let id = STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.next_id += 1;
            s.next_id
        });
        let a = post(url, Some(&conn), client::request(id, method, params)).await?;
        if a.status == 404 && attempt == 0 && conn.session.is_some() {
            STATE.with(|s| s.borrow_mut().conn = None);
            continue;
        }
        if !(200..300).contains(&a.status) {
            return Err(format!("the upstream answered {method} with HTTP {}", a.status));
        }
        let reply = client::parse_reply(&a.content_type, &a.body, &json!(id)).map_err(|e| e.to_string())?;
        if reply.list_changed() {
            STATE.with(|s| s.borrow_mut().stale = true);
        }
        return Ok(reply);
    }
    Err(format!("the upstream keeps refusing our session for {method}"))
}

/// Fetches every list of the upstream and builds the catalog over the local document.
async fn refresh(local: &Server, url: &str) -> Result<Rc<Server>, String> {
    STATE.with(|s| s.borrow_mut().stale = false);
    let conn = match STATE.with(|s| s.borrow().conn.clone()) {
        Some(c) => c,
        None => {
            let c = connect(url).await?;
            STATE.with(|s| s.borrow_mut().conn = Some(c.clone()));
            c
        }
    };
    let mut lists = client::Lists::new(conn.initialize.clone());
    for kind in lists.kinds() {
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map_or(Value::Null, |c| json!({"cursor": c}));
            let reply = request(url, kind.list_method(), &params).await?;
            cursor = lists.add_reply(kind, &reply).map_err(|e| e.to_string())?;
            if cursor.is_none() {
                break;
            }
        }
    }
    let document = local
        .catalog()
        .document
        .clone()
        .ok_or_else(|| "the local catalog document was not kept".to_string())?;
    let catalog = gateway::build(&document, &lists).map_err(|e| e.to_string())?;
    let previous = STATE.with(|s| s.borrow().server.clone());
    let server = match previous {
        // Same server, new catalog: the version moves on, so older cursors are refused.
        Some(p) => {
            let mut s = (*p).clone();
            s.replace_catalog(catalog);
            s
        }
        None => Server::new(catalog),
    };
    let server = Rc::new(server);
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.server = Some(server.clone());
        s.fetched_ms = now_ms();
    });
    Ok(server)
}

/// The server to run requests on: `None` when `local` has no upstream; else the gateway's
/// server over the upstream's lists (refreshed when due; a stale one keeps serving when the
/// upstream cannot be reached).
pub async fn serving(local: &Server) -> Result<Option<Rc<Server>>, String> {
    let Some(up) = upstream(local)? else {
        return Ok(None);
    };
    let (cached, fetched, stale) = STATE.with(|s| {
        let s = s.borrow();
        (s.server.clone(), s.fetched_ms, s.stale)
    });
    match cached {
        Some(c) if !stale && !up.stale(fetched, now_ms()) => Ok(Some(c)),
        cached => match refresh(local, &up.url).await {
            Ok(s) => Ok(Some(s)),
            Err(e) => match cached {
                Some(c) => {
                    console_error!("mcp-sieve: upstream refresh failed, serving the cached lists: {e}");
                    Ok(Some(c))
                }
                None => Err(e),
            },
        },
    }
}

fn upstream(server: &Server) -> Result<Option<Upstream>, String> {
    Upstream::parse(Some(&server.catalog().upstream)).map_err(|e| e.to_string())
}

/// Performs the core's `Forward` effect of `answer`, if any, at the upstream and completes the
/// answer with the upstream's reply, passed through.
pub async fn finish(answer: http::Response, server: &Server) -> http::Response {
    let Some(f) = answer.forward.clone() else {
        return answer;
    };
    let reply = match upstream(server) {
        Ok(Some(up)) => request(&up.url, &f.method, &f.params).await,
        Ok(None) => Err("no upstream is configured".to_string()),
        Err(e) => Err(e),
    };
    match reply {
        Ok(client::Reply {
            response: Some(msg), ..
        }) => gateway::complete(answer, Ok(&msg)),
        Ok(_) => gateway::complete(answer, Err("its reply carried no response".into())),
        Err(e) => gateway::complete(answer, Err(e)),
    }
}

/// HTTP 502 with a JSON-RPC `-32603` error: the upstream could not be listed.
pub fn unavailable(why: &str) -> http::Response {
    let e = Error::Internal(format!("the upstream MCP server is unavailable: {why}"));
    http::Response {
        status: 502,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: jsonrpc::error(&Value::Null, &e),
        ..Default::default()
    }
}
