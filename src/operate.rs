//! Operating a server (feature `operate`: the native server and the Worker, not the package):
//! what one use of an item is ([`Use`]: a tool call, a prompt get, a resource read, a task
//! created), its rate limits (`limits`), its audit record (`audit`) and the reason a refused use
//! was refused — all pure: the shells keep the buckets, write the records and count the metrics.

pub mod lease;

pub use crate::catalog::{audit, limits, Use};

use serde_json::Value;

use crate::filter::FilterContext;
use crate::model::Kind;
use crate::protocol::jsonrpc::Head;
use crate::protocol::{Env, Server};

impl Server {
    /// The use a request body makes, if it is a `tools/call`, `prompts/get` or
    /// `resources/read` request naming its item; `None` for anything else (a batch, a
    /// notification, another method, a body that does not parse: the core answers those).
    pub fn use_of(&self, body: &[u8], env: &Env) -> Option<Use> {
        self.use_in(Head::read(body), env)
    }

    /// [`Server::use_of`] for a message whose [`Head`] the shell has read (its `arguments`
    /// move into the use).
    pub fn use_in(&self, head: Head, env: &Env) -> Option<Use> {
        let method = head.method.as_deref()?;
        if head.id.is_null() {
            return None;
        }
        let params = head.params;
        let (kind, named, method) = match method {
            "tools/call" => (Kind::Tool, &params.name, "tools/call"),
            "prompts/get" => (Kind::Prompt, &params.name, "prompts/get"),
            "resources/read" => (Kind::Resource, &params.uri, "resources/read"),
            _ => return None,
        };
        let mut item = named.as_deref()?.to_string();
        let mut arguments = params.arguments;
        // Search mode: `call_tool` calls the tool it names.
        let searching = env.view.as_ref().is_some_and(|v| v.search);
        if searching && kind == Kind::Tool && item == "call_tool" {
            if let Some(named) = arguments["name"].as_str() {
                item = named.to_string();
                arguments = arguments.get_mut("arguments").map(Value::take).unwrap_or(Value::Null);
            }
        }
        // Only the limits read them (a lookup in the catalog and a list, spared most uses).
        let groups = if self.limits().read_groups() {
            self.groups_of(kind, &item)
        } else {
            Vec::new()
        };
        Some(Use {
            id: head.id,
            method,
            kind,
            task: kind == Kind::Tool && params.task,
            upstream: self.upstream_of(kind, &item),
            groups,
            principal: env.principal.clone(),
            roles: roles(env),
            view: env.view.as_ref().map(|v| v.label.clone()),
            item,
            arguments,
            via: None,
        })
    }

    /// The groups of an item, with their ancestors.
    fn groups_of(&self, kind: Kind, item: &str) -> Vec<String> {
        let section = self.catalog.section(kind);
        let mut all: Vec<String> = Vec::new();
        for g in section.find(item).iter().flat_map(|&pos| &section.items[pos].groups) {
            for a in self.ancestors(g) {
                if !all.contains(&a) {
                    all.push(a);
                }
            }
        }
        all
    }

    /// The use `ctx`'s caller would make of an item (what `sieve/explain` asks the limits about).
    pub(crate) fn use_for(&self, kind: Kind, item: &str, method: &'static str, ctx: &FilterContext) -> Use {
        #[cfg(feature = "auth")]
        let roles = ctx.identity.as_ref().map(|i| i.roles.clone()).unwrap_or_default();
        #[cfg(not(feature = "auth"))]
        let roles = Vec::new();
        Use {
            id: ctx.request_id.clone(),
            method,
            kind,
            item: item.into(),
            task: false,
            upstream: self.upstream_of(kind, item),
            groups: self.groups_of(kind, item),
            principal: ctx.principal.clone(),
            roles,
            view: ctx.view.as_ref().map(|v| v.label.clone()),
            arguments: Value::Null,
            via: None,
        }
    }

    /// The name of the upstream serving an item (gateway mode).
    #[cfg(feature = "gateway")]
    fn upstream_of(&self, _kind: Kind, _item: &str) -> Option<String> {
        if self.catalog.upstreams.is_empty() {
            // Not a gateway: no item has an upstream (no lookup).
            return None;
        }
        {
            let o = &self.catalog.origins;
            let i = match _kind {
                Kind::Tool => o.tools.get(_item).map(|x| x.0),
                Kind::Prompt => o.prompts.get(_item).map(|x| x.0),
                _ => o.resource(_item),
            }?;
            let name = &self.catalog.upstreams.get(i)?.name;
            Some(if name.is_empty() {
                "upstream".into()
            } else {
                name.clone()
            })
        }
    }

    #[cfg(not(feature = "gateway"))]
    fn upstream_of(&self, _kind: Kind, _item: &str) -> Option<String> {
        None
    }

    /// The document's rate limits.
    pub fn limits(&self) -> &limits::Limits {
        &self.catalog.limits
    }

    /// The document's audit settings.
    pub fn audit(&self) -> &audit::Audit {
        &self.catalog.audit
    }

