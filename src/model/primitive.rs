//! One listable primitive (tool, resource, resource template or prompt) with its membership,
//! concern mapping, the fields filters read, and its wire JSON serialized once.

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};
use crate::json::{req_str, scalar_text, str_array};

#[cfg(feature = "large-catalogs")]
pub(crate) mod text;

/// The `_meta` key of the SEP-2084 draft that also carries group membership.
pub const META_GROUPS: &str = "io.modelcontextprotocol/groups";

/// The kinds of listable primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `tools/list`
    Tool,
    /// `resources/list`
    Resource,
    /// `resources/templates/list`
    ResourceTemplate,
    /// `prompts/list`
    Prompt,
}

impl Kind {
    /// Every kind, in catalog order.
    pub const ALL: [Kind; 4] = [Kind::Tool, Kind::Resource, Kind::ResourceTemplate, Kind::Prompt];

    /// The catalog document key and list result key (`tools`, `resources`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Kind::Tool => "tools",
            Kind::Resource => "resources",
            Kind::ResourceTemplate => "resourceTemplates",
            Kind::Prompt => "prompts",
        }
    }

    /// The list method of this kind.
    pub fn list_method(self) -> &'static str {
        match self {
            Kind::Tool => "tools/list",
            Kind::Resource => "resources/list",
            Kind::ResourceTemplate => "resources/templates/list",
            Kind::Prompt => "prompts/list",
        }
    }

    /// Whether its items have a URI (`uri`, `uriTemplate`): what SEP-2564's `uriPatterns` match.
    pub fn has_uri(self) -> bool {
        matches!(self, Kind::Resource | Kind::ResourceTemplate)
    }

    /// The field that identifies an item of this kind on use (`name`, `uri`, `uriTemplate`).
    pub fn id_field(self) -> &'static str {
        match self {
            Kind::Tool | Kind::Prompt => "name",
            Kind::Resource => "uri",
            Kind::ResourceTemplate => "uriTemplate",
        }
    }
}

/// A primitive as the server lists it.
#[derive(Debug, Clone)]
pub struct Primitive {
    /// What it is.
    pub kind: Kind,
    /// Its `name`.
    pub name: String,
    /// Its identity on use: name for tools and prompts, `uri` / `uriTemplate` for resources.
    pub id: String,
    /// Groups it is directly a member of (top-level `groups` ∪ `_meta[META_GROUPS]`).
    pub groups: Vec<String>,
    /// Tags it carries.
    pub tags: Vec<String>,
    /// Concern name → value (internal mapping over `_meta.concerns`). A list, not a map: a map's
    /// first node holds room for eleven entries, and most items have one or two.
    pub concerns: Vec<(String, String)>,
    /// Its `annotations` object (empty when it has none): what annotation filters read.
    pub annotations: Map<String, Value>,
    /// A tool's `execution.taskSupport`, if it declares one.
    pub task_support: Option<String>,
    /// The wire object ([`Primitive::fragment`]).
    fragment: Fragment,
}

/// How a primitive's wire object is held ([`Primitive::wire`]).
#[cfg(feature = "large-catalogs")]
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Wire<'a> {
    /// Written out.
    Written(&'a str),
    /// Written from the item's text, `start..end` of the document, when first asked for.
    Lazy {
        /// Where the item's text starts in the document.
        start: usize,
        /// Where it ends.
        end: usize,
        /// Whether the document's `concernMapping` maps the item.
        mapped: bool,
        /// Whether a tool's `aliases` are taken out.
        aliases: bool,
    },
}

/// A primitive's wire object: written at its load, or (read from a document's text, feature
/// `large-catalogs`) written from that text the first time it is asked for.
#[derive(Debug, Clone)]
enum Fragment {
    Written(String),
    #[cfg(feature = "large-catalogs")]
    Lazy(Box<text::Lazy>),
}

impl PartialEq for Primitive {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, &self.name, &self.id, &self.groups, &self.tags)
            == (other.kind, &other.name, &other.id, &other.groups, &other.tags)
            && (&self.concerns, &self.annotations, &self.task_support)
                == (&other.concerns, &other.annotations, &other.task_support)
            && self.fragment() == other.fragment()
    }
}

