//! A primitive read from its JSON text without a `serde_json::Value` tree (feature
//! `large-catalogs`: the Worker and the native server). The object's fields are split into their
//! texts, in order; only the fields a primitive keeps (name, id, membership, concerns,
//! annotations, `execution.taskSupport`) are parsed; the others are copied to the wire fragment
//! as they are written when that is already how serde_json would write them (no whitespace, only
//! the escapes it writes, integers), else written again from their value. The fragment is the one
//! [`Primitive::from_json`] makes, byte for byte; anything irregular (a wrong type, a missing
//! name) returns `None`, and the caller loads that item the general way, which names the error.
//! Measured at 5,000 tools: the load of a Worker's first request, parsed per item into a tree,
//! written back and dropped, was two thirds of its CPU (docs/src/performance.md, "Cold start").

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{dedup, read_concerns, Kind, Primitive, META_GROUPS};

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

/// A required non-empty string field.
fn required(fields: &Fields, key: &str) -> Option<String> {
    serde_json::from_str::<String>(fields.text(key)?)
        .ok()
        .filter(|s| !s.is_empty())
}

/// Reads a primitive from its text as [`Primitive::from_json`] does from its parsed value, and
/// (`aliases`: as a server's load does) takes a tool's `aliases` out of it, given back beside;
/// `None` when the text is not a well-formed item, which the general path then loads (and names
/// what is wrong).
pub(super) fn read(
    kind: Kind,
    text: &str,
    mapping: &Map<String, Value>,
    aliases: bool,
) -> Option<(Primitive, Vec<String>)> {
    let mut fields = Fields::parse(text)?;
    let name = required(&fields, "name")?;
    let mapping = mapping.get(&name).and_then(Value::as_object);
    let id = match kind.id_field() {
        "name" => name.clone(),
        field => required(&fields, field)?,
    };
    let mut meta = match fields.text("_meta").map(str::trim) {
        None => None,
        Some("null") => Some(None),
        Some(t) => Some(Some(Fields::parse(t)?)),
    };
    let mut groups: Vec<String> = parse_or_default(fields.text("groups"))?;
    let mut tags: Vec<String> = parse_or_default(fields.text("tags"))?;
    let listed_concerns = match meta.as_ref().and_then(|m| m.as_ref()?.text("concerns")) {
        Some(t) => match serde_json::from_str::<Value>(t).ok()? {
            Value::Object(c) => Some(c),
            _ => None,
        },
        None => None,
    };
    if let Some(m) = meta.as_ref().and_then(Option::as_ref) {
        for g in parse_or_default::<Vec<String>>(m.text(META_GROUPS))? {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    dedup(&mut tags);
    let mut concerns = Vec::new();
    if let Some(c) = &listed_concerns {
        read_concerns(c, "", &mut concerns).ok()?;
    }
    #[cfg(feature = "standards")]
    let old = match (aliases && kind == Kind::Tool)
        .then(|| fields.remove("aliases"))
        .flatten()
    {
        Some(t) => parse_or_default(Some(t))?,
        None => Vec::new(),
    };
    #[cfg(not(feature = "standards"))]
    let old = {
        let _ = aliases;
        Vec::new()
    };
    // What `write_concerns` and `write_membership` do to the parsed object.
    let strings = |v: &[String]| serde_json::to_string(v).unwrap_or_default();
    if let Some(m) = mapping {
        read_concerns(m, "", &mut concerns).ok()?;
        let effective: Map<String, Value> = concerns
            .iter()
            .map(|(k, v)| {
                let same = listed_concerns
                    .as_ref()
                    .and_then(|l| l.get(k))
                    .filter(|old| crate::json::scalar_text(old).as_deref() == Some(v.as_str()));
                (k.clone(), same.cloned().unwrap_or_else(|| Value::String(v.clone())))
            })
            .collect();
        let text = serde_json::to_string(&effective).unwrap_or_default();
        meta_object(&mut fields, &mut meta).insert(Cow::Borrowed("concerns"), Field::Json(text));
    }
    if !groups.is_empty() {
        fields.insert(Cow::Borrowed("groups"), Field::Json(strings(&groups)));
        meta_object(&mut fields, &mut meta).insert(Cow::Borrowed(META_GROUPS), Field::Json(strings(&groups)));
    }
    if !tags.is_empty() {
        fields.insert(Cow::Borrowed("tags"), Field::Json(strings(&tags)));
    }
    let annotations = match fields.text("annotations") {
        Some(t) => match serde_json::from_str::<Value>(t).ok()? {
            Value::Object(a) => a,
            _ => Map::new(),
        },
        None => Map::new(),
    };
    let task_support = match fields.text("execution") {
        Some(t) => match serde_json::from_str::<Value>(t)
            .ok()?
            .get_mut("taskSupport")
            .map(Value::take)
        {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        None => None,
    };
    let mut fragment = String::with_capacity(text.len());
    fields.write(&mut fragment, meta.as_ref().and_then(Option::as_ref));
    // Kept at its size: the writer's buffer has room to spare.
    fragment.shrink_to_fit();
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
            fragment,
        },
        old,
    ))
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
                        let (p, _) = read(kind, &text, &mapping, false).unwrap_or_else(|| panic!("not read: {text}"));
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
