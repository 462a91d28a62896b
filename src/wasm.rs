//! Browser bindings (feature `wasm`): one class, `Sieve`, holding a compiled catalog. It only
//! converts between JS and the core; every rule lives in the core.

use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::concern::ConcernConfig;
use crate::filter::Filter;
use crate::model::Kind;
use crate::{Catalog, Error};

/// Estimated tokens of a JSON text: about four bytes a token for tool definitions.
pub fn estimate_tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    let _ = js_sys::Reflect::set(&err, &"code".into(), &JsValue::from(e.code()));
    let data = e.data().map_or(JsValue::NULL, to_js);
    let _ = js_sys::Reflect::set(&err, &"data".into(), &data);
    err.into()
}

fn to_js(v: &Value) -> JsValue {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .unwrap_or(JsValue::NULL)
}

fn from_js(v: JsValue, what: &str) -> Result<Value, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(Value::Null);
    }
    serde_wasm_bindgen::from_value(v).map_err(|e| js_error(&Error::params(format!("{what} is not plain JSON: {e}"))))
}

/// A compiled catalog that filters tools, resources, resource templates and prompts with the
/// same code as the mcp-sieve server.
#[wasm_bindgen]
pub struct Sieve {
    catalog: Catalog,
}

#[wasm_bindgen]
impl Sieve {
    /// Builds from a catalog document (`{tools, groups, tags, concerns, ...}`).
    #[wasm_bindgen(js_name = fromCatalog)]
    pub fn from_catalog(doc: JsValue) -> Result<Sieve, JsValue> {
        let doc = from_js(doc, "the catalog document")?;
        Catalog::load(&doc)
            .map(|catalog| Sieve { catalog })
            .map_err(|e| js_error(&e))
    }

    /// Builds from the results of `tools/list`, `groups/list` and `tags/list`.
    #[wasm_bindgen(js_name = fromLists)]
    pub fn from_lists(tools: JsValue, groups: JsValue, tags: JsValue) -> Result<Sieve, JsValue> {
        let (t, g, tg) = (
            from_js(tools, "tools")?,
            from_js(groups, "groups")?,
            from_js(tags, "tags")?,
        );
        Catalog::from_lists(&t, Some(&g), Some(&tg))
            .map(|catalog| Sieve { catalog })
            .map_err(|e| js_error(&e))
    }

    /// The groups (declared and referenced).
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
    pub fn concerns(&self) -> JsValue {
        to_js(&self.catalog.concerns.declarations_json())
    }

    /// Number of tools.
    #[wasm_bindgen(js_name = toolCount)]
    pub fn tool_count(&self) -> usize {
        self.catalog.section(Kind::Tool).items.len()
    }

    /// Filters the tools: `{tools, bytes, tokens}` of the matching list.
    #[wasm_bindgen(js_name = filterTools)]
    pub fn filter_tools(&self, filter: JsValue) -> Result<JsValue, JsValue> {
        let raw = from_js(filter, "filter")?;
        let filter = Filter::parse(&raw, "filter").map_err(|e| js_error(&e))?;
        let concerns = match &filter.concerns {
            Some(c) => {
                let (r, _) = self
                    .catalog
                    .concerns
                    .resolve(c, "filter.concerns")
                    .map_err(|e| js_error(&e))?;
                self.catalog.concerns.effective(&r.config)
            }
            None => ConcernConfig::new(),
        };
        let section = self.catalog.section(Kind::Tool);
        let selected = section.select(&filter, &concerns);
        let mut json = String::new();
        crate::filter::index::write_list(&mut json, "tools", &section.items, selected.ones());
        json.push('}');
        let bytes = json.len();
        let list: Value = serde_json::from_str(&json).map_err(|e| js_error(&Error::Internal(e.to_string())))?;
        let out = serde_json::json!({"tools": list["tools"], "bytes": bytes, "tokens": estimate_tokens(bytes)});
        Ok(to_js(&out))
    }
}
