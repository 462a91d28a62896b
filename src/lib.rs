#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
// Nothing reachable from input may panic: no unwrap/expect/panic outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

#[cfg(feature = "auth")]
pub mod auth;
pub mod base64;
pub mod catalog;
pub mod concern;
pub mod error;
// Exports for model APIs: server-only (the native CLI); the package has its own in JS.
#[cfg(feature = "large-catalogs")]
pub mod export;
pub mod filter;
pub mod http;
mod json;
pub mod middleware;
pub mod model;
#[cfg(feature = "operate")]
pub mod operate;
#[cfg(feature = "gateway")]
pub mod pin;
pub mod protocol;
#[cfg(any(feature = "search-index", feature = "wasm"))]
pub mod search;
mod secret_refs;
mod sort;
// MCP over stdio: server-only (the native binary), not in the package.
#[cfg(feature = "large-catalogs")]
pub mod stdio;
#[cfg(feature = "testing")]
pub mod synth;
pub mod task;
pub mod time;
pub mod upstream;

pub use catalog::Catalog;
pub use error::{Error, Result};
pub use filter::Filter;
#[cfg(feature = "wasm")]
pub mod wasm;

/// The book's chapter "From Rust" (`docs/src/rust.md`), whose examples run as doctests here as
/// the README's did: the crate docs are the README (the front page), the Rust examples live in the
/// book.
#[cfg(doctest)]
#[doc = include_str!("../docs/src/rust.md")]
mod book_rust {}
