//! A catalog document in a prepared form (feature `large-catalogs`: the Worker reads it, the
//! native CLI's `mcp-sieve prepare` writes it): the JSON document as given, followed by an index
//! of what the load reads from it — each primitive's fields as the load made them (name, id,
//! membership, concerns, annotations, `execution.taskSupport`), where its wire object is in the
//! text (or the object itself), each section's index (the bits of each group, tag and concern
//! value: [`Index`]), the tools' aliases, and where the other top-level fields are.
//! A Worker loads it without splitting or parsing the document's primitive lists (at 5,000 tools
//! that was most of a fresh isolate's first answer: docs/src/performance.md, "Cold start"); the
//! catalog is the one the JSON gives (the index is written from that load).
//!
//! The value is `mcp-sieve-prepared FORMAT json=N index=N version=V tag=T\n`, then the JSON
//! document (N bytes), then the index (N bytes). Any reader finds the JSON from that first line,
//! so a form of another format or version, or one whose index does not read, is refused with a
//! [`PreparedError`] and its JSON loaded instead. The index: unsigned LEB128 integers,
//! length-prefixed UTF-8 strings and bitsets of little-endian 64-bit words, every count and range
//! checked against what is left and every bitset against its section (as many words, no position
//! past its items), so no value makes the reader or a later lookup panic or allocate past its size. `tag` is a digest of the rest, written
//! by `prepare`, by which a Worker tells a changed value without hashing it (not checked: the
//! value is the operator's). A short reader of our own, not a serde format: it is the code a
//! fresh isolate compiles on its first request, and the index is only strings, integers and words.

use std::sync::Arc;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{section_index, text, Catalog};
use crate::error::Error;
use crate::filter::index::ByName;
use crate::filter::{Bits, Index};
use crate::model::{Kind, Primitive, Wire};

/// How a prepared form's first line starts.
pub const MAGIC: &str = "mcp-sieve-prepared";
/// The index's layout; a reader refuses another.
/// Format 2 added each section's index (the load built it from the items: a fresh Worker's
/// `Section::new`, docs/src/performance.md, "Cold start", seventh round).
pub const FORMAT: u32 = 2;
/// The version of mcp-sieve that writes and reads this form: the index holds what this
/// version's load makes of the document, so another version's is refused too.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a prepared form was not written or not read.
#[derive(Debug, thiserror::Error)]
pub enum PreparedError {
    /// Its first line is not one this reader understands; the JSON cannot be found.
    #[error("the prepared form's first line is malformed ({0}); expected \"{MAGIC} {FORMAT} json=LENGTH index=LENGTH version=VERSION tag=TAG\"")]
    Header(String),
    /// Written by another format or version of mcp-sieve.
    #[error("the prepared form is format {format} of mcp-sieve {version}; this build reads format {FORMAT} of mcp-sieve {VERSION} (run `mcp-sieve prepare` of this version again)")]
    Stale {
        /// Its format.
        format: u32,
        /// The version that wrote it.
        version: String,
    },
    /// Its index does not read.
    #[error("the prepared form's index is corrupt: {what} at byte {at} of {len}")]
    Corrupt {
        /// What was wrong.
        what: &'static str,
        /// Where in the index.
        at: usize,
        /// The index's length.
        len: usize,
    },
    /// The document cannot be prepared (`prepare`), or its top-level fields did not load.
    #[error(transparent)]
    Catalog(#[from] Error),
}

/// A prepared form's first line, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The index's layout.
    pub format: u32,
    /// The version of mcp-sieve that wrote it.
    pub version: String,
    /// The digest `prepare` wrote (a change of the value changes it).
    pub tag: String,
    /// Where the JSON document is in the value.
    pub json: std::ops::Range<usize>,
    /// Where the index is.
    pub index: std::ops::Range<usize>,
}

