//! The `Sieve` class: a compiled catalog plus JS policy filters. Filtering, concerns and facets
//! are the core's (`Section::select`, `Concerns::resolve`/`effective`, `filter::facets`).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};
use wasm_bindgen::prelude::*;

use super::callback::JsFilter;
use super::convert::{estimate_tokens, from_js, js_error, parse_js, parse_kind, small, to_js, warn_all};
use crate::concern::{ConcernConfig, Concerns};
use crate::filter::chain::Chain;
use crate::filter::facets::facets;
use crate::filter::index::write_list;
use crate::filter::Section;
use crate::filter::{Bits, Filter, FilterContext};
use crate::model::Kind;
use crate::{Catalog, Error};

/// A compiled catalog that filters tools, resources, resource templates and prompts with the
/// same code as the mcp-sieve server.
///
/// @example
/// ```js
/// import init, { Sieve } from 'mcp-sieve';
/// await init();
/// const sieve = Sieve.fromCatalog(catalogDocument);
/// const { count, tokens } = sieve.filter({ groups: ['calendar'], concerns: { security: 'high' } });
/// ```
#[wasm_bindgen]
pub struct Sieve {
    catalog: Catalog,
    filters: Vec<Arc<JsFilter>>,
    chain: Chain,
    next_filter: u32,
    /// The host's sentence vectors of the tools (`setToolVectors`): `dim` unit numbers per tool,
    /// in the catalog's order; empty until given.
    pub(super) vectors: Vec<f32>,
    pub(super) dim: usize,
}

/// A selection: the view filter ∩ JS policy filters, with warnings about `filter.concerns`.
pub(super) struct Selected {
    pub(super) bits: Bits,
    warnings: Vec<String>,
}

/// `filter`'s result but its `indices` (a `Uint32Array`, set after).
#[derive(Serialize)]
struct Selection<'a> {
    kind: &'a str,
    count: usize,
    total: usize,
    bytes: usize,
    tokens: usize,
    warnings: &'a [String],
}

/// `facets`' result (the `Facets` type of types.rs).
#[derive(Serialize)]
struct FacetsOut<'a> {
    total: usize,
    groups: Vec<Count<'a>>,
    tags: Vec<TagCount<'a>>,
    concerns: Vec<ConcernCounts<'a>>,
}

/// A group and the items it would show.
#[derive(Serialize)]
struct Count<'a> {
    name: &'a str,
    count: usize,
}

/// A tag and the items requiring or excluding it would show.
#[derive(Serialize)]
struct TagCount<'a> {
    name: &'a str,
    require: usize,
    exclude: usize,
}

/// A concern and its values' counts.
#[derive(Serialize)]
struct ConcernCounts<'a> {
    name: &'a str,
    values: Vec<ValueCount<'a>>,
}

/// A concern value and the items it would show.
#[derive(Serialize)]
struct ValueCount<'a> {
    value: &'a str,
    count: usize,
}

/// `Sieve.size`'s result.
#[derive(Serialize)]
struct SizeInfo {
    bytes: usize,
    tokens: usize,
}

fn catalog_error(e: Error) -> JsValue {
    js_error(&e)
}

/// Bytes of `{"<key>":[item,item,...]}` for the selected items, without building it.
fn list_bytes(key: &str, section: &Section, bits: &Bits) -> usize {
    let (mut n, mut bytes) = (0usize, 0usize);
    for i in bits.ones() {
        n += 1;
        bytes += section.items[i].fragment().len();
    }
    bytes + n.saturating_sub(1) + key.len() + 7
}

impl Sieve {
    fn new(catalog: Catalog) -> Self {
        Sieve {
            catalog,
            filters: Vec::new(),
            chain: Chain::default(),
            next_filter: 1,
            vectors: Vec::new(),
            dim: 0,
        }
    }

    /// Builds from a catalog document given as JSON (used by the client after listing a server).
    pub(crate) fn from_doc(doc: Value) -> Result<Sieve, JsValue> {
        Catalog::load_owned(doc).map(Sieve::new).map_err(catalog_error)
    }

    /// The items of `kind` the filter `raw` and the JS policy filters leave; errors name the
    /// filter `path` and its concerns `concerns_path` (`filter`, `filter.concerns`).
    pub(super) fn select(
        &self,
        kind: Kind,
        raw: Option<JsValue>,
        path: &str,
        concerns_path: &str,
    ) -> Result<Selected, JsValue> {
        let raw = from_js(raw, path)?;
        let filter = Filter::parse(&raw, path).map_err(|e| js_error(&e))?;
        let (configured, warnings) = self.configured(&filter, concerns_path)?;
        let concerns = self.catalog.concerns.effective(&configured);
        let section = self.catalog.section(kind);
        let mut bits = section.select(&filter, &concerns);
        if !self.chain.is_empty() {
            bits.and(&self.visible(kind));
        }
        Ok(Selected { bits, warnings })
    }

