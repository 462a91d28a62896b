//! The catalog document (ARCHITECTURE.md "The catalog document"): loaded, validated with errors
//! that name the bad field, and compiled into one index per kind of primitive.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::concern::{ConcernDecl, Concerns};
use crate::error::{type_name, Error, Result};
use crate::filter::index::Seeded;
use crate::filter::policy::Policy;
use crate::model::{Group, Kind, Primitive, Tag};

#[cfg(feature = "check")]
mod check;
#[cfg(feature = "check")]
pub use check::Secrets;
#[cfg(feature = "operate")]
pub mod audit;
pub mod code;
#[cfg(feature = "explain")]
pub mod explain;
#[cfg(feature = "operate")]
pub mod limits;
#[cfg(feature = "check")]
pub mod locate;
mod options;
mod overlay;
#[cfg(feature = "large-catalogs")]
pub mod prepared;
#[cfg(feature = "gateway")]
mod rewrite;
#[cfg(feature = "large-catalogs")]
mod text;
mod upstream;
#[cfg(feature = "operate")]
mod usage;
mod views;

/// The section type lives with the filter; re-exported where the catalog's users look for it.
pub use crate::filter::Section;
pub use options::{Options, DEFAULT_LIST_TTL_MS, DEFAULT_PAGE_SIZE};
pub use overlay::Overlay;
#[cfg(feature = "gateway")]
pub use rewrite::{ArgRule, Rewrite};
#[cfg(feature = "gateway")]
pub use upstream::Origins;
pub use upstream::{Grant, Limits, OAuth, Tls, Transport, Upstream, DEFAULT_REFRESH_SECONDS, DEFAULT_SIGN_IN_MS};
#[cfg(feature = "operate")]
pub use usage::Use;
pub use views::{Lockdown, Mode, View, Views};

/// The built-in demo catalog (`catalog/default.json`: 74 tools in 13 groups), the document the
/// native server and the Worker serve when given none. Kept in the core so the published crates
/// carry it (a crate may include only files inside its own folder).
pub const DEMO_CATALOG: &str = include_str!("../catalog/default.json");

/// A loaded, validated, compiled catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// `server` object (name, version, instructions).
    pub server: Map<String, Value>,
    /// Declared groups (plus any referenced but undeclared, by name).
    pub groups: Vec<Group>,
    /// Declared tags (plus any referenced but undeclared).
    pub tags: Vec<Tag>,
    /// Concern declarations and policies.
    pub concerns: Concerns,
    /// Group → parent.
    pub parents: HashMap<String, String>,
    /// One section per kind, indexed by `Kind as usize`.
    pub sections: [Section; 4],
    /// Declarative policy rules and initial checks.
    pub policy: Policy,
    /// Options.
    pub options: Options,
    /// Named views (`/mcp/{view}`).
    pub views: Views,
    /// The operator's upper bound on what HTTP endpoints show (`lockdown`, `X-MCP-Lockdown`).
    /// Servers only (feature `standards`).
    #[cfg(feature = "standards")]
    pub lockdown: Lockdown,
    /// Old tool names still callable (a tool's `aliases`, or the overlay's): old → current name.
    /// Not listed; a call by one is answered by the current tool and logged as deprecated.
    /// Servers only (feature `standards`); the package keeps `aliases` as an unknown field.
    #[cfg(feature = "standards")]
    pub aliases: HashMap<String, String>,
    /// The `middleware` configuration (built-ins enabled, who may use them, their settings).
    pub middleware: crate::middleware::Config,
    /// Gateway mode: the upstream servers this catalog's primitives come from (`upstream`, the
    /// unnamed one, first; then `upstreams` by name). Empty: not a gateway.
    pub upstreams: Vec<Upstream>,
    /// Gateway mode: which upstream each listed item came from, and its name there.
    #[cfg(feature = "gateway")]
    pub origins: Origins,
    /// Gateway mode: the document's `pinning` (mode, lock file).
    #[cfg(feature = "gateway")]
    pub pinning: crate::pin::Pinning,
    /// Gateway mode: each upstream tool's digest and which match no pin (filled by
    /// `upstream::build`); [`crate::pin::Report::quarantined`] says whether pinning hides a tool.
    #[cfg(feature = "gateway")]
    pub pins: std::sync::Arc<crate::pin::Report>,
    /// The document as given, kept only in gateway mode: a gateway rebuilds the catalog from it
    /// and the upstreams' lists (`upstream::build`).
    pub document: Option<std::sync::Arc<Value>>,
    /// Who may call (`auth`: an OAuth authorization server's tokens, Cloudflare Access), when given.
    #[cfg(feature = "auth")]
    pub auth: Option<std::sync::Arc<crate::auth::AuthConfig>>,
    /// Who may call `sieve/explain` (the document's `explain`).
    #[cfg(feature = "explain")]
    pub explain: explain::Access,
    /// Search mode's index of the tools, built when first asked for ([`Catalog::search_index`]),
    /// not while the catalog loads: the native server builds it on another thread right after,
    /// the Worker on the first search. Shared by the catalog's clones.
    #[cfg(feature = "search-index")]
    pub search: std::sync::Arc<std::sync::OnceLock<crate::search::SearchIndex>>,
    /// The document's `search` settings and the slot the tools' sentence vectors arrive in, from
    /// a shell that runs the encoder (`crate::search::hybrid`); lexical search until they do.
    #[cfg(feature = "search-index")]
    pub meaning: std::sync::Arc<crate::search::hybrid::Slot>,
    /// Rate limits (the document's `limits`). Servers only (feature `operate`).
    #[cfg(feature = "operate")]
    pub limits: limits::Limits,
    /// Code mode's limits on a program's run (the document's `code`).
    #[cfg(feature = "search-index")]
    pub code: code::Limits,
    /// The audit trail's settings (the document's `audit`). Servers only (feature `operate`).
    #[cfg(feature = "operate")]
    pub audit: audit::Audit,
}

