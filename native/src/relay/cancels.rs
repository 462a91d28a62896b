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
type Running = HashMap<(String, String), oneshot::Sender<()>>;

/// The registry.
#[derive(Default, Clone)]
pub(crate) struct Cancels(Arc<Mutex<Running>>);

/// A registered call: its receiver fires on cancel; dropping the guard leaves the registry.
pub(crate) struct Registered {
    pub(crate) cancelled: oneshot::Receiver<()>,
    pub(crate) guard: Guard,
}

/// Takes a call out of the registry when its exchange ends.
pub(crate) struct Guard {
    cancels: Cancels,
    key: (String, String),
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.cancels.lock().remove(&self.key);
    }
}

impl Cancels {
    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers the call `id` of `owner`.
    pub(crate) fn register(&self, owner: &str, id: &Value) -> Registered {
        let (tx, rx) = oneshot::channel();
        let key = (owner.to_string(), id.to_string());
        self.lock().insert(key.clone(), tx);
        Registered {
            cancelled: rx,
            guard: Guard {
                cancels: self.clone(),
                key,
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
        match self.lock().remove(&(owner.to_string(), id.to_string())) {
            Some(tx) => tx.send(()).is_ok(),
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
}
