//! What every request of the native server shares ([`App`]: the server, the transport options,
//! the sessions, the gateway, the answers to questions asked mid-call), and how a core
//! response becomes a hyper one ([`reply`]).

use std::sync::{Arc, Mutex};

use mcp_sieve::http;
use mcp_sieve::protocol::{Answers, Server};

use crate::auth::Verifier;
use crate::error::ServerError;
use crate::reload::Live;
use crate::sessions::outbox::Outboxes;
use crate::sessions::Sessions;
use crate::upstream::gateway::Gateway;

/// Everything a request needs.
pub(crate) struct App {
    /// The server and its gateway, swapped whole by a reload (`reload`).
    pub(crate) live: Mutex<Live>,
    pub(crate) cfg: http::Config,
    /// Sessions, read and written back under short locks (see `sessions`).
    pub(crate) store: Sessions,
    /// Clients' answers to questions asked mid-call, until the waiting stream takes them.
    pub(crate) answers: Mutex<Answers>,
    /// Upstream exchanges waiting for a 2026-07-28 client to call again with its answer.
    pub(crate) parked: crate::relay::ParkedCalls,
    /// Tasks' `tasks/result` exchanges waiting for a 2026-07-28 client's `tasks/update`.
    pub(crate) asking: crate::upstream::task_asks::ParkedTasks,
    /// Checks access tokens when the catalog has an `auth` block.
    pub(crate) verifier: Option<Verifier>,
    /// What waits for each session's standalone stream (see `outbox`).
    pub(crate) outbox: Outboxes,
    /// Forwarded calls a client may cancel (`notifications/cancelled`).
    pub(crate) cancels: crate::relay::cancels::Cancels,
    /// Rate limits' buckets, the audit sink, the metrics (`operate`).
    pub(crate) operate: crate::operate::Operate,
}

/// Its tasks' questions are parked per caller's principal (`task_asks`).
impl crate::upstream::task_asks::Shell for App {
    type Sessions = Sessions;
    fn sessions(&self) -> &Sessions {
        &self.store
    }
    fn asking(&self) -> &crate::upstream::task_asks::ParkedTasks {
        &self.asking
    }
}

impl App {
    /// What runs now (a reload replaces it).
    pub(crate) fn live(&self) -> Live {
        self.live.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The gateway now, if the configuration has upstreams.
    pub(crate) fn gateway(&self) -> Option<Gateway> {
        self.live().gateway
    }

    /// The server a request would run on now (in gateway mode, over the upstream's lists).
    pub(crate) async fn current(&self) -> Option<Arc<Server>> {
        let live = self.live();
        match &live.gateway {
            None => Some(live.server),
            Some(g) => g.serving(&live.server).await.ok(),
        }
    }
}

/// A reload swaps what requests run on; sessions (and the views their endpoints name) stay.
impl crate::reload::Holder for App {
    fn replace(&self, live: Live) -> Live {
        std::mem::replace(&mut *self.live.lock().unwrap_or_else(|p| p.into_inner()), live)
    }

    fn running(&self) -> Option<Gateway> {
        self.gateway()
    }
}

pub(crate) use crate::http::reply::{reply, Reply};

/// `GET /metrics`: the exposition text (405 for another method).
pub(crate) fn metrics_response(app: &App, method: &str) -> http::Response {
    let (status, kind, body) = match (
        method,
        app.operate
            .metrics_text(app.store.counts(), app.gateway().map(|g| g.status())),
    ) {
        ("GET", Some(text)) => (200, "text/plain; version=0.0.4; charset=utf-8", text),
        ("GET", None) => (404, "text/plain", "metrics are off (--metrics off)".to_string()),
        _ => (405, "text/plain", "GET the metrics".to_string()),
    };
    http::Response {
        status,
        headers: vec![("Content-Type".into(), kind.into())],
        body,
        ..Default::default()
    }
}

/// Serves `/metrics` alone on `host:port` (`--metrics-port`): for a scraper kept off the MCP
/// port; no token is asked there, so keep it on loopback or a private network.
pub(crate) async fn listen_metrics(app: Arc<App>, host: &str, port: u16) -> Result<(), ServerError> {
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    let listener = tokio::net::TcpListener::bind((host, port))
        .await
        .map_err(|e| ServerError::Io(format!("cannot listen for metrics on {host}:{port}"), e))?;
    eprintln!(
        "mcp-sieve: serving metrics at http://{host}:{port}{}",
        crate::operate::metrics::PATH
    );
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let app = app.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let app = app.clone();
                    async move {
                        let r = match req.uri().path() == crate::operate::metrics::PATH {
                            true => metrics_response(&app, req.method().as_str()),
                            false => http::Response {
                                status: 404,
                                body: format!("Not found: metrics are at {}", crate::operate::metrics::PATH),
                                ..Default::default()
                            },
                        };
                        Ok::<_, std::convert::Infallible>(reply(r))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(())
}
