//! Long-lived SSE answers of the native server: a session's GET stream and a 2026-07-28
//! `subscriptions/listen`. After the first bytes the stream ticks every second with the server
//! requests would run on now (in gateway mode, the upstream's refreshed lists) and sends what the
//! core's `Watch` reports, a keep-alive comment when nothing happens, and after [`MAX_OPEN`] the
//! graceful end (the client reconnects). A `tools/call` whose tool asks the client mid-call holds
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
use tokio::time::Instant;

use crate::app::{reply, App, Reply};

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
}

/// How often a stream waiting for the client's answer looks for it.
const ANSWER_POLL: Duration = Duration::from_millis(50);

/// The streamed response for an answer that carries a watch or a question for the client (a
/// client's answer is handed to the stream waiting for it).
pub fn stream(mut answer: http::Response, app: Arc<App>) -> Reply {
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
    let open = Open {
        watch,
        app,
        first: Some(std::mem::take(&mut answer.body)),
        opened: Instant::now(),
        sent: Instant::now(),
        done: false,
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
        tokio::time::sleep(TICK).await;
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
