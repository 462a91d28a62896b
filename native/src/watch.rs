//! Long-lived SSE answers of the native server: a session's GET stream and a 2026-07-28
//! `subscriptions/listen`. After the first bytes the stream ticks every second with the server
//! requests would run on now (in gateway mode, the upstream's refreshed lists) and sends what the
//! core's `Watch` reports, a keep-alive comment when nothing happens, and after [`MAX_OPEN`] the
//! graceful end (the client reconnects).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use mcp_sieve::http;
use mcp_sieve::protocol::Watch;
use tokio::time::Instant;

use crate::serve::{reply, App, Reply};

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

/// The streamed response for an answer that carries a watch.
pub fn stream(mut answer: http::Response, app: Arc<App>) -> Reply {
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
