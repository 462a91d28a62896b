//! Search mode's index (ARCHITECTURE.md "Search mode"): an inverted index of the tools,
//! built once per catalog, off its load (`Catalog::search_index`), that `find_tools` scores
//! without parsing any definition. Only in the server builds (feature `search-index`: the
//! Worker and the native server); the npm package, whose wasm has little room in its size
//! budget and whose catalogs are a browser's, ranks with `middleware::tool_filter` instead, and
//! takes of this module only `hybrid` (the fusion with a host's sentence vectors, `Sieve.search`).

#[cfg(feature = "search-index")]
mod fields;
#[cfg(feature = "search-index")]
mod fx;
pub mod hybrid;
#[cfg(feature = "search-index")]
mod index;
#[cfg(feature = "search-index")]
mod memo;
#[cfg(feature = "search-index")]
mod names;
#[cfg(feature = "search-index")]
mod params;
#[cfg(feature = "search-index")]
mod related;
#[cfg(feature = "search-index")]
pub mod text;

#[cfg(feature = "search-index")]
pub use fields::ToolText;
#[cfg(feature = "search-index")]
pub use index::{Builder, SearchIndex, MAX_QUERY_WORDS};
#[cfg(feature = "search-index")]
pub use params::{Params, FIELDS, NAMES};
