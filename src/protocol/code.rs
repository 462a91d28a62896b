//! Code mode (issue 62; a view with `mode: "code"`, `?mode=code`): search mode's `find_tools` and
//! `describe_tools`, which also answer each tool as a TypeScript declaration ([`typescript`]), and
//! `run_code` instead of `call_tool`: a JavaScript program that calls the tools the caller may
//! see (`await tools.echo({text})`) and returns only what the model needs. The core defines the
//! tools and writes the declarations; running a program is the shell's (the native server runs
//! it in QuickJS, each of its calls sent back through the caller's own `tools/call` path). A shell
//! that does not run code answers `run_code` with an error saying so.

pub mod typescript;

use serde_json::{json, Value};

/// The tool that runs a program.
pub const RUN: &str = "run_code";
/// What the core answers a `run_code` it is handed (a shell that runs programs runs them before,
/// and recognises this answer as "the request is otherwise valid").
pub const NOT_RUN_HERE: &str = "only the native mcp-sieve runs code-mode programs";
/// Longest program, in bytes.
pub const MAX_CODE: usize = 100_000;
/// The key of `structuredContent` (in code mode's `find_tools` and `describe_tools`) holding the
/// answered tools as one TypeScript declaration of `tools`.
pub const TYPESCRIPT: &str = "typescript";

/// The document's `code` block: parsed with the document (`catalog::code`).
pub use crate::catalog::code::Limits;

/// `run_code`'s definition.
pub(crate) fn run_code() -> Value {
    json!({
        "name": RUN,
        "title": "Run code",
        "description": "Run a JavaScript program (the body of an async function) that calls this server's tools and \
            returns only what you need. In it, `await tools.<name>(args)` or `await tools.call(name, args)` calls a \
            tool (find its name and TypeScript declaration with find_tools and describe_tools) and resolves to \
            its structuredContent, else its content; a failed call throws an Error. `console.log` is collected. \
            `return` the answer (JSON-serialisable). No network, files, timers or imports; limits on time, \
            memory and the number of calls apply.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "maxLength": MAX_CODE,
                         "description": "the program: the body of an async function, e.g. const r = await tools.add({a: 1, b: 2}); return r;"}
            },
            "required": ["code"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "result": {"description": "what the program returned"},
                "logs": {"type": "array", "items": {"type": "string"}, "description": "what it wrote with console.log"}
            },
            "required": ["result", "logs"]
        },
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "openWorldHint": true}
    })
}

/// The declaration of `tools` with the tools of these wire fragments (a definition's JSON text).
pub fn declarations<'a>(fragments: impl IntoIterator<Item = &'a str>) -> String {
    let members: Vec<String> = fragments
        .into_iter()
        .filter_map(|f| serde_json::from_str::<Value>(f).ok())
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?;
            Some(typescript::member(
                name,
                t.get("description").and_then(Value::as_str),
                t.get("inputSchema"),
                t.get("outputSchema"),
            ))
        })
        .collect();
    typescript::declare(&members)
}

/// A `run_code` answer: the program's `result` (JSON text) and its `logs`, as `structuredContent`
/// and as the text content's JSON. `is_error`: the program threw or a limit stopped it (then
/// `result` is `null` and `error` says why).
pub fn answer(result: Option<Value>, logs: Vec<String>, error: Option<String>) -> Value {
    let mut structured = json!({"result": result.unwrap_or(Value::Null), "logs": logs});
    if let Some(e) = &error {
        structured["error"] = json!(e);
    }
    let text = match &error {
        Some(e) => format!("run_code failed: {e}\n{structured}"),
        None => structured.to_string(),
    };
    let mut r = json!({"content": [{"type": "text", "text": text}], "structuredContent": structured});
    if error.is_some() {
        r["isError"] = json!(true);
    }
    r
}

/// The JSON-RPC answer to the `run_code` request `id` whose `params._meta` is `meta`: `result`,
/// told complete (`resultType`) when the request is of 2026-07-28 (its version in `_meta`), as
/// the core tells such a request of its own results. Both shells answer a run with it.
pub fn finished(id: &Value, meta: Option<&Value>, mut result: Value) -> String {
    if meta.is_some_and(|m| m.get("io.modelcontextprotocol/protocolVersion").is_some()) {
        result["resultType"] = json!("complete");
    }
    super::jsonrpc::ok(id, &result)
}

