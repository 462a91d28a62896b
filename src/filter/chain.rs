//! The programmable chain (the Quarkus model): policy filters per kind of primitive with a
//! priority and a `FilterContext`, combined with AND; initial checks run at `initialize`.

use std::sync::Arc;

use serde_json::Value;

use crate::filter::Bits;
use crate::filter::Section;
use crate::model::{Kind, Primitive};

/// What a policy filter may look at: the session's initialize request, the current request and
/// the authenticated principal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterContext {
    /// `params` of the session's `initialize` request (or of a stateless request's `_meta`),
    /// shared with the session.
    pub initialize: Arc<Value>,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The method being served.
    pub method: String,
    /// The request id (null for notifications).
    pub request_id: Value,
    /// The request's `_meta` (shared: a stateless client's is read once, `protocol::client_meta`).
    pub meta: Arc<Value>,
    /// The authenticated principal, if any.
    pub principal: Option<String>,
    /// The endpoint's view (`/mcp/{view}`, a URL query, `X-MCP-*` headers), if any: policy for
    /// this client.
    pub view: Option<std::sync::Arc<super::EndpointView>>,
    /// The verified token behind `principal` (roles, claims), when it came from one.
    #[cfg(feature = "auth")]
    pub identity: Option<Arc<crate::auth::Identity>>,
}

impl FilterContext {
    /// `clientInfo.name` of the initialize request.
    pub fn client_name(&self) -> Option<&str> {
        self.initialize["clientInfo"]["name"].as_str()
    }

    /// `clientInfo.version` of the initialize request.
    pub fn client_version(&self) -> Option<&str> {
        self.initialize["clientInfo"]["version"].as_str()
    }

    /// Whether any of `globs` admits the caller: its principal, or with `role:<glob>` one of its
    /// roles (`allowPrincipals`, views' `principals`).
    #[inline]
    pub fn admitted_by(&self, globs: &[String]) -> bool {
        #[cfg(feature = "auth")]
        let roles = self.identity.as_ref().map_or(&[][..], |i| &i.roles[..]);
        #[cfg(feature = "auth")]
        return crate::auth::admits(globs, self.principal.as_deref(), roles, crate::filter::glob::matches);
        #[cfg(not(feature = "auth"))]
        self.principal
            .as_deref()
            .is_some_and(|p| globs.iter().any(|g| crate::filter::glob::matches(g, p)))
    }

    /// Whether the client declared capability `name` (e.g. `sampling`).
    pub fn has_capability(&self, name: &str) -> bool {
        self.initialize["capabilities"].get(name).is_some_and(|v| !v.is_null())
    }
}

/// A policy filter: decides whether a primitive is visible (and usable) in a context.
pub trait PrimitiveFilter: Send + Sync {
    /// Higher runs first.
    fn priority(&self) -> i32 {
        0
    }

    /// Whether this filter looks at primitives of `kind` (tools, resources, templates, prompts).
    fn applies_to(&self, _kind: Kind) -> bool {
        true
    }

    /// `Ok(true)` keeps the item. An `Err` is logged and ignored: the item stays visible.
    fn test(&self, item: &Primitive, ctx: &FilterContext) -> Result<bool, String>;

    /// A whole-section answer (the items to hide), for filters that can use the index.
    /// `None` means "ask `test` per item".
    fn hidden(&self, _section: &Section, _ctx: &FilterContext) -> Option<Result<Bits, String>> {
        None
    }

    /// The declarative rule it is, if it is one (its id, mode and source for `sieve/explain`
    /// and audit lines); programmable filters are none.
    #[cfg(feature = "explain")]
    fn rule(&self) -> Option<Written<'_>> {
        None
    }

    /// Whether what it hides may depend on who calls (client, principal, capabilities); a
    /// 2026-07-28 list shaped by such a filter is `cacheScope: "private"`. Programmable filters
    /// see the whole context, so the default is yes.
    fn per_caller(&self) -> bool {
        true
    }
}

/// A declarative rule as its filter tells `sieve/explain` and audit lines about it.
#[cfg(feature = "explain")]
#[derive(Debug, Clone, Copy)]
pub struct Written<'a> {
    /// Its id (`policy:<id>`).
    pub id: &'a str,
    /// `"mode": "audit"`: it hides nothing and logs what it would hide.
    pub audit: bool,
    /// The rule as written, with its id.
    pub source: &'a Value,
}

/// A check run when a session starts; the first failure refuses the `initialize`.
pub trait InitialCheck: Send + Sync {
    /// Higher runs first.
    fn priority(&self) -> i32 {
        0
    }

    /// `Err(message)` refuses the connection with that message.
    fn check(&self, ctx: &FilterContext) -> Result<(), String>;

    /// Its name in reasons (`initial-check:<name>`); `None`: `check-<position>`.
    #[cfg(feature = "explain")]
    fn name(&self) -> Option<String> {
        None
    }
}

/// A closure is a filter (priority 0, every kind): `Arc::new(|item: &Primitive, ctx:
/// &FilterContext| !item.name.starts_with("admin_"))`.
impl<F> PrimitiveFilter for F
where
    F: Fn(&Primitive, &FilterContext) -> bool + Send + Sync,
{
    fn test(&self, item: &Primitive, ctx: &FilterContext) -> Result<bool, String> {
        Ok(self(item, ctx))
    }
}

