//! The document's `overlay`: groups and tags given to primitives by name or glob, typically to an
//! upstream's items, which know nothing of our groups.

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::error::{type_name, Error, Result};
use crate::filter::glob;
use crate::json::str_array;

/// One overlay entry: a name or glob and the groups and tags it adds.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    pattern: String,
    groups: Vec<String>,
    tags: Vec<String>,
    /// Old names of a renamed tool (servers only: feature `standards`).
    #[cfg(feature = "standards")]
    aliases: Vec<String>,
    /// What it rewrites in an upstream's tools (gateway only).
    #[cfg(feature = "gateway")]
    rewrite: Option<super::rewrite::Rewrite>,
}

/// The document's `overlay`: `{"<name or glob>": {"groups": [..], "tags": [..], "aliases": [..]}}`.
/// It adds membership to primitives (tools, resources, templates, prompts) by `name`, typically
/// to the upstream's items, which know nothing of our groups, and old names to renamed tools.
/// Memberships the item has stay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlay(Vec<Entry>);

impl Overlay {
    /// Whether it has no entry (then it changes no item).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

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
            #[allow(unused_mut)]
            let mut fields: Vec<&str> = vec!["groups", "tags"];
            #[cfg(feature = "standards")]
            fields.push("aliases");
            #[cfg(feature = "gateway")]
            fields.extend(super::rewrite::FIELDS);
            if let Some(k) = e.keys().find(|k| !fields.contains(&k.as_str())) {
                return Err(Error::Catalog(format!(
                    "{path} has an unknown field \"{k}\"; expected {}",
                    fields.join(", ")
                )));
            }
            let groups = str_array(e.get("groups"), &format!("{path}.groups")).map_err(Error::in_catalog)?;
            let tags = str_array(e.get("tags"), &format!("{path}.tags")).map_err(Error::in_catalog)?;
            entries.push(Entry {
                pattern: pattern.clone(),
                groups,
                tags,
                // A renamed tool's old names (an upstream renamed it; clients still call the old).
                #[cfg(feature = "standards")]
                aliases: str_array(e.get("aliases"), &format!("{path}.aliases")).map_err(Error::in_catalog)?,
                #[cfg(feature = "gateway")]
                rewrite: super::rewrite::Rewrite::parse(pattern, e, &path)?,
            });
        }
        Ok(Overlay(entries))
    }

    /// Every old name the document gives a renamed tool (none without feature `standards`): no
    /// upstream item may take one.
    pub fn aliases(&self) -> Vec<&str> {
        #[cfg(feature = "standards")]
        return self
            .0
            .iter()
            .flat_map(|e| e.aliases.iter().map(String::as_str))
            .collect();
        #[cfg(not(feature = "standards"))]
        Vec::new()
    }

    /// The rewrites of the entries matching the tool `name`, in the document's order (gateway).
    #[cfg(feature = "gateway")]
    pub fn rewrites(&self, name: &str) -> Vec<&super::rewrite::Rewrite> {
        self.0
            .iter()
            .filter(|e| glob::matches(&e.pattern, name))
            .filter_map(|e| e.rewrite.as_ref())
            .collect()
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
            #[cfg(feature = "standards")]
            ("aliases", hits.iter().flat_map(|e| &e.aliases).collect()),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
