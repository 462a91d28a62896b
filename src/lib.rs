#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod catalog;
pub mod concern;
pub mod error;
pub mod filter;
pub mod http;
mod json;
pub mod model;
pub mod protocol;
pub mod synth;
pub mod task;
pub mod time;

pub use catalog::Catalog;
pub use error::{Error, Result};
pub use filter::Filter;
#[cfg(feature = "wasm")]
pub mod wasm;
