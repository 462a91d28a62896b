//! The standalone streams (`GET`) of the upstream sessions a 2025-11-25 session holds, read in
//! its Durable Object while its client holds its own `GET` stream open there; what the core
//! (`upstream::on_stream`) makes of each message is carried out: a note queued for the client's
//! stream (`watch` sends it), a question asked there (its answer, POSTed by the client to the
//! same object, reaches `watch::wait_for`) and POSTed back upstream, a list change noted for the
//! next refresh. A stream is opened once the upstream session is confirmed (before the request
//! that opened it is sent), and for each upstream session the session holds when its client's
//! stream opens; it is read until the client's stream closes or the session ends. It is read
//! over the upstream's driver (`gateway::bodiless`): its URL, or its service binding. The native
//! server's twin is `native/src/upstream/standalone.rs`.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use mcp_sieve::http::SessionStore;
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, FromStream, Post, Relayed};
use serde_json::Value;
use worker::{AbortController, Delay};

use crate::platform::{self, now_ms};
use crate::serve::watch;
use crate::telemetry::log;
use crate::upstream::gateway;

/// Most bytes read from one stream (it ends then).
const MAX_STREAM: usize = 4 << 20;
/// How often a reader looks whether its client's stream is still open.
const CHECK_MS: u64 = 1_000;
/// How long the request that opened an upstream session waits for its stream to open.
const OPEN_WAIT_MS: i64 = 2_000;

/// A session's store, made afresh for each use (the object's).
pub type Stores = Rc<dyn Fn() -> Box<dyn SessionStore>>;

#[derive(Default)]
struct Outbox {
    streams: usize,
    queue: Vec<String>,
    /// The streams waiting for the queue to fill ([`Arrived`]), woken by [`push`].
    waiting: Vec<Waker>,
}

thread_local! {
    /// What waits for each session's own stream, by session id (only while one is open).
    static OUTBOX: RefCell<HashMap<String, Outbox>> = RefCell::new(HashMap::new());
    /// The upstream sessions whose streams are read now.
    static READING: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
    /// The store of each session listened to.
    static STORES: RefCell<HashMap<String, Stores>> = RefCell::new(HashMap::new());
}

fn store_of(session: &str) -> Option<Box<dyn SessionStore>> {
    STORES.with(|s| s.borrow().get(session).cloned()).map(|f| f())
}

/// A client's stream of `session` that is open (closed when dropped).
pub struct Listening(String);

impl watch::Incoming for Listening {
    fn take(&mut self) -> Vec<String> {
        take(&self.0)
    }
    fn arrived(&self) -> gateway::LocalFuture<'_, ()> {
        Box::pin(Arrived(&self.0))
    }
}

/// Ready once something is queued for a session's stream (or no stream of it listens).
struct Arrived<'a>(&'a str);

impl Future for Arrived<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        OUTBOX.with(|o| match o.borrow_mut().get_mut(self.0) {
            Some(b) if b.queue.is_empty() => {
                if !b.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                    b.waiting.push(cx.waker().clone());
                }
                Poll::Pending
            }
            _ => Poll::Ready(()),
        })
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        OUTBOX.with(|o| {
            let mut all = o.borrow_mut();
            if let Some(b) = all.get_mut(&self.0) {
                b.streams = b.streams.saturating_sub(1);
                if b.streams == 0 {
                    all.remove(&self.0);
                    STORES.with(|s| s.borrow_mut().remove(&self.0));
                }
            }
        });
    }
}

/// `session`'s client opened its stream: the streams of its upstream sessions are read (those
/// not read yet), with its store made by `stores` (its object's), until its last stream closes.
pub fn listen(server: &Server, session: &str, stores: Stores) -> Listening {
    OUTBOX.with(|o| o.borrow_mut().entry(session.to_string()).or_default().streams += 1);
    STORES.with(|s| s.borrow_mut().insert(session.to_string(), stores));
    if let Some(s) = store_of(session).and_then(|mut st| st.load(session)) {
        let links = gateway::with(server, |g| g.closing(&s)).unwrap_or_default();
        for (member, mut headers) in links {
            let Some(reach) = gateway::Reach::of(member) else {
                continue;
            };
            headers.push(("Accept".into(), "text/event-stream".into()));
            wasm_bindgen_futures::spawn_local(read(reach, headers, session.to_string(), None));
        }
    }
    Listening(session.to_string())
}

