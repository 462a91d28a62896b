//! List changes that reach clients: a [`Watch`] is what a long-lived SSE answer listens for — the
//! 2025-11-25 GET stream of a session, or a 2026-07-28 `subscriptions/listen` request. The shell
//! keeps the stream open and calls [`Watch::tick`] with the server it would serve now (in gateway
//! mode, after a refresh); the watch answers the `list_changed` events to send, if the catalog
//! changed since it last looked.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::catalog::Catalog;
use crate::error::{type_name, Error, Result};
use crate::protocol::jsonrpc;
use crate::protocol::server::{list_changes, Server};

/// The notification `_meta` key naming the subscription (2026-07-28).
const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The `subscriptions/listen` filter keys and the notification each one asks for.
const KEYS: [(&str, &str); 5] = [
    ("toolsListChanged", "notifications/tools/list_changed"),
    ("promptsListChanged", "notifications/prompts/list_changed"),
    ("resourcesListChanged", "notifications/resources/list_changed"),
    ("groupsListChanged", "notifications/groups/list_changed"),
    ("tagsListChanged", "notifications/tags/list_changed"),
];

/// What one open stream listens for, and the catalog it last reported on.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The notification methods wanted.
    methods: Vec<&'static str>,
    /// 2026-07-28: the `subscriptions/listen` request id, stamped on every notification.
    subscription: Option<Value>,
    catalog: Arc<Catalog>,
    version: u64,
}

impl PartialEq for Watch {
    fn eq(&self, other: &Self) -> bool {
        (&self.methods, &self.subscription, self.version) == (&other.methods, &other.subscription, other.version)
            && Arc::ptr_eq(&self.catalog, &other.catalog)
    }
}

impl Watch {
    /// Every list change of `server` (a 2025-11-25 session's GET stream).
    pub fn session(server: &Server) -> Self {
        Watch {
            methods: KEYS.iter().map(|(_, m)| *m).collect(),
            subscription: None,
            catalog: server.catalog.clone(),
            version: server.version,
        }
    }

    /// The 2026-07-28 `subscriptions/listen` request `id` with `params.notifications`; also
    /// returns the `notifications/subscriptions/acknowledged` event to send first (naming the
    /// accepted filter: `resourceSubscriptions` are not offered, resources never change here).
    pub fn listen(server: &Server, id: &Value, params: &Value) -> Result<(Self, String)> {
        let filter = match params.get("notifications") {
            Some(Value::Object(f)) => f,
            Some(other) => {
                return Err(Error::params(format!(
                    "params.notifications must be an object such as {{\"toolsListChanged\": true}}, got {}",
                    type_name(other)
                )))
            }
            None => {
                return Err(Error::params(
                    "params.notifications is required (an object such as {\"toolsListChanged\": true})",
                ))
            }
        };
        let mut accepted = Map::new();
        let mut methods = Vec::new();
        for (key, v) in filter {
            let wanted = match v {
                Value::Bool(b) => *b,
                Value::Array(_) if key == "resourceSubscriptions" => false,
                other => {
                    return Err(Error::params(format!(
                        "params.notifications.{key} must be a boolean, got {}",
                        type_name(other)
                    )))
                }
            };
            match KEYS.iter().find(|(k, _)| k == key) {
                Some((k, method)) if wanted => {
                    accepted.insert((*k).into(), json!(true));
                    methods.push(*method);
                }
                _ => {}
            }
        }
        let watch = Watch {
            methods,
            subscription: Some(id.clone()),
            catalog: server.catalog.clone(),
            version: server.version,
        };
        let ack = watch.note(
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": accepted }),
        );
        Ok((watch, ack))
    }

    /// The events to send now that `server` is current: one `list_changed` per wanted list that
    /// changed since the last call (none when the catalog did not change).
    pub fn tick(&mut self, server: &Server) -> Vec<String> {
        if server.version == self.version && Arc::ptr_eq(&server.catalog, &self.catalog) {
            return Vec::new();
        }
        let changed = list_changes(&self.catalog, &server.catalog);
        self.catalog = server.catalog.clone();
        self.version = server.version;
        changed
            .into_iter()
            .filter(|m| self.methods.contains(m))
            .map(|m| self.note(m, json!({})))
            .collect()
    }

    /// The result that ends a `subscriptions/listen` stream gracefully (none for a GET stream).
    pub fn close(&self) -> Option<String> {
        let id = self.subscription.as_ref()?;
        Some(jsonrpc::ok(
            id,
            &json!({"resultType": "complete", "_meta": { SUBSCRIPTION_ID: id }}),
        ))
    }

    fn note(&self, method: &str, mut params: Value) -> String {
        if let (Some(id), Value::Object(p)) = (&self.subscription, &mut params) {
            p.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
        }
        let params = params.as_object().filter(|p| !p.is_empty()).map(|_| params.clone());
        jsonrpc::notification(method, params)
    }
}
