//! `initialize` (2025-11-25 and earlier), `server/discover` (2026-07-28), the capabilities and
//! the server's identity; version negotiation and the initial checks run here.

use serde_json::{json, Map, Value};

use crate::concern::Concerns;
use crate::error::{type_name, Error, Result};
use crate::filter::FilterContext;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Env, Server};
use crate::protocol::{Session, EXT, LEGACY_VERSIONS, MODERN_VERSION};

/// Longest `clientInfo.name` / `clientInfo.version` kept in a session.
pub const MAX_CLIENT_INFO: usize = 256;
/// Most capability keys, and bytes of capabilities, kept in a session.
pub const MAX_CAPABILITY_KEYS: usize = 64;
/// See [`MAX_CAPABILITY_KEYS`].
pub const MAX_CAPABILITY_BYTES: usize = 16 * 1024;

/// What a session keeps of `initialize`: what filtering and policy read (client name and
/// version, capabilities), within size caps (`-32602` naming the field beyond them).
fn kept_of_initialize(p: &Map<String, Value>) -> Result<Value> {
    let mut info = Map::new();
    for field in ["name", "version"] {
        match p.get("clientInfo").and_then(|c| c.get(field)) {
            Some(Value::String(s)) if s.len() > MAX_CLIENT_INFO => {
                return Err(Error::params(format!(
                    "params.clientInfo.{field} is {} bytes; at most {MAX_CLIENT_INFO} are allowed",
                    s.len()
                )))
            }
            Some(Value::String(s)) => {
                info.insert(field.into(), Value::String(s.clone()));
            }
            _ => {}
        }
    }
    let caps = match p.get("capabilities") {
        Some(Value::Object(c)) => c.clone(),
        _ => Map::new(),
    };
    if caps.len() > MAX_CAPABILITY_KEYS {
        return Err(Error::params(format!(
            "params.capabilities has {} keys; at most {MAX_CAPABILITY_KEYS} are allowed",
            caps.len()
        )));
    }
    let size = Value::Object(caps.clone()).to_string().len();
    if size > MAX_CAPABILITY_BYTES {
        return Err(Error::params(format!(
            "params.capabilities is {size} bytes; at most {MAX_CAPABILITY_BYTES} are allowed"
        )));
    }
    Ok(json!({"clientInfo": info, "capabilities": caps}))
}

/// The Primitive Grouping interest group's experimental extension (`groups/list`, membership in
/// `_meta["io.modelcontextprotocol/groups"]`, `notifications/groups/list_changed`).
pub(crate) const GROUPING: &str = "io.modelcontextprotocol/grouping";
/// The 2026-07-28 tasks extension.
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

