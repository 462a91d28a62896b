//! `middleware/list` and `middleware/invoke` (context middleware): off unless the catalog
//! enables middleware; `allowClients` / `allowPrincipals` restrict who may use it. The built-ins
//! themselves are in `crate::middleware`, which knows nothing of the protocol.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::filter::chain::FilterContext;
use crate::middleware::{self, Inputs};
use crate::model::Kind;
use crate::protocol::server::{Call, Server};
use crate::protocol::EXT;

impl Server {
    /// Drops `contextMiddleware` from an initialize result's capabilities when the client may
    /// not use middleware.
    pub(crate) fn restrict_middleware_capability(&self, result: &mut Value, ctx: &FilterContext) {
        let allowed = self.catalog.middleware.allows(ctx);
        if !allowed {
            if let Some(caps) = result.get_mut("capabilities").and_then(Value::as_object_mut) {
                caps.remove("contextMiddleware");
            }
        }
    }
    /// `middleware/list` and `middleware/invoke`.
    pub(crate) fn middleware(&self, method: &str, call: &Call, now_ms: i64, log: &mut Vec<String>) -> Result<String> {
        let config = &self.catalog.middleware;
        if config.enabled.is_empty() {
            return Err(Error::MethodNotFound(format!(
                "\"{method}\" is not available: this server enables no middleware (catalog middleware.enabled)"
            )));
        }
        if !config.allows(&call.ctx) {
            return Err(Error::MethodNotFound(format!(
                "\"{method}\" is not available to this client (catalog middleware.allowClients / allowPrincipals)"
            )));
        }
        if method == "middleware/list" {
            return Ok(middleware::list(config).to_string());
        }
        let mut warnings = Vec::new();
        let mut visible = |filter: &crate::filter::Filter| -> Result<crate::filter::Bits> {
            let concerns = self.request_concerns(call, filter, &mut warnings)?;
            Ok(self.selection(Kind::Tool, call, filter, &concerns, log))
        };
        let mut inputs = Inputs {
            tools: &self.catalog.section(Kind::Tool).items,
            groups: &self.catalog.groups,
            now_ms,
            visible_tools: &mut visible,
        };
        let mut result = middleware::invoke(config, call.params, &mut inputs)?;
        if !warnings.is_empty() {
            result["_meta"] = json!({ format!("{}/warnings", EXT): warnings });
        }
        Ok(result.to_string())
    }
}
