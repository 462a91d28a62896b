//! The document's `views`: named subsets of the catalog served at `/mcp/{view}` to clients that
//! send no filter (ARCHITECTURE.md "Views and policy"). Parsed and validated once, with errors
//! naming the field; a view never degrades to "everything".

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::concern::{ConcernConfig, Concerns};
use crate::error::{type_name, Error, Result};
use crate::filter::Filter;
use crate::json::str_array;

/// How a view presents its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// The tools themselves.
    #[default]
    List,
    /// `find_tools` and `call_tool` (plus the pinned tools) instead of the whole list.
    Search,
    /// Search mode's tools with `run_code` (a program calling the tools) instead of `call_tool`.
    Code,
}

/// One named view.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    /// What the view is for (shown to whoever picks an endpoint).
    pub description: Option<String>,
    /// The filter every list and use of this endpoint is narrowed by.
    pub filter: Filter,
    /// Concern configuration applied to every request of this endpoint.
    pub concerns: ConcernConfig,
    /// List or search mode.
    pub mode: Mode,
    /// Tools listed beside the search tools in search mode.
    pub pinned: Vec<String>,
    /// Globs of principals allowed to use the view (`None`: anyone).
    pub principals: Option<Vec<String>>,
}

/// The views by name.
pub type Views = BTreeMap<String, View>;

/// The document's `lockdown`: the operator's upper bound on what an HTTP endpoint shows, in the
/// GitHub MCP server's terms (its static `--toolsets`, `--tools`, `--exclude-tools`,
/// `--read-only`). When `enabled` (or `MCP_SIEVE_LOCKDOWN=true` in the shell's environment) it
/// narrows every request; otherwise a request turns it on for itself with `X-MCP-Lockdown:
/// true`. No header widens it: headers and URLs only AND more narrowings onto it, and
/// `X-MCP-Lockdown: false` cannot turn off what the operator enabled.
#[derive(Debug, Clone, PartialEq)]
pub struct Lockdown {
    /// Whether it applies to every request (the operator's switch).
    pub enabled: bool,
    /// Groups whose tools it keeps (with `tools`: their union); empty with `tools` empty: all.
    pub toolsets: Vec<String>,
    /// Tools (names or globs) it keeps beside the toolsets'.
    pub tools: Vec<String>,
    /// Tools it removes whatever else says (names or globs).
    pub exclude_tools: Vec<String>,
    /// Only tools annotated `readOnlyHint: true` (default true: a lockdown nobody described
    /// still means "nothing that writes").
    pub read_only: bool,
}

impl Default for Lockdown {
    fn default() -> Self {
        Lockdown {
            enabled: false,
            toolsets: Vec::new(),
            tools: Vec::new(),
            exclude_tools: Vec::new(),
            read_only: true,
        }
    }
}

impl Lockdown {
    /// The environment variable that turns the operator's lockdown on (`true`, `1`, `yes`, `on`).
    pub const VAR: &'static str = "MCP_SIEVE_LOCKDOWN";

    /// Whether the value of [`Lockdown::VAR`] turns lockdown on.
    pub fn var_enables(value: Option<&str>) -> bool {
        value.is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"))
    }

    /// The document `text` with `lockdown.enabled` set: what the shells load when
    /// `MCP_SIEVE_LOCKDOWN` is set, so a gateway's rebuilt catalog keeps it too.
    pub fn enable_in(text: &str) -> Result<String> {
        let mut doc: Value = serde_json::from_str(text).map_err(|e| Error::Catalog(format!("not valid JSON: {e}")))?;
        let Some(o) = doc.as_object_mut() else {
            return Err(Error::Catalog(format!(
                "the document must be an object, got {}",
                type_name(&doc)
            )));
        };
        let l = o.entry("lockdown").or_insert_with(|| Value::Object(Map::new()));
        if l.is_null() {
            *l = Value::Object(Map::new());
        }
        match l.as_object_mut() {
            Some(l) => l.insert("enabled".into(), Value::Bool(true)),
            None => return Err(Error::Catalog("lockdown must be an object".into())),
        };
        Ok(doc.to_string())
    }

    /// Reads `lockdown` (absent or null: the default, off until a request asks).
    pub fn parse(v: Option<&Value>) -> Result<Lockdown> {
        const KEYS: [&str; 5] = ["enabled", "toolsets", "tools", "excludeTools", "readOnly"];
        let o = match v {
            None | Some(Value::Null) => return Ok(Lockdown::default()),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "lockdown must be an object like {{\"enabled\": true, \"readOnly\": true, \"excludeTools\": [..]}}, got {}",
                    type_name(other)
                )))
            }
        };
        if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "lockdown has an unknown field \"{k}\"; expected one of: {}",
                KEYS.join(", ")
            )));
        }
        let flag = |k: &str, default: bool| match o.get(k) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(Error::Catalog(format!(
                "lockdown.{k} must be true or false, got {}",
                type_name(other)
            ))),
        };
        let list = |k: &str| str_array(o.get(k), &format!("lockdown.{k}")).map_err(Error::in_catalog);
        Ok(Lockdown {
            enabled: flag("enabled", false)?,
            toolsets: list("toolsets")?,
            tools: list("tools")?,
            exclude_tools: list("excludeTools")?,
            read_only: flag("readOnly", true)?,
        })
    }
}

