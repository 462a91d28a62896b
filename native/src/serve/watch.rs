//! Long-lived SSE answers of the native server: a session's GET stream and a 2026-07-28
//! `subscriptions/listen`. After the first bytes the stream ticks every second with the server
//! requests would run on now (in gateway mode, the upstream's refreshed lists) and sends what the
//! core's `Watch` reports, a keep-alive comment when nothing happens, and after [`MAX_OPEN`] the
//! graceful end (the client reconnects). A session's GET stream also carries, as soon as they
//! are queued, what its upstreams send outside its requests (`outbox`, `standalone`). A `tools/call` whose tool asks the client mid-call holds
//! its stream until the client's answer, POSTed to the same session, arrives in `App::answers`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use mcp_sieve::http;
use mcp_sieve::protocol::{ask, Ask, Watch};
use tokio::sync::Notify;
use tokio::time::Instant;

use mcp_sieve::http::SessionStore;
use mcp_sieve::protocol::Session;
use mcp_sieve::{upstream, Error};
use serde_json::Value;

use crate::app::{reply, App, Reply};
use crate::platform::now_ms;
use crate::relay::BoxFuture;
use crate::sessions::outbox::Clients;
use crate::sessions::WriteBack;

/// How often the stream looks for a change.
const TICK: Duration = Duration::from_secs(1);
/// A comment is sent when nothing else was for this long.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// How long one stream stays open.
const MAX_OPEN: Duration = Duration::from_secs(600);

struct Open {
    watch: Watch,
    app: Arc<App>,
    first: Option<String>,
    opened: Instant,
    sent: Instant,
    done: bool,
    /// A session's standalone stream: its id and what wakes it when its outbox gets a message
    /// (what its upstreams send outside its requests, see `outbox`).
    listening: Option<(String, Arc<Notify>)>,
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Some((session, _)) = &self.listening {
            self.app.outbox.close(session);
        }
    }
}

/// How often a stream waiting for the client's answer looks for it.
const ANSWER_POLL: Duration = Duration::from_millis(50);

/// The streamed response for an answer that carries a watch or a question for the client (a
/// client's answer is handed to the stream waiting for it). `session`: the session whose
/// standalone stream (`GET`) this is, if it is one.
pub fn stream(mut answer: http::Response, app: Arc<App>, session: Option<String>) -> Reply {
    if let Some((key, reply)) = answer.answered.take() {
        app.answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put(key, &reply, crate::platform::now_ms());
    }
    if let Some(ask) = answer.ask.take() {
        let first = std::mem::take(&mut answer.body);
        let events = stream::unfold(Some((first, ask, app)), |state| async move {
            let (first, ask, app) = state?;
            if !first.is_empty() {
                return Some((
                    Ok::<_, Infallible>(Frame::data(Bytes::from(first))),
                    Some((String::new(), ask, app)),
                ));
            }
            let reply = wait_for(&ask, &app).await;
            let last = http::sse_body(&[], Some(&ask.finish(reply.as_ref())));
            Some((Ok(Frame::data(Bytes::from(last))), None))
        });
        let mut r = reply(answer);
        *r.body_mut() = StreamBody::new(events).boxed();
        return r;
    }
    let Some(watch) = answer.watch.take() else {
        return reply(answer);
    };
    let listening = session.map(|s| {
        let wake = app.outbox.open(&s);
        (s, wake)
    });
    let open = Open {
        watch,
        app,
        first: Some(std::mem::take(&mut answer.body)),
        opened: Instant::now(),
        sent: Instant::now(),
        done: false,
        listening,
    };
    let events = stream::unfold(open, |mut o| async move {
        let chunk = next(&mut o).await?;
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(chunk))), o))
    });
    let mut r = reply(answer);
    *r.body_mut() = StreamBody::new(events).boxed();
    r
}

/// The next bytes of the stream, `None` at its end.
async fn next(o: &mut Open) -> Option<String> {
    if let Some(first) = o.first.take().filter(|f| !f.is_empty()) {
        return Some(first);
    }
    if o.done {
        return None;
    }
    loop {
        match o.listening.as_ref().map(|(s, wake)| (s.clone(), wake.clone())) {
            Some((session, wake)) => {
                tokio::select! {
                    _ = tokio::time::sleep(TICK) => {}
                    _ = wake.notified() => {}
                }
                let queued = o.app.outbox.take(&session);
                if !queued.is_empty() {
                    o.sent = Instant::now();
                    return Some(http::sse_body(&queued, None));
                }
            }
            None => tokio::time::sleep(TICK).await,
        }
        if o.opened.elapsed() > MAX_OPEN {
            o.done = true;
            return Some(
                o.watch
                    .close()
                    .map_or_else(String::new, |end| http::sse_body(&[], Some(&end))),
            );
        }
        let events = match o.app.current().await {
            Some(server) => o.watch.tick(&server),
            None => Vec::new(), // the upstream is unreachable: nothing new to report
        };
        if !events.is_empty() {
            o.sent = Instant::now();
            return Some(http::sse_body(&events, None));
        }
        if o.sent.elapsed() >= KEEPALIVE {
            o.sent = Instant::now();
            return Some(": keep-alive\n\n".into());
        }
    }
}

/// The HTTP server's sessions as the gateway's readers of upstream streams reach them: through
/// their standalone streams (`outbox`).
impl Clients for App {
    fn session(&self, id: &str) -> Option<Session> {
        self.store.snapshot().load(id)
    }

    fn listening(&self) -> Vec<String> {
        self.outbox.sessions()
    }

    fn sessions(&self) -> Vec<Session> {
        self.store.all()
    }

    fn reachable(&self, session: &str) -> bool {
        self.outbox.reachable(session)
    }

    fn push(&self, session: &str, message: String) {
        self.outbox.push(session, message)
    }

    fn ask<'a>(&'a self, ask: &'a Ask, method: &'a str) -> BoxFuture<'a, Result<Option<Value>, Error>> {
        Box::pin(async move {
            self.store
                .write_back(|store| upstream::await_answer(store, ask, method, now_ms()))
                .unwrap_or_else(|| Err(Error::Internal("the client's session kept changing".into())))?;
            self.outbox.push(&ask.session, ask.request.clone());
            Ok(crate::serve::watch::wait_for(ask, self).await)
        })
    }
}

/// The client's answer to `ask`, once it came (`None` after `ask::ANSWER_WAIT_MS`).
pub(crate) async fn wait_for(ask: &Ask, app: &App) -> Option<serde_json::Value> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(ask::ANSWER_WAIT_MS as u64) {
        if let Some(reply) = app.answers.lock().unwrap_or_else(|p| p.into_inner()).take(ask) {
            return Some(reply);
        }
        tokio::time::sleep(ANSWER_POLL).await;
    }
    None
}
