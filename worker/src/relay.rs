//! What flows the other way during a forwarded call in the Worker: the core's `upstream::Relay`
//! decides what each message the upstream sends meanwhile becomes; this file carries it out for
//! a 2025-11-25 session's call (its Durable Object serves it) that accepts SSE. The upstream
//! exchange runs on in the object (`spawn_local`) while the call's answer streams: questions
//! and notifications first, as events, the result last. The client's answer is POSTed to the
//! same session, hence the same object, and reaches the waiting exchange through
//! `watch::wait_for`, as the answers to this server's own tools' questions do. A call from
//! which nothing is relayed is answered as before (one JSON answer).
//!
//! A stateless 2026-07-28 call whose client may be asked (`upstream::relays_stateless`) comes to
//! a Durable Object of its own (the front Worker names it `upstream::waiting_name` of a fresh
//! nonce and the caller), or to its principal's holder of tasks when its client declared the
//! tasks extension (`protocol::gateway_holder`: the call may create a task, recorded there once
//! the upstream answers it): the exchange runs there, and a question answers the call
//! `input_required` under a key carrying a nonce; the exchange waits in the object's
//! [`Waiting`] until the same caller calls again with the answer (routed to the same object by
//! `upstream::waiting_for`, or again to the holder), at most `ask::ANSWER_WAIT_MS`, and that
//! call gets what it does next.
//!
//! Beside it, the other ways an upstream reaches a client: `standalone` (an upstream session's
//! GET stream, read while the client's own is open) and `task_asks` (a task's question waiting
//! for a stateless client's `tasks/update`). The native shell keeps those two in `upstream/`;
//! here they answer through `serve` (`shell::respond`, `watch`), which itself drives
//! `upstream::gateway`, so they sit above both, with this file.

pub mod standalone;
pub mod task_asks;

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use futures_util::stream;
use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::{ask::ANSWER_WAIT_MS, Forward};
use mcp_sieve::upstream::{self, Carried, Relay};
use mcp_sieve::Error;
use serde_json::Value;
use worker::{Delay, ResponseBuilder};

use crate::config::Loaded;
use crate::platform::{self, now_ms};
use crate::serve::ledger;
use crate::serve::shell;
use crate::serve::watch;
use crate::upstream::gateway::{self, LocalFuture};

/// How often the answer waiting for the exchange looks for its next message.
const POLL_MS: u64 = 20;

/// What the exchange hands the answer being written.
pub(crate) enum Out {
    /// A message for the client during the call.
    Event(String),
    /// A 2026-07-28 call's question: answer the call with `text` (`input_required`) and keep the
    /// exchange waiting under `key`; the answer goes in `answer`.
    InputRequired { key: String, text: String, answer: Slot },
    /// The call's answer.
    Done(Box<http::Response>),
}

pub(crate) type Queue = Rc<RefCell<VecDeque<Out>>>;
/// Where a 2026-07-28 client's answer reaches the exchange waiting for it.
pub(crate) type Slot = Rc<RefCell<Option<Value>>>;

/// A stateless call's exchange waiting for its client to call again.
struct Parked {
    answer: Slot,
    out: Queue,
    until_ms: i64,
}

/// The exchanges waiting in one Durable Object, by their question's key.
#[derive(Clone, Default)]
pub struct Waiting(Rc<RefCell<HashMap<String, Parked>>>);

impl Waiting {
    fn put(&self, key: String, answer: Slot, out: Queue) {
        let now = now_ms();
        let mut all = self.0.borrow_mut();
        all.retain(|_, p| p.until_ms > now);
        let until_ms = now + ANSWER_WAIT_MS;
        all.insert(key, Parked { answer, out, until_ms });
    }

    fn take(&self, key: &str) -> Option<Parked> {
        let now = now_ms();
        self.0.borrow_mut().remove(key).filter(|p| p.until_ms > now)
    }
}

/// One forwarded call's relay while its exchange runs.
pub struct Relaying {
    relay: RefCell<Relay>,
    /// The session's store.
    store: RefCell<Box<dyn SessionStore>>,
    out: Queue,
    /// A 2026-07-28 call (asked with `input_required`).
    stateless: bool,
}

