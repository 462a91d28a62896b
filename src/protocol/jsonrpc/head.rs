//! What a JSON-RPC message says about itself — its method, id, the param naming its item and its
//! `_meta` trace context — read once per message without building the document, for the shell
//! that routes, limits, counts and traces it before the core reads the whole body.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::Incoming;

/// The head of one message. Read as the core reads the body (a repeated key: the last one, read
/// through the whole document); what is not there, or not of its type, is `None` (a message that
/// is not a JSON object: all of it). Only `method`, `id`, `name`, `uri` and `arguments` decide
/// anything; the rest is recorded, and a wrong type there never hides the rest.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Head<'a> {
    /// `method` (a string; `None` for a response or anything else).
    #[serde(borrow, deserialize_with = "text")]
    pub method: Option<Cow<'a, str>>,
    /// `id` as sent (`Null` when absent: a notification).
    pub id: Value,
    /// What `params` holds of these (an object; else all `None`).
    #[serde(borrow, deserialize_with = "object")]
    pub params: Params<'a>,
}

/// The params a head holds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Params<'a> {
    /// `name`: the tool or prompt (`tools/call`, `prompts/get`).
    #[serde(borrow, deserialize_with = "text")]
    pub name: Option<Cow<'a, str>>,
    /// `uri`: the resource (`resources/read`, `resources/subscribe`).
    #[serde(borrow, deserialize_with = "text")]
    pub uri: Option<Cow<'a, str>>,
    /// `arguments` (`Null` when absent).
    pub arguments: Value,
    /// Whether `task` is there and not null (a `tools/call` that creates a task).
    #[serde(deserialize_with = "present")]
    pub task: bool,
    /// `protocolVersion` (`initialize`).
    #[serde(borrow, rename = "protocolVersion", deserialize_with = "text")]
    pub protocol_version: Option<Cow<'a, str>>,
    /// `_meta`'s protocol version and trace context.
    #[serde(borrow, rename = "_meta", deserialize_with = "object")]
    pub meta: Meta<'a>,
}

/// What `params._meta` holds of these.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Meta<'a> {
    /// `io.modelcontextprotocol/protocolVersion` (2026-07-28).
    #[serde(
        borrow,
        rename = "io.modelcontextprotocol/protocolVersion",
        deserialize_with = "text"
    )]
    pub protocol_version: Option<Cow<'a, str>>,
    /// W3C `traceparent`.
    #[serde(borrow, deserialize_with = "text")]
    pub traceparent: Option<Cow<'a, str>>,
    /// W3C `tracestate`.
    #[serde(borrow, deserialize_with = "text")]
    pub tracestate: Option<Cow<'a, str>>,
}

impl<'a> Head<'a> {
    /// Reads the head of `body`: quickly (borrowed where its strings have no escapes), or, when
    /// that reading refuses it (a repeated key), through the whole document as the core reads it.
    pub fn read(body: &'a [u8]) -> Head<'a> {
        match serde_json::from_slice::<Loose<Head>>(body) {
            Ok(Loose(head)) => head.unwrap_or_default(),
            Err(_) => serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|whole| Loose::<Head>::deserialize(whole).ok())
                .and_then(|Loose(head)| head)
                .unwrap_or_default(),
        }
    }

    /// The head of a message already parsed: what [`Head::read`] gives for its body (a response
    /// has no params to read), taken from the message instead of read from the bytes again, and
    /// owned (the message goes on to the core).
    pub fn of(msg: &Incoming) -> Head<'static> {
        let (id, params) = match msg {
            Incoming::Request { id, params, .. } => (id.clone(), params),
            Incoming::Notification { params, .. } => (Value::Null, params),
            Incoming::Response { id, .. } => (id.clone(), &Value::Null),
        };
        let text = |v: &Value| v.as_str().map(|s| Cow::Owned(s.to_string()));
        // Members found by a scan of the few keys (`json::member`), as indexing would find them.
        let at = crate::json::member;
        let meta = msg.meta();
        let params = match params.is_object() {
            false => Params::default(),
            true => Params {
                name: text(at(params, "name")),
                uri: text(at(params, "uri")),
                arguments: at(params, "arguments").clone(),
                task: !at(params, "task").is_null(),
                protocol_version: text(at(params, "protocolVersion")),
                meta: match meta.is_object() {
                    false => Meta::default(),
                    true => Meta {
                        protocol_version: text(at(meta, "io.modelcontextprotocol/protocolVersion")),
                        traceparent: text(at(meta, "traceparent")),
                        tracestate: text(at(meta, "tracestate")),
                    },
                },
            },
        };
        Head {
            method: msg.method().map(|m| Cow::Owned(m.to_string())),
            id,
            params,
        }
    }

    /// The method, if it has one.
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The id as a log or a trace writes it: a string as it is, a number as JSON writes it;
    /// `None` for anything else.
    pub fn id_text(&self) -> Option<Cow<'_, str>> {
        match &self.id {
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Number(n) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }

    /// The W3C trace context in `params._meta` (`traceparent`, and `tracestate` if any).
    pub fn trace_context(&self) -> Option<(&str, Option<&str>)> {
        let meta = &self.params.meta;
        Some((meta.traceparent.as_deref()?, meta.tracestate.as_deref()))
    }

    /// The protocol version the message names (`initialize`'s, or 2026-07-28's `_meta`).
    pub fn protocol_version(&self) -> Option<&str> {
        self.params
            .protocol_version
            .as_deref()
            .or(self.params.meta.protocol_version.as_deref())
    }
}

