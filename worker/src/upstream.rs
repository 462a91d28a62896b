//! The Worker's side of its upstream MCP servers (gateway mode): `gateway` moves the bytes of
//! the core's upstream conversations (`mcp_sieve::upstream`) over `fetch` or a service binding,
//! keeps this isolate's conversation with each upstream and signs its requests. What flows back
//! during a call (questions, notes, an upstream session's GET stream) is `relay`'s. The native
//! twin is `native/src/upstream/`.

pub mod gateway;
