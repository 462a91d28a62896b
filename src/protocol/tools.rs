//! `tools/call`: the policy check, task execution (`params.task`) by the tool's `taskSupport`,
//! and the demo and conformance fixture tools.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::model::Kind;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Call, Env, Server};
use crate::protocol::tasks::{declares_tasks, missing_capability, runs_as_task, tasks_undeclared};
use crate::protocol::Session;
use crate::protocol::{ask, demo, Ask};

impl Server {
    /// 2026-07-28: the tool's question as `input_required`, or its result when the call came
    /// again with the answer in `params.inputResponses`.
    fn input_required(call: &Call, tool: &str, method: &str, params: Value, capability: &str) -> Result<String> {
        if let Some(answer) = call.params["inputResponses"].get(ask::INPUT_KEY) {
            if !answer.is_object() {
                return Err(Error::params(format!(
                    "params.inputResponses.{} must be the {method} result object",
                    ask::INPUT_KEY
                )));
            }
            return Ok(ask::result_of(tool, answer).to_string());
        }
        let caps = &call.params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        if caps.get(capability).is_none() {
            return Err(missing_capability(
                &format!("tool \"{tool}\""),
                &format!("{capability} capability"),
                json!({ capability: {} }),
            ));
        }
        Ok(json!({
            "resultType": "input_required",
            "inputRequests": { ask::INPUT_KEY: {"method": method, "params": params} },
        })
        .to_string())
    }

    pub(crate) fn call_tool(
        &self,
        call: &Call,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        let pos = self.usable(Kind::Tool, "name", call, &mut out.log)?;
        let tool = &self.catalog.section(Kind::Tool).items[pos];
        let support = tool.task_support.as_deref().unwrap_or("forbidden");
        // SEP-2663: a 2026-07-28 client that did not declare the tasks extension is never answered
        // with a task: its `params.task` is ignored (the call runs as any other; a gateway does
        // not pass it on), and a tool that only runs as a task is -32021.
        let undeclared = call.stateless && !declares_tasks(call.params);
        if undeclared && support == "required" {
            return Err(tasks_undeclared(&format!(
                "tool \"{}\" runs only as a task and",
                tool.name
            )));
        }
        if let Some(forwarded) = self.forward("tools/call", call, out) {
            return Ok(forwarded);
        }
        let args = Self::arguments(call)?;
        // SEP-2663 (2026-07-28): the server decides, `params.task` is ignored (`runs_as_task`).
        let decided = json!({});
        let task = match call.stateless {
            true => runs_as_task(self, call.params).then_some(&decided),
            false => call.params.get("task").filter(|t| !t.is_null()),
        };
        match (task, support) {
            (Some(t), "optional" | "required") => return self.create_task(tool, &args, t, session, env, out),
            (Some(_), _) => {
                // MCP 2025-11-25 (tasks): a task request for a tool that does not support tasks
                // SHOULD be answered with -32601.
                return Err(Error::MethodNotFound(format!(
                    "tool \"{}\" does not support task execution (execution.taskSupport is \"{support}\")",
                    tool.name
                )));
            }
            (_, "required") => {
                return Err(Error::MethodNotFound(format!(
                    "tool \"{}\" must be called as a task: add params.task",
                    tool.name
                )))
            }
            _ => {}
        }
        if let Some(asked) = ask::request_of(&tool.name, &args) {
            let (method, params, capability) = asked?;
            let Some(s) = session.as_mut() else {
                return Self::input_required(call, &tool.name, method, params, capability);
            };
            if s.initialize["capabilities"].get(capability).is_none() {
                return Err(Error::InvalidRequest(format!(
                    "tool \"{}\" needs the client's {capability} capability, which this client did not declare",
                    tool.name
                )));
            }
            let request_id = json!(format!("ask-{}", env.fresh_id));
            ask::expect(s, &request_id, env.now_ms);
            out.session_changed = true;
            out.ask = Some(Ask {
                session: s.id.clone(),
                request: json!({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).to_string(),
                request_id,
                call_id: call.ctx.request_id.clone(),
                tool: tool.name.clone(),
            });
            return Ok(String::new());
        }
        out.notifications
            .extend(demo::tool_notifications(&tool.name, call.params));
        let schema = demo::output_schema(tool.fragment());
        Ok(demo::run(&tool.name, &args, env.now_ms, schema.as_ref()).to_string())
    }
}
