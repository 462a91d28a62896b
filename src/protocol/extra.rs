//! MCP utilities beyond filtering that real clients and the MCP conformance suite expect:
//! `logging/setLevel`, `completion/complete`, `resources/subscribe` / `unsubscribe`, resource
//! templates that can be read, binary resources, prompts with message templates, and the log and
//! progress notifications of the conformance fixture tools. Catalog-driven: a resource's `text` or
//! `blob`, a template's `text` with `{var}` placeholders, a prompt's `messages` with `{arg}`
//! placeholders, and a prompt argument's `completions` list are read from the catalog document.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::model::Kind;
use crate::protocol::jsonrpc;
use crate::protocol::server::{Call, Server};

/// Log levels of `logging/setLevel`, least severe first (RFC 5424 as MCP names them).
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Template variables captured from a URI: (name, value).
pub type Vars = Vec<(String, String)>;

/// Most completion values in one answer (the MCP limit).
const MAX_COMPLETIONS: usize = 100;

fn string_param<'a>(params: &'a Value, path: &str, field: &str) -> Result<&'a str> {
    match params.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(Error::params(format!(
            "{path}.{field} must be a string, got {}",
            type_name(v)
        ))),
        None => Err(Error::params(format!("{path}.{field} is required"))),
    }
}

/// Matches `uri` against a level-1 URI template (`test://template/{id}/data`): each `{var}`
/// takes a non-empty run without `/`. Returns the variables, or `None` when it does not match.
pub fn match_template(template: &str, uri: &str) -> Option<Vars> {
    let mut vars = Vec::new();
    let (mut t, mut u) = (template, uri);
    while !t.is_empty() {
        if let Some(rest) = t.strip_prefix('{') {
            let close = rest.find('}')?;
            let name = &rest[..close];
            t = &rest[close + 1..];
            // The variable ends where the next literal part begins (or at a `/`, or the end).
            let literal_end = t.find('{').unwrap_or(t.len());
            let literal = &t[..literal_end];
            let limit = u.find('/').unwrap_or(u.len());
            let end = if literal.is_empty() {
                limit
            } else {
                u[..].find(literal).filter(|e| *e <= limit)?
            };
            if end == 0 {
                return None;
            }
            vars.push((name.to_string(), u[..end].to_string()));
            u = &u[end..];
        } else {
            let literal_end = t.find('{').unwrap_or(t.len());
            u = u.strip_prefix(&t[..literal_end])?;
            t = &t[literal_end..];
        }
    }
    u.is_empty().then_some(vars)
}

/// Replaces `{name}` in every string inside `v` with the matching value.
fn substitute(v: &Value, vars: &[(String, String)]) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (k, val) in vars {
                s = s.replace(&format!("{{{k}}}"), val);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, vars)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), substitute(x, vars))).collect()),
        other => other.clone(),
    }
}

/// The `contents` entry of a catalog resource (or template) as read at `uri`: its `blob`
/// (base64) when it has one, else its `text`, else a labelled simulated text.
pub fn contents(json: &Map<String, Value>, uri: &str, vars: &[(String, String)]) -> Value {
    let mime = json.get("mimeType").cloned().unwrap_or(json!("text/plain"));
    if let Some(blob) = json.get("blob") {
        return json!({"uri": uri, "mimeType": mime, "blob": blob});
    }
    let text = json
        .get("text")
        .map(|t| substitute(t, vars))
        .unwrap_or_else(|| json!(format!("[simulated] contents of {uri}")));
    json!({"uri": uri, "mimeType": mime, "text": text})
}

/// `prompts/get` messages from a catalog prompt's `messages` template, `{arg}` replaced by the
/// arguments (strings as they are, other values as JSON); `None` when the prompt has none.
pub fn prompt_messages(json: &Map<String, Value>, args: &Map<String, Value>) -> Option<Value> {
    let messages = json.get("messages")?;
    let vars: Vec<(String, String)> = args
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
        .collect();
    let mut result = json!({"messages": substitute(messages, &vars)});
    if let Some(d) = json.get("description") {
        result["description"] = d.clone();
    }
    Some(result)
}

