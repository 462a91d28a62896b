//! Where sessions live between requests: the [`SessionStore`] a shell provides, and the
//! in-memory one for a single process.

use crate::protocol::Session;

/// Where sessions live between requests (memory, a Durable Object, ...).
pub trait SessionStore {
    /// The session with this id, if it exists.
    fn load(&mut self, id: &str) -> Option<Session>;
    /// Stores (creates or replaces) a session.
    fn save(&mut self, session: &Session);
    /// Ends a session.
    fn remove(&mut self, id: &str);
}

/// Sessions in a map: for a single process (the native server, one Worker isolate, tests).
#[derive(Debug, Clone, Default)]
pub struct MemoryStore(std::collections::HashMap<String, Session>);

impl MemoryStore {
    /// Removes the sessions last used before `cutoff_ms`; returns how many.
    pub fn evict_idle(&mut self, cutoff_ms: i64) -> usize {
        let before = self.0.len();
        self.0.retain(|_, s| s.last_seen_ms >= cutoff_ms);
        before - self.0.len()
    }
}

impl SessionStore for MemoryStore {
    fn load(&mut self, id: &str) -> Option<Session> {
        self.0.get(id).cloned()
    }
    fn save(&mut self, session: &Session) {
        self.0.insert(session.id.clone(), session.clone());
    }
    fn remove(&mut self, id: &str) {
        self.0.remove(id);
    }
}
