//! Code mode over stdio (`mcp-sieve stdio --code`): a `run_code` line's program runs on its own
//! (the next lines are read meanwhile; the client's `notifications/cancelled` of it stops it),
//! and each call it makes is a line of the one client's ([`super::handle`]: the view, rate
//! limits, audit marked with the run, the core, forwards), with `_meta.traceparent` the run's
//! span; its answer goes to the program instead of stdout ([`Link::send`]). A question the tool
//! asks mid-call (elicitation, sampling) reaches the client as a direct call's would, on stdout,
//! its answer coming back on stdin; a 2026-07-28 call's (`input_required`, which only the
//! client's own call again could answer) fails the call (`crate::code`).

use std::sync::Arc;

use mcp_sieve::protocol::code::NOT_RUN_HERE;
use mcp_sieve::stdio::Step;
use serde_json::Value;

use super::{lock, Link};
use crate::code::{Asked, BoxFuture, CallError, Host};
use crate::telemetry::request_log::RequestLog;

/// Who runs programs over stdio, for the runs-at-once limit: the process's one client.
const OWNER: &str = "stdio";

/// The run of `asked` when the core's answer in `step` refuses only to run it: that answer is
/// taken out of `step`, and the run writes its own in its place. `None`: the core refused the
/// request (its answer stays in `step`).
pub(super) fn run(link: &Arc<Link>, log: &RequestLog, step: &mut Step, asked: Asked) -> Option<BoxFuture<'static, ()>> {
    let at = step.lines.iter().position(|l| l.contains(NOT_RUN_HERE))?;
    let checked = step.lines.remove(at);
    let host = Stdio {
        link: link.clone(),
        trace: log
            .trace()
            .map(|t| crate::telemetry::tracer::headers(&t.context))
            .unwrap_or_default(),
    };
    Some(Box::pin(async move {
        let limits = host.link.live().server.catalog().code;
        if let Some(answer) = crate::code::answer(&host, OWNER, &checked, false, asked, &limits, None).await {
            host.link.send(answer);
        }
    }))
}

/// A program's calls, as lines of the client's.
struct Stdio {
    link: Arc<Link>,
    /// The run's span's context, the parent of each call's span (when traced).
    trace: Vec<(String, String)>,
}

impl Host for Stdio {
    fn serve<'a>(&'a self, run: &'a str, call: Value) -> BoxFuture<'a, Result<Value, CallError>> {
        Box::pin(async move {
            let id = call["id"].to_string();
            let name = call["params"]["arguments"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let (tx, rx) = tokio::sync::oneshot::channel();
            lock(&self.link.programs).insert(id.clone(), tx);
            let waiting = Waiting(&self.link, id);
            let line = crate::telemetry::with_meta_context(call.to_string(), &self.trace);
            if let Some(rest) = super::handle(&self.link, line, Some(run)).await {
                rest.await;
            }
            // Answered by now, or never.
            drop(waiting);
            let answer = rx.await.map_err(|_| CallError::NoAnswer(name.clone()))?;
            serde_json::from_str(&answer).map_err(|source| CallError::NotJson { name, source })
        })
    }
}

/// A program's call waiting for its answer; no longer when dropped (its run ended, or was
/// cancelled).
struct Waiting<'a>(&'a Link, String);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.0.programs).remove(&self.1);
    }
}
