//! Gateway mode: when the catalog came from an upstream (`upstream` is set), uses of a primitive,
//! completions and task requests are not run here. After the same policy check as a local use
//! (each method family checks, then calls [`Server::forward`]), they become a [`Forward`] effect
//! the shell performs at the upstream.

use serde_json::{json, Map, Value};

use crate::error::Error;
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
    /// In gateway mode, records the forwarding of this request (which passed the same policy
    /// check as a local use) and returns its placeholder result; `None` when not a gateway.
    pub(crate) fn forward(&self, method: &str, call: &Call, out: &mut Outcome) -> Option<String> {
        if !self.is_gateway() {
            return None;
        }
        out.forward = Some(Forward {
            id: call.ctx.request_id.clone(),
            method: method.into(),
            params: call.params.clone(),
            stateless: call.stateless,
        });
        Some(String::new())
    }

    /// Whether this server fronts an upstream.
    pub fn is_gateway(&self) -> bool {
        self.catalog.upstream.is_some()
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
