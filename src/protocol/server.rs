//! The method router: one incoming message, the session (if any), the time → response, session
//! changes and notifications. No I/O.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::catalog::Catalog;
use crate::concern::{ConcernConfig, Concerns};
use crate::error::{type_name, Error, Result};
use crate::filter::chain::{Chain, FilterContext};
use crate::filter::{Bits, Filter};
use crate::model::Kind;
use crate::protocol::jsonrpc::{self, Incoming};
use crate::protocol::{demo, Session, EXT, LEGACY_VERSIONS, MODERN_VERSION};

/// What the shell supplies for one message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Env {
    /// Current time, ms since the epoch.
    pub now_ms: i64,
    /// Authenticated principal, if any.
    pub principal: Option<String>,
    /// A fresh id, used if this message creates a session or a task.
    pub fresh_id: String,
}

/// What handling one message produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The JSON-RPC response (none for notifications and responses).
    pub response: Option<String>,
    /// Notifications to send to this session's client.
    pub notifications: Vec<String>,
    /// Log lines (policy filter failures, ignored concern entries); no conversation content.
    pub log: Vec<String>,
    /// Whether the session state changed and must be persisted.
    pub session_changed: bool,
    /// The JSON-RPC error code of the response, if it is an error.
    pub error_code: Option<i32>,
    /// No response yet: handle the same message again at this time (ms since the epoch), as
    /// `tasks/result` does for a task that is still working.
    pub retry_at: Option<i64>,
    /// Gateway mode: no response yet; perform this request at the upstream and answer with its
    /// reply (see `Forward::answer`).
    pub forward: Option<crate::protocol::Forward>,
}

/// Whether a request carries the 2026-07-28 version in its `_meta`.
fn is_modern(params: &Value) -> bool {
    params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str() == Some(MODERN_VERSION)
}

/// One request as the handlers see it.
pub(crate) struct Call<'a> {
    pub params: &'a Value,
    pub ctx: FilterContext,
    pub session_concerns: ConcernConfig,
}

/// The MCP server core: a compiled catalog and a policy chain.
#[derive(Debug, Clone)]
pub struct Server {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) chain: Chain,
    /// Catalog version; cursors are bound to it.
    pub version: u64,
}

