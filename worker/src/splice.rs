//! The fast forward's answer spliced from the upstream's bytes: the upstream's JSON answer to a
//! stateless use becomes the client's by replacing the id and putting `resultType` (and, for
//! `resources/read`, the cache fields) first in the result, as `Forward::answer` does, without
//! building the answer as a `serde_json::Value` and writing it again. The result's members are
//! copied as they came (their own whitespace kept): the answer is the full path's as JSON, not
//! byte for byte. Anything else the full path reads differently — an error (it may ask for the
//! era to be discovered again), a result that is not an object, asks for input or gives another
//! `resultType`, a repeated member, an escaped surrogate (the full path refuses a lone one), a
//! batch, another id — is left to it (`None`).

use std::borrow::Cow;

use mcp_sieve::protocol::Forward;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// An object's members in order, their values unparsed.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// A member's name, borrowed when it has no escapes.
#[derive(serde::Deserialize)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((Key(k), v)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    members.push((k, v));
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Members<'a> {
    /// The members of the JSON object `text`; `None` for anything else or a repeated name.
    fn of(text: &'a str) -> Option<Self> {
        let m: Members<'a> = serde_json::from_str(text).ok()?;
        let n = m.0.len();
        let repeated = match n {
            0..=16 => (1..n).any(|i| m.0[..i].iter().any(|(k, _)| *k == m.0[i].0)),
            _ => {
                let mut seen = std::collections::HashSet::with_capacity(n);
                !m.0.iter().all(|(k, _)| seen.insert(k.as_ref()))
            }
        };
        (!repeated).then_some(m)
    }

    fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// Appends `name` as a JSON string.
fn push_key(out: &mut String, name: &str) {
    if name.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x7f) {
        out.push('"');
        out.push_str(name);
        out.push('"');
    } else {
        out.push_str(&serde_json::Value::from(name).to_string());
    }
}

/// The client's answer to `f` (a stateless use) from the upstream's JSON answer `body` to our
/// request `sent`, spliced; `None` when the full path must read it.
pub fn answer(f: &Forward, sent: u64, body: &str) -> Option<String> {
    // A task's shapes change with the client's era (`upstream::to_client`): a call asking for
    // one (and `tasks/*`) is the full path's.
    let tasks = f.params.get("task").is_some() || f.method.starts_with("tasks/");
    if !f.stateless || f.owned_tasks.is_some() || tasks || has_escaped_surrogate(body) {
        return None;
    }
    let msg = Members::of(body)?;
    let id = msg.get("id")?;
    if serde_json::from_str::<u64>(id.get()).ok()? != sent {
        return None;
    }
    let result = Members::of(msg.get("result")?.get())?;
    if let Some(t) = result.get("resultType") {
        if t.get() != "\"complete\"" && serde_json::from_str::<String>(t.get()).ok()? != "complete" {
            return None;
        }
    }
    let mut out = String::with_capacity(body.len() + 64);
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(&f.id.to_string());
    out.push_str(",\"result\":{\"resultType\":\"complete\"");
    let mut first: &[&str] = &["resultType"];
    if f.method == "resources/read" {
        // An upstream of an older revision sends no cache fields: cache nothing.
        out.push_str(",\"ttlMs\":");
        out.push_str(result.get("ttlMs").map_or("0", RawValue::get));
        out.push_str(",\"cacheScope\":");
        out.push_str(result.get("cacheScope").map_or("\"private\"", RawValue::get));
        first = &["resultType", "ttlMs", "cacheScope"];
    }
    for (k, v) in &result.0 {
        if !first.contains(&k.as_ref()) {
            out.push(',');
            push_key(&mut out, k);
            out.push(':');
            out.push_str(v.get());
        }
    }
    out.push_str("}}");
    Some(out)
}