/// The document's `upstream` and `upstreams` (feature `gateway`: the Worker and the native
/// server; a build without it, the package, refuses them).
fn upstreams_of(doc: &Map<String, Value>) -> Result<Vec<Upstream>> {
    #[cfg(feature = "gateway")]
    return Upstream::parse_all(doc.get("upstream"), doc.get("upstreams"));
    #[cfg(not(feature = "gateway"))]
    match ["upstream", "upstreams"]
        .into_iter()
        .find(|k| doc.get(*k).is_some_and(|v| !v.is_null()))
    {
        Some(k) => Err(Error::Catalog(format!(
            "{k}: this build fronts no upstream (the Worker and the native server do)"
        ))),
        None => Ok(Vec::new()),
    }
}

fn section_index(kind: Kind) -> usize {
    match kind {
        Kind::Tool => 0,
        Kind::Resource => 1,
        Kind::ResourceTemplate => 2,
        Kind::Prompt => 3,
    }
}

fn array<'a>(doc: &'a Map<String, Value>, key: &str) -> Result<&'a [Value]> {
    match doc.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(Error::Catalog(format!("{key} must be an array, got {}", type_name(v)))),
    }
}

/// The document's top-level fields (a feature's own, such as `pinning`, are checked beside).
pub(crate) const KNOWN_FIELDS: [&str; 19] = [
    "server",
    "groups",
    "tags",
    "concerns",
    "concernMapping",
    "tools",
    "resources",
    "resourceTemplates",
    "prompts",
    "policy",
    "options",
    "middleware",
    "upstream",
    "upstreams",
    "overlay",
    "views",
    "auth",
    "explain",
    "$schema",
];

