//! The filter rules written as a plain loop over `serde_json::Value`, with no index. The property
//! test checks the index against it and the benchmarks use it as the baseline.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::concern::ConcernConfig;
use crate::filter::{glob, Expr, Filter};
use crate::json::scalar_text;
use crate::model::META_GROUPS;

/// The items of `doc[key]` (a catalog document) that pass `filter` under `concerns`.
pub fn filter<'a>(doc: &'a Value, key: &str, filter: &Filter, concerns: &ConcernConfig) -> Vec<&'a Value> {
    let parents: HashMap<&str, &str> = doc["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| Some((g["name"].as_str()?, g["parent"].as_str()?)))
        .collect();
    let mapping = doc["concernMapping"].as_object();
    doc[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| passes(item, filter, concerns, &parents, mapping))
        .collect()
}

/// The naive `tools/list` result: filter, clone, re-serialize.
pub fn list_json(doc: &Value, key: &str, f: &Filter, concerns: &ConcernConfig) -> String {
    let items: Vec<Value> = filter(doc, key, f, concerns).into_iter().cloned().collect();
    let mut m = Map::new();
    m.insert(key.to_string(), Value::Array(items));
    Value::Object(m).to_string()
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

fn in_group(item: &Value, group: &str, parents: &HashMap<&str, &str>) -> bool {
    let mut direct = strings(&item["groups"]);
    direct.extend(strings(&item["_meta"][META_GROUPS]));
    direct.iter().any(|g| {
        let mut cur = *g;
        for _ in 0..=parents.len() {
            if cur == group {
                return true;
            }
            match parents.get(cur) {
                Some(p) => cur = p,
                None => return false,
            }
        }
        false
    })
}

fn concern_of(item: &Value, concern: &str, mapping: Option<&Map<String, Value>>) -> Option<String> {
    let name = item["name"].as_str().unwrap_or_default();
    mapping
        .and_then(|m| m.get(name))
        .and_then(|m| m.get(concern))
        .or_else(|| item["_meta"]["concerns"].get(concern))
        .and_then(scalar_text)
}

fn concern_ok(item: &Value, c: &str, v: &str, mapping: Option<&Map<String, Value>>) -> bool {
    concern_of(item, c, mapping).is_none_or(|m| m == v)
}

fn annotation(item: &Value, key: &str) -> Option<Value> {
    if let Some(v) = item["annotations"].get(key) {
        return Some(v.clone());
    }
    item.get("inputSchema")?;
    match key {
        "readOnlyHint" | "idempotentHint" => Some(Value::Bool(false)),
        "destructiveHint" | "openWorldHint" => Some(Value::Bool(true)),
        _ => None,
    }
}

/// A resource's `uri` or a template's `uriTemplate` (tools and prompts have none).
fn uri_of(item: &Value) -> Option<&str> {
    item["uri"].as_str().or_else(|| item["uriTemplate"].as_str())
}

fn passes(
    item: &Value,
    f: &Filter,
    concerns: &ConcernConfig,
    parents: &HashMap<&str, &str>,
    mapping: Option<&Map<String, Value>>,
) -> bool {
    let name = item["name"].as_str().unwrap_or_default();
    let tags = strings(&item["tags"]);
    (f.groups.is_empty() || f.groups.iter().any(|g| in_group(item, g, parents)))
        && f.tags.iter().all(|t| tags.contains(&t.as_str()))
        && !f.exclude_tags.iter().any(|t| tags.contains(&t.as_str()))
        && (f.name_patterns.is_empty() || f.name_patterns.iter().any(|p| glob::matches(p, name)))
        && (f.uri_patterns().is_empty()
            || uri_of(item).is_none_or(|u| f.uri_patterns().iter().any(|p| glob::matches(p, u))))
        && concerns.iter().all(|(c, v)| concern_ok(item, c, v, mapping))
        && f.expr.as_ref().is_none_or(|e| eval(item, e, parents, mapping))
}

fn eval(item: &Value, e: &Expr, parents: &HashMap<&str, &str>, mapping: Option<&Map<String, Value>>) -> bool {
    match e {
        Expr::All(v) => v.iter().all(|x| eval(item, x, parents, mapping)),
        Expr::Any(v) => v.iter().any(|x| eval(item, x, parents, mapping)),
        Expr::Not(x) => !eval(item, x, parents, mapping),
        Expr::Group(g) => in_group(item, g, parents),
        Expr::Tag(t) => strings(&item["tags"]).contains(&t.as_str()),
        Expr::Name(p) => glob::matches(p, item["name"].as_str().unwrap_or_default()),
        Expr::Concern(pairs) => pairs.iter().all(|(c, v)| concern_ok(item, c, v, mapping)),
        Expr::Annotation(pairs) => pairs.iter().all(|(k, v)| annotation(item, k).as_ref() == Some(v)),
    }
}
