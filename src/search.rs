//! Search mode's index (DESIGN.md "Search mode as an index"): an inverted index of the tools,
//! built once per catalog, off its load (`Catalog::search_index`), that `find_tools` scores
//! without parsing any definition. Only in the server builds (feature `search-index`: the
//! Worker and the native server); the npm package, whose wasm has no room left in its size
//! budget and whose catalogs are a browser's, ranks with `middleware::tool_filter` instead.

mod fields;
mod fx;
pub mod hybrid;
mod index;
mod memo;
mod names;
mod params;
mod related;
pub mod text;

pub use fields::ToolText;
pub use index::{Builder, SearchIndex, MAX_QUERY_WORDS};
pub use params::{Params, FIELDS, NAMES};
