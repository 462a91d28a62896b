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
    /// Tools listed beside the search tools in search mode.
    pub pinned: Vec<String>,
}

impl EndpointView {
    /// Whether request headers (`X-MCP-Toolsets`, `X-MCP-Tools`, `X-MCP-Readonly`) shaped it:
    /// only they make tools-only parts or set `read_only`. What the URL does not say, a shared
    /// cache cannot key on, so 2026-07-28 lists under such a view are `cacheScope: "private"`.
    pub fn from_headers(&self) -> bool {
        self.read_only || self.parts.iter().any(|p| p.tools_only)
    }

    /// The items of `section` (of `kind`) the view shows.
    pub fn visible(&self, kind: Kind, section: &Section) -> Bits {
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