impl Primitive {
    /// Reads a primitive; `path` names it in errors; `mapping` is the server's internal concern
    /// mapping for this name, which wins over `_meta.concerns`.
    /// The object is taken, not copied: a catalog of tens of thousands of tools holds one tree.
    // The servers: not inlined into the large-catalog load's loop, where it is the fallback
    // (`text::read` says why).
    #[cfg_attr(feature = "large-catalogs", inline(never))]
    pub fn from_json(kind: Kind, v: Value, path: &str, mapping: Option<&Map<String, Value>>) -> Result<Self> {
        let mut json = match v {
            Value::Object(o) => o,
            other => {
                return Err(Error::Catalog(format!(
                    "{path} must be an object, got {}",
                    type_name(&other)
                )))
            }
        };
        let name = req_str(&json, "name", path).map_err(Error::in_catalog)?;
        let id = if kind.id_field() == "name" {
            name.clone()
        } else {
            req_str(&json, kind.id_field(), path).map_err(Error::in_catalog)?
        };
        let meta = match json.get("_meta") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "{path}._meta must be an object, got {}",
                    type_name(other)
                )))
            }
        };
        let mut groups = str_array(json.get("groups"), &format!("{path}.groups")).map_err(Error::in_catalog)?;
        if let Some(meta) = meta {
            for g in str_array(meta.get(META_GROUPS), &format!("{path}._meta[\"{META_GROUPS}\"]"))
                .map_err(Error::in_catalog)?
            {
                if !groups.contains(&g) {
                    groups.push(g);
                }
            }
        }
        let mut tags = str_array(json.get("tags"), &format!("{path}.tags")).map_err(Error::in_catalog)?;
        dedup(&mut tags);
        let mut concerns = Vec::new();
        if let Some(Value::Object(c)) = meta.and_then(|m| m.get("concerns")) {
            read_concerns(c, &format!("{path}._meta.concerns"), &mut concerns)?;
        }
        if let Some(m) = mapping {
            read_concerns(m, &format!("concernMapping[\"{name}\"]"), &mut concerns)?;
            write_concerns(&mut json, &concerns);
        }
        write_membership(&mut json, &groups, &tags);
        // A map of JSON values always serializes (its keys are strings). Kept as an exact-size
        // copy: the writer's buffer has up to twice the room (`shrink_to_fit` costs the package
        // more code).
        let fragment = String::from(&*serde_json::to_string(&json).unwrap_or_default());
        // What filters and calls read moves out of the tree, which is dropped.
        let annotations = match json.get_mut("annotations").map(Value::take) {
            Some(Value::Object(a)) => a,
            _ => Map::new(),
        };
        let support = json.get_mut("execution").and_then(|e| e.get_mut("taskSupport"));
        let task_support = match support.map(Value::take) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        Ok(Primitive {
            kind,
            name,
            id,
            groups,
            tags,
            concerns,
            annotations,
            task_support,
            fragment: Fragment::Written(fragment),
        })
    }

    /// The wire object, with membership written in both places and unknown fields as they came,
    /// serialized once: lists are assembled from it, and it is the only copy kept (a parsed tree
    /// costs about ten times its text, which at 50,000 tools is more than a Worker may hold). An
    /// item read from a document's text (`large-catalogs`) writes it when first asked: a first
    /// answer lists one page, and at 5,000 tools writing every item's was a sixth of the load.
    pub fn fragment(&self) -> &str {
        match &self.fragment {
            Fragment::Written(s) => s,
            #[cfg(feature = "large-catalogs")]
            Fragment::Lazy(l) => l.get(self),
        }
    }

    /// Appends the wire object ([`Primitive::fragment`]) to `out`; one not written yet is written
    /// for it and not kept (a section's settled buffer holds it: [`crate::filter::Section::settle`]).
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn write_fragment(&self, out: &mut String) {
        match &self.fragment {
            Fragment::Written(s) => out.push_str(s),
            Fragment::Lazy(l) => l.write_into(self, out),
        }
    }

    /// Reads a primitive from its JSON text, split (`item`, a part of the document `doc`), as
    /// [`Primitive::from_json`] does from the parsed value, without the tree (`text.rs`), and
    /// with `aliases` takes a tool's `aliases` out of it as a server's load does, given back
    /// beside (`mapping`: the document's `concernMapping`). Its fragment is written from `doc`
    /// when first asked for. `None` when the item is not well formed: the caller loads it with
    /// [`Primitive::from_json`], which names what is wrong.
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn from_text(
        kind: Kind,
        doc: &std::sync::Arc<str>,
        item: &text::Item,
        mapping: &Map<String, Value>,
        aliases: bool,
    ) -> Option<(Self, Vec<String>)> {
        text::read(kind, doc, item, mapping, aliases)
    }

    /// How the wire object is held, for a prepared form of the document
    /// ([`crate::catalog::prepared`]): written, or its range in the document's text and how it
    /// is written from there.
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn wire(&self) -> Wire<'_> {
        match &self.fragment {
            Fragment::Written(s) => Wire::Written(s),
            Fragment::Lazy(l) => l.wire(),
        }
    }

    /// A primitive whose fields were read already (a prepared form of the document), its wire
    /// object `wire` (a range of `doc`, written from there when first asked for).
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn prepared(mut self, doc: &std::sync::Arc<str>, wire: Wire<'_>) -> Self {
        self.fragment = match wire {
            Wire::Written(s) => Fragment::Written(s.to_string()),
            Wire::Lazy {
                start,
                end,
                mapped,
                aliases,
            } => Fragment::Lazy(Box::new(text::Lazy::new(doc, start, end, mapped, aliases))),
        };
        self
    }

    /// A primitive of `kind` with these fields and an empty wire object (set by
    /// [`Primitive::prepared`]).
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn bare(kind: Kind, name: String, id: String) -> Self {
        Primitive {
            kind,
            name,
            id,
            groups: Vec::new(),
            tags: Vec::new(),
            concerns: Vec::new(),
            annotations: Map::new(),
            task_support: None,
            fragment: Fragment::Written(String::new()),
        }
    }

    /// The wire object, parsed from [`Primitive::fragment`]: for the answers that read one
    /// item's fields (a prompt's arguments, a resource's contents).
    pub fn json(&self) -> Map<String, Value> {
        // Read as a Value: a typed read (`Map`) brings serde's type errors, whose float
        // formatting costs the package 13 KB.
        match serde_json::from_str(self.fragment()) {
            Ok(Value::Object(o)) => o,
            _ => Map::new(),
        }
    }

    /// The value of an annotation, with MCP's defaults for the four tool hints.
    pub fn annotation(&self, key: &str) -> Option<Value> {
        if let Some(v) = self.annotations.get(key) {
            return Some(v.clone());
        }
        if self.kind != Kind::Tool {
            return None;
        }
        match key {
            "readOnlyHint" | "idempotentHint" => Some(Value::Bool(false)),
            "destructiveHint" | "openWorldHint" => Some(Value::Bool(true)),
            _ => None,
        }
    }
}

