//! Task records (MCP 2025-11-25 task shape and lifecycle) and the SEP-1904 `tasks/list` query.

pub mod budget;

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::concern::ConcernConfig;
use crate::error::{type_name, Error, Result};
use crate::json::str_array;
use crate::time::{format_iso, parse_iso};

/// Longest TTL granted a task, ms (a day); also the longest a gateway keeps its record of an
/// upstream task.
pub const MAX_TTL_MS: i64 = 86_400_000;

/// Task status of MCP 2025-11-25 (serialized as its wire name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Running.
    Working,
    /// Waiting for input from the requestor.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled by the requestor.
    Cancelled,
}

impl Status {
    /// Every status.
    pub const ALL: [Status; 5] = [
        Status::Working,
        Status::InputRequired,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether no further transition is allowed.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }

    /// Whether `self → to` is an allowed transition.
    pub fn can_become(self, to: Status) -> bool {
        !self.is_terminal() && self != to
    }
}

/// A task held by the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Unique id.
    pub id: String,
    /// Current status.
    pub status: Status,
    /// Optional human-readable status message.
    pub status_message: Option<String>,
    /// The request that created it (e.g. `tools/call`).
    pub method: String,
    /// Creation time, ms since the epoch.
    pub created_ms: i64,
    /// Last status change, ms since the epoch.
    pub updated_ms: i64,
    /// Time to live from creation, ms (`None`: unlimited).
    pub ttl_ms: Option<i64>,
    /// Suggested polling interval, ms.
    pub poll_interval_ms: Option<i64>,
    /// The concern mapping of what runs (a task inherits its tool's concerns).
    pub concerns: ConcernConfig,
    /// The result (or error) once terminal; for work with a known finish time, set in advance.
    pub result: Option<Value>,
    /// When work with a known duration completes, ms since the epoch.
    pub due_ms: Option<i64>,
    /// Its id in the server's task budget (`task::budget::slot`), for a 2025-11-25 session's task
    /// that was admitted there (servers only: the package keeps no budget).
    #[cfg(feature = "gateway")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
}

impl Task {
    /// A new working task.
    pub fn new(id: String, method: &str, now_ms: i64, ttl_ms: Option<i64>, concerns: ConcernConfig) -> Self {
        Task {
            id,
            status: Status::Working,
            status_message: None,
            method: method.into(),
            created_ms: now_ms,
            updated_ms: now_ms,
            ttl_ms,
            poll_interval_ms: Some(1000),
            concerns,
            result: None,
            due_ms: None,
            #[cfg(feature = "gateway")]
            slot: None,
        }
    }

    /// Completes work whose finish time has come; returns whether the status changed.
    pub fn advance(&mut self, now_ms: i64) -> bool {
        match self.due_ms {
            Some(due) if self.status == Status::Working && now_ms >= due => {
                self.status = Status::Completed;
                self.updated_ms = due;
                true
            }
            _ => false,
        }
    }

    /// Moves to `to` if the lifecycle allows it.
    pub fn transition(&mut self, to: Status, message: Option<String>, now_ms: i64) -> Result<()> {
        if !self.status.can_become(to) {
            return Err(Error::params(format!(
                "task {} is {} and cannot become {}",
                self.id,
                self.status.as_str(),
                to.as_str()
            )));
        }
        self.status = to;
        self.status_message = message;
        self.updated_ms = now_ms;
        Ok(())
    }

    /// Whether the task outlived its TTL at `now_ms`.
    pub fn expired(&self, now_ms: i64) -> bool {
        self.ttl_ms.is_some_and(|t| now_ms >= self.created_ms.saturating_add(t))
    }

    /// The wire `Task` object.
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("taskId".into(), json!(self.id));
        o.insert("status".into(), json!(self.status.as_str()));
        if let Some(m) = &self.status_message {
            o.insert("statusMessage".into(), json!(m));
        }
        o.insert("createdAt".into(), json!(format_iso(self.created_ms, 0)));
        o.insert("lastUpdatedAt".into(), json!(format_iso(self.updated_ms, 0)));
        o.insert("ttl".into(), self.ttl_ms.map_or(Value::Null, |t| json!(t)));
        if let Some(p) = self.poll_interval_ms {
            o.insert("pollInterval".into(), json!(p));
        }
        Value::Object(o)
    }
}

