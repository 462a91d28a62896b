//! What the Worker tells its operator about itself: log lines (`log`), one JSON object a line
//! on the console, which Workers Logs indexes field by field. Traces are the platform's own
//! (`[observability]` in `wrangler.toml`); the audit records and counters of each use are
//! `operate`'s. The native twin is `native/src/telemetry/`.

pub mod log;
