//! Declarative policy from the catalog document, compiled into the programmable chain:
//! `{"when": {...}, "hide": {<filter>}}` rules and initial-check rules.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::concern::ConcernConfig;
use crate::error::{type_name, Error, Result};
use crate::filter::chain::{Chain, FilterContext, InitialCheck, PrimitiveFilter};
use crate::filter::Section;
use crate::filter::{glob, Bits, Filter};
use crate::json::str_array;
use crate::model::{Kind, Primitive};

/// Conditions on the context; all given ones must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct When {
    client_name: Option<String>,
    protocol_version: Option<(String, String)>,
    capability: Option<String>,
    principal: Option<String>,
    method: Option<String>,
    /// Globs of which the caller must hold one role (`when.roles`).
    #[cfg(feature = "auth")]
    roles: Option<Vec<String>>,
    /// Claim (dot path) → globs, each claim must match one (`when.claims`).
    #[cfg(feature = "auth")]
    claims: Option<Vec<(String, Vec<String>)>>,
}

impl When {
    fn parse(v: &Value, path: &str) -> Result<Self> {
        let Some(obj) = v.as_object() else {
            return if v.is_null() {
                Ok(When::default())
            } else {
                Err(bad(path, "an object", v))
            };
        };
        let mut w = When::default();
        for (k, val) in obj {
            let p = format!("{path}.{k}");
            #[cfg(feature = "auth")]
            match k.as_str() {
                "roles" => {
                    w.roles = Some(globs(val, &p)?);
                    continue;
                }
                "claims" => {
                    let o = val
                        .as_object()
                        .ok_or_else(|| bad(&p, "an object of claim to glob(s)", val))?;
                    let mut list = Vec::new();
                    for (claim, g) in o {
                        list.push((claim.clone(), globs(g, &format!("{p}.{claim}"))?));
                    }
                    w.claims = Some(list);
                    continue;
                }
                _ => {}
            }
            let s = val
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(&p, "a string", val))?;
            match k.as_str() {
                "clientName" => w.client_name = Some(s),
                "protocolVersion" => w.protocol_version = Some(version_cmp(&s, &p)?),
                "capability" => w.capability = Some(s),
                "principal" => w.principal = Some(s),
                "method" => w.method = Some(s),
                other => {
                    return Err(Error::Catalog(format!(
                        "{path} has an unknown field \"{other}\"; expected clientName, protocolVersion, capability, principal, method"
                    )))
                }
            }
        }
        Ok(w)
    }

    /// Whether the context satisfies every condition.
    pub fn holds(&self, ctx: &FilterContext) -> bool {
        self.client_name
            .as_ref()
            .is_none_or(|g| glob::matches(g, ctx.client_name().unwrap_or_default()))
            && self
                .protocol_version
                .as_ref()
                .is_none_or(|(op, v)| compare(op, &ctx.protocol_version, v))
            && self.capability.as_ref().is_none_or(|c| ctx.has_capability(c))
            && self
                .principal
                .as_ref()
                .is_none_or(|g| ctx.principal.as_deref().is_some_and(|p| glob::matches(g, p)))
            && self.method.as_ref().is_none_or(|g| glob::matches(g, &ctx.method))
            && self.identity_holds(ctx)
    }

    #[cfg(not(feature = "auth"))]
    fn identity_holds(&self, _ctx: &FilterContext) -> bool {
        true
    }

    /// `when.roles` and `when.claims` against the verified token (none: they do not hold).
    #[cfg(feature = "auth")]
    fn identity_holds(&self, ctx: &FilterContext) -> bool {
        let id = ctx.identity.as_deref();
        let roles_ok = self
            .roles
            .as_ref()
            .is_none_or(|globs| id.is_some_and(|i| i.roles.iter().any(|r| globs.iter().any(|g| glob::matches(g, r)))));
        let claims_ok = self.claims.as_ref().is_none_or(|list| {
            id.is_some_and(|i| {
                list.iter().all(|(path, globs)| {
                    claim_texts(&i.claims, path)
                        .iter()
                        .any(|t| globs.iter().any(|g| glob::matches(g, t)))
                })
            })
        });
        roles_ok && claims_ok
    }

    #[cfg(feature = "auth")]
    fn about_identity(&self) -> bool {
        self.roles.is_some() || self.claims.is_some()
    }

    #[cfg(not(feature = "auth"))]
    fn about_identity(&self) -> bool {
        false
    }
}

