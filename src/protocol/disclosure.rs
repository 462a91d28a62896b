//! The progressive-discovery drafts (feature `discovery`, servers only):
//!
//! - the Progressive Disclosure WG's `io.modelcontextprotocol/groups` extension
//!   (modelcontextprotocol/progressive-disclosure-wg `seps/0000-progressive-disclosure-groups.md`
//!   at 6de0195): `groups/list` of bundles and `groups/get` of one bundle's instructions and
//!   scoped primitives. A group declared `"scoped": true` (and every group under it) is such a
//!   bundle; its direct members are *scoped*: left out of `tools/list`, `prompts/list`,
//!   `resources/list` for a client that declares the extension (they arrive by `groups/get`),
//!   listed as usual for any other client (the draft's default "flatten"), callable by all
//!   (discovery gating is not access control). `groups/list` answers the draft's shape only to
//!   a client declaring the extension; every other client keeps SEP-1300's and the grouping
//!   IG's `groups/list` (the method names clash; the declared capability decides);
//! - SEP-2636 (modelcontextprotocol/modelcontextprotocol PR 2636 at 570f62e): `tools/catalog`
//!   (compact entries with a `schemaHash`, optional `query` ranked by the search index) and
//!   `tools/describe` (full definitions by name, `-32002` with `data.unknownNames`);
//! - SEP-2564 (PR 2564 at 6839104): the `filtering.supported` advertisement on `tools`,
//!   `resources` and `prompts` (the `filter` itself is the filter language's).

use std::collections::HashSet;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{code, Error, Result};
use crate::filter::{Bits, Filter, FilterContext};
use crate::model::{Group, Kind};
use crate::protocol::cursor;
use crate::protocol::server::{Call, Server};

/// The Progressive Disclosure WG's extension identifier.
pub(crate) const GROUPS_EXTENSION: &str = "io.modelcontextprotocol/groups";
/// Most names one `tools/describe` takes.
const MAX_DESCRIBE: usize = 100;
/// Longest `summary` of a catalog entry (SEP-2636: "SHOULD keep this under 200 characters").
const SUMMARY: usize = 200;

/// Whether the request's client declared the groups extension (in `initialize`'s capabilities,
/// or in a 2026-07-28 request's `_meta` client capabilities: the context holds either).
pub(crate) fn declares_groups(ctx: &FilterContext) -> bool {
    ctx.initialize["capabilities"]["extensions"]
        .get(GROUPS_EXTENSION)
        .is_some()
}

/// The filter fields each list supports, as SEP-2564's `filtering.supported` says them.
pub(crate) fn advertise(caps: &mut Value) {
    let common = ["namePatterns", "groups", "tags", "excludeTags", "concerns", "expr"];
    let with_uri: Vec<&str> = common.iter().copied().chain(["uriPatterns"]).collect();
    caps["tools"]["filtering"] = json!({"supported": common});
    caps["prompts"]["filtering"] = json!({"supported": common});
    caps["resources"]["filtering"] = json!({"supported": with_uri});
    caps["tools"]["progressiveDisclosure"] = json!(true);
    // The 2025-11-25 era's extension negotiation (server/discover writes its own `extensions`).
    caps["extensions"][GROUPS_EXTENSION] = json!({"listChanged": true});
}

/// SEP-2636's `schemaHash`: lowercase hex SHA-256 of the full tool in RFC 8785's canonical JSON
/// (`serde_jcs`: keys sorted by UTF-16 code units, numbers as ECMAScript writes the double —
/// `1.0` is `1`, `1e21` is `1e+21`), so a client computing it over the same tool gets the same
/// hash. `serde_jcs` turns on serde_json's `float_roundtrip` in the servers' builds, so a number
/// with many digits is read as its nearest double (the hash needs it, and a server that reads and
/// writes a message again keeps such a number's value): 27 KB gzipped of the Worker's wasm, none
/// of the package's.
pub(crate) fn schema_hash(tool: &Value) -> String {
    // A `Value` always serializes (its keys are strings).
    let text = serde_jcs::to_vec(tool).unwrap_or_default();
    Sha256::digest(&text).iter().map(|b| format!("{b:02x}")).collect()
}