/// A closure is an initial check (priority 0): `Arc::new(|ctx: &FilterContext| ...)` returning
/// `Err(message)` to refuse.
impl<F> InitialCheck for F
where
    F: Fn(&FilterContext) -> Result<(), String> + Send + Sync,
{
    fn check(&self, ctx: &FilterContext) -> Result<(), String> {
        self(ctx)
    }
}

/// How many names an audit line shows before "and N more".
#[cfg(feature = "explain")]
const AUDIT_NAMES: usize = 10;

/// Policy filters and initial checks in priority order.
#[derive(Clone, Default)]
pub struct Chain {
    filters: Vec<Arc<dyn PrimitiveFilter>>,
    checks: Vec<Arc<dyn InitialCheck>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain({} filters, {} checks)", self.filters.len(), self.checks.len())
    }
}

impl Chain {
    /// Adds a filter, keeping priority order (stable for equal priorities).
    pub fn add_filter(&mut self, f: Arc<dyn PrimitiveFilter>) {
        self.filters.push(f);
        crate::sort::sort_by(&mut self.filters, |a, b| b.priority().cmp(&a.priority()));
    }

    /// Adds an initial check, keeping priority order.
    pub fn add_check(&mut self, c: Arc<dyn InitialCheck>) {
        self.checks.push(c);
        crate::sort::sort_by(&mut self.checks, |a, b| b.priority().cmp(&a.priority()));
    }

    /// Whether there are no filters.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether what the filters hide may differ from one caller to another.
    pub fn per_caller(&self) -> bool {
        self.filters.iter().any(|f| f.per_caller())
    }

    /// The items of `section` visible under policy in `ctx`. Errors of filters go to `log`, and
    /// so do the items rules in audit mode would hide.
    pub fn visible(&self, kind: Kind, section: &Section, ctx: &FilterContext, log: &mut Vec<String>) -> Bits {
        self.select(kind, section, ctx, log, None)
    }

    /// What policy and the view leave visible; audit rules log what they would hide of it (of
    /// the item at `only`, for a use).
    fn select(
        &self,
        kind: Kind,
        section: &Section,
        ctx: &FilterContext,
        log: &mut Vec<String>,
        _only: Option<usize>,
    ) -> Bits {
        let mut vis = Bits::full(section.items.len());
        #[cfg(feature = "explain")]
        let mut audits = Vec::new();
        for f in self.filters.iter().filter(|f| f.applies_to(kind)) {
            #[cfg(feature = "explain")]
            if let Some(rule) = f.rule().filter(|r| r.audit) {
                if let Some(Ok(hidden)) = f.hidden(section, ctx) {
                    audits.push((rule.id, hidden));
                }
                continue;
            }
            match f.hidden(section, ctx) {
                Some(Ok(hidden)) => vis.and_not(&hidden),
                Some(Err(e)) => log.push(format!("policy filter failed and was ignored: {e}")),
                None => {
                    let keep: Vec<usize> = vis.ones().collect();
                    for i in keep {
                        match f.test(&section.items[i], ctx) {
                            Ok(true) => {}
                            Ok(false) => vis.clear(i),
                            Err(e) => log.push(format!(
                                "policy filter failed on \"{}\" and was ignored: {e}",
                                section.items[i].name
                            )),
                        }
                    }
                }
            }
        }
        if let Some(view) = &ctx.view {
            vis.and(&view.visible(kind, section));
        }
        #[cfg(feature = "explain")]
        for (id, mut would) in audits {
            would.and(&vis);
            let names: Vec<String> = match _only {
                Some(pos) if would.get(pos) => vec![format!("{:?}", section.items[pos].id)],
                Some(_) => continue,
                None => would.ones().map(|i| format!("{:?}", section.items[i].id)).collect(),
            };
            if names.is_empty() {
                continue;
            }
            let more = names.len().saturating_sub(AUDIT_NAMES);
            let shown = names[..names.len().min(AUDIT_NAMES)].join(", ");
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            log.push(format!(
                "audit: policy rule \"{id}\" (mode audit) would hide from {} ({}): {shown}{tail}",
                ctx.method,
                kind.key()
            ));
        }
        vis
    }

    /// Whether one item is visible under policy (for `tools/call` and friends).
    pub fn allows(
        &self,
        kind: Kind,
        section: &Section,
        pos: usize,
        ctx: &FilterContext,
        log: &mut Vec<String>,
    ) -> bool {
        if self.filters.is_empty() && ctx.view.is_none() {
            return true;
        }
        self.select(kind, section, ctx, log, Some(pos)).get(pos)
    }

    /// The filters in priority order (`sieve/explain` asks each about one item).
    #[cfg(feature = "explain")]
    pub fn filters(&self) -> &[Arc<dyn PrimitiveFilter>] {
        &self.filters
    }

    /// The initial checks in priority order.
    #[cfg(feature = "explain")]
    pub fn checks(&self) -> &[Arc<dyn InitialCheck>] {
        &self.checks
    }

    /// Runs the initial checks; the first failure's message.
    pub fn run_checks(&self, ctx: &FilterContext) -> Result<(), String> {
        self.checks.iter().try_for_each(|c| c.check(ctx))
    }
}
