//! Gateway mode in the router: when the catalog came from an upstream (`upstream` is set), uses of
//! a primitive, completions and task requests are not run here. After the same policy check as a local call,
//! they become a [`Forward`] effect the shell performs at the upstream.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::model::Kind;
use crate::protocol::jsonrpc;
use crate::protocol::server::{Call, Outcome, Server};

/// What the router hands the shell instead of a result: perform `method` with `params` at the
/// upstream and answer the client's request `id` with the upstream's result or error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Forward {
    /// The client's request id.
    pub id: Value,
    /// The method (`tools/call`, `prompts/get`, `resources/read`, `completion/complete`, `tasks/*`).
    pub method: String,
    /// The client's params, untouched.
    pub params: Value,
    /// Whether the request is of the stateless 2026-07-28 era (its result gets `resultType`).
    pub stateless: bool,
}

impl Forward {
    /// The JSON-RPC response for the client, from the upstream's reply to this request (a
    /// message with `result` or `error`, passed through untouched apart from the id), or from the
    /// reason the upstream could not be asked.
    pub fn answer(&self, reply: std::result::Result<&Value, &Error>) -> String {
        let failed = |why: String| {
            jsonrpc::error(
                &self.id,
                &Error::Internal(format!("{} could not be forwarded: {why}", self.method)),
            )
        };
        let msg = match reply {
            Ok(m) => m,
            Err(why) => return failed(why.to_string()),
        };
        if let Some(result) = msg.get("result") {
            let mut result = result.clone();
            if self.stateless {
                if let Value::Object(o) = &mut result {
                    if !o.contains_key("resultType") {
                        let mut with = Map::new();
                        with.insert("resultType".into(), json!("complete"));
                        with.extend(std::mem::take(o));
                        *o = with;
                    }
                }
            }
            return jsonrpc::ok(&self.id, &result);
        }
        match msg.get("error") {
            Some(e) => json!({"jsonrpc": "2.0", "id": self.id, "error": e}).to_string(),
            None => failed("the upstream's reply has neither result nor error".into()),
        }
    }
}

impl Server {
    /// Whether this server fronts an upstream.
    pub fn is_gateway(&self) -> bool {
        self.catalog.upstream.is_some()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_pass_the_upstream_result_or_error_through() {
        let f = Forward {
            id: json!(7),
            method: "tools/call".into(),
            params: json!({}),
            stateless: false,
        };
        let r: Value =
            serde_json::from_str(&f.answer(Ok(&json!({"id": 1, "result": {"content": [], "z": {"a": 1}}})))).unwrap();
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [], "z": {"a": 1}}})
        );
        let r: Value =
            serde_json::from_str(&f.answer(Ok(&json!({"id": 1, "error": {"code": -32602, "message": "no"}})))).unwrap();
        assert_eq!(r["error"], json!({"code": -32602, "message": "no"}));
        assert_eq!(r["id"], json!(7));
        let r: Value = serde_json::from_str(&f.answer(Err(&Error::Upstream("connection refused".into())))).unwrap();
        assert_eq!(r["error"]["code"], json!(-32603));
        assert!(r["error"]["message"].as_str().unwrap().contains("connection refused"));
        let modern = Forward { stateless: true, ..f };
        let r: Value = serde_json::from_str(&modern.answer(Ok(&json!({"result": {"content": []}})))).unwrap();
        assert_eq!(r["result"], json!({"resultType": "complete", "content": []}));
    }
}
