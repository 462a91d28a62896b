//! Gateway mode: the catalog document's `upstream` names an existing Streamable HTTP MCP server,
//! whose tools, resources and prompts this server lists (with the document's groups, tags,
//! concerns, overlay and policy applied) and to which it forwards calls. Pure: the shell talks to
//! the upstream with the helpers of [`client`] and feeds the answers in here.

pub mod client;

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::catalog::Catalog;
use crate::error::{type_name, Error, Result};
use crate::filter::glob;
use crate::json::str_array;
use crate::model::Kind;
use crate::protocol::jsonrpc;

/// Default seconds between two refreshes of the upstream's lists.
pub const DEFAULT_REFRESH_SECONDS: u64 = 300;

/// The document's `upstream` object: `{"url": "https://…/mcp", "refreshSeconds": 300}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// The upstream's Streamable HTTP endpoint.
    pub url: String,
    /// Milliseconds after which the cached lists are fetched again.
    pub refresh_ms: i64,
}

impl Upstream {
    /// Reads `upstream` (absent or null: no gateway); errors name the bad field.
    pub fn parse(v: Option<&Value>) -> Result<Option<Upstream>> {
        let obj = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "upstream must be an object such as {{\"url\": \"https://example.com/mcp\", \"refreshSeconds\": 300}}, got {}",
                    type_name(other)
                )))
            }
        };
        if let Some(k) = obj.keys().find(|k| !["url", "refreshSeconds"].contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "upstream has an unknown field \"{k}\"; expected url, refreshSeconds"
            )));
        }
        let url = match obj.get("url") {
            Some(Value::String(s)) if s.starts_with("http://") || s.starts_with("https://") => s.clone(),
            Some(Value::String(s)) => {
                return Err(Error::Catalog(format!(
                    "upstream.url must be an http:// or https:// URL, got \"{s}\""
                )))
            }
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "upstream.url must be a string, got {}",
                    type_name(other)
                )))
            }
            None => {
                return Err(Error::Catalog(
                    "upstream.url is required (the upstream's MCP endpoint)".into(),
                ))
            }
        };
        let secs = match obj.get("refreshSeconds") {
            None | Some(Value::Null) => DEFAULT_REFRESH_SECONDS,
            Some(v) => v.as_u64().filter(|n| (1..=86_400).contains(n)).ok_or_else(|| {
                Error::Catalog(format!(
                    "upstream.refreshSeconds must be an integer from 1 to 86400, got {v}"
                ))
            })?,
        };
        Ok(Some(Upstream {
            url,
            refresh_ms: secs as i64 * 1000,
        }))
    }

    /// Whether lists fetched at `fetched_ms` are due for a refresh at `now_ms`.
    pub fn stale(&self, fetched_ms: i64, now_ms: i64) -> bool {
        now_ms.saturating_sub(fetched_ms) >= self.refresh_ms
    }
}

/// One overlay entry: a name or glob and the groups and tags it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    pattern: String,
    groups: Vec<String>,
    tags: Vec<String>,
}

/// The document's `overlay`: `{"<name or glob>": {"groups": [..], "tags": [..]}}`. It adds
/// membership to primitives (tools, resources, templates, prompts) by `name`, typically to the
/// upstream's items, which know nothing of our groups. Memberships the item has stay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay(Vec<Entry>);

impl Overlay {
    /// Reads `overlay`; errors name the bad field.
    pub fn parse(v: Option<&Value>) -> Result<Overlay> {
        let obj = match v {
            None | Some(Value::Null) => return Ok(Overlay::default()),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "overlay must be an object of \"<name or glob>\": {{\"groups\": [..], \"tags\": [..]}}, got {}",
                    type_name(other)
                )))
            }
        };
        let mut entries = Vec::new();
        for (pattern, e) in obj {
            let path = format!("overlay[\"{pattern}\"]");
            let e = e.as_object().ok_or_else(|| {
                Error::Catalog(format!(
                    "{path} must be an object with groups and/or tags, got {}",
                    type_name(e)
                ))
            })?;
            if let Some(k) = e.keys().find(|k| !["groups", "tags"].contains(&k.as_str())) {
                return Err(Error::Catalog(format!(
                    "{path} has an unknown field \"{k}\"; expected groups, tags"
                )));
            }
            let groups = str_array(e.get("groups"), &format!("{path}.groups")).map_err(Error::in_catalog)?;
            let tags = str_array(e.get("tags"), &format!("{path}.tags")).map_err(Error::in_catalog)?;
            entries.push(Entry {
                pattern: pattern.clone(),
                groups,
                tags,
            });
        }
        Ok(Overlay(entries))
    }

    /// `item` with the groups and tags of every entry matching its name added (unchanged when
    /// none matches, or when the item is malformed: loading then reports that).
    pub fn apply<'a>(&self, item: &'a Value) -> Cow<'a, Value> {
        let Some(name) = item.get("name").and_then(Value::as_str) else {
            return Cow::Borrowed(item);
        };
        let hits: Vec<&Entry> = self.0.iter().filter(|e| glob::matches(&e.pattern, name)).collect();
        if hits.is_empty() {
            return Cow::Borrowed(item);
        }
        let mut out = item.clone();
        for (field, add) in [
            ("groups", hits.iter().flat_map(|e| &e.groups).collect::<Vec<_>>()),
            ("tags", hits.iter().flat_map(|e| &e.tags).collect()),
        ] {
            if add.is_empty() {
                continue;
            }
            let Some(Value::Array(list)) = out.as_object_mut().map(|o| o.entry(field).or_insert(json!([]))) else {
                continue; // not an array: Primitive::from_json names the field
            };
            for a in add {
                if !list.iter().any(|x| x.as_str() == Some(a)) {
                    list.push(Value::String(a.clone()));
                }
            }
        }
        Cow::Owned(out)
    }
}

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
    pub fn answer(&self, reply: std::result::Result<&Value, String>) -> String {
        let failed = |why: String| {
            jsonrpc::error(
                &self.id,
                &Error::Internal(format!("the upstream MCP server did not answer {}: {why}", self.method)),
            )
        };
        let msg = match reply {
            Ok(m) => m,
            Err(why) => return failed(why),
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
            None => failed("its reply has neither result nor error".into()),
        }
    }
}

