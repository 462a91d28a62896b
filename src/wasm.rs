//! Browser bindings (feature `wasm`), published by wasm-pack as the npm package `mcp-sieve`.
//!
//! One class, [`Sieve`], holds a compiled catalog; [`McpClient`] speaks MCP over `fetch`; a few
//! free functions cover task lists and stored concern preferences. These modules only convert
//! between JS and the core and delegate: every filtering rule lives in the core. The TypeScript
//! types are hand-written in `types.rs`.

mod callback;
mod client;
mod convert;
mod explain;
mod meaning;
mod middleware;
mod prefs;
mod sieve;
mod tasks;
mod types;

pub use client::McpClient;
pub use convert::estimate_tokens;
pub use prefs::{clear_concern_preferences, load_concern_preferences, save_concern_preferences};
pub use sieve::Sieve;
pub use tasks::filter_tasks;

/// The package's allocator: talc, smaller in the `.wasm` than the default dlmalloc.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
