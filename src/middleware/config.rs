//! The catalog document's `middleware` object: which built-ins are enabled (none by default),
//! who may use them, and their settings. Validated at catalog load with errors naming the field.
//!
//! ```json
//! "middleware": {
//!   "enabled": ["pii_redaction", "pii_restoration", "content_moderation", "timestamp_injector", "tool_filter"],
//!   "allowClients": ["internal-*"], "allowPrincipals": ["svc-*"],
//!   "pii": {"names": ["Jane Smith"]},
//!   "moderation": {"policies": [{"name": "fraud", "severity": "high", "terms": ["wire the money"], "patterns": ["fake * invoice"]}]}
//! }
//! ```

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};
use crate::filter::chain::FilterContext;
use crate::filter::glob;
use crate::json::catalog_strings;
use crate::middleware::moderation::Policy;
use crate::middleware::Builtin;

/// Parsed `middleware` configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Enabled built-ins in listing order; empty means the capability is off.
    pub enabled: Vec<Builtin>,
    /// Globs on `clientInfo.name`; `None` allows every client.
    pub allow_clients: Option<Vec<String>>,
    /// Globs on the authenticated principal; `None` allows any (or none).
    pub allow_principals: Option<Vec<String>>,
    /// Names `pii_redaction` always redacts (as `PERSON`).
    pub names: Vec<String>,
    /// Extra `content_moderation` policies (a policy named like a built-in one replaces it).
    pub policies: Vec<Policy>,
}

fn catalog_err(msg: String) -> Error {
    Error::Catalog(msg)
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| catalog_err(format!("{path} must be an object, got {}", type_name(v))))
}

fn only(obj: &Map<String, Value>, path: &str, known: &[&str]) -> Result<()> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(catalog_err(format!(
            "{path} has an unknown field \"{k}\"; expected one of: {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

impl Config {
    /// Parses the `middleware` object (null or absent: everything off).
    pub fn parse(v: &Value) -> Result<Config> {
        let mut c = Config::default();
        if v.is_null() {
            return Ok(c);
        }
        let obj = object(v, "middleware")?;
        only(
            obj,
            "middleware",
            &["enabled", "allowClients", "allowPrincipals", "pii", "moderation"],
        )?;
        if let Some(e) = obj.get("enabled") {
            for (i, name) in catalog_strings(e, "middleware.enabled")?.iter().enumerate() {
                let b = Builtin::from_name(name).ok_or_else(|| {
                    let all: Vec<&str> = Builtin::ALL.iter().map(|b| b.name()).collect();
                    catalog_err(format!(
                        "middleware.enabled[{i}] is \"{name}\", which is not a middleware; expected one of: {}",
                        all.join(", ")
                    ))
                })?;
                if !c.enabled.contains(&b) {
                    c.enabled.push(b);
                }
            }
        }
        if let Some(a) = obj.get("allowClients") {
            c.allow_clients = Some(catalog_strings(a, "middleware.allowClients")?);
        }
        if let Some(a) = obj.get("allowPrincipals") {
            c.allow_principals = Some(catalog_strings(a, "middleware.allowPrincipals")?);
        }
        if let Some(p) = obj.get("pii") {
            let p = object(p, "middleware.pii")?;
            only(p, "middleware.pii", &["names"])?;
            if let Some(n) = p.get("names") {
                c.names = catalog_strings(n, "middleware.pii.names")?;
                if let Some(i) = c.names.iter().position(|n| n.trim().is_empty()) {
                    return Err(catalog_err(format!("middleware.pii.names[{i}] must not be empty")));
                }
            }
        }
        if let Some(m) = obj.get("moderation") {
            let m = object(m, "middleware.moderation")?;
            only(m, "middleware.moderation", &["policies"])?;
            if let Some(ps) = m.get("policies") {
                let arr = ps.as_array().ok_or_else(|| {
                    catalog_err(format!(
                        "middleware.moderation.policies must be an array of policy objects, got {}",
                        type_name(ps)
                    ))
                })?;
                for (i, p) in arr.iter().enumerate() {
                    c.policies
                        .push(Policy::from_json(p, &format!("middleware.moderation.policies[{i}]"))?);
                }
            }
        }
        Ok(c)
    }

    /// Whether the context (client name, principal) may use middleware at all.
    pub fn allows(&self, ctx: &FilterContext) -> bool {
        let client_ok = self.allow_clients.as_ref().is_none_or(|globs| {
            let name = ctx.client_name().unwrap_or_default();
            globs.iter().any(|g| glob::matches(g, name))
        });
        let principal_ok = self
            .allow_principals
            .as_ref()
            .is_none_or(|globs| ctx.admitted_by(globs));
        client_ok && principal_ok
    }
}