/// The description's first sentence (or line), at most [`SUMMARY`] characters.
fn summary(tool: &Value) -> String {
    let d = tool["description"].as_str().unwrap_or_default().trim();
    let line = d.lines().next().unwrap_or_default();
    let sentence = line.find(". ").map_or(line, |i| &line[..=i]);
    let mut s: String = sentence.chars().take(SUMMARY).collect();
    if s.len() < sentence.len() {
        s.pop();
        s.push('…');
    }
    if s.is_empty() {
        s = tool["title"]
            .as_str()
            .or(tool["name"].as_str())
            .unwrap_or_default()
            .to_string();
    }
    s
}

impl Server {
    /// Names of the scoped groups: declared `"scoped": true`, or under one that is.
    fn scoped_groups(&self) -> HashSet<&str> {
        crate::catalog::scoped_groups(&self.catalog.groups, &self.catalog.parents)
    }

    /// Whether the catalog has scoped groups: then its lists depend on the declared
    /// capabilities, and a 2026-07-28 list says `cacheScope: "private"` (the draft: a cache of
    /// `tools/list` MUST be keyed on the declared capabilities, which a shared cache cannot see).
    /// Asked by every stateless list (its `cacheScope`): found when the catalog is set
    /// (`Catalog::has_scoped_groups`).
    pub(crate) fn has_scoped_groups(&self) -> bool {
        self.has_scoped_groups
    }

    /// Leaves the scoped items of `kind` out of `sel` for a client declaring the extension.
    pub(crate) fn hide_scoped(&self, kind: Kind, ctx: &FilterContext, sel: &mut Bits) {
        // The catalog's answer first: most have no scoped group, and it is one flag.
        if !self.has_scoped_groups() || !declares_groups(ctx) {
            return;
        }
        let scoped = self.scoped_groups();
        for (i, item) in self.catalog.section(kind).items.iter().enumerate() {
            if item.groups.iter().any(|g| scoped.contains(g.as_str())) {
                sel.clear(i);
            }
        }
    }

    /// A group as the draft lists it: name, title, description (required: the title or a
    /// sentence naming it when the document gives none), `_meta`.
    fn bundle(g: &Group) -> Map<String, Value> {
        let mut o = Map::new();
        o.insert("name".into(), json!(g.name));
        if let Some(t) = g.json.get("title") {
            o.insert("title".into(), t.clone());
        }
        let text = |k: &str| g.json.get(k).and_then(Value::as_str);
        let description = text("description")
            .or(text("title"))
            .map_or_else(|| format!("The {} group.", g.name), str::to_string);
        o.insert("description".into(), json!(description));
        if let Some(m) = g.json.get("_meta") {
            o.insert("_meta".into(), m.clone());
        }
        o
    }

    /// The visible scoped groups whose parent is `parent` (`None`: the top-level ones, whose
    /// parent is not scoped).
    fn bundles(&self, call: &Call, parent: Option<&str>) -> Vec<Map<String, Value>> {
        let scoped = self.scoped_groups();
        let keep = self.names_in_use(call, |p| p.groups.iter().flat_map(|g| self.ancestors(g)).collect());
        self.catalog
            .groups
            .iter()
            .filter(|g| scoped.contains(g.name.as_str()) && keep(&g.name))
            .filter(|g| match parent {
                Some(p) => g.parent.as_deref() == Some(p),
                None => g.parent.as_deref().is_none_or(|p| !scoped.contains(p)),
            })
            .map(Self::bundle)
            .collect()
    }

    /// `groups/list` for a client declaring the extension: the top-level bundles, paginated.
    pub(crate) fn list_bundles(&self, call: &Call) -> Result<String> {
        let groups = self.bundles(call, None);
        self.list_names("groups", groups.iter().collect(), call)
    }

