//! The method router: one incoming message, the session (if any), the time → response, session
//! changes and notifications. No I/O.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::catalog::Catalog;
use crate::concern::ConcernConfig;
use crate::error::{type_name, Error, Result};
use crate::filter::chain::{Chain, FilterContext};
use crate::filter::Filter;
use crate::model::Kind;
use crate::protocol::client_meta::Known;
use crate::protocol::jsonrpc::{self};
use crate::protocol::Session;

/// What the shell supplies for one message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Env {
    /// Current time, ms since the epoch.
    pub now_ms: i64,
    /// Authenticated principal, if any.
    pub principal: Option<String>,
    /// A fresh id, used if this message creates a session or a task.
    pub fresh_id: String,
    /// The endpoint's view (see `http::endpoint_view`), policy for this request.
    pub view: Option<std::sync::Arc<crate::filter::EndpointView>>,
    /// The verified token behind `principal` (its roles and claims), when it came from one.
    #[cfg(feature = "auth")]
    pub identity: Option<Arc<crate::auth::Identity>>,
}

/// A request's `params` and its `_meta`, in them or kept beside them (`jsonrpc::Kept`), and a list's filter read from the text.
#[derive(Clone, Copy)]
pub(crate) struct Asked<'a> {
    pub value: &'a Value,
    /// `params._meta` (null when absent).
    pub meta: &'a Value,
    /// What this thread read from that `_meta` before, when it is kept.
    pub known: Option<&'a Arc<Known>>,
    /// A list's `params.filter`, when it was read from the text (`jsonrpc::Kept`).
    pub filter: Option<&'a Filter>,
}

/// One request as the handlers see it.
pub(crate) struct Call<'a> {
    pub params: &'a Value,
    /// `params._meta` (null when absent; a list's may be kept beside `params`: [`Asked`]).
    pub meta: &'a Value,
    /// A list's `params.filter` read from the text, not in `params` ([`Asked`]); read either
    /// with [`Call::filter`].
    pub kept_filter: Option<&'a Filter>,
    /// A 2026-07-28 request (no session): its result gets `resultType`.
    pub stateless: bool,
    pub ctx: FilterContext,
    pub session_concerns: ConcernConfig,
    /// The response's start up to its result's first field (`{"jsonrpc":"2.0","id":..,"result":{`
    /// and a 2026-07-28 result's own fields): a list writes its answer whole after it, so its
    /// page is not moved to be wrapped. Empty: the result alone.
    pub head: &'a str,
}

impl Call<'_> {
    /// `params.filter`: the one read from the text, or `Filter::parse`'s reading of the params'.
    pub(crate) fn filter(&self) -> Result<std::borrow::Cow<'_, Filter>> {
        match self.kept_filter {
            Some(f) => Ok(std::borrow::Cow::Borrowed(f)),
            None => {
                Filter::parse(crate::json::member(self.params, "filter"), "params.filter").map(std::borrow::Cow::Owned)
            }
        }
    }
}

/// The MCP server core: a compiled catalog and a policy chain.
#[derive(Debug, Clone)]
pub struct Server {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) chain: Chain,
    /// Catalog version; cursors are bound to it.
    pub version: u64,
    /// Whether the catalog has scoped groups (`Catalog::has_scoped_groups`), found when it is set.
    #[cfg(feature = "standards")]
    pub(crate) has_scoped_groups: bool,
}