/// Reads a value's first line: `None` when it is not a prepared form (a JSON document).
pub fn header(value: &[u8]) -> Option<Result<Header, PreparedError>> {
    let rest = value.strip_prefix(MAGIC.as_bytes())?.strip_prefix(b" ")?;
    let bad = |what: &str| PreparedError::Header(what.to_string());
    let read = || {
        let eol = rest
            .iter()
            .take(512)
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("no end of line"))?;
        let line = std::str::from_utf8(&rest[..eol]).map_err(|_| bad("not text"))?;
        let mut words = line.split(' ');
        let format = words
            .next()
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| bad("no format"))?;
        let mut fields: Vec<(&str, &str)> = Vec::new();
        for w in words {
            fields.push(w.split_once('=').ok_or_else(|| bad("a word without '='"))?);
        }
        let field = |k: &str| fields.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let length = |k: &str| -> Result<usize, PreparedError> {
            field(k)
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| bad(&format!("no {k}=LENGTH")))
        };
        let start = MAGIC.len() + 1 + eol + 1;
        let json = start
            ..start
                .checked_add(length("json")?)
                .ok_or_else(|| bad("json= too large"))?;
        let index = json.end
            ..json
                .end
                .checked_add(length("index")?)
                .ok_or_else(|| bad("index= too large"))?;
        if index.end != value.len() {
            return Err(bad(&format!(
                "the lengths give {} bytes, the value has {}",
                index.end,
                value.len()
            )));
        }
        Ok(Header {
            format,
            version: field("version").unwrap_or_default().to_string(),
            tag: field("tag").unwrap_or_default().to_string(),
            json,
            index,
        })
    };
    Some(read())
}

/// The prepared form of the JSON document `json`: the document as given and the index of what
/// this version's load makes of it. A document that does not load is refused with its error, as
/// is a gateway's (it is loaded whole, with its upstreams' lists: nothing to prepare).
pub fn prepare(json: &str) -> Result<Vec<u8>, PreparedError> {
    let catalog = Catalog::from_json_str(json)?;
    if !catalog.upstreams.is_empty() {
        return Err(Error::Catalog(
            "a gateway's document (upstream, upstreams) is loaded with its upstreams' lists and is not prepared; put its JSON as it is".into(),
        )
        .into());
    }
    let Some(top) = text::split(json) else {
        return Err(Error::Catalog("the document's top level could not be split; put its JSON as it is".into()).into());
    };
    let mut w = Writer(Vec::with_capacity(json.len() / 8));
    // The other top-level fields, as ranges of the text; `concernMapping` is applied already.
    let fields: Vec<_> = top.fields.iter().filter(|(k, _)| *k != "concernMapping").collect();
    w.uint(fields.len());
    for (key, raw) in fields {
        let at = offset(json, raw.get());
        w.str(key);
        w.uint(at);
        w.uint(at + raw.get().len());
    }
    for kind in Kind::ALL {
        let items = &catalog.section(kind).items;
        w.uint(items.len());
        for p in items {
            w.item(p, json.len());
        }
        w.index(&catalog.section(kind).index, items, &catalog.parents);
    }
    #[cfg(feature = "standards")]
    let mut aliases: Vec<(&String, &String)> = catalog.aliases.iter().collect();
    #[cfg(not(feature = "standards"))]
    let mut aliases: Vec<(&String, &String)> = Vec::new();
    aliases.sort();
    w.uint(aliases.len());
    for (old, name) in aliases {
        w.str(old);
        w.str(name);
    }
    let index = w.0;
    let mut digest = Sha256::new();
    digest.update(json.as_bytes());
    digest.update(&index);
    let tag: String = digest.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect();
    let mut out = format!(
        "{MAGIC} {FORMAT} json={} index={} version={VERSION} tag={tag}\n",
        json.len(),
        index.len()
    )
    .into_bytes();
    out.reserve(json.len() + index.len());
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(&index);
    Ok(out)
}

/// The offset of `part` (a slice of `doc`) in `doc`.
fn offset(doc: &str, part: &str) -> usize {
    part.as_ptr() as usize - doc.as_ptr() as usize
}

