//! Rewriting what upstreams publish (gateway only): an overlay entry may give a tool another
//! `name`, `title`, `description`, `annotations`, and per argument hide it (with a fixed value),
//! rename it, describe it or give it a default — as FastMCP's tool transforms and Cloudflare's
//! portal overrides do. The tool is listed rewritten; a call is translated back
//! ([`ArgRule::back`]) before it leaves for the upstream, which never sees the rewritten names.
//! Pinning keeps checking the upstream's own definition (the digest is taken before rewriting).

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};

/// One argument's rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRule {
    /// Its name at the upstream.
    pub name: String,
    /// Its listed name (`rename`), when it differs.
    pub rename: Option<String>,
    /// Hidden: not listed; every call sends this value.
    pub fixed: Option<Value>,
    /// Listed with this description.
    pub description: Option<String>,
    /// Listed with this default (no longer required); a call without it sends it.
    pub default: Option<Value>,
}

/// What an overlay entry rewrites in the tools it matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewrite {
    /// The listed name (only for an entry naming one tool, no glob).
    pub name: Option<String>,
    /// The listed title.
    pub title: Option<String>,
    /// The listed description.
    pub description: Option<String>,
    /// Annotations set over the upstream's.
    pub annotations: Map<String, Value>,
    /// Argument rules.
    pub arguments: Vec<ArgRule>,
}

/// The overlay fields a rewrite reads.
pub const FIELDS: [&str; 5] = ["name", "title", "description", "annotations", "arguments"];

fn opt_str(e: &Map<String, Value>, k: &str, path: &str) -> Result<Option<String>> {
    match e.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(v) => Err(Error::Catalog(format!(
            "{path}.{k} must be a non-empty string, got {}",
            type_name(v)
        ))),
    }
}

impl Rewrite {
    /// Reads the rewrite fields of the overlay entry `e` for `pattern` (none: `None`).
    pub fn parse(pattern: &str, e: &Map<String, Value>, path: &str) -> Result<Option<Rewrite>> {
        if !FIELDS.iter().any(|k| e.contains_key(*k)) {
            return Ok(None);
        }
        let name = opt_str(e, "name", path)?;
        if name.is_some() && pattern.contains(['*', '?']) {
            return Err(Error::Catalog(format!(
                "{path}.name renames one tool: name it exactly, without * or ?"
            )));
        }
        if let Some(n) = &name {
            let ok = n.len() <= 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
            if !ok {
                return Err(Error::Catalog(format!(
                    "{path}.name must be 1 to 64 letters, digits, '_', '-' or '.', got \"{n}\""
                )));
            }
        }
        let annotations = match e.get("annotations") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "{path}.annotations must be an object such as {{\"readOnlyHint\": true}}, got {}",
                    type_name(v)
                )))
            }
        };
        let mut arguments = Vec::new();
        match e.get("arguments") {
            None | Some(Value::Null) => {}
            Some(Value::Object(args)) => {
                for (arg, rule) in args {
                    let at = format!("{path}.arguments[\"{arg}\"]");
                    let Value::Object(r) = rule else {
                        return Err(Error::Catalog(format!(
                            "{at} must be an object such as {{\"hide\": true, \"value\": \"x\"}} or {{\"rename\": \"y\"}}, got {}",
                            type_name(rule)
                        )));
                    };
                    const KEYS: [&str; 5] = ["hide", "value", "rename", "description", "default"];
                    if let Some(k) = r.keys().find(|k| !KEYS.contains(&k.as_str())) {
                        return Err(Error::Catalog(format!(
                            "{at} has an unknown field \"{k}\"; expected {}",
                            KEYS.join(", ")
                        )));
                    }
                    let hide = match r.get("hide") {
                        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                        Some(Value::Bool(true)) => true,
                        Some(v) => {
                            return Err(Error::Catalog(format!(
                                "{at}.hide must be true or false, got {}",
                                type_name(v)
                            )))
                        }
                    };
                    let fixed = match (hide, r.get("value")) {
                        (true, Some(v)) => Some(v.clone()),
                        (true, None) => {
                            return Err(Error::Catalog(format!(
                                "{at}: a hidden argument needs the \"value\" every call sends"
                            )))
                        }
                        (false, Some(_)) => {
                            return Err(Error::Catalog(format!(
                                "{at}.value is for a hidden argument (\"hide\": true); a visible one takes \"default\""
                            )))
                        }
                        (false, None) => None,
                    };
                    let rename = opt_str(r, "rename", &at)?;
                    if hide && (rename.is_some() || r.contains_key("default") || r.contains_key("description")) {
                        return Err(Error::Catalog(format!(
                            "{at}: a hidden argument is not listed, so it takes no rename, description or default"
                        )));
                    }
                    arguments.push(ArgRule {
                        name: arg.clone(),
                        rename,
                        fixed,
                        description: opt_str(r, "description", &at)?,
                        default: r.get("default").cloned(),
                    });
                }
            }
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "{path}.arguments must be an object of argument name → rule, got {}",
                    type_name(v)
                )))
            }
        }
        Ok(Some(Rewrite {
            name,
            title: opt_str(e, "title", path)?,
            description: opt_str(e, "description", path)?,
            annotations,
            arguments,
        }))
    }

    /// Rewrites the tool `tool` (a JSON object) as listed: its fields, then its input schema.
    pub fn apply(&self, tool: &mut Map<String, Value>) {
        for (k, v) in [
            ("name", &self.name),
            ("title", &self.title),
            ("description", &self.description),
        ] {
            if let Some(v) = v {
                tool.insert(k.into(), Value::String(v.clone()));
            }
        }
        if !self.annotations.is_empty() {
            let a = tool.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(a) = a {
                a.extend(self.annotations.clone());
            }
        }
        let Some(Value::Object(schema)) = tool.get_mut("inputSchema") else {
            return;
        };
        for rule in &self.arguments {
            let mut required: Vec<Value> = match schema.remove("required") {
                Some(Value::Array(r)) => r,
                _ => Vec::new(),
            };
            let props = schema.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(props) = props {
                let prop = props.remove(&rule.name);
                let is_required = required.iter().any(|r| r.as_str() == Some(&rule.name));
                required.retain(|r| r.as_str() != Some(&rule.name));
                if rule.fixed.is_none() {
                    let mut prop = prop.unwrap_or_else(|| Value::Object(Map::new()));
                    if let Value::Object(p) = &mut prop {
                        if let Some(d) = &rule.description {
                            p.insert("description".into(), Value::String(d.clone()));
                        }
                        if let Some(d) = &rule.default {
                            p.insert("default".into(), d.clone());
                        }
                    }
                    let shown = rule.rename.clone().unwrap_or_else(|| rule.name.clone());
                    if is_required && rule.default.is_none() {
                        required.push(Value::String(shown.clone()));
                    }
                    props.insert(shown, prop);
                }
            }
            if !required.is_empty() {
                schema.insert("required".into(), Value::Array(required));
            }
        }
    }
}