/// Finishes an HTTP response that carried a [`Forward`] (`response.forward`) with the
/// upstream's reply to it (see [`Forward::answer`]).
pub fn complete(
    mut response: crate::http::Response,
    reply: std::result::Result<&Value, String>,
) -> crate::http::Response {
    if let Some(f) = response.forward.take() {
        response.body = f.answer(reply);
        response
            .headers
            .push(("Content-Type".into(), "application/json".into()));
    }
    response
}

/// The catalog a gateway serves: the local document (groups, tags, concerns, concernMapping,
/// overlay, policy, options, server) over the upstream's lists.
pub fn build(local: &Value, lists: &client::Lists) -> Result<Catalog> {
    let mut doc = local
        .as_object()
        .cloned()
        .ok_or_else(|| Error::Catalog(format!("the document must be an object, got {}", type_name(local))))?;
    for kind in Kind::ALL {
        if doc
            .get(kind.key())
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            return Err(Error::Catalog(format!(
                "{} must be empty when upstream is set: a gateway serves the upstream's {}",
                kind.key(),
                kind.key()
            )));
        }
        doc.insert(kind.key().into(), Value::Array(lists.items(kind).to_vec()));
    }
    if !doc.contains_key("server") {
        let info = &lists.initialize["serverInfo"];
        let mut server = Map::new();
        for k in ["name", "version"] {
            if let Some(v) = info.get(k).filter(|v| v.is_string()) {
                server.insert(k.into(), v.clone());
            }
        }
        if let Some(i) = lists.initialize.get("instructions").filter(|v| v.is_string()) {
            server.insert("instructions".into(), i.clone());
        }
        doc.insert("server".into(), Value::Object(server));
    }
    let mut catalog = Catalog::load(&Value::Object(doc)).map_err(|e| match e {
        Error::Catalog(m) => Error::Catalog(format!("with the upstream's lists: {m}")),
        other => other,
    })?;
    // Keep the local document, not the merged one: the next refresh starts from it again.
    catalog.document = Some(std::sync::Arc::new(local.clone()));
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_is_validated_with_field_names() {
        assert_eq!(Upstream::parse(None).unwrap(), None);
        let u = Upstream::parse(Some(&json!({"url": "http://127.0.0.1:9/mcp"})))
            .unwrap()
            .unwrap();
        assert_eq!(u.refresh_ms, 300_000);
        assert!(u.stale(0, 300_000) && !u.stale(1, 300_000));
        for (doc, want) in [
            (json!("x"), "upstream must be an object"),
            (json!({}), "upstream.url is required"),
            (json!({"url": 5}), "upstream.url must be a string"),
            (json!({"url": "ftp://x"}), "upstream.url must be an http"),
            (
                json!({"url": "http://x", "refreshSeconds": 0}),
                "upstream.refreshSeconds must be",
            ),
            (json!({"url": "http://x", "ttl": 1}), "unknown field \"ttl\""),
        ] {
            let e = Upstream::parse(Some(&doc)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn overlay_adds_membership_by_name_or_glob() {
        let o = Overlay::parse(Some(&json!({
            "git_*": {"groups": ["code"], "tags": ["vcs"]},
            "git_push": {"tags": ["write", "vcs"]}
        })))
        .unwrap();
        let push = json!({"name": "git_push", "x-extra": 1, "tags": ["net"]});
        let got = o.apply(&push).into_owned();
        assert_eq!(got["groups"], json!(["code"]));
        assert_eq!(got["tags"], json!(["net", "vcs", "write"]));
        assert_eq!(got["x-extra"], json!(1));
        assert!(matches!(o.apply(&json!({"name": "echo"})), Cow::Borrowed(_)));
        for (doc, want) in [
            (json!([]), "overlay must be an object"),
            (json!({"a": 1}), "overlay[\"a\"] must be an object"),
            (
                json!({"a": {"groups": "x"}}),
                "overlay[\"a\"].groups must be an array of strings",
            ),
            (
                json!({"a": {"group": []}}),
                "overlay[\"a\"] has an unknown field \"group\"",
            ),
        ] {
            let e = Overlay::parse(Some(&doc)).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

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
        let r: Value = serde_json::from_str(&f.answer(Err("connection refused".into()))).unwrap();
        assert_eq!(r["error"]["code"], json!(-32603));
        assert!(r["error"]["message"].as_str().unwrap().contains("connection refused"));
        let modern = Forward { stateless: true, ..f };
        let r: Value = serde_json::from_str(&modern.answer(Ok(&json!({"result": {"content": []}})))).unwrap();
        assert_eq!(r["result"], json!({"resultType": "complete", "content": []}));
    }
}
