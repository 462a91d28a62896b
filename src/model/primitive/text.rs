//! A primitive read from its JSON text without a `serde_json::Value` tree (feature
//! `large-catalogs`: the Worker and the native server). At load, one pass over the item's text
//! reads only the fields a primitive keeps (name, id, membership, concerns, annotations,
//! `execution.taskSupport`, a tool's `aliases`) and skips the others; the wire fragment is
//! written from the text when first asked for ([`Lazy`]): the object's fields split into their
//! texts, in order, copied as they are written when that is already how serde_json would write
//! them (no whitespace, only the escapes it writes, integers), else written again from their
//! value. The fragment is the one [`Primitive::from_json`] makes, byte for byte; anything
//! irregular (a wrong type, a missing name) returns `None`, and the caller loads that item the
//! general way, which names the error.
//! Measured at 5,000 tools: the load of a Worker's first request, parsed per item into a tree,
//! written back and dropped, was two thirds of its CPU; then every item's fragment written at
//! load was a sixth of what was left, for a first answer that lists one page of them
//! (docs/src/performance.md, "Cold start").

use std::borrow::Cow;

use std::sync::{Arc, OnceLock};

use serde::de::{Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{dedup, read_concerns, Fragment, Kind, Primitive, META_GROUPS};

/// One object's fields in order, each value as its text: a later duplicate key replaces the
/// earlier value in its place, as a parsed `Map` does.
struct Fields<'a>(Vec<(Cow<'a, str>, Field<'a>)>);

/// A field's value in the fragment being written.
enum Field<'a> {
    /// As written in the document.
    Text(&'a RawValue),
    /// Already written as JSON.
    Json(String),
    /// The `_meta` object (written from [`Item::meta`]).
    Meta,
}

/// A key, borrowed from the text when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields = Fields(Vec::new());
                while let Some(Key(k)) = map.next_key()? {
                    let v: &'de RawValue = map.next_value()?;
                    fields.insert(k, Field::Text(v));
                }
                Ok(fields)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Fields<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    fn get(&self, key: &str) -> Option<&Field<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The text of a field as written (`None`: absent).
    fn text(&self, key: &str) -> Option<&'a str> {
        match self.get(key) {
            Some(Field::Text(t)) => Some(t.get()),
            _ => None,
        }
    }

    /// Sets a field in its place, or last when new (`Map::insert` with `preserve_order`).
    fn insert(&mut self, key: Cow<'a, str>, value: Field<'a>) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    /// Removes a field, the others keeping their order.
    #[cfg(feature = "standards")]
    fn remove(&mut self, key: &str) -> Option<&'a str> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        match self.0.remove(at).1 {
            Field::Text(t) => Some(t.get()),
            _ => None,
        }
    }

    /// Writes the object as serde_json writes a `Map` (`meta`: what [`Field::Meta`] stands for).
    fn write(&self, out: &mut String, meta: Option<&Fields<'a>>) {
        out.push('{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_str(out, k);
            out.push(':');
            match v {
                Field::Text(t) => write_compact(out, t.get()),
                Field::Json(j) => out.push_str(j),
                Field::Meta => match meta {
                    Some(m) => m.write(out, None),
                    None => out.push_str("{}"),
                },
            }
        }
        out.push('}');
    }
}

/// A JSON string as serde_json writes it.
fn write_str(out: &mut String, s: &str) {
    // Writing a string to a String cannot fail.
    if let Ok(j) = serde_json::to_string(s) {
        out.push_str(&j);
    }
}

/// The value `text` (valid JSON) as serde_json writes it once parsed: copied when it already is
/// that (no whitespace between tokens, only the escapes serde_json writes, numbers that are
/// integers it keeps as such), else parsed and written.
fn write_compact(out: &mut String, text: &str) {
    let start = out.len();
    if copy_compact(out, text) {
        return;
    }
    out.truncate(start);
    match serde_json::from_str::<Value>(text).and_then(|v| serde_json::to_string(&v)) {
        Ok(j) => out.push_str(&j),
        Err(_) => out.push_str(text), // it was parsed already: not reached
    }
}

