//! A forwarded call over HTTP whose upstream asks or tells the caller something meanwhile (see
//! `relay`): answered as JSON as before when nothing is relayed, else, for a 2025-11-25 session,
//! as an SSE stream from the first relayed message on (questions and notifications first, the
//! result last; the client's answers, POSTed to its session, reach the call through
//! `App::answers`). A 2026-07-28 call is answered `input_required` instead: the upstream
//! exchange waits in `App::parked` under the question's key until the client calls again with
//! `inputResponses` (then that request gets what the exchange does next), at most
//! `ask::ANSWER_WAIT_MS`; it is kept under its key and the caller's principal
//! (`upstream::waiting_name`), so another principal's call with the key finds nothing.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use mcp_sieve::http;
use mcp_sieve::protocol::{ask::ANSWER_WAIT_MS, Ask};
use mcp_sieve::upstream;
use mcp_sieve::Error;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::app::{reply, App, Reply};
use crate::gateway::Gateway;
use crate::platform::now_ms;
use crate::relay::{BoxFuture, Downstream, Out, Parked};
use crate::sessions::WriteBack;

/// A call's client over HTTP: its messages go to the response being written.
struct HttpClient {
    app: Arc<App>,
    sse: bool,
    stateless: bool,
    out: mpsc::UnboundedSender<Out>,
}

impl Downstream for HttpClient {
    fn live(&self) -> bool {
        self.sse || self.stateless
    }

    fn send(&self, message: String) {
        let _ = self.out.send(Out::Event(message));
    }

    fn expect(&self, ask: &Ask, method: &str) -> Result<(), Error> {
        if self.stateless {
            return Ok(()); // no session: the call's own capabilities were checked
        }
        self.app
            .store
            .write_back(|store| upstream::await_answer(store, ask, method, now_ms()))
            .unwrap_or_else(|| Err(Error::Internal("the client's session kept changing".into())))
    }

    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            if !self.stateless {
                let _ = self.out.send(Out::Event(ask.request.clone()));
                return crate::watch::wait_for(ask, &self.app).await;
            }
            let (tx, rx) = oneshot::channel();
            let key = ask.request_id.as_str().unwrap_or_default().to_string();
            let asked = Out::InputRequired {
                key,
                text: upstream::input_required(ask),
                answer: tx,
            };
            self.out.send(asked).ok()?;
            let wait = std::time::Duration::from_millis(ANSWER_WAIT_MS as u64);
            tokio::time::timeout(wait, rx).await.ok()?.ok()?
        })
    }
}

/// Performs the forward of `answer` at the upstream, relaying what the upstream sends back
/// meanwhile (see the module's header); a 2026-07-28 call that brings the answer to a question
/// its upstream asked goes on with that exchange instead. `principal`: the caller's.
pub(crate) async fn respond(
    gateway: &Gateway,
    app: Arc<App>,
    answer: http::Response,
    principal: Option<&str>,
) -> Reply {
    let Some(f) = answer.forward.as_ref() else {
        return reply(answer);
    };
    let head = http::Response {
        status: 200,
        headers: answer.headers.clone(),
        ..Default::default()
    };
    if f.stateless {
        if let Some((key, response)) = upstream::input_response(&f.params) {
            let Some(parked) = app.parked.take(&upstream::waiting_name(&key, principal)) else {
                return reply(upstream::unawaited(answer, &key));
            };
            let _ = parked.answer.send(Some(response));
            // What comes next answers this request (its own id), not the first.
            return next(parked.out, head, &app, Some(&f.id), principal).await;
        }
    }
    let (sse, stateless) = (f.sse, f.stateless);
    let (tx, rx) = mpsc::unbounded_channel();
    {
        let (gateway, app) = (gateway.clone(), app.clone());
        tokio::spawn(async move {
            let client = HttpClient {
                app: app.clone(),
                sse,
                stateless,
                out: tx.clone(),
            };
            let done = gateway.finish(answer, &app.store, &client).await;
            let _ = tx.send(Out::Done(Box::new(done)));
        });
    }
    next(rx, head, &app, None, principal).await
}

/// `text` (a JSON-RPC response) with the id `id`, when given.
fn with_id(text: String, id: Option<&Value>) -> String {
    match id {
        Some(id) => upstream::answering(text, id),
        None => text,
    }
}

/// The answer of the call whose exchange reports to `rx`: its result; a 2026-07-28 question
/// (the exchange parked until the client calls again); or an SSE stream from the first relayed
/// message on. `id`: the request it answers, when it is not the one the exchange began with
/// (a 2026-07-28 call that came again); `principal`: the caller's, whose call may answer a question.
async fn next(
    mut rx: mpsc::UnboundedReceiver<Out>,
    mut head: http::Response,
    app: &App,
    id: Option<&Value>,
    principal: Option<&str>,
) -> Reply {
    let first = match rx.recv().await {
        Some(Out::Done(mut done)) => {
            done.body = with_id(std::mem::take(&mut done.body), id);
            return reply(*done);
        }
        Some(Out::InputRequired { key, text, answer }) => {
            app.parked
                .put(upstream::waiting_name(&key, principal), Parked { answer, out: rx });
            head.headers.push(("Content-Type".into(), "application/json".into()));
            head.body = with_id(text, id);
            return reply(head);
        }
        Some(Out::Event(e)) => e,
        None => return reply(http::failed()),
    };
    head.headers.extend(
        [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")].map(|(k, v)| (k.into(), v.into())),
    );
    let events = stream::unfold((Some(first), rx), |(first, mut rx)| async move {
        let chunk = match first {
            Some(e) => http::sse_body(&[e], None),
            None => match rx.recv().await? {
                Out::Event(e) => http::sse_body(&[e], None),
                // The answer as an event (its notifications, if any, are events already).
                Out::Done(done) if is_sse(&done) => done.body,
                Out::Done(done) => http::sse_body(&[], Some(&done.body)),
                Out::InputRequired { .. } => return None, // a session's call is never asked so
            },
        };
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(chunk))), (None, rx)))
    });
    let mut r = reply(head);
    *r.body_mut() = StreamBody::new(events).boxed();
    r
}

fn is_sse(r: &http::Response) -> bool {
    r.headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with("text/event-stream"))
}
