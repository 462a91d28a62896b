//! Moves what an upstream sends back during a forwarded request to the downstream client that
//! made it, and the client's answers back up: the core's `upstream::Relay` decides what each
//! message becomes; this file carries it out over a [`Downstream`] (the call's SSE stream in
//! `serve::relay`, stdout in `crate::stdio`; a 2026-07-28 caller's next call in both, through
//! [`ParkedCalls`]), and the upstream's driver posts the answers.

pub(crate) mod cancels;

use std::collections::HashMap;

use mcp_sieve::http;
use mcp_sieve::protocol::{ask::ANSWER_WAIT_MS, Ask};
use mcp_sieve::upstream::{self, Carried, Relay};
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
    /// The caller's principal (a stdio upstream's unnamed question is put to no other's call:
    /// `stdio::attribution`).
    owner: Option<String>,
}

impl<'a> Relaying<'a> {
    /// The relay of `forward` to `down`, and the params to send upstream.
    pub(crate) fn new(forward: &mcp_sieve::protocol::Forward, down: &'a dyn Downstream) -> (Self, Value) {
        let nonce = crate::platform::fresh_id().unwrap_or_else(|_| format!("{:x}", now_ms()));
        let (relay, params) = Relay::new(forward, &nonce, down.live());
        let owner = forward.principal.clone();
        let relaying = Relaying { relay, down, owner };
        (relaying, params)
    }

    /// The caller's principal (`None`: a caller without a token).
    pub(crate) fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The core's relay (to tell the notifications it carried already).
    pub(crate) fn relay(&self) -> &Relay {
        &self.relay
    }

    /// Carries out what `msg`, sent by the upstream while the exchange runs, becomes; returns
    /// the answer to send the upstream (in the same session), if any (`upstream::carry`).
    pub(crate) async fn handle(&mut self, msg: Value) -> Option<Value> {
        let step = self.relay.on_message(&msg);
        match upstream::carry(self.down, step) {
            Carried::Upstream(m) => m,
            Carried::Ask { ask, upstream_id } => {
                let got = self.down.ask(&ask).await;
                Some(self.relay.answer(&upstream_id, got.as_ref()))
            }
        }
    }
}

/// Every native client is the core's downstream.
impl<'d> upstream::Downstream for dyn Downstream + 'd {
    fn send(&self, note: String) {
        Downstream::send(self, note)
    }

    fn expect(&self, ask: &Ask, method: &str) -> Result<(), Error> {
        Downstream::expect(self, ask, method)
    }
}

/// What the task running a relayed call hands the request waiting for it.
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
    Done(Box<http::Response>),
}

/// A 2026-07-28 caller (no session): what its call's upstream asks is asked the 2026-07-28 way,
/// the call answered `input_required` and the exchange waiting (see [`ParkedCalls`]) for the
/// answer the caller's next call brings.
pub(crate) struct Parking(pub(crate) mpsc::UnboundedSender<Out>);

impl Downstream for Parking {
    fn live(&self) -> bool {
        true
    }

    fn send(&self, _message: String) {
        // A 2026-07-28 call's answer is one JSON result: the relay keeps its notifications back.
    }

    fn expect(&self, _ask: &Ask, _method: &str) -> Result<(), Error> {
        Ok(()) // no session: the call's own capabilities were checked (`Relay::on_message`)
    }

    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            let key = ask.request_id.as_str().unwrap_or_default().to_string();
            let asked = Out::InputRequired {
                key,
                text: upstream::input_required(ask),
                answer: tx,
            };
            self.0.send(asked).ok()?;
            let wait = std::time::Duration::from_millis(ANSWER_WAIT_MS as u64);
            tokio::time::timeout(wait, rx).await.ok()?.ok()?
        })
    }
}

/// Runs `exchange` (the forward, given where to report) on its own; what it reports, its answer
/// last, comes on the receiver. When nobody holds the receiver any more (the client went away:
/// its request's future, or its response's stream, was dropped; a parked exchange's wait ended),
/// the exchange is dropped, and with it its upstream request.
pub(crate) fn spawn<F, Fut>(exchange: F) -> mpsc::UnboundedReceiver<Out>
where
    F: FnOnce(mpsc::UnboundedSender<Out>) -> Fut,
    Fut: std::future::Future<Output = http::Response> + Send + 'static,
{
    spawn_cancellable(exchange, None)
}