/// Reads concern values into `out`, over the values it has for the same concerns.
fn read_concerns(m: &Map<String, Value>, path: &str, out: &mut Vec<(String, String)>) -> Result<()> {
    for (k, v) in m {
        let text = scalar_text(v)
            .ok_or_else(|| Error::Catalog(format!("{path}.{k} must be a string or number, got {}", type_name(v))))?;
        match out.iter_mut().find(|(name, _)| name == k) {
            Some(entry) => entry.1 = text,
            None => out.push((k.clone(), text)),
        }
    }
    Ok(())
}

/// Writes the effective mapping (the internal one over `_meta.concerns`) to `_meta.concerns`, so a
/// list shows exactly what the server filters by; values that agree keep their original form.
fn write_concerns(json: &mut Map<String, Value>, concerns: &[(String, String)]) {
    let meta = json.entry("_meta").or_insert(Value::Null);
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Some(meta) = meta.as_object_mut() else { return };
    let listed = meta.get("concerns").and_then(Value::as_object);
    let effective: Map<String, Value> = concerns
        .iter()
        .map(|(k, v)| {
            let same = listed
                .and_then(|l| l.get(k))
                .filter(|old| scalar_text(old).as_deref() == Some(v.as_str()));
            (k.clone(), same.cloned().unwrap_or_else(|| Value::String(v.clone())))
        })
        .collect();
    meta.insert("concerns".into(), Value::Object(effective));
}

fn dedup(v: &mut Vec<String>) {
    // A few tags: compared in place (no set, no copy of each); many: a set.
    if v.len() <= 16 {
        let mut i = 0;
        while i < v.len() {
            match v[..i].contains(&v[i]) {
                true => drop(v.remove(i)),
                false => i += 1,
            }
        }
        return;
    }
    let mut seen = std::collections::HashSet::new();
    v.retain(|s| seen.insert(s.clone()));
}

/// Writes membership to the SEP-1300 top-level fields and to `_meta[META_GROUPS]`.
fn write_membership(json: &mut Map<String, Value>, groups: &[String], tags: &[String]) {
    let strings = |v: &[String]| Value::Array(v.iter().cloned().map(Value::String).collect());
    if !groups.is_empty() {
        json.insert("groups".into(), strings(groups));
        let meta = json.entry("_meta").or_insert(Value::Null);
        if meta.is_null() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(META_GROUPS.into(), strings(groups));
        }
    }
    if !tags.is_empty() {
        json.insert("tags".into(), strings(tags));
    }
}
