//! Concerns: declarations, the host's configuration (validated, merged), and what `concerns/list`
//! reports. Filtering by concerns lives in the filter index; this module decides the configuration.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::json::{canonical_number, opt_str, req_str, scalar_text};

/// A host's concern configuration: concern name → value (canonical text).
pub type ConcernConfig = BTreeMap<String, String>;

/// The values a concern may take.
#[derive(Debug, Clone, PartialEq)]
pub enum ConcernValues {
    /// An ordered list of names (order matters for `clamp`).
    Enum(Vec<String>),
    /// A numeric range, inclusive.
    Range {
        /// Lowest valid value.
        min: f64,
        /// Highest valid value.
        max: f64,
    },
}

/// A concern the server declares.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcernDecl {
    /// Unique name, e.g. `security`.
    pub name: String,
    /// Valid values.
    pub values: ConcernValues,
    /// The declared default, canonical text.
    pub default: Option<String>,
    /// The declaration as it came, for `initialize` and `concerns/list`.
    pub json: Map<String, Value>,
}

/// What the server does with a configured value outside the declared values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InvalidValuePolicy {
    /// Answer `-32602` listing the valid values.
    #[default]
    Reject,
    /// Drop that entry (with a warning).
    Ignore,
    /// Use the nearest valid value (numeric ranges; ordered values by position).
    Clamp,
}

impl InvalidValuePolicy {
    /// Parses `reject` | `ignore` | `clamp`.
    pub fn parse(s: &str, path: &str) -> Result<Self> {
        match s {
            "reject" => Ok(Self::Reject),
            "ignore" => Ok(Self::Ignore),
            "clamp" => Ok(Self::Clamp),
            other => Err(Error::params(format!(
                "{path} must be one of \"reject\", \"ignore\", \"clamp\"; got \"{other}\""
            ))),
        }
    }
}

impl ConcernDecl {
    /// Reads a declaration; `path` names it in errors.
    pub fn from_json(v: &Value, path: &str) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| Error::Catalog(format!("{path} must be an object, got {}", type_name(v))))?;
        let name = req_str(obj, "name", path).map_err(Error::in_catalog)?;
        opt_str(obj, "description", path).map_err(Error::in_catalog)?;
        let values = match obj.get("values") {
            Some(Value::Array(a)) if !a.is_empty() => ConcernValues::Enum(
                a.iter()
                    .enumerate()
                    .map(|(i, x)| {
                        scalar_text(x)
                            .ok_or_else(|| Error::Catalog(format!("{path}.values[{i}] must be a string or number")))
                    })
                    .collect::<Result<_>>()?,
            ),
            Some(Value::Object(r)) => {
                let num = |k: &str| {
                    r.get(k).and_then(Value::as_f64).ok_or_else(|| {
                        Error::Catalog(format!(
                            "{path}.values.{k} must be a number (a range is {{\"min\": n, \"max\": n}})"
                        ))
                    })
                };
                let (min, max) = (num("min")?, num("max")?);
                if min > max {
                    return Err(Error::Catalog(format!("{path}.values.min must not exceed values.max")));
                }
                ConcernValues::Range { min, max }
            }
            _ => {
                return Err(Error::Catalog(format!(
                    "{path}.values must be a non-empty array of values or a range {{\"min\": n, \"max\": n}}"
                )))
            }
        };
        let mut decl = ConcernDecl {
            name,
            values,
            default: None,
            json: obj.clone(),
        };
        if let Some(d) = obj.get("default").filter(|d| !d.is_null()) {
            let text = decl
                .check(d)
                .ok_or_else(|| Error::Catalog(format!("{path}.default must be one of the declared values")))?;
            decl.default = Some(text);
        }
        Ok(decl)
    }

    /// The canonical text of `v` if it is a valid value of this concern.
    pub fn check(&self, v: &Value) -> Option<String> {
        match &self.values {
            ConcernValues::Enum(vals) => {
                let t = scalar_text(v)?;
                vals.contains(&t).then_some(t)
            }
            ConcernValues::Range { min, max } => {
                let n = number(v)?;
                (n >= *min && n <= *max).then(|| canonical_number(n))
            }
        }
    }

    /// The nearest valid value to `v` (for the `clamp` policy).
    pub fn clamp(&self, v: &Value) -> Option<String> {
        match &self.values {
            ConcernValues::Range { min, max } => number(v).map(|n| canonical_number(clamp(n, *min, *max))),
            // Ordered values: numeric ones clamp to the nearest value; for named ones a number is a
            // position in the declared order; anything else is too far from every value to pick
            // one, so the declared default stands in.
            ConcernValues::Enum(vals) => {
                let nums: Option<Vec<f64>> = vals.iter().map(|x| number_text(x)).collect();
                match (number(v), nums) {
                    (Some(n), Some(nums)) => nums
                        .iter()
                        .zip(vals)
                        .min_by(|a, b| (a.0 - n).abs().total_cmp(&(b.0 - n).abs()))
                        .map(|(_, s)| s.clone()),
                    (Some(n), None) => vals
                        .get(clamp(n.round(), 0.0, (vals.len() - 1) as f64) as usize)
                        .cloned(),
                    (None, _) => self.default.clone().or_else(|| vals.first().cloned()),
                }
            }
        }
    }

    fn describe_values(&self) -> Value {
        match &self.values {
            ConcernValues::Enum(v) => json!(v),
            ConcernValues::Range { min, max } => json!({"min": min, "max": max}),
        }
    }
}

