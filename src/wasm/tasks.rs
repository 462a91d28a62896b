//! SEP-1904 on the client: filter and order a task list with the core's [`TaskQuery`].

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::convert::{from_js, js_error};
use crate::task::TaskQuery;

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
    let query = TaskQuery::parse(&query, false).map_err(|e| js_error(&e))?;
    let kept = crate::task::kept(&values, &query).map_err(|e| js_error(&e))?;
    Ok(kept.into_iter().map(|i| tasks.get(i as u32)).collect())
}
