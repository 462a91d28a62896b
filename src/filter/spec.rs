//! The filter object of every list request, parsed with errors that name the bad field.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::json::{scalar_text, str_array};

/// Deepest `expr` nesting accepted (keeps evaluation off the edge of the stack).
pub const MAX_EXPR_DEPTH: usize = 32;
/// Most nodes in one `expr` tree (bounds the work of one request).
pub const MAX_EXPR_NODES: usize = 512;
/// Most entries in one of `groups`, `tags`, `excludeTags`, `namePatterns`.
pub const MAX_LIST: usize = 256;
/// Longest string in a filter (a group, a tag, a name glob), in bytes, on the servers: bounds
/// the glob matcher's work per name.
pub const MAX_STRING: usize = 256;

/// A parsed `filter`. All parts AND together; an empty part is no constraint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Member of ANY of these groups (transitively through parents).
    pub groups: Vec<String>,
    /// Carries ALL of these tags.
    pub tags: Vec<String>,
    /// Carries NONE of these tags.
    pub exclude_tags: Vec<String>,
    /// Name matches ANY of these globs.
    pub name_patterns: Vec<String>,
    /// SEP-2564: a resource's `uri` (a template's `uriTemplate`) matches ANY of these globs.
    /// Tools and prompts have no URI: for them it is ignored, as SEP-2564 ignores a field a list
    /// does not support. Servers only (feature `standards`): the package refuses the field.
    #[cfg(feature = "standards")]
    pub uri_patterns: Vec<String>,
    /// Per-request concern configuration, as sent (validated against the declarations later).
    pub concerns: Option<Value>,
    /// Optional boolean tree.
    pub expr: Option<Expr>,
}

/// The boolean tree of `filter.expr`.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Every child holds.
    All(Vec<Expr>),
    /// At least one child holds.
    Any(Vec<Expr>),
    /// The child does not hold.
    Not(Box<Expr>),
    /// Member of the group (transitively).
    Group(String),
    /// Carries the tag.
    Tag(String),
    /// Name matches the glob.
    Name(String),
    /// For each pair: no mapping for the concern, or the mapped value equals it.
    Concern(Vec<(String, String)>),
    /// For each pair: the annotation equals the value (MCP's defaults for tool hints).
    Annotation(Vec<(String, Value)>),
}

/// A string longer than [`MAX_STRING`] bytes is `-32602` naming `path`. Servers only (feature
/// `large-catalogs`): the browser package's filters come from its own page, and its size budget
/// has no room for the check.
#[cfg(feature = "large-catalogs")]
pub(crate) fn check_len(s: &str, path: &str) -> Result<()> {
    if s.len() > MAX_STRING {
        return Err(Error::params(format!(
            "{path} has a value of {} bytes; at most {MAX_STRING} are allowed",
            s.len()
        )));
    }
    Ok(())
}

/// The strings of a list field, each passing [`check_len`].
#[cfg(feature = "large-catalogs")]
fn strings(val: &Value, path: &str) -> Result<Vec<String>> {
    let v = str_array(Some(val), path)?;
    v.iter().try_for_each(|s| check_len(s, path))?;
    Ok(v)
}

/// The strings of a list field (the package: no cap).
#[cfg(not(feature = "large-catalogs"))]
fn strings(val: &Value, path: &str) -> Result<Vec<String>> {
    str_array(Some(val), path)
}

/// The package's [`check_len`]: no cap.
#[cfg(not(feature = "large-catalogs"))]
pub(crate) fn check_len(_: &str, _: &str) -> Result<()> {
    Ok(())
}

#[cfg(feature = "standards")]
const KEYS: &str = "groups, tags, excludeTags, namePatterns, uriPatterns, concerns, expr";
#[cfg(not(feature = "standards"))]
const KEYS: &str = "groups, tags, excludeTags, namePatterns, concerns, expr";

