//! Reads the standalone stream (`GET`) of each upstream session opened for one downstream
//! session, and carries out what the core (`upstream::on_stream`) makes of each message: to
//! that session's own standalone stream (`outbox`), a question asked there and its answer
//! POSTed back upstream, a list change noted for the next refresh. Opened once the upstream
//! session is confirmed (before the request that opened it is sent, so what the upstream asks
//! while serving it has somewhere to go); read again when it ends while both sessions live; an
//! upstream answering 405 has no such stream (nothing is said); after a reload it is read for
//! the gateway that replaced the one that opened it, or ends if the upstream left or moved to
//! another URL. Also: a stdio upstream's log messages, to every session that set a level at or
//! below theirs, and to the server's log.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_sieve::protocol::log_wanted;
use mcp_sieve::upstream::{self, FromStream, Post, Relayed};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::upstream::gateway::Gateway;

/// How long the request that opened an upstream session waits for its stream to open.
const OPEN_WAIT: Duration = Duration::from_secs(2);
/// Most bytes read from one stream before it is opened again (its events are kept till then).
const MAX_STREAM: usize = 4 << 20;
/// How long the delivery of a client's answer to an upstream's request may take.
const ANSWER_DEADLINE: Duration = Duration::from_secs(30);
/// Largest reply to such a delivery read, bytes (it is a `202`).
const ANSWER_MAX: usize = 1 << 20;
/// The wait before a stream that ended is opened again; it is not, after this many ends in a
/// row that came sooner than [`QUICK_END`] after opening.
const REOPEN_WAIT: Duration = Duration::from_secs(1);
const QUICK_END: Duration = Duration::from_secs(5);
const MAX_QUICK_ENDS: u32 = 3;

impl Gateway {
    /// Opens the standalone stream of the session at upstream `member` that `headers` name,
    /// read for downstream session `session` from now on; returns once it is open (or refused,
    /// or after [`OPEN_WAIT`]).
    pub(crate) async fn open_stream(&self, member: usize, headers: Vec<(String, String)>, session: String) {
        if self.http_url(member).is_none() || self.clients().is_none() {
            return;
        }
        let (opened, wait) = oneshot::channel();
        tokio::spawn(self.clone().read_stream(member, headers, session, opened));
        let _ = tokio::time::timeout(OPEN_WAIT, wait).await;
    }

    async fn read_stream(
        mut self,
        mut member: usize,
        headers: Vec<(String, String)>,
        session: String,
        opened: oneshot::Sender<()>,
    ) {
        let Some(url) = self.http_url(member).map(str::to_string) else {
            return;
        };
        let label = self.state().upstream_at(member).map(|u| u.label()).unwrap_or_default();
        let mut opened = Some(opened);
        let mut quick_ends = 0;
        loop {
            // Opened again for the gateway serving now (its token), if the upstream is still there.
            let Some(now) = self.now_serving(member) else {
                return;
            };
            (self, member) = now;
            let mut req = hyper::Request::get(&url);
            for (k, v) in &headers {
                req = req.header(k, v);
            }
            if let Some(bearer) = self.current_authorization(member) {
                req = req.header("authorization", bearer);
            }
            let Ok(req) = req.body(Full::new(Bytes::new())) else {
                return;
            };
            let began = tokio::time::Instant::now();
            let resp = tokio::time::timeout(OPEN_WAIT * 5, self.http_client().request(req)).await;
            if let Some(o) = opened.take() {
                let _ = o.send(());
            }
            let resp = match resp {
                Ok(Ok(r)) if r.status() == 200 => r,
                // 405: it offers no standalone stream; 404: it forgot the session (a request
                // of the session opens another, and its stream then).
                Ok(Ok(r)) if matches!(r.status().as_u16(), 404 | 405) => return,
                Ok(Ok(r)) => {
                    tracing::warn!("{label} answered its session's GET stream with HTTP {}", r.status());
                    return;
                }
                Ok(Err(e)) => {
                    tracing::warn!("{label}: its session's GET stream did not open: {e}");
                    return;
                }
                Err(_) => return,
            };
            let mut reader = upstream::stream_reader(MAX_STREAM);
            let mut body = resp.into_body();
            loop {
                let frame = {
                    let replaced = self.replaced();
                    tokio::pin!(replaced);
                    replaced.as_mut().enable();
                    if self.is_replaced() {
                        None
                    } else {
                        tokio::select! {
                            frame = body.frame() => Some(frame),
                            () = replaced => None,
                        }
                    }
                };
                // Replaced by a reload: read on for the gateway serving the upstream now (this
                // one is let go), or end if the upstream left or moved.
                let Some(frame) = frame else {
                    let Some(now) = self.now_serving(member) else {
                        return;
                    };
                    (self, member) = now;
                    continue;
                };
                let Some(Ok(frame)) = frame else { break };
                let Some(data) = frame.data_ref() else { continue };
                if reader.push(data).is_err() {
                    break; // read again from a fresh stream
                }
                for msg in reader.take_events() {
                    // After a reload, the gateway that serves the upstream now takes it (a list
                    // change is its to refresh); the stream of one changed or removed ends.
                    let Some(now) = self.now_serving(member) else {
                        return;
                    };
                    (self, member) = now;
                    if !self
                        .on_stream_message(member, &url, &headers, &session, &label, msg)
                        .await
                    {
                        return; // the downstream session ended
                    }
                }
            }
            let alive = self.clients().is_some_and(|c| c.session(&session).is_some());
            quick_ends = if began.elapsed() < QUICK_END { quick_ends + 1 } else { 0 };
            if !alive || quick_ends >= MAX_QUICK_ENDS {
                return;
            }
            tokio::time::sleep(REOPEN_WAIT).await;
        }
    }

