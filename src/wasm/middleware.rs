//! Context middleware in the browser: `Sieve.middlewareList()` and
//! `Sieve.middlewareInvoke(name, context, args)` run the core's built-ins locally, with the
//! browser's clock and the `Sieve`'s catalog (and JS policy filters) for `tool_filter`. Locally
//! every built-in is available unless the catalog's `middleware.enabled` names a subset.

use serde_json::json;
use wasm_bindgen::prelude::*;

use super::convert::{from_js, js_error, to_js};
use super::sieve::Sieve;
use crate::middleware::{self, Builtin, Config, Inputs};

impl Sieve {
    fn middleware_config(&self) -> Result<Config, JsValue> {
        let mut config = self.catalog().middleware.clone();
        if config.enabled.is_empty() {
            config.enabled = Builtin::ALL.to_vec();
        }
        Ok(config)
    }
}

#[wasm_bindgen]
impl Sieve {
    /// The middleware definitions (`name`, `description`, `inputSchema`), as `middleware/list`.
    #[wasm_bindgen(js_name = middlewareList, unchecked_return_type = "{ middleware: { name: string; description?: string; inputSchema?: object }[] }")]
    pub fn middleware_list(&self) -> Result<JsValue, JsValue> {
        Ok(to_js(&middleware::list(&self.middleware_config()?)))
    }

    /// Runs a middleware on a context (MCP content parts, tool calls and results) with arguments
    /// validated against its `inputSchema`; returns `{content, metadata}` as `middleware/invoke`.
    ///
    /// @example
    /// ```js
    /// const red = sieve.middlewareInvoke('pii_redaction', [{ type: 'text', text: 'mail jane@example.com' }], {});
    /// const back = sieve.middlewareInvoke('pii_restoration', red.content, { redactions: red.metadata.redactions });
    /// ```
    #[wasm_bindgen(js_name = middlewareInvoke, unchecked_return_type = "{ content: any[]; metadata?: Record<string, unknown> }")]
    pub fn middleware_invoke(
        &self,
        name: String,
        #[wasm_bindgen(unchecked_param_type = "any[]")] context: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Record<string, unknown> | null | undefined")] args: JsValue,
    ) -> Result<JsValue, JsValue> {
        let config = self.middleware_config()?;
        let params = json!({
            "name": name,
            "context": from_js(context, "context")?,
            "arguments": from_js(args, "arguments")?,
        });
        let mut visible = |f: &crate::filter::Filter| self.tool_selection(f, "params.arguments.filter.concerns");
        let mut inputs = Inputs {
            tools: &self.catalog().section(crate::model::Kind::Tool).items,
            groups: &self.catalog().groups,
            now_ms: js_sys::Date::now() as i64,
            visible_tools: &mut visible,
        };
        middleware::invoke(&config, &params, &mut inputs)
            .map(|v| to_js(&v))
            .map_err(|e| js_error(&e))
    }
}