/// Item flags.
const ID_IS_NAME: u8 = 1;
const TASK_SUPPORT: u8 = 2;
const LAZY: u8 = 4;
const MAPPED: u8 = 8;
const ALIASES: u8 = 16;

struct Writer(Vec<u8>);

impl Writer {
    fn uint(&mut self, n: usize) {
        let mut n = n as u64;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                return self.0.push(b);
            }
            self.0.push(b | 0x80);
        }
    }

    fn str(&mut self, s: &str) {
        self.uint(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }

    fn strs(&mut self, v: &[String]) {
        self.uint(v.len());
        v.iter().for_each(|s| self.str(s));
    }

    /// A map of bits, its keys in the order of `keys` when given (all of them), else sorted
    /// (the index's maps are unordered: the value is the same each time the same document is
    /// prepared, and so is its tag).
    fn bits(&mut self, map: &ByName<Bits>, keys: Option<Vec<&str>>) {
        let keys = match keys {
            Some(k) if k.len() == map.len() && k.iter().all(|k| map.contains_key(*k)) => k,
            _ => {
                let mut k: Vec<&str> = map.keys().map(String::as_str).collect();
                k.sort_unstable();
                k
            }
        };
        self.uint(keys.len());
        for k in keys {
            let b = &map[k];
            self.str(k);
            b.words()
                .iter()
                .for_each(|w| self.0.extend_from_slice(&w.to_le_bytes()));
        }
    }

    /// A section's index but its map by name (a map the load makes from the names it read); its
    /// groups and tags in the order the items first name them (each group before its ancestors),
    /// which is the order the load adds the undeclared ones to the catalog's (`undeclared`).
    fn index(&mut self, ix: &Index, items: &[Primitive], parents: &std::collections::HashMap<String, String>) {
        let (mut groups, mut tags): (Vec<&str>, Vec<&str>) = Default::default();
        for p in items {
            for g in &p.groups {
                for a in crate::filter::index::ancestors(g, parents) {
                    if !groups.contains(&a) {
                        groups.push(a);
                    }
                }
            }
            for t in &p.tags {
                if !tags.contains(&t.as_str()) {
                    tags.push(t);
                }
            }
        }
        self.bits(&ix.groups, Some(groups));
        self.bits(&ix.tags, Some(tags));
        let mut concerns: Vec<_> = ix.concern_values.iter().collect();
        concerns.sort_unstable_by_key(|(k, _)| k.as_str());
        self.uint(concerns.len());
        for (c, values) in concerns {
            self.str(c);
            self.bits(values, None);
        }
        self.bits(&ix.concern_unmapped, None);
    }

    fn item(&mut self, p: &Primitive, doc_len: usize) {
        let wire = p.wire();
        let mut flags = 0;
        if p.id == p.name {
            flags |= ID_IS_NAME;
        }
        if p.task_support.is_some() {
            flags |= TASK_SUPPORT;
        }
        if let Wire::Lazy {
            end, mapped, aliases, ..
        } = wire
        {
            // The catalog was loaded from a copy of the same text.
            debug_assert!(end <= doc_len);
            flags |= LAZY | if mapped { MAPPED } else { 0 } | if aliases { ALIASES } else { 0 };
        }
        self.0.push(flags);
        self.str(&p.name);
        if p.id != p.name {
            self.str(&p.id);
        }
        self.strs(&p.groups);
        self.strs(&p.tags);
        self.uint(p.concerns.len());
        for (k, v) in &p.concerns {
            self.str(k);
            self.str(v);
        }
        // Each annotation on its own: most are `true` or `false`, made without a JSON parser.
        self.uint(p.annotations.len());
        for (k, v) in &p.annotations {
            self.str(k);
            self.str(&v.to_string());
        }
        if let Some(t) = &p.task_support {
            self.str(t);
        }
        match wire {
            Wire::Written(s) => self.str(s),
            Wire::Lazy { start, end, .. } => {
                self.uint(start);
                self.uint(end);
            }
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn corrupt(&self, what: &'static str) -> PreparedError {
        PreparedError::Corrupt {
            what,
            at: self.at,
            len: self.b.len(),
        }
    }

    fn byte(&mut self) -> Result<u8, PreparedError> {
        let b = *self.b.get(self.at).ok_or_else(|| self.corrupt("it ends early"))?;
        self.at += 1;
        Ok(b)
    }

    fn uint(&mut self) -> Result<usize, PreparedError> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return usize::try_from(n).map_err(|_| self.corrupt("a number too large"));
            }
        }
        Err(self.corrupt("a number too long"))
    }

    /// A count of things of at least one byte each (so no count allocates past the index).
    fn count(&mut self) -> Result<usize, PreparedError> {
        let n = self.uint()?;
        match n <= self.b.len() - self.at {
            true => Ok(n),
            false => Err(self.corrupt("a count past the end")),
        }
    }

    fn str(&mut self) -> Result<&'a str, PreparedError> {
        let len = self.uint()?;
        let end = self
            .at
            .checked_add(len)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| self.corrupt("a string past the end"))?;
        let s = std::str::from_utf8(&self.b[self.at..end]).map_err(|_| self.corrupt("a string that is not UTF-8"))?;
        self.at = end;
        Ok(s)
    }

    fn string(&mut self) -> Result<String, PreparedError> {
        self.str().map(str::to_string)
    }

    fn strings(&mut self) -> Result<Vec<String>, PreparedError> {
        let n = self.count()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.string()?);
        }
        Ok(v)
    }

    /// A map of bitsets over `len` items (`Writer::bits`).
    // Not inlined: its loops run once per key and word, not with the items' (`text::read`).
    #[inline(never)]
    fn bits(&mut self, len: usize, order: Option<&mut Vec<String>>) -> Result<ByName<Bits>, PreparedError> {
        let n = self.count()?;
        let mut order = order;
        let words = len.div_ceil(64);
        let mut map = ByName::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            let key = self.string()?;
            let end = words
                .checked_mul(8)
                .and_then(|b| b.checked_add(self.at))
                .filter(|&e| e <= self.b.len())
                .ok_or_else(|| self.corrupt("a bitset past the end"))?;
            let bytes = &self.b[self.at..end];
            let v = bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect();
            let bits =
                Bits::from_words(v, len).ok_or_else(|| self.corrupt("a bitset with a position past the items"))?;
            self.at = end;
            if let Some(order) = order.as_mut() {
                order.push(key.clone());
            }
            if map.insert(key, bits).is_some() {
                return Err(self.corrupt("a key twice in a map of bitsets"));
            }
        }
        Ok(map)
    }

    /// A section's index over its `items` (`Writer::index`); its map by name is made from them.
    /// `named` gets its groups' and tags' names in the order written (`Writer::index`).
    #[inline(never)]
    fn index(&mut self, items: &[Primitive], named: &mut Named) -> Result<Index, PreparedError> {
        let len = items.len();
        let groups = self.bits(len, Some(&mut named.0))?;
        let tags = self.bits(len, Some(&mut named.1))?;
        let n = self.count()?;
        let mut concern_values = ByName::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            let c = self.string()?;
            let values = self.bits(len, None)?;
            if concern_values.insert(c, values).is_some() {
                return Err(self.corrupt("a concern twice in the index"));
            }
        }
        let concern_unmapped = self.bits(len, None)?;
        if concern_unmapped.len() != concern_values.len()
            || !concern_unmapped.keys().all(|c| concern_values.contains_key(c))
        {
            return Err(self.corrupt("the index's concerns and their unmapped items disagree"));
        }
        Ok(Index {
            len,
            by_name: Index::by_name(items),
            groups,
            tags,
            concern_values,
            concern_unmapped,
        })
    }

    /// A range of the document `doc` that holds a JSON object (an item's text).
    fn range(&mut self, doc: &str) -> Result<(usize, usize), PreparedError> {
        let (start, end) = (self.uint()?, self.uint()?);
        match doc.get(start..end) {
            Some(t) if t.starts_with('{') && t.ends_with('}') => Ok((start, end)),
            _ => Err(self.corrupt("an item's range that is not an object of the document")),
        }
    }

    // One function per item, apart from the load's loop (`text::read` says why).
    #[inline(never)]
    fn item(&mut self, kind: Kind, doc: &Arc<str>) -> Result<Primitive, PreparedError> {
        let flags = self.byte()?;
        let name = self.string()?;
        let id = match flags & ID_IS_NAME {
            0 => self.string()?,
            _ => name.clone(),
        };
        let mut p = Primitive::bare(kind, name, id);
        p.groups = self.strings()?;
        p.tags = self.strings()?;
        let n = self.count()?;
        p.concerns.reserve_exact(n);
        for _ in 0..n {
            p.concerns.push((self.string()?, self.string()?));
        }
        for _ in 0..self.count()? {
            let key = self.string()?;
            let value = match self.str()? {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                t => serde_json::from_str(t).map_err(|_| self.corrupt("an annotation that is not JSON"))?,
            };
            p.annotations.insert(key, value);
        }
        if flags & TASK_SUPPORT != 0 {
            p.task_support = Some(self.string()?);
        }
        let wire = match flags & LAZY {
            0 => Wire::Written(self.str()?),
            _ => {
                let (start, end) = self.range(doc)?;
                Wire::Lazy {
                    start,
                    end,
                    mapped: flags & MAPPED != 0,
                    aliases: flags & ALIASES != 0,
                }
            }
        };
        Ok(p.prepared(doc, wire))
    }
}

