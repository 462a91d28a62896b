//! The audit trail: one record per use (a tool call, a prompt get, a resource read, a task
//! created) as one line of JSON, built here from the use, the decision and the outcome; the
//! shells write it (a rotated JSON-lines file or stdout natively, Workers Logs in the Worker).
//! Arguments and results only when the document opts in (`"audit": {"payloads": true}`), and
//! then through the PII redaction built-in, each cut at `maxPayloadBytes` (16 KiB by default) and
//! marked so. Also the filter `mcp-sieve audit` reads with.

use std::fmt::Write;

use serde_json::{json, Map, Value};

use super::usage::Use;
use crate::error::{type_name, Error, Result};
use crate::middleware::detect::Options;
use crate::middleware::pii_redaction::Redactor;

/// The document's `audit`: where records go and what they hold. Absent: no audit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Audit {
    /// Whether the document asks for an audit trail at all.
    pub on: bool,
    /// A JSON-lines file (relative paths: beside the document), rotated by size.
    pub file: Option<String>,
    /// Records to stdout (not for `mcp-sieve stdio`, whose stdout is the protocol).
    pub stdout: bool,
    /// Size at which the file is rotated (`audit.jsonl` → `audit.jsonl.1` …).
    pub max_bytes: u64,
    /// Rotated files kept.
    pub keep: u32,
    /// Arguments and results in records (PII-redacted).
    pub payloads: bool,
    /// The most bytes of JSON text an argument's or a result's payload takes in a record: a
    /// larger one is cut there and marked ([`record`]), whatever the body limit lets in.
    pub max_payload_bytes: usize,
}

/// Default rotation size: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Default rotated files kept.
pub const DEFAULT_KEEP: u32 = 5;
/// Default cap of one payload (the arguments, the result) in a record: 16 KiB of JSON text.
pub const DEFAULT_MAX_PAYLOAD_BYTES: u64 = 16 * 1024;

impl Audit {
    /// Parses the document's `audit` (`null` or absent: off).
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        let obj = match v {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(Audit::default()),
            Some(Value::Object(o)) => o,
            Some(v) => return Err(bad("audit", "an object like {\"file\": \"audit.jsonl\"}", v)),
        };
        const KEYS: [&str; 6] = ["file", "stdout", "maxBytes", "keep", "payloads", "maxPayloadBytes"];
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "audit has an unknown field \"{k}\"; expected: {}",
                KEYS.join(", ")
            )));
        }
        let flag = |k: &str| match obj.get(k) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(bad(&format!("audit.{k}"), "true or false", v)),
        };
        let number = |k: &str, min: u64, default: u64| match obj.get(k) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| *n >= min)
                .ok_or_else(|| bad(&format!("audit.{k}"), &format!("an integer of at least {min}"), v)),
        };
        let file = match obj.get("file") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(v) => return Err(bad("audit.file", "a file path", v)),
        };
        let stdout = flag("stdout")?;
        if file.is_some() && stdout {
            return Err(Error::Catalog(
                "audit gives both file and stdout; choose one sink (\"file\": \"audit.jsonl\" or \"stdout\": true)"
                    .into(),
            ));
        }
        Ok(Audit {
            on: true,
            file,
            stdout,
            max_bytes: number("maxBytes", 1024, DEFAULT_MAX_BYTES)?,
            keep: u32::try_from(number("keep", 0, u64::from(DEFAULT_KEEP))?.min(1000)).unwrap_or(DEFAULT_KEEP),
            payloads: flag("payloads")?,
            max_payload_bytes: usize::try_from(number("maxPayloadBytes", 256, DEFAULT_MAX_PAYLOAD_BYTES)?)
                .unwrap_or(usize::MAX),
        })
    }

    /// What [`record`] takes as its `payloads`: the cap of each payload, when records hold them.
    pub fn payload_cap(&self) -> Option<usize> {
        self.payloads.then_some(self.max_payload_bytes)
    }
}

