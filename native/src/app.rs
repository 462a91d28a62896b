//! What every request of the native server shares ([`App`]: the server, the transport options,
//! the sessions, the gateway, the answers to questions asked mid-call), and how a core
//! response becomes a hyper one ([`reply`]).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use mcp_sieve::http;
use mcp_sieve::protocol::{Answers, Server};

use crate::auth::Verifier;
use crate::gateway::Gateway;
use crate::outbox::Outboxes;
use crate::reload::Live;
use crate::sessions::Sessions;

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
    pub(crate) asking: crate::task_asks::ParkedTasks,
    /// Checks access tokens when the catalog has an `auth` block.
    pub(crate) verifier: Option<Verifier>,
    /// What waits for each session's standalone stream (see `outbox`).
    pub(crate) outbox: Outboxes,
    /// Forwarded calls a client may cancel (`notifications/cancelled`).
    pub(crate) cancels: crate::cancels::Cancels,
    /// Rate limits' buckets, the audit sink, the metrics (`operate`).
    pub(crate) operate: crate::operate::Operate,
}

/// Its tasks' questions are parked per caller's principal (`task_asks`).
impl crate::task_asks::Shell for App {
    type Sessions = Sessions;
    fn sessions(&self) -> &Sessions {
        &self.store
    }
    fn asking(&self) -> &crate::task_asks::ParkedTasks {
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
}

/// A hyper response with a body that is whole or streamed.
pub(crate) type Reply = hyper::Response<BoxBody<Bytes, Infallible>>;

/// The hyper response for a core response (status, headers, body).
pub(crate) fn reply(answer: http::Response) -> Reply {
    let mut r = hyper::Response::new(Full::new(Bytes::from(answer.body)).boxed());
    *r.status_mut() = hyper::StatusCode::from_u16(answer.status).unwrap_or(hyper::StatusCode::GATEWAY_TIMEOUT);
    for (k, v) in &answer.headers {
        if let (Ok(k), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(k.as_bytes()),
            hyper::header::HeaderValue::from_str(v),
        ) {
            r.headers_mut().append(k, v);
        }
    }
    r
}