/// `T` when the value is a JSON object, `None` for any other value (skipped).
pub(super) struct Loose<T>(pub(super) Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Loose<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Loose(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Loose(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                Loose::deserialize(d)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// An object field read as `T` when it is an object, else `T::default()`.
fn object<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Loose::<T>::deserialize(d).map(|Loose(t)| t.unwrap_or_default())
}

/// A string field, borrowed where it has no escapes; any other value is `None` (skipped, with
/// no error made and dropped).
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(s)))
        }
        fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s.to_string())))
        }
        fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s)))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(V)
        }
    }
    d.deserialize_any(V)
}

/// Whether a field is there and not null.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Option::<IgnoredAny>::deserialize(d).map(|v| v.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_read_with_its_item_arguments_and_trace_context() {
        let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools\/call","params":{"name":"echo","arguments":{"m":1},"task":{},
            "_meta":{"traceparent":"00-a-b-01","tracestate":"k=v","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let head = Head::read(body);
        assert_eq!(head.method(), Some("tools/call"));
        assert_eq!(head.id_text().as_deref(), Some("7"));
        assert_eq!(head.params.name.as_deref(), Some("echo"));
        assert_eq!(head.params.arguments, json!({"m": 1}));
        assert!(head.params.task);
        assert_eq!(head.trace_context(), Some(("00-a-b-01", Some("k=v"))));
        assert_eq!(head.protocol_version(), Some("2026-07-28"));
    }

    #[test]
    fn a_repeated_key_is_read_as_the_core_reads_it() {
        let twice = br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","method":"initialize","params":{"name":"x","name":"y"}}"#;
        let head = Head::read(twice);
        assert_eq!(head.method(), Some("initialize"));
        assert_eq!(head.params.name.as_deref(), Some("y"));
        assert_eq!(head.id_text().as_deref(), Some("a"));
    }

    #[test]
    fn a_recorded_field_of_the_wrong_type_hides_nothing_else() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":null,
            "protocolVersion":5,"_meta":{"traceparent":[1],"tracestate":{}}}}"#;
        let head = Head::read(body);
        assert_eq!(head.method(), Some("tools/call"));
        assert_eq!(head.params.name.as_deref(), Some("echo"));
        assert!(!head.params.task);
        assert_eq!(head.trace_context(), None);
        let meta_not_object = br#"{"id":1,"method":"prompts/get","params":{"name":"p","_meta":"x"}}"#;
        assert_eq!(Head::read(meta_not_object).params.name.as_deref(), Some("p"));
    }

    #[test]
    fn a_parsed_message_has_the_head_its_body_has() {
        let limits = crate::protocol::jsonrpc::Limits::default();
        for body in [
            &br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"m":1},"task":{},
                "_meta":{"traceparent":"00-a-b-01","tracestate":"k=v","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"filter":{"groups":["g"]},"cursor":"ab"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":null,
                "protocolVersion":5,"_meta":{"traceparent":[1],"tracestate":{}}}}"#,
            br#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p","_meta":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:\/\/\/a b"}}"#,
            br#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"name":"n"}}"#,
            br#"{"jsonrpc":"2.0","id":"q1","result":{"action":"accept"}}"#,
            br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":6,"method":"tools/list","method":"initialize","params":{"name":"x","name":"y"}}"#,
        ] {
            let msg = crate::protocol::jsonrpc::parse(body, &limits).expect("a message");
            assert_eq!(Head::of(&msg), Head::read(body), "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn what_is_not_a_message_has_an_empty_head() {
        for bad in [
            &b"[]"[..],
            b"5",
            b"not json",
            b"{\"method\":\"ping\"} x",
            b"{\"method\":5,\"id\":{}}",
            b"{\"id\":1,\"params\":[1]}",
        ] {
            let head = Head::read(bad);
            assert_eq!(head.method(), None, "{}", String::from_utf8_lossy(bad));
            assert_eq!(head.params, Params::default(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(Head::read(br#"{"id":true}"#).id_text(), None);
    }
}