/// A number written in JSON syntax. Parsed by serde_json rather than `str::parse::<f64>`, whose
/// tables would add about 14 KB gzipped to the browser package.
fn number_text(s: &str) -> Option<f64> {
    s.parse::<serde_json::Number>().ok()?.as_f64()
}

/// `n` limited to `min..=max`. Not `f64::clamp`: its NaN/order assertion formats floats with
/// `Debug`, which alone kept about 10 KB gzipped of float formatting in the browser package.
fn clamp(n: f64, min: f64, max: f64) -> f64 {
    n.max(min).min(max)
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => number_text(s.trim()),
        _ => None,
    }
}

/// The server's declared concerns and its policies for configuring them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Concerns {
    /// Declarations, in document order.
    pub decls: Vec<ConcernDecl>,
    /// What to do with a value outside the declared set.
    pub invalid_value: InvalidValuePolicy,
    /// Fill unconfigured concerns with their defaults once the host configured any.
    pub apply_defaults: bool,
}

/// A validated configuration plus warnings about entries that were ignored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resolved {
    /// The valid entries.
    pub config: ConcernConfig,
    /// Human-readable warnings (undeclared concerns, ignored or clamped values).
    pub warnings: Vec<String>,
}

impl Concerns {
    /// The declaration of `name`.
    pub fn get(&self, name: &str) -> Option<&ConcernDecl> {
        self.decls.iter().find(|d| d.name == name)
    }

    /// Validates a host configuration object (`{"security": "high"}`) found at `path`.
    /// A `null` value removes that concern from the configuration it is merged into.
    pub fn resolve(&self, raw: &Value, path: &str) -> Result<(Resolved, Vec<String>)> {
        self.resolve_with(raw, path, false)
    }

    /// Like [`Concerns::resolve`] for a configuration that cannot be refused
    /// (`notifications/initialized` has no response): the valid entries apply, an invalid one is
    /// dropped with a warning whatever `invalidConcernValue` says (never the whole configuration,
    /// which would fail open).
    pub fn resolve_lenient(&self, raw: &Value, path: &str) -> (Resolved, Vec<String>) {
        match self.resolve_with(raw, path, true) {
            Ok(r) => r,
            // Only a configuration that is not an object gets here.
            Err(e) => (
                Resolved {
                    warnings: vec![format!("{e}; ignored")],
                    ..Resolved::default()
                },
                Vec::new(),
            ),
        }
    }

