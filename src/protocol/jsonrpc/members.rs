//! A message's members read straight from its text: the four the classification reads (`jsonrpc`,
//! `id`, `method`, `params`) and every other one (a response's `result` or `error`), with no
//! object of the whole message built, copied and taken apart again (most messages are requests).

use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

#[cfg(feature = "large-catalogs")]
use crate::protocol::client_meta;
use crate::protocol::client_meta::Known;

/// The members of one message object. A member given twice is its last value, as a parsed
/// object keeps it.
#[derive(Debug, Default)]
pub(super) struct Members {
    pub jsonrpc: Option<Value>,
    pub id: Option<Value>,
    pub method: Option<Value>,
    pub params: Option<Value>,
    /// `params._meta` when its text is one `client_meta` keeps: where it stands among the params'
    /// members and what was read from it, its value left out of `params` (the classification puts
    /// it back for any message but a list request).
    pub kept: Option<(usize, Arc<Known>)>,
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
            kept: None,
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
                            let p = map.next_value::<Params>()?;
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

/// `params` as a [`Value`], its `_meta` read through `client_meta` (with the `large-catalogs`
/// feature, which has its raw text): a client's repeated `_meta` is not parsed again, nor copied
/// (it is left out of the value, with its place, for the classification to put back or carry).
struct Params {
    value: Value,
    kept: Option<(usize, Arc<Known>)>,
}

impl From<Value> for Params {
    fn from(value: Value) -> Self {
        Params { value, kept: None }
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Params;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
                let mut members = Map::new();
                #[cfg_attr(not(feature = "large-catalogs"), allow(unused_mut))]
                let mut kept: Option<(usize, Arc<Known>)> = None;
                while let Some(name) = map.next_key::<String>()? {
                    #[cfg(feature = "large-catalogs")]
                    if name == "_meta" {
                        let raw = map.next_value::<&serde_json::value::RawValue>()?.get();
                        // Given twice: the first one's place, the last one's value (as `Map` reads it).
                        if let Some((at, k)) = kept.take() {
                            members.shift_insert(at, name.clone(), Value::clone(&k.meta));
                        }
                        match client_meta::kept(raw) {
                            Some(k) if !members.contains_key("_meta") => kept = Some((members.len(), k)),
                            _ => {
                                let value = client_meta::value_of(raw).map_err(serde::de::Error::custom)?;
                                members.insert(name, value);
                            }
                        }
                        continue;
                    }
                    let value = map.next_value::<Value>()?;
                    // A member given twice: its last value, in its first place (as `Map` reads it).
                    members.insert(name, value);
                }
                Ok(Params {
                    value: Value::Object(members),
                    kept,
                })
            }
            // Anything else as a `Value` reads it (refused by the classification, which names its type).
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    items.push(v);
                }
                Ok(Value::Array(items).into())
            }
            fn visit_bool<E>(self, b: bool) -> Result<Params, E> {
                Ok(Value::Bool(b).into())
            }
            fn visit_i64<E>(self, n: i64) -> Result<Params, E> {
                Ok(Value::from(n).into())
            }
            fn visit_u64<E>(self, n: u64) -> Result<Params, E> {
                Ok(Value::from(n).into())
            }
            fn visit_f64<E>(self, n: f64) -> Result<Params, E> {
                Ok(Value::from(n).into())
            }
            fn visit_str<E>(self, s: &str) -> Result<Params, E> {
                Ok(Value::from(s).into())
            }
            fn visit_unit<E>(self) -> Result<Params, E> {
                Ok(Value::Null.into())
            }
        }
        d.deserialize_any(V)
    }
}