/// Copies `text` without its whitespace between tokens; `false` when what it copied would not be
/// what serde_json writes (an escape it writes otherwise, a fraction or exponent, `-0`, an integer
/// of more than 18 digits).
// A function of its own: its loop over every byte is what a first page's fragments run hot, and
// inlined into `Fields::write` it made V8 compile all of that (2.2 KB) with TurboFan on a fresh
// Worker's first answer (bench/cold-trace.mjs).
#[inline(never)]
fn copy_compact(out: &mut String, text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        // serde_json writes these as such; `\/` and `\uXXXX` differ (it writes
                        // `/`, the character itself, or `\u00xx` with lowercase digits).
                        if !matches!(b.get(i + 1), Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't')) {
                            return false;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b' ' | b'\n' | b'\r' | b'\t' => {
                out.push_str(&text[from..i]);
                while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
                    i += 1;
                }
                from = i;
            }
            b'-' | b'0'..=b'9' => {
                let digits_from = i + usize::from(b[i] == b'-');
                let mut j = digits_from;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                let negative_zero = b[i] == b'-' && b.get(digits_from) == Some(&b'0');
                if j - digits_from > 18 || negative_zero || matches!(b.get(j), Some(b'.' | b'e' | b'E')) {
                    return false;
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[from..]);
    true
}

/// The item's `_meta` made an object, as `Map::entry("_meta").or_insert(null)` then `{}` when
/// null (absent: added last; null: replaced in its place), marked to be written from `meta`.
fn meta_object<'a, 'm>(fields: &mut Fields<'a>, meta: &'m mut Option<Option<Fields<'a>>>) -> &'m mut Fields<'a> {
    fields.insert(Cow::Borrowed("_meta"), Field::Meta);
    meta.get_or_insert(None).get_or_insert_with(|| Fields(Vec::new()))
}

/// A field's text parsed as `T`; absent or `null` is `T::default()`.
fn parse_or_default<'a, T: Deserialize<'a> + Default>(text: Option<&'a str>) -> Option<T> {
    match text {
        None => Some(T::default()),
        Some(t) => serde_json::from_str::<Option<T>>(t).ok().map(Option::unwrap_or_default),
    }
}

/// An item's text and the texts of the fields the load reads (the others only skipped), split
/// in the document's own pass over its lists ([`ItemsSeed`]) or from the item's text
/// ([`Item::split`]). A field written twice: its last value, as a parsed `Map` keeps.
pub(crate) struct Item<'a> {
    /// The item's text, its braces included.
    text: &'a str,
    name: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    groups: Option<&'a RawValue>,
    tags: Option<&'a RawValue>,
    meta: Option<&'a RawValue>,
    annotations: Option<&'a RawValue>,
    execution: Option<&'a RawValue>,
    aliases: Option<&'a RawValue>,
}

impl<'a> Item<'a> {
    /// Splits the item `text` (one JSON value); `None` when it is not an object.
    pub(crate) fn split(kind: Kind, text: &'a str) -> Option<Self> {
        let mut de = serde_json::Deserializer::from_str(text);
        let mut item = ItemSeed { kind, doc: None }.deserialize(&mut de).ok()?;
        de.end().ok()?;
        item.text = text;
        Some(item)
    }

    /// The item's text.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }
}

/// The offset of `part` (a slice of `doc`) in `doc`.
fn offset(doc: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(doc.as_ptr() as usize)?;
    (at + part.len() <= doc.len()).then_some(at)
}

/// JSON's whitespace.
fn blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Splits an item of `kind`. In a pass over the document `doc`, also finds the item's text there
/// (from its first key, written without escapes, to its last value); an item where it cannot
/// (no fields, or an escaped first key) is an error, and the caller splits the document another way.
struct ItemSeed<'a> {
    kind: Kind,
    doc: Option<&'a str>,
}