impl Filter {
    /// Parses `v` found at `path` (usually `filter`). `null` is the empty filter.
    pub fn parse(v: &Value, path: &str) -> Result<Self> {
        let obj = match v {
            Value::Null => return Ok(Filter::default()),
            Value::Object(o) => o,
            other => {
                return Err(Error::params(format!(
                    "{path} must be an object, got {}",
                    type_name(other)
                )))
            }
        };
        let mut f = Filter::default();
        for (k, val) in obj {
            // The field's path, written only for an error (every list request parses a filter).
            let p = || format!("{path}.{k}");
            let list = |val: &Value| -> Result<Vec<String>> {
                match val.as_array() {
                    Some(a) if a.len() > MAX_LIST => Err(Error::params(format!(
                        "{} has {} entries; at most {MAX_LIST} are allowed",
                        p(),
                        a.len()
                    ))),
                    Some(a) if a.iter().all(|x| x.as_str().is_some_and(|s| check_len(s, "").is_ok())) => {
                        Ok(a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    }
                    _ => strings(val, &p()),
                }
            };
            match k.as_str() {
                "groups" => f.groups = list(val)?,
                "tags" => f.tags = list(val)?,
                "excludeTags" => f.exclude_tags = list(val)?,
                "namePatterns" => f.name_patterns = list(val)?,
                #[cfg(feature = "standards")]
                "uriPatterns" => f.uri_patterns = list(val)?,
                "concerns" => match val {
                    Value::Null => {}
                    Value::Object(_) => f.concerns = Some(val.clone()),
                    other => {
                        return Err(Error::params(format!(
                            "{} must be an object mapping concern names to values, got {}",
                            p(),
                            type_name(other)
                        )))
                    }
                },
                "expr" => {
                    f.expr = if val.is_null() {
                        None
                    } else {
                        let p = p();
                        let e = Expr::parse(val, &p, 0)?;
                        let nodes = e.nodes();
                        if nodes > MAX_EXPR_NODES {
                            return Err(Error::params(format!(
                                "{p} has {nodes} nodes; at most {MAX_EXPR_NODES} are allowed"
                            )));
                        }
                        Some(e)
                    }
                }
                // SEP-2564's vendor fields (`com.example/targetIds`): ignored when not recognised.
                other if other.contains('/') => {}
                other => {
                    return Err(Error::params(format!(
                        "{path} has an unknown field \"{other}\"; expected one of: {KEYS}"
                    )))
                }
            }
        }
        Ok(f)
    }

    /// SEP-2564's `uriPatterns` (none in the package, which does not take them).
    pub fn uri_patterns(&self) -> &[String] {
        #[cfg(feature = "standards")]
        return &self.uri_patterns;
        #[cfg(not(feature = "standards"))]
        &[]
    }

    /// Whether the filter constrains nothing by itself (concerns aside).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
            && self.tags.is_empty()
            && self.exclude_tags.is_empty()
            && self.name_patterns.is_empty()
            && self.uri_patterns().is_empty()
            && self.expr.is_none()
    }

    /// The filter's fields that constrain something, each alone as a filter, by the field's
    /// name: they combine with AND, so an item the filter leaves out is left out by at least one
    /// of them (`sieve/explain` and the package's `Sieve.explain` name which).
    pub fn parts(&self) -> Vec<(&'static str, Filter)> {
        let names = ["namePatterns", "groups", "tags", "excludeTags", "expr"];
        let mut parts: Vec<_> = names.into_iter().map(|n| (n, Filter::default())).collect();
        parts[0].1.name_patterns = self.name_patterns.clone();
        parts[1].1.groups = self.groups.clone();
        parts[2].1.tags = self.tags.clone();
        parts[3].1.exclude_tags = self.exclude_tags.clone();
        parts[4].1.expr = self.expr.clone();
        #[cfg(feature = "standards")]
        parts.push((
            "uriPatterns",
            Filter {
                uri_patterns: self.uri_patterns.clone(),
                ..Filter::default()
            },
        ));
        parts.retain(|(_, f)| !f.is_empty());
        parts
    }

