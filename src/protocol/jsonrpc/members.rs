//! A message's members read straight from its text: the four the classification reads (`jsonrpc`,
//! `id`, `method`, `params`) and every other one (a response's `result` or `error`), with no
//! object of the whole message built, copied and taken apart again (most messages are requests).

use std::fmt;

use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The members of one message object. A member given twice is its last value, as a parsed
/// object keeps it.
#[derive(Debug, Default)]
pub(super) struct Members {
    pub jsonrpc: Option<Value>,
    pub id: Option<Value>,
    pub method: Option<Value>,
    pub params: Option<Value>,
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
                        Name::Params => map.next_value::<Params>()?.0,
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

/// `params` as a [`Value`], its `_meta` read through `client_meta` (a client's repeated `_meta` is
/// not parsed again; with the `large-catalogs` feature, which has its raw text).
struct Params(Value);

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
                while let Some(name) = map.next_key::<String>()? {
                    let value = match name.as_str() {
                        #[cfg(feature = "large-catalogs")]
                        "_meta" => {
                            let raw = map.next_value::<&serde_json::value::RawValue>()?;
                            crate::protocol::client_meta::value_of(raw.get()).map_err(serde::de::Error::custom)?
                        }
                        _ => map.next_value::<Value>()?,
                    };
                    // A member given twice: its last value, in its first place (as `Map` reads it).
                    members.insert(name, value);
                }
                Ok(Params(Value::Object(members)))
            }
            // Anything else as a `Value` reads it (refused by the classification, which names its type).
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    items.push(v);
                }
                Ok(Params(Value::Array(items)))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Params, E> {
                Ok(Params(Value::Bool(b)))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Params, E> {
                Ok(Params(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Params, E> {
                Ok(Params(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Params, E> {
                Ok(Params(n.into()))
            }
            fn visit_str<E>(self, s: &str) -> Result<Params, E> {
                Ok(Params(s.into()))
            }
            fn visit_unit<E>(self) -> Result<Params, E> {
                Ok(Params(Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}