impl Relaying {
    /// The relay of `forward` (its session in `store`; its questions' keys carry `nonce`), and
    /// the params to send upstream.
    fn new(forward: &Forward, store: Box<dyn SessionStore>, out: Queue, nonce: &str) -> (Self, Value) {
        let (relay, params) = Relay::new(forward, nonce, forward.sse || forward.stateless);
        let r = Relaying {
            relay: RefCell::new(relay),
            store: RefCell::new(store),
            out,
            stateless: forward.stateless,
        };
        (r, params)
    }

    /// The 2026-07-28 client's answer to `ask` (`None`: it did not call again in time).
    async fn input(&self, ask: &mcp_sieve::protocol::Ask) -> Option<Value> {
        let answer = Slot::default();
        self.out.borrow_mut().push_back(Out::InputRequired {
            key: ask.request_id.as_str().unwrap_or_default().to_string(),
            text: upstream::input_required(ask),
            answer: answer.clone(),
        });
        let started = now_ms();
        while now_ms() - started < ANSWER_WAIT_MS {
            if let Some(a) = answer.borrow_mut().take() {
                return Some(a);
            }
            Delay::from(Duration::from_millis(POLL_MS)).await;
        }
        None
    }

    async fn step(&self, msg: Value) -> Option<Value> {
        let step = self.relay.borrow_mut().on_message(&msg);
        match upstream::carry(self, step) {
            Carried::Upstream(m) => m,
            Carried::Ask { ask, upstream_id } => {
                let got = match self.stateless {
                    true => self.input(&ask).await,
                    false => {
                        self.out.borrow_mut().push_back(Out::Event(ask.request.clone()));
                        watch::wait_for(&ask).await
                    }
                };
                Some(self.relay.borrow().answer(&upstream_id, got.as_ref()))
            }
        }
    }
}

impl upstream::Downstream for Relaying {
    fn send(&self, note: String) {
        self.out.borrow_mut().push_back(Out::Event(note));
    }

    fn expect(&self, ask: &mcp_sieve::protocol::Ask, method: &str) -> Result<(), Error> {
        match self.stateless {
            // No session: the call's own capabilities were checked by the relay.
            true => Ok(()),
            false => upstream::await_answer(&mut **self.store.borrow_mut(), ask, method, now_ms()),
        }
    }
}

impl gateway::Relaying for Relaying {
    fn handle(&self, msg: Value) -> LocalFuture<'_, Option<Value>> {
        Box::pin(self.step(msg))
    }
    fn relays(&self, note: &Value) -> bool {
        self.relay.borrow().relays(note)
    }
    fn asked(&self) -> bool {
        self.relay.borrow().asked()
    }
    fn forwarded(
        &self,
        answer: http::Response,
        conv: &upstream::Conversation,
        reply: Result<upstream::Reply, Error>,
    ) -> http::Response {
        upstream::forwarded(answer, conv, reply, &mut **self.store.borrow_mut(), now_ms())
    }
}

/// The next message of the exchange reporting to `out`.
pub(crate) async fn next(out: &Queue) -> Out {
    loop {
        if let Some(o) = out.borrow_mut().pop_front() {
            return o;
        }
        Delay::from(Duration::from_millis(POLL_MS)).await;
    }
}

/// The exchange of `answer`'s forward, relaying to `out` (its questions' keys carry `nonce`),
/// its answer last.
pub(crate) async fn exchange(
    answer: http::Response,
    loaded: Loaded,
    store: Box<dyn SessionStore>,
    out: Queue,
    nonce: String,
) {
    let done = match &loaded.server {
        Ok(local) => match gateway::serving(local).await {
            Ok(Some(server)) => {
                let Some(f) = answer.forward.clone() else {
                    return;
                };
                let (relaying, params) = Relaying::new(&f, store, out.clone(), &nonce);
                let done = gateway::finish_relayed(answer, &server, params, &relaying).await;
                ledger::flush(&server).await;
                done
            }
            Ok(None) => http::complete(answer, Err(&Error::Internal("no upstream is configured".into())), &[]),
            Err(e) => upstream::unavailable(&e),
        },
        Err(e) => http::misconfigured(e),
    };
    out.borrow_mut().push_back(Out::Done(Box::new(done)));
}