/// A string or an array of strings (globs).
#[cfg(feature = "auth")]
fn globs(v: &Value, path: &str) -> Result<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(_) => str_array(Some(v), path).map_err(Error::in_catalog),
        _ => Err(bad(path, "a string or an array of strings", v)),
    }
}

/// The texts of a claim at a dot path: a string, a number or boolean as text, or an array's items.
#[cfg(feature = "auth")]
fn claim_texts(claims: &Map<String, Value>, path: &str) -> Vec<String> {
    let mut v = claims.get(path);
    if v.is_none() {
        let mut cur: Option<&Value> = None;
        for (i, part) in path.split('.').enumerate() {
            cur = if i == 0 {
                claims.get(part)
            } else {
                cur.and_then(|c| c.get(part))
            };
        }
        v = cur;
    }
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        _ => None,
    };
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(text).collect(),
        Some(v) => text(v).into_iter().collect(),
        None => Vec::new(),
    }
}

fn bad(path: &str, expected: &str, got: &Value) -> Error {
    Error::Catalog(format!("{path} must be {expected}, got {}", type_name(got)))
}

/// Splits `">=2025-06-18"` into the operator and the version.
fn version_cmp(s: &str, path: &str) -> Result<(String, String)> {
    let op_len = s.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
    let (op, v) = s.split_at(op_len);
    let op = if op.is_empty() { "=" } else { op.trim() };
    if !["=", ">=", "<=", ">", "<"].contains(&op) || v.len() != 10 {
        return Err(Error::Catalog(format!(
            "{path} must be a version like \">=2025-06-18\" (operators =, >=, <=, >, <); got \"{s}\""
        )));
    }
    Ok((op.to_string(), v.to_string()))
}

/// Protocol versions are dates, so they compare as strings.
fn compare(op: &str, actual: &str, wanted: &str) -> bool {
    match op {
        ">=" => actual >= wanted,
        "<=" => actual <= wanted,
        ">" => actual > wanted,
        "<" => actual < wanted,
        _ => actual == wanted,
    }
}

/// `{"when": {...}, "hide": {<filter>}, "priority": n, "kinds": ["tools"]}`, and with feature
/// `explain` an `"id"` (default `rule-<index>`) and `"mode": "audit"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    when: When,
    hide: Filter,
    hide_concerns: ConcernConfig,
    priority: i32,
    kinds: Vec<Kind>,
    parents: Arc<HashMap<String, String>>,
    /// Its id in reasons (`policy:<id>`) and audit lines.
    #[cfg(feature = "explain")]
    id: String,
    /// `"mode": "audit"`: hides nothing, logs what it would hide.
    #[cfg(feature = "explain")]
    audit: bool,
    /// The rule as written (with its id), for `sieve/explain`.
    #[cfg(feature = "explain")]
    source: Value,
}

impl PrimitiveFilter for Rule {
    fn priority(&self) -> i32 {
        self.priority
    }

    fn applies_to(&self, kind: Kind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }

    fn test(&self, item: &Primitive, ctx: &FilterContext) -> Result<bool, String> {
        let one = Section::new(vec![item.clone()], &self.parents);
        self.hidden(&one, ctx).unwrap_or(Ok(Bits::empty(1))).map(|h| !h.get(0))
    }

    #[cfg(feature = "explain")]
    fn rule(&self) -> Option<crate::filter::chain::Written<'_>> {
        Some(crate::filter::chain::Written {
            id: &self.id,
            audit: self.audit,
            source: &self.source,
        })
    }

    fn per_caller(&self) -> bool {
        let w = &self.when;
        w.client_name.is_some()
            || w.protocol_version.is_some()
            || w.capability.is_some()
            || w.principal.is_some()
            || w.about_identity()
    }

    fn hidden(&self, section: &Section, ctx: &FilterContext) -> Option<Result<Bits, String>> {
        Some(Ok(if self.when.holds(ctx) {
            // Hiding by concern hides only the items mapped to those values.
            let mut hidden = section.select(&self.hide, &ConcernConfig::new());
            if !self.hide_concerns.is_empty() {
                hidden.and(&section.mapped_to(&self.hide_concerns));
            }
            hidden
        } else {
            Bits::empty(section.items.len())
        }))
    }
}

/// An initial check written in the document.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckRule {
    /// The client must declare this capability.
    RequireCapability(String, i32),
    /// `clientInfo.name` must match one of these globs.
    AllowClients(Vec<String>, i32),
    /// The negotiated protocol version must be at least this.
    MinProtocolVersion(String, i32),
}