    /// Carries out what `msg` becomes for `session`; `false` when the session is gone.
    async fn on_stream_message(
        &self,
        member: usize,
        url: &str,
        headers: &[(String, String)],
        session: &str,
        label: &str,
        msg: Value,
    ) -> bool {
        let Some(clients) = self.clients() else {
            return false;
        };
        let Some(s) = clients.session(session) else {
            return false;
        };
        let nonce = crate::platform::fresh_id().unwrap_or_else(|_| format!("{:x}", crate::platform::now_ms()));
        let reachable = clients.reachable(session);
        let relayed = match upstream::on_stream(&msg, session, label, s.log_level.as_deref(), reachable, &nonce) {
            FromStream::ListChanged => {
                self.state().note_announced(member);
                return true;
            }
            FromStream::Relay(r) => r,
        };
        let post_headers = upstream::post_headers(headers);
        let post = |answer: Value| upstream::answer_post(&post_headers, &answer);
        match relayed {
            Relayed::Drop => {}
            Relayed::Note(n) => clients.push(session, n),
            Relayed::Reply(answer) => self.answer_upstream(url, post(answer)).await,
            Relayed::Ask {
                ask,
                upstream_id,
                method,
            } => {
                // Asked meanwhile: the stream goes on being read.
                let (me, url, post) = (self.clone(), url.to_string(), post(Value::Null));
                tokio::spawn(async move {
                    let answer = match clients.ask(&ask, &method).await {
                        Ok(got) => upstream::stream_answer(&upstream_id, got.as_ref()),
                        Err(e) => upstream::refusal(&upstream_id, &e),
                    };
                    me.answer_upstream(&url, upstream::answer_post(&post.headers, &answer))
                        .await;
                });
            }
        }
        true
    }

    async fn answer_upstream(&self, url: &str, post: Post) {
        let bounded = tokio::time::timeout(ANSWER_DEADLINE, self.post_http(url, post, None, ANSWER_MAX));
        if let Err(e) = bounded.await.unwrap_or_else(|_| {
            Err(mcp_sieve::Error::Upstream(format!(
                "it did not take the answer within {} s",
                ANSWER_DEADLINE.as_secs()
            )))
        }) {
            tracing::warn!("an answer to an upstream's request was not delivered: {e}");
        }
    }

    /// Each stdio upstream's log message (upstream, message) goes to the sessions with a
    /// standalone stream whose client set a level at or below it; the server's log has it
    /// already (the driver writes it there).
    pub(crate) async fn broadcast_logs(self, mut logs: mpsc::UnboundedReceiver<(usize, Value)>) {
        // Not holding the gateway: its pipes hold the channel's senders, so a gateway this task
        // held would never be dropped (each reload's old gateway, its lists among it, kept
        // forever). Once nothing else holds it, its pipes go, the channel closes and this ends.
        let gateway = self.weak();
        drop(self);
        while let Some((_, msg)) = logs.recv().await {
            let Some(clients) = gateway.upgrade().and_then(|g| g.clients()) else {
                continue;
            };
            let text = msg.to_string();
            for id in clients.listening() {
                let level = clients.session(&id).and_then(|s| s.log_level);
                if log_wanted(level.as_deref(), &msg, false) {
                    clients.push(&id, text.clone());
                }
            }
        }
    }

    /// Passes `body`, which the client of downstream session `session` sent (a notification),
    /// on to its upstream sessions when the core says so (a roots change; see
    /// `upstream::Gateway::notifying`).
    pub(crate) async fn pass_on(&self, session: &mcp_sieve::protocol::Session, body: &[u8]) {
        let sends = self.state().notifying(session, body);
        for (member, mut conv, mut exchange) in sends {
            if let Err(e) = upstream::drive(&mut conv, &mut exchange, |p| self.post(member, p, None)).await {
                tracing::warn!("a client's notification was not passed on: {e}");
            }
        }
    }
}