/// Performs the stateless call `answer`'s forward in this object (see the module's header):
/// its result, or `input_required` with the exchange kept in `waiting`; a call that brings the
/// answer to a question waiting here gets what the exchange does next. `nonce`: this object's
/// (its name's, minted by the front Worker); `state`: the object's, kept alive while the
/// exchange runs; `store`: its sessions (a task the call creates is recorded in its principal's
/// holder there).
pub async fn respond_stateless(
    answer: http::Response,
    loaded: Loaded,
    nonce: String,
    waiting: &Waiting,
    state: &worker::State,
    store: Box<dyn SessionStore>,
) -> worker::Result<worker::Response> {
    let Some(f) = answer.forward.clone() else {
        return shell::respond(answer);
    };
    if let Some((key, response)) = upstream::input_response(&f.params) {
        let Some(parked) = waiting.take(&key) else {
            return shell::respond(upstream::unawaited(answer, &key));
        };
        *parked.answer.borrow_mut() = Some(response);
        return answered(answer, parked.out, waiting, Some(&f.id)).await;
    }
    let out: Queue = Rc::default();
    state.wait_until(exchange(answer.clone(), loaded, store, out.clone(), nonce));
    answered(answer, out, waiting, None).await
}

/// What the stateless exchange reporting to `out` does next, as the answer to `answer`'s request
/// (`id`: when it is not the one the exchange began with).
async fn answered(
    answer: http::Response,
    out: Queue,
    waiting: &Waiting,
    id: Option<&Value>,
) -> worker::Result<worker::Response> {
    let reanswer = |text: String| match id {
        Some(id) => upstream::answering(text, id),
        None => text,
    };
    loop {
        match next(&out).await {
            Out::Event(_) => {} // nothing but its questions is relayed to a stateless call
            Out::Done(mut done) => {
                done.body = reanswer(std::mem::take(&mut done.body));
                return shell::respond(*done);
            }
            Out::InputRequired {
                key,
                text,
                answer: slot,
            } => {
                waiting.put(key, slot, out);
                let mut head = http::Response {
                    status: 200,
                    headers: answer.headers,
                    body: reanswer(text),
                    ..Default::default()
                };
                head.headers.push(("Content-Type".into(), "application/json".into()));
                return shell::respond(head);
            }
        }
    }
}

/// Performs `answer`'s forward (see `shell::relayable`) in this object, relaying what the upstream
/// sends meanwhile; `store`: the session's.
pub async fn respond(
    answer: http::Response,
    loaded: Loaded,
    store: Box<dyn SessionStore>,
) -> worker::Result<worker::Response> {
    let out: Queue = Rc::default();
    let mut head = http::Response {
        status: 200,
        headers: answer.headers.clone(),
        ..Default::default()
    };
    wasm_bindgen_futures::spawn_local(exchange(answer, loaded, store, out.clone(), platform::fresh_id()));
    let first = match next(&out).await {
        Out::Done(done) => return shell::respond(*done),
        Out::Event(e) => e,
        // A session's call is never asked so.
        Out::InputRequired { .. } => return shell::respond(http::failed()),
    };
    head.headers.extend(
        [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")].map(|(k, v)| (k.into(), v.into())),
    );
    let events = stream::unfold(Some((Some(first), out)), |state| async move {
        let (first, out) = state?;
        let (chunk, more) = match first {
            Some(e) => (http::sse_body(&[e], None), true),
            None => match next(&out).await {
                Out::Event(e) => (http::sse_body(&[e], None), true),
                // The answer as an event (its notifications, if any, are events already).
                Out::Done(done) if is_sse(&done) => (done.body, false),
                Out::Done(done) => (http::sse_body(&[], Some(&done.body)), false),
                Out::InputRequired { .. } => return None,
            },
        };
        let state = more.then_some((None, out));
        Some((Ok::<Vec<u8>, worker::Error>(chunk.into_bytes()), state))
    });
    let mut b = ResponseBuilder::new().with_status(head.status);
    for (k, v) in &head.headers {
        b = b.with_header(k, v)?;
    }
    b.from_stream(events)
}

fn is_sse(r: &http::Response) -> bool {
    r.headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with("text/event-stream"))
}