fn reachable(session: &str) -> bool {
    OUTBOX.with(|o| o.borrow().get(session).is_some_and(|b| b.streams > 0))
}

fn push(session: &str, message: String) {
    let waiting = OUTBOX.with(|o| {
        let mut all = o.borrow_mut();
        let b = all.get_mut(session)?;
        mcp_sieve::upstream::enqueue(&mut b.queue, message);
        Some(std::mem::take(&mut b.waiting))
    });
    // Woken outside the borrow: a stream polls the outbox again when it runs.
    waiting.into_iter().flatten().for_each(Waker::wake);
}

/// What is queued for `session`'s stream.
fn take(session: &str) -> Vec<String> {
    OUTBOX.with(|o| {
        o.borrow_mut()
            .get_mut(session)
            .map(|b| std::mem::take(&mut b.queue))
            .unwrap_or_default()
    })
}

/// Opens the stream of the upstream session at the upstream `reach` reaches that `headers` name
/// (`opens_stream`), read for `session` from now on; returns once it is open (or refused, or
/// after a while).
pub async fn open(reach: gateway::Reach, headers: Vec<(String, String)>, session: String) {
    let opened = Rc::new(RefCell::new(false));
    wasm_bindgen_futures::spawn_local(read(reach, headers, session, Some(opened.clone())));
    let started = now_ms();
    while !*opened.borrow() && now_ms() - started < OPEN_WAIT_MS {
        Delay::from(Duration::from_millis(20)).await;
    }
}

fn session_header(headers: &[(String, String)]) -> Option<String> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("Mcp-Session-Id"))
        .map(|(_, v)| v.clone())
}

/// Reads one upstream session's stream while `session`'s client listens: at the upstream `reach`
/// reaches, whatever number a reload gives it meanwhile. A reload that removes it or moves it
/// elsewhere ends the stream and closes that upstream session (the session no longer reaches
/// it).
async fn read(
    reach: gateway::Reach,
    headers: Vec<(String, String)>,
    session: String,
    opened: Option<Rc<RefCell<bool>>>,
) {
    let done = |opened: &Option<Rc<RefCell<bool>>>| {
        if let Some(o) = opened {
            *o.borrow_mut() = true;
        }
    };
    let Some(id) = session_header(&headers) else {
        return done(&opened);
    };
    if !READING.with(|r| r.borrow_mut().insert(id.clone())) {
        return done(&opened);
    }
    let controller = AbortController::default();
    let outcome = stream(&reach, &headers, &session, &controller, &opened).await;
    done(&opened);
    if let Err(e) = outcome {
        log::error(format_args!("an upstream session's GET stream: {e}"));
    }
    controller.abort();
    READING.with(|r| r.borrow_mut().remove(&id));
    if reach.now_at().is_none() {
        let principal = store_of(&session)
            .and_then(|mut st| st.load(&session))
            .and_then(|s| s.principal);
        let headers: Vec<_> = headers
            .into_iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("Accept"))
            .collect();
        gateway::close_at(&reach, &headers, principal.as_deref()).await;
    }
}

