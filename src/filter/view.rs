//! An endpoint's view as policy: what a client given one MCP URL may see and use — the AND of a
//! named view, a URL query and GitHub-compatible headers (built by `http::endpoint_view`). The
//! policy chain applies it to every list and every use, like a policy rule.

use crate::concern::ConcernConfig;
use crate::filter::{Bits, Filter, Section};
use crate::model::Kind;

/// One narrowing: a filter with its concern configuration (unmapped items are agnostic, as in a
/// request's own filter).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewPart {
    /// The filter.
    pub filter: Filter,
    /// Concern values the view configures.
    pub concerns: ConcernConfig,
    /// Whether it narrows tools only (the `X-MCP-*` headers), not every kind.
    pub tools_only: bool,
}

impl ViewPart {
    /// The GitHub MCP server's tool selection as one tools-only part: the tools of `toolsets`
    /// (groups) together with the `tools` named (names or globs) — X-MCP-Tools adds to
    /// X-MCP-Toolsets, it does not narrow it — less every tool `exclude` names, which beats
    /// both. `None` when all three are empty. Read-only, which beats all of it, is the view's
    /// `read_only` flag. `label` names the source in errors.
    pub fn github(
        toolsets: &[String],
        tools: &[String],
        exclude: &[String],
        label: &str,
    ) -> crate::error::Result<Option<Self>> {
        use serde_json::{json, Value};
        let leaves = |key: &str, names: &[String]| names.iter().map(|n| json!({ key: n })).collect::<Vec<Value>>();
        let include: Vec<Value> = leaves("group", toolsets)
            .into_iter()
            .chain(leaves("name", tools))
            .collect();
        let mut all = Vec::new();
        if !include.is_empty() {
            all.push(json!({"any": include}));
        }
        if !exclude.is_empty() {
            all.push(json!({"not": {"any": leaves("name", exclude)}}));
        }
        if all.is_empty() {
            return Ok(None);
        }
        let filter = Filter::parse(&json!({"expr": {"all": all}}), label)?;
        Ok(Some(ViewPart {
            filter,
            concerns: ConcernConfig::default(),
            tools_only: true,
        }))
    }
}

/// What one endpoint shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointView {
    /// Its canonical name (path and query), which a session opened on it keeps.
    pub label: String,
    /// The narrowings, ANDed.
    pub parts: Vec<ViewPart>,
    /// Only tools whose `readOnlyHint` is true (`X-MCP-Readonly: true`).
    pub read_only: bool,
    /// Search mode: `tools/list` is `find_tools` and `call_tool` (see `protocol::search`).
    pub search: bool,
    /// Code mode (search mode with `run_code` instead of `call_tool`, see `protocol::code`);
    /// `search` is true too.
    pub code: bool,
    /// Tools listed beside the search tools in search mode.
    pub pinned: Vec<String>,
    /// Whether request headers (`X-MCP-*`) shaped it, not only the URL and the document.
    pub by_headers: bool,
    /// What it shows of each kind, computed on first use (servers only: the package has no views).
    #[cfg(feature = "large-catalogs")]
    pub selections: Selections,
}

/// A view's selection per kind, computed on its first use and kept for the others (a list, the
/// use checks, the policy of the search tools), keyed by the section it was computed on (a view
/// kept longer than a request, as stdio does, meets a new section when the catalog is
/// replaced: that one is computed, not taken from here). A copy starts empty; any two compare
/// equal (the cache is not part of what the view is).
#[cfg(feature = "large-catalogs")]
#[derive(Default)]
pub struct Selections([std::sync::OnceLock<(u64, Bits)>; 4]);

#[cfg(feature = "large-catalogs")]
impl Clone for Selections {
    fn clone(&self) -> Self {
        Selections::default()
    }
}

#[cfg(feature = "large-catalogs")]
impl PartialEq for Selections {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[cfg(feature = "large-catalogs")]
impl std::fmt::Debug for Selections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.0.iter().filter(|s| s.get().is_some()).count();
        write!(f, "Selections({kept} kept)")
    }
}

impl EndpointView {
    /// Whether request headers (`X-MCP-Toolsets`, `X-MCP-Tools`, `X-MCP-Exclude-Tools`,
    /// `X-MCP-Readonly`, `X-MCP-Lockdown`) shaped it. What the URL does not say, a shared cache
    /// cannot key on, so 2026-07-28 lists under such a view are `cacheScope: "private"`.
    pub fn from_headers(&self) -> bool {
        self.by_headers
    }

    /// The items of `section` (of `kind`) the view shows (on the servers, computed once per
    /// kind and kept).
    pub fn visible(&self, kind: Kind, section: &Section) -> Bits {
        #[cfg(feature = "large-catalogs")]
        {
            let slot = &self.selections.0[kind as usize];
            if let Some((_, bits)) = slot.get().filter(|(id, _)| *id == section.id) {
                return bits.clone();
            }
            let vis = self.compute(kind, section);
            // Only the first section met is kept (a per-request view meets one).
            let _ = slot.set((section.id, vis.clone()));
            vis
        }
        #[cfg(not(feature = "large-catalogs"))]
        self.compute(kind, section)
    }

    /// Whether the selection of `kind` over `section` is already kept.
    #[cfg(feature = "large-catalogs")]
    pub fn kept(&self, kind: Kind, section: &Section) -> bool {
        self.selections.0[kind as usize]
            .get()
            .is_some_and(|(id, _)| *id == section.id)
    }

    /// What made it, read back from its label (written by `http::endpoint_view` as
    /// `name?query|toolsets|tools|exclude|readonly|lockdown`), for `sieve/explain`: the named
    /// view (or GitHub URL form), the URL query and the `X-MCP-*` selection (the URL's
    /// `/x/{toolset}` counts as a toolset, `/readonly` as read-only), each only when given.
    #[cfg(feature = "explain")]
    pub fn describe(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        let (name, rest) = self.label.split_once('?').unwrap_or((&self.label, ""));
        let mut fields = rest.split('|');
        let mut put = |k: &str, v: Option<&str>| {
            if let Some(v) = v.filter(|v| !v.is_empty() && *v != "false") {
                out.insert(k.into(), serde_json::Value::String(v.into()));
            }
        };
        put("name", Some(name));
        for key in [
            "query",
            "X-MCP-Toolsets",
            "X-MCP-Tools",
            "X-MCP-Exclude-Tools",
            "X-MCP-Readonly",
            "X-MCP-Lockdown",
        ] {
            put(key, fields.next());
        }
        serde_json::Value::Object(out)
    }

    fn compute(&self, kind: Kind, section: &Section) -> Bits {
        let mut vis = Bits::full(section.items.len());
        for p in self.parts.iter().filter(|p| kind == Kind::Tool || !p.tools_only) {
            vis.and(&section.select(&p.filter, &p.concerns));
        }
        if self.read_only && kind == Kind::Tool {
            for (i, item) in section.items.iter().enumerate() {
                if item.annotation("readOnlyHint") != Some(serde_json::Value::Bool(true)) {
                    vis.clear(i);
                }
            }
        }
        vis
    }
}
