//! Where sessions live between requests: the [`SessionStore`] a shell provides, and the
//! in-memory one for a single process (which also keeps the budget of 2026-07-28 tasks).

use crate::protocol::{BudgetStep, Session, HOLDER_PREFIX};
use crate::task::budget::{Budget, Ledger};

/// Where sessions live between requests (memory, a Durable Object, ...).
pub trait SessionStore {
    /// The session with this id, if it exists.
    fn load(&mut self, id: &str) -> Option<Session>;
    /// Stores (creates or replaces) a session.
    fn save(&mut self, session: &Session);
    /// Ends a session.
    fn remove(&mut self, id: &str);
    /// Applies a 2026-07-28 task's step to the server's task budget (see `task::budget`):
    /// `Err` refuses a new task. A store that keeps no budget admits every task (the Worker's
    /// session objects: the front Worker asks the budget's own object first).
    fn budget(&mut self, step: BudgetStep, budget: Budget, now_ms: i64) -> crate::error::Result<()> {
        let _ = (step, budget, now_ms);
        Ok(())
    }
}

/// Sessions in a map, and the budget of the 2026-07-28 tasks among them: for a single process
/// (the native server, one Worker isolate, tests).
#[derive(Debug, Clone, Default)]
pub struct MemoryStore(std::collections::HashMap<String, Session>, Ledger);

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
    fn budget(&mut self, step: BudgetStep, budget: Budget, now_ms: i64) -> crate::error::Result<()> {
        match step {
            BudgetStep::Admit(entry) => {
                let d = self.1.admit(entry, budget, now_ms);
                // The holders of tasks no longer held go with them.
                for id in d.expired.iter().chain(&d.evicted) {
                    self.0.remove(&format!("{HOLDER_PREFIX}{id}"));
                }
                d.admitted
            }
            BudgetStep::Finish { principal, id } => {
                self.1.finish(&principal, &id, now_ms);
                Ok(())
            }
        }
    }
}