impl<'de> DeserializeSeed<'de> for ItemSeed<'de> {
    type Value = Item<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Item<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed<'de> {
    type Value = Item<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }
    // One function per item, kept apart from the document's pass (see `read`).
    #[inline(never)]
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'de>, A::Error> {
        let mut item = Item {
            text: "",
            name: None,
            id: None,
            groups: None,
            tags: None,
            meta: None,
            annotations: None,
            execution: None,
            aliases: None,
        };
        let id = self.kind.id_field();
        let unplaced = || serde::de::Error::custom("the item's text is not found in the document");
        let mut first: Option<usize> = None;
        let mut last: Option<&'de RawValue> = None;
        while let Some(Key(k)) = map.next_key()? {
            if let (None, Some(doc)) = (first, self.doc) {
                first = Some(match &k {
                    Cow::Borrowed(k) => offset(doc, k).ok_or_else(unplaced)?,
                    Cow::Owned(_) => return Err(unplaced()),
                });
            }
            let v: &'de RawValue = map.next_value()?;
            match &*k {
                "name" => item.name = Some(v),
                k if k == id => item.id = Some(v),
                "groups" => item.groups = Some(v),
                "tags" => item.tags = Some(v),
                "_meta" => item.meta = Some(v),
                "annotations" => item.annotations = Some(v),
                "execution" => item.execution = Some(v),
                "aliases" => item.aliases = Some(v),
                _ => {}
            }
            last = Some(v);
        }
        if let Some(doc) = self.doc {
            // `{`, blanks, the first key's quote; the last value, blanks, `}`.
            let (Some(first), Some(last)) = (first, last) else {
                return Err(unplaced());
            };
            let before = doc[..first.checked_sub(1).ok_or_else(unplaced)?].trim_end_matches(blank);
            let start = before.strip_suffix('{').ok_or_else(unplaced)?.len();
            let after = offset(doc, last.get()).ok_or_else(unplaced)? + last.get().len();
            let end = doc.len()
                - doc[after..]
                    .trim_start_matches(blank)
                    .strip_prefix('}')
                    .ok_or_else(unplaced)?
                    .len();
            item.text = &doc[start..end];
        }
        Ok(item)
    }
}

/// The items of a primitive list of `kind` in a pass over the document `doc` (`None`: null).
pub(crate) struct ItemsSeed<'a> {
    pub(crate) kind: Kind,
    pub(crate) doc: &'a str,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'de> {
    type Value = Option<Vec<Item<'de>>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'de> {
    type Value = Option<Vec<Item<'de>>>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of objects")
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let seed = || ItemSeed {
            kind: self.kind,
            doc: Some(self.doc),
        };
        while let Some(item) = seq.next_element_seed(seed())? {
            items.push(item);
        }
        Ok(Some(items))
    }
}

/// What the load reads of an item's `_meta`.
#[derive(Default)]
struct Meta {
    /// `concerns` when it is an object (else it is not read, as the general path does not).
    concerns: Option<Scalars>,
    groups: Option<Vec<String>>,
}

