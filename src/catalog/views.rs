//! The document's `views`: named subsets of the catalog served at `/mcp/{view}` to clients that
//! send no filter (DESIGN.md "Views"). Parsed and validated once, with errors naming the field;
//! a view never degrades to "everything".

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
        Some(other) => {
            return Err(Error::Catalog(format!(
                "{path}.mode must be \"list\" or \"search\", got {other}"
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
    }

    #[test]
    fn a_malformed_view_is_an_error_naming_the_field() {
        for (views, want) in [
            (json!([]), "views must be an object"),
            (json!({"a b": {}}), "the name \"a b\""),
            (json!({"v": 1}), "views.v must be an object"),
            (
                json!({"v": {"mode": "grid"}}),
                "views.v.mode must be \"list\" or \"search\"",
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