/// How a use ended, as its answer says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ended {
    /// The JSON-RPC error code, if the answer is an error.
    pub error_code: Option<i32>,
    /// A tool result with `isError: true`.
    pub tool_error: bool,
    /// The result (for payloads).
    pub result: Option<Value>,
    /// No answer was seen (a stream still open, an upstream that never answered).
    pub unknown: bool,
}

impl Ended {
    /// An answer not seen (a stream, a call its client cancelled).
    pub fn unknown() -> Self {
        Ended {
            unknown: true,
            ..Ended::default()
        }
    }

    /// How the answer `body` ended: JSON, or the last response in an SSE stream.
    pub fn of_body(body: &str) -> Self {
        let parsed = match serde_json::from_str::<Value>(body) {
            Ok(v) => Some(v),
            Err(_) => body
                .lines()
                .rev()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("result").is_some() || m.get("error").is_some()),
        };
        match parsed {
            Some(m) => Ended {
                error_code: m["error"]["code"].as_i64().and_then(|c| i32::try_from(c).ok()),
                tool_error: m["result"]["isError"] == Value::Bool(true),
                result: m.get("result").cloned(),
                unknown: false,
            },
            None => Ended::unknown(),
        }
    }

    /// `ok`, `error` (a JSON-RPC error), `tool-error` (a result with `isError`) or `unknown`.
    pub fn outcome(&self) -> &'static str {
        match self {
            Ended { unknown: true, .. } => "unknown",
            Ended {
                error_code: Some(_), ..
            } => "error",
            Ended { tool_error: true, .. } => "tool-error",
            _ => "ok",
        }
    }
}

/// The audit record's `via` of a call a code-mode program made (with the run's id as `run`).
pub const VIA_RUN_CODE: &str = "run_code";

/// One audit record as a line of JSON (no newline). `refused`: the reason code of a refusal
/// (`policy:<id>`, `view`, `rate-limit:<id>`, `upstream-down:<name>`, `unknown`,
/// `invalid-request`, `header-mismatch`, … as [`crate::protocol::Server::refusal_for`] names
/// them), `None` when the use was allowed; `payloads`: arguments and result, PII-redacted, each
/// cut at this many bytes of JSON text and marked (`argumentsTruncated`, `argumentsBytes`). Every
/// control character — C0, DEL and C1 (U+0080–U+009F) — is escaped (`\u007f`), so the line shows
/// no raw control to a terminal or a log viewer.
pub fn record(
    u: &Use,
    time_ms: i64,
    duration_ms: i64,
    refused: Option<&str>,
    ended: &Ended,
    payloads: Option<usize>,
) -> String {
    let mut r = Map::new();
    r.insert("time".into(), json!(crate::time::format_iso(time_ms, 0)));
    r.insert("principal".into(), json!(u.principal));
    if !u.roles.is_empty() {
        r.insert("roles".into(), json!(u.roles));
    }
    r.insert("view".into(), json!(u.view));
    r.insert("method".into(), json!(if u.task { "tasks/create" } else { u.method }));
    r.insert("item".into(), json!(u.item));
    r.insert(
        "decision".into(),
        json!(if refused.is_some() { "refused" } else { "allowed" }),
    );
    r.insert("reason".into(), json!(refused.unwrap_or("allowed")));
    r.insert("upstream".into(), json!(u.upstream));
    if let Some(run) = &u.via {
        r.insert("via".into(), json!(VIA_RUN_CODE));
        r.insert("run".into(), json!(run));
    }
    r.insert("durationMs".into(), json!(duration_ms.max(0)));
    r.insert("outcome".into(), json!(ended.outcome()));
    if let Some(c) = ended.error_code {
        r.insert("errorCode".into(), json!(c));
    }
    if let Some(cap) = payloads {
        payload(&mut r, "arguments", &u.arguments, cap);
        if let Some(result) = &ended.result {
            payload(&mut r, "result", result, cap);
        }
    }
    escape_controls(Value::Object(r).to_string())
}

