//! Code mode's TypeScript declarations (issue 62): a tool's `inputSchema` and `outputSchema` (JSON
//! Schema) written as the member of `tools` a program calls — `/** description */ name(args:
//! {…}): Promise<…>;` — so a model reads the types it writes code against, not the JSON Schema.
//! Objects (required and optional properties, extra properties), arrays and tuples, enums and
//! constants, unions (`type` lists, `anyOf`, `oneOf`), intersections (`allOf`) and descriptions as
//! JSDoc; what has no TypeScript form (`$ref`, a schema past [`MAX_DEPTH`], `not`) is `unknown`,
//! never an error: a declaration is a reading aid, the tool's own schema still checks the call.

use serde_json::{Map, Value};

/// Deepest nesting written; deeper schemas are `unknown` (a hostile or recursive-looking schema
/// cannot make a declaration grow without end).
pub const MAX_DEPTH: usize = 8;
/// Most properties written per object (the rest are left to an index signature).
pub const MAX_PROPERTIES: usize = 100;
/// Longest description kept in a JSDoc comment, in characters.
pub const MAX_DOC: usize = 400;
/// Most members of one union or enum written (the rest: `unknown`).
const MAX_UNION: usize = 50;

/// The member of `tools` for a tool named `name`: its description as JSDoc, its arguments' type
/// from `input` (absent: an object of anything) and its result's from `output` (absent:
/// `unknown`, since the program then gets the tool's `content`).
pub fn member(name: &str, description: Option<&str>, input: Option<&Value>, output: Option<&Value>) -> String {
    let mut s = String::new();
    if let Some(d) = description.filter(|d| !d.trim().is_empty()) {
        doc(&mut s, d, 0);
    }
    s.push_str(&key(name));
    s.push_str("(args");
    let args = match input {
        Some(schema) => type_of(schema, 0, 0),
        None => "Record<string, unknown>".to_string(),
    };
    // No required property: the program may leave the arguments out.
    if input.is_none_or(|i| i.get("required").and_then(Value::as_array).is_none_or(Vec::is_empty)) {
        s.push('?');
    }
    s.push_str(": ");
    s.push_str(&args);
    s.push_str("): Promise<");
    s.push_str(&output.map_or_else(|| "unknown".to_string(), |o| type_of(o, 0, 0)));
    s.push_str(">;");
    s
}

/// The declaration of `tools` holding `members` (from [`member`]) and the generic `call`.
pub fn declare(members: &[String]) -> String {
    let mut s = String::from("declare const tools: {\n");
    for m in members {
        for line in m.lines() {
            s.push_str("  ");
            s.push_str(line);
            s.push('\n');
        }
    }
    s.push_str(
        "  /** Calls any tool by name. */\n  call(name: string, args?: Record<string, unknown>): Promise<unknown>;\n};",
    );
    s
}

/// A JSDoc comment of `text` at `indent` spaces (cut at [`MAX_DOC`] characters; `*/` cannot end it).
fn doc(s: &mut String, text: &str, indent: usize) {
    let mut t: String = text.trim().chars().take(MAX_DOC).collect();
    if t.len() < text.trim().len() {
        t.push('…');
    }
    let t = t.replace("*/", "*\\/");
    let pad = " ".repeat(indent);
    let lines: Vec<&str> = t.lines().map(str::trim_end).collect();
    if lines.len() == 1 {
        s.push_str(&format!("/** {} */\n{pad}", lines[0]));
        return;
    }
    s.push_str("/**\n");
    for l in lines {
        s.push_str(&pad);
        s.push_str(if l.is_empty() { " *" } else { " * " });
        s.push_str(l);
        s.push('\n');
    }
    s.push_str(&pad);
    s.push_str(" */\n");
    s.push_str(&pad);
}

/// `name` as a property key: itself when it is an identifier, else a quoted string.
fn key(name: &str) -> String {
    let mut chars = name.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        name.to_string()
    } else {
        Value::String(name.to_string()).to_string()
    }
}

