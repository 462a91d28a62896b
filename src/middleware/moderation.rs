//! `content_moderation`: policies of terms and word patterns with severities. Text is split into
//! lowercase words; a term is a literal word sequence, a pattern is a word sequence where `*`
//! alone stands for one to three words and `*`/`?` inside a word are globs (`threat*`).

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::filter::glob;
use crate::json::catalog_strings;
use crate::middleware::content;
use crate::middleware::fold;
use crate::middleware::schema::parse_static;

/// How bad a match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth noting.
    Low,
    /// Probably unwanted.
    Medium,
    /// Should not reach a model.
    High,
}

impl Severity {
    fn parse(s: &str) -> Option<Severity> {
        match s {
            "low" => Some(Severity::Low),
            "medium" => Some(Severity::Medium),
            "high" => Some(Severity::High),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

/// One moderation policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Its name (also the flag it raises).
    pub name: String,
    /// Severity of a match.
    pub severity: Severity,
    /// Literal word sequences.
    pub terms: Vec<Vec<String>>,
    /// Word patterns.
    pub patterns: Vec<Vec<String>>,
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '*' || c == '?'))
        .filter(|w| !w.is_empty())
        .map(fold::lower)
        .collect()
}

fn text_words(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .map(fold::lower)
        .collect()
}

impl Policy {
    /// Reads `{"name", "severity", "terms", "patterns"}`; `path` names it in errors.
    pub fn from_json(v: &Value, path: &str) -> Result<Policy> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::Catalog(format!("{path} must be an object, got {}", type_name(v))))?;
        if let Some(k) = o
            .keys()
            .find(|k| !["name", "severity", "terms", "patterns"].contains(&k.as_str()))
        {
            return Err(Error::Catalog(format!(
                "{path} has an unknown field \"{k}\"; expected name, severity, terms, patterns"
            )));
        }
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Error::Catalog(format!("{path}.name is required (a non-empty string)")))?;
        let severity = match o.get("severity") {
            None => Severity::Medium,
            Some(s) => s.as_str().and_then(Severity::parse).ok_or_else(|| {
                Error::Catalog(format!(
                    "{path}.severity must be \"low\", \"medium\" or \"high\", got {s}"
                ))
            })?,
        };
        let list = |key: &str| -> Result<Vec<Vec<String>>> {
            let raw = match o.get(key) {
                Some(v) => catalog_strings(v, &format!("{path}.{key}"))?,
                None => Vec::new(),
            };
            raw.iter()
                .enumerate()
                .map(|(i, s)| {
                    let w = words(s);
                    if w.is_empty() {
                        Err(Error::Catalog(format!("{path}.{key}[{i}] has no words")))
                    } else {
                        Ok(w)
                    }
                })
                .collect()
        };
        let (terms, patterns) = (list("terms")?, list("patterns")?);
        if terms.is_empty() && patterns.is_empty() {
            return Err(Error::Catalog(format!(
                "{path} needs at least one of terms or patterns"
            )));
        }
        Ok(Policy {
            name: name.into(),
            severity,
            terms,
            patterns,
        })
    }
}

/// The built-in policies.
pub fn builtin_policies() -> Vec<Policy> {
    let p = |name: &str, severity, terms: &[&str], patterns: &[&str]| Policy {
        name: name.into(),
        severity,
        terms: terms.iter().map(|t| words(t)).collect(),
        patterns: patterns.iter().map(|t| words(t)).collect(),
    };
    vec![
        p(
            "violence",
            Severity::High,
            &[
                "murder",
                "kill someone",
                "kill him",
                "kill her",
                "kill them",
                "shoot someone",
                "stab someone",
                "make a bomb",
                "build a bomb",
                "pipe bomb",
            ],
            &["how to kill *", "how do i kill *", "poison *"],
        ),
        p(
            "self_harm",
            Severity::High,
            &[
                "kill myself",
                "suicide",
                "self harm",
                "self-harm",
                "hurt myself",
                "end my life",
                "cut myself",
            ],
            &[],
        ),
        p(
            "harassment",
            Severity::Medium,
            &["bully", "harass", "humiliate", "dox", "stalk", "threaten"],
            &["hurt * feelings", "make * cry", "harass*", "humiliat*", "threat* to"],
        ),
        p(
            "potential_harm_seeking",
            Severity::Medium,
            &[],
            &[
                "how can i hurt *",
                "how do i hurt *",
                "how to hurt *",
                "ways to hurt *",
                "how can i harm *",
                "how to harm *",
            ],
        ),
        p(
            "weapons",
            Severity::High,
            &["ghost gun", "untraceable gun", "3d printed gun", "silencer"],
            &["buy * without * background check"],
        ),
        p(
            "prompt_injection",
            Severity::Medium,
            &[
                "ignore previous instructions",
                "ignore all previous instructions",
                "disregard your instructions",
                "reveal your system prompt",
            ],
            &[
                "ignore * previous instructions",
                "disregard * instructions",
                "you are now *",
            ],
        ),
    ]
}