    /// Why the use `u` was refused as unknown (`-32602`): the first blocking reason code
    /// `sieve/explain` would give (`initial-check:<name>`, `quarantine`, `view`,
    /// `policy:<id>`, `upstream-down:<name>`), or `unknown` (the item does not exist); `None`
    /// when the item is usable (the error was about something else, such as its arguments).
    pub fn refusal_reason(&self, u: &Use, env: &Env) -> Option<String> {
        let ctx = self.context(u.method, &u.id, &Value::Null, None, None, env);
        self.use_reason(u.kind, &u.item, &ctx)
    }

    /// The reason code a use was refused for, as its answer says (`error_code`, if an error),
    /// `None` for an allowed use: `-32602` or 2025-11-25's `-32002` (the item is not usable:
    /// [`Server::refusal_reason`]); the message itself refused, so the use never ran: `-32600`
    /// (`invalid-request`, such as a string past the body limits, or the initial check that
    /// refused it), `-32700` (`parse-error`), `-32020` (`header-mismatch`), `-32021`
    /// (`missing-capability`), `-32022` (`unsupported-version`).
    pub fn refusal_for(&self, u: &Use, env: &Env, error_code: Option<i32>) -> Option<String> {
        use crate::error::code;
        let named = |reason: &str| Some(reason.to_string());
        match error_code? {
            code::INVALID_PARAMS | code::RESOURCE_NOT_FOUND => self.refusal_reason(u, env),
            code::INVALID_REQUEST => self
                .refusal_reason(u, env)
                .filter(|r| r.starts_with("initial-check:"))
                .or_else(|| named("invalid-request")),
            code::PARSE_ERROR => named("parse-error"),
            code::HEADER_MISMATCH => named("header-mismatch"),
            code::MISSING_REQUIRED_CLIENT_CAPABILITY => named("missing-capability"),
            code::UNSUPPORTED_PROTOCOL_VERSION => named("unsupported-version"),
            _ => None,
        }
    }

    /// The name metrics count use `u` under: its item when this server has it (a listed item, a
    /// renamed tool's old name, search mode's own tools), the template a resource URI matches,
    /// and `None` for a name it does not have (counted as [`UNKNOWN_ITEM`]): names callers
    /// invent add no series.
    pub fn counted_item<'a>(&'a self, u: &'a Use) -> Option<&'a str> {
        let section = self.catalog.section(u.kind);
        if section.find(&u.item).is_some() {
            return Some(&u.item);
        }
        match u.kind {
            Kind::Tool if [crate::protocol::search::FIND, crate::protocol::search::CALL].contains(&u.item.as_str()) => {
                Some(&u.item)
            }
            #[cfg(feature = "standards")]
            Kind::Tool if self.catalog.aliases.contains_key(&u.item) => Some(&u.item),
            Kind::Resource => self
                .catalog
                .section(Kind::ResourceTemplate)
                .items
                .iter()
                .find(|t| crate::protocol::template::match_template(&t.id, &u.item).is_some())
                .map(|t| t.id.as_str()),
            _ => None,
        }
    }

    fn use_reason(&self, kind: Kind, item: &str, ctx: &FilterContext) -> Option<String> {
        let reasons = self.use_reasons(kind, item, ctx);
        reasons.into_iter().find(|c| !c.starts_with("audit:"))
    }
}

/// The label metrics give a use of an item this server does not have ([`Server::counted_item`]).
pub const UNKNOWN_ITEM: &str = "unknown";

/// The longest label value metrics write, in bytes ([`label_value`]).
pub const MAX_LABEL_BYTES: usize = 128;

/// `v` as a metric's label value: its first [`MAX_LABEL_BYTES`] bytes, cut at a character (a
/// value comes from a request or a document, and a scrape repeats it on every series).
pub fn label_value(v: &str) -> &str {
    cut_at_char(v, MAX_LABEL_BYTES)
}

/// `v`'s first `max` bytes at most, cut at a character.
pub fn cut_at_char(v: &str, max: usize) -> &str {
    let mut end = v.len().min(max);
    while !v.is_char_boundary(end) {
        end -= 1;
    }
    &v[..end]
}

/// The caller's roles (from its verified token).
fn roles(_env: &Env) -> Vec<String> {
    #[cfg(feature = "auth")]
    return _env.identity.as_ref().map(|i| i.roles.clone()).unwrap_or_default();
    #[cfg(not(feature = "auth"))]
    Vec::new()
}

/// The HTTP answer to a use `refusal` refused (request `request_id`): `429` with `Retry-After`
/// (whole seconds, rounded up) and the JSON-RPC error as the body, so a client that reads only
/// bodies still hears which limit and when.
pub fn refused(refusal: &limits::Refusal, request_id: &Value) -> crate::http::Response {
    let secs = ((refusal.retry_after_ms + 999) / 1000).max(1);
    crate::http::Response {
        status: 429,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Retry-After".into(), secs.to_string()),
        ],
        body: crate::protocol::jsonrpc::error(request_id, &refusal.error()),
        ..Default::default()
    }
}
