//! The demo tools that really run (`echo`, `add`, `text_stats`, `current_time`, `long_report`);
//! every other catalog tool answers with a clearly labelled simulated result.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::time::format_iso;

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

fn arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a Value> {
    args.get(key)
        .ok_or_else(|| Error::params(format!("params.arguments.{key} is required")))
}

fn number(args: &Map<String, Value>, key: &str) -> Result<f64> {
    let v = arg(args, key)?;
    v.as_f64()
        .ok_or_else(|| Error::params(format!("params.arguments.{key} must be a number, got {}", type_name(v))))
}

fn string<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str> {
    let v = arg(args, key)?;
    v.as_str()
        .ok_or_else(|| Error::params(format!("params.arguments.{key} must be a string, got {}", type_name(v))))
}

/// Seconds a `long_report` runs, validated.
pub fn report_seconds(args: &Map<String, Value>) -> Result<i64> {
    let v = arg(args, "seconds")?;
    v.as_i64().filter(|n| (1..=30).contains(n)).ok_or_else(|| {
        Error::params(format!(
            "params.arguments.seconds must be an integer from 1 to 30, got {v}"
        ))
    })
}

/// The result of `long_report` once it has run.
pub fn report_result(seconds: i64, done_ms: i64) -> Value {
    text(format!(
        "report ready: ran {seconds} s, finished at {}",
        format_iso(done_ms, 0)
    ))
}

/// Runs tool `name` with `args` at time `now_ms`; `None` when the tool has no implementation.
pub fn call(name: &str, args: &Map<String, Value>, now_ms: i64) -> Option<Result<Value>> {
    Some(match name {
        "echo" => string(args, "message").map(text),
        "add" => number(args, "a").and_then(|a| Ok(a + number(args, "b")?)).map(|s| {
            let mut r = text(format_number(s));
            r["structuredContent"] = json!({"sum": s});
            r
        }),
        "text_stats" => string(args, "text").map(|t| {
            let stats = json!({
                "characters": t.chars().count(),
                "words": t.split_whitespace().count(),
                "lines": if t.is_empty() { 0 } else { t.split('\n').count() },
            });
            let mut r = text(stats.to_string());
            r["structuredContent"] = stats;
            r
        }),
        "current_time" => match args.get("timeZoneOffsetMinutes") {
            None | Some(Value::Null) => Ok(text(format_iso(now_ms, 0))),
            Some(v) => v
                .as_i64()
                .filter(|m| (-840..=840).contains(m))
                .map(|m| text(format_iso(now_ms, m as i32)))
                .ok_or_else(|| {
                    Error::params(format!(
                        "params.arguments.timeZoneOffsetMinutes must be an integer from -840 to 840, got {v}"
                    ))
                }),
        },
        "long_report" => report_seconds(args).map(|s| report_result(s, now_ms)),
        _ => return None,
    })
}

/// The `CallToolResult` of tool `name`: its output, a simulated answer when it has no
/// implementation, or — for invalid arguments — a tool execution error (`isError`) the model can
/// correct, as the MCP spec asks, rather than a protocol error.
pub fn run(name: &str, args: &Map<String, Value>, now_ms: i64) -> Value {
    match call(name, args, now_ms) {
        Some(r) => r.unwrap_or_else(|e| json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})),
        None => simulated(name, args),
    }
}

/// What a catalog tool without an implementation answers: honest about being simulated.
pub fn simulated(name: &str, args: &Map<String, Value>) -> Value {
    text(format!(
        "[simulated] {name} is part of the demo catalog and has no backend here; it was called with {}",
        Value::Object(args.clone())
    ))
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}
