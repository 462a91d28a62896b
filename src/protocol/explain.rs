//! `sieve/explain`: why an item is hidden from this caller. Lists compute what is visible as
//! bitset intersections and keep no reasons; this method asks each layer again about the one
//! item — initial checks, quarantine, the view, each policy rule (by its id), the request's
//! concerns and filter, the upstreams that are down — so the list path pays nothing for it.
//! Allowed only to the callers the document's `explain` admits (`catalog::explain`).

use serde_json::{json, Map, Value};

use crate::catalog::explain::Access;
use crate::error::{Error, Result};
use crate::filter::chain::FilterContext;
use crate::filter::{Filter, Section};
use crate::model::Kind;
use crate::protocol::server::{Call, Server};
use crate::protocol::EXT;

/// The method's name.
pub const METHOD: &str = "sieve/explain";

/// A kind as `params.kind` names it: singular (`tool`) or as the list key (`tools`).
fn kind_named(s: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| {
        k.key() == s || k.key().strip_suffix('s') == Some(s) || (*k == Kind::ResourceTemplate && s == "template")
    })
}

/// The method an item of `kind` is used by (policy rules with `when.method` may differ on it).
fn use_method(kind: Kind) -> &'static str {
    match kind {
        Kind::Tool => "tools/call",
        Kind::Prompt => "prompts/get",
        Kind::Resource | Kind::ResourceTemplate => "resources/read",
    }
}

/// The singular word for `kind` in answers.
fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Tool => "tool",
        Kind::Prompt => "prompt",
        Kind::Resource => "resource",
        Kind::ResourceTemplate => "resourceTemplate",
    }
}

/// `params.kind` (or what the identity field given implies) and the item's identity.
fn target(params: &Value) -> Result<(Kind, &str)> {
    let kind = match params.get("kind") {
        None | Some(Value::Null) if params.get("uri").is_some() => Kind::Resource,
        None | Some(Value::Null) if params.get("uriTemplate").is_some() => Kind::ResourceTemplate,
        None | Some(Value::Null) => Kind::Tool,
        Some(Value::String(s)) => kind_named(s).ok_or_else(|| {
            Error::params(format!(
                "params.kind \"{s}\" is not a kind; expected tool, prompt, resource or resourceTemplate"
            ))
        })?,
        Some(v) => {
            return Err(Error::params(format!(
                "params.kind must be a string, got {}",
                crate::error::type_name(v)
            )))
        }
    };
    let field = kind.id_field();
    let id = crate::protocol::server::string_param(params, "params", field)?;
    Ok((kind, id))
}

/// A reason's category: what `cause` says (`policy:rule-2` → `policy`).
fn category(code: &str) -> &str {
    code.split(':').next().unwrap_or(code)
}

/// The answer being built: reasons in the order of the layers, and whether a list and a use
/// would show and accept the item.
struct Answer {
    reasons: Vec<Value>,
    visible: bool,
    callable: bool,
}

impl Answer {
    /// A reason that hides the item from lists and refuses its use.
    fn blocks(&mut self, reason: Value) {
        (self.visible, self.callable) = (false, false);
        self.reasons.push(reason);
    }

    /// A reason that only narrows lists (the caller's own filter and concerns: a use is still
    /// accepted, as SEP-1300 says).
    fn narrows(&mut self, reason: Value) {
        self.visible = false;
        self.reasons.push(reason);
    }
}

impl Server {
    /// Whether `ctx`'s caller may call `sieve/explain`.
    pub(crate) fn explain_admits(&self, ctx: &FilterContext) -> bool {
        match &self.catalog.explain {
            Access::Off => false,
            Access::Anyone => true,
            Access::Principals(globs) => ctx.admitted_by(globs),
        }
    }

    /// Advertises `sieve/explain` to a caller that may use it (never to others): under
    /// `capabilities.experimental` (2025 era) or `capabilities.extensions` (2026-07-28), as
    /// `dev.mcp-sieve/explain`.
    pub(crate) fn advertise_explain(&self, caps: &mut Value, under: &str, ctx: &FilterContext) {
        if self.explain_admits(ctx) {
            caps[under][format!("{EXT}/explain")] = json!({"method": METHOD});
        }
    }

