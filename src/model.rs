//! Wire types of the primitives: tools, resources, resource templates, prompts, groups and tags.
//! Each keeps the JSON object it came from, so unknown fields survive a load → list round trip.

mod group;
mod primitive;

pub use group::{Group, Tag};
#[cfg(feature = "large-catalogs")]
pub(crate) use primitive::text::{Item, ItemsSeed};
#[cfg(feature = "large-catalogs")]
pub(crate) use primitive::Wire;
pub use primitive::{Kind, Primitive, META_GROUPS};
