//! A task's shape in each protocol era, for a gateway whose client and upstream speak different
//! ones. 2025-11-25: the creating call answers `{task: Task}`, `tasks/get` and `tasks/cancel`
//! the `Task` (`ttl`, `pollInterval`). The 2026-07-28 tasks extension (SEP-2663,
//! `io.modelcontextprotocol/tasks`): the creating call answers `resultType: "task"` with the
//! task's fields inline (`ttlMs`, `pollIntervalMs`), `tasks/get` the task with its `result`,
//! `error` or `inputRequests` inline (`task::extension_names` renames the fields, here and in
//! mcp-sieve's own server). [`to_client`] turns an upstream's result into the shape of the client's
//! era, whichever the upstream spoke; [`legacy_task`] is the 2025-11-25 task of either shape.

use serde_json::{json, Map, Value};

use super::{Era, Reply};
use crate::error::Error;
use crate::protocol::Forward;
use crate::task::extension_names;

/// The 2025-11-25 task of `t` (a task object of either era): its fields under their 2025-11-25
/// names (`ttl`, `pollInterval`), without what that revision does not have (`resultType`, the
/// inline `result`, `error`, `inputRequests`).
pub fn legacy_task(t: &Map<String, Value>) -> Value {
    let mut o = Map::new();
    for k in ["taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt"] {
        if let Some(v) = t.get(k) {
            o.insert(k.into(), v.clone());
        }
    }
    // A failed task of the extension says why in its inline `error`; 2025-11-25 in `statusMessage`.
    if let (Some("failed"), None, Some(m)) = (
        t.get("status").and_then(Value::as_str),
        t.get("statusMessage"),
        t.get("error").and_then(|e| e.get("message")),
    ) {
        o.insert("statusMessage".into(), m.clone());
    }
    o.insert(
        "ttl".into(),
        t.get("ttl").or(t.get("ttlMs")).cloned().unwrap_or(Value::Null),
    );
    if let Some(p) = t
        .get("pollInterval")
        .or(t.get("pollIntervalMs"))
        .filter(|p| !p.is_null())
    {
        o.insert("pollInterval".into(), p.clone());
    }
    if let Some(m) = t.get("_meta") {
        o.insert("_meta".into(), m.clone());
    }
    Value::Object(o)
}

/// Whether `r`, the result of `f`, is a created task: `resultType: "task"` (2026-07-28), or a
/// `task` object answering a call that asked for one (2025-11-25).
fn created(f: &Forward, r: &Map<String, Value>) -> bool {
    let asked = f.params.get("task").is_some_and(|t| !t.is_null());
    f.method == "tools/call"
        && (r.get("resultType") == Some(&json!("task")) || asked && r.get("task").is_some_and(Value::is_object))
}

/// Puts the result of `msg` (the upstream's answer to `f`) in the shape of the client's era: a
/// 2025-11-25 session gets `{task}` from a creating call and plain tasks from `tasks/get` and
/// `tasks/cancel`; a 2026-07-28 client gets `resultType: "task"` with the task's fields inline
/// and tasks with `ttlMs`/`pollIntervalMs`. Anything else is left as it is.
pub fn to_client(f: &Forward, msg: &mut Value) {
    let Some(Value::Object(r)) = msg.get_mut("result") else {
        return;
    };
    if created(f, r) {
        let seed = match r.get("task") {
            Some(Value::Object(t)) => t.clone(),
            _ => r.clone(),
        };
        let Value::Object(mut task) = legacy_task(&seed) else {
            return;
        };
        let meta = r.remove("_meta");
        task.remove("_meta");
        let mut out = Map::new();
        if f.stateless {
            out.insert("resultType".into(), json!("task"));
            out.extend(extension_names(Value::Object(task)));
        } else {
            out.insert("task".into(), Value::Object(task));
        }
        if let Some(m) = meta {
            out.insert("_meta".into(), m);
        }
        *r = out;
        return;
    }
    let is_task =
        matches!(f.method.as_str(), "tasks/get" | "tasks/cancel") && r.get("taskId").is_some_and(Value::is_string);
    match (is_task, f.stateless) {
        (true, false) => {
            if let Value::Object(t) = legacy_task(r) {
                *r = t;
            }
        }
        (true, true) => *r = extension_names(Value::Object(std::mem::take(r))),
        _ => {}
    }
}