/// Puts payload `v` (redacted) in record `r` under `name`; when its JSON text is longer than
/// `cap` bytes, the start of that text (as a string, at most `cap` bytes once escaped in the
/// record, cut at a character) and beside it `<name>Truncated: true` and `<name>Bytes`, the
/// whole text's length.
fn payload(r: &mut Map<String, Value>, name: &str, v: &Value, cap: usize) {
    let v = redacted(v);
    let text = v.to_string();
    if text.len() <= cap {
        r.insert(name.into(), v);
        return;
    }
    r.insert(name.into(), Value::String(escaped_prefix(&text, cap).to_string()));
    r.insert(format!("{name}Truncated"), Value::Bool(true));
    r.insert(format!("{name}Bytes"), json!(text.len()));
}

/// The longest start of `text`, cut at a character, that takes at most `max` bytes once written
/// as a JSON string's content (quotes and backslashes doubled, controls as `\uXXXX`).
fn escaped_prefix(text: &str, max: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if is_control(c) => 6,
            c => c.len_utf8(),
        };
        if used > max {
            return &text[..i];
        }
    }
    text
}

/// A control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F).
fn is_control(c: char) -> bool {
    matches!(c, '\0'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// `json` (JSON text, as `serde_json` writes it) with DEL and the C1 controls escaped as C0's
/// are (`\u007f`, `\u0085`): `serde_json` escapes only C0, and these reach a terminal, a log
/// viewer or a pager as raw controls. Outside strings JSON text holds none of them, so each is
/// inside a string, where its escape means the same character.
pub fn escape_controls(json: String) -> String {
    if !json.contains(|c| matches!(c, '\u{7f}'..='\u{9f}')) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}') {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// `v` with every string passed through the PII redaction built-in (handles like `[EMAIL_1]`;
/// the values they stand for are not kept).
pub fn redacted(v: &Value) -> Value {
    let mut r = Redactor::new(None, std::iter::empty());
    let opts = Options {
        strict: false,
        names: &[],
        types: &[],
    };
    fn walk(v: &Value, r: &mut Redactor, opts: &Options) -> Value {
        match v {
            Value::String(s) => Value::String(r.redact(s, opts).unwrap_or_else(|| s.clone())),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, r, opts)).collect()),
            Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), walk(x, r, opts))).collect()),
            other => other.clone(),
        }
    }
    walk(v, &mut r, &opts)
}

/// What `mcp-sieve audit` keeps: records of one item (a tool's name, glob), one principal
/// (glob), since a time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// The item (glob).
    pub item: Option<String>,
    /// The principal (glob).
    pub principal: Option<String>,
    /// The earliest time kept, ms since the epoch.
    pub since_ms: Option<i64>,
}

impl Query {
    /// Whether the record `r` (one parsed line) is kept.
    pub fn keeps(&self, r: &Value) -> bool {
        let glob = |g: &Option<String>, field: &str| {
            g.as_ref()
                .is_none_or(|g| r[field].as_str().is_some_and(|s| crate::filter::glob::matches(g, s)))
        };
        let recent = self.since_ms.is_none_or(|since| {
            r["time"]
                .as_str()
                .and_then(|t| crate::time::parse_iso(t, "time").ok())
                .is_some_and(|t| t >= since)
        });
        glob(&self.item, "item") && glob(&self.principal, "principal") && recent
    }
}

/// `--since`: a duration back from `now_ms` (`7d`, `12h`, `30m`, `45s`) or an ISO date or time.
pub fn since(text: &str, now_ms: i64) -> Result<i64> {
    if let Ok(ms) = super::limits::duration_ms(&Value::String(text.into()), "--since") {
        return Ok(now_ms - ms);
    }
    crate::time::parse_iso(text, "--since").map_err(|_| {
        Error::Config(format!(
            "--since \"{text}\" is neither a duration (7d, 12h, 30m, 45s) nor a date (2025-11-20 or 2025-11-20T10:00:00Z)"
        ))
    })
}

fn bad(path: &str, expected: &str, got: &Value) -> Error {
    Error::Catalog(format!("{path} must be {expected}, got {}", type_name(got)))
}
