//! `resources/read`, `resources/subscribe` and `resources/unsubscribe`: a catalog resource, or a
//! URI matching a resource template (level-1 `{var}` templates), after the policy check. A
//! resource's `text` or `blob`, or a template's `text` with `{var}` placeholders, comes from the
//! catalog document. Catalog resources are static: a subscription produces no update until the
//! catalog is replaced (which announces `list_changed`).

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::model::Kind;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{string_param, Call, Server};
use crate::protocol::template::{match_template, substitute, Vars};

/// The `contents` entry of a catalog resource (or template) as read at `uri`: its `blob`
/// (base64) when it has one, else its `text`, else a labelled simulated text.
pub fn contents(json: &Map<String, Value>, uri: &str, vars: &[(String, String)]) -> Result<Value> {
    let mime = json.get("mimeType").cloned().unwrap_or(json!("text/plain"));
    if let Some(blob) = json.get("blob") {
        return Ok(json!({"uri": uri, "mimeType": mime, "blob": blob}));
    }
    let text = match json.get("text") {
        Some(t) => substitute(t, vars)?,
        None => json!(format!("[simulated] contents of {uri}")),
    };
    Ok(json!({"uri": uri, "mimeType": mime, "text": text}))
}

impl Server {
    /// `resources/subscribe` and `resources/unsubscribe`: the URI must be readable. Catalog
    /// resources are static, so a subscription never produces an update until the catalog is
    /// replaced (which announces `list_changed`). A gateway makes a session's subscription at
    /// the upstream serving the URI, in the session's own session there, whose
    /// `resources/updated` reach it (see `upstream::on_stream`).
    pub(crate) fn subscribe(&self, method: &str, call: &Call, out: &mut Outcome) -> Result<String> {
        self.resolve_uri(call, &mut out.log)?;
        #[cfg(feature = "gateway")]
        if !call.stateless {
            if let Some(forwarded) = self.forward(method, call, out) {
                return Ok(forwarded);
            }
        }
        #[cfg(not(feature = "gateway"))]
        let _ = method;
        Ok("{}".into())
    }
    /// Finds what `params.uri` reads: a catalog resource, else the first template it matches.
    /// Returns the item's JSON and the template variables; policy applies to both.
    pub(crate) fn resolve_uri(&self, call: &Call, log: &mut Vec<String>) -> Result<(Kind, usize, Vars)> {
        let uri = string_param(call.params, "params", "uri")?;
        // -32002 in the 2025 era (the spec's "resource not found"); -32602 in 2026-07-28.
        // A URI the catalog does not hold that an upstream now down held says so (gateway).
        let not_found = |message: String| match call.stateless {
            true => Error::params(message),
            false => Error::Rpc {
                code: crate::error::code::RESOURCE_NOT_FOUND,
                message,
                data: Some(serde_json::json!({ "uri": uri })),
            },
        };
        let unknown = || not_found(format!("Unknown resource: \"{uri}\""));
        #[cfg(feature = "gateway")]
        let absent = || self.down_uri(uri, call).map_or_else(unknown, not_found);
        #[cfg(not(feature = "gateway"))]
        let absent = unknown;
        let resources = self.catalog.section(Kind::Resource);
        if let Some(pos) = resources.find(uri) {
            return if self.chain.allows(Kind::Resource, resources, pos, &call.ctx, log) {
                Ok((Kind::Resource, pos, Vec::new()))
            } else {
                Err(unknown())
            };
        }
        let templates = self.catalog.section(Kind::ResourceTemplate);
        // Policy over the templates once, not again for each template the URI matches.
        let mut allowed: Option<crate::filter::Bits> = None;
        let mut matched = false;
        for (pos, t) in templates.items.iter().enumerate() {
            if let Some(vars) = match_template(&t.id, uri) {
                matched = true;
                let allowed = allowed
                    .get_or_insert_with(|| self.chain.visible(Kind::ResourceTemplate, templates, &call.ctx, log));
                if allowed.get(pos) {
                    return Ok((Kind::ResourceTemplate, pos, vars));
                }
            }
        }
        // One hidden by policy stays "Unknown".
        Err(if matched { unknown() } else { absent() })
    }
    /// `resources/read` of a catalog resource or of a URI matching a resource template.
    pub(crate) fn read_uri(&self, call: &Call, out: &mut Outcome) -> Result<String> {
        // An unlisted URI is usable only through a template that policy allows; a gateway
        // forwards nothing else.
        let (kind, pos, vars) = self.resolve_uri(call, &mut out.log)?;
        if let Some(forwarded) = self.forward("resources/read", call, out) {
            return Ok(forwarded);
        }
        let item = &self.catalog.section(kind).items[pos];
        let uri = call.params["uri"].as_str().unwrap_or_default();
        Ok(json!({"contents": [contents(&item.json(), uri, &vars)?]}).to_string())
    }
}
