//! A forwarded call over HTTP whose upstream asks or tells the caller something meanwhile (see
//! `relay`): answered as JSON as before when nothing is relayed, else as an SSE stream from the
//! first relayed message on (the questions and notifications first, the result last). The
//! client's answers, POSTed to its session, reach the waiting call through `App::answers`.

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
use crate::gateway::Gateway;
use crate::platform::now_ms;
use crate::relay::{BoxFuture, Downstream};
use crate::sessions::WriteBack;

/// What the task running a relayed call hands the response being written.
enum Out {
    /// A message for the client during the call.
    Event(String),
    /// The call's answer.
    Done(Box<http::Response>),
}

/// A call's client over HTTP: its messages go to the response being written.
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

    fn answer<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<Value>> {
        Box::pin(crate::watch::wait_for(ask, &self.app))
    }
}

/// Performs the forward of `answer` at the upstream, relaying what the upstream sends back
/// meanwhile: a JSON answer as before when nothing was relayed, else an SSE stream that starts
/// with the first relayed message and ends with the result.
pub(crate) async fn respond(gateway: &Gateway, app: Arc<App>, answer: http::Response) -> Reply {
    let sse = answer.forward.as_ref().is_some_and(|f| f.sse);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let head = http::Response {
        status: 200,
        headers: answer.headers.clone(),
        ..Default::default()
    };
    let task = {
        let (gateway, app, tx) = (gateway.clone(), app.clone(), tx.clone());
        tokio::spawn(async move {
            let client = HttpClient {
                app: app.clone(),
                sse,
                out: tx.clone(),
            };
            let done = gateway.finish(answer, &app.store, &client).await;
            let _ = tx.send(Out::Done(Box::new(done)));
        })
    };
    drop(tx);
    let first = match rx.recv().await {
        Some(Out::Done(done)) => return reply(*done),
        Some(Out::Event(e)) => e,
        None => {
            eprintln!("mcp-sieve: a forwarded call stopped: {:?}", task.await.err());
            return reply(http::failed());
        }
    };
    let mut head = head;
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
