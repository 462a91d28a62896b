//! Gateway mode in the router: when the catalog came from an upstream (`upstream` is set), uses of
//! a primitive, completions and task requests are not run here. After the same policy check as a local call,
//! they become a [`Forward`] effect the shell performs at the upstream.

use serde_json::Value;

use crate::error::{type_name, Error, Result};
use crate::gateway::Forward;
use crate::model::Kind;
use crate::protocol::server::{Call, Outcome, Server};

impl Server {
    /// Whether this server fronts an upstream.
    pub fn is_gateway(&self) -> bool {
        !self.catalog.upstream.is_null()
    }

    /// In gateway mode, the forwarding of `method` (`None`: not forwarded, handle it here).
    pub(crate) fn forward(
        &self,
        id: &Value,
        method: &str,
        call: &Call,
        stateless: bool,
        out: &mut Outcome,
    ) -> Option<Result<String>> {
        if !self.is_gateway() {
            return None;
        }
        let checked = match method {
            "tools/call" => self.usable(Kind::Tool, "name", call, &mut out.log).map(drop),
            "prompts/get" => self.usable(Kind::Prompt, "name", call, &mut out.log).map(drop),
            "resources/read" => match call.params.get("uri") {
                // A URI the upstream does not list may come from one of its templates: the
                // upstream decides. A listed one passes the policy check first.
                Some(Value::String(uri)) if self.catalog.section(Kind::Resource).find(uri).is_none() => Ok(()),
                _ => self.usable(Kind::Resource, "uri", call, &mut out.log).map(drop),
            },
            // Completions of a prompt's arguments: only for a prompt policy lets this call see.
            "completion/complete" => match (&call.params["ref"]["type"], &call.params["ref"]["name"]) {
                (Value::String(t), Value::String(name)) if t == "ref/prompt" => {
                    let section = self.catalog.section(Kind::Prompt);
                    match section.find(name) {
                        Some(pos) if self.chain.allows(Kind::Prompt, section, pos, &call.ctx, &mut out.log) => Ok(()),
                        _ => Err(Error::params(format!("Unknown prompt: \"{name}\""))),
                    }
                }
                _ => Ok(()),
            },
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" => match call.params {
                Value::Null | Value::Object(_) => Ok(()),
                other => Err(Error::params(format!(
                    "params must be an object, got {}",
                    type_name(other)
                ))),
            },
            _ => return None,
        };
        Some(checked.map(|()| {
            out.forward = Some(Forward {
                id: id.clone(),
                method: method.into(),
                params: call.params.clone(),
                stateless,
            });
            String::new()
        }))
    }
}
