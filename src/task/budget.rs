//! The budget of 2026-07-28 tasks. Each such task lives in a holder of its own (a session named
//! after the task, see `protocol::task_holder`), so no session caps them: this ledger does. It
//! knows every held task's owner, when it finishes and when it expires, and admits a new one only
//! within two caps — per principal (anonymous callers share one budget) and for the whole server —
//! making room by evicting the oldest *finished* task (its result is dropped early) and never a
//! working one: past a cap with nothing finished, the new task is refused. The shell keeps one
//! ledger (the native server in memory, the Worker in a Durable Object of its own) and deletes the
//! holders the ledger reports gone.
//!
//! A gateway's tasks at its upstreams count against the same total: each is admitted under a
//! [`slot`] (its task id is the upstream's, known only once it answers) before the call leaves,
//! [`Ledger::settle`]d when the upstream answered, finished when the holder learns so; a slot the
//! ledger reports gone is forgotten by the session that holds its record ([`slot_holder`]). So are
//! a 2025-11-25 session's tasks of this server's own: admitted under a slot before they run.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::{Error, Result};

/// The principal key of callers without one: they share one budget.
pub const ANONYMOUS: &str = "";

/// The caps (catalog `options.maxTasksPerPrincipal` and `options.maxTasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Most tasks one principal holds (all anonymous callers together count as one).
    pub per_principal: usize,
    /// Most tasks the server holds.
    pub total: usize,
}

impl Budget {
    /// No cap: for a step that admits no task.
    pub const UNCAPPED: Budget = Budget {
        per_principal: usize::MAX,
        total: usize::MAX,
    };
}

/// One held task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The task's id (its holder is `tasks:<id>`).
    pub id: String,
    /// Its owner ([`ANONYMOUS`] for none).
    pub principal: String,
    /// When it finishes (completes, or was cancelled), ms since the epoch.
    pub finishes_ms: i64,
    /// When its TTL ends and it is gone anyway.
    pub expires_ms: i64,
}

/// A step of a task's life the budget takes (`protocol::budget_step` for this server's own
/// 2026-07-28 tasks, `protocol::Forward` for a gateway's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetStep {
    /// A new task: admit this entry (or refuse the request) before it is created.
    Admit(Entry),
    /// `tasks/cancel`: the task finishes now (may be evicted from now on); also a gateway task
    /// its upstream said finished.
    Finish {
        /// Its owner as the caller claims (another principal's id changes nothing).
        principal: String,
        /// The task id.
        id: String,
    },
    /// A gateway call admitted under slot `id` (`budget::slot`) got its upstream's answer: the
    /// task it made lives until `expires_ms`, or it made none (`None`: the slot is freed).
    Settle {
        /// The slot.
        id: String,
        /// When the task's record expires.
        expires_ms: Option<i64>,
    },
}

/// What [`Ledger::admit`] decided.
#[derive(Debug)]
pub struct Decision {
    /// `Ok` when the task was admitted (and recorded); else the refusal to answer with.
    pub admitted: Result<()>,
    /// Tasks whose TTL has passed: gone from the ledger (their holders delete them too).
    pub expired: Vec<String>,
    /// Finished tasks evicted to make room: delete their holders.
    pub evicted: Vec<String>,
}

/// The held tasks, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    entries: Vec<Entry>,
}

impl Ledger {
    /// A ledger of these entries (as stored), oldest first.
    pub fn from_entries(entries: Vec<Entry>) -> Self {
        Ledger { entries }
    }