/// The request (method, task id) a task method's answer needs to be followed by when the client's
/// era and the upstream's differ (`rounds::drive_rounds` sends it, [`follow`] puts its answer in):
/// a 2026-07-28 client's `tasks/get` of a finished task at a session-era upstream gets its
/// `result` (or `error`) from that upstream's `tasks/result`; a 2025-11-25 session's
/// `tasks/cancel` at a 2026-07-28 upstream that answered the extension's bare acknowledgement gets
/// the task from `tasks/get`; so does its `tasks/result` there when the upstream has none (the
/// extension's `-32601`), answered with the finished task's `result` or `error` — asked again
/// while the task works, as [`pause`] says.
pub fn follow_up<'f>(f: &'f Forward, era: Era, r: &Reply) -> Option<(&'static str, &'f str)> {
    let id = f.params.get("taskId")?.as_str()?;
    let response = r.response.as_ref()?;
    let unknown = response["error"]["code"].as_i64() == Some(crate::error::code::METHOD_NOT_FOUND as i64);
    if (f.method.as_str(), f.stateless, era, unknown) == ("tasks/result", false, Era::Modern, true) {
        return Some(("tasks/get", id));
    }
    let result = response.get("result")?;
    let finished = matches!(result["status"].as_str(), Some("completed" | "failed"));
    let method = match (f.method.as_str(), f.stateless, era) {
        // A session era (an upstream spoken to without discovery is one).
        ("tasks/get", true, e)
            if e != Era::Modern && finished && result.get("result").is_none() && result.get("error").is_none() =>
        {
            "tasks/result"
        }
        ("tasks/cancel", false, Era::Modern) if result.get("taskId").is_none() => "tasks/get",
        _ => return None,
    };
    Some((method, id))
}

/// Longest a 2025-11-25 session's `tasks/result` waits for a task still working at an upstream
/// without `tasks/result` (asked with `tasks/get` at the task's `pollIntervalMs`), unless the
/// task's `ttl` is shorter: then it is answered an error saying so.
pub const MAX_RESULT_WAIT_MS: u64 = 600_000;

/// How often such a task is asked when it names no `pollIntervalMs` (and the bounds of one it
/// names: an upstream asking for 0 ms is not asked in a busy loop).
const POLL_MS: (u64, u64, u64) = (1_000, 50, 30_000);

/// For a [`follow_up`] `method` whose answer is `more`: how long to wait before asking the
/// upstream again, when `f` is a 2025-11-25 session's `tasks/result` answered from `tasks/get`
/// (`tasks/result` blocks until the task is terminal, in that revision) and the task still works
/// (`working`; `input_required` with no `inputRequests` inline: `rounds` asks those) after
/// `waited_ms` of waiting, within its `ttl` and
/// [`MAX_RESULT_WAIT_MS`]. `None`: `more` is the answer to put in ([`follow`]).
pub fn pause(f: &Forward, method: &str, more: &Reply, waited_ms: u64) -> Option<u64> {
    if (f.method.as_str(), f.stateless, method) != ("tasks/result", false, "tasks/get") {
        return None;
    }
    let t = more.response.as_ref()?.get("result")?;
    if !matches!(t["status"].as_str(), Some("working" | "input_required")) {
        return None;
    }
    let ms = |k: &str, m: &str| t.get(k).or(t.get(m)).and_then(Value::as_u64);
    let bound = ms("ttlMs", "ttl").map_or(MAX_RESULT_WAIT_MS, |ttl| ttl.min(MAX_RESULT_WAIT_MS));
    let (default, least, most) = POLL_MS;
    let every = ms("pollIntervalMs", "pollInterval")
        .unwrap_or(default)
        .clamp(least, most);
    let left = bound.checked_sub(waited_ms).filter(|l| *l > 0)?;
    Some(every.min(left))
}

