//! Moves what an upstream sends back during a forwarded request to the downstream client that
//! made it, and the client's answers back up: the core's `upstream::Relay` decides what each
//! message becomes; this file carries it out over a [`Downstream`] (the call's SSE stream in
//! `relay_http`, stdout in `stdio_serve`), and the upstream's driver posts the answers.

use std::collections::HashMap;

use mcp_sieve::protocol::Ask;
use mcp_sieve::upstream::{self, Relay, Relayed};
use mcp_sieve::Error;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::platform::now_ms;

/// A future a [`Downstream`] hands back.
pub(crate) type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The client a relayed call came from.
pub(crate) trait Downstream: Sync {
    /// Whether messages can reach it while the call runs (an HTTP client that accepts SSE).
    fn live(&self) -> bool;
    /// Sends it one notification during the call.
    fn send(&self, message: String);
    /// Records in its session that it awaits the answer to `ask` (a question of `method`).
    fn expect(&self, ask: &Ask, method: &str) -> Result<(), Error>;
    /// Asks it `ask` and waits for its answer (`None`: none came within `ask::ANSWER_WAIT_MS`).
    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Value>>;
}

/// One forwarded request's relay while its exchange runs.
pub(crate) struct Relaying<'a> {
    relay: Relay,
    down: &'a dyn Downstream,
}

impl<'a> Relaying<'a> {
    /// The relay of `forward` to `down`, and the params to send upstream.
    pub(crate) fn new(forward: &mcp_sieve::protocol::Forward, down: &'a dyn Downstream) -> (Self, Value) {
        let nonce = crate::platform::fresh_id().unwrap_or_else(|_| format!("{:x}", now_ms()));
        let (relay, params) = Relay::new(forward, &nonce, down.live());
        let relaying = Relaying { relay, down };
        (relaying, params)
    }

    /// The core's relay (to tell the notifications it carried already).
    pub(crate) fn relay(&self) -> &Relay {
        &self.relay
    }

    /// Carries out what `msg`, sent by the upstream while the exchange runs, becomes; returns
    /// the answer to send the upstream (in the same session), if any.
    pub(crate) async fn handle(&mut self, msg: Value) -> Option<Value> {
        Some(match self.relay.on_message(&msg) {
            Relayed::Drop => return None,
            Relayed::Note(n) => {
                self.down.send(n);
                return None;
            }
            Relayed::Reply(m) => m,
            Relayed::Ask {
                ask,
                upstream_id,
                method,
            } => match self.down.expect(&ask, &method) {
                Err(e) => upstream::refusal(&upstream_id, &e),
                Ok(()) => {
                    let got = self.down.ask(&ask).await;
                    self.relay.answer(&upstream_id, got.as_ref())
                }
            },
        })
    }
}

/// What the task running a relayed HTTP call hands the request waiting for it (`relay_http`).
pub(crate) enum Out {
    /// A message for the client during the call (a 2025-11-25 session's SSE stream).
    Event(String),
    /// A 2026-07-28 call's question: answer the call with `text` (`input_required`) and keep the
    /// exchange waiting under `key` for the answer.
    InputRequired {
        key: String,
        text: String,
        answer: oneshot::Sender<Option<Value>>,
    },
    /// The call's answer.
    Done(Box<mcp_sieve::http::Response>),
}

/// An upstream exchange waiting for a 2026-07-28 client to call again with its answer.
pub(crate) struct Parked {
    /// Where the answer goes.
    pub(crate) answer: oneshot::Sender<Option<Value>>,
    /// What the exchange does next.
    pub(crate) out: mpsc::UnboundedReceiver<Out>,
}

/// The exchanges waiting, by the key of their question (unique, unguessable: the only way to
/// reach one, as a 2026-07-28 task's id is).
#[derive(Default)]
pub(crate) struct ParkedCalls(std::sync::Mutex<HashMap<String, Parked>>);

impl ParkedCalls {
    /// Parks `p` under `key`; exchanges that stopped waiting (their wait is over) go.
    pub(crate) fn put(&self, key: String, p: Parked) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, p| !p.answer.is_closed());
        all.insert(key, p);
    }

    /// The exchange waiting under `key`, if one still is.
    pub(crate) fn take(&self, key: &str) -> Option<Parked> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.remove(key).filter(|p| !p.answer.is_closed())
    }
}
