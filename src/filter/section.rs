//! The primitives of one kind with their compiled index, and selection by a view filter and
//! concerns (the policy chain narrows it further: `chain.rs`).

use std::collections::HashMap;

use serde_json::{json, Value};

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
    /// Every item's wire object in one buffer, once [`Section::settle`]d.
    #[cfg(feature = "large-catalogs")]
    wires: Option<std::sync::Arc<Wires>>,
}

/// The items' wire objects one after another ([`Section::settle`]).
#[cfg(feature = "large-catalogs")]
#[derive(Debug)]
struct Wires {
    text: String,
    /// Where each item's object ends in `text` (it starts where the one before it ends).
    ends: Vec<u32>,
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
            #[cfg(feature = "large-catalogs")]
            wires: None,
        }
    }

    /// Writes every item's wire object once, one after another in one buffer, and pages are
    /// copied from there ([`Section::fragment`]): a long-running server's (the native one's)
    /// choice, made once its catalog is complete. An item's own fragment is reached through its
    /// struct, a boxed lazy form and the written copy, each seldom in the cache at 5,000 tools
    /// (`Primitive::fragment` was 7.6% of the native server's user time under
    /// scripts/bench-native.sh's load, before the copy itself); here it is an offset and the
    /// bytes. The items keep what they held (those not written yet stay so): the buffer is a
    /// second copy of the objects, about the document's size. A Worker does not settle: its
    /// first answer would write all of them. Settle once the items are final: items replaced
    /// afterwards by a different number of them are read one by one again (the buffer is not
    /// used), but an item changed in place is not seen until the section is settled again.
    #[cfg(feature = "large-catalogs")]
    pub fn settle(&mut self) {
        let mut text = String::new();
        let mut ends = Vec::with_capacity(self.items.len());
        for p in &self.items {
            p.write_fragment(&mut text);
            let Ok(end) = u32::try_from(text.len()) else {
                self.wires = None; // past 4 GiB of objects: each item's own
                return;
            };
            ends.push(end);
        }
        text.shrink_to_fit();
        self.wires = Some(std::sync::Arc::new(Wires { text, ends }));
    }

    /// Item `i`'s wire object (the same bytes as `items[i].fragment()`), from the settled
    /// buffer when there is one.
    #[inline]
    pub fn fragment(&self, i: usize) -> &str {
        #[cfg(feature = "large-catalogs")]
        if let Some(w) = self.wires.as_deref().filter(|w| w.ends.len() == self.items.len()) {
            let start = if i == 0 { 0 } else { w.ends[i - 1] as usize };
            return &w.text[start..w.ends[i] as usize];
        }
        self.items[i].fragment()
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

    /// Why item `pos` is out of a list filtered by `filter` (`written`: that filter as sent), part
    /// by part (`sieve/explain`, the package's `Sieve.explain`): each field that leaves it out on
    /// its own, as `{"code": "filter", "field", "filter": {field: <as written>}}`.
    pub fn filter_reasons(&self, pos: usize, filter: &Filter, written: &Value) -> Vec<Value> {
        let mut reasons = Vec::new();
        for (field, part) in filter.parts() {
            if !self.select(&part, &ConcernConfig::new()).get(pos) {
                reasons.push(json!({"code": "filter", "field": field, "filter": {field: written[field]}}));
            }
        }
        reasons
    }

    /// Each of `concerns` that leaves item `pos` out on its own, as `{"code": "concern:<name>",
    /// "configured", "mapped"}` (the value asked for and the item's, `null` when unmapped).
    pub fn concern_reasons(&self, pos: usize, concerns: &ConcernConfig) -> Vec<Value> {
        let item = &self.items[pos];
        let mut reasons = Vec::new();
        for (name, value) in concerns {
            let one: ConcernConfig = [(name.clone(), value.clone())].into();
            if !self.select(&Filter::default(), &one).get(pos) {
                let mapped = item.concerns.iter().find(|(c, _)| c == name).map(|(_, v)| v);
                reasons.push(json!({"code": format!("concern:{name}"), "configured": value, "mapped": mapped}));
            }
        }
        reasons
    }
}