    /// A canonical JSON form (for binding cursors to the filter that made them).
    pub fn canonical(&self) -> Value {
        json!({
            "groups": self.groups, "tags": self.tags, "excludeTags": self.exclude_tags,
            "namePatterns": self.name_patterns, "uriPatterns": self.uri_patterns(),
            "expr": self.expr.as_ref().map(Expr::to_json),
        })
    }
}

impl Expr {
    fn parse(v: &Value, path: &str, depth: usize) -> Result<Self> {
        if depth >= MAX_EXPR_DEPTH {
            return Err(Error::params(format!(
                "{path} nests deeper than {MAX_EXPR_DEPTH} levels"
            )));
        }
        let obj = v.as_object().filter(|o| o.len() == 1).ok_or_else(|| {
            Error::params(format!(
                "{path} must be an object with exactly one of: all, any, not, group, tag, name, concern, annotation; got {}",
                if v.is_object() { "an object with another number of fields".to_string() } else { type_name(v).to_string() }
            ))
        })?;
        let (k, val) = obj
            .iter()
            .next()
            .ok_or_else(|| Error::Internal("checked above".into()))?;
        let p = format!("{path}.{k}");
        let list = |val: &Value| -> Result<Vec<Expr>> {
            let items = val
                .as_array()
                .ok_or_else(|| Error::params(format!("{p} must be an array of expressions, got {}", type_name(val))))?;
            items
                .iter()
                .enumerate()
                .map(|(i, x)| Expr::parse(x, &format!("{p}[{i}]"), depth + 1))
                .collect()
        };
        let string = |val: &Value| -> Result<String> {
            let s = val
                .as_str()
                .ok_or_else(|| Error::params(format!("{p} must be a string, got {}", type_name(val))))?;
            check_len(s, &p)?;
            Ok(s.to_string())
        };
        let pairs = |val: &Value| -> Result<Map<String, Value>> {
            val.as_object().cloned().ok_or_else(|| {
                Error::params(format!(
                    "{p} must be an object of name: value pairs, got {}",
                    type_name(val)
                ))
            })
        };
        Ok(match k.as_str() {
            "all" => Expr::All(list(val)?),
            "any" => Expr::Any(list(val)?),
            "not" => Expr::Not(Box::new(Expr::parse(val, &p, depth + 1)?)),
            "group" => Expr::Group(string(val)?),
            "tag" => Expr::Tag(string(val)?),
            "name" => Expr::Name(string(val)?),
            "concern" => Expr::Concern(
                pairs(val)?
                    .into_iter()
                    .map(|(c, x)| {
                        scalar_text(&x)
                            .map(|t| (c.clone(), t))
                            .ok_or_else(|| Error::params(format!("{p}.{c} must be a string or number, got {}", type_name(&x))))
                    })
                    .collect::<Result<_>>()?,
            ),
            "annotation" => Expr::Annotation(pairs(val)?.into_iter().collect()),
            other => {
                return Err(Error::params(format!(
                    "{path} has an unknown operator \"{other}\"; expected one of: all, any, not, group, tag, name, concern, annotation"
                )))
            }
        })
    }

    /// How many nodes the tree has.
    pub fn nodes(&self) -> usize {
        1 + match self {
            Expr::All(v) | Expr::Any(v) => v.iter().map(Expr::nodes).sum(),
            Expr::Not(e) => e.nodes(),
            _ => 0,
        }
    }

    /// The JSON form of the expression.
    pub fn to_json(&self) -> Value {
        match self {
            Expr::All(v) => json!({"all": v.iter().map(Expr::to_json).collect::<Vec<_>>()}),
            Expr::Any(v) => json!({"any": v.iter().map(Expr::to_json).collect::<Vec<_>>()}),
            Expr::Not(e) => json!({"not": e.to_json()}),
            Expr::Group(g) => json!({"group": g}),
            Expr::Tag(t) => json!({"tag": t}),
            Expr::Name(n) => json!({"name": n}),
            Expr::Concern(p) => {
                json!({"concern": p.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<_, _>>()})
            }
            Expr::Annotation(p) => {
                json!({"annotation": p.iter().cloned().collect::<Map<String, Value>>()})
            }
        }
    }
}