const FIELDS: [&str; 6] = ["description", "filter", "concerns", "mode", "pinned", "principals"];

/// Reads `views` (absent or null: none); `concerns` validates the views' concern values.
pub fn parse(v: Option<&Value>, concerns: &Concerns) -> Result<Views> {
    let obj = match v {
        None | Some(Value::Null) => return Ok(Views::new()),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(Error::Catalog(format!(
                "views must be an object of \"<name>\": {{\"filter\": {{..}}, \"mode\": \"list\"}}, got {}",
                type_name(other)
            )))
        }
    };
    let mut views = Views::new();
    for (name, v) in obj {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(Error::Catalog(format!(
                "views: the name \"{name}\" must be letters, digits, - or _ (it is a URL path segment)"
            )));
        }
        views.insert(name.clone(), parse_view(name, v, concerns)?);
    }
    Ok(views)
}

fn parse_view(name: &str, v: &Value, concerns: &Concerns) -> Result<View> {
    let path = format!("views.{name}");
    let o: &Map<String, Value> = v
        .as_object()
        .ok_or_else(|| Error::Catalog(format!("{path} must be an object, got {}", type_name(v))))?;
    if let Some(k) = o.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(Error::Catalog(format!(
            "{path} has an unknown field \"{k}\"; expected one of: {}",
            FIELDS.join(", ")
        )));
    }
    let description = match o.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(Error::Catalog(format!(
                "{path}.description must be a string, got {}",
                type_name(other)
            )))
        }
    };
    let filter =
        Filter::parse(o.get("filter").unwrap_or(&Value::Null), &format!("{path}.filter")).map_err(Error::in_catalog)?;
    let concerns = match o.get("concerns") {
        None | Some(Value::Null) => ConcernConfig::new(),
        Some(raw) => {
            let (resolved, _) = concerns
                .resolve(raw, &format!("{path}.concerns"))
                .map_err(Error::in_catalog)?;
            if let Some(w) = resolved.warnings.first() {
                // A view that silently ignored a concern would show more than it says.
                return Err(Error::Catalog(format!("{path}.concerns: {w}")));
            }
            resolved.config
        }
    };
    let mode = match o.get("mode") {
        None | Some(Value::Null) => Mode::List,
        Some(Value::String(s)) if s == "list" => Mode::List,
        Some(Value::String(s)) if s == "search" => Mode::Search,
        Some(Value::String(s)) if s == "code" => Mode::Code,
        Some(other) => {
            return Err(Error::Catalog(format!(
                "{path}.mode must be \"list\", \"search\" or \"code\", got {other}"
            )))
        }
    };
    let pinned = str_array(o.get("pinned"), &format!("{path}.pinned")).map_err(Error::in_catalog)?;
    let principals = match o.get("principals") {
        None | Some(Value::Null) => None,
        p => Some(str_array(p, &format!("{path}.principals")).map_err(Error::in_catalog)?),
    };
    Ok(View {
        description,
        filter,
        concerns,
        mode,
        pinned,
        principals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalog;
    use serde_json::json;

    fn load(views: Value) -> Result<Catalog> {
        Catalog::load(&json!({
            "concerns": [{"name": "security", "values": ["high", "medium", "low"], "default": "medium"}],
            "tools": [], "views": views
        }))
    }

    #[test]
    fn views_are_parsed_once_into_types() {
        let c = load(
            json!({"readonly": {"description": "safe", "filter": {"tags": ["read-only"]},
            "concerns": {"security": "high"}, "mode": "search", "pinned": ["echo"], "principals": ["team-*"]}}),
        )
        .unwrap();
        let v = &c.views["readonly"];
        assert_eq!(v.description.as_deref(), Some("safe"));
        assert_eq!(v.filter, Filter::parse(&json!({"tags": ["read-only"]}), "f").unwrap());
        assert_eq!(v.concerns.get("security").map(String::as_str), Some("high"));
        assert_eq!((v.mode, v.pinned.clone()), (Mode::Search, vec!["echo".to_string()]));
        assert_eq!(v.principals, Some(vec!["team-*".to_string()]));
        assert!(load(Value::Null).unwrap().views.is_empty());
        let c = load(json!({"scripted": {"mode": "code"}})).unwrap();
        assert_eq!(c.views["scripted"].mode, Mode::Code);
    }

    #[test]
    fn a_malformed_view_is_an_error_naming_the_field() {
        for (views, want) in [
            (json!([]), "views must be an object"),
            (json!({"a b": {}}), "the name \"a b\""),
            (json!({"v": 1}), "views.v must be an object"),
            (
                json!({"v": {"mode": "grid"}}),
                "views.v.mode must be \"list\", \"search\" or \"code\"",
            ),
            (json!({"v": {"filter": {"groups": "x"}}}), "views.v.filter.groups"),
            (json!({"v": {"concerns": {"security": "ultra"}}}), "views.v.concerns"),
            (json!({"v": {"concerns": {"cost": "low"}}}), "views.v.concerns"),
            (json!({"v": {"pinned": [1]}}), "views.v.pinned[0]"),
            (json!({"v": {"filters": {}}}), "unknown field \"filters\""),
        ] {
            let e = load(views).unwrap_err().to_string();
            assert!(e.contains(want), "{e} should contain {want}");
        }
    }
}
