//! Gateway mode: the upstream's lists under the local document (its groups, tags, concerns,
//! overlay and policy), cached and refreshed (after `refreshSeconds`, or when the upstream
//! announced a list change; one refresh in flight), and the core's `Forward` effects, each in
//! the downstream session's own upstream session (never the one the lists are fetched over).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::conversation::{ClientConfig, Conversation, Exchange};
use super::pages::{Lists, Refresh};
use crate::catalog::{Catalog, Upstream};
use crate::error::{type_name, Error, Result};
use crate::http::SessionStore;
use crate::model::Kind;
use crate::protocol::{Forward, Server};

/// What a request should run on.
#[derive(Debug)]
pub enum Serving {
    /// This server (fresh, or stale while a refresh runs elsewhere).
    Ready(Arc<Server>),
    /// Run this refresh first, then call [`Gateway::refreshed`].
    Refresh(Box<Refresh>),
    /// A refresh is in flight and nothing is cached yet: ask again shortly.
    Wait,
}

/// One gateway's state: the conversation with the upstream and the catalog served over it.
#[derive(Debug)]
pub struct Gateway {
    upstream: Upstream,
    config: ClientConfig,
    conv: Conversation,
    server: Option<Arc<Server>>,
    fetched_ms: i64,
    stale: bool,
    refreshing: bool,
}

/// The end of a refresh.
#[derive(Debug)]
pub struct Refreshed {
    /// The server to run requests on: the new one, or the stale one when the refresh failed.
    pub server: Arc<Server>,
    /// `list_changed` notifications the change calls for (every session should get them).
    pub notifications: Vec<String>,
    /// Why the refresh failed, when a stale server keeps serving (for the log).
    pub failure: Option<Error>,
}

impl Gateway {
    /// A gateway in front of `upstream`, nothing fetched yet.
    pub fn new(upstream: Upstream) -> Self {
        let config = ClientConfig {
            client_info: serde_json::json!({"name": "mcp-sieve-gateway", "version": env!("CARGO_PKG_VERSION")}),
            ..ClientConfig::default()
        };
        Gateway {
            upstream,
            conv: Conversation::new(config.clone()),
            config,
            server: None,
            fetched_ms: 0,
            stale: false,
            refreshing: false,
        }
    }

    /// The upstream this gateway fronts.
    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// A copy of the conversation the lists are fetched over, for the refresh [`Gateway::serving`]
    /// hands out (given back to [`Gateway::refreshed`]).
    pub fn conversation(&self) -> Conversation {
        self.conv.clone()
    }

    /// Takes note of a list change the upstream announced in a forwarded exchange.
    pub fn note_changes(&mut self, conv: &mut Conversation) {
        self.stale |= conv.take_list_changed();
    }

    /// What a request at `now_ms` runs on: the cached server when fresh; else a refresh to run
    /// (only one at a time: while it runs, others get the stale server, or wait when there is
    /// none).
    pub fn serving(&mut self, now_ms: i64) -> Serving {
        self.stale |= self.conv.take_list_changed();
        let due = self.stale || self.upstream.stale(self.fetched_ms, now_ms);
        match (&self.server, due || self.server.is_none(), self.refreshing) {
            (Some(s), false, _) | (Some(s), true, true) => Serving::Ready(s.clone()),
            (None, _, true) => Serving::Wait,
            (_, _, false) => {
                self.refreshing = true;
                self.stale = false;
                Serving::Refresh(Box::new(Refresh::new(&self.conv)))
            }
        }
    }

    /// The cached server when a request at `now_ms` would get it from [`Gateway::serving`]
    /// without a refresh being started, read without changing anything: for a shell's
    /// synchronous path, which leaves every other case to `serving`.
    pub fn ready(&self, now_ms: i64) -> Option<Arc<Server>> {
        let due = self.stale || self.conv.list_changed() || self.upstream.stale(self.fetched_ms, now_ms);
        match (&self.server, due, self.refreshing) {
            (Some(s), false, _) | (Some(s), true, true) => Some(s.clone()),
            _ => None,
        }
    }