    /// The held tasks, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Records a new task if both caps allow it, evicting the oldest finished task (of the same
    /// principal for its cap, of anyone for the server's) when a cap is reached.
    pub fn admit(&mut self, entry: Entry, budget: Budget, now_ms: i64) -> Decision {
        let mut expired = Vec::new();
        self.entries.retain(|e| {
            let live = e.expires_ms > now_ms;
            if !live {
                expired.push(e.id.clone());
            }
            live
        });
        let mut gone = Vec::new();
        // A repeated id (a retried request) is the same task, already counted.
        if self.entries.iter().any(|e| e.id == entry.id) {
            return Decision {
                admitted: Ok(()),
                expired,
                evicted: gone,
            };
        }
        let mine = self.entries.iter().filter(|e| e.principal == entry.principal).count();
        if mine >= budget.per_principal.max(1) {
            match self.evict(now_ms, Some(&entry.principal)) {
                Some(id) => gone.push(id),
                None => {
                    return Decision {
                        admitted: Err(refusal(PER_PRINCIPAL, budget.per_principal, &entry.principal)),
                        expired,
                        evicted: gone,
                    }
                }
            }
        }
        if self.entries.len() >= budget.total.max(1) {
            match self.evict(now_ms, None) {
                Some(id) => gone.push(id),
                None => {
                    return Decision {
                        admitted: Err(refusal(TOTAL, budget.total, &entry.principal)),
                        expired,
                        evicted: gone,
                    }
                }
            }
        }
        self.entries.push(entry);
        Decision {
            admitted: Ok(()),
            expired,
            evicted: gone,
        }
    }

    /// The task `id` of `principal` finished now (it was cancelled): it may be evicted from now
    /// on. Another principal's id changes nothing. Returns whether an entry changed.
    pub fn finish(&mut self, principal: &str, id: &str, now_ms: i64) -> bool {
        match self
            .entries
            .iter_mut()
            .find(|e| e.id == id && e.principal == principal && e.finishes_ms > now_ms)
        {
            Some(e) => {
                e.finishes_ms = now_ms;
                true
            }
            None => false,
        }
    }

    /// The gateway call that reserved slot `id` got its answer: the task it made works (as far as
    /// this server knows, until told it finished) and lives until `expires_ms`, or it made none
    /// (`None`: the slot is freed). Returns whether an entry changed.
    pub fn settle(&mut self, id: &str, expires_ms: Option<i64>) -> bool {
        let Some(pos) = self.entries.iter().position(|e| e.id == id) else {
            return false;
        };
        match expires_ms {
            Some(t) => {
                let e = &mut self.entries[pos];
                (e.finishes_ms, e.expires_ms) = (t, t);
            }
            None => {
                self.entries.remove(pos);
            }
        }
        true
    }

    /// Removes the oldest finished task (of `principal`, when given); returns its id.
    fn evict(&mut self, now_ms: i64, principal: Option<&str>) -> Option<String> {
        let pos = self
            .entries
            .iter()
            .position(|e| e.finishes_ms <= now_ms && principal.is_none_or(|p| e.principal == p))?;
        Some(self.entries.remove(pos).id)
    }
}

/// The budget id of the task that the request given `fresh_id` may create, kept by session
/// `holder`: a gateway task's record (in a 2025-11-25 session, or the holder of a principal's
/// tasks), or a 2025-11-25 session's task of this server's own. A 2026-07-28 task of this
/// server's own is its holder's (its id, a fresh id, has no `@`).
pub fn slot(holder: &str, fresh_id: &str) -> String {
    format!("{fresh_id}@{holder}")
}

/// The session keeping the task with budget id `id` ([`slot`]); `None` for a 2026-07-28 task of
/// this server's own (held by `tasks:<id>`).
pub fn slot_holder(id: &str) -> Option<&str> {
    id.split_once('@').map(|(_, holder)| holder)
}

/// The option of the cap per principal.
pub(crate) const PER_PRINCIPAL: &str = "maxTasksPerPrincipal";
const TOTAL: &str = "maxTasks";

