//! The document's `options`: page size, task-query strictness, task caps, list cache time, and the concern policies
//! (`invalidConcernValue`, `applyDefaults`), validated with errors naming the field.

use serde_json::Value;

use crate::concern::InvalidValuePolicy;
use crate::error::{type_name, Error, Result};

/// The default cap of live tasks per session.
pub const DEFAULT_MAX_TASKS: usize = 100;
/// The default cap of 2026-07-28 tasks one principal holds (anonymous callers share one).
pub const DEFAULT_MAX_TASKS_PER_PRINCIPAL: usize = 100;
/// The default cap of 2026-07-28 tasks the server holds.
pub const DEFAULT_MAX_TASKS_TOTAL: usize = 10_000;
/// The default `ttlMs` of 2026-07-28 list results: five minutes.
pub const DEFAULT_LIST_TTL_MS: i64 = 300_000;
/// The default page size of list methods.
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// Server options from the document's `options`.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Items per list page.
    pub page_size: usize,
    /// Reject task-query criteria the server does not support instead of ignoring them.
    pub reject_unsupported_task_criteria: bool,
    /// Most live tasks one session may hold (the next is refused).
    pub max_tasks_per_session: usize,
    /// Most 2026-07-28 tasks one principal holds (`maxTasksPerPrincipal`; see `task::budget`).
    pub max_tasks_per_principal: usize,
    /// Most 2026-07-28 tasks the server holds (`maxTasks`).
    pub max_tasks: usize,
    /// How long a 2026-07-28 client may cache a list (`ttlMs`), when set by `listTtlSeconds`.
    pub list_ttl_ms: Option<i64>,
}

/// Reads `options`: the server options, and the concern policies (invalid values, defaults).
pub(super) fn parse(v: &Value) -> Result<(Options, (InvalidValuePolicy, bool))> {
    let mut o = Options {
        page_size: DEFAULT_PAGE_SIZE,
        reject_unsupported_task_criteria: false,
        max_tasks_per_session: DEFAULT_MAX_TASKS,
        max_tasks_per_principal: DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        max_tasks: DEFAULT_MAX_TASKS_TOTAL,
        list_ttl_ms: None,
    };
    let mut invalid = InvalidValuePolicy::Reject;
    let mut apply_defaults = false;
    let obj = match v {
        Value::Null => return Ok((o, (invalid, apply_defaults))),
        Value::Object(m) => m,
        other => {
            return Err(Error::Catalog(format!(
                "options must be an object, got {}",
                type_name(other)
            )))
        }
    };
    for (k, val) in obj {
        match k.as_str() {
            "pageSize" => o.page_size = cap(val, k, 10_000)?,
            "invalidConcernValue" => {
                let s = val
                    .as_str()
                    .ok_or_else(|| Error::Catalog("options.invalidConcernValue must be a string".into()))?;
                invalid = InvalidValuePolicy::parse(s, "options.invalidConcernValue").map_err(Error::in_catalog)?;
            }
            "applyDefaults" => {
                apply_defaults =
                    val.as_bool().ok_or_else(|| Error::Catalog("options.applyDefaults must be a boolean".into()))?
            }
            "maxTasksPerSession" => o.max_tasks_per_session = cap(val, k, 10_000)?,
            // The 2026-07-28 task budget is the servers' (the package runs no tasks and, for its
            // size budget, only accepts the two fields).
            #[cfg(not(feature = "wasm"))]
            "maxTasksPerPrincipal" => o.max_tasks_per_principal = cap(val, k, 10_000)?,
            #[cfg(not(feature = "wasm"))]
            "maxTasks" => o.max_tasks = cap(val, k, 1_000_000)?,
            #[cfg(feature = "wasm")]
            other if other.starts_with("maxTasks") => {}
            "listTtlSeconds" => {
                let secs = val.as_u64().filter(|n| *n <= 86_400).ok_or_else(|| {
                    Error::Catalog("options.listTtlSeconds must be an integer from 0 to 86400".into())
                })?;
                o.list_ttl_ms = Some(secs as i64 * 1000);
            }
            "rejectUnsupportedTaskCriteria" => {
                o.reject_unsupported_task_criteria = val
                    .as_bool()
                    .ok_or_else(|| Error::Catalog("options.rejectUnsupportedTaskCriteria must be a boolean".into()))?
            }
            other => {
                return Err(Error::Catalog(format!(
                    "options has an unknown field \"{other}\"; expected pageSize, invalidConcernValue, applyDefaults, maxTasksPerSession, maxTasksPerPrincipal, maxTasks, listTtlSeconds, rejectUnsupportedTaskCriteria"
                )))
            }
        }
    }
    Ok((o, (invalid, apply_defaults)))
}

/// A count `options.<key>` (a page size, a task cap): an integer from 1 to `max`.
fn cap(val: &Value, key: &str, max: u64) -> Result<usize> {
    val.as_u64()
        .filter(|n| (1..=max).contains(n))
        .map(|n| n as usize)
        .ok_or_else(|| Error::Catalog(format!("options.{key} must be an integer from 1 to {max}")))
}
