//! The primitives of one kind with their compiled index, and selection by a view filter and
//! concerns (the policy chain narrows it further: `chain.rs`).

use std::collections::HashMap;

use crate::concern::ConcernConfig;
use crate::filter::{Bits, Filter, Index};
use crate::model::Primitive;

/// The primitives of one kind with their index.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Items in document order.
    pub items: Vec<Primitive>,
    /// The compiled index over `items`.
    pub index: Index,
    by_id: super::index::ByName<usize>,
    /// Which section this is, for the selections views keep: unique per [`Section::new`] (a
    /// clone has the same items and keeps it). Servers only.
    #[cfg(feature = "large-catalogs")]
    pub(crate) id: u64,
}

impl Section {
    /// A section of `items` compiled with the group `parents` map.
    pub fn new(items: Vec<Primitive>, parents: &HashMap<String, String>) -> Self {
        let index = Index::build(&items, parents);
        Self::with_index(items, index)
    }

    /// A section of `items` and their `index`, built already (a prepared form's).
    // Inlined: the package (no prepared form) compiles `new` as it was.
    #[inline(always)]
    pub(crate) fn with_index(items: Vec<Primitive>, index: Index) -> Self {
        // Tools and prompts are identified by their name: found by the index's map by name, not a
        // second map of the same keys (at 5,000 tools a copy of each name and an insert, on a
        // fresh Worker's first answer). Ids are unique (the catalog's load checks them).
        let by_id = match items.iter().all(|p| p.id == p.name) {
            true => Default::default(),
            false => items.iter().enumerate().map(|(i, p)| (p.id.clone(), i)).collect(),
        };
        Section {
            items,
            index,
            by_id,
            #[cfg(feature = "large-catalogs")]
            id: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        }
    }

    /// Position of the item whose identity (name, uri or uriTemplate) is `id`.
    pub fn find(&self, id: &str) -> Option<usize> {
        match self.by_id.is_empty() {
            true => self.index.position(id),
            false => self.by_id.get(id).copied(),
        }
    }

    /// The items mapped to every value of `concerns` (unmapped items are not).
    pub fn mapped_to(&self, concerns: &ConcernConfig) -> Bits {
        self.index.mapped_to(concerns)
    }

    /// The items passing `filter` under `concerns`.
    pub fn select(&self, filter: &Filter, concerns: &ConcernConfig) -> Bits {
        self.index.eval(&self.items, filter, concerns)
    }
}