    /// The configured concerns of a filter (named `path` in errors), validated by the core.
    pub(super) fn configured(&self, filter: &Filter, path: &str) -> Result<(ConcernConfig, Vec<String>), JsValue> {
        match &filter.concerns {
            Some(c) => {
                let (r, _) = self.catalog.concerns.resolve(c, path).map_err(|e| js_error(&e))?;
                Ok((r.config, r.warnings))
            }
            None => Ok((ConcernConfig::new(), Vec::new())),
        }
    }

    /// What the JS policy filters leave visible; their failures go to `console.warn`.
    fn visible(&self, kind: Kind) -> Bits {
        let mut log = Vec::new();
        let bits = self
            .chain
            .visible(kind, self.catalog.section(kind), &FilterContext::default(), &mut log);
        warn_all(&log);
        bits
    }

    /// The catalog (for the middleware bindings).
    pub(super) fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The programmable filters (`addFilter`), in the order added.
    pub(super) fn js_filters(&self) -> &[Arc<JsFilter>] {
        &self.filters
    }

    /// The tools `filter` leaves visible, JS policy filters included (for `tool_filter`).
    pub(super) fn tool_selection(&self, filter: &Filter, path: &str) -> crate::Result<Bits> {
        let configured = match &filter.concerns {
            Some(c) => self.catalog.concerns.resolve(c, path)?.0.config,
            None => ConcernConfig::new(),
        };
        let concerns = self.catalog.concerns.effective(&configured);
        let mut bits = self.catalog.section(Kind::Tool).select(filter, &concerns);
        if !self.chain.is_empty() {
            bits.and(&self.visible(Kind::Tool));
        }
        Ok(bits)
    }

    fn rebuild_chain(&mut self) {
        let mut chain = Chain::default();
        for f in &self.filters {
            chain.add_filter(f.clone());
        }
        self.chain = chain;
    }
}

#[wasm_bindgen]
impl Sieve {
    /// Builds from a catalog document (`{tools, groups, tags, concerns, resources, ...}`, the
    /// same document the server loads).
    #[wasm_bindgen(js_name = fromCatalog)]
    pub fn from_catalog(
        #[wasm_bindgen(unchecked_param_type = "CatalogDocument")] doc: JsValue,
    ) -> Result<Sieve, JsValue> {
        Self::from_doc(from_js(doc, "the catalog document")?)
    }

    /// Builds from a `tools/list` result (`{tools: [...]}`), as any MCP server returns it.
    ///
    /// @example
    /// ```js
    /// const sieve = Sieve.fromToolsList(await client.request('tools/list', {}));
    /// ```
    #[wasm_bindgen(js_name = fromToolsList)]
    pub fn from_tools_list(
        #[wasm_bindgen(unchecked_param_type = "{ tools: Tool[] }")] tools: JsValue,
    ) -> Result<Sieve, JsValue> {
        Self::from_lists(tools, None, None, None)
    }

    /// Builds from the results of `tools/list`, `groups/list` and `tags/list` (the last two
    /// optional) and, optionally, the concern declarations of the server's `initialize` result
    /// (`capabilities.concerns`).
    #[wasm_bindgen(js_name = fromLists)]
    pub fn from_lists(
        #[wasm_bindgen(unchecked_param_type = "{ tools: Tool[] }")] tools: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ groups: Group[] }")] groups: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "{ tags: Tag[] }")] tags: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "ConcernDeclaration[]")] concerns: Option<JsValue>,
    ) -> Result<Sieve, JsValue> {
        let field = |v: Value, key: &str| v.get(key).cloned().unwrap_or(json!([]));
        let mut doc = Map::new();
        doc.insert("tools".into(), field(from_js(tools, "tools")?, "tools"));
        doc.insert("groups".into(), field(from_js(groups, "groups")?, "groups"));
        doc.insert("tags".into(), field(from_js(tags, "tags")?, "tags"));
        doc.insert("concerns".into(), from_js(concerns, "concerns")?);
        Self::from_doc(Value::Object(doc))
    }

    /// The groups (declared and referenced), with `parent` where they have one.
    #[wasm_bindgen(unchecked_return_type = "Group[]")]
    pub fn groups(&self) -> JsValue {
        to_js(&Value::Array(
            self.catalog
                .groups
                .iter()
                .map(|g| Value::Object(g.json.clone()))
                .collect(),
        ))
    }

    /// The tags (declared and referenced).
    #[wasm_bindgen(unchecked_return_type = "Tag[]")]
    pub fn tags(&self) -> JsValue {
        to_js(&Value::Array(
            self.catalog
                .tags
                .iter()
                .map(|t| Value::Object(t.json.clone()))
                .collect(),
        ))
    }