/// Whether `body` has a `\uD800`–`\uDFFF` escape (serde_json refuses a lone one when it builds
/// a string, and skips it unchecked when it does not).
fn has_escaped_surrogate(body: &str) -> bool {
    body.as_bytes()
        .windows(4)
        .any(|w| w[..2] == *b"\\u" && (w[2] | 0x20) == b'd' && matches!(w[3] | 0x20, b'8' | b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::answer;
    use mcp_sieve::protocol::Forward;
    use mcp_sieve::upstream::{parse_reply, to_client};
    use serde_json::{json, Value};

    /// The full path's answer: the reply read (`parse_reply`), its tasks shaped for the client
    /// (`to_client`, as `upstream::forwarded` does), then `Forward::answer`.
    fn full(f: &Forward, sent: u64, body: &str) -> String {
        let reply = parse_reply("application/json", body, Some(&json!(sent)));
        match reply {
            Ok(r) => match r.response {
                Some(mut m) => {
                    to_client(f, &mut m);
                    f.answer(Ok(&m))
                }
                None => "no response".into(),
            },
            Err(e) => f.answer(Err(&e)),
        }
    }

    fn forward(method: &str, id: Value) -> Forward {
        Forward {
            id,
            method: method.into(),
            stateless: true,
            ..Forward::default()
        }
    }

    #[test]
    fn spliced_answers_are_the_full_paths() {
        let bodies = [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#,
            r#"{"result":{"content":[]},"id":7,"jsonrpc":"2.0"}"#,
            " {\n  \"jsonrpc\" : \"2.0\",\n  \"id\" : 7 ,\n  \"result\" : { \"content\" : [ { \"type\" : \"text\", \"text\" : \"a \\\"b\\\" \\u00e9\\n\" } ] , \"x\" : 1.5e3 }\n}\n",
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[],"_meta":{"a":{"b":[1,2,{"c":null}]}}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":"complete"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"_meta":{"progressToken":"x"},"structuredContent":{"n":-0.0,"big":12345678901234567890}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[{"uri":"a://b","text":"t"}],"ttlMs":5000}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"contents":[],"cacheScope":"public","ttlMs":9}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"k\u0065y":"v","t\"q":"é\u00e9"}}"#,
            // Left to the full path (checked equal all the same, through it).
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no such tool"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{},"requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","task":{"taskId":"t"}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":1,"a":2}}"#,
            r#"{"jsonrpc":"2.0","id":7,"id":8,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":8,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7.0,"result":{}}"#,
            r#"[{"jsonrpc":"2.0","id":7,"result":{}}]"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"t":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"t":"\ud83d\ude00"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"t":"x"}} trailing"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"t":"x"}"#,
            "",
        ];
        let ids = [
            json!(1),
            json!("a-string id"),
            json!(-3),
            json!("é\"\n"),
            json!(1.5),
            Value::Null,
        ];
        let mut spliced = 0;
        for method in ["tools/call", "resources/read", "prompts/get", "completion/complete"] {
            for id in &ids {
                let f = forward(method, id.clone());
                for body in bodies {
                    let want = full(&f, 7, body);
                    let Some(got) = answer(&f, 7, body) else {
                        continue;
                    };
                    spliced += 1;
                    let (got_v, want_v): (Value, Value) = (
                        serde_json::from_str(&got).unwrap(),
                        serde_json::from_str(&want).unwrap(),
                    );
                    assert_eq!(got_v, want_v, "{method} {id} {body}");
                    // The same members in the same order (a compact body: the same bytes).
                    assert_eq!(got_v.to_string(), want_v.to_string(), "{method} {id} {body}");
                    if !body.contains(['\n', ' ']) && !body.contains("\\u") && !body.contains("e3") {
                        assert_eq!(got, want, "{method} {id} {body}");
                    }
                }
            }
        }
        // The first ten bodies are spliced for every method and id.
        assert_eq!(spliced, 10 * 4 * ids.len());
        // A session's forward (no `resultType`) and a `tasks/list` are the full path's.
        let mut f = forward("tools/call", json!(1));
        f.stateless = false;
        assert_eq!(answer(&f, 7, bodies[0]), None);
        let mut f = forward("tools/call", json!(1));
        f.owned_tasks = Some(Vec::new());
        assert_eq!(answer(&f, 7, bodies[0]), None);
        // A call asking for a task, and a task method, are too.
        let mut f = forward("tools/call", json!(1));
        f.params = json!({"name": "x", "task": {"ttl": 5}});
        assert_eq!(answer(&f, 7, bodies[0]), None);
        assert_eq!(answer(&forward("tasks/get", json!(1)), 7, bodies[0]), None);
    }
}
