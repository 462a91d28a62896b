#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod catalog;
pub mod concern;
pub mod error;
pub mod filter;
mod json;
pub mod model;

pub use catalog::Catalog;
pub use error::{Error, Result};
pub use filter::Filter;
