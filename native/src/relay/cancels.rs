//! Calls in flight a client may cancel: a forwarded request runs in an exchange of its own
//! (`relay::spawn`), registered here under whose it is (its session id, else its principal, else
//! the one stdio client) and its JSON-RPC id; the client's `notifications/cancelled` for that id
//! drops the exchange, and with it the upstream request (a stdio upstream is told, as when the
//! deadline passes). A request id is only cancelled by the client that sent it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::oneshot;

/// Running calls: (owner, request id's JSON) → what cancels it.
type Running = HashMap<(String, String), (u64, oneshot::Sender<()>)>;

/// The registry.
#[derive(Default, Clone)]
pub(crate) struct Cancels(Arc<Mutex<(u64, Running)>>);

/// A registered call: its receiver fires on cancel; dropping the guard leaves the registry.
pub(crate) struct Registered {
    pub(crate) cancelled: oneshot::Receiver<()>,
    pub(crate) guard: Guard,
}

/// Takes a call out of the registry when its exchange ends.
pub(crate) struct Guard {
    cancels: Cancels,
    key: (String, String),
    /// Which registration of `key` this is: a later one of the same owner and id (two anonymous
    /// callers' request ids, or an id used again) is left in place when this one ends.
    serial: u64,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut running = self.cancels.lock();
        if running
            .1
            .get(&self.key)
            .is_some_and(|(serial, _)| *serial == self.serial)
        {
            running.1.remove(&self.key);
        }
    }
}

impl Cancels {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Running)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers the call `id` of `owner`.
    pub(crate) fn register(&self, owner: &str, id: &Value) -> Registered {
        let (tx, rx) = oneshot::channel();
        let key = (owner.to_string(), id.to_string());
        let mut running = self.lock();
        running.0 += 1;
        let serial = running.0;
        running.1.insert(key.clone(), (serial, tx));
        drop(running);
        Registered {
            cancelled: rx,
            guard: Guard {
                cancels: self.clone(),
                key,
                serial,
            },
        }
    }

    /// When `body` is `owner`'s `notifications/cancelled`, cancels the call it names; `true`
    /// when one was running.
    pub(crate) fn cancel(&self, owner: &str, body: &[u8]) -> bool {
        let Ok(msg) = serde_json::from_slice::<Value>(body) else {
            return false;
        };
        if msg["method"] != "notifications/cancelled" || msg.get("id").is_some() {
            return false;
        }
        let Some(id) = msg["params"].get("requestId") else {
            return false;
        };
        match self.lock().1.remove(&(owner.to_string(), id.to_string())) {
            Some((_, tx)) => tx.send(()).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_owners_cancel_of_a_running_id_fires() {
        let c = Cancels::default();
        let mut r = c.register("s1", &json!(7));
        let cancel = |id: Value| {
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}).to_string()
        };
        assert!(!c.cancel("s2", cancel(json!(7)).as_bytes()), "another session's");
        assert!(!c.cancel("s1", cancel(json!("7")).as_bytes()), "another id");
        assert!(r.cancelled.try_recv().is_err());
        assert!(c.cancel("s1", cancel(json!(7)).as_bytes()));
        assert!(r.cancelled.try_recv().is_ok());
        let r2 = c.register("s1", &json!(8));
        drop(r2.guard);
        assert!(
            !c.cancel("s1", cancel(json!(8)).as_bytes()),
            "ended calls leave the registry"
        );
    }

    #[test]
    fn a_call_that_ends_leaves_a_later_call_of_the_same_owner_and_id_registered() {
        let c = Cancels::default();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
        let first = c.register("", &json!(1));
        let mut second = c.register("", &json!(1));
        drop(first.guard);
        assert!(
            second.cancelled.try_recv().is_err(),
            "not cancelled by the first one's end"
        );
        assert!(
            c.cancel("", cancel.to_string().as_bytes()),
            "the second is still registered"
        );
        assert!(second.cancelled.try_recv().is_ok());
    }
}