impl Server {
    /// A server over `catalog`, with its declarative policy as the chain.
    pub fn new(catalog: Catalog) -> Self {
        let chain = catalog.policy.chain();
        Server {
            #[cfg(feature = "standards")]
            has_scoped_groups: catalog.has_scoped_groups(),
            catalog: Arc::new(catalog),
            chain,
            version: 1,
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Builds search mode's index of the current catalog, for a shell to run off the path of
    /// requests (the native server: on another thread at startup); a search before it is done
    /// waits for it, one after it reads it.
    #[cfg(feature = "search-index")]
    pub fn search_job(&self) -> impl FnOnce() + Send + 'static {
        let catalog = Arc::clone(&self.catalog);
        move || {
            catalog.search_index();
        }
    }

    /// Swaps in a new catalog (a configuration reload, an upstream refresh). Returns the
    /// `list_changed` notifications every session should get, and bumps the version so cursors
    /// issued before the change are refused.
    pub fn replace_catalog(&mut self, catalog: Catalog) -> Vec<String> {
        let old = std::mem::replace(&mut self.catalog, Arc::new(catalog));
        let notes = list_changes(&old, &self.catalog)
            .into_iter()
            .map(|m| jsonrpc::notification(m, None))
            .collect();
        self.chain = self.catalog.policy.chain();
        #[cfg(feature = "standards")]
        {
            self.has_scoped_groups = self.catalog.has_scoped_groups();
        }
        self.version += 1;
        notes
    }

    /// The chain, to add programmable filters and checks.
    pub fn chain_mut(&mut self) -> &mut Chain {
        &mut self.chain
    }

    pub(crate) fn context(
        &self,
        method: &str,
        id: &Value,
        meta: &Value,
        known: Option<&Arc<Known>>,
        session: Option<&Session>,
        env: &Env,
    ) -> FilterContext {
        let (meta, initialize, protocol_version) = match session {
            Some(s) => (
                Arc::new(meta.clone()),
                Arc::clone(&s.initialize),
                s.protocol_version.clone(),
            ),
            // Read once per client on this thread (`client_meta`), shared by its requests.
            None => {
                let known = known
                    .cloned()
                    .unwrap_or_else(|| crate::protocol::client_meta::known(meta));
                (
                    Arc::clone(&known.meta),
                    Arc::clone(&known.initialize),
                    known.version.clone(),
                )
            }
        };
        FilterContext {
            initialize,
            protocol_version,
            method: method.into(),
            request_id: id.clone(),
            meta,
            principal: env.principal.clone(),
            view: env.view.clone(),
            #[cfg(feature = "auth")]
            identity: env.identity.clone(),
        }
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
        let Some(pos) = section.find(id) else {
            return Err(self.down_item(kind, what, id, call).unwrap_or_else(unknown));
        };
        if !self.chain.allows(kind, section, pos, &call.ctx, log) {
            return Err(unknown());
        }
        Ok(pos)
    }

    /// The error for a tool or prompt `id` the catalog does not hold that an upstream now down
    /// held when last up (or, for one down since the start, whose name falls in its prefix's
    /// space): it names the upstream and why, instead of "Unknown". Not through a view (an
    /// endpoint that narrows the catalog learns nothing of what lies outside it), and never for
    /// an item the catalog holds (one hidden by policy stays "Unknown").
    #[cfg(feature = "gateway")]
    fn down_item(&self, kind: Kind, what: &str, id: &str, call: &Call) -> Option<Error> {
        if call.ctx.view.is_some() || !matches!(kind, Kind::Tool | Kind::Prompt) {
            return None;
        }
        let i = self.catalog.origins.down_holder(kind, id, &self.catalog.upstreams)?;
        Some(Error::params(self.down_message(i, what, id)))
    }

    /// The message for a read of a URI the catalog does not hold that an upstream now down
    /// held when last up (the resource itself, or a template space that starts it; the longest
    /// wins), under the same conditions as [`Server::down_item`].
    #[cfg(feature = "gateway")]
    pub(crate) fn down_uri(&self, uri: &str, call: &Call) -> Option<String> {
        if call.ctx.view.is_some() {
            return None;
        }
        let i = self.catalog.origins.down_uri_holder(uri)?;
        Some(self.down_message(i, "resource", uri))
    }

    /// "`upstream` is down (why); its `what` "`id`" is unavailable until it is back".
    #[cfg(feature = "gateway")]
    fn down_message(&self, i: usize, what: &str, id: &str) -> String {
        let origins = &self.catalog.origins;
        let label = self.catalog.upstreams.get(i).map(|up| up.label()).unwrap_or_default();
        let why = origins
            .why_down
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, why)| why.strip_prefix(&format!("{label}: ")).unwrap_or(why).to_string())
            .unwrap_or_else(|| "it is out of the lists".into());
        format!(
            "{label} is down ({why}); its {what} \"{id}\" is unavailable until it is back (the operator's status at /mcp-sieve/upstreams says when it is tried again)"
        )
    }

    #[cfg(not(feature = "gateway"))]
    fn down_item(&self, _: Kind, _: &str, _: &str, _: &Call) -> Option<Error> {
        None
    }

    pub(crate) fn arguments<'a>(call: &'a Call) -> Result<std::borrow::Cow<'a, Map<String, Value>>> {
        match call.params.get("arguments") {
            None | Some(Value::Null) => Ok(std::borrow::Cow::Owned(Map::new())),
            Some(Value::Object(m)) => Ok(std::borrow::Cow::Borrowed(m)),
            Some(v) => Err(Error::params(format!(
                "params.arguments must be an object, got {}",
                type_name(v)
            ))),
        }
    }
}

pub(crate) fn string_param<'a>(params: &'a Value, path: &str, field: &str) -> Result<&'a str> {
    match params.get(field) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(Error::params(format!(
            "{path}.{field} must be a string, got {}",
            type_name(v)
        ))),
        None => Err(Error::params(format!("{path}.{field} is required"))),
    }
}

/// The `list_changed` notification methods a change from `old` to `new` calls for (tools,
/// resources — with templates —, prompts, groups, tags), each once.
pub fn list_changes(old: &Catalog, new: &Catalog) -> Vec<&'static str> {
    let differs = |kind: Kind| {
        let (a, b) = (&old.section(kind).items, &new.section(kind).items);
        a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.fragment() != y.fragment())
    };
    let mut methods = Vec::new();
    if differs(Kind::Tool) {
        methods.push("notifications/tools/list_changed");
    }
    if differs(Kind::Resource) || differs(Kind::ResourceTemplate) {
        methods.push("notifications/resources/list_changed");
    }
    if differs(Kind::Prompt) {
        methods.push("notifications/prompts/list_changed");
    }
    if old.groups != new.groups {
        methods.push("notifications/groups/list_changed");
    }
    if old.tags != new.tags {
        methods.push("notifications/tags/list_changed");
    }
    methods
}