    /// `sieve/explain`: `{"name": "tool"}` (or `"kind"` with `"name"`, `"uri"`, `"uriTemplate"`;
    /// optionally the `filter` and `concerns` a list would send) → whether this caller's list
    /// shows the item, whether a use is accepted, and every reason against it.
    pub(crate) fn explain(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        match &self.catalog.explain {
            Access::Off => {
                return Err(Error::MethodNotFound(format!(
                    "{METHOD} is off in this server's document; an operator enables it with \"explain\": {{\"principals\": [\"alice\", \"role:admin\"]}} (or true for every caller)"
                )))
            }
            _ if !self.explain_admits(&call.ctx) => {
                return Err(Error::MethodNotFound(format!(
                    "{METHOD} is not available to this caller: the document's explain.principals does not admit {}",
                    call.ctx
                        .principal
                        .as_deref()
                        .map_or("a caller without a principal".to_string(), |p| format!("\"{p}\""))
                )))
            }
            _ => {}
        }
        let (kind, id) = target(call.params)?;
        let mut answer = Answer {
            reasons: Vec::new(),
            visible: true,
            callable: true,
        };
        self.check_reasons(&call.ctx, &mut answer);
        // A quarantined tool exists (its upstream serves it), hidden as policy hides one.
        let quarantined = self.quarantine_reason(kind, id);
        let held = quarantined.is_some();
        if let Some(q) = quarantined {
            answer.blocks(q);
        }
        let section = self.catalog.section(kind);
        let found = section.find(id);
        match found {
            None => {
                answer.visible = false;
                answer.callable = false;
                self.upstream_reasons(kind, id, &mut answer);
            }
            Some(pos) => self.item_reasons(kind, section, pos, call, &mut answer, log)?,
        }
        #[cfg(feature = "operate")]
        self.limit_reasons(kind, id, &call.ctx, &mut answer);
        let mut out = Map::new();
        out.insert("kind".into(), json!(kind_word(kind)));
        out.insert(kind.id_field().into(), json!(id));
        out.insert("exists".into(), json!(found.is_some() || held));
        out.insert("visible".into(), json!(answer.visible));
        out.insert("callable".into(), json!(answer.callable));
        // Search mode lists find_tools and call_tool (and the pinned tools) instead of the rest.
        let searched = call.ctx.view.as_ref().filter(|v| v.search && kind == Kind::Tool);
        if answer.visible && searched.is_some_and(|v| !v.pinned.iter().any(|p| p == id)) {
            out.insert("via".into(), json!("find_tools"));
        }
        if !answer.visible {
            // What hid it; with no reason left, the catalog itself (the item does not exist).
            let blocking = answer
                .reasons
                .iter()
                .filter_map(|r| r["code"].as_str())
                .find(|c| !c.starts_with("audit:") && !c.starts_with("rate-limit:"));
            out.insert("cause".into(), json!(blocking.map_or("catalog", category)));
        }
        out.insert("reasons".into(), Value::Array(answer.reasons));
        Ok(Value::Object(out).to_string())
    }

    /// The rate limits a use of the item by this caller counts against (`rate-limit:<id>`, with
    /// the key of its bucket): they refuse a use only while that bucket is empty, which the
    /// shell knows, so they hide nothing here.
    #[cfg(feature = "operate")]
    fn limit_reasons(&self, kind: Kind, id: &str, ctx: &FilterContext, answer: &mut Answer) {
        let u = self.use_for(kind, id, use_method(kind), ctx);
        for t in self.catalog.limits.takes(&u) {
            answer.reasons.push(json!({
                "code": format!("rate-limit:{}", t.id),
                "key": t.key,
                "rate": t.rate,
                "windowMs": t.window_ms,
                "burst": t.burst,
                "message": "a use counts against this limit; over it, uses are refused (HTTP 429) until its bucket refills",
            }));
        }
    }

    /// Initial checks this caller fails (a session opened before a check was added, or a
    /// stateless request let through to ask why): each is `initial-check:<name>`.
    fn check_reasons(&self, ctx: &FilterContext, answer: &mut Answer) {
        for (n, check) in self.chain.checks().iter().enumerate() {
            if let Err(message) = check.check(ctx) {
                let name = check.name().unwrap_or_else(|| format!("check-{n}"));
                answer.blocks(json!({"code": format!("initial-check:{name}"), "message": message}));
            }
        }
    }

    /// A tool quarantined by pinning (`"pinning": "enforce"`, new or changed since pinned; it is
    /// then not in the catalog at all) is `{"code": "quarantine", ...}` with its digests.
    fn quarantine_reason(&self, _kind: Kind, _id: &str) -> Option<Value> {
        #[cfg(feature = "gateway")]
        if _kind == Kind::Tool {
            let q = self.catalog.pins.quarantined(_id)?;
            let why = match &q.pinned {
                Some(_) => "its definition changed since it was pinned",
                None => "it is new: no definition of it is pinned",
            };
            return Some(json!({
                "code": crate::pin::REASON,
                "message": format!("quarantined by pinning: {why}; an operator approves it with `mcp-sieve pin --approve {_id}`"),
                "change": q.change(),
                "digest": q.digest,
                "pinned": q.pinned,
            }));
        }
        None
    }

