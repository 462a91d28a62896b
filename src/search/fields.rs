//! A tool definition's indexed fields (name, title, the annotations' title, description, each
//! parameter's name and description, groups and tags), read from its JSON text (`Primitive::fragment`) without
//! building a tree: strings are borrowed where the text has no escapes, everything else is
//! skipped. A field of another type than the index reads counts as empty, as in a tree.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What the index reads of one tool.
#[derive(Debug, Default)]
pub struct ToolText<'a> {
    /// `name`.
    pub name: Cow<'a, str>,
    /// `title`.
    pub title: Cow<'a, str>,
    /// `annotations.title`.
    pub annotated: Cow<'a, str>,
    /// `description`.
    pub description: Cow<'a, str>,
    /// `inputSchema.properties`: each parameter's name and description, in order.
    pub params: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// `groups` (a loaded tool's: all its groups, also those of `_meta`).
    pub groups: Vec<Cow<'a, str>>,
    /// `tags` (a loaded tool's: without repeats).
    pub tags: Vec<Cow<'a, str>>,
}

impl<'a> ToolText<'a> {
    /// The fields of the tool definition `json` (all empty when it is not an object).
    pub fn read(json: &'a str) -> Self {
        serde_json::from_str::<Any<Tool<'a>>>(json)
            .map(|t| t.0 .0)
            .unwrap_or_default()
    }
}

/// How an object is read, for [`Any`].
trait FromMap<'de>: Default {
    fn from_map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error>;
}

/// A JSON value: an object read as `T`, anything else `T::default()` (skipped).
#[derive(Default)]
struct Any<T>(T);

/// A JSON value: a string kept, anything else empty (skipped).
#[derive(Default)]
struct Text<'a>(Cow<'a, str>);

macro_rules! skip_scalars {
    ($v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($v)
        }
    };
}

impl<'de, T: FromMap<'de>> Deserialize<'de> for Any<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: FromMap<'de>> Visitor<'de> for V<T> {
            type Value = Any<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            skip_scalars!(Any(T::default()));
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Any(T::default()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::from_map(map).map(Any)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            skip_scalars!(Text(Cow::Borrowed("")));
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(s)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON value: an array's strings kept (anything else in it read as an empty string: a loaded
/// catalog's `groups` and `tags` hold only strings), anything else an empty list.
#[derive(Default)]
struct Strings<'a>(Vec<Cow<'a, str>>);

impl<'de> Deserialize<'de> for Strings<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Strings<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Strings::default())
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut all = Vec::new();
                while let Some(Text(s)) = seq.next_element::<Text<'de>>()? {
                    all.push(s);
                }
                Ok(Strings(all))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Strings::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// The tool object.
#[derive(Default)]
struct Tool<'a>(ToolText<'a>);

impl<'de> FromMap<'de> for Tool<'de> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut t = ToolText::default();
        while let Some(Text(k)) = map.next_key::<Text<'de>>()? {
            match &*k {
                "name" => t.name = map.next_value::<Text>()?.0,
                "title" => t.title = map.next_value::<Text>()?.0,
                "description" => t.description = map.next_value::<Text>()?.0,
                "annotations" => t.annotated = map.next_value::<Any<Key<Text, 0>>>()?.0 .0 .0,
                "inputSchema" => t.params = map.next_value::<Any<Key<Any<Props>, 2>>>()?.0 .0 .0 .0,
                "groups" => t.groups = map.next_value::<Strings>()?.0,
                "tags" => t.tags = map.next_value::<Strings>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Tool(t))
    }
}

/// The names of the fields [`Key`] reads.
const KEYS: [&str; 3] = ["title", "description", "properties"];

/// An object's field `KEYS[K]` (the first of that name) read as `T`; the others skipped.
#[derive(Default)]
struct Key<T, const K: usize>(T);

impl<'de, T: Deserialize<'de> + Default, const K: usize> FromMap<'de> for Key<T, K> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut found = None;
        while let Some(Text(k)) = map.next_key::<Text<'de>>()? {
            if found.is_none() && k == KEYS[K] {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Key(found.unwrap_or_default()))
    }
}

/// `properties`: each parameter's name and description.
#[derive(Default)]
struct Props<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de> FromMap<'de> for Props<'de> {
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut all = Vec::new();
        while let Some(Text(k)) = map.next_key::<Text<'de>>()? {
            all.push((k, map.next_value::<Any<Key<Text, 1>>>()?.0 .0 .0));
        }
        Ok(Props(all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_indexed_fields_and_skips_the_rest() {
        let t = ToolText::read(
            r#"{"name":"a_b","x":[1,{"y":null}],"title":7,"annotations":{"title":"T\"q","z":{}},
                "description":"D\nE","inputSchema":{"type":"object","properties":{"p":{"description":"P"},
                "q":{"type":"string"},"r":3}}}"#,
        );
        assert_eq!(t.name, "a_b");
        assert_eq!(t.title, "");
        assert_eq!(t.annotated, "T\"q");
        assert_eq!(t.description, "D\nE");
        let params: Vec<(&str, &str)> = t.params.iter().map(|(a, b)| (&**a, &**b)).collect();
        assert_eq!(params, [("p", "P"), ("q", ""), ("r", "")]);
        assert!(t.groups.is_empty() && t.tags.is_empty());
        let t = ToolText::read(r#"{"groups":["g\u0031","h"],"_meta":{"groups":["x"]},"tags":7}"#);
        assert_eq!(t.groups, ["g1", "h"]);
        assert!(t.tags.is_empty());
        assert!(ToolText::read("[1]").name.is_empty());
        assert!(ToolText::read(r#"{"annotations":"x","inputSchema":{"properties":[]}}"#)
            .params
            .is_empty());
    }
}