    fn resolve_with(&self, raw: &Value, path: &str, lenient: bool) -> Result<(Resolved, Vec<String>)> {
        let obj = raw.as_object().ok_or_else(|| {
            Error::params(format!(
                "{path} must be an object mapping concern names to values, got {}",
                type_name(raw)
            ))
        })?;
        let mut out = Resolved::default();
        let mut removed = Vec::new();
        for (name, v) in obj {
            let Some(decl) = self.get(name) else {
                out.warnings.push(format!(
                    "{path}.{name}: the server declares no concern \"{name}\"; ignored"
                ));
                continue;
            };
            if v.is_null() {
                removed.push(name.clone());
                continue;
            }
            match decl.check(v) {
                Some(text) => {
                    out.config.insert(name.clone(), text);
                }
                None => match self.invalid_value {
                    InvalidValuePolicy::Reject if lenient => out.warnings.push(format!(
                        "{path}.{name}: value {v} is not valid ({}); dropped",
                        expected(decl)
                    )),
                    InvalidValuePolicy::Reject => {
                        return Err(Error::params_with(
                            format!(
                                "invalid value {v} for concern \"{name}\" at {path}.{name}; expected {}",
                                expected(decl)
                            ),
                            json!({"concern": name, "value": v, "validValues": decl.describe_values()}),
                        ))
                    }
                    InvalidValuePolicy::Ignore => out.warnings.push(format!(
                        "{path}.{name}: value {v} is not valid ({}); ignored",
                        expected(decl)
                    )),
                    InvalidValuePolicy::Clamp => match decl.clamp(v) {
                        Some(c) => {
                            out.warnings
                                .push(format!("{path}.{name}: value {v} clamped to \"{c}\""));
                            out.config.insert(name.clone(), c);
                        }
                        None => out
                            .warnings
                            .push(format!("{path}.{name}: value {v} cannot be clamped; ignored")),
                    },
                },
            }
        }
        Ok((out, removed))
    }

    /// Merges a validated update into an existing configuration.
    pub fn merge(current: &mut ConcernConfig, update: &Resolved, removed: &[String]) {
        for name in removed {
            current.remove(name);
        }
        current.extend(update.config.iter().map(|(k, v)| (k.clone(), v.clone())));
    }

    /// The configuration filtering uses: the configured values, plus declared defaults for the
    /// rest when `applyDefaults` is on and the host configured anything.
    pub fn effective(&self, configured: &ConcernConfig) -> ConcernConfig {
        let mut eff = configured.clone();
        if self.apply_defaults && !configured.is_empty() {
            for d in &self.decls {
                if let Some(def) = &d.default {
                    eff.entry(d.name.clone()).or_insert_with(|| def.clone());
                }
            }
        }
        eff
    }

    /// The declarations as sent in `initialize` capabilities.
    pub fn declarations_json(&self) -> Value {
        Value::Array(self.decls.iter().map(|d| Value::Object(d.json.clone())).collect())
    }

    /// The `concerns/list` result: declarations with the session's configured and effective values.
    pub fn list_json(&self, configured: &ConcernConfig) -> Value {
        let eff = self.effective(configured);
        let concerns: Vec<Value> = self
            .decls
            .iter()
            .map(|d| {
                let mut o = d.json.clone();
                o.insert(
                    "configured".into(),
                    configured.get(&d.name).map_or(Value::Null, |v| json!(v)),
                );
                o.insert("effective".into(), eff.get(&d.name).map_or(Value::Null, |v| json!(v)));
                Value::Object(o)
            })
            .collect();
        json!({"concerns": concerns, "configuration": eff, "applyDefaults": self.apply_defaults})
    }
}

fn expected(d: &ConcernDecl) -> String {
    match &d.values {
        ConcernValues::Enum(v) => format!("one of: {}", v.join(", ")),
        ConcernValues::Range { min, max } => {
            format!("a number from {} to {}", canonical_number(*min), canonical_number(*max))
        }
    }
}
