//! The context of an invocation: MCP content parts (`text`, `image`, `audio`, `resource_link`,
//! `resource`) plus tool call and tool result payloads (`tool_use`, `tool_result`, as in MCP
//! sampling). Middleware reach text through [`map_text`] / [`for_each_text`]; every other
//! field of every part passes through untouched.

use serde_json::{json, Value};

use crate::error::{type_name, Error, Result};

/// The content types a context may hold.
pub const TYPES: [&str; 7] = [
    "text",
    "image",
    "audio",
    "resource_link",
    "resource",
    "tool_use",
    "tool_result",
];

fn need_str(part: &Value, key: &str, path: &str) -> Result<()> {
    match part.get(key) {
        Some(Value::String(_)) => Ok(()),
        Some(v) => Err(Error::params(format!(
            "{path}.{key} must be a string, got {}",
            type_name(v)
        ))),
        None => Err(Error::params(format!("{path}.{key} is required (a string)"))),
    }
}

fn check_part(part: &Value, path: &str) -> Result<()> {
    if !part.is_object() {
        return Err(Error::params(format!(
            "{path} must be a content object with a \"type\", got {}",
            type_name(part)
        )));
    }
    need_str(part, "type", path)?;
    match part["type"].as_str().unwrap_or_default() {
        "text" => need_str(part, "text", path),
        "image" | "audio" => {
            need_str(part, "data", path)?;
            need_str(part, "mimeType", path)
        }
        "resource_link" => need_str(part, "uri", path),
        "resource" => match part.get("resource") {
            Some(r) if r.is_object() => need_str(r, "uri", &format!("{path}.resource")),
            Some(v) => Err(Error::params(format!(
                "{path}.resource must be an object, got {}",
                type_name(v)
            ))),
            None => Err(Error::params(format!(
                "{path}.resource is required (an object with uri)"
            ))),
        },
        "tool_use" => need_str(part, "name", path),
        "tool_result" => match part.get("content") {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    check_part(item, &format!("{path}.content[{i}]"))?;
                }
                Ok(())
            }
            Some(v) => Err(Error::params(format!(
                "{path}.content must be an array, got {}",
                type_name(v)
            ))),
        },
        other => Err(Error::params(format!(
            "{path}.type \"{other}\" is not a content type; expected one of: {}",
            TYPES.join(", ")
        ))),
    }
}

/// Most bytes of text one invocation's context may hold (bounds the work of one request).
pub const MAX_TEXT: usize = 512 * 1024;

/// Reads `context` at `path`: an array of content parts, at most [`MAX_TEXT`] bytes of text.
pub fn parse(v: Option<&Value>, path: &str) -> Result<Vec<Value>> {
    match v {
        Some(Value::Array(items)) => {
            for (i, part) in items.iter().enumerate() {
                check_part(part, &format!("{path}[{i}]"))?;
            }
            let mut text = 0usize;
            for_each_text(items, &mut |t| text += t.len());
            if text > MAX_TEXT {
                return Err(Error::params(format!(
                    "{path} holds {text} bytes of text; at most {MAX_TEXT} are allowed in one call"
                )));
            }
            Ok(items.clone())
        }
        Some(v) => Err(Error::params(format!(
            "{path} must be an array of content parts, got {}",
            type_name(v)
        ))),
        None => Err(Error::params(format!("{path} is required (an array of content parts)"))),
    }
}

fn map_strings(v: &mut Value, f: &mut dyn FnMut(&str) -> Option<String>) {
    match v {
        Value::String(s) => {
            if let Some(new) = f(s) {
                *s = new;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| map_strings(x, f)),
        Value::Object(o) => o.values_mut().for_each(|x| map_strings(x, f)),
        _ => {}
    }
}

fn map_part(part: &mut Value, f: &mut dyn FnMut(&str) -> Option<String>) {
    match part["type"].as_str() {
        Some("text") => map_strings(&mut part["text"], f),
        Some("resource") => {
            if let Some(t) = part["resource"].get_mut("text") {
                map_strings(t, f);
            }
        }
        Some("tool_use") => {
            if let Some(input) = part.get_mut("input") {
                map_strings(input, f);
            }
        }
        Some("tool_result") => {
            if let Some(Value::Array(items)) = part.get_mut("content") {
                items.iter_mut().for_each(|p| map_part(p, f));
            }
            if let Some(s) = part.get_mut("structuredContent") {
                map_strings(s, f);
            }
        }
        _ => {}
    }
}

/// Rewrites every text the context carries (text parts, embedded text resources, tool call
/// inputs, tool results); `f` returns `None` to keep a string as it is.
pub fn map_text(parts: &mut [Value], f: &mut dyn FnMut(&str) -> Option<String>) {
    parts.iter_mut().for_each(|p| map_part(p, f));
}

fn visit_strings<'a>(v: &'a Value, f: &mut dyn FnMut(&'a str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| visit_strings(x, f)),
        Value::Object(o) => o.values().for_each(|x| visit_strings(x, f)),
        _ => {}
    }
}

fn visit_part<'a>(part: &'a Value, f: &mut dyn FnMut(&'a str)) {
    match part["type"].as_str() {
        Some("text") => visit_strings(&part["text"], f),
        Some("resource") => visit_strings(&part["resource"]["text"], f),
        Some("tool_use") => visit_strings(&part["input"], f),
        Some("tool_result") => {
            part["content"]
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|p| visit_part(p, f));
            visit_strings(&part["structuredContent"], f);
        }
        _ => {}
    }
}

/// Calls `f` on every text the context carries, in the order [`map_text`] visits them.
pub fn for_each_text<'a>(parts: &'a [Value], f: &mut dyn FnMut(&'a str)) {
    parts.iter().for_each(|p| visit_part(p, f));
}

/// Puts `prefix` before the first text part's text, or inserts a text part when there is none.
pub fn prepend(parts: &mut Vec<Value>, prefix: &str) {
    match parts.iter_mut().find(|p| p["type"] == "text") {
        Some(p) => {
            let old = p["text"].as_str().unwrap_or_default();
            p["text"] = Value::String(format!("{prefix}{old}"));
        }
        None => parts.insert(0, json!({"type": "text", "text": prefix.trim_end()})),
    }
}
