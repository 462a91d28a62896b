//! The Worker as an OAuth 2.1 client of its upstreams: `sign_in` (the front Worker's routes, a
//! principal's `Authorization` header for an upstream, the sign-in error that names the URL),
//! `upstream_tokens` (the Durable Object holding one principal's sign-ins and tokens, and the
//! gateway's own for `client_credentials` upstreams) and `sealed` (those tokens encrypted at rest
//! with WebCrypto's AES-GCM). Every rule of the protocol is the core's (`mcp_sieve::upstream::oauth`);
//! the native twin is `native/src/oauth/`.

pub mod sealed;
pub mod sign_in;
pub mod upstream_tokens;
