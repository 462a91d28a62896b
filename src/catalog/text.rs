//! A document's text split for a load without a tree (feature `large-catalogs`): its primitive
//! lists into their items, each item into the texts of the fields a primitive keeps
//! ([`crate::model::Item`]), and its other top-level fields into their texts, parsed after.
//! In one pass over the text when it can ([`split`]); else the lists' items are found first and
//! each split after (an item with no fields, or whose first key has escapes), as they were
//! before: two passes were measured at a tenth of a 5,000-tool load (docs/src/performance.md,
//! "Cold start").

use std::collections::BTreeMap;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::section_index;
use crate::model::{Item, ItemsSeed, Kind};

/// An item of a primitive list: split, or (not an object) its text only.
pub(crate) enum Entry<'a> {
    Split(Item<'a>),
    Text(&'a str),
}

/// The items of each primitive list, by section index (`None`: absent or null).
pub(crate) type Items<'a> = [Option<Vec<Entry<'a>>>; 4];

/// A document's top level: the primitive lists as their items, the other fields as their texts
/// by name (sorted; a key written twice keeps its last value, as a parsed map does).
pub(crate) struct Top<'a> {
    pub(crate) fields: BTreeMap<String, &'a RawValue>,
    pub(crate) items: Items<'a>,
}

/// Splits the document `doc`; `None` when it is not an object, or a primitive list is not an
/// array or null (the general path says what is wrong).
pub(crate) fn split(doc: &str) -> Option<Top<'_>> {
    let once = || {
        let mut de = serde_json::Deserializer::from_str(doc);
        let top = TopSeed { doc: Some(doc) }.deserialize(&mut de).ok()?;
        de.end().ok().map(|_| top)
    };
    once().or_else(|| {
        let mut de = serde_json::Deserializer::from_str(doc);
        let top = TopSeed { doc: None }.deserialize(&mut de).ok()?;
        de.end().ok().map(|_| top)
    })
}

/// One pass over the document `doc` (`Some`), or its lists' items found and each split after.
struct TopSeed<'a> {
    doc: Option<&'a str>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'de> {
    type Value = Top<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'de> {
    type Value = Top<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
        let mut top = Top {
            fields: BTreeMap::new(),
            items: Default::default(),
        };
        while let Some(key) = map.next_key::<String>()? {
            let Some(kind) = Kind::ALL.into_iter().find(|k| k.key() == key) else {
                top.fields.insert(key, map.next_value()?);
                continue;
            };
            top.items[section_index(kind)] = match self.doc {
                Some(doc) => map
                    .next_value_seed(ItemsSeed { kind, doc })?
                    .map(|items| items.into_iter().map(Entry::Split).collect()),
                None => map.next_value::<Option<Vec<&RawValue>>>()?.map(|items| {
                    items
                        .into_iter()
                        .map(|raw| Item::split(kind, raw.get()).map_or(Entry::Text(raw.get()), Entry::Split))
                        .collect()
                }),
            };
        }
        Ok(top)
    }
}

impl Entry<'_> {
    /// The item's text.
    pub(crate) fn text(&self) -> &str {
        match self {
            Entry::Split(item) => item.text(),
            Entry::Text(t) => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The items' texts of a document in one pass, or (`None`) found first and each split after.
    fn texts(doc: &str, once: bool) -> Option<Vec<Vec<String>>> {
        let mut de = serde_json::Deserializer::from_str(doc);
        let top = TopSeed {
            doc: once.then_some(doc),
        }
        .deserialize(&mut de)
        .ok()?;
        let lists = top
            .items
            .iter()
            .map(|l| l.iter().flatten().map(|e| e.text().to_string()).collect());
        Some(lists.collect())
    }

    /// One pass finds each item's text as the two passes do: compact, pretty-printed, blanks
    /// around the braces; an item it cannot place sends the document the other way.
    #[test]
    fn one_pass_finds_the_items_texts_two_passes_find() {
        let default = crate::catalog::DEMO_CATALOG;
        let compact = serde_json::from_str::<serde_json::Value>(default).unwrap().to_string();
        let spaced = r#"{"tools" : [ {"name":"a"} ,{ "name" : "b" ,"x":[1, {}] }
            ,	{"x": {"y": "}"}, "name": "c"}],"prompts":[{"name":"p"}], "server": {}}"#;
        for doc in [default, &compact, spaced] {
            let once = texts(doc, true).expect("one pass");
            assert_eq!(Some(&once), texts(doc, false).as_ref());
            assert!(once.iter().map(Vec::len).sum::<usize>() >= 3);
        }
        for doc in [
            r#"{"tools": [{"name": "a"}, {}]}"#,
            r#"{"tools": [{"n\u0061me": "a"}]}"#,
            r#"{"tools": [1]}"#,
        ] {
            assert_eq!(texts(doc, true), None, "{doc}");
            assert!(split(doc).is_some(), "{doc}");
        }
    }
}