impl InitialCheck for CheckRule {
    #[cfg(feature = "explain")]
    fn name(&self) -> Option<String> {
        Some(
            match self {
                CheckRule::RequireCapability(..) => "requireCapability",
                CheckRule::AllowClients(..) => "allowClients",
                CheckRule::MinProtocolVersion(..) => "minProtocolVersion",
            }
            .into(),
        )
    }

    fn priority(&self) -> i32 {
        match self {
            CheckRule::RequireCapability(_, p)
            | CheckRule::AllowClients(_, p)
            | CheckRule::MinProtocolVersion(_, p) => *p,
        }
    }

    fn check(&self, ctx: &FilterContext) -> Result<(), String> {
        match self {
            CheckRule::RequireCapability(c, _) if !ctx.has_capability(c) => {
                Err(format!("this server requires the client capability \"{c}\""))
            }
            CheckRule::AllowClients(globs, _) => {
                let name = ctx.client_name().unwrap_or_default();
                if globs.iter().any(|g| glob::matches(g, name)) {
                    Ok(())
                } else {
                    // Name the check that failed, never the allow-list (it would tell a refused
                    // client which name to claim).
                    Err(format!(
                        "client \"{name}\" is not allowed by this server's allowClients check"
                    ))
                }
            }
            CheckRule::MinProtocolVersion(v, _) if ctx.protocol_version.as_str() < v.as_str() => Err(format!(
                "protocol version {} is too old; this server requires {v} or newer",
                ctx.protocol_version
            )),
            _ => Ok(()),
        }
    }
}

/// The `policy` object of the document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// Hide rules.
    pub rules: Vec<Rule>,
    /// Initial checks.
    pub checks: Vec<CheckRule>,
}

impl Policy {
    /// Parses `policy`; errors name the bad field. `parents` (group → parent) lets rules match
    /// groups transitively when asked about one item.
    pub fn parse(v: &Value, parents: &HashMap<String, String>) -> Result<Self> {
        let obj = match v {
            Value::Null => return Ok(Policy::default()),
            Value::Object(o) => o,
            other => return Err(bad("policy", "an object", other)),
        };
        let mut p = Policy::default();
        if let Some(k) = obj.keys().find(|k| !["rules", "initialChecks"].contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "policy has an unknown field \"{k}\"; expected rules, initialChecks"
            )));
        }
        let parents = Arc::new(parents.clone());
        for (i, r) in list(obj, "rules")?.iter().enumerate() {
            let rule = parse_rule(r, &format!("policy.rules[{i}]"), &parents, i)?;
            #[cfg(feature = "explain")]
            if let Some(j) = p.rules.iter().position(|x: &Rule| x.id == rule.id) {
                return Err(Error::Catalog(format!(
                    "policy.rules[{i}] has the id \"{}\" of policy.rules[{j}]; each rule's id must be unique",
                    rule.id
                )));
            }
            p.rules.push(rule);
        }
        for (i, c) in list(obj, "initialChecks")?.iter().enumerate() {
            p.checks.push(parse_check(c, &format!("policy.initialChecks[{i}]"))?);
        }
        Ok(p)
    }

    /// The chain holding these rules and checks.
    pub fn chain(&self) -> Chain {
        let mut c = Chain::default();
        self.rules.iter().for_each(|r| c.add_filter(Arc::new(r.clone())));
        self.checks.iter().for_each(|k| c.add_check(Arc::new(k.clone())));
        c
    }
}

fn list<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a [Value]> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(bad(&format!("policy.{key}"), "an array", v)),
    }
}

fn priority(obj: &Map<String, Value>, path: &str) -> Result<i32> {
    match obj.get("priority") {
        None => Ok(0),
        Some(v) => v
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| bad(&format!("{path}.priority"), "an integer", v)),
    }
}

fn known_keys(obj: &Map<String, Value>, path: &str, keys: &[&str]) -> Result<()> {
    match obj.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(Error::Catalog(format!(
            "{path} has an unknown field \"{k}\"; expected: {}",
            keys.join(", ")
        ))),
        None => Ok(()),
    }
}

