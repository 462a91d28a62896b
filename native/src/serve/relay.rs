//! A forwarded call over HTTP whose upstream asks or tells the caller something meanwhile (see
//! `relay`): answered as JSON as before when nothing is relayed, else, for a 2025-11-25 session,
//! as an SSE stream from the first relayed message on (questions and notifications first, the
//! result last; the client's answers, POSTed to its session, reach the call through
//! `App::answers`). A 2026-07-28 call is answered `input_required` instead: the upstream
//! exchange waits in `App::parked` (`relay::ParkedCalls`, bound to the caller's principal)
//! until the client calls again with `inputResponses`; then that request gets what the
//! exchange does next.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use mcp_sieve::http;
use mcp_sieve::protocol::Ask;
use mcp_sieve::upstream;
use mcp_sieve::Error;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::app::{reply, App, Reply};
use crate::platform::now_ms;
use crate::relay::{self, BoxFuture, Downstream, First, Out, Parking};
use crate::sessions::WriteBack;
use crate::upstream::gateway::Gateway;
use crate::upstream::task_asks;

/// A 2025-11-25 session's call over HTTP: its messages go to the response being written.
struct HttpClient {
    app: Arc<App>,
    sse: bool,
    out: mpsc::UnboundedSender<Out>,
}

impl Downstream for HttpClient {
    fn live(&self) -> bool {
        self.sse
    }

    fn send(&self, message: String) {
        let _ = self.out.send(Out::Event(message));
    }

    fn expect(&self, ask: &Ask, method: &str) -> Result<(), Error> {
        self.app
            .store
            .write_back(|store| upstream::await_answer(store, ask, method, now_ms()))
            .unwrap_or_else(|| Err(Error::Internal("the client's session kept changing".into())))
    }

    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Value>> {
        Box::pin(async move {
            let _ = self.out.send(Out::Event(ask.request.clone()));
            crate::serve::watch::wait_for(ask, &self.app).await
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
    let mut head = http::Response {
        status: 200,
        headers: answer.headers.clone(),
        ..Default::default()
    };
    // A stateless client's answer to a task's question (`task_asks`).
    if let Some(done) = task_asks::take_update(gateway, &*app, &answer) {
        return reply(done);
    }
    let asked = f.clone();
    let first = match app.parked.resume(&answer, principal).await {
        Some(first) => first,
        None => {
            let (sse, stateless) = (f.sse, f.stateless);
            let (gateway, me) = (gateway.clone(), app.clone());
            let owner = f
                .session
                .clone()
                .or_else(|| principal.map(str::to_string))
                .unwrap_or_default();
            let registered = app.cancels.register(&owner, &f.id);
            let rx = relay::spawn_cancellable(
                move |out| async move {
                    if stateless {
                        gateway.finish(answer, &me.store, &Parking(out)).await
                    } else {
                        let client = HttpClient {
                            app: me.clone(),
                            sse,
                            out,
                        };
                        gateway.finish(answer, &me.store, &client).await
                    }
                },
                Some(registered),
            );
            app.parked.first(rx, None, principal).await
        }
    };
    let (first, rx) = match first {
        First::Done(done) => return reply(task_asks::show_question(gateway, &app, &asked, *done).await),
        First::Asked(text) => {
            head.headers.push(("Content-Type".into(), "application/json".into()));
            head.body = text;
            return reply(head);
        }
        First::Event(e, rx) => (e, rx),
    };
    // An SSE stream from the first relayed message on.
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
