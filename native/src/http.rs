//! HTTP plumbing both directions share: a request's headers as the core asks for them
//! (`headers`), how a core response becomes a hyper answer (`reply`), and the one client
//! connector for HTTP upstreams, key sets, authorization servers and the OTLP collector (`tls`:
//! rustls, the platform's roots, proxies).

pub(crate) mod headers;
pub(crate) mod reply;
pub(crate) mod tls;