impl ArgRule {
    /// Translates a call's `arguments` back to the upstream's: a renamed argument takes its own
    /// name again, a hidden one its fixed value (whatever the client sent), a missing one with a
    /// default the default.
    pub fn back(rules: &[ArgRule], args: &mut Map<String, Value>) {
        for rule in rules {
            if let Some(v) = &rule.fixed {
                args.insert(rule.name.clone(), v.clone());
                continue;
            }
            if let Some(shown) = &rule.rename {
                // The upstream's own name is not the listed one: a client sending it is ignored.
                args.remove(&rule.name);
                if let Some(v) = args.remove(shown) {
                    args.insert(rule.name.clone(), v);
                }
            }
            if let (Some(d), false) = (&rule.default, args.contains_key(&rule.name)) {
                args.insert(rule.name.clone(), d.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rewrite(v: Value) -> Rewrite {
        Rewrite::parse(
            "gh_create_issue",
            v.as_object().unwrap(),
            "overlay[\"gh_create_issue\"]",
        )
        .unwrap()
        .unwrap()
    }

    #[test]
    fn a_tool_is_listed_rewritten_and_its_calls_go_back() {
        let r = rewrite(json!({
            "name": "open_issue", "description": "Open an issue in our repo", "annotations": {"readOnlyHint": false},
            "arguments": {
                "owner": {"hide": true, "value": "acme"},
                "body": {"rename": "text", "description": "What happened"},
                "labels": {"default": ["triage"]}
            }
        }));
        let mut tool = json!({"name": "gh_create_issue", "description": "Create", "inputSchema": {"type": "object",
            "properties": {"owner": {"type": "string"}, "title": {"type": "string"}, "body": {"type": "string"}, "labels": {"type": "array"}},
            "required": ["owner", "title", "body", "labels"]}});
        r.apply(tool.as_object_mut().unwrap());
        assert_eq!(tool["name"], "open_issue");
        assert_eq!(tool["annotations"], json!({"readOnlyHint": false}));
        let schema = &tool["inputSchema"];
        let mut props: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        props.sort();
        assert_eq!(props, ["labels", "text", "title"]);
        assert_eq!(schema["properties"]["text"]["description"], "What happened");
        assert_eq!(schema["properties"]["labels"]["default"], json!(["triage"]));
        assert_eq!(schema["required"], json!(["title", "text"]));
        let mut args = json!({"title": "t", "text": "b", "owner": "evil", "body": "sneaky"});
        ArgRule::back(&r.arguments, args.as_object_mut().unwrap());
        assert_eq!(
            args,
            json!({"title": "t", "body": "b", "owner": "acme", "labels": ["triage"]})
        );
    }

    #[test]
    fn rules_are_validated_with_their_path() {
        let e = |pattern: &str, v: Value| {
            Rewrite::parse(pattern, v.as_object().unwrap(), "overlay[\"x\"]")
                .unwrap_err()
                .to_string()
        };
        assert!(e("gh_*", json!({"name": "y"})).contains("renames one tool"));
        assert!(e("x", json!({"arguments": {"a": {"hide": true}}})).contains("needs the \"value\""));
        assert!(e("x", json!({"arguments": {"a": {"value": 1}}})).contains("is for a hidden argument"));
        assert!(e(
            "x",
            json!({"arguments": {"a": {"hide": true, "value": 1, "rename": "b"}}})
        )
        .contains("takes no rename"));
        assert!(e("x", json!({"arguments": {"a": {"x": 1}}})).contains("unknown field \"x\""));
        assert!(e("x", json!({"name": "bad name"})).contains("1 to 64 letters"));
    }
}
