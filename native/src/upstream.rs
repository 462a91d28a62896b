//! The upstreams' drivers: the bytes of the core's upstream conversations (`mcp_sieve::upstream`)
//! moved over HTTP (`crate::http::tls`) or to a child process (`stdio`),
//! gateway mode around them (`gateway`), the upstreams' standalone streams (`standalone`) and a
//! stateless client's task waiting on a session-era upstream (`task_asks`).

pub(crate) mod gateway;
pub(crate) mod standalone;
pub(crate) mod stdio;
pub(crate) mod task_asks;