/// A task object of 2025-11-25 (`Task::to_json`, an upstream's) under the names of the 2026-07-28
/// tasks extension (SEP-2663): `ttlMs`, `pollIntervalMs` for `ttl`, `pollInterval`.
pub fn extension_names(t: Value) -> Map<String, Value> {
    let Value::Object(mut t) = t else {
        return Map::new();
    };
    for (old, new) in [("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")] {
        if let Some(v) = t.shift_remove(old) {
            t.entry(new).or_insert(v);
        }
    }
    t
}

/// Which field orders the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OrderBy {
    /// `createdAt`
    CreatedAt,
    /// `lastUpdatedAt` (the default)
    #[default]
    LastUpdatedAt,
}

/// A parsed SEP-1904 query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskQuery {
    /// Underlying request methods (ANY).
    pub methods: Vec<String>,
    /// Task ids (ANY).
    pub task_ids: Vec<String>,
    /// Statuses (ANY).
    pub status: Vec<Status>,
    /// `createdAt > createdAfter`.
    pub created_after: Option<i64>,
    /// `createdAt < createdBefore`.
    pub created_before: Option<i64>,
    /// `lastUpdatedAt > lastUpdatedAfter`.
    pub updated_after: Option<i64>,
    /// `lastUpdatedAt < lastUpdatedBefore`.
    pub updated_before: Option<i64>,
    /// Order field.
    pub order_by: OrderBy,
    /// Ascending (default descending).
    pub ascending: bool,
    /// Criteria sent that this server does not support (ignored unless rejected).
    pub unsupported: Vec<String>,
}

const FIELDS: [&str; 9] = [
    "methods",
    "taskIds",
    "status",
    "createdAfter",
    "createdBefore",
    "lastUpdatedAfter",
    "lastUpdatedBefore",
    "orderBy",
    "order",
];

/// Fields of `tasks/list` params that are not criteria.
const NOT_CRITERIA: [&str; 4] = ["cursor", "_meta", "filter", "concerns"];

impl TaskQuery {
    /// Parses the query from `tasks/list` params: fields at the top of `params` and under
    /// `params.filter` (the latter wins). With `reject_unsupported`, unknown criteria are `-32602`.
    pub fn parse(params: &Value, reject_unsupported: bool) -> Result<Self> {
        let mut q = TaskQuery::default();
        let top = match params {
            Value::Null => return Ok(q),
            Value::Object(o) => o,
            other => {
                return Err(Error::params(format!(
                    "params must be an object, got {}",
                    type_name(other)
                )))
            }
        };
        q.read(top, "params", true)?;
        match top.get("filter") {
            None | Some(Value::Null) => {}
            Some(Value::Object(f)) => q.read(f, "params.filter", false)?,
            Some(other) => {
                return Err(Error::params(format!(
                    "params.filter must be an object, got {}",
                    type_name(other)
                )))
            }
        }
        if reject_unsupported && !q.unsupported.is_empty() {
            return Err(Error::params(format!(
                "unsupported task filter criteria: {}; supported: {}",
                q.unsupported.join(", "),
                FIELDS.join(", ")
            )));
        }
        Ok(q)
    }