/// The rule's `id` (default `rule-<index>`) and whether `mode` is `"audit"` (else `"enforce"`).
#[cfg(feature = "explain")]
fn id_and_mode(obj: &Map<String, Value>, path: &str, index: usize) -> Result<(String, bool)> {
    let id = match obj.get("id") {
        None => format!("rule-{index}"),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= crate::filter::MAX_STRING => s.clone(),
        Some(v) => return Err(bad(&format!("{path}.id"), "a non-empty string of at most 256 bytes", v)),
    };
    let audit = match obj.get("mode").map(|m| (m, m.as_str())) {
        None | Some((_, Some("enforce"))) => false,
        Some((_, Some("audit"))) => true,
        Some((m, _)) => {
            return Err(Error::Catalog(format!(
                "{path}.mode must be \"enforce\" (the default) or \"audit\" (hide nothing, log what it would hide); got {m}"
            )))
        }
    };
    Ok((id, audit))
}

#[cfg(feature = "explain")]
const RULE_KEYS: &[&str] = &["id", "mode", "when", "hide", "priority", "kinds"];
#[cfg(not(feature = "explain"))]
const RULE_KEYS: &[&str] = &["when", "hide", "priority", "kinds"];

fn parse_rule(v: &Value, path: &str, parents: &Arc<HashMap<String, String>>, _index: usize) -> Result<Rule> {
    let obj = v.as_object().ok_or_else(|| bad(path, "an object", v))?;
    known_keys(obj, path, RULE_KEYS)?;
    #[cfg(feature = "explain")]
    let (id, audit) = id_and_mode(obj, path, _index)?;
    let when = When::parse(obj.get("when").unwrap_or(&Value::Null), &format!("{path}.when"))?;
    let hide_v = obj
        .get("hide")
        .ok_or_else(|| Error::Catalog(format!("{path}.hide is required (a filter object)")))?;
    let hide = Filter::parse(hide_v, &format!("{path}.hide")).map_err(Error::in_catalog)?;
    let mut hide_concerns = ConcernConfig::new();
    if let Some(c) = hide.concerns.as_ref().and_then(Value::as_object) {
        for (k, x) in c {
            let t = crate::json::scalar_text(x)
                .ok_or_else(|| bad(&format!("{path}.hide.concerns.{k}"), "a string or number", x))?;
            hide_concerns.insert(k.clone(), t);
        }
    }
    let kinds = str_array(obj.get("kinds"), &format!("{path}.kinds"))
        .map_err(Error::in_catalog)?
        .iter()
        .map(|k| {
            Kind::ALL.into_iter().find(|x| x.key() == k).ok_or_else(|| {
                Error::Catalog(format!(
                    "{path}.kinds: unknown kind \"{k}\"; expected tools, resources, resourceTemplates, prompts"
                ))
            })
        })
        .collect::<Result<_>>()?;
    Ok(Rule {
        when,
        hide,
        hide_concerns,
        priority: priority(obj, path)?,
        kinds,
        parents: parents.clone(),
        #[cfg(feature = "explain")]
        source: {
            let mut o = obj.clone();
            o.insert("id".into(), Value::String(id.clone()));
            Value::Object(o)
        },
        #[cfg(feature = "explain")]
        id,
        #[cfg(feature = "explain")]
        audit,
    })
}

fn parse_check(v: &Value, path: &str) -> Result<CheckRule> {
    let obj = v.as_object().ok_or_else(|| bad(path, "an object", v))?;
    let prio = priority(obj, path)?;
    if obj.len() != 1 + usize::from(obj.contains_key("priority")) {
        return Err(Error::Catalog(format!(
            "{path} must have one of requireCapability, allowClients, minProtocolVersion (exactly one, and optionally priority)"
        )));
    }
    let string = |k: &str| {
        obj.get(k).map(|x| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("{path}.{k}"), "a string", x))
        })
    };
    if let Some(c) = string("requireCapability") {
        return Ok(CheckRule::RequireCapability(c?, prio));
    }
    if let Some(v) = string("minProtocolVersion") {
        let (_, v) = version_cmp(&v?, &format!("{path}.minProtocolVersion"))?;
        return Ok(CheckRule::MinProtocolVersion(v, prio));
    }
    if obj.contains_key("allowClients") {
        let globs = str_array(obj.get("allowClients"), &format!("{path}.allowClients")).map_err(Error::in_catalog)?;
        return Ok(CheckRule::AllowClients(globs, prio));
    }
    Err(Error::Catalog(format!(
        "{path} must have one of: requireCapability, allowClients, minProtocolVersion"
    )))
}
