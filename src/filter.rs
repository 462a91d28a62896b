//! The filter language (parsing with path-aware errors), the compiled bitset index that evaluates
//! it, a plain reference implementation used by tests and benchmarks, the programmable chain
//! (policy filters with a `FilterContext`), declarative policy rules and initial checks, and the
//! section of one kind of primitive with its selection.

pub mod bits;
pub mod chain;
pub mod facets;
pub mod glob;
pub mod index;
pub mod naive;
#[cfg(feature = "large-catalogs")]
mod plain;
pub mod policy;
mod section;
mod spec;
mod view;

pub use bits::Bits;
pub use chain::{FilterContext, InitialCheck, PrimitiveFilter};
pub use index::Index;
pub use section::Section;
pub(crate) use spec::check_len;
pub use spec::{Expr, Filter, MAX_EXPR_NODES, MAX_LIST, MAX_STRING};
pub use view::{EndpointView, ViewPart};