fn matches_at(pattern: &[String], words: &[String], literal: bool) -> Option<usize> {
    let Some((first, rest)) = pattern.split_first() else {
        return Some(0);
    };
    if !literal && first == "*" {
        return (1..=3)
            .filter(|&n| n <= words.len())
            .find_map(|n| matches_at(rest, &words[n..], literal).map(|m| m + n));
    }
    let w = words.first()?;
    let ok = if literal || !first.contains(['*', '?']) {
        w == first
    } else {
        glob::matches(first, w)
    };
    if ok {
        matches_at(rest, &words[1..], literal).map(|m| m + 1)
    } else {
        None
    }
}

/// The wire name.
pub const NAME: &str = "content_moderation";
/// What it does, as `middleware/list` shows it.
pub const DESCRIPTION: &str = "Check the context against policies of terms and patterns; metadata.flags, severity and allow, and a warning prefix when flagged";

/// `inputSchema` of `content_moderation`.
pub fn schema() -> Value {
    parse_static(
        r#"{"type": "object", "properties": {
            "policies": {"type": "array", "maxItems": 64, "items": {"type": "string", "maxLength": 128},
                "description": "policy names to apply (default: all); built-in: violence, self_harm, harassment, potential_harm_seeking, weapons, prompt_injection, plus configured ones"},
            "blockAt": {"type": "string", "enum": ["low", "medium", "high"], "default": "high",
                "description": "allow is false when the highest severity found is at least this"},
            "warn": {"type": "boolean", "default": true, "description": "prefix a warning to the content when flagged"}
        }, "additionalProperties": false}"#,
    )
}

/// Runs `content_moderation` (arguments already validated) with the built-in policies and the
/// configured ones (`middleware.moderation.policies`).
pub fn invoke(configured: &[Policy], args: &Map<String, Value>, mut context: Vec<Value>) -> Result<Value> {
    let mut all = builtin_policies();
    for p in configured {
        all.retain(|b| b.name != p.name);
        all.push(p.clone());
    }
    let selected: Vec<&Policy> = match args.get("policies").and_then(Value::as_array) {
        None => all.iter().collect(),
        Some(names) => {
            let mut out = Vec::new();
            for (i, n) in names.iter().enumerate() {
                let n = n.as_str().unwrap_or_default();
                let p = all.iter().find(|p| p.name == n).ok_or_else(|| {
                    let known: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
                    Error::params(format!(
                        "params.arguments.policies[{i}] is \"{n}\", which is not a policy; expected one of: {}",
                        known.join(", ")
                    ))
                })?;
                // The same policy twice is checked once.
                if !out.iter().any(|q: &&Policy| q.name == p.name) {
                    out.push(p);
                }
            }
            out
        }
    };
    let mut words = Vec::new();
    content::for_each_text(&context, &mut |t| {
        words.extend(text_words(t));
        words.push(String::new()); // no match across texts
    });
    let mut flags: Vec<&str> = Vec::new();
    let mut found = Vec::new();
    let mut worst: Option<Severity> = None;
    for p in selected {
        let lists = [(&p.terms, true), (&p.patterns, false)];
        for (list, literal) in lists {
            for pat in list.iter() {
                if let Some((i, n)) =
                    (0..words.len()).find_map(|i| matches_at(pat, &words[i..], literal).map(|n| (i, n)))
                {
                    if !flags.contains(&p.name.as_str()) {
                        flags.push(&p.name);
                    }
                    found.push(
                        json!({"policy": p.name, "severity": p.severity.name(), "match": words[i..i + n].join(" ")}),
                    );
                    worst = worst.max(Some(p.severity));
                }
            }
        }
    }
    let block_at = args
        .get("blockAt")
        .and_then(Value::as_str)
        .and_then(Severity::parse)
        .unwrap_or(Severity::High);
    let allow = worst.is_none_or(|w| w < block_at);
    if let Some(w) = worst {
        if args.get("warn").and_then(Value::as_bool).unwrap_or(true) {
            let verdict = if allow { "flagged" } else { "blocked" };
            let prefix = format!(
                "[MODERATION WARNING: {verdict} for {} ({})]\n\n",
                flags.join(", "),
                w.name()
            );
            content::prepend(&mut context, &prefix);
        }
    }
    Ok(json!({
        "content": context,
        "metadata": {
            "flags": flags,
            "severity": worst.map_or("none", Severity::name),
            "allow": allow,
            "matches": found,
        }
    }))
}