impl Catalog {
    /// Parses and loads a document from JSON text.
    #[cfg(not(feature = "large-catalogs"))]
    pub fn from_json_str(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error::Catalog(format!("not valid JSON: {e}")))?;
        Self::load_owned(v)
    }

    /// Parses and loads a document from JSON text. The primitives are parsed one at a time, each
    /// turned into its [`Primitive`] before the next: a parsed tree costs about ten times its
    /// text, and the whole document's (250 MB at 50,000 tools) would not fit in a Worker. A
    /// gateway's document is parsed whole: it keeps it (`Catalog::document`). The text is kept
    /// once, shared by the primitives read from it, whose fragments are written from it when
    /// first asked for ([`Primitive::fragment`]).
    #[cfg(feature = "large-catalogs")]
    pub fn from_json_str(text: &str) -> Result<Self> {
        let invalid = |e: serde_json::Error| Error::Catalog(format!("not valid JSON: {e}"));
        let doc: std::sync::Arc<str> = std::sync::Arc::from(text);
        let top = match text::split(&doc) {
            Some(top) if !top.fields.contains_key("upstream") && !top.fields.contains_key("upstreams") => top,
            // Not an object, a primitive list that is not an array (load_owned says what is
            // wrong instead), or a gateway's document.
            _ => return Self::load_owned(serde_json::from_str(text).map_err(invalid)?),
        };
        let mut fields = Map::new();
        for (key, raw) in top.fields {
            fields.insert(key, serde_json::from_str(raw.get()).map_err(invalid)?);
        }
        Self::load_parts(fields, Some((&doc, top.items)), None)
    }

    /// Loads a document.
    pub fn load(doc: &Value) -> Result<Self> {
        Self::load_owned(doc.clone())
    }

    /// Loads a document it takes: its primitives move into the catalog instead of being copied,
    /// so loading a large document holds one tree of them, not two.
    pub fn load_owned(doc: Value) -> Result<Self> {
        match doc {
            #[cfg(feature = "large-catalogs")]
            Value::Object(o) => Self::load_parts(o, None, None),
            #[cfg(not(feature = "large-catalogs"))]
            Value::Object(o) => Self::load_parts(o),
            other => Err(Error::Catalog(format!(
                "the document must be an object, got {}",
                type_name(&other)
            ))),
        }
    }

    /// Loads a document whose primitive lists are in `doc` or, each taken out of it as the
    /// texts of its primitives, in `texts` (the whole text, and the items' by section index), or
    /// read already from a prepared form's index (`prepared`, with the tools' aliases).
    fn load_parts(
        mut doc: Map<String, Value>,
        #[cfg(feature = "large-catalogs")] texts: Option<(&std::sync::Arc<str>, text::Items)>,
        #[cfg(feature = "large-catalogs")] mut prepared: Option<prepared::Read>,
    ) -> Result<Self> {
        // `pinning` is for gateways (`pin`): a build without them does not know the field.
        // `lockdown` bounds HTTP endpoints (`standards`): the package serves none.
        let known = |k: &str| {
            KNOWN_FIELDS.contains(&k)
                || (cfg!(feature = "gateway") && k == "pinning")
                || (cfg!(feature = "standards") && k == "lockdown")
                || (cfg!(feature = "search-index") && (k == "search" || k == "code"))
                || (cfg!(feature = "operate") && (k == "limits" || k == "audit"))
        };
        if let Some(k) = doc.keys().find(|k| !known(k)) {
            return Err(Error::Catalog(format!(
                "unknown top-level field \"{k}\"; expected one of: {}",
                KNOWN_FIELDS.join(", ")
            )));
        }
        let server = match doc.get("server") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(o)) => o.clone(),
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "server must be an object, got {}",
                    type_name(v)
                )))
            }
        };
        let mut groups = Vec::new();
        for (i, g) in array(&doc, "groups")?.iter().enumerate() {
            groups.push(Group::from_json(g, &format!("groups[{i}]"))?);
        }
        let mut tags = Vec::new();
        for (i, t) in array(&doc, "tags")?.iter().enumerate() {
            tags.push(Tag::from_json(t, &format!("tags[{i}]"))?);
        }
        let mut decls = Vec::new();
        for (i, c) in array(&doc, "concerns")?.iter().enumerate() {
            decls.push(ConcernDecl::from_json(c, &format!("concerns[{i}]"))?);
        }
        unique(decls.iter().map(|d| d.name.as_str()), "concerns")?;
        let mapping = match doc.get("concernMapping") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "concernMapping must be an object, got {}",
                    type_name(v)
                )))
            }
        };
        for (name, m) in &mapping {
            if !m.is_object() {
                return Err(Error::Catalog(format!(
                    "concernMapping[\"{name}\"] must be an object of concern: value"
                )));
            }
        }
        let options = doc.get("options").cloned().unwrap_or(Value::Null);
        let (options, concern_opts) = options::parse(&options)?;
        let concerns = Concerns {
            decls,
            invalid_value: concern_opts.0,
            apply_defaults: concern_opts.1,
        };

        let upstreams = upstreams_of(&doc)?;
        #[cfg(feature = "gateway")]
        let pinning = crate::pin::Pinning::parse(doc.get("pinning"))?;
        #[cfg(feature = "gateway")]
        if upstreams.is_empty() && doc.contains_key("pinning") {
            return Err(Error::Catalog(
                "pinning: pins apply to an upstream's tools, and this document names no upstream".into(),
            ));
        }
        let overlay = Overlay::parse(doc.get("overlay"))?;
        // Kept whole only in gateway mode: the catalog is rebuilt from it over the upstream's lists.
        let document = (!upstreams.is_empty()).then(|| std::sync::Arc::new(Value::Object(doc.clone())));
        let mut sections: [Section; 4] = Default::default();
        // Tools' old names (`aliases`) → their names; read by `standards` (servers only).
        #[cfg_attr(not(feature = "standards"), allow(unused_mut))]
        let mut aliases: Vec<(String, String)> = Vec::new();
        for kind in Kind::ALL {
            array(&doc, kind.key())?;
            let mut items = Vec::new();
            let read = |i: usize, v: Value, aliases: &mut Vec<(String, String)>| -> Result<Primitive> {
                let path = format!("{}[{i}]", kind.key());
                #[cfg_attr(not(feature = "standards"), allow(unused_mut))]
                let mut v = match overlay.apply(&v) {
                    Cow::Owned(o) => o,
                    Cow::Borrowed(_) => v,
                };
                #[cfg(feature = "standards")]
                if kind == Kind::Tool {
                    // A renamed tool's old names: callable, never listed (so not on the wire).
                    // Taken out with the other fields kept in their order.
                    if let Some(old) = v.as_object_mut().and_then(|o| o.shift_remove("aliases")) {
                        let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
                        for a in
                            crate::json::str_array(Some(&old), &format!("{path}.aliases")).map_err(Error::in_catalog)?
                        {
                            aliases.push((a, name.to_string()));
                        }
                    }
                }
                #[cfg(not(feature = "standards"))]
                let _ = aliases;
                let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
                let m = mapping.get(name).and_then(Value::as_object);
                Primitive::from_json(kind, v, &path, m)
            };
            if let Some(Value::Array(list)) = doc.get_mut(kind.key()).map(Value::take) {
                for (i, v) in list.into_iter().enumerate() {
                    items.push(read(i, v, &mut aliases)?);
                }
            }
            #[cfg(feature = "large-catalogs")]
            for (i, entry) in texts
                .as_ref()
                .into_iter()
                .flat_map(|(_, items)| items[section_index(kind)].iter().flatten())
                .enumerate()
            {
                // Read from its text without a tree when no overlay changes it (`from_text`);
                // an item that is not well formed is loaded the general way, which names the fault.
                if let (Some((whole, _)), text::Entry::Split(item)) =
                    (texts.as_ref().filter(|_| overlay.is_empty()), entry)
                {
                    let standards = cfg!(feature = "standards");
                    if let Some((p, old)) = Primitive::from_text(kind, whole, item, &mapping, standards) {
                        aliases.extend(old.into_iter().map(|a| (a, p.name.clone())));
                        items.push(p);
                        continue;
                    }
                }
                let v = serde_json::from_str(entry.text())
                    .map_err(|e| Error::Catalog(format!("{}[{i}]: {e}", kind.key())))?;
                items.push(read(i, v, &mut aliases)?);
            }
            #[cfg(feature = "large-catalogs")]
            if let Some(read) = prepared.as_mut() {
                items.append(&mut read.sections[section_index(kind)]);
                aliases.append(&mut read.aliases);
                sections[section_index(kind)].index = std::mem::take(&mut read.indexes[section_index(kind)]);
            }
            // A prepared form's map by name holds each name once and each item's id is its name:
            // the ids are unique, known without a second set of them.
            #[cfg(feature = "large-catalogs")]
            let checked = prepared.is_some() && {
                let by_name = &sections[section_index(kind)].index.by_name;
                by_name.len() == items.len() && items.iter().all(|p| p.id == p.name)
            };
            #[cfg(not(feature = "large-catalogs"))]
            let checked = false;
            if !checked {
                unique(items.iter().map(|p| p.id.as_str()), kind.key())?;
            }
            sections[section_index(kind)].items = items;
        }
        // A prepared form's index holds each section's, as `Section::new` would build it.
        let mut catalog = Self::assemble(
            server,
            groups,
            tags,
            concerns,
            sections,
            #[cfg(feature = "large-catalogs")]
            prepared.map(|read| read.named),
            options,
            &doc,
        )?;
        catalog.document = document;
        catalog.upstreams = upstreams;
        #[cfg(feature = "gateway")]
        {
            catalog.pinning = pinning;
        }
        catalog.views = views::parse(doc.get("views"), &catalog.concerns)?;
        #[cfg(feature = "standards")]
        catalog.standards(&doc, aliases)?;
        Ok(catalog)
    }

    /// The document's `lockdown` and the tools' `aliases` (servers only).
    #[cfg(feature = "standards")]
    fn standards(&mut self, doc: &Map<String, Value>, aliases: Vec<(String, String)>) -> Result<()> {
        self.lockdown = Lockdown::parse(doc.get("lockdown"))?;
        let tools = self.section(Kind::Tool);
        let mut by_old = HashMap::new();
        for (old, name) in aliases {
            if tools.find(&old).is_some() {
                return Err(Error::Catalog(format!(
                    "\"{old}\" is an alias of \"{name}\" and also a tool's name; an alias must be a name no tool has"
                )));
            }
            if let Some(other) = by_old.insert(old.clone(), name.clone()).filter(|o| *o != name) {
                return Err(Error::Catalog(format!(
                    "\"{old}\" is an alias of both \"{other}\" and \"{name}\"; an alias names one tool"
                )));
            }
        }
        self.aliases = by_old;
        Ok(())
    }

    /// `indexed` (a prepared form's): `sections` hold their index already, else it is built,
    /// and each section's groups and tags by first use.
    #[cfg_attr(feature = "large-catalogs", allow(clippy::too_many_arguments))]
    fn assemble(
        server: Map<String, Value>,
        mut groups: Vec<Group>,
        mut tags: Vec<Tag>,
        concerns: Concerns,
        sections: [Section; 4],
        #[cfg(feature = "large-catalogs")] indexed: Option<[prepared::Named; 4]>,
        options: Options,
        doc: &Map<String, Value>,
    ) -> Result<Self> {
        unique(groups.iter().map(|g| g.name.as_str()), "groups")?;
        unique(tags.iter().map(|t| t.name.as_str()), "tags")?;
        let declared: HashSet<String> = groups.iter().map(|g| g.name.clone()).collect();
        for (i, g) in groups.iter().enumerate() {
            if let Some(p) = &g.parent {
                if !declared.contains(p) {
                    return Err(Error::Catalog(format!(
                        "groups[{i}].parent names \"{p}\", which is not a declared group"
                    )));
                }
            }
        }
        let parents: HashMap<String, String> = groups
            .iter()
            .filter_map(|g| Some((g.name.clone(), g.parent.clone()?)))
            .collect();
        for g in &groups {
            let chain = crate::filter::index::ancestors(&g.name, &parents);
            if chain.last().and_then(|l| parents.get(*l)).is_some() {
                return Err(Error::Catalog(format!(
                    "group \"{}\" is part of a parent cycle",
                    g.name
                )));
            }
        }
        #[cfg(feature = "standards")]
        scoped_names(&groups, &parents)?;
        #[cfg(feature = "large-catalogs")]
        match &indexed {
            Some(named) => undeclared_named(named, &mut groups, &mut tags),
            None => undeclared(&sections, &mut groups, &mut tags),
        }
        #[cfg(not(feature = "large-catalogs"))]
        undeclared(&sections, &mut groups, &mut tags);
        #[cfg(feature = "large-catalogs")]
        let sections = sections.map(|s| match indexed.is_some() {
            true => Section::with_index(s.items, s.index),
            false => Section::new(s.items, &parents),
        });
        #[cfg(not(feature = "large-catalogs"))]
        let sections = sections.map(|s| Section::new(s.items, &parents));
        let policy = Policy::parse(doc.get("policy").unwrap_or(&Value::Null), &parents)?;
        let middleware = crate::middleware::Config::parse(doc.get("middleware").unwrap_or(&Value::Null))?;
        Ok(Catalog {
            server,
            groups,
            tags,
            concerns,
            parents,
            sections,
            policy,
            options,
            middleware,
            views: Views::new(),
            #[cfg(feature = "standards")]
            lockdown: Lockdown::default(),
            #[cfg(feature = "standards")]
            aliases: HashMap::new(),
            upstreams: Vec::new(),
            #[cfg(feature = "gateway")]
            origins: Origins::default(),
            #[cfg(feature = "gateway")]
            pinning: Default::default(),
            #[cfg(feature = "gateway")]
            pins: Default::default(),
            document: None,
            #[cfg(feature = "auth")]
            auth: crate::auth::AuthConfig::parse(doc.get("auth"))?.map(std::sync::Arc::new),
            #[cfg(feature = "explain")]
            explain: explain::parse(doc.get("explain"))?,
            #[cfg(feature = "search-index")]
            search: Default::default(),
            #[cfg(feature = "search-index")]
            meaning: std::sync::Arc::new(crate::search::hybrid::Slot::new(
                crate::search::hybrid::Settings::parse(doc.get("search"))?,
            )),
            #[cfg(feature = "operate")]
            limits: limits::Limits::parse(doc.get("limits"))?,
            #[cfg(feature = "search-index")]
            code: code::Limits::parse(doc.get("code"))?,
            #[cfg(feature = "operate")]
            audit: audit::Audit::parse(doc.get("audit"))?,
        })
    }

    /// Search mode's index of the tools, built on first use (from the tools' definitions as
    /// listed) and kept.
    #[cfg(feature = "search-index")]
    pub fn search_index(&self) -> &crate::search::SearchIndex {
        self.search
            .get_or_init(|| crate::search::SearchIndex::of_tools(&self.section(Kind::Tool).items, &self.groups))
    }

    /// Writes every section's wire objects into one buffer each ([`Section::settle`]): for a
    /// server that keeps its catalog long and lists it often.
    #[cfg(feature = "large-catalogs")]
    pub fn settle(&mut self) {
        for section in &mut self.sections {
            section.settle();
        }
    }

    /// Whether a group is marked `"scoped": true` (`protocol::disclosure`; a server asks once,
    /// when its catalog is set).
    #[cfg(feature = "standards")]
    pub fn has_scoped_groups(&self) -> bool {
        self.groups
            .iter()
            .any(|g| g.json.get("scoped") == Some(&Value::Bool(true)))
    }

    /// The section of one kind.
    pub fn section(&self, kind: Kind) -> &Section {
        &self.sections[section_index(kind)]
    }

    /// Builds a catalog from a `tools/list` result (plus optional `groups/list` and `tags/list`
    /// results), as a browser host or a gateway sees a server.
    pub fn from_lists(tools: &Value, groups: Option<&Value>, tags: Option<&Value>) -> Result<Self> {
        let mut doc = Map::new();
        let field = |v: Option<&Value>, key: &str| v.and_then(|v| v.get(key)).cloned().unwrap_or(Value::Array(vec![]));
        doc.insert("tools".into(), field(Some(tools), "tools"));
        doc.insert("groups".into(), field(groups, "groups"));
        doc.insert("tags".into(), field(tags, "tags"));
        Self::load_owned(Value::Object(doc))
    }
}

