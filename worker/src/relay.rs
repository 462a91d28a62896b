//! What flows the other way during a forwarded call in the Worker: the core's `upstream::Relay`
//! decides what each message the upstream sends meanwhile becomes; this file carries it out for
//! a 2025-11-25 session's call (its Durable Object serves it) that accepts SSE. The upstream
//! exchange runs on in the object (`spawn_local`) while the call's answer streams: questions
//! and notifications first, as events, the result last. The client's answer is POSTed to the
//! same session, hence the same object, and reaches the waiting exchange through
//! `watch::wait_for`, as the answers to this server's own tools' questions do. A call from
//! which nothing is relayed is answered as before (one JSON answer).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;

use futures_util::stream;
use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::Forward;
use mcp_sieve::upstream::{self, Relay, Relayed};
use mcp_sieve::Error;
use serde_json::Value;
use worker::{Delay, ResponseBuilder};

use crate::config::Loaded;
use crate::gateway::LocalFuture;
use crate::platform::{self, now_ms};

/// How often the answer waiting for the exchange looks for its next message.
const POLL_MS: u64 = 20;

/// What the exchange hands the answer being written.
enum Out {
    /// A message for the client during the call.
    Event(String),
    /// The call's answer.
    Done(Box<http::Response>),
}

type Queue = Rc<RefCell<VecDeque<Out>>>;

/// One forwarded call's relay while its exchange runs.
pub struct Relaying {
    relay: RefCell<Relay>,
    /// The session's store.
    store: RefCell<Box<dyn SessionStore>>,
    out: Queue,
}

impl Relaying {
    /// The relay of `forward` (its session in `store`), and the params to send upstream.
    fn new(forward: &Forward, store: Box<dyn SessionStore>, out: Queue) -> (Self, Value) {
        let nonce = platform::fresh_id();
        let (relay, params) = Relay::new(forward, &nonce, forward.sse);
        let r = Relaying {
            relay: RefCell::new(relay),
            store: RefCell::new(store),
            out,
        };
        (r, params)
    }

    async fn step(&self, msg: Value) -> Option<Value> {
        let step = self.relay.borrow_mut().on_message(&msg);
        Some(match step {
            Relayed::Drop => return None,
            Relayed::Note(n) => {
                self.out.borrow_mut().push_back(Out::Event(n));
                return None;
            }
            Relayed::Reply(m) => m,
            Relayed::Ask {
                ask,
                upstream_id,
                method,
            } => {
                let expected = upstream::await_answer(&mut **self.store.borrow_mut(), &ask, &method, now_ms());
                match expected {
                    Err(e) => upstream::refusal(&upstream_id, &e),
                    Ok(()) => {
                        self.out.borrow_mut().push_back(Out::Event(ask.request.clone()));
                        let got = crate::watch::wait_for(&ask).await;
                        self.relay.borrow().answer(&upstream_id, got.as_ref())
                    }
                }
            }
        })
    }
}

impl crate::gateway::Relaying for Relaying {
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
async fn next(out: &Queue) -> Out {
    loop {
        if let Some(o) = out.borrow_mut().pop_front() {
            return o;
        }
        Delay::from(Duration::from_millis(POLL_MS)).await;
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
    {
        let out = out.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let done = match &loaded.server {
                Ok(local) => match crate::gateway::serving(local).await {
                    Ok(Some(server)) => {
                        let Some(f) = answer.forward.clone() else {
                            return;
                        };
                        let (relaying, params) = Relaying::new(&f, store, out.clone());
                        crate::gateway::finish_relayed(answer, &server, params, &relaying).await
                    }
                    Ok(None) => http::complete(answer, Err(&Error::Internal("no upstream is configured".into())), &[]),
                    Err(e) => upstream::unavailable(&e),
                },
                Err(e) => http::misconfigured(e),
            };
            out.borrow_mut().push_back(Out::Done(Box::new(done)));
        });
    }
    let first = match next(&out).await {
        Out::Done(done) => return crate::shell::respond(*done),
        Out::Event(e) => e,
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