/// An object of concern values, each as its text (`scalar_text`), in the order a parsed `Map`
/// keeps them (a key written twice: its first place, its last value).
#[derive(Default)]
struct Scalars(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Meta;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta, A::Error> {
                let mut meta = Meta::default();
                while let Some(Key(k)) = map.next_key()? {
                    match &*k {
                        "concerns" => {
                            let raw: &RawValue = map.next_value()?;
                            meta.concerns = match raw.get().starts_with('{') {
                                true => Some(serde_json::from_str(raw.get()).map_err(serde::de::Error::custom)?),
                                false => None,
                            };
                        }
                        META_GROUPS => meta.groups = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(meta)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Scalars {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalars;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalars, A::Error> {
                let mut out = Scalars::default();
                while let Some(Key(k)) = map.next_key()? {
                    let v: Value = map.next_value()?;
                    // Not a string or number: the general path names it.
                    let text = crate::json::scalar_text(&v).ok_or_else(|| serde::de::Error::custom("not a scalar"))?;
                    match out.0.iter_mut().find(|(name, _)| *name == k) {
                        Some(entry) => entry.1 = text,
                        None => out.0.push((k.into_owned(), text)),
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads a primitive from its split text (`item`, a part of `doc`) as [`Primitive::from_json`]
/// does from its parsed value, and (`aliases`: as a server's load does) takes a tool's `aliases`
/// out of it, given back beside; `None` when the text is not a well-formed item, which the
/// general path then loads (and names what is wrong). The fragment is written when first asked for.
// A function of its own, not inlined into the load's loop (`Catalog::load_parts`): V8 compiles
// and tiers up a wasm function whole, and a build where it was inlined (wasm-opt without the
// one-caller bound) made that loop one function of 100 KB: 11 ms of Liftoff on the first request
// and 240 ms of TurboFan (bench/cold-trace.mjs). Apart: 12 KB and 8 KB, each tiered up alone.
#[inline(never)]
pub(super) fn read(
    kind: Kind,
    doc: &Arc<str>,
    item: &Item,
    mapping: &Map<String, Value>,
    aliases: bool,
) -> Option<(Primitive, Vec<String>)> {
    let aliases = aliases && cfg!(feature = "standards") && kind == Kind::Tool;
    let start = offset(doc, item.text)?;
    let end = start + item.text.len();
    let string = |raw: Option<&RawValue>| {
        serde_json::from_str::<String>(raw?.get())
            .ok()
            .filter(|s| !s.is_empty())
    };
    let name = string(item.name)?;
    let mapping = mapping.get(&name).and_then(Value::as_object);
    let id = match kind.id_field() {
        "name" => name.clone(),
        _ => string(item.id)?,
    };
    let mut groups: Vec<String> = parse_or_default(item.groups.map(RawValue::get))?;
    let mut tags: Vec<String> = parse_or_default(item.tags.map(RawValue::get))?;
    let mut concerns = Vec::new();
    if let Some(m) = parse_or_default::<Option<Meta>>(item.meta.map(RawValue::get))? {
        for g in m.groups.unwrap_or_default() {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        concerns = m.concerns.unwrap_or_default().0;
    }
    dedup(&mut tags);
    let old = match item.aliases.filter(|_| aliases) {
        Some(t) => parse_or_default(Some(t.get()))?,
        None => Vec::new(),
    };
    if let Some(m) = mapping {
        read_concerns(m, "", &mut concerns).ok()?;
    }
    let annotations = match item.annotations {
        Some(t) => match serde_json::from_str::<Value>(t.get()).ok()? {
            Value::Object(a) => a,
            _ => Map::new(),
        },
        None => Map::new(),
    };
    let task_support = match item.execution {
        Some(t) => match serde_json::from_str::<Value>(t.get())
            .ok()?
            .get_mut("taskSupport")
            .map(Value::take)
        {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        None => None,
    };
    let lazy = Lazy {
        doc: Arc::clone(doc),
        start,
        end,
        mapped: mapping.is_some(),
        aliases,
        written: OnceLock::new(),
    };
    Some((
        Primitive {
            kind,
            name,
            id,
            groups,
            tags,
            concerns,
            annotations,
            task_support,
            fragment: Fragment::Lazy(Box::new(lazy)),
        },
        old,
    ))
}

/// A primitive's fragment, written from its text in the document when first asked for.
#[derive(Debug, Clone)]
pub(super) struct Lazy {
    doc: Arc<str>,
    start: usize,
    end: usize,
    /// Whether the document's `concernMapping` maps the item (its concerns are then written).
    mapped: bool,
    /// Whether a tool's `aliases` are taken out.
    aliases: bool,
    /// The fragment once written; `None` when it is the item's text as it stands in the document
    /// (compact, nothing added), which is then not copied: the document is kept for the others.
    written: OnceLock<Option<String>>,
}

impl Lazy {
    /// The fragment of the item at `start..end` of `doc` (a prepared form's: the range checked
    /// by its reader), written from there when first asked for.
    pub(in crate::model) fn new(doc: &Arc<str>, start: usize, end: usize, mapped: bool, aliases: bool) -> Self {
        Lazy {
            doc: Arc::clone(doc),
            start,
            end,
            mapped,
            aliases,
            written: OnceLock::new(),
        }
    }

    /// Its range in the document and how it is written.
    pub(in crate::model) fn wire(&self) -> super::Wire<'_> {
        super::Wire::Lazy {
            start: self.start,
            end: self.end,
            mapped: self.mapped,
            aliases: self.aliases,
        }
    }

    /// The fragment of `p` (the primitive read from this text).
    // The document is sliced only when its text is what is returned (a slice reads the bytes at
    // both ends to check them: two more loads of an item seldom in the cache, on every ask).
    pub(super) fn get(&self, p: &Primitive) -> &str {
        let written = self.written.get_or_init(|| {
            let text = &self.doc[self.start..self.end];
            Some(self.write(p)).filter(|f| f != text)
        });
        match written {
            Some(f) => f,
            None => &self.doc[self.start..self.end],
        }
    }

    /// The fragment of `p` appended to `out`, written when it was not already and then not kept
    /// (a section's settled buffer holds it: `Section::settle`).
    pub(super) fn write_into(&self, p: &Primitive, out: &mut String) {
        match self.written.get() {
            Some(Some(f)) => out.push_str(f),
            Some(None) => out.push_str(&self.doc[self.start..self.end]),
            None => out.push_str(&self.write(p)),
        }
    }

    /// What `write_concerns` and `write_membership` do to the parsed object, on its fields' texts.
    fn write(&self, p: &Primitive) -> String {
        let text = &self.doc[self.start..self.end];
        // Read once already at load (`read`): not reached.
        let Some(mut fields) = Fields::parse(text) else {
            return text.to_string();
        };
        let mut meta = match fields.text("_meta").map(str::trim) {
            None => None,
            Some("null") => Some(None),
            Some(t) => Some(Fields::parse(t)),
        };
        #[cfg(feature = "standards")]
        if self.aliases {
            fields.remove("aliases");
        }
        let strings = |v: &[String]| serde_json::to_string(v).unwrap_or_default();
        if self.mapped {
            let listed = match meta.as_ref().and_then(|m| m.as_ref()?.text("concerns")) {
                Some(t) => match serde_json::from_str::<Value>(t) {
                    Ok(Value::Object(c)) => Some(c),
                    _ => None,
                },
                None => None,
            };
            let effective: Map<String, Value> = p
                .concerns
                .iter()
                .map(|(k, v)| {
                    let same = listed
                        .as_ref()
                        .and_then(|l| l.get(k))
                        .filter(|old| crate::json::scalar_text(old).as_deref() == Some(v.as_str()));
                    (k.clone(), same.cloned().unwrap_or_else(|| Value::String(v.clone())))
                })
                .collect();
            let text = serde_json::to_string(&effective).unwrap_or_default();
            meta_object(&mut fields, &mut meta).insert(Cow::Borrowed("concerns"), Field::Json(text));
        }
        if !p.groups.is_empty() {
            fields.insert(Cow::Borrowed("groups"), Field::Json(strings(&p.groups)));
            meta_object(&mut fields, &mut meta).insert(Cow::Borrowed(META_GROUPS), Field::Json(strings(&p.groups)));
        }
        if !p.tags.is_empty() {
            fields.insert(Cow::Borrowed("tags"), Field::Json(strings(&p.tags)));
        }
        let mut fragment = String::with_capacity(text.len());
        fields.write(&mut fragment, meta.as_ref().and_then(Option::as_ref));
        // Kept at its size: the writer's buffer has room to spare.
        fragment.shrink_to_fit();
        fragment
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item of the default catalog and of a synthetic one (with a concern mapping) is read
    /// from its text, and as the parsed value is.
    #[test]
    fn well_formed_items_are_read_from_their_text() {
        let default: Value = serde_json::from_str(crate::catalog::DEMO_CATALOG).unwrap();
        for doc in [default, crate::synth::catalog(42, 50, 0)] {
            let mapping = doc
                .get("concernMapping")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for kind in Kind::ALL {
                for (i, item) in doc
                    .get(kind.key())
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    for text in [item.to_string(), serde_json::to_string_pretty(item).unwrap()] {
                        let doc: Arc<str> = Arc::from(text.as_str());
                        let split = Item::split(kind, &doc).unwrap();
                        let (p, _) =
                            read(kind, &doc, &split, &mapping, false).unwrap_or_else(|| panic!("not read: {text}"));
                        let name = item["name"].as_str().unwrap();
                        let m = mapping.get(name).and_then(Value::as_object);
                        let general = Primitive::from_json(kind, item.clone(), &format!("[{i}]"), m).unwrap();
                        assert_eq!(p, general, "{text}");
                    }
                }
            }
        }
    }
}