    /// Ends the refresh begun by [`Gateway::serving`]: on success the catalog is rebuilt over
    /// `local`'s document; on failure the stale server, if any, keeps serving (an error when
    /// there is none).
    pub fn refreshed(
        &mut self,
        local: &Catalog,
        conv: Conversation,
        lists: Result<Lists>,
        now_ms: i64,
    ) -> Result<Refreshed> {
        self.refreshing = false;
        self.conv = conv;
        self.stale |= self.conv.take_list_changed();
        let built = lists.and_then(|lists| {
            let document = local
                .document
                .as_deref()
                .ok_or_else(|| Error::Internal("the local catalog document was not kept".into()))?;
            build(document, &lists)
        });
        let catalog = match built {
            Ok(c) => c,
            Err(e) => {
                self.fetched_ms = now_ms; // retry after refreshSeconds, not on every request
                return match &self.server {
                    Some(s) => Ok(Refreshed {
                        server: s.clone(),
                        notifications: Vec::new(),
                        failure: Some(e),
                    }),
                    None => Err(e),
                };
            }
        };
        let (server, notes) = match &self.server {
            // Same server, new catalog: the version moves on, so older cursors are refused.
            Some(prev) => {
                let mut s = (**prev).clone();
                let notes = s.replace_catalog(catalog);
                (s, notes)
            }
            None => (Server::new(catalog), Vec::new()),
        };
        let server = Arc::new(server);
        self.server = Some(server.clone());
        self.fetched_ms = now_ms;
        Ok(Refreshed {
            server,
            notifications: notes,
            failure: None,
        })
    }

    /// The conversation (the downstream session's upstream session, or a fresh one for a
    /// stateless request) and the exchange that perform `forward` at the upstream.
    pub fn forward(&self, forward: &Forward) -> (Conversation, Exchange) {
        let conv = Conversation::resume(self.config.clone(), forward.link.clone().unwrap_or_default());
        let exchange = conv.request(&forward.method, forward.params.clone());
        (conv, exchange)
    }
}

/// Completes an answer that carried a `Forward` with the outcome of its exchange over `conv`:
/// the downstream session (in `store`) remembers its upstream session and any task it created;
/// the upstream's response and notifications are passed through, or a `-32603` says why there
/// is no response.
pub fn forwarded(
    answer: crate::http::Response,
    conv: &Conversation,
    reply: Result<super::Reply>,
    store: &mut dyn SessionStore,
    now_ms: i64,
) -> crate::http::Response {
    if let Some(f) = &answer.forward {
        if let Some(mut s) = f.session.as_deref().and_then(|id| store.load(id)) {
            let response = reply.as_ref().ok().and_then(|r| r.response.as_ref());
            if f.record(&mut s, conv.link(), response, now_ms) {
                store.save(&s);
            }
        }
    }
    match reply {
        Ok(super::Reply {
            response: Some(msg),
            notifications,
        }) => crate::http::complete(answer, Ok(&msg), &notifications),
        Ok(_) => crate::http::complete(
            answer,
            Err(&Error::Upstream("its reply carried no response".into())),
            &[],
        ),
        Err(e) => crate::http::complete(answer, Err(&e), &[]),
    }
}

/// HTTP 502 with a JSON-RPC `-32603` error: the upstream could not be listed.
pub fn unavailable(e: &Error) -> crate::http::Response {
    crate::http::Response {
        status: 502,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: crate::protocol::jsonrpc::error(&Value::Null, e),
        ..Default::default()
    }
}

/// The catalog a gateway serves: the local document (groups, tags, concerns, concernMapping,
/// overlay, policy, options, server) over the upstream's lists.
pub fn build(local: &Value, lists: &Lists) -> Result<Catalog> {
    let mut doc = local
        .as_object()
        .cloned()
        .ok_or_else(|| Error::Catalog(format!("the document must be an object, got {}", type_name(local))))?;
    for kind in Kind::ALL {
        if doc
            .get(kind.key())
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            return Err(Error::Catalog(format!(
                "{} must be empty when upstream is set: a gateway serves the upstream's {}",
                kind.key(),
                kind.key()
            )));
        }
        doc.insert(kind.key().into(), Value::Array(lists.items(kind).to_vec()));
    }
    if !doc.contains_key("server") {
        let info = &lists.initialize["serverInfo"];
        let mut server = Map::new();
        for k in ["name", "version"] {
            if let Some(v) = info.get(k).filter(|v| v.is_string()) {
                server.insert(k.into(), v.clone());
            }
        }
        if let Some(i) = lists.initialize.get("instructions").filter(|v| v.is_string()) {
            server.insert("instructions".into(), i.clone());
        }
        doc.insert("server".into(), Value::Object(server));
    }
    let mut catalog = Catalog::load_owned(Value::Object(doc)).map_err(|e| match e {
        Error::Catalog(m) => Error::Catalog(format!("with the upstream's lists: {m}")),
        other => other,
    })?;
    // Keep the local document, not the merged one: the next refresh starts from it again.
    catalog.document = Some(Arc::new(local.clone()));
    Ok(catalog)
}
