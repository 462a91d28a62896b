//! What reaches a downstream session outside any of its requests: the messages its upstreams
//! send on their standalone streams (log messages, `resources/updated`, their questions) and a
//! stdio upstream's log messages, queued for the session's own standalone stream (its `GET`,
//! `watch`), which takes them at once. A session with no such stream open is not reachable:
//! nothing is queued for it (a question is refused upstream instead).
//!
//! [`Clients`] is what the gateway's readers of upstream streams need of the downstream side;
//! the HTTP server's `App` is one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_sieve::protocol::{Ask, Session};
use mcp_sieve::Error;
use serde_json::Value;
use tokio::sync::Notify;

use crate::relay::BoxFuture;

/// The downstream side, as the gateway's readers of upstream streams see it.
pub(crate) trait Clients: Send + Sync {
    /// The downstream session `id`, while it exists.
    fn session(&self, id: &str) -> Option<Session>;
    /// The sessions that have a standalone stream open now.
    fn listening(&self) -> Vec<String>;
    /// Every session held now (a reload closes their sessions at upstreams it removed).
    fn sessions(&self) -> Vec<Session>;
    /// Whether `session` has a standalone stream open now.
    fn reachable(&self, session: &str) -> bool;
    /// Sends `message` on `session`'s standalone stream (nothing when it has none open).
    fn push(&self, session: &str, message: String);
    /// Asks `ask.session`'s client `ask` (a question of `method`) on its standalone stream and
    /// waits for its answer (`Ok(None)`: none came in time); refused when its client did not
    /// declare what `method` needs, or the session ended.
    fn ask<'a>(&'a self, ask: &'a Ask, method: &'a str) -> BoxFuture<'a, Result<Option<Value>, Error>>;
}

#[derive(Default)]
struct Outbox {
    streams: usize,
    queue: Vec<String>,
    wake: Arc<Notify>,
}

/// Every session's outbox.
#[derive(Default)]
pub(crate) struct Outboxes(Mutex<HashMap<String, Outbox>>);

impl Outboxes {
    fn all(&self) -> std::sync::MutexGuard<'_, HashMap<String, Outbox>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A standalone stream of `session` opened: what wakes it when a message is queued.
    pub(crate) fn open(&self, session: &str) -> Arc<Notify> {
        let mut all = self.all();
        let b = all.entry(session.to_string()).or_default();
        b.streams += 1;
        b.wake.clone()
    }

    /// A standalone stream of `session` ended.
    pub(crate) fn close(&self, session: &str) {
        let mut all = self.all();
        if let Some(b) = all.get_mut(session) {
            b.streams = b.streams.saturating_sub(1);
            if b.streams == 0 {
                all.remove(session);
            }
        }
    }

    /// Whether `session` has a standalone stream open.
    pub(crate) fn reachable(&self, session: &str) -> bool {
        self.all().get(session).is_some_and(|b| b.streams > 0)
    }

    /// The sessions with a standalone stream open.
    pub(crate) fn sessions(&self) -> Vec<String> {
        self.all().keys().cloned().collect()
    }

    /// Queues `message` for `session`'s stream, if one is open.
    pub(crate) fn push(&self, session: &str, message: String) {
        if let Some(b) = self.all().get_mut(session) {
            mcp_sieve::upstream::enqueue(&mut b.queue, message);
            b.wake.notify_one();
        }
    }

    /// What is queued for `session`'s stream (taken by one of its streams).
    pub(crate) fn take(&self, session: &str) -> Vec<String> {
        self.all()
            .get_mut(session)
            .map(|b| std::mem::take(&mut b.queue))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_wait_for_an_open_stream_only() {
        let o = Outboxes::default();
        o.push("s", "lost".into());
        assert!(!o.reachable("s") && o.take("s").is_empty());
        let _wake = o.open("s");
        o.push("s", "a".into());
        o.push("s", "b".into());
        assert_eq!(o.sessions(), vec!["s".to_string()]);
        assert_eq!(o.take("s"), vec!["a", "b"]);
        o.close("s");
        assert!(!o.reachable("s"));
    }
}