    /// `groups/get`: a bundle's instructions and its scoped primitives this caller may see.
    pub(crate) fn get_bundle(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let name = crate::protocol::server::string_param(call.params, "params", "name")?;
        let scoped = self.scoped_groups();
        let keep = self.names_in_use(call, |p| p.groups.iter().flat_map(|g| self.ancestors(g)).collect());
        let Some(group) = self
            .catalog
            .groups
            .iter()
            .find(|g| g.name == name && scoped.contains(g.name.as_str()) && keep(&g.name))
        else {
            return Err(Error::Rpc {
                code: code::RESOURCE_NOT_FOUND,
                message: format!("Unknown group: \"{name}\" (groups/list names the groups this server offers)"),
                data: Some(json!({"name": name})),
            });
        };
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &Filter::default(), &mut warnings)?;
        let mut contents = Map::new();
        for kind in [Kind::Tool, Kind::Prompt, Kind::Resource] {
            let section = self.catalog.section(kind);
            let sel = self.selection(kind, call, &Filter::default(), &concerns, log);
            let items: Vec<Value> = sel
                .ones()
                .filter(|&i| section.items[i].groups.iter().any(|g| g == name))
                .filter_map(|i| serde_json::from_str(section.fragment(i)).ok())
                .collect();
            if !items.is_empty() {
                contents.insert(kind.key().into(), Value::Array(items));
            }
        }
        let children = self.bundles(call, Some(name));
        if !children.is_empty() {
            contents.insert("groups".into(), json!(children));
        }
        let mut r = Map::new();
        if let Some(i) = group.json.get("instructions").filter(|i| i.is_string()) {
            r.insert("instructions".into(), i.clone());
        }
        r.insert("contents".into(), Value::Object(contents));
        Ok(Value::Object(r).to_string())
    }

    /// The tools this call may discover: the view and policy, less the scoped ones for a
    /// client declaring the groups extension (what `tools/list` shows it).
    fn discoverable(&self, call: &Call, log: &mut Vec<String>) -> Result<Bits> {
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &Filter::default(), &mut warnings)?;
        let mut sel = self.selection(Kind::Tool, call, &Filter::default(), &concerns, log);
        self.hide_scoped(Kind::Tool, &call.ctx, &mut sel);
        Ok(sel)
    }

    /// SEP-2636 `tools/catalog`: a compact entry per tool, ranked by `query` when given.
    pub(crate) fn tools_catalog(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let query = match call.params.get("query") {
            None | Some(Value::Null) => "",
            Some(Value::String(q)) => q.trim(),
            Some(other) => {
                return Err(Error::params(format!(
                    "params.query must be a string, got {}",
                    crate::error::type_name(other)
                )))
            }
        };
        let visible = self.discoverable(call, log)?;
        #[cfg(feature = "search-index")]
        let order: Vec<usize> = if query.is_empty() {
            visible.ones().collect()
        } else {
            crate::protocol::search_index::rank(self.catalog.search_index(), query, &visible, visible.count())
        };
        #[cfg(not(feature = "search-index"))]
        let order: Vec<usize> = visible.ones().collect();
        let method = "tools/catalog";
        let offset = match call.params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => cursor::decode(c, method, query, self.version)?,
            Some(_) => return Err(Error::params("params.cursor must be a string")),
        };
        let offset = cursor::within(offset, order.len())?;
        let size = self.catalog.options.page_size;
        let section = self.catalog.section(Kind::Tool);
        let entries: Vec<Value> = order
            .iter()
            .skip(offset)
            .take(size)
            .filter_map(|&i| {
                let tool: Value = serde_json::from_str(section.fragment(i)).ok()?;
                let mut e = Map::new();
                e.insert("name".into(), tool["name"].clone());
                if let Some(t) = tool.get("title") {
                    e.insert("title".into(), t.clone());
                }
                e.insert("summary".into(), json!(summary(&tool)));
                if !section.items[i].tags.is_empty() {
                    e.insert("tags".into(), json!(section.items[i].tags));
                }
                e.insert("schemaHash".into(), json!(schema_hash(&tool)));
                if let Some(a) = tool
                    .get("annotations")
                    .filter(|a| a.as_object().is_some_and(|o| !o.is_empty()))
                {
                    e.insert("annotations".into(), a.clone());
                }
                Some(Value::Object(e))
            })
            .collect();
        let mut r = json!({ "tools": entries });
        if offset.saturating_add(size) < order.len() {
            r["nextCursor"] = json!(cursor::encode(method, query, self.version, offset + size));
        }
        Ok(r.to_string())
    }

    /// SEP-2636 `tools/describe`: the full tools named, in order; any name this caller cannot
    /// see (or that does not exist: the same answer) fails the whole request with `-32002`.
    /// Scoped tools are described (they are callable; scoping gates discovery only).
    pub(crate) fn tools_describe(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let names = match call.params.get("names") {
            Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_DESCRIBE && a.iter().all(Value::is_string) => a,
            _ => {
                return Err(Error::params(format!(
                    "params.names must be an array of 1 to {MAX_DESCRIBE} tool names"
                )))
            }
        };
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &Filter::default(), &mut warnings)?;
        let visible = self.selection(Kind::Tool, call, &Filter::default(), &concerns, log);
        let section = self.catalog.section(Kind::Tool);
        let mut tools = Vec::new();
        let mut unknown = Vec::new();
        for n in names.iter().filter_map(Value::as_str) {
            match section.find(n).filter(|&i| visible.get(i)) {
                Some(i) => tools.push(section.fragment(i)),
                None => unknown.push(n),
            }
        }
        if !unknown.is_empty() {
            return Err(Error::Rpc {
                code: code::RESOURCE_NOT_FOUND,
                message: format!("Unknown tool(s): {}", unknown.join(", ")),
                data: Some(json!({ "unknownNames": unknown })),
            });
        }
        Ok(format!("{{\"tools\":[{}]}}", tools.join(",")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_hash_is_over_rfc_8785_canonical_json() {
        let text = |v: &Value| serde_jcs::to_string(v).unwrap();
        let a = json!({"name": "t", "inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}}});
        let b = json!({"inputSchema": {"properties": {"a": {}, "b": {}}, "type": "object"}, "name": "t"});
        assert_eq!(schema_hash(&a), schema_hash(&b));
        assert_eq!(
            text(&b),
            r#"{"inputSchema":{"properties":{"a":{},"b":{}},"type":"object"},"name":"t"}"#
        );
        // RFC 8785 §3.2.2.3's numbers (and an integer past 2^53, a double to JCS).
        let numbers: Value = serde_json::from_str(
            "[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, 1.0, -0.0, 12345678901234567890]",
        )
        .unwrap();
        assert_eq!(
            text(&numbers),
            "[333333333.3333333,1e+30,4.5,0.002,1e-27,1,0,12345678901234567000]"
        );
        // §3.2.3: keys by UTF-16 code units ("\u{1F600}" is D83D DE00, before "\u{FB33}";
        // UTF-8's byte order puts them the other way round).
        let keys = json!({"\u{FB33}": 1, "\u{1F600}": 2, "a": 3});
        assert_eq!(text(&keys), "{\"a\":3,\"\u{1F600}\":2,\"\u{FB33}\":1}");
        // §3.2.2.2: the short escapes, \u00XX in lowercase for the other controls, the rest as is.
        let escapes = json!({"s": "\u{0}\u{1f}\u{7f}\"\\/\u{e9}\u{2028}\n"});
        assert_eq!(
            text(&escapes),
            "{\"s\":\"\\u0000\\u001f\u{7f}\\\"\\\\/\u{e9}\u{2028}\\n\"}"
        );
        // SHA-256 of "{}".
        assert_eq!(
            schema_hash(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn a_number_with_many_digits_is_read_as_its_nearest_double() {
        // serde_json's `float_roundtrip`, which `serde_jcs` turns on: without it this reads one
        // double off (333333333.33333325), and writing the message again changes the number.
        let v: Value = serde_json::from_str("[333333333.33333329]").unwrap();
        assert_eq!(v[0].as_f64(), "333333333.33333329".parse::<f64>().ok());
        assert_eq!(v.to_string(), "[333333333.3333333]");
    }

    #[test]
    fn summary_is_the_first_sentence_within_200_characters() {
        assert_eq!(summary(&json!({"description": "Adds. Then more.\nSecond"})), "Adds.");
        assert_eq!(summary(&json!({"name": "n"})), "n");
        let long = "x".repeat(300);
        assert_eq!(summary(&json!({ "description": long })).chars().count(), 200);
    }
}