/// Primitives may name groups and tags the document does not declare: each is listed by name
/// (looked up in sets: at 5,000 tools a scan of the list per name was a tenth of `assemble`).
// A function of its own, not inlined into `assemble` (24 KB, run once): V8 tiers a wasm function
// up to TurboFan when its loops have run long enough, and with this loop inside, a fresh Worker's
// load of 5,000 tools compiled all of `assemble` with TurboFan (53 ms of background CPU in a
// trace, bench/cold-trace.mjs) to run it once more at most.
#[inline(never)]
fn undeclared(sections: &[Section; 4], groups: &mut Vec<Group>, tags: &mut Vec<Tag>) {
    let mut group_names: HashSet<String, Seeded> = groups.iter().map(|g| g.name.clone()).collect();
    let mut tag_names: HashSet<String, Seeded> = tags.iter().map(|t| t.name.clone()).collect();
    for s in sections {
        for item in &s.items {
            for g in &item.groups {
                if !group_names.contains(g) {
                    group_names.insert(g.clone());
                    groups.push(Group::named(g));
                }
            }
            for t in &item.tags {
                if !tag_names.contains(t) {
                    tag_names.insert(t.clone());
                    tags.push(Tag::named(t));
                }
            }
        }
    }
}

/// `undeclared` from a prepared form's index: each section's groups and tags in the order its
/// items first name them (no loop over the items: at 5,000 tools V8 compiled `undeclared` with
/// TurboFan on a fresh Worker's first answer). An undeclared group is no group's parent, so it is
/// where its first item names it.
#[cfg(feature = "large-catalogs")]
fn undeclared_named(named: &[prepared::Named; 4], groups: &mut Vec<Group>, tags: &mut Vec<Tag>) {
    let mut group_names: HashSet<String, Seeded> = groups.iter().map(|g| g.name.clone()).collect();
    let mut tag_names: HashSet<String, Seeded> = tags.iter().map(|t| t.name.clone()).collect();
    for (g_named, t_named) in named {
        for g in g_named {
            if group_names.insert(g.clone()) {
                groups.push(Group::named(g));
            }
        }
        for t in t_named {
            if tag_names.insert(t.clone()) {
                tags.push(Tag::named(t));
            }
        }
    }
}

