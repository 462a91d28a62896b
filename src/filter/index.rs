//! The compiled index: one bitset per group (with its ancestors), tag, concern value and
//! "no mapping for concern C". A filter becomes a few word-wise ANDs and ORs.

use std::collections::HashMap;

use serde_json::Value;

use crate::concern::ConcernConfig;
use crate::filter::{glob, Bits, Expr, Filter};
use crate::model::Primitive;

/// The hash of the index's maps and of a section's by id: in the servers (`large-catalogs`)
/// foldhash, seeded per process, a fraction of SipHash's cost per name (at 5,000 tools the maps
/// were a tenth of a Worker's catalog load); names come from the operator's document or an
/// upstream's lists, and lookups by a client's names only read. The package keeps std's.
#[cfg(feature = "large-catalogs")]
pub(crate) type Seeded = foldhash::fast::RandomState;
#[cfg(not(feature = "large-catalogs"))]
pub(crate) type Seeded = std::collections::hash_map::RandomState;

/// A map by name with the index's hash.
pub(crate) type ByName<V> = HashMap<String, V, Seeded>;

/// The index of one kind of primitive, in catalog order.
/// Its maps are read and made by a prepared form's index too (`catalog/prepared.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Index {
    pub(crate) len: usize,
    pub(crate) by_name: ByName<usize>,
    /// Each group's members, with its child groups' (a group named by an item and its ancestors).
    pub(crate) groups: ByName<Bits>,
    pub(crate) tags: ByName<Bits>,
    pub(crate) concern_values: ByName<ByName<Bits>>,
    pub(crate) concern_unmapped: ByName<Bits>,
}

/// Sets bit `i` of `key`'s bits in `map` (of `len` bits; made when absent, the key copied only then).
fn set_bit(map: &mut ByName<Bits>, key: &str, i: usize, len: usize) {
    match map.get_mut(key) {
        Some(b) => b.set(i),
        None => {
            let mut b = Bits::empty(len);
            b.set(i);
            map.insert(key.to_string(), b);
        }
    }
}

/// The ancestors of `group` (itself first), following `parent` links; stops at a cycle.
pub fn ancestors<'a>(group: &'a str, parents: &'a HashMap<String, String>) -> Vec<&'a str> {
    let mut out = vec![group];
    let mut cur = group;
    while let Some(p) = parents.get(cur) {
        if out.contains(&p.as_str()) {
            break;
        }
        out.push(p);
        cur = p;
    }
    out
}

impl Index {
    /// Compiles `items`; `parents` maps a group to its parent group.
    pub fn build(items: &[Primitive], parents: &HashMap<String, String>) -> Self {
        let len = items.len();
        let mut ix = Index {
            len,
            ..Default::default()
        };
        ix.by_name.reserve(len);
        let mut concern_names: Vec<&str> = Vec::new();
        // Each group's ancestors found once (a catalog names a few groups, thousands of times).
        // Servers only: in the package another map's code was 866 bytes gzipped, for catalogs a
        // browser holds (docs/src/performance.md, "Cold start").
        #[cfg(feature = "large-catalogs")]
        let mut chains: HashMap<&str, Vec<&str>, Seeded> = HashMap::default();
        for (i, item) in items.iter().enumerate() {
            if !ix.by_name.contains_key(&item.name) {
                ix.by_name.insert(item.name.clone(), i);
            }
            for g in &item.groups {
                #[cfg(feature = "large-catalogs")]
                let chain = &*chains.entry(g.as_str()).or_insert_with(|| ancestors(g, parents));
                #[cfg(not(feature = "large-catalogs"))]
                let chain = &ancestors(g, parents);
                for a in chain {
                    set_bit(&mut ix.groups, a, i, len);
                }
            }
            for t in &item.tags {
                set_bit(&mut ix.tags, t, i, len);
            }
            for (c, v) in &item.concerns {
                match ix.concern_values.get_mut(c.as_str()) {
                    Some(values) => set_bit(values, v, i, len),
                    None => {
                        let mut values = ByName::default();
                        set_bit(&mut values, v, i, len);
                        ix.concern_values.insert(c.clone(), values);
                    }
                }
                if !concern_names.contains(&c.as_str()) {
                    concern_names.push(c);
                }
            }
        }
        for c in concern_names {
            let mut unmapped = Bits::full(len);
            for bits in ix.concern_values[c].values() {
                unmapped.and_not(bits);
            }
            ix.concern_unmapped.insert(c.to_string(), unmapped);
        }
        ix
    }

    /// Each item's position by its name (the first item of a name), as `build` makes it: for a
    /// prepared form's index, which holds the rest.
    // Not inlined: its loop runs once per item (`catalog.rs`'s `undeclared` says why).
    #[cfg(feature = "large-catalogs")]
    #[inline(never)]
    pub(crate) fn by_name(items: &[Primitive]) -> ByName<usize> {
        let mut by_name = ByName::with_capacity_and_hasher(items.len(), Seeded::default());
        for (i, item) in items.iter().enumerate() {
            if !by_name.contains_key(&item.name) {
                by_name.insert(item.name.clone(), i);
            }
        }
        by_name
    }

    /// Number of items indexed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no items are indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Position of the item named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Items that are members of `group` (directly or through a child group).
    pub fn group(&self, group: &str) -> Option<&Bits> {
        self.groups.get(group)
    }