/// The program of a `run_code` call: its `code` argument, a string of at most [`MAX_CODE`]
/// bytes; anything else is an invalid-params error naming the argument.
pub fn program(code: &Value) -> crate::Result<&str> {
    match code {
        Value::String(s) if s.len() <= MAX_CODE => Ok(s),
        Value::String(s) => Err(crate::Error::params(format!(
            "params.arguments.code is {} bytes, longer than {MAX_CODE}",
            s.len()
        ))),
        Value::Null => Err(crate::Error::params(
            "params.arguments.code is required (a string: the program)",
        )),
        v => Err(crate::Error::params(format!(
            "params.arguments.code must be a string (the program), got {}",
            crate::error::type_name(v)
        ))),
    }
}

/// The body of the core's answer to a valid `run_code` (`body`, holding [`NOT_RUN_HERE`]) with
/// the run's JSON-RPC `message` in its place: the message itself for a JSON answer; for an SSE
/// answer (`sse`), the same events with the refusal's `data:` line replaced.
pub fn splice(body: &str, sse: bool, message: &str) -> String {
    if !sse {
        return message.to_string();
    }
    body.split_inclusive('\n')
        .map(|line| match line.starts_with("data:") && line.contains(NOT_RUN_HERE) {
            true => format!("data: {message}\n"),
            false => line.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_told_complete_to_a_2026_07_28_request_only() {
        let result = answer(Some(json!(3)), Vec::new(), None);
        let modern = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        let answered = |meta: Option<&Value>| -> Value {
            serde_json::from_str(&finished(&json!(7), meta, result.clone())).unwrap()
        };
        assert_eq!(answered(Some(&modern))["result"]["resultType"], "complete");
        assert_eq!(answered(Some(&modern))["id"], 7);
        assert_eq!(answered(Some(&modern))["result"]["structuredContent"]["result"], 3);
        assert!(answered(Some(&json!({"progressToken": 1})))["result"]
            .get("resultType")
            .is_none());
        assert!(answered(None)["result"].get("resultType").is_none());
    }

    #[test]
    fn declarations_read_the_definitions_fragments() {
        let echo = r#"{"name":"echo","description":"Echo.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}"#;
        let d = declarations([echo, "not json", r#"{"noname":1}"#]);
        assert!(
            d.contains("/** Echo. */\n  echo(args: {\n    text: string;\n  }): Promise<unknown>;"),
            "{d}"
        );
        assert!(d.contains("call(name: string"), "{d}");
    }

    #[test]
    fn an_answer_carries_result_and_logs_or_the_error() {
        let ok = answer(Some(json!({"n": 3})), vec!["hi".into()], None);
        assert_eq!(ok["structuredContent"], json!({"result": {"n": 3}, "logs": ["hi"]}));
        let text: Value = serde_json::from_str(ok["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, ok["structuredContent"]);
        assert!(ok.get("isError").is_none());
        let failed = answer(None, vec![], Some("the program ran past 30 s".into()));
        assert_eq!(failed["isError"], json!(true));
        assert_eq!(failed["structuredContent"]["error"], json!("the program ran past 30 s"));
        assert!(failed["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("run_code failed: the program ran past 30 s"));
    }

    #[test]
    fn a_program_is_a_string_within_its_bound_and_errors_name_the_argument() {
        assert_eq!(program(&json!("return 1")).unwrap(), "return 1");
        for (v, want) in [
            (Value::Null, "params.arguments.code is required"),
            (
                json!(5),
                "params.arguments.code must be a string (the program), got a number",
            ),
            (json!("x".repeat(MAX_CODE + 1)), "longer than 100000"),
        ] {
            let e = program(&v).unwrap_err().to_string();
            assert!(e.contains(want), "{e} should contain {want}");
        }
    }

    #[test]
    fn the_run_takes_the_place_of_the_refusal_in_json_and_in_sse() {
        assert_eq!(splice(&format!("{{\"error\":\"{NOT_RUN_HERE}\"}}"), false, "{}"), "{}");
        let sse = format!("event: message\nid: 1\ndata: {{\"m\":\"{NOT_RUN_HERE}\"}}\n\n");
        assert_eq!(
            splice(&sse, true, "{\"ok\":1}"),
            "event: message\nid: 1\ndata: {\"ok\":1}\n\n"
        );
    }
}
