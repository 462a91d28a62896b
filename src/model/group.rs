//! Groups (SEP-1300, with an optional `parent`) and tags.

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};
use crate::json::{opt_str, req_str};

/// A named collection of primitives; `parent` makes membership transitive.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Unique name.
    pub name: String,
    /// Name of the parent group, if any.
    pub parent: Option<String>,
    /// The wire object, unknown fields included.
    pub json: Map<String, Value>,
}

/// A free-form label on primitives.
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// Unique name.
    pub name: String,
    /// The wire object, unknown fields included.
    pub json: Map<String, Value>,
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::Catalog(format!("{path} must be an object, got {}", type_name(v))))
}

impl Group {
    /// Reads a group object; `path` names it in errors (e.g. `groups[2]`).
    pub fn from_json(v: &Value, path: &str) -> Result<Self> {
        let json = object(v, path)?.clone();
        let name = req_str(&json, "name", path).map_err(Error::in_catalog)?;
        let parent = opt_str(&json, "parent", path).map_err(Error::in_catalog)?;
        Ok(Group { name, parent, json })
    }

    /// A group known only by name (referenced by a primitive but not declared).
    pub fn named(name: &str) -> Self {
        let mut json = Map::new();
        json.insert("name".into(), Value::String(name.into()));
        Group {
            name: name.into(),
            parent: None,
            json,
        }
    }
}

impl Tag {
    /// Reads a tag object; `path` names it in errors.
    pub fn from_json(v: &Value, path: &str) -> Result<Self> {
        let json = object(v, path)?.clone();
        let name = req_str(&json, "name", path).map_err(Error::in_catalog)?;
        Ok(Tag { name, json })
    }

    /// A tag known only by name.
    pub fn named(name: &str) -> Self {
        let mut json = Map::new();
        json.insert("name".into(), Value::String(name.into()));
        Tag {
            name: name.into(),
            json,
        }
    }
}