/// The TypeScript type of `schema` at nesting `depth`, written at `indent` spaces.
fn type_of(schema: &Value, depth: usize, indent: usize) -> String {
    let t = bare_type(schema, depth, indent);
    match schema.get("nullable") {
        Some(Value::Bool(true)) if t != "unknown" && t != "null" => format!("{t} | null"),
        _ => t,
    }
}

fn bare_type(schema: &Value, depth: usize, indent: usize) -> String {
    if depth > MAX_DEPTH {
        return "unknown".into();
    }
    let o = match schema {
        Value::Object(o) => o,
        // `true`: anything; `false`: nothing.
        Value::Bool(false) => return "never".into(),
        _ => return "unknown".into(),
    };
    if let Some(c) = o.get("const") {
        return literal(c);
    }
    if let Some(Value::Array(values)) = o.get("enum") {
        return union(values.iter().map(literal).collect());
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = o.get(k) {
            return union(alts.iter().map(|a| group(type_of(a, depth + 1, indent))).collect());
        }
    }
    if let Some(Value::Array(all)) = o.get("allOf") {
        let parts: Vec<String> = all.iter().map(|a| group(type_of(a, depth + 1, indent))).collect();
        return match parts.len() {
            0 => "unknown".into(),
            _ => parts.join(" & "),
        };
    }
    match o.get("type") {
        Some(Value::String(t)) => of_type(t, o, depth, indent),
        Some(Value::Array(ts)) => union(
            ts.iter()
                .filter_map(Value::as_str)
                .map(|t| group(of_type(t, o, depth, indent)))
                .collect(),
        ),
        // No `type`: what its keywords say it is.
        _ if o.contains_key("properties") => of_type("object", o, depth, indent),
        _ if o.contains_key("items") || o.contains_key("prefixItems") => of_type("array", o, depth, indent),
        _ => "unknown".into(),
    }
}

fn of_type(t: &str, o: &Map<String, Value>, depth: usize, indent: usize) -> String {
    match t {
        "string" => "string".into(),
        "number" | "integer" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => array(o, depth, indent),
        "object" => object(o, depth, indent),
        _ => "unknown".into(),
    }
}

fn array(o: &Map<String, Value>, depth: usize, indent: usize) -> String {
    if let Some(Value::Array(tuple)) = o.get("prefixItems") {
        let items: Vec<String> = tuple.iter().map(|i| type_of(i, depth + 1, indent)).collect();
        return format!("[{}]", items.join(", "));
    }
    match o.get("items") {
        // Draft 4's tuple form.
        Some(Value::Array(tuple)) => {
            let items: Vec<String> = tuple.iter().map(|i| type_of(i, depth + 1, indent)).collect();
            format!("[{}]", items.join(", "))
        }
        Some(items) => {
            let t = group(type_of(items, depth + 1, indent));
            format!("{t}[]")
        }
        None => "unknown[]".into(),
    }
}

fn object(o: &Map<String, Value>, depth: usize, indent: usize) -> String {
    let props = o.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = o
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let extra = match o.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(s @ Value::Object(_)) => Some(type_of(s, depth + 1, indent + 2)),
        // Absent or true: more properties may come.
        _ => Some("unknown".to_string()),
    };
    let Some(props) = props.filter(|p| !p.is_empty()) else {
        return match extra {
            None => "{}".into(),
            Some(t) => format!("Record<string, {t}>"),
        };
    };
    let pad = " ".repeat(indent + 2);
    let mut s = String::from("{\n");
    for (name, schema) in props.iter().take(MAX_PROPERTIES) {
        s.push_str(&pad);
        if let Some(d) = schema
            .get("description")
            .and_then(Value::as_str)
            .filter(|d| !d.trim().is_empty())
        {
            doc(&mut s, d, indent + 2);
        }
        s.push_str(&key(name));
        if !required.contains(&name.as_str()) {
            s.push('?');
        }
        s.push_str(": ");
        s.push_str(&type_of(schema, depth + 1, indent + 2));
        s.push_str(";\n");
    }
    // Named properties beside an index signature must fit it: `unknown` does.
    if props.len() > MAX_PROPERTIES || o.get("additionalProperties").is_some_and(Value::is_object) {
        s.push_str(&pad);
        s.push_str("[key: string]: unknown;\n");
    }
    s.push_str(&" ".repeat(indent));
    s.push('}');
    s
}

