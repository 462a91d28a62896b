//! Long-lived SSE answers in the Worker: a session's GET stream (served by its Durable Object)
//! and a 2026-07-28 `subscriptions/listen` (served here, statelessly) tick every second with the
//! server requests would run on now — in gateway mode the upstream's refreshed lists, after a
//! reload of the catalog document (`config`) the new configuration's — and send
//! what the core's `Watch` reports (and, in a gateway session's object, what its upstream
//! sessions' standalone streams bring it, as it arrives: `standalone`), a keep-alive comment when
//! nothing happens, and after
//! [`MAX_OPEN_MS`] the graceful end (the client reconnects). A `tools/call` whose tool asks the
//! client mid-call holds its stream until the client's answer, POSTed to the same session (the
//! same Durable Object), arrives in this isolate's [`ANSWERS`].

use std::time::Duration;

use futures_util::future::select;
use futures_util::stream;
use mcp_sieve::http;
use mcp_sieve::protocol::{ask, Answers, Ask, Watch};
use std::cell::RefCell;
use worker::{Delay, Response, ResponseBuilder, Result};

use crate::config::Loaded;
use crate::platform;
use crate::serve::shell;
use crate::upstream::gateway;

/// How often the stream looks for a change.
const TICK_MS: u64 = 1_000;
/// A comment is sent when nothing else was for this long (proxies close idle streams).
const KEEPALIVE_MS: i64 = 15_000;
/// How long one stream stays open.
const MAX_OPEN_MS: i64 = 600_000;

/// How often a stream waiting for the client's answer looks for it.
const ANSWER_POLL_MS: u64 = 50;

thread_local! {
    /// Answers the client POSTed to this object, until the stream that asked takes them.
    static ANSWERS: RefCell<Answers> = RefCell::new(Answers::default());
}

struct Open {
    /// What else the stream carries (see [`Relayed`]).
    relayed: Option<Relayed>,
    watch: Watch,
    loaded: Loaded,
    first: Option<String>,
    opened_ms: i64,
    sent_ms: i64,
    /// When the watch last looked for a change.
    ticked_ms: i64,
    done: bool,
}

/// The platform response for `answer`: streamed when it carries a watch or a question for the
/// client, else as usual (a client's answer is handed to the stream waiting for it).
pub fn respond(answer: http::Response, loaded: Loaded) -> Result<Response> {
    respond_in(answer, loaded, None)
}

/// What else a session's GET stream carries (its upstream sessions' streams, `standalone`);
/// dropped when the stream ends.
pub trait Incoming {
    /// What came since the last call.
    fn take(&mut self) -> Vec<String>;
    /// Ready once something came (the stream waits on it between its ticks, no polling).
    fn arrived(&self) -> gateway::LocalFuture<'_, ()>;
}

/// See [`Incoming`].
pub type Relayed = Box<dyn Incoming>;

/// [`respond`] in the Durable Object of a session whose GET stream also carries what `relayed`
/// brings it.
pub fn respond_in(mut answer: http::Response, loaded: Loaded, relayed: Option<Relayed>) -> Result<Response> {
    if let Some((key, reply)) = answer.answered.take() {
        ANSWERS.with(|a| a.borrow_mut().put(key, &reply, platform::now_ms()));
    }
    if let Some(ask) = answer.ask.take() {
        let first = std::mem::take(&mut answer.body);
        let events = stream::unfold(Some((first, ask)), |state| async move {
            let (first, ask) = state?;
            if !first.is_empty() {
                return Some((
                    Ok::<Vec<u8>, worker::Error>(first.into_bytes()),
                    Some((String::new(), ask)),
                ));
            }
            let reply = wait_for(&ask).await;
            let last = http::sse_body(&[], Some(&ask.finish(reply.as_ref())));
            Some((Ok(last.into_bytes()), None))
        });
        return streamed(&answer, events);
    }
    let Some(watch) = answer.watch.take() else {
        return shell::respond(answer);
    };
    let now = platform::now_ms();
    let open = Open {
        relayed,
        watch,
        loaded,
        first: Some(std::mem::take(&mut answer.body)),
        opened_ms: now,
        sent_ms: now,
        ticked_ms: now,
        done: false,
    };
    let events = stream::unfold(open, |mut o| async move {
        let chunk = next(&mut o).await?;
        Some((Ok::<Vec<u8>, worker::Error>(chunk.into_bytes()), o))
    });
    streamed(&answer, events)
}

fn streamed<S>(answer: &http::Response, events: S) -> Result<Response>
where
    S: futures_util::TryStream + 'static,
    S::Ok: Into<Vec<u8>>,
    S::Error: Into<worker::Error>,
{
    let mut b = ResponseBuilder::new().with_status(answer.status);
    for (k, v) in &answer.headers {
        b = b.with_header(k, v)?;
    }
    b.from_stream(events)
}

/// The client's answer to `ask`, once it came (`None` after `ask::ANSWER_WAIT_MS`).
pub(crate) async fn wait_for(ask: &Ask) -> Option<serde_json::Value> {
    let started = platform::now_ms();
    while platform::now_ms() - started < ask::ANSWER_WAIT_MS {
        if let Some(reply) = ANSWERS.with(|a| a.borrow_mut().take(ask)) {
            return Some(reply);
        }
        Delay::from(Duration::from_millis(ANSWER_POLL_MS)).await;
    }
    None
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
        // Until the next tick, or until the session's upstream sessions' streams bring something.
        let wait = (TICK_MS as i64 - (platform::now_ms() - o.ticked_ms)).clamp(1, TICK_MS as i64);
        let tick = Delay::from(Duration::from_millis(wait as u64));
        match &o.relayed {
            Some(r) => drop(select(tick, r.arrived()).await),
            None => tick.await,
        }
        let now = platform::now_ms();
        // What they brought goes at once.
        let relayed = o.relayed.as_mut().map(|r| r.take()).unwrap_or_default();
        if !relayed.is_empty() {
            o.sent_ms = now;
            return Some(http::sse_body(&relayed, None));
        }
        if now - o.ticked_ms < TICK_MS as i64 {
            continue;
        }
        o.ticked_ms = now;
        if now - o.opened_ms > MAX_OPEN_MS {
            o.done = true;
            return Some(
                o.watch
                    .close()
                    .map_or_else(String::new, |end| http::sse_body(&[], Some(&end))),
            );
        }
        // A reload (`config`) puts a new configuration in place: the stream goes on over it.
        if let Some(current) = crate::config::current().await {
            o.loaded = current;
        }
        let events = match &o.loaded.server {
            Ok(local) => match gateway::serving(local).await {
                Ok(Some(current)) => o.watch.tick(&current),
                Ok(None) => o.watch.tick(local),
                Err(_) => Vec::new(), // the upstream is unreachable: nothing new to report
            },
            Err(_) => Vec::new(),
        };
        if !events.is_empty() {
            o.sent_ms = now;
            return Some(http::sse_body(&events, None));
        }
        if now - o.sent_ms >= KEEPALIVE_MS {
            o.sent_ms = now;
            return Some(": keep-alive\n\n".into());
        }
    }
}