/// The refusal of a task beyond the cap named by `option`: what the limit is and what to do.
pub(crate) fn refusal(option: &str, cap: usize, principal: &str) -> Error {
    let message = if option == PER_PRINCIPAL {
        let who = match principal {
            ANONYMOUS => "callers without a token (who share one budget) already hold",
            _ => "this caller already holds",
        };
        format!(
            "params.task: {who} {cap} tasks, the most one caller may hold \
             (options.maxTasksPerPrincipal), and none has finished yet; wait for one to finish, \
             cancel one with tasks/cancel, or call without params.task"
        )
    } else {
        format!(
            "params.task: this server already holds {cap} tasks, the most it holds at once \
             (options.maxTasks), and none has finished yet; try again later, or call without params.task"
        )
    };
    Error::params_with(message, json!({"limit": cap, "option": option}))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: Budget = Budget {
        per_principal: 2,
        total: 3,
    };

    fn entry(id: &str, principal: &str, finishes_ms: i64) -> Entry {
        Entry {
            id: id.into(),
            principal: principal.into(),
            finishes_ms,
            expires_ms: 1_000,
        }
    }

    #[test]
    fn a_principal_past_its_cap_is_refused_until_one_of_its_tasks_finishes() {
        let mut l = Ledger::default();
        assert!(l.admit(entry("a1", "alice", 100), CAPS, 0).admitted.is_ok());
        assert!(l.admit(entry("a2", "alice", 100), CAPS, 0).admitted.is_ok());
        let refused = l.admit(entry("a3", "alice", 100), CAPS, 0).admitted.unwrap_err();
        assert_eq!(refused.code(), -32602);
        assert!(refused.to_string().contains("maxTasksPerPrincipal"), "{refused}");
        // Bob has a budget of his own.
        assert!(l.admit(entry("b1", "bob", 100), CAPS, 0).admitted.is_ok());
        // Once a1 has finished, it makes room for alice's next.
        let d = l.admit(entry("a3", "alice", 100), CAPS, 100);
        assert!(d.admitted.is_ok());
        assert_eq!(d.evicted, vec!["a1".to_string()]);
    }

    #[test]
    fn the_server_cap_evicts_the_oldest_finished_task_of_anyone_and_never_a_working_one() {
        let mut l = Ledger::default();
        for (id, p) in [("a1", "alice"), ("b1", "bob"), ("c1", ANONYMOUS)] {
            assert!(l.admit(entry(id, p, 50), CAPS, 0).admitted.is_ok());
        }
        let refused = l.admit(entry("d1", "dave", 50), CAPS, 10).admitted.unwrap_err();
        assert!(refused.to_string().contains("options.maxTasks)"), "{refused}");
        let d = l.admit(entry("d1", "dave", 50), CAPS, 60);
        assert!(d.admitted.is_ok());
        assert_eq!(d.evicted, vec!["a1".to_string()]);
        // Expired tasks are gone first, and reported.
        let d = l.admit(entry("e1", "eve", 2_000), CAPS, 1_000);
        assert!(d.admitted.is_ok());
        assert_eq!(d.expired.len(), 3, "{:?}", d.expired);
    }

    #[test]
    fn cancelling_finishes_a_task_for_its_owner_only() {
        let mut l = Ledger::default();
        assert!(l.admit(entry("a1", "alice", 500), CAPS, 0).admitted.is_ok());
        assert!(
            !l.finish("bob", "a1", 10),
            "another principal cannot finish alice's task"
        );
        assert!(l.finish("alice", "a1", 10));
        assert_eq!(l.entries()[0].finishes_ms, 10);
        let anonymous = l.admit(entry("x1", ANONYMOUS, 500), CAPS, 10);
        assert!(anonymous.admitted.is_ok());
        let again = l.admit(entry("x1", ANONYMOUS, 500), CAPS, 10);
        assert!(
            again.admitted.is_ok() && l.entries().len() == 2,
            "a repeated id is counted once"
        );
    }

    #[test]
    fn a_gateway_slot_is_held_until_settled_and_freed_when_no_task_came() {
        let mut l = Ledger::default();
        let slot = slot("tasks:@alice", "f1");
        assert_eq!(slot_holder(&slot), Some("tasks:@alice"));
        assert_eq!(slot_holder("f1"), None, "a task of this server's own");
        assert!(l.admit(entry(&slot, "alice", 900), CAPS, 0).admitted.is_ok());
        assert!(l.settle(&slot, Some(5_000)));
        assert_eq!((l.entries()[0].finishes_ms, l.entries()[0].expires_ms), (5_000, 5_000));
        assert!(l.settle(&slot, None) && l.entries().is_empty());
        assert!(!l.settle(&slot, None), "an unknown slot changes nothing");
    }
}
