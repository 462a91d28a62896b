//! The native server's sessions, shared by requests that run in parallel on every core. No lock
//! is held while a request runs: a request reads the sessions it needs under a short lock (a
//! shared handle to the stored session, copied once after the lock), runs the core's rules on its
//! copy, and writes back under a short lock.
//!
//! Two requests of one session may run at once. Their writes are checked, not blindly applied
//! (last writer wins would lose, say, a `concerns/update` made while a slow `tools/list` ran, or
//! a pending question recorded meanwhile): every stored session has a version, and a request
//! writes a session back only if its version is still the one the request read. Otherwise the
//! request *conflicts*: nothing of it is written, and the shell runs it again on the current
//! session (its effects — the answer, a forward, a stream — are only acted on for the run that
//! was written). So the requests of one session behave as if they ran one after the other, and
//! requests that only read a session (most of them) never wait or run twice.
//!
//! One write is merged instead: when a request changed nothing but `last_seen_ms` (it records
//! its use, coarsely, see `http::Config`), and the session changed meanwhile, the later time is
//! kept on the current session and the request does not run again.
//!
//! The budget of tasks (`task::budget`: this server's own 2026-07-28 tasks, and a gateway's at its
//! upstreams) is one ledger beside the shards, under its own short lock. A task is admitted under
//! a fresh id (its holder's, or its slot's), so a run of its request again is not admitted twice.

pub(crate) mod outbox;

use std::collections::hash_map::{DefaultHasher, Entry};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_sieve::error::Result;
use mcp_sieve::http::{MemoryStore, SessionStore};
use mcp_sieve::protocol::{BudgetStep, Session};
use mcp_sieve::task::budget::{Budget, Ledger};

/// Shards of the map: requests of different sessions rarely take the same lock.
const SHARDS: usize = 16;
/// Most runs of one request whose session other requests keep writing meanwhile. Each conflict
/// means another request of the session was written: the server as a whole made progress.
pub const MAX_RUNS: usize = 16;

/// Session storage the shell's code runs over: `f` runs until its writes hold.
pub trait WriteBack {
    /// Runs `f` over the sessions (again, while its writes conflict with another request's);
    /// `None` when they conflicted [`MAX_RUNS`] times.
    fn write_back<T>(&self, f: impl FnMut(&mut dyn SessionStore) -> T) -> Option<T>;
}

impl WriteBack for Sessions {
    fn write_back<T>(&self, mut f: impl FnMut(&mut dyn SessionStore) -> T) -> Option<T> {
        (0..MAX_RUNS).find_map(|_| {
            let mut store = self.snapshot();
            let out = f(&mut store);
            (!store.conflicted()).then_some(out)
        })
    }
}

/// One store behind one lock, held while `f` runs (the stdio server: one client).
impl WriteBack for Mutex<MemoryStore> {
    fn write_back<T>(&self, mut f: impl FnMut(&mut dyn SessionStore) -> T) -> Option<T> {
        Some(f(&mut *self.lock().unwrap_or_else(|p| p.into_inner())))
    }
}

/// A stored session and its version (how many times it was written). Shared with the runs that
/// read this version (their record of what they read), so a read copies the session once.
struct Stored {
    session: Arc<Session>,
    version: u64,
}

/// Every session of this process.
pub struct Sessions {
    shards: Vec<Mutex<HashMap<String, Stored>>>,
    /// The 2026-07-28 tasks held, against the catalog's caps.
    ledger: Mutex<Ledger>,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            ledger: Mutex::default(),
        }
    }
}

impl Sessions {
    fn shard(&self, id: &str) -> MutexGuard<'_, HashMap<String, Stored>> {
        let mut h = DefaultHasher::new();
        id.hash(&mut h);
        self.shards[(h.finish() as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// A request's view of the sessions (see [`Snapshot`]).
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            sessions: self,
            read: HashMap::new(),
            conflict: false,
        }
    }

