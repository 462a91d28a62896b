//! Operating the Worker (issue 42): each use's audit record (built by the core) as one JSON line
//! on the console (Workers Logs), and its counters as a data point in a Workers Analytics Engine
//! dataset when one is bound as [`DATASET`] (blobs: method, item, upstream, outcome, reason,
//! principal, each cut at 128 bytes, an item the server does not have as `unknown`; doubles:
//! duration in ms, 1 per use; index: the item). Rate limits are asked in `operate/limiter.rs` before the
//! use runs.

pub mod limiter;

use std::cell::{Cell, RefCell};

use mcp_sieve::http;
use mcp_sieve::operate::audit::{self, Ended};
use mcp_sieve::operate::{label_value, Use, UNKNOWN_ITEM};
use mcp_sieve::protocol::{Env as CoreEnv, Server};
use worker::{AnalyticsEngineDataPointBuilder, AnalyticsEngineDataset, Env};

use crate::auth::Caller;
use crate::platform::now_ms;
use crate::telemetry::log;

/// The Analytics Engine binding the counters go to, when bound.
pub const DATASET: &str = "MCP_SIEVE_METRICS";

/// The longest index a data point may have (Analytics Engine's limit), in bytes.
const MAX_INDEX_BYTES: usize = 96;

thread_local! {
    /// This isolate's dataset (set by the first [`bind`]).
    static METRICS: RefCell<Option<AnalyticsEngineDataset>> = const { RefCell::new(None) };
    /// Whether [`bind`] has looked for it.
    static BOUND: Cell<bool> = const { Cell::new(false) };
}

/// Keeps the dataset of `env`, if bound. Looked up once: an isolate's bindings do not change, and
/// the lookup (the binding's constructor name read across the boundary) was 5.7% of a session
/// request's time in the isolate when every request made it.
pub fn bind(env: &Env) {
    if BOUND.replace(true) {
        return;
    }
    if let Ok(d) = env.analytics_engine(DATASET) {
        METRICS.with(|m| *m.borrow_mut() = Some(d));
    }
}

/// The core's view of `caller` now.
pub fn core_env(caller: &Caller) -> CoreEnv {
    CoreEnv {
        now_ms: now_ms(),
        principal: caller.principal.clone(),
        fresh_id: String::new(),
        view: caller.view.clone(),
        identity: caller.identity.clone(),
    }
}

/// A use seen before the core ran.
pub struct Seen {
    usage: Use,
    started_ms: i64,
}

/// The use `body` makes, when the document audits or a dataset counts (else nothing is kept).
pub fn seen(server: &Server, body: &[u8], caller: &Caller) -> Option<Seen> {
    let counting = METRICS.with(|m| m.borrow().is_some());
    if !server.audit().on && !counting {
        return None;
    }
    let env = core_env(caller);
    let mut usage = server.use_of(body, &env)?;
    // A call a code-mode program made: its record says so, with the run's id.
    usage.via = caller.via.clone();
    Some(Seen {
        usage,
        started_ms: env.now_ms,
    })
}

/// Writes the record and the data point of a use whose answer is `answer` (`refused`: a rate
/// limit's reason code; a refusal as unknown is asked of the core).
pub fn finish(server: &Server, caller: &Caller, seen: Option<Seen>, answer: &http::Response, refused: Option<&str>) {
    let Some(seen) = seen else { return };
    let ended = match answer.forward.is_some() || answer.watch.is_some() || answer.ask.is_some() {
        true => Ended::unknown(),
        false => Ended::of_body(&answer.body),
    };
    // Refused over a limit, or when the item was not usable or the message itself was (a string
    // past the body limits): such a use never ran.
    let reason = match refused {
        Some(r) => Some(r.to_string()),
        None => server.refusal_for(&seen.usage, &core_env(caller), ended.error_code),
    };
    let duration = now_ms() - seen.started_ms;
    let u = &seen.usage;
    if server.audit().on {
        let line = audit::record(
            u,
            seen.started_ms,
            duration,
            reason.as_deref(),
            &ended,
            server.audit().payload_cap(),
        );
        worker::console_log!("{line}");
    }
    METRICS.with(|m| {
        let Some(d) = m.borrow().clone() else { return };
        let outcome = if reason.is_some() { "refused" } else { ended.outcome() };
        // An item the server does not have is `unknown`; every value cut at 128 bytes, the index
        // at the 96 Analytics Engine takes (a name a caller invents neither spreads nor breaks
        // the dataset).
        let item = label_value(server.counted_item(u).unwrap_or(UNKNOWN_ITEM));
        let point = AnalyticsEngineDataPointBuilder::new()
            .indexes([mcp_sieve::operate::cut_at_char(item, MAX_INDEX_BYTES)])
            .add_blob(u.method)
            .add_blob(item)
            .add_blob(label_value(u.upstream.as_deref().unwrap_or("")))
            .add_blob(outcome)
            .add_blob(label_value(reason.as_deref().unwrap_or("")))
            .add_blob(label_value(u.principal.as_deref().unwrap_or("")))
            .add_double(duration as f64)
            .add_double(1.0)
            .build();
        if let Err(e) = d.write_data_point(&point) {
            log::About::of_use(u).error(format_args!("a metrics data point could not be written: {e}"));
        }
    });
}