/// Completes `r` with `more`, the upstream's answer to the [`follow_up`] `method`: the finished
/// task's `result` (or `error`) inline, or the cancelled task in place of the acknowledgement.
pub fn follow(method: &str, r: &mut Reply, more: Reply) {
    let Some(msg) = r.response.as_mut() else {
        return;
    };
    if let (Some(m), Some(t)) = (msg.as_object_mut().filter(|m| m.contains_key("error")), &more.response) {
        // tasks/result answered from tasks/get: the finished task's result or error.
        let t = &t["result"];
        let id = t["taskId"].as_str().unwrap_or_default();
        let failed = || json!({"code": crate::error::code::INTERNAL_ERROR, "message": format!("task \"{id}\" failed")});
        let answer = match t["status"].as_str() {
            Some("completed") => t.get("result").cloned().map(|v| ("result", v)),
            Some("failed") => Some(("error", t.get("error").cloned().unwrap_or_else(failed))),
            Some(status @ ("cancelled" | "working" | "input_required")) => {
                let e = match status {
                    "cancelled" => Error::params(format!("task \"{id}\" is cancelled and has no result")),
                    _ => Error::Upstream(format!(
                        "task \"{id}\" is still {status}: the gateway waits for its result at most its ttl and {} s; call tasks/result again",
                        MAX_RESULT_WAIT_MS / 1000
                    )),
                };
                Some(("error", e.to_json()))
            }
            _ => None,
        };
        if let Some((k, v)) = answer {
            m.remove("error");
            m.insert(k.into(), v);
        }
        return;
    }
    let (Some(Value::Object(res)), Some(more)) = (msg.get_mut("result"), more.response) else {
        return;
    };
    match (method, more.get("result"), more.get("error")) {
        ("tasks/result", _, Some(e)) => {
            res.insert("error".into(), e.clone());
        }
        ("tasks/result", Some(v), _) => {
            res.insert("result".into(), v.clone());
        }
        ("tasks/get", Some(Value::Object(t)), _) if t.get("taskId").is_some_and(Value::is_string) => *res = t.clone(),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward(method: &str, params: Value, stateless: bool) -> Forward {
        Forward {
            method: method.into(),
            params,
            stateless,
            ..Forward::default()
        }
    }

    #[test]
    fn a_flat_2026_task_becomes_a_2025_create_task_result_and_back() {
        let flat = json!({"result": {"resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 500}});
        let mut m = flat.clone();
        to_client(&forward("tools/call", json!({"name": "x", "task": {}}), false), &mut m);
        assert_eq!(
            m["result"],
            json!({"task": {"taskId": "t1", "status": "working", "createdAt": "2026-01-01T00:00:00Z",
                "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000, "pollInterval": 500}})
        );
        let mut legacy = m.clone();
        to_client(
            &forward("tools/call", json!({"name": "x", "task": {}}), true),
            &mut legacy,
        );
        assert_eq!(legacy["result"]["resultType"], "task");
        assert_eq!(legacy["result"]["taskId"], "t1");
        assert_eq!(legacy["result"]["ttlMs"], 60000);
        assert_eq!(legacy["result"]["pollIntervalMs"], 500);
        assert_eq!(legacy["result"].get("task"), None);
    }

    #[test]
    fn a_failed_2026_task_tells_a_2025_session_why_in_its_status_message() {
        let failed = json!({"result": {"resultType": "complete", "taskId": "t1", "status": "failed",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z", "ttlMs": 60000,
            "error": {"code": -32000, "message": "the report could not be written"}}});
        let mut m = failed.clone();
        to_client(&forward("tasks/get", json!({"taskId": "t1"}), false), &mut m);
        assert_eq!(m["result"]["statusMessage"], json!("the report could not be written"));
        assert_eq!(m["result"]["status"], json!("failed"));
        assert!(m["result"].get("error").is_none() && m["result"].get("resultType").is_none());
        // A 2026-07-28 client keeps the inline error.
        let mut m = failed.clone();
        to_client(&forward("tasks/get", json!({"taskId": "t1"}), true), &mut m);
        assert_eq!(m["result"]["error"]["code"], json!(-32000));
    }
}