/// A JSON value as a TypeScript literal type (objects and arrays: `unknown`).
fn literal(v: &Value) -> String {
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => v.to_string(),
        _ => "unknown".into(),
    }
}

/// `types` as a union (duplicates once; none: `never`; past [`MAX_UNION`]: `unknown`).
fn union(types: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for t in types {
        if !seen.contains(&t) {
            seen.push(t);
        }
    }
    match seen.len() {
        0 => "never".into(),
        n if n > MAX_UNION => "unknown".into(),
        _ if seen.iter().any(|t| t == "unknown") => "unknown".into(),
        _ => seen.join(" | "),
    }
}

/// `t` in brackets when it is a union or an intersection (before `[]` or inside another).
fn group(t: String) -> String {
    let top_level = {
        let (mut depth, mut found) = (0i32, false);
        for c in t.chars() {
            match c {
                '{' | '(' | '[' | '<' => depth += 1,
                '}' | ')' | ']' | '>' => depth -= 1,
                '|' | '&' if depth == 0 => found = true,
                _ => {}
            }
        }
        found
    };
    // A literal string holding `|` is not a union: only bare ones are bracketed.
    if top_level && !(t.starts_with('"') && t.ends_with('"') && !t[1..t.len() - 1].contains('"')) {
        format!("({t})")
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(schema: Value) -> String {
        type_of(&schema, 0, 0)
    }

    #[test]
    fn scalars_and_unknowns() {
        assert_eq!(ts(json!({"type": "string"})), "string");
        assert_eq!(ts(json!({"type": "integer"})), "number");
        assert_eq!(ts(json!({"type": "number"})), "number");
        assert_eq!(ts(json!({"type": "boolean"})), "boolean");
        assert_eq!(ts(json!({"type": "null"})), "null");
        assert_eq!(ts(json!({})), "unknown");
        assert_eq!(ts(json!(true)), "unknown");
        assert_eq!(ts(json!(false)), "never");
        assert_eq!(ts(json!({"$ref": "#/$defs/x"})), "unknown");
        assert_eq!(ts(json!({"type": "wat"})), "unknown");
        assert_eq!(ts(json!({"type": "string", "nullable": true})), "string | null");
    }

    #[test]
    fn objects_mark_optional_properties_and_document_them() {
        let t = ts(json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "what to echo"},
                "times": {"type": "integer"},
                "x-y": {"type": "boolean"}
            },
            "required": ["text"],
            "additionalProperties": false
        }));
        assert_eq!(
            t,
            "{\n  /** what to echo */\n  text: string;\n  times?: number;\n  \"x-y\"?: boolean;\n}"
        );
    }

    #[test]
    fn objects_without_properties_and_with_extra_ones() {
        assert_eq!(ts(json!({"type": "object"})), "Record<string, unknown>");
        assert_eq!(ts(json!({"type": "object", "additionalProperties": false})), "{}");
        assert_eq!(
            ts(json!({"type": "object", "additionalProperties": {"type": "number"}})),
            "Record<string, number>"
        );
        // Named properties beside typed extra ones: the index signature is `unknown`.
        let t = ts(json!({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "number"}}));
        assert_eq!(t, "{\n  a?: string;\n  [key: string]: unknown;\n}");
    }

    #[test]
    fn arrays_tuples_and_bracketed_unions() {
        assert_eq!(ts(json!({"type": "array", "items": {"type": "string"}})), "string[]");
        assert_eq!(ts(json!({"type": "array"})), "unknown[]");
        assert_eq!(
            ts(json!({"type": "array", "items": {"type": ["string", "number"]}})),
            "(string | number)[]"
        );
        assert_eq!(
            ts(json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})),
            "[string, number]"
        );
        assert_eq!(ts(json!({"items": [{"type": "boolean"}]})), "[boolean]");
    }

    #[test]
    fn enums_consts_and_unions() {
        assert_eq!(
            ts(json!({"type": "string", "enum": ["a", "b|c", "d\"e"]})),
            "\"a\" | \"b|c\" | \"d\\\"e\""
        );
        assert_eq!(ts(json!({"enum": [1, true, null, "x", 1]})), "1 | true | null | \"x\"");
        assert_eq!(ts(json!({"const": "fixed"})), "\"fixed\"");
        assert_eq!(ts(json!({"enum": []})), "never");
        assert_eq!(
            ts(json!({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]})),
            "string | string[]"
        );
        assert_eq!(
            ts(json!({"oneOf": [{"type": "integer"}, {"type": "null"}]})),
            "number | null"
        );
        assert_eq!(ts(json!({"anyOf": [{"type": "string"}, {}]})), "unknown");
        assert_eq!(
            ts(
                json!({"allOf": [{"properties": {"a": {"type": "string"}}, "additionalProperties": false},
                                 {"properties": {"b": {"type": "number"}}, "additionalProperties": false}]})
            ),
            "{\n  a?: string;\n} & {\n  b?: number;\n}"
        );
        let many: Vec<Value> = (0..60).map(|i| json!(i)).collect();
        assert_eq!(ts(json!({ "enum": many })), "unknown");
    }

    #[test]
    fn nesting_is_indented_and_bounded() {
        let t = ts(json!({"type": "object", "properties": {
            "user": {"type": "object", "description": "who", "properties": {"id": {"type": "string"}}, "required": ["id"]}
        }, "required": ["user"]}));
        assert_eq!(t, "{\n  /** who */\n  user: {\n    id: string;\n  };\n}");
        // A schema nested far past the bound ends in `unknown`, and the text stays small.
        let mut deep = json!({"type": "string"});
        for _ in 0..500 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        let t = ts(deep);
        assert!(t.contains("a?: unknown;"), "{t}");
        assert!(t.matches("a?:").count() <= MAX_DEPTH + 1, "{t}");
        let mut deep_array = json!({"type": "string"});
        for _ in 0..500 {
            deep_array = json!({"type": "array", "items": deep_array});
        }
        assert_eq!(ts(deep_array).matches("[]").count(), MAX_DEPTH + 1);
    }

    #[test]
    fn descriptions_become_jsdoc_that_cannot_be_closed_early() {
        let t = ts(json!({"properties": {"q": {"type": "string", "description": "first line\nsecond */ evil"}}}));
        assert_eq!(
            t,
            "{\n  /**\n   * first line\n   * second *\\/ evil\n   */\n  q?: string;\n}"
        );
        let long = "x".repeat(MAX_DOC + 50);
        let t = ts(json!({"properties": {"q": {"description": long}}}));
        assert!(t.contains(&format!("/** {}… */", "x".repeat(MAX_DOC))), "{t}");
    }

    #[test]
    fn a_member_names_the_tool_and_its_result() {
        let m = member(
            "echo",
            Some("Echoes text."),
            Some(&json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})),
            Some(&json!({"type": "object", "properties": {"echoed": {"type": "string"}}, "required": ["echoed"]})),
        );
        assert_eq!(
            m,
            "/** Echoes text. */\necho(args: {\n  text: string;\n}): Promise<{\n  echoed: string;\n}>;"
        );
        // No required argument: args may be left out; no output schema: unknown; an odd name quoted.
        let m = member("github/list-repos", None, Some(&json!({"type": "object"})), None);
        assert_eq!(
            m,
            "\"github/list-repos\"(args?: Record<string, unknown>): Promise<unknown>;"
        );
        let d = declare(&[m]);
        assert!(
            d.starts_with("declare const tools: {\n  \"github/list-repos\"(args?"),
            "{d}"
        );
        assert!(d.ends_with("Promise<unknown>;\n};"), "{d}");
    }
}
