//! The demo tools that really run (`echo`, `add`, `text_stats`, `current_time`, `long_report`,
//! and the MCP conformance suite's `test_*` fixtures served by `catalog/conformance.json`);
//! every other catalog tool answers with a clearly labelled simulated result.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::protocol::{example, jsonrpc};
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
        other => return conformance(other),
    })
}

/// The `CallToolResult` of tool `name`: its output, a simulated answer when it has no
/// implementation, or — for invalid arguments — a tool execution error (`isError`) the model can
/// correct, as the MCP spec asks, rather than a protocol error. A tool that declares an
/// `outputSchema` (given here) answers `structuredContent` conforming to it, and its JSON as text.
pub fn run(name: &str, args: &Map<String, Value>, now_ms: i64, output_schema: Option<&Value>) -> Value {
    let mut r = match call(name, args, now_ms) {
        Some(r) => r.unwrap_or_else(|e| json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})),
        None => simulated(name, args),
    };
    if let (Some(schema), Value::Object(o)) = (output_schema, &mut r) {
        if !o.contains_key("structuredContent") && o.get("isError") != Some(&Value::Bool(true)) {
            let structured = example::instance(schema, now_ms);
            if let Some(Value::Array(content)) = o.get_mut("content") {
                content.push(json!({"type": "text", "text": structured.to_string()}));
            }
            o.insert("structuredContent".into(), structured);
        }
    }
    r
}

/// The `outputSchema` a tool declares, read from its wire object (only when it has one).
pub fn output_schema(fragment: &str) -> Option<Value> {
    if !fragment.contains("\"outputSchema\"") {
        return None;
    }
    let mut tool: Map<String, Value> = serde_json::from_str(fragment).ok()?;
    tool.remove("outputSchema").filter(Value::is_object)
}

/// What a catalog tool without an implementation answers: honest about being simulated.
pub fn simulated(name: &str, args: &Map<String, Value>) -> Value {
    text(format!(
        "[simulated] {name} is part of the demo catalog and has no backend here; it was called with {}",
        Value::Object(args.clone())
    ))
}

/// A 1×1 PNG, base64: the image of the conformance fixtures.
pub const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// Eight samples of silence as an 8 kHz mono WAV, base64: the audio of the conformance fixtures.
pub const WAV_SILENCE: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The argument-less fixture tools the MCP conformance suite calls (its server scenarios name
/// them and their results); `None` for any other name. Their log and progress notifications come
/// from `protocol::extra`.
fn conformance(name: &str) -> Option<Result<Value>> {
    let image = json!({"type": "image", "data": PNG_1X1, "mimeType": "image/png"});
    Some(Ok(match name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_image_content" => json!({"content": [image]}),
        "test_audio_content" => json!({"content": [{"type": "audio", "data": WAV_SILENCE, "mimeType": "audio/wav"}]}),
        "test_embedded_resource" => json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]}),
        "test_multiple_content_types" => json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            image,
            {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}]}),
        "test_error_handling" => json!({"content": [{"type": "text",
            "text": "This tool intentionally returns an error for testing"}], "isError": true}),
        "test_tool_with_logging" => text("Tool with logging executed successfully (3 log messages sent)"),
        "test_tool_with_progress" => text("Tool with progress executed successfully (progress 0, 50, 100 of 100)"),
        _ => return None,
    }))
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// Log and progress notifications a tool sends while it runs (the conformance fixtures
/// `test_tool_with_logging` and `test_tool_with_progress`); they precede the result in the SSE
/// answer.
pub fn tool_notifications(name: &str, params: &Value) -> Vec<String> {
    match name {
        "test_tool_with_logging" => [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ]
        .iter()
        .map(|m| {
            jsonrpc::notification(
                "notifications/message",
                Some(json!({"level": "info", "logger": name, "data": m})),
            )
        })
        .collect(),
        "test_tool_with_progress" => match params["_meta"].get("progressToken") {
            Some(token) if token.is_string() || token.is_number() => [0, 50, 100]
                .iter()
                .map(|p| {
                    jsonrpc::notification(
                        "notifications/progress",
                        Some(json!({"progressToken": token, "progress": p, "total": 100})),
                    )
                })
                .collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_needs_a_token() {
        assert!(tool_notifications("test_tool_with_progress", &json!({})).is_empty());
        assert_eq!(
            tool_notifications("test_tool_with_progress", &json!({"_meta": {"progressToken": "p"}})).len(),
            3
        );
        assert_eq!(tool_notifications("test_tool_with_logging", &json!({})).len(), 3);
    }
}
