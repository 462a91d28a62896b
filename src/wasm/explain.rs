//! `Sieve.explain`: why the package's selection leaves one item out — each part of the filter
//! that leaves it out on its own, each effective concern that does, each programmable filter that
//! refuses it — in the servers' `sieve/explain` words (`filter`, `concern:<name>`; a JS filter is
//! `js-filter:<id>`), so a host shows one wording for both. The rules are the core's: each reason
//! is a selection of one part (`Section::filter_reasons`, `Section::concern_reasons`), shared with
//! `protocol::explain`.

use serde_json::{json, Map, Value};
use wasm_bindgen::prelude::*;

use super::convert::{from_js, js_error, parse_kind, to_js};
use super::sieve::Sieve;
use crate::filter::{Filter, FilterContext, PrimitiveFilter};

#[wasm_bindgen]
impl Sieve {
    /// Why `filter` (the same filter `list` takes) leaves the item `name` of `kind` (default
    /// `tools`; a resource by its `uri`) out, or that it does not: `{kind, name, exists, visible,
    /// cause, reasons}`. Each reason is one part that hides it alone — `{code: "filter", field,
    /// filter}` (that part of the filter), `{code: "concern:<name>", configured, mapped}` (the
    /// effective value, as `list` applies it, and the item's), `{code: "js-filter:<id>", id}` (an
    /// `addFilter` callback that returned false) — and `cause` is the first one's kind
    /// (`catalog` when there is no such item). Throws as `list` does for a bad filter.
    ///
    /// @example
    /// ```js
    /// const why = sieve.explain('send_email', { groups: ['calendar'] });
    /// why.visible; // false
    /// why.reasons; // [{ code: 'filter', field: 'groups', filter: { groups: ['calendar'] } }]
    /// ```
    #[wasm_bindgen(unchecked_return_type = "Explanation")]
    pub fn explain(
        &self,
        name: &str,
        #[wasm_bindgen(unchecked_optional_param_type = "Filter")] filter: Option<JsValue>,
        #[wasm_bindgen(unchecked_optional_param_type = "Kind")] kind: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let kind = parse_kind(kind)?;
        let raw = from_js(filter, "filter")?;
        let parsed = Filter::parse(&raw, "filter").map_err(|e| js_error(&e))?;
        let (configured, _) = self.configured(&parsed, "filter.concerns")?;
        let effective = self.catalog().concerns.effective(&configured);
        let section = self.catalog().section(kind);
        let mut out = Map::new();
        out.insert("kind".into(), json!(kind.key()));
        out.insert("name".into(), json!(name));
        let Some(pos) = section.find(name) else {
            out.insert("exists".into(), json!(false));
            out.insert("visible".into(), json!(false));
            out.insert("cause".into(), json!("catalog"));
            out.insert("reasons".into(), json!([]));
            return Ok(to_js(&Value::Object(out)));
        };
        let item = &section.items[pos];
        let mut reasons = section.filter_reasons(pos, &parsed, &raw);
        reasons.extend(section.concern_reasons(pos, &effective));
        for f in self.js_filters().iter().filter(|f| f.applies_to(kind)) {
            if f.test(item, &FilterContext::default()) == Ok(false) {
                reasons.push(json!({"code": format!("js-filter:{}", f.id), "id": f.id}));
            }
        }
        out.insert("exists".into(), json!(true));
        out.insert("visible".into(), json!(reasons.is_empty()));
        if let Some(first) = reasons.first() {
            let code = first["code"].as_str().unwrap_or_default();
            out.insert("cause".into(), json!(code.split(':').next().unwrap_or(code)));
        }
        out.insert("reasons".into(), Value::Array(reasons));
        Ok(to_js(&Value::Object(out)))
    }
}