    /// Items carrying `tag`.
    pub fn tag(&self, tag: &str) -> Option<&Bits> {
        self.tags.get(tag)
    }

    /// The items that pass `filter` under the effective concern configuration `concerns`.
    pub fn eval(&self, items: &[Primitive], filter: &Filter, concerns: &ConcernConfig) -> Bits {
        let mut res = Bits::full(self.len);
        if !filter.groups.is_empty() {
            let mut any = Bits::empty(self.len);
            for g in &filter.groups {
                if let Some(b) = self.groups.get(g) {
                    any.or(b);
                }
            }
            res.and(&any);
        }
        for t in &filter.tags {
            match self.tags.get(t) {
                Some(b) => res.and(b),
                None => return Bits::empty(self.len),
            }
        }
        for t in &filter.exclude_tags {
            if let Some(b) = self.tags.get(t) {
                res.and_not(b);
            }
        }
        if !filter.name_patterns.is_empty() {
            res.and(&self.names(items, &filter.name_patterns));
        }
        #[cfg(feature = "standards")]
        if !filter.uri_patterns.is_empty() {
            let globs: Vec<glob::Glob> = filter.uri_patterns.iter().map(|p| glob::Glob::new(p)).collect();
            for (i, item) in items.iter().enumerate() {
                if item.kind.has_uri() && !globs.iter().any(|g| g.matches(&item.id)) {
                    res.clear(i);
                }
            }
        }
        self.and_concerns(&mut res, concerns.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let Some(e) = &filter.expr {
            res.and(&self.eval_expr(items, e));
        }
        res
    }

    /// The items mapped to every value of `concerns` (an unmapped item is in none: this is the
    /// policy rule's "hide by concern", not the view's "unmapped = agnostic").
    pub fn mapped_to(&self, concerns: &ConcernConfig) -> Bits {
        let mut res = Bits::full(self.len);
        for (c, v) in concerns {
            match self.concern_values.get(c).and_then(|m| m.get(v)) {
                Some(vb) => res.and(vb),
                None => return Bits::empty(self.len),
            }
        }
        res
    }

    fn and_concerns<'a>(&self, res: &mut Bits, pairs: impl Iterator<Item = (&'a str, &'a str)>) {
        for (c, v) in pairs {
            // A concern no item maps constrains nothing: every item is agnostic to it.
            let Some(unmapped) = self.concern_unmapped.get(c) else {
                continue;
            };
            match self.concern_values.get(c).and_then(|m| m.get(v)) {
                Some(vb) => res.and_either(vb, unmapped),
                None => res.and(unmapped),
            }
        }
    }

    fn names(&self, items: &[Primitive], patterns: &[String]) -> Bits {
        let mut any = Bits::empty(self.len);
        for p in patterns {
            if glob::is_literal(p) {
                if let Some(i) = self.position(p) {
                    any.set(i);
                }
            } else {
                let g = glob::Glob::new(p);
                for (i, item) in items.iter().enumerate() {
                    if g.matches(&item.name) {
                        any.set(i);
                    }
                }
            }
        }
        any
    }

    fn eval_expr(&self, items: &[Primitive], e: &Expr) -> Bits {
        let pick = |b: Option<&Bits>| b.cloned().unwrap_or_else(|| Bits::empty(self.len));
        match e {
            Expr::All(v) => {
                let mut r = Bits::full(self.len);
                v.iter().for_each(|x| r.and(&self.eval_expr(items, x)));
                r
            }
            Expr::Any(v) => {
                let mut r = Bits::empty(self.len);
                v.iter().for_each(|x| r.or(&self.eval_expr(items, x)));
                r
            }
            Expr::Not(x) => {
                let mut r = self.eval_expr(items, x);
                r.not();
                r
            }
            Expr::Group(g) => pick(self.groups.get(g)),
            Expr::Tag(t) => pick(self.tags.get(t)),
            Expr::Name(p) => self.names(items, std::slice::from_ref(p)),
            Expr::Concern(pairs) => {
                let mut r = Bits::full(self.len);
                self.and_concerns(&mut r, pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                r
            }
            Expr::Annotation(pairs) => {
                let mut r = Bits::empty(self.len);
                for (i, item) in items.iter().enumerate() {
                    if pairs.iter().all(|(k, v)| item.annotation(k).as_ref() == Some(v)) {
                        r.set(i);
                    }
                }
                r
            }
        }
    }
}

/// Appends `{"<key>":[fragment,fragment,...]` to `out` for the selected items (no closing brace),
/// so callers can add `nextCursor` or `_meta` before closing the object.
pub fn write_list(out: &mut String, key: &str, items: &[Primitive], selected: impl Iterator<Item = usize>) {
    out.push_str("{\"");
    out.push_str(key);
    out.push_str("\":[");
    let mut first = true;
    for i in selected {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(items[i].fragment());
    }
    out.push(']');
}

/// Convenience: the whole list object as a `Value` (tests, bindings).
pub fn list_value(key: &str, items: &[Primitive], selected: &Bits) -> Value {
    let mut s = String::new();
    write_list(&mut s, key, items, selected.ones());
    s.push('}');
    serde_json::from_str(&s).unwrap_or(Value::Null)
}