/// Log and progress notifications a tool sends while it runs (the conformance fixtures
/// `test_tool_with_logging` and `test_tool_with_progress`); they precede the result in the SSE
/// answer.
pub fn tool_notifications(name: &str, params: &Value) -> Vec<String> {
    match name {
        "test_tool_with_logging" => [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .iter()
        .map(|m| {
            jsonrpc::notification(
                "notifications/message",
                Some(json!({"level": "info", "logger": name, "data": m})),
            )
        })
        .collect(),
        "test_tool_with_progress" => match params["_meta"].get("progressToken") {
            Some(token) if token.is_string() || token.is_number() => [0, 50, 100]
                .iter()
                .map(|p| {
                    jsonrpc::notification(
                        "notifications/progress",
                        Some(json!({"progressToken": token, "progress": p, "total": 100})),
                    )
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

impl Server {
    /// Adds the capabilities of this module to the server's: `logging`, `completions` and
    /// resource subscriptions.
    pub(crate) fn extra_capabilities(caps: &mut Value) {
        caps["logging"] = json!({});
        caps["completions"] = json!({});
        caps["resources"]["subscribe"] = json!(true);
    }

    /// `logging/setLevel`: validates `params.level`. The server's own log lines never go to the
    /// client, and its only logging tool logs at `info`, so the level needs no storage.
    pub(crate) fn set_log_level(&self, call: &Call) -> Result<String> {
        let level = string_param(call.params, "params", "level")?;
        if !LOG_LEVELS.contains(&level) {
            return Err(Error::params(format!(
                "params.level \"{level}\" is not a log level; expected one of: {}",
                LOG_LEVELS.join(", ")
            )));
        }
        Ok("{}".into())
    }

    /// `resources/subscribe` and `resources/unsubscribe`: the URI must be readable. Catalog
    /// resources are static, so a subscription never produces an update until the catalog is
    /// replaced (which announces `list_changed`).
    pub(crate) fn subscribe(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        self.resolve_uri(call, log).map(|_| "{}".into())
    }

    /// Finds what `params.uri` reads: a catalog resource, else the first template it matches.
    /// Returns the item's JSON and the template variables; policy applies to both.
    pub(crate) fn resolve_uri(&self, call: &Call, log: &mut Vec<String>) -> Result<(Kind, usize, Vars)> {
        let uri = string_param(call.params, "params", "uri")?;
        let unknown = || Error::params(format!("Unknown resource: \"{uri}\""));
        let resources = self.catalog.section(Kind::Resource);
        if let Some(pos) = resources.find(uri) {
            return if self.chain.allows(Kind::Resource, resources, pos, &call.ctx, log) {
                Ok((Kind::Resource, pos, Vec::new()))
            } else {
                Err(unknown())
            };
        }
        let templates = self.catalog.section(Kind::ResourceTemplate);
        for (pos, t) in templates.items.iter().enumerate() {
            if let Some(vars) = match_template(&t.id, uri) {
                if self
                    .chain
                    .allows(Kind::ResourceTemplate, templates, pos, &call.ctx, log)
                {
                    return Ok((Kind::ResourceTemplate, pos, vars));
                }
            }
        }
        Err(unknown())
    }

    /// `resources/read` of a catalog resource or of a URI matching a resource template.
    pub(crate) fn read_uri(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let (kind, pos, vars) = self.resolve_uri(call, log)?;
        let item = &self.catalog.section(kind).items[pos];
        let uri = call.params["uri"].as_str().unwrap_or_default();
        Ok(json!({"contents": [contents(&item.json, uri, &vars)]}).to_string())
    }

    /// `completion/complete` for a prompt argument (`ref/prompt`) or a template variable
    /// (`ref/resource`): the values of the argument's `completions` list in the catalog that start
    /// with `argument.value`.
    pub(crate) fn complete(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let p = call.params;
        let r = p
            .get("ref")
            .filter(|r| r.is_object())
            .ok_or_else(|| Error::params("params.ref is required (an object with type ref/prompt or ref/resource)"))?;
        let argument = p
            .get("argument")
            .filter(|a| a.is_object())
            .ok_or_else(|| Error::params("params.argument is required (an object with name and value)"))?;
        let arg_name = string_param(argument, "params.argument", "name")?;
        let prefix = string_param(argument, "params.argument", "value")?;
        let (kind, field) = match string_param(r, "params.ref", "type")? {
            "ref/prompt" => (Kind::Prompt, "name"),
            "ref/resource" => (Kind::ResourceTemplate, "uri"),
            other => {
                return Err(Error::params(format!(
                    "params.ref.type \"{other}\" is not a reference type; expected ref/prompt or ref/resource"
                )))
            }
        };
        let id = string_param(r, "params.ref", field)?;
        let section = self.catalog.section(kind);
        let unknown = || Error::params(format!("params.ref.{field}: unknown {} \"{id}\"", &field));
        let pos = section.find(id).ok_or_else(unknown)?;
        if !self.chain.allows(kind, section, pos, &call.ctx, log) {
            return Err(unknown());
        }
        let item = &section.items[pos].json;
        let declared = match kind {
            Kind::Prompt => item
                .get("arguments")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|x| x["name"] == json!(arg_name)))
                .map(|a| a.get("completions").cloned().unwrap_or(json!([]))),
            _ => Some(
                item.get("completions")
                    .and_then(|c| c.get(arg_name))
                    .cloned()
                    .unwrap_or(json!([])),
            ),
        };
        let declared = declared.ok_or_else(|| {
            Error::params(format!(
                "params.argument.name: prompt \"{id}\" has no argument \"{arg_name}\""
            ))
        })?;
        let all: Vec<&str> = declared
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|v| v.starts_with(prefix))
            .collect();
        let values: Vec<&str> = all.iter().take(MAX_COMPLETIONS).copied().collect();
        Ok(
            json!({"completion": {"values": values, "total": all.len(), "hasMore": all.len() > values.len()}})
                .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_level_one() {
        let t = "test://template/{id}/data";
        assert_eq!(
            match_template(t, "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(match_template(t, "test://template//data"), None);
        assert_eq!(match_template(t, "test://template/1/2/data"), None);
        assert_eq!(match_template(t, "test://template/123/datum"), None);
        assert_eq!(match_template("a://{x}", "a://y"), Some(vec![("x".into(), "y".into())]));
        assert_eq!(match_template("a://b", "a://b"), Some(vec![]));
    }

    #[test]
    fn prompt_messages_substitute_arguments() {
        let p = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "a='{a}' n={n}"}}]});
        let args = json!({"a": "x", "n": 3});
        let m = prompt_messages(p.as_object().unwrap(), args.as_object().unwrap()).unwrap();
        assert_eq!(m["messages"][0]["content"]["text"], "a='x' n=3");
    }

    #[test]
    fn progress_needs_a_token() {
        assert!(tool_notifications("test_tool_with_progress", &json!({})).is_empty());
        assert_eq!(
            tool_notifications("test_tool_with_progress", &json!({"_meta": {"progressToken": "p"}})).len(),
            3
        );
        assert_eq!(tool_notifications("test_tool_with_logging", &json!({})).len(), 3);
    }
}