    fn read(&mut self, o: &Map<String, Value>, path: &str, top: bool) -> Result<()> {
        let time = |k: &str| -> Result<Option<i64>> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => parse_iso(s, &format!("{path}.{k}")).map(Some),
                Some(v) => Err(Error::params(format!(
                    "{path}.{k} must be an ISO 8601 string, got {}",
                    type_name(v)
                ))),
            }
        };
        for (k, v) in o {
            let p = format!("{path}.{k}");
            match k.as_str() {
                "methods" => self.methods = str_array(Some(v), &p)?,
                "taskIds" => {
                    if let Some(n) = v.as_array().map(Vec::len).filter(|n| *n > crate::filter::MAX_LIST) {
                        return Err(Error::params(format!(
                            "{p} has {n} entries; at most {} are allowed",
                            crate::filter::MAX_LIST
                        )));
                    }
                    self.task_ids = str_array(Some(v), &p)?
                }
                "status" => {
                    self.status = str_array(Some(v), &p)?
                        .iter()
                        .map(|s| {
                            Status::parse(s).ok_or_else(|| {
                                Error::params(format!(
                                    "{p} has unknown status \"{s}\"; expected working, input_required, completed, failed, cancelled"
                                ))
                            })
                        })
                        .collect::<Result<_>>()?
                }
                "createdAfter" => self.created_after = time(k)?,
                "createdBefore" => self.created_before = time(k)?,
                "lastUpdatedAfter" => self.updated_after = time(k)?,
                "lastUpdatedBefore" => self.updated_before = time(k)?,
                "orderBy" => {
                    self.order_by = match v.as_str() {
                        Some("createdAt") => OrderBy::CreatedAt,
                        Some("lastUpdatedAt") => OrderBy::LastUpdatedAt,
                        _ => return Err(Error::params(format!("{p} must be \"createdAt\" or \"lastUpdatedAt\", got {v}"))),
                    }
                }
                "order" => {
                    self.ascending = match v.as_str() {
                        Some("asc") => true,
                        Some("desc") => false,
                        _ => return Err(Error::params(format!("{p} must be \"asc\" or \"desc\", got {v}"))),
                    }
                }
                other if top && NOT_CRITERIA.contains(&other) => {}
                // Per-request concerns filter tasks too; the protocol layer applies them.
                "concerns" => {}
                other => self.unsupported.push(format!("{path}.{other}")),
            }
        }
        Ok(())
    }

    /// Whether `t` passes every criterion.
    pub fn matches(&self, t: &Task) -> bool {
        (self.methods.is_empty() || self.methods.contains(&t.method))
            && (self.task_ids.is_empty() || self.task_ids.contains(&t.id))
            && (self.status.is_empty() || self.status.contains(&t.status))
            && self.created_after.is_none_or(|a| t.created_ms > a)
            && self.created_before.is_none_or(|b| t.created_ms < b)
            && self.updated_after.is_none_or(|a| t.updated_ms > a)
            && self.updated_before.is_none_or(|b| t.updated_ms < b)
    }

    /// The order of two tasks: by the chosen field and direction, ties by `taskId` ascending so
    /// pages are stable.
    pub fn compare(&self, a: &Task, b: &Task) -> Ordering {
        let key = |t: &Task| match self.order_by {
            OrderBy::CreatedAt => t.created_ms,
            OrderBy::LastUpdatedAt => t.updated_ms,
        };
        let primary = key(a).cmp(&key(b));
        let primary = if self.ascending { primary } else { primary.reverse() };
        primary.then_with(|| a.id.cmp(&b.id))
    }

    /// Filters `tasks` (also by the session's concerns) and sorts them.
    pub fn apply<'a>(&self, tasks: impl IntoIterator<Item = &'a Task>, concerns: &ConcernConfig) -> Vec<&'a Task> {
        let mut out: Vec<&Task> = tasks
            .into_iter()
            .filter(|t| self.matches(t) && concerns_match(&t.concerns, concerns))
            .collect();
        crate::sort::sort_by(&mut out, |a, b| self.compare(a, b));
        out
    }

    /// A canonical form, for binding cursors.
    pub fn canonical(&self) -> String {
        format!("{self:?}")
    }
}

/// A wire `Task` object as the core's record. Tasks carry no `method` on the wire; MCP
/// 2025-11-25 servers run only `tools/call` as tasks, so that is assumed unless `method` is given.
#[cfg(any(feature = "wasm", feature = "gateway"))]
pub(crate) fn from_wire(v: &Value, path: &str) -> Result<Task> {
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

/// Positions of the wire `tasks` (objects of a `tasks/list` result) `query` keeps, in its order;
/// an object that is not a task is an error naming it.
#[cfg(any(feature = "wasm", feature = "gateway"))]
pub fn kept(tasks: &[Value], query: &TaskQuery) -> Result<Vec<usize>> {
    let records = tasks
        .iter()
        .enumerate()
        .map(|(i, v)| from_wire(v, &format!("tasks[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let mut keep: Vec<usize> = (0..records.len()).filter(|&i| query.matches(&records[i])).collect();
    crate::sort::sort_by(&mut keep, |&a, &b| query.compare(&records[a], &records[b]));
    Ok(keep)
}

/// The concern rule for one task: every configured concern is unmapped or equal.
pub fn concerns_match(mapping: &ConcernConfig, configured: &ConcernConfig) -> bool {
    configured.iter().all(|(c, v)| mapping.get(c).is_none_or(|m| m == v))
}

/// The `tasks.list.filter` capability, generated from what `TaskQuery` supports.
pub fn filter_capability(methods: &[&str]) -> Value {
    json!({
        "methods": methods,
        "taskIds": true,
        "status": true,
        "createdAt": {"before": true, "after": true},
        "lastUpdatedAt": {"before": true, "after": true},
        "order": {"by": ["createdAt", "lastUpdatedAt"], "direction": ["asc", "desc"]}
    })
}
