//! A message's members read straight from its text: the four the classification reads (`jsonrpc`,
//! `id`, `method`, `params`) and every other one (a response's `result` or `error`), with no
//! object of the whole message built, copied and taken apart again (most messages are requests).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

#[cfg(feature = "large-catalogs")]
use super::kept::KeptFilter;
use super::Kept;
#[cfg(feature = "large-catalogs")]
use crate::filter::Filter;
#[cfg(feature = "large-catalogs")]
use crate::protocol::client_meta;

/// The members of one message object. A member given twice is its last value, as a parsed
/// object keeps it.
#[derive(Debug, Default)]
pub(super) struct Members {
    pub jsonrpc: Option<Value>,
    pub id: Option<Value>,
    pub method: Option<Value>,
    pub params: Option<Value>,
    /// The members of `params` kept beside them ([`Kept`]; the classification puts them back
    /// for any message but a list request).
    pub kept: Kept,
    /// Every other member.
    pub rest: Map<String, Value>,
}

impl Members {
    /// The members of a parsed object.
    pub fn of(mut obj: Map<String, Value>) -> Members {
        Members {
            jsonrpc: obj.remove("jsonrpc"),
            id: obj.remove("id"),
            method: obj.remove("method"),
            params: obj.remove("params"),
            kept: Kept::default(),
            rest: obj,
        }
    }
}

/// A member's name: one of the four, or another (kept).
enum Name {
    Jsonrpc,
    Id,
    Method,
    Params,
    Other(String),
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Name;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, s: &str) -> Result<Name, E> {
                Ok(match s {
                    "jsonrpc" => Name::Jsonrpc,
                    "id" => Name::Id,
                    "method" => Name::Method,
                    "params" => Name::Params,
                    other => Name::Other(other.to_string()),
                })
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut m = Members::default();
                while let Some(name) = map.next_key::<Name>()? {
                    let value = match name {
                        Name::Params => {
                            // A list's filter is read for it when its method came first (most bodies).
                            let list = m
                                .method
                                .as_ref()
                                .and_then(Value::as_str)
                                .is_some_and(|m| super::LIST_METHODS.contains(&m));
                            let p = map.next_value_seed(Params { list })?;
                            m.kept = p.kept;
                            p.value
                        }
                        _ => map.next_value::<Value>()?,
                    };
                    match name {
                        Name::Jsonrpc => m.jsonrpc = Some(value),
                        Name::Id => m.id = Some(value),
                        Name::Method => m.method = Some(value),
                        Name::Params => m.params = Some(value),
                        Name::Other(name) => {
                            m.rest.insert(name, value);
                        }
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

/// How `params` are read: as a [`Value`], but (with the `large-catalogs` feature, which has
/// their raw text) a client's repeated `_meta` is read through `client_meta`, not parsed again
/// nor copied, and a list's plain `filter` is read as a [`Filter`] (`Filter::read_plain`), with
/// no `Value` of it: both left out of the value with their places ([`Kept`]), for the
/// classification to put back or carry.
struct Params {
    /// Whether the message is a list request (as far as its members before `params` say).
    list: bool,
}

/// The params read, and the members kept beside them.
struct Read {
    value: Value,
    kept: Kept,
}

impl From<Value> for Read {
    fn from(value: Value) -> Self {
        Read {
            value,
            kept: Kept::default(),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Params {
    type Value = Read;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Read, D::Error> {
        struct V {
            #[cfg_attr(not(feature = "large-catalogs"), allow(dead_code))]
            list: bool,
        }
        impl<'de> Visitor<'de> for V {
            type Value = Read;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
                let mut members = Map::new();
                #[cfg_attr(not(feature = "large-catalogs"), allow(unused_mut))]
                let mut kept = Kept::default();
                while let Some(name) = map.next_key::<String>()? {
                    // Given twice: the first one's place, the last one's value (as `Map` reads it):
                    // a kept one is put back first.
                    #[cfg(feature = "large-catalogs")]
                    if name == "_meta" {
                        let raw = map.next_value::<&serde_json::value::RawValue>()?.get();
                        kept.put_back_meta(&mut members);
                        match client_meta::kept(raw) {
                            Some(k) if !members.contains_key("_meta") => {
                                kept.meta = Some((members.len() + kept.count(), k));
                            }
                            _ => {
                                let value = client_meta::value_of(raw).map_err(serde::de::Error::custom)?;
                                members.insert(name, value);
                            }
                        }
                        continue;
                    }
                    #[cfg(feature = "large-catalogs")]
                    if self.list && name == "filter" {
                        let raw = map.next_value::<&serde_json::value::RawValue>()?.get();
                        kept.put_back_filter(&mut members);
                        match Filter::read_plain(raw) {
                            Some(f) if !members.contains_key("filter") => {
                                kept.filter = Some(Box::new(KeptFilter {
                                    at: members.len() + kept.count(),
                                    filter: f,
                                    text: raw.into(),
                                }));
                            }
                            _ => {
                                let value = serde_json::from_str(raw).map_err(serde::de::Error::custom)?;
                                members.insert(name, value);
                            }
                        }
                        continue;
                    }
                    let value = map.next_value::<Value>()?;
                    // A member given twice: its last value, in its first place (as `Map` reads it).
                    members.insert(name, value);
                }
                Ok(Read {
                    value: Value::Object(members),
                    kept,
                })
            }
            // Anything else as a `Value` reads it (refused by the classification, which names its type).
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Read, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    items.push(v);
                }
                Ok(Value::Array(items).into())
            }
            fn visit_bool<E>(self, b: bool) -> Result<Read, E> {
                Ok(Value::Bool(b).into())
            }
            fn visit_i64<E>(self, n: i64) -> Result<Read, E> {
                Ok(Value::from(n).into())
            }
            fn visit_u64<E>(self, n: u64) -> Result<Read, E> {
                Ok(Value::from(n).into())
            }
            fn visit_f64<E>(self, n: f64) -> Result<Read, E> {
                Ok(Value::from(n).into())
            }
            fn visit_str<E>(self, s: &str) -> Result<Read, E> {
                Ok(Value::from(s).into())
            }
            fn visit_unit<E>(self) -> Result<Read, E> {
                Ok(Value::Null.into())
            }
        }
        d.deserialize_any(V { list: self.list })
    }
}