    /// The concern declarations.
    #[wasm_bindgen(unchecked_return_type = "ConcernDeclaration[]")]
    pub fn concerns(&self) -> JsValue {
        to_js(&self.catalog.concerns.declarations_json())
    }

    /// Number of items of `kind` (default `tools`).
    pub fn count(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "Kind")] kind: Option<String>,
    ) -> Result<usize, JsValue> {
        Ok(self.catalog.section(parse_kind(kind)?).items.len())
    }

    /// Number of tools.
    #[wasm_bindgen(js_name = toolCount)]
    pub fn tool_count(&self) -> usize {
        self.catalog.section(Kind::Tool).items.len()
    }

    /// Filters one kind (default `tools`) with the server's filter language and concern rules;
    /// returns positions (cheap to cross into JS), counts and the size of the filtered list.
    /// Throws an `Error` with `code` -32602 naming the bad field.
    ///
    /// @example
    /// ```js
    /// const sel = sieve.filter({ groups: ['email'], excludeTags: ['destructive'] });
    /// console.log(`${sel.count} of ${sel.total} tools, ~${sel.tokens} tokens`);
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Selection")]
    pub fn filter(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "Filter")] filter: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "Kind")] kind: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let kind = parse_kind(kind)?;
        let sel = self.select(kind, filter, "filter", "filter.concerns")?;
        let section = self.catalog.section(kind);
        let indices: Vec<u32> = sel.bits.ones().map(|i| i as u32).collect();
        let bytes = list_bytes(kind.key(), section, &sel.bits);
        let out = small(&Selection {
            kind: kind.key(),
            count: indices.len(),
            total: section.items.len(),
            bytes,
            tokens: estimate_tokens(bytes),
            warnings: &sel.warnings,
        })?;
        // A typed array, which the serializer does not make.
        let indices = js_sys::Uint32Array::from(indices.as_slice());
        js_sys::Reflect::set(&out, &"indices".into(), &indices)?;
        Ok(out)
    }

    /// Like `filter`, but returns the filtered list itself: `{items, count, total, bytes, tokens,
    /// warnings}` with `items` the objects as the server would list them.
    #[wasm_bindgen(unchecked_return_type = "ListResult")]
    pub fn list(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "Filter")] filter: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "Kind")] kind: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let kind = parse_kind(kind)?;
        let sel = self.select(kind, filter, "filter", "filter.concerns")?;
        let section = self.catalog.section(kind);
        let mut text = String::new();
        write_list(&mut text, "items", &section.items, sel.bits.ones());
        let bytes = text.len() + kind.key().len() - "items".len() + 1;
        text.push_str(&format!(
            ",\"count\":{},\"total\":{},\"bytes\":{bytes},\"tokens\":{},\"warnings\":{}}}",
            sel.bits.count(),
            section.items.len(),
            estimate_tokens(bytes),
            json!(sel.warnings)
        ));
        parse_js(&text)
    }

    /// The items at `indices` (from `filter`) of `kind` (default `tools`), as plain objects.
    #[wasm_bindgen(unchecked_return_type = "any[]")]
    pub fn items(
        &self,
        indices: &[u32],
        #[wasm_bindgen(unchecked_optional_param_type = "Kind")] kind: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let section = self.catalog.section(parse_kind(kind)?);
        let mut text = String::from("[");
        for (n, &i) in indices.iter().enumerate() {
            let item = section.items.get(i as usize).ok_or_else(|| {
                js_error(&Error::params(format!(
                    "indices[{n}] is {i}, past the last item ({})",
                    section.items.len()
                )))
            })?;
            if n > 0 {
                text.push(',');
            }
            text.push_str(item.fragment());
        }
        text.push(']');
        parse_js(&text)
    }

    /// The filtered tools: `{tools, bytes, tokens}` (kept for the first version of the API; see
    /// `list`).
    #[wasm_bindgen(js_name = filterTools, unchecked_return_type = "{ tools: Tool[]; bytes: number; tokens: number }")]
    pub fn filter_tools(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "Filter")] filter: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let sel = self.select(Kind::Tool, filter, "filter", "filter.concerns")?;
        let section = self.catalog.section(Kind::Tool);
        let mut text = String::new();
        write_list(&mut text, "tools", &section.items, sel.bits.ones());
        let bytes = text.len() + 1;
        text.push_str(&format!(",\"bytes\":{bytes},\"tokens\":{}}}", estimate_tokens(bytes)));
        parse_js(&text)
    }

    /// Facet counts for the current filter: for each group, tag (require / exclude) and declared
    /// concern value, how many items of `kind` (default `tools`) choosing it would leave.
    /// Groups are counted without the filter's own `groups` (they combine with ANY).
    ///
    /// @example
    /// ```js
    /// const f = sieve.facets({ groups: ['email'] });
    /// f.tags.find((t) => t.name === 'read-only').require; // tools left if read-only is required
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Facets")]
    pub fn facets(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "Filter")] filter: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "Kind")] kind: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let kind = parse_kind(kind)?;
        let raw = from_js(filter, "filter")?;
        let filter = Filter::parse(&raw, "filter").map_err(|e| js_error(&e))?;
        let (configured, _) = self.configured(&filter, "filter.concerns")?;
        let visible = (!self.chain.is_empty()).then(|| self.visible(kind));
        let f = facets(
            self.catalog.section(kind),
            visible.as_ref(),
            &filter,
            &self.catalog.concerns,
            &configured,
            self.catalog.groups.iter().map(|g| g.name.as_str()),
            self.catalog.tags.iter().map(|t| t.name.as_str()),
        );
        small(&FacetsOut {
            total: f.total,
            groups: f
                .groups
                .iter()
                .map(|(name, count)| Count { name, count: *count })
                .collect(),
            tags: f
                .tags
                .iter()
                .map(|t| TagCount {
                    name: &t.name,
                    require: t.require,
                    exclude: t.exclude,
                })
                .collect(),
            concerns: f
                .concerns
                .iter()
                .map(|(name, values)| ConcernCounts {
                    name,
                    values: values
                        .iter()
                        .map(|(value, count)| ValueCount { value, count: *count })
                        .collect(),
                })
                .collect(),
        })
    }

    /// Validates a concern configuration against the declarations (as the server would):
    /// `{concerns, effective, warnings}`; undeclared concerns are dropped with a warning, an
    /// invalid value throws an `Error` whose `data.validValues` lists the valid ones.
    #[wasm_bindgen(js_name = resolveConcerns, unchecked_return_type = "ResolvedConcerns")]
    pub fn resolve_concerns(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConcernConfig")] concerns: JsValue,
    ) -> Result<JsValue, JsValue> {
        let raw = from_js(concerns, "concerns")?;
        let raw = if raw.is_null() { json!({}) } else { raw };
        let decls: &Concerns = &self.catalog.concerns;
        let (r, _) = decls.resolve(&raw, "concerns").map_err(|e| js_error(&e))?;
        let effective = decls.effective(&r.config);
        Ok(to_js(
            &json!({"concerns": r.config, "effective": effective, "warnings": r.warnings}),
        ))
    }

    /// Adds a programmable filter: `callback(item, kind)` returns whether to keep the item.
    /// Filters run in priority order (higher first) and combine with AND; one that throws is
    /// logged with `console.warn` and ignored (the item stays visible). Returns an id for
    /// `removeFilter`.
    ///
    /// @example
    /// ```js
    /// const id = sieve.addFilter((tool) => !tool.name.startsWith('admin_'), { priority: 10 });
    /// ```
    #[wasm_bindgen(js_name = addFilter)]
    pub fn add_filter(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "FilterCallback")] callback: js_sys::Function,
        #[wasm_bindgen(unchecked_optional_param_type = "FilterOptions")] options: Option<JsValue>,
    ) -> Result<u32, JsValue> {
        let options = from_js(options, "options")?;
        let priority = match options.get("priority") {
            None | Some(Value::Null) => 0,
            Some(p) => p
                .as_i64()
                .and_then(|p| i32::try_from(p).ok())
                .ok_or_else(|| js_error(&Error::params("options.priority must be an integer")))?,
        };
        let kinds = match options.get("kinds") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|k| parse_kind(Some(k.as_str().unwrap_or_default().to_string())))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(js_error(&Error::params("options.kinds must be an array of kinds"))),
        };
        let id = self.next_filter;
        self.next_filter += 1;
        self.filters
            .push(Arc::new(JsFilter::new(id, callback, priority, kinds)));
        self.rebuild_chain();
        Ok(id)
    }

    /// Removes the filter `id`; returns whether there was one.
    #[wasm_bindgen(js_name = removeFilter)]
    pub fn remove_filter(&mut self, id: u32) -> bool {
        let before = self.filters.len();
        self.filters.retain(|f| f.id != id);
        self.rebuild_chain();
        before != self.filters.len()
    }

    /// Removes every programmable filter.
    #[wasm_bindgen(js_name = clearFilters)]
    pub fn clear_filters(&mut self) {
        self.filters.clear();
        self.rebuild_chain();
    }

    /// Size of any JSON value (a list result, a tool array): UTF-8 bytes of its JSON text and
    /// estimated tokens (about four bytes a token).
    #[wasm_bindgen(unchecked_return_type = "SizeInfo")]
    pub fn size(value: JsValue) -> Result<JsValue, JsValue> {
        let v = from_js(value, "value")?;
        let bytes = v.to_string().len();
        small(&SizeInfo {
            bytes,
            tokens: estimate_tokens(bytes),
        })
    }
}