    /// An item the catalog does not hold: the upstream now down that held it when last up is
    /// `upstream-down:<name>`; failing that, those down since the start that could serve it (a
    /// tool or prompt by its prefix, the longest; a resource by any).
    fn upstream_reasons(&self, _kind: Kind, _id: &str, _answer: &mut Answer) {
        #[cfg(feature = "gateway")]
        {
            let origins = &self.catalog.origins;
            let ups = &self.catalog.upstreams;
            let down: Vec<usize> = match _kind {
                Kind::Tool | Kind::Prompt => origins.down_holder(_kind, _id, ups).into_iter().collect(),
                _ => match origins.down_uri_holder(_id) {
                    Some(i) => vec![i],
                    None => origins.never_listed().collect(),
                },
            };
            for up in down.into_iter().filter_map(|i| ups.get(i)) {
                let name = if up.name.is_empty() {
                    "upstream"
                } else {
                    up.name.as_str()
                };
                _answer.reasons.push(json!({
                    "code": format!("upstream-down:{name}"),
                    "message": format!("{} is down: its items are out of the lists until it answers again", up.label()),
                }));
            }
        }
    }

    /// The view, each policy rule (for a list and for a use), the caller's concerns and filter.
    fn item_reasons(
        &self,
        kind: Kind,
        section: &Section,
        pos: usize,
        call: &Call,
        answer: &mut Answer,
        log: &mut Vec<String>,
    ) -> Result<()> {
        let item = &section.items[pos];
        if let Some(view) = &call.ctx.view {
            if !view.visible(kind, section).get(pos) {
                answer.blocks(json!({"code": "view", "view": view.describe()}));
            }
        }
        let contexts = [kind.list_method(), use_method(kind)].map(|method| FilterContext {
            method: method.into(),
            ..call.ctx.clone()
        });
        for (n, f) in self.chain.filters().iter().enumerate() {
            if !f.applies_to(kind) {
                continue;
            }
            let mut methods = Vec::new();
            for ctx in &contexts {
                match f.test(item, ctx) {
                    Ok(true) => {}
                    Ok(false) => methods.push(ctx.method.clone()),
                    Err(e) => log.push(format!(
                        "policy filter failed on \"{}\" and was ignored: {e}",
                        item.name
                    )),
                }
            }
            if methods.is_empty() {
                continue;
            }
            let written = f.rule();
            let audit = written.as_ref().is_some_and(|r| r.audit);
            let (code, rule) = match written {
                Some(r) if r.audit => (format!("audit:{}", r.id), r.source.clone()),
                Some(r) => (format!("policy:{}", r.id), r.source.clone()),
                None => (format!("policy:chain-{n}"), Value::Null),
            };
            let mut reason = json!({"code": code, "methods": methods});
            if !rule.is_null() {
                reason["rule"] = rule;
            }
            if !audit {
                answer.visible &= !methods.iter().any(|m| m == kind.list_method());
                answer.callable &= !methods.iter().any(|m| m == use_method(kind));
            }
            answer.reasons.push(reason);
        }
        let filter = Filter::parse(call.params.get("filter").unwrap_or(&Value::Null), "params.filter")?;
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &filter, &mut warnings)?;
        log.extend(warnings);
        let concern_reasons = section.concern_reasons(pos, &concerns);
        let filter_reasons = section.filter_reasons(pos, &filter, &call.params["filter"]);
        for reason in concern_reasons.into_iter().chain(filter_reasons) {
            answer.narrows(reason);
        }
        Ok(())
    }

    /// The reason codes against a use of one item by `ctx`'s caller, blocking ones first as
    /// `sieve/explain` orders them (quarantine, `upstream-down:<name>` and `unknown` for an item
    /// the catalog lacks, the view, policy rules for the use's method): what an audit record
    /// names for a refused use. Initial checks are not asked (a caller they refuse uses nothing).
    #[cfg(feature = "operate")]
    pub(crate) fn use_reasons(&self, kind: Kind, id: &str, ctx: &FilterContext) -> Vec<String> {
        let mut codes = Vec::new();
        let code = |v: Value| v["code"].as_str().unwrap_or_default().to_string();
        if let Some(q) = self.quarantine_reason(kind, id) {
            codes.push(code(q));
        }
        let section = self.catalog.section(kind);
        let Some(pos) = section.find(id) else {
            let mut answer = Answer {
                reasons: Vec::new(),
                visible: false,
                callable: false,
            };
            self.upstream_reasons(kind, id, &mut answer);
            codes.extend(answer.reasons.into_iter().map(code));
            codes.push("unknown".into());
            return codes;
        };
        if ctx.view.as_ref().is_some_and(|v| !v.visible(kind, section).get(pos)) {
            codes.push("view".into());
        }
        let used = FilterContext {
            method: use_method(kind).into(),
            ..ctx.clone()
        };
        for (n, f) in self.chain.filters().iter().enumerate() {
            if !f.applies_to(kind) || f.test(&section.items[pos], &used) != Ok(false) {
                continue;
            }
            codes.push(match f.rule() {
                Some(r) if r.audit => format!("audit:{}", r.id),
                Some(r) => format!("policy:{}", r.id),
                None => format!("policy:chain-{n}"),
            });
        }
        codes
    }
}
