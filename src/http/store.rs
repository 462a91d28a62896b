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
    /// Every session it holds (task holders among them).
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.0.values()
    }

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
        let (admitted, gone) = apply(&mut self.1, step, budget, now_ms);
        // The holders of tasks no longer held go with them; a gateway task's record, from its session.
        for id in &gone {
            match kept_by(id) {
                (holder, None) => {
                    self.0.remove(&holder);
                }
                #[cfg(feature = "gateway")]
                (session, Some(slot)) => {
                    if let Some(s) = self.0.get_mut(&session) {
                        crate::protocol::forget_slot(s, slot);
                    }
                }
                #[cfg(not(feature = "gateway"))]
                (_, Some(_)) => {}
            }
        }
        admitted
    }
}

/// Applies `step` to `ledger` (see [`SessionStore::budget`]): whether a new task is admitted,
/// and the tasks no longer held (expired, or evicted to make room), for [`kept_by`].
pub fn apply(
    ledger: &mut Ledger,
    step: BudgetStep,
    budget: Budget,
    now_ms: i64,
) -> (crate::error::Result<()>, Vec<String>) {
    match step {
        BudgetStep::Admit(entry) => {
            let d = ledger.admit(entry, budget, now_ms);
            let mut gone = d.expired;
            gone.extend(d.evicted);
            (d.admitted, gone)
        }
        BudgetStep::Finish { principal, id } => {
            ledger.finish(&principal, &id, now_ms);
            (Ok(()), Vec::new())
        }
        BudgetStep::Settle { id, expires_ms } => {
            ledger.settle(&id, expires_ms);
            (Ok(()), Vec::new())
        }
    }
}

/// Where a task the budget no longer holds (`id`) was kept: this server's own task in a holder
/// of its own (`tasks:<id>`, to delete: `None`), a gateway task as a record in a session (to
/// drop from it: its slot, `protocol::forget_slot`).
pub fn kept_by(id: &str) -> (String, Option<&str>) {
    match crate::task::budget::slot_holder(id) {
        Some(session) => (session.to_string(), Some(id)),
        None => (format!("{HOLDER_PREFIX}{id}"), None),
    }
}