/// A section's groups (each before its ancestors) and tags in the order its items first name
/// them: the catalog's undeclared ones are added in this order (`undeclared`).
pub(super) type Named = (Vec<String>, Vec<String>);

/// What the index gives [`Catalog::load_parts`]: each section's primitives and the aliases.
pub(super) struct Read {
    pub(super) sections: [Vec<Primitive>; 4],
    /// Each section's index, as the load would build it from its items.
    pub(super) indexes: [Index; 4],
    /// Each section's groups and tags by first use.
    pub(super) named: [Named; 4],
    pub(super) aliases: Vec<(String, String)>,
}

impl Catalog {
    /// Loads a prepared form whose JSON document is `json` (checked as UTF-8 by the caller) and
    /// whose first line is `header`, from its `index`: the same catalog as
    /// [`Catalog::from_json_str`] of `json`, without parsing its primitive lists. A form of
    /// another format or version, or an index that does not read, is refused (the caller then
    /// loads `json`).
    pub fn from_prepared(json: &str, header: &Header, index: &[u8]) -> Result<Self, PreparedError> {
        if header.format != FORMAT || header.version != VERSION {
            return Err(PreparedError::Stale {
                format: header.format,
                version: header.version.clone(),
            });
        }
        let doc: Arc<str> = Arc::from(json);
        let mut r = Reader { b: index, at: 0 };
        let mut fields = Map::new();
        for _ in 0..r.count()? {
            let key = r.string()?;
            let (start, end) = (r.uint()?, r.uint()?);
            let text = doc
                .get(start..end)
                .ok_or_else(|| r.corrupt("a field's range outside the document"))?;
            let value = serde_json::from_str(text).map_err(|_| r.corrupt("a field's range that is not JSON"))?;
            fields.insert(key, value);
        }
        let mut read = Read {
            sections: Default::default(),
            indexes: Default::default(),
            named: Default::default(),
            aliases: Vec::new(),
        };
        for kind in Kind::ALL {
            let n = r.count()?;
            let items = &mut read.sections[section_index(kind)];
            items.reserve(n);
            for _ in 0..n {
                items.push(r.item(kind, &doc)?);
            }
            read.indexes[section_index(kind)] = r.index(items, &mut read.named[section_index(kind)])?;
        }
        for _ in 0..r.count()? {
            read.aliases.push((r.string()?, r.string()?));
        }
        if r.at != index.len() {
            return Err(r.corrupt("bytes after the index"));
        }
        Ok(Self::load_parts(fields, None, Some(read))?)
    }
}
