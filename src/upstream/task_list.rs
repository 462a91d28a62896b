//! A gateway's `tasks/list` at one upstream ([`TaskList`]): the whole list (every page) of an
//! upstream spoken to in a session era; at a 2026-07-28 upstream, whose tasks are the optional
//! `io.modelcontextprotocol/tasks` extension (which has no `tasks/list`), each of the session's
//! tasks there asked with `tasks/get` instead, one after another (a task it no longer knows,
//! `-32602`, is left out). Either way the result is the upstream's task objects, which
//! `Server::gathered_tasks` cuts, merges, filters and pages.

use serde_json::{json, Value};

use super::conversation::{Conversation, Era, Exchange};
use super::{HttpAnswer, Machine, Pages, Step};
use crate::error::{code, Error, Result};

/// The tasks one upstream runs for a session (see the module's header).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskList {
    /// Its `tasks/list`, every page.
    Listed(Pages),
    /// `tasks/get` of each id in `todo` (taken from the end); what came back in `tasks`.
    Each {
        /// The ids still to ask.
        todo: Vec<String>,
        /// The exchange in flight.
        current: Option<Exchange>,
        /// The tasks the upstream knew.
        tasks: Vec<Value>,
    },
}

impl TaskList {
    /// The tasks of an upstream spoken to in `era`, running the session's tasks `ids`.
    pub fn new(era: Era, ids: &[String]) -> Self {
        if era != Era::Modern {
            return TaskList::Listed(Pages::new("tasks/list", "tasks", Value::Null).or_none());
        }
        TaskList::Each {
            todo: ids.iter().rev().cloned().collect(),
            current: None,
            tasks: Vec::new(),
        }
    }
}

/// The task `tasks/get` answered with `reply` (in its 2025-11-25 shape, `legacy_task`); `None` for a task the
/// upstream no longer knows (`-32602`: expired, or never its).
fn got(reply: &super::Reply) -> Result<Option<Value>> {
    let code = reply.response.as_ref().and_then(|r| r["error"]["code"].as_i64());
    if code == Some(code::INVALID_PARAMS as i64) {
        return Ok(None);
    }
    match reply.result("tasks/get")? {
        // In the shape of the session's era (the list's).
        Value::Object(o) => Ok(Some(super::task_shape::legacy_task(o))),
        other => Err(Error::Upstream(format!(
            "its tasks/get result must be a task object, got {}",
            crate::error::type_name(other)
        ))),
    }
}

impl Machine for TaskList {
    type Output = Vec<Value>;

    fn step(&mut self, conv: &mut Conversation) -> Result<Step<Vec<Value>>> {
        let (todo, current, tasks) = match self {
            TaskList::Listed(pages) => return pages.step(conv),
            TaskList::Each { todo, current, tasks } => (todo, current, tasks),
        };
        loop {
            if current.is_none() {
                match todo.pop() {
                    Some(id) => *current = Some(conv.request("tasks/get", json!({ "taskId": id }))),
                    None => return Ok(Step::Done(std::mem::take(tasks))),
                }
            }
            let Some(ex) = current.as_mut() else {
                continue;
            };
            match ex.step(conv)? {
                Step::Send(post) => return Ok(Step::Send(post)),
                Step::Done(reply) => {
                    *current = None;
                    tasks.extend(got(&reply)?);
                }
            }
        }
    }

    fn receive(&mut self, conv: &mut Conversation, answer: HttpAnswer) -> Result<()> {
        match self {
            TaskList::Listed(pages) => pages.receive(conv, answer),
            TaskList::Each { current: Some(ex), .. } => ex.receive(conv, answer),
            TaskList::Each { .. } => Err(Error::Internal("an upstream answer came with no POST in flight".into())),
        }
    }
}