    /// Removes the sessions last used before `cutoff_ms`; returns them (a gateway closes their
    /// upstream sessions).
    pub fn evict_idle(&self, cutoff_ms: i64) -> Vec<Session> {
        let mut evicted = Vec::new();
        for shard in &self.shards {
            let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
            let idle: Vec<String> = s
                .iter()
                .filter(|(_, v)| v.session.last_seen_ms < cutoff_ms)
                .map(|(k, _)| k.clone())
                .collect();
            evicted.extend(idle.iter().filter_map(|k| s.remove(k)).map(|v| owned(v.session)));
        }
        evicted
    }

    /// How many sessions are held, and how many tasks they hold (the metrics' gauges).
    pub fn counts(&self) -> (usize, usize) {
        let (mut sessions, mut tasks) = (0, 0);
        for shard in &self.shards {
            let s = shard.lock().unwrap_or_else(|p| p.into_inner());
            sessions += s.len();
            tasks += s.values().map(|v| v.session.tasks.len()).sum::<usize>();
        }
        (sessions, tasks)
    }

    /// A copy of every session (a reload closes their sessions at upstreams it removed).
    pub fn all(&self) -> Vec<Session> {
        let mut all = Vec::new();
        for shard in &self.shards {
            let s = shard.lock().unwrap_or_else(|p| p.into_inner());
            all.extend(s.values().map(|v| Session::clone(&v.session)));
        }
        all
    }

    /// Removes every session; returns them (the process ends, and a gateway closes their
    /// upstream sessions).
    pub fn drain(&self) -> Vec<Session> {
        let mut all = Vec::new();
        for shard in &self.shards {
            let mut s = shard.lock().unwrap_or_else(|p| p.into_inner());
            all.extend(s.drain().map(|(_, v)| owned(v.session)));
        }
        all
    }
}

/// One run of one request over [`Sessions`]: remembers the version of every session it read,
/// and refuses (as a conflict) to write one that another request wrote since.
pub struct Snapshot<'a> {
    sessions: &'a Sessions,
    /// What this run read: the version and the session, or `None` when it was absent.
    read: HashMap<String, Option<(u64, Arc<Session>)>>,
    conflict: bool,
}

impl Snapshot<'_> {
    /// Whether a write of this run was refused: the run must be discarded and run again.
    pub fn conflicted(&self) -> bool {
        self.conflict
    }
}

/// The session out of its handle (copied only if a run still holds it).
fn owned(session: Arc<Session>) -> Session {
    Arc::try_unwrap(session).unwrap_or_else(|shared| Session::clone(&shared))
}

/// Whether `new` is `old` with only a later `last_seen_ms`.
fn only_touched(old: &Session, new: &Session) -> bool {
    new.last_seen_ms >= old.last_seen_ms
        && *old
            == Session {
                last_seen_ms: old.last_seen_ms,
                ..new.clone()
            }
}