/// Why an upstream session's GET stream ended before its session did (for the log).
#[derive(Debug, thiserror::Error)]
enum Broken {
    /// Its request got no answer.
    #[error(transparent)]
    Unanswered(#[from] gateway::Unanswered),
    /// Its events could not be read (the core's reason: too long, not SSE).
    #[error(transparent)]
    Events(#[from] mcp_sieve::Error),
    #[error("answered HTTP {0}")]
    Status(u16),
    /// The platform could not read its body.
    #[error("{0}")]
    Read(#[from] worker::Error),
}

async fn stream(
    reach: &gateway::Reach,
    headers: &[(String, String)],
    session: &str,
    controller: &AbortController,
    opened: &Option<Rc<RefCell<bool>>>,
) -> Result<(), Broken> {
    // Over the upstream's driver: its URL, or its service binding (whose body, dropped when
    // this returns, is cancelled; the HTTP request is aborted by the caller).
    // As its POSTs are authorized: with the session's principal's token, or the gateway's.
    let principal = store_of(session)
        .and_then(|mut st| st.load(session))
        .and_then(|s| s.principal);
    let signal = controller.signal();
    let resp = reach
        .bodiless("GET", headers, Some(&signal), principal.as_deref())
        .await?;
    if let Some(o) = opened {
        *o.borrow_mut() = true;
    }
    match resp.status() {
        200 => {}
        // 405: it offers no standalone stream; 404: it forgot the session.
        404 | 405 => return Ok(()),
        s => return Err(Broken::Status(s)),
    }
    let mut resp = worker::Response::from(resp);
    let mut body = resp.stream()?;
    let mut reader = upstream::stream_reader(MAX_STREAM);
    let mut pending = Box::pin(body.next());
    loop {
        let tick = Delay::from(Duration::from_millis(CHECK_MS));
        match select(pending, tick).await {
            Either::Left((None, _)) => return Ok(()),
            Either::Left((Some(chunk), _)) => {
                reader.push(&chunk?)?;
                for msg in reader.take_events() {
                    if !on_message(reach, headers, session, msg).await {
                        return Ok(());
                    }
                }
                pending = Box::pin(body.next());
            }
            Either::Right((_, p)) => {
                if !reachable(session) || reach.now_at().is_none() {
                    return Ok(());
                }
                pending = p;
            }
        }
    }
}

/// Carries out what `msg` becomes for `session`; `false` when it is no longer listened to (or a
/// reload removed its upstream or moved it elsewhere).
async fn on_message(reach: &gateway::Reach, headers: &[(String, String)], session: &str, msg: Value) -> bool {
    let Some(member) = reach.now_at() else {
        return false;
    };
    let Some(mut store) = store_of(session) else {
        return false;
    };
    let Some(s) = store.load(session) else {
        return false;
    };
    let reachable = reachable(session);
    let nonce = platform::fresh_id();
    let relayed = match upstream::on_stream(&msg, session, reach.label(), s.log_level.as_deref(), reachable, &nonce) {
        FromStream::ListChanged => {
            gateway::note_announced(member);
            return true;
        }
        FromStream::Relay(r) => r,
    };
    let post_headers = upstream::post_headers(headers);
    let principal = s.principal.clone();
    match relayed {
        Relayed::Drop => {}
        Relayed::Note(n) => push(session, n),
        Relayed::Reply(answer) => {
            answer_upstream(reach, upstream::answer_post(&post_headers, &answer), principal).await
        }
        Relayed::Ask {
            ask,
            upstream_id,
            method,
        } => {
            // Asked meanwhile: the stream goes on being read.
            let (session, reach) = (session.to_string(), reach.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let answer = match upstream::await_answer(&mut *store, &ask, &method, now_ms()) {
                    Err(e) => upstream::refusal(&upstream_id, &e),
                    Ok(()) => {
                        push(&session, ask.request.clone());
                        let got = watch::wait_for(&ask).await;
                        upstream::stream_answer(&upstream_id, got.as_ref())
                    }
                };
                answer_upstream(&reach, upstream::answer_post(&post_headers, &answer), principal).await;
            });
        }
    }
    true
}

/// Sends `post`, an answer to what the upstream asked on its stream, to that upstream (the one
/// `reach` reaches: never another that a reload numbered as it was).
async fn answer_upstream(reach: &gateway::Reach, post: Post, principal: Option<String>) {
    if let Err(e) = reach.send_for(post, None, principal.as_deref()).await {
        log::error(format_args!(
            "an answer to an upstream's request was not delivered: {e}"
        ));
    }
}