/// The groups extension's (`io.modelcontextprotocol/groups`) rules for the groups it lists: a
/// group's `scoped` is a boolean, and a scoped group ([`scoped_groups`]) has a name a client can
/// send back in `groups/get` — 1–64 lowercase letters, digits and hyphens, with no leading,
/// trailing or consecutive hyphen (the draft's `Group.name`).
#[cfg(feature = "standards")]
fn scoped_names(groups: &[Group], parents: &HashMap<String, String>) -> Result<()> {
    for (i, g) in groups.iter().enumerate() {
        if let Some(other) = g.json.get("scoped").filter(|v| !v.is_boolean()) {
            return Err(Error::Catalog(format!(
                "groups[{i}].scoped must be true or false, got {}",
                type_name(other)
            )));
        }
    }
    let ruled = |n: &str| {
        (1..=64).contains(&n.len())
            && n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !n.starts_with('-')
            && !n.ends_with('-')
            && !n.contains("--")
    };
    let scoped = scoped_groups(groups, parents);
    match groups
        .iter()
        .enumerate()
        .find(|(_, g)| scoped.contains(g.name.as_str()) && !ruled(&g.name))
    {
        Some((i, g)) => Err(Error::Catalog(format!(
            "groups[{i}].name \"{}\": a scoped group's name must be 1–64 lowercase letters, digits and \
             hyphens, with no leading, trailing or consecutive hyphen (the groups extension's rule)",
            g.name
        ))),
        None => Ok(()),
    }
}

