//! SEP-1904 on the client: filter and order a task list with the core's [`TaskQuery`].

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{from_js, js_error};
use crate::error::{type_name, Error};
use crate::task::{Status, Task, TaskQuery};
use crate::time::parse_iso;

/// A wire `Task` object as the core's record. Tasks carry no `method` on the wire; MCP
/// 2025-11-25 servers run only `tools/call` as tasks, so that is assumed unless `method` is given.
fn task(v: &Value, path: &str) -> Result<Task, Error> {
    let o = v
        .as_object()
        .ok_or_else(|| Error::params(format!("{path} must be a task object, got {}", type_name(v))))?;
    let text = |k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::params(format!("{path}.{k} must be a string")))
    };
    let status = Status::parse(text("status")?).ok_or_else(|| {
        Error::params(format!(
            "{path}.status must be one of working, input_required, completed, failed, cancelled"
        ))
    })?;
    let created = parse_iso(text("createdAt")?, &format!("{path}.createdAt"))?;
    let updated = match o.get("lastUpdatedAt") {
        Some(Value::String(s)) => parse_iso(s, &format!("{path}.lastUpdatedAt"))?,
        _ => created,
    };
    let method = o.get("method").and_then(Value::as_str).unwrap_or("tools/call");
    let mut t = Task::new(text("taskId")?.to_string(), method, created, None, Default::default());
    t.status = status;
    t.updated_ms = updated;
    Ok(t)
}

/// Filters and orders `tasks` (objects from `tasks/list`) by a SEP-1904 query, exactly as the
/// server does: criteria AND together, `orderBy` `createdAt` | `lastUpdatedAt` (default),
/// `order` `desc` (default) | `asc`, ties by `taskId`; criteria it does not know are ignored, as
/// SEP-1904 allows a receiver to. Returns the same objects, reordered.
///
/// @example
/// ```js
/// const working = filterTasks(tasks, { status: ['working'], orderBy: 'createdAt', order: 'asc' });
/// ```
#[wasm_bindgen(js_name = filterTasks, unchecked_return_type = "Task[]")]
pub fn filter_tasks(
    #[wasm_bindgen(unchecked_param_type = "Task[]")] tasks: js_sys::Array,
    #[wasm_bindgen(unchecked_param_type = "TaskQuery")] query: JsValue,
) -> Result<js_sys::Array, JsValue> {
    let query: Value = from_js(query, "query")?;
    let values = tasks
        .iter()
        .map(|v| from_js(v, "tasks"))
        .collect::<Result<Vec<Value>, _>>()?;
    let kept = kept(&values, &query).map_err(|e| js_error(&e))?;
    Ok(kept.into_iter().map(|i| tasks.get(i as u32)).collect())
}

/// Positions of the tasks `query` keeps, in its order.
fn kept(tasks: &[Value], query: &Value) -> crate::error::Result<Vec<usize>> {
    let query = TaskQuery::parse(query, false)?;
    let records = tasks
        .iter()
        .enumerate()
        .map(|(i, v)| task(v, &format!("tasks[{i}]")))
        .collect::<crate::error::Result<Vec<_>>>()?;
    let mut keep: Vec<usize> = (0..records.len()).filter(|&i| query.matches(&records[i])).collect();
    crate::sort::sort_by(&mut keep, |&a, &b| query.compare(&records[a], &records[b]));
    Ok(keep)
}