/// [`spawn`], also dropped when `registered` is cancelled (the client's
/// `notifications/cancelled`, see `cancels`): the client hears no answer, as the spec says.
pub(crate) fn spawn_cancellable<F, Fut>(
    exchange: F,
    registered: Option<crate::relay::cancels::Registered>,
) -> mpsc::UnboundedReceiver<Out>
where
    F: FnOnce(mpsc::UnboundedSender<Out>) -> Fut,
    Fut: std::future::Future<Output = http::Response> + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let running = exchange(tx.clone());
    // In the request: the upstream exchange is a child of the request that made it.
    let running = crate::telemetry::request_log::in_current_request(running);
    tokio::spawn(async move {
        let (cancelled, _guard) = match registered {
            Some(r) => (Some(r.cancelled), Some(r.guard)),
            None => (None, None),
        };
        let cancelled = async move {
            // Only a cancel the client sent ends the exchange: a registration replaced by
            // another of the same owner and id (its sender dropped) is not one.
            let sent = match cancelled {
                Some(c) => c.await.is_ok(),
                None => false,
            };
            if !sent {
                std::future::pending::<()>().await
            }
        };
        tokio::select! {
            done = running => {
                let _ = tx.send(Out::Done(Box::new(done)));
            }
            _ = tx.closed() => {}
            _ = cancelled => {}
        }
    });
    rx
}

/// What a relayed call's exchange reports first.
pub(crate) enum First {
    /// Its answer (a JSON-RPC response).
    Done(Box<http::Response>),
    /// A 2026-07-28 question: the call's answer is this `input_required` result (the exchange
    /// waits, parked).
    Asked(String),
    /// A message for the client during the call, then the rest.
    Event(String, mpsc::UnboundedReceiver<Out>),
}

/// An upstream exchange waiting for a 2026-07-28 client to call again with its answer.
struct Parked {
    /// Where the answer goes.
    answer: oneshot::Sender<Option<Value>>,
    /// What the exchange does next.
    out: mpsc::UnboundedReceiver<Out>,
}

/// The exchanges waiting for a 2026-07-28 caller's next call, by the key of their question
/// (unique, unguessable: the only way to reach one, as a 2026-07-28 task's id is) bound to the
/// caller's principal (`upstream::waiting_name`), so another principal's call with the key finds
/// nothing; each waits at most `ask::ANSWER_WAIT_MS`. The native HTTP server keeps one for all
/// its callers, `mcp-sieve stdio` one for its one client.
#[derive(Default)]
pub(crate) struct ParkedCalls(std::sync::Mutex<HashMap<String, Parked>>);

impl ParkedCalls {
    /// Parks `p` under `name`; exchanges that stopped waiting (their wait is over) go.
    fn put(&self, name: String, p: Parked) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, p| !p.answer.is_closed());
        all.insert(name, p);
    }

    /// The exchange waiting under `name`, if one still is.
    fn take(&self, name: &str) -> Option<Parked> {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.remove(name).filter(|p| !p.answer.is_closed())
    }

    /// When `answer` forwards a 2026-07-28 call that brings the answer to a question (its
    /// `inputResponses`), what the exchange that asked it does next, as the answer to this call;
    /// `-32602` when no exchange waits for `principal` under the key. `None`: another call.
    pub(crate) async fn resume(&self, answer: &http::Response, principal: Option<&str>) -> Option<First> {
        // Only a call comes again with its answers (a task's `tasks/update` is `task_asks`').
        let f = answer
            .forward
            .as_ref()
            .filter(|f| f.stateless && mcp_sieve::protocol::jsonrpc::ASKING_METHODS.contains(&f.method.as_str()))?;
        let (key, response) = upstream::input_response(&f.params)?;
        let Some(parked) = self.take(&upstream::waiting_name(&key, principal)) else {
            return Some(First::Done(Box::new(upstream::unawaited(answer.clone(), &key))));
        };
        let _ = parked.answer.send(Some(response));
        // What comes next answers this request (its own id), not the first.
        Some(self.first(parked.out, Some(&f.id), principal).await)
    }

    /// What the exchange reporting to `rx` does first; a 2026-07-28 question parks it here
    /// (for `principal`'s next call). `id`: the request it answers, when it is not the one the
    /// exchange began with (a 2026-07-28 call that came again).
    pub(crate) async fn first(
        &self,
        mut rx: mpsc::UnboundedReceiver<Out>,
        id: Option<&Value>,
        principal: Option<&str>,
    ) -> First {
        match rx.recv().await {
            Some(Out::Done(mut done)) => {
                done.body = with_id(std::mem::take(&mut done.body), id);
                First::Done(done)
            }
            Some(Out::InputRequired { key, text, answer }) => {
                self.put(upstream::waiting_name(&key, principal), Parked { answer, out: rx });
                First::Asked(with_id(text, id))
            }
            Some(Out::Event(e)) => First::Event(e, rx),
            None => First::Done(Box::new(http::failed())),
        }
    }
}

/// `text` (a JSON-RPC response) with the id `id`, when given.
fn with_id(text: String, id: Option<&Value>) -> String {
    match id {
        Some(id) => upstream::answering(text, id),
        None => text,
    }
}