impl Server {
    /// The 2025-11-25 capabilities (ARCHITECTURE.md "Two protocol eras").
    pub fn capabilities(&self) -> Value {
        let mut caps = json!({
            "tools": {"listChanged": true},
            "resources": {"listChanged": true},
            "prompts": {"listChanged": true},
            "filtering": {"groups": {"listChanged": true}, "tags": {"listChanged": true}},
            "concerns": self.catalog.concerns.declarations_json(),
            "tasks": {
                "list": {"filter": crate::task::filter_capability(&["tools/call"])},
                "cancel": {},
                "requests": {"tools": {"call": {}}}
            },
        });
        // Utilities real clients and the conformance suite expect.
        caps["logging"] = json!({});
        caps["completions"] = json!({});
        caps["resources"]["subscribe"] = json!(true);
        if !self.catalog.middleware.enabled.is_empty() {
            caps["contextMiddleware"] = json!({});
        }
        #[cfg(feature = "standards")]
        crate::protocol::disclosure::advertise(&mut caps);
        caps
    }
    pub(crate) fn server_info(&self) -> Value {
        let s = &self.catalog.server;
        json!({
            "name": s.get("name").cloned().unwrap_or(json!("mcp-sieve")),
            "version": s.get("version").cloned().unwrap_or(json!(env!("CARGO_PKG_VERSION"))),
        })
    }
    pub(crate) fn negotiate(requested: &str) -> &'static str {
        LEGACY_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .copied()
            .unwrap_or(LEGACY_VERSIONS[0])
    }
    pub(crate) fn initialize(
        &self,
        id: &Value,
        params: &Value,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        if session.is_some() {
            return Err(Error::InvalidRequest(
                "this session is already initialized; start a new session to initialize again".into(),
            ));
        }
        let p = params.as_object().ok_or_else(|| {
            Error::params("params must be an object with protocolVersion, capabilities and clientInfo")
        })?;
        let requested = match p.get("protocolVersion") {
            Some(Value::String(s)) => s.as_str(),
            Some(v) => {
                return Err(Error::params(format!(
                    "params.protocolVersion must be a string, got {}",
                    type_name(v)
                )))
            }
            None => {
                return Err(Error::params(
                    "params.protocolVersion is required (a string such as \"2025-11-25\")",
                ))
            }
        };
        let version = Self::negotiate(requested);
        let mut s = Session {
            id: env.fresh_id.clone(),
            view: env.view.as_ref().map(|v| v.label.clone()).unwrap_or_default(),
            principal: env.principal.clone(),
            protocol_version: version.into(),
            initialize: kept_of_initialize(p)?.into(),
            ..Default::default()
        };
        let ctx = self.context(
            "initialize",
            id,
            crate::json::member(params, "_meta"),
            None,
            Some(&s),
            env,
        );
        self.chain.run_checks(&ctx).map_err(Error::InvalidRequest)?;
        let mut warnings = Vec::new();
        if let Some(raw) = p.get("concerns").filter(|v| !v.is_null()) {
            let (resolved, removed) = self.catalog.concerns.resolve(raw, "params.concerns")?;
            warnings = resolved.warnings.clone();
            Concerns::merge(&mut s.concerns, &resolved, &removed);
        }
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        });
        self.restrict_middleware_capability(&mut result, &ctx);
        #[cfg(feature = "explain")]
        self.advertise_explain(&mut result["capabilities"], "experimental", &ctx);
        if let Some(i) = self.catalog.server.get("instructions") {
            result["instructions"] = i.clone();
        }
        if !warnings.is_empty() {
            result["_meta"] = json!({ format!("{EXT}/warnings"): warnings });
        }
        *session = Some(s);
        out.session_changed = true;
        Ok(result.to_string())
    }
    pub(crate) fn discover(&self, ctx: &FilterContext) -> Value {
        let mut caps = self.capabilities();
        // Only what a stateless request can use: no task filter (tasks/list needs a session).
        let ext = json!({
            format!("{EXT}/filtering"): caps["filtering"].take(),
            format!("{EXT}/concerns"): {"declarations": caps["concerns"].take()},
            GROUPING: {},
        });
        let mut ext = ext;
        #[cfg(feature = "standards")]
        {
            ext[crate::protocol::disclosure::GROUPS_EXTENSION] = json!({"listChanged": true});
        }
        let tasks = self
            .catalog
            .section(crate::model::Kind::Tool)
            .items
            .iter()
            .any(|t| matches!(t.task_support.as_deref(), Some("optional" | "required")));
        if tasks && !self.is_gateway() {
            // The tasks extension: tools/call answers resultType "task"; tasks/get, tasks/update
            // and tasks/cancel by task id, with no session.
            ext[TASKS_EXTENSION] = json!({});
        }
        if let Some(o) = caps.as_object_mut() {
            o.remove("filtering");
            o.remove("concerns");
            o.insert("extensions".into(), ext);
        }
        if let Some(o) = caps.as_object_mut() {
            // Tasks need a session here; 2026-07-28 moved them out of the core capabilities.
            o.remove("tasks");
        }
        let mut result = json!({
            "supportedVersions": [MODERN_VERSION, LEGACY_VERSIONS[0], LEGACY_VERSIONS[1], LEGACY_VERSIONS[2]],
            "capabilities": caps,
            "_meta": {"io.modelcontextprotocol/serverInfo": self.server_info()},
        });
        self.restrict_middleware_capability(&mut result, ctx);
        #[cfg(feature = "explain")]
        self.advertise_explain(&mut result["capabilities"], "extensions", ctx);
        if let Some(i) = self.catalog.server.get("instructions") {
            result["instructions"] = i.clone();
        }
        result
    }
}