/// The scoped groups of `groups` (nested by `parents`): declared `"scoped": true`, or under one
/// that is.
#[cfg(feature = "standards")]
pub(crate) fn scoped_groups<'a>(groups: &'a [Group], parents: &HashMap<String, String>) -> HashSet<&'a str> {
    let declared: HashSet<&str> = groups
        .iter()
        .filter(|g| g.json.get("scoped") == Some(&Value::Bool(true)))
        .map(|g| g.name.as_str())
        .collect();
    if declared.is_empty() {
        return declared;
    }
    groups
        .iter()
        .filter(|g| {
            crate::filter::index::ancestors(&g.name, parents)
                .iter()
                .any(|a| declared.contains(a))
        })
        .map(|g| g.name.as_str())
        .collect()
}

// Not inlined: its loop runs once per item, and inlined it made its caller hot (see `undeclared`).
#[inline(never)]
fn unique<'a>(names: impl Iterator<Item = &'a str>, what: &str) -> Result<()> {
    let mut seen = HashSet::with_capacity_and_hasher(names.size_hint().0, Seeded::default());
    for n in names {
        if !seen.insert(n) {
            return Err(Error::Catalog(format!(
                "{what} has the name \"{n}\" twice; names must be unique"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a load gives: every primitive, or the error.
    fn loaded(c: Result<Catalog>) -> std::result::Result<Vec<Primitive>, String> {
        c.map(|c| c.sections.iter().flat_map(|s| s.items.clone()).collect())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn text_loads_as_the_parsed_document_does() {
        let default = include_str!("../catalog/default.json");
        let mut texts = vec![default.to_string()];
        for broken in [
            r#"{"tools": [{"name": "a"}, {"name": "b", "tags": "x"}]}"#,
            r#"{"tools": {"name": "a"}}"#,
            r#"{"tools": null, "prompts": [{"name": "p"}]}"#,
            r#"{"tools": [{"name": "a"}, {"name": "a"}]}"#,
            r#"{"tools": [1]}"#,
            r#"{"bogus": 1, "tools": []}"#,
            r#"[1, 2]"#,
            r#"{"tools": [{"name": "a"}"#,
        ] {
            texts.push(broken.to_string());
        }
        for text in &texts {
            let parsed = serde_json::from_str::<Value>(text)
                .map_err(|e| Error::Catalog(format!("not valid JSON: {e}")))
                .and_then(Catalog::load_owned);
            assert_eq!(
                loaded(Catalog::from_json_str(text)),
                loaded(parsed),
                "{}",
                &text[..text.len().min(80)]
            );
        }
        assert!(loaded(Catalog::from_json_str(default)).is_ok_and(|items| items.len() > 20));
    }
}