impl SessionStore for Snapshot<'_> {
    fn load(&mut self, id: &str) -> Option<Session> {
        let found = self
            .sessions
            .shard(id)
            .get(id)
            .map(|s| (s.version, Arc::clone(&s.session)));
        // The one copy, made after the shard's lock is let go.
        let session = found.as_ref().map(|(_, s)| Session::clone(s));
        // The first read counts: a request that reads a session twice compares with the first.
        self.read.entry(id.to_string()).or_insert(found);
        session
    }

    fn save(&mut self, session: &Session) {
        if self.conflict {
            return; // this run is discarded: write nothing more of it
        }
        let read = self.read.get(&session.id).cloned();
        let mut shard = self.sessions.shard(&session.id);
        match (shard.entry(session.id.clone()), &read) {
            // Unchanged since this run read it: write.
            (Entry::Occupied(mut e), Some(Some((version, _)))) if e.get().version == *version => {
                let v = e.get().version + 1;
                let written = Arc::new(session.clone());
                e.insert(Stored {
                    session: Arc::clone(&written),
                    version: v,
                });
                self.read.insert(session.id.clone(), Some((v, written)));
            }
            // Changed since, but this run only records its use: keep the later time.
            (Entry::Occupied(mut e), Some(Some((_, old)))) if only_touched(old, session) => {
                let stored = Arc::make_mut(&mut e.get_mut().session);
                stored.last_seen_ms = stored.last_seen_ms.max(session.last_seen_ms);
            }
            // New (this run created it, or read it absent) and still absent: write.
            (Entry::Vacant(e), None | Some(None)) => {
                let written = Arc::new(session.clone());
                e.insert(Stored {
                    session: Arc::clone(&written),
                    version: 1,
                });
                self.read.insert(session.id.clone(), Some((1, written)));
            }
            // Written, created or removed by another request since this run read it.
            _ => self.conflict = true,
        }
    }

    fn remove(&mut self, id: &str) {
        self.sessions.shard(id).remove(id);
        self.read.insert(id.to_string(), None);
    }

    fn budget(&mut self, step: BudgetStep, budget: Budget, now_ms: i64) -> Result<()> {
        let mut ledger = self.sessions.ledger.lock().unwrap_or_else(|p| p.into_inner());
        let (admitted, gone) = mcp_sieve::http::apply_budget_step(&mut ledger, step, budget, now_ms);
        drop(ledger);
        // The holders of tasks no longer held go with them; a gateway task's record leaves its
        // session (a new version: a request that read it before runs again).
        for id in &gone {
            let (key, slot) = mcp_sieve::http::kept_by(id);
            let mut shard = self.sessions.shard(&key);
            match slot {
                None => {
                    shard.remove(&key);
                }
                Some(slot) => {
                    if let Some(stored) = shard.get_mut(&key) {
                        if mcp_sieve::protocol::forget_slot(Arc::make_mut(&mut stored.session), slot) {
                            stored.version += 1;
                        }
                    }
                }
            }
        }
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str) -> Session {
        Session {
            id: id.into(),
            last_seen_ms: 10,
            ..Session::default()
        }
    }

    #[test]
    fn a_write_over_another_requests_write_conflicts() {
        let all = Sessions::default();
        all.snapshot().save(&session("a"));
        let (mut slow, mut quick) = (all.snapshot(), all.snapshot());
        let mut s1 = slow.load("a").unwrap();
        let mut s2 = quick.load("a").unwrap();
        s2.next_task = 7;
        quick.save(&s2);
        assert!(!quick.conflicted());
        s1.concern_warnings.push("x".into());
        slow.save(&s1);
        assert!(slow.conflicted(), "the slow request read before the quick one wrote");
        // Run again, it reads the quick one's write and keeps it.
        let mut again = all.snapshot();
        let mut s1 = again.load("a").unwrap();
        assert_eq!(s1.next_task, 7);
        s1.concern_warnings.push("x".into());
        again.save(&s1);
        assert!(!again.conflicted());
        let kept = all.snapshot().load("a").unwrap();
        assert_eq!((kept.next_task, kept.concern_warnings.len()), (7, 1));
    }

    #[test]
    fn recording_use_is_merged_and_a_removed_session_is_not_brought_back() {
        let all = Sessions::default();
        all.snapshot().save(&session("a"));
        let (mut reader, mut writer) = (all.snapshot(), all.snapshot());
        let mut touched = reader.load("a").unwrap();
        let mut changed = writer.load("a").unwrap();
        changed.next_task = 3;
        writer.save(&changed);
        touched.last_seen_ms = 99;
        reader.save(&touched);
        assert!(!reader.conflicted(), "only its use was recorded: merged");
        let kept = all.snapshot().load("a").unwrap();
        assert_eq!((kept.next_task, kept.last_seen_ms), (3, 99));
        // A session ended (DELETE) while another request of it ran stays ended.
        let mut late = all.snapshot();
        let mut s = late.load("a").unwrap();
        all.snapshot().remove("a");
        s.next_task = 4;
        late.save(&s);
        assert!(late.conflicted());
        assert!(all.snapshot().load("a").is_none());
        // Two runs that both create one id: the second conflicts.
        let (mut one, mut two) = (all.snapshot(), all.snapshot());
        one.save(&session("b"));
        two.save(&session("b"));
        assert!(!one.conflicted() && two.conflicted());
        assert_eq!(all.evict_idle(11).len(), 1);
    }
}