impl Server {
    /// A server over `catalog`, with its declarative policy as the chain.
    pub fn new(catalog: Catalog) -> Self {
        let chain = catalog.policy.chain();
        Server {
            catalog: Arc::new(catalog),
            chain,
            version: 1,
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Swaps in a new catalog (a configuration reload, an upstream refresh). Returns the
    /// `list_changed` notifications every session should get, and bumps the version so cursors
    /// issued before the change are refused.
    pub fn replace_catalog(&mut self, catalog: Catalog) -> Vec<String> {
        let old = std::mem::replace(&mut self.catalog, Arc::new(catalog));
        let new = &self.catalog;
        let fragments = |c: &Catalog, kind: Kind| -> Vec<String> {
            c.section(kind).items.iter().map(|p| p.fragment.clone()).collect()
        };
        let mut notes = Vec::new();
        let mut changed = |yes: bool, method: &str| {
            if yes && !notes.iter().any(|n: &String| n.contains(method)) {
                notes.push(jsonrpc::notification(method, None));
            }
        };
        changed(
            fragments(&old, Kind::Tool) != fragments(new, Kind::Tool),
            "notifications/tools/list_changed",
        );
        for kind in [Kind::Resource, Kind::ResourceTemplate] {
            changed(
                fragments(&old, kind) != fragments(new, kind),
                "notifications/resources/list_changed",
            );
        }
        changed(
            fragments(&old, Kind::Prompt) != fragments(new, Kind::Prompt),
            "notifications/prompts/list_changed",
        );
        changed(old.groups != new.groups, "notifications/groups/list_changed");
        changed(old.tags != new.tags, "notifications/tags/list_changed");
        self.chain = new.policy.chain();
        self.version += 1;
        notes
    }

    /// The chain, to add programmable filters and checks.
    pub fn chain_mut(&mut self) -> &mut Chain {
        &mut self.chain
    }

    /// The capabilities of DESIGN.md.
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
        Self::extra_capabilities(&mut caps);
        if crate::middleware::enabled(&self.catalog.middleware) {
            caps["contextMiddleware"] = json!({});
        }
        caps
    }

    fn server_info(&self) -> Value {
        let s = &self.catalog.server;
        json!({
            "name": s.get("name").cloned().unwrap_or(json!("mcp-sieve")),
            "version": s.get("version").cloned().unwrap_or(json!(env!("CARGO_PKG_VERSION"))),
        })
    }

    /// Handles one message. `session` is the caller's session (None before `initialize`, or for
    /// stateless requests); `initialize` fills it.
    pub fn handle(&self, msg: Incoming, session: &mut Option<Session>, env: &Env) -> Outcome {
        let mut out = Outcome::default();
        match msg {
            Incoming::Response => {}
            Incoming::Notification { method, params } => self.notify(&method, &params, session, &mut out),
            Incoming::Request { id, method, params } => {
                let stateless = session.is_none() && method != "initialize";
                let result = self.request(&id, &method, &params, session, env, &mut out);
                if out.retry_at.is_none() && out.forward.is_none() {
                    out.response = Some(match result {
                        // 2026-07-28 results say whether they are complete.
                        Ok(raw) if stateless && raw.starts_with('{') => {
                            let rest = if raw == "{}" { "}" } else { &raw[1..] };
                            let sep = if rest == "}" { "" } else { "," };
                            jsonrpc::ok_raw(&id, &format!("{{\"resultType\":\"complete\"{sep}{rest}"))
                        }
                        Ok(raw) => jsonrpc::ok_raw(&id, &raw),
                        Err(e) => {
                            out.error_code = Some(e.code());
                            jsonrpc::error(&id, &e)
                        }
                    });
                }
            }
        }
        out
    }

    fn context(&self, method: &str, id: &Value, params: &Value, session: Option<&Session>, env: &Env) -> FilterContext {
        let meta = params.get("_meta").cloned().unwrap_or(Value::Null);
        let (initialize, protocol_version) = match session {
            Some(s) => (s.initialize.clone(), s.protocol_version.clone()),
            None => (
                json!({
                    "clientInfo": meta.get("io.modelcontextprotocol/clientInfo").cloned().unwrap_or(Value::Null),
                    "capabilities": meta.get("io.modelcontextprotocol/clientCapabilities").cloned().unwrap_or(json!({})),
                }),
                meta.get("io.modelcontextprotocol/protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or(MODERN_VERSION)
                    .to_string(),
            ),
        };
        FilterContext {
            initialize,
            protocol_version,
            method: method.into(),
            request_id: id.clone(),
            meta,
            principal: env.principal.clone(),
        }
    }

    fn request(
        &self,
        id: &Value,
        method: &str,
        params: &Value,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        let stateless = session.is_none();
        if method == "initialize" && !is_modern(params) {
            return self.initialize(id, params, session, env, out);
        }
        // 2026-07-28 has neither initialize nor ping.
        if stateless && matches!(method, "initialize" | "ping") {
            return Err(Error::MethodNotFound(format!(
                "\"{method}\" is not part of protocol version {MODERN_VERSION}; use server/discover"
            )));
        }
        let call = Call {
            params,
            ctx: self.context(method, id, params, session.as_ref(), env),
            session_concerns: session.as_ref().map(|s| s.concerns.clone()).unwrap_or_default(),
        };
        if let Some(forwarded) = self.forward(id, method, &call, stateless, out) {
            return forwarded;
        }
        let log = &mut out.log;
        match method {
            "ping" => Ok("{}".into()),
            "server/discover" => Ok(self.discover().to_string()),
            "tools/list" => self.list(Kind::Tool, &call, log),
            "resources/list" => self.list(Kind::Resource, &call, log),
            "resources/templates/list" => self.list(Kind::ResourceTemplate, &call, log),
            "prompts/list" => self.list(Kind::Prompt, &call, log),
            "groups/list" => self.list_names("groups", self.catalog.groups.iter().map(|g| &g.json).collect(), &call),
            "tags/list" => self.list_names("tags", self.catalog.tags.iter().map(|t| &t.json).collect(), &call),
            "concerns/list" => Ok(self.catalog.concerns.list_json(&call.session_concerns).to_string()),
            "concerns/update" => self.update_concerns(&call, session, out),
            "tools/call" => self.call_tool(&call, session, env, out),
            "prompts/get" => self.get_prompt(&call, log),
            "resources/read" => self.read_uri(&call, log),
            "resources/subscribe" | "resources/unsubscribe" => self.subscribe(&call, log),
            "logging/setLevel" => self.set_log_level(&call),
            "completion/complete" => self.complete(&call, log),
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" => self.task_method(method, &call, session, env, out),
            "middleware/list" | "middleware/invoke" => self.middleware(method, &call, env.now_ms, log),
            other => Err(Error::MethodNotFound(format!(
                "\"{other}\" is not a method of this server; see the capabilities in the initialize (or server/discover) result"
            ))),
        }
    }

    fn notify(&self, method: &str, params: &Value, session: &mut Option<Session>, out: &mut Outcome) {
        if method != "notifications/initialized" {
            return;
        }
        let Some(s) = session.as_mut() else { return };
        s.initialized = true;
        out.session_changed = true;
        if let Some(raw) = params.get("concerns").filter(|v| !v.is_null()) {
            match self.catalog.concerns.resolve(raw, "params.concerns") {
                Ok((resolved, removed)) => {
                    out.log.extend(resolved.warnings.iter().cloned());
                    Concerns::merge(&mut s.concerns, &resolved, &removed);
                }
                Err(e) => out.log.push(format!("notifications/initialized concerns ignored: {e}")),
            }
        }
    }

    fn negotiate(requested: &str) -> &'static str {
        LEGACY_VERSIONS
            .iter()
            .find(|v| **v == requested)
            .copied()
            .unwrap_or(LEGACY_VERSIONS[0])
    }

    fn initialize(
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
            protocol_version: version.into(),
            initialize: params.clone(),
            ..Default::default()
        };
        let ctx = self.context("initialize", id, params, Some(&s), env);
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

    fn discover(&self) -> Value {
        let mut caps = self.capabilities();
        let ext = json!({
            format!("{EXT}/filtering"): caps["filtering"].take(),
            format!("{EXT}/concerns"): {"declarations": caps["concerns"].take()},
            format!("{EXT}/taskFilter"): caps["tasks"]["list"]["filter"].clone(),
        });
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
        if let Some(i) = self.catalog.server.get("instructions") {
            result["instructions"] = i.clone();
        }
        result
    }

    /// Visible sets of every kind, to tell which lists a concern change altered.
    fn visible_sets(&self, call: &Call, concerns: &ConcernConfig, log: &mut Vec<String>) -> Vec<Bits> {
        let eff = self.catalog.concerns.effective(concerns);
        Kind::ALL
            .iter()
            .map(|k| self.selection(*k, call, &Filter::default(), &eff, log))
            .collect()
    }

    fn update_concerns(&self, call: &Call, session: &mut Option<Session>, out: &mut Outcome) -> Result<String> {
        let s = session
            .as_mut()
            .ok_or_else(|| Error::InvalidRequest("concerns/update needs a session; call initialize first".into()))?;
        let raw = call
            .params
            .get("concerns")
            .ok_or_else(|| Error::params("params.concerns is required (an object of concern: value)"))?;
        let (resolved, removed) = self.catalog.concerns.resolve(raw, "params.concerns")?;
        let before = self.visible_sets(call, &s.concerns, &mut out.log);
        Concerns::merge(&mut s.concerns, &resolved, &removed);
        let after = self.visible_sets(call, &s.concerns, &mut out.log);
        for (kind, (b, a)) in Kind::ALL.iter().zip(before.iter().zip(&after)) {
            if b != a {
                let m = match kind {
                    Kind::Tool => "notifications/tools/list_changed",
                    Kind::Prompt => "notifications/prompts/list_changed",
                    _ => "notifications/resources/list_changed",
                };
                let n = jsonrpc::notification(m, None);
                if !out.notifications.contains(&n) {
                    out.notifications.push(n);
                }
            }
        }
        out.session_changed = true;
        let mut result = json!({"configuration": self.catalog.concerns.effective(&s.concerns)});
        if !resolved.warnings.is_empty() {
            result["_meta"] = json!({ format!("{EXT}/warnings"): resolved.warnings });
        }
        Ok(result.to_string())
    }

    /// Finds an item by identity and checks that policy lets this call use it.
    pub(crate) fn usable(&self, kind: Kind, field: &str, call: &Call, log: &mut Vec<String>) -> Result<usize> {
        let path = format!("params.{field}");
        let id = match call.params.get(field) {
            Some(Value::String(s)) => s,
            Some(v) => return Err(Error::params(format!("{path} must be a string, got {}", type_name(v)))),
            None => return Err(Error::params(format!("{path} is required"))),
        };
        let section = self.catalog.section(kind);
        let what = match kind {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            _ => "resource",
        };
        let unknown = || Error::params(format!("Unknown {what}: \"{id}\""));
        let pos = section.find(id).ok_or_else(unknown)?;
        if !self.chain.allows(kind, section, pos, &call.ctx, log) {
            return Err(unknown());
        }
        Ok(pos)
    }

    fn arguments<'a>(call: &'a Call) -> Result<std::borrow::Cow<'a, Map<String, Value>>> {
        match call.params.get("arguments") {
            None | Some(Value::Null) => Ok(std::borrow::Cow::Owned(Map::new())),
            Some(Value::Object(m)) => Ok(std::borrow::Cow::Borrowed(m)),
            Some(v) => Err(Error::params(format!(
                "params.arguments must be an object, got {}",
                type_name(v)
            ))),
        }
    }

    fn call_tool(&self, call: &Call, session: &mut Option<Session>, env: &Env, out: &mut Outcome) -> Result<String> {
        let pos = self.usable(Kind::Tool, "name", call, &mut out.log)?;
        let tool = &self.catalog.section(Kind::Tool).items[pos];
        let args = Self::arguments(call)?;
        let support = tool
            .json
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
            .unwrap_or("forbidden");
        match (call.params.get("task"), support) {
            (Some(t), "optional" | "required") if !t.is_null() => {
                return self.create_task(tool, &args, t, session, env, out)
            }
            (Some(t), _) if !t.is_null() => {
                // MCP 2025-11-25 (tasks): a task request for a tool that does not support tasks
                // SHOULD be answered with -32601.
                return Err(Error::MethodNotFound(format!(
                    "tool \"{}\" does not support task execution (execution.taskSupport is \"{support}\")",
                    tool.name
                )));
            }
            (_, "required") => {
                return Err(Error::MethodNotFound(format!(
                    "tool \"{}\" must be called as a task: add params.task",
                    tool.name
                )))
            }
            _ => {}
        }
        out.notifications
            .extend(super::extra::tool_notifications(&tool.name, call.params));
        Ok(demo::run(&tool.name, &args, env.now_ms).to_string())
    }

    fn get_prompt(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let pos = self.usable(Kind::Prompt, "name", call, log)?;
        let prompt = &self.catalog.section(Kind::Prompt).items[pos];
        let args = Self::arguments(call)?;
        for a in prompt
            .json
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if a["required"] == json!(true) {
                let n = a["name"].as_str().unwrap_or_default();
                if !args.contains_key(n) {
                    return Err(Error::params(format!(
                        "params.arguments.{n} is required by prompt \"{}\"",
                        prompt.name
                    )));
                }
            }
        }
        let desc = prompt
            .json
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or(&prompt.name);
        if let Some(m) = super::extra::prompt_messages(&prompt.json, &args) {
            return Ok(m.to_string());
        }
        let text = format!("{desc}\nArguments: {}", Value::Object(args.into_owned()));
        Ok(
            json!({"description": desc, "messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
                .to_string(),
        )
    }
}
