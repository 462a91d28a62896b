//! Search mode's meaning in the Worker (`meaning`): no model runs here; the tools' vectors come
//! from KV and a query's from Workers AI or an embeddings URL, fetched before the core's
//! synchronous `find_tools` takes it. The ranking is the core's (`mcp_sieve::search`); the
//! native twin, which runs the model, is `native/src/search/`. `model` checks that the tools'
//! vectors in KV and the queries' come from one model.

pub mod meaning;
mod model;
