//! The fast forward's answer spliced from the upstream's bytes: the upstream's JSON answer to a
//! stateless use becomes the client's by replacing the id and putting `resultType` (and, for
//! `resources/read`, the cache fields) first in the result, as `Forward::answer` does, without
//! building the answer as a `serde_json::Value` and writing it again. The result's members are
//! copied as they came (their own whitespace kept): the answer is the full path's as JSON, not
//! byte for byte. Anything else the full path reads differently — an error (it may ask for the
//! era to be discovered again), a result that is not an object, asks for input or gives another
//! `resultType`, a repeated member, an escaped surrogate (the full path refuses a lone one), a
//! batch, another id — is left to it (`None`).
//!
//! The upstream POST's body is spliced the same way from the client's request ([`Request`]):
//! the forward's id and method, the client's `params` members as they came with the name routing
//! gave (`params.name` of a tool or prompt) and our envelope's members in `_meta` (where the
//! client's of those names were, else after its others), which is `Conversation::post_modern`'s
//! body as JSON. A forward whose `params` the core built, a repeated member, `params` or `_meta`
//! that is not an object, or members other than the forward's, is left to the full builder.

use std::borrow::Cow;

use mcp_sieve::protocol::Forward;
use mcp_sieve::upstream::SentModern;
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

/// The client's request read for splicing the upstream POST's body ([`Request::write`]).
pub struct Request<'a> {
    params: Members<'a>,
    /// The position of `_meta` in `params` and its members.
    meta: Option<(usize, Members<'a>)>,
    /// `params.name` as routing gave it (a tool's or prompt's), written in its place.
    name: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// The client's request `body` of the stateless use `f` (`tools/call`, `prompts/get`,
    /// `resources/read`) when the upstream POST's body can be spliced from it: `f`'s `params`
    /// are the client's (`Forward::verbatim`), with the same members in the same order.
    pub fn of(f: &'a Forward, body: &'a str) -> Option<Self> {
        let renames = match f.method.as_str() {
            "tools/call" | "prompts/get" => true,
            "resources/read" => false,
            // `completion/complete` renames `params.ref.name`: the full builder's.
            _ => return None,
        };
        let serde_json::Value::Object(want) = &f.params else {
            return None;
        };
        if !f.verbatim || !f.stateless {
            return None;
        }
        let msg = Members::of(body)?;
        let params = Members::of(msg.get("params")?.get())?;
        let same = params.0.len() == want.len() && params.0.iter().zip(want.keys()).all(|((k, _), w)| k == w);
        if !same {
            return None;
        }
        let name = match renames {
            true => Some(want.get("name")?.as_str()?),
            false => None,
        };
        let meta = match params.0.iter().position(|(k, _)| k == "_meta") {
            Some(i) => Some((i, Members::of(params.0[i].1.get())?)),
            None => None,
        };
        Some(Request { params, meta, name })
    }

    /// The upstream POST's body: `f`'s request under `sent`'s id, the client's `params` with the
    /// routed name and `sent`'s envelope in `_meta`.
    pub fn write(&self, f: &Forward, sent: &SentModern) -> String {
        let size = self
            .params
            .0
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum::<usize>();
        let envelope = sent.envelope.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>();
        let mut out = String::with_capacity(size + envelope + f.method.len() + 64);
        out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
        out.push_str(&sent.id.to_string());
        out.push_str(",\"method\":");
        push_key(&mut out, &f.method);
        out.push_str(",\"params\":{");
        for (i, (k, v)) in self.params.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            push_key(&mut out, k);
            out.push(':');
            match (&self.meta, self.name) {
                (Some((at, meta)), _) if *at == i => write_meta(&mut out, Some(meta), &sent.envelope),
                (_, Some(name)) if k == "name" => push_key(&mut out, name),
                _ => out.push_str(v.get()),
            }
        }
        if self.meta.is_none() {
            if !self.params.0.is_empty() {
                out.push(',');
            }
            out.push_str("\"_meta\":");
            write_meta(&mut out, None, &sent.envelope);
        }
        out.push_str("}}");
        out
    }
}

/// `_meta` with the `envelope`'s members: the client's `meta` members in order, those of the
/// envelope's names replaced, then the envelope's others.
fn write_meta(out: &mut String, meta: Option<&Members>, envelope: &[(&'static str, String); 3]) {
    out.push('{');
    let mut first = true;
    let mut used = [false; 3];
    for (k, v) in meta.map_or(&[][..], |m| &m.0[..]) {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        push_key(out, k);
        out.push(':');
        match envelope.iter().position(|(name, _)| k == name) {
            Some(e) => {
                used[e] = true;
                out.push_str(&envelope[e].1);
            }
            None => out.push_str(v.get()),
        }
    }
    for (e, (k, v)) in envelope.iter().enumerate() {
        if !used[e] {
            if !std::mem::take(&mut first) {
                out.push(',');
            }
            push_key(out, k);
            out.push(':');
            out.push_str(v);
        }
    }
    out.push('}');
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

    /// The upstream POST spliced from the client's request is the exchange's own (the full
    /// builder, `Conversation::post_modern`): the same headers, the same body as JSON with the
    /// same members in the same order, the same bytes for a compact body.
    #[test]
    fn spliced_requests_are_the_full_builders() {
        use super::Request;
        use mcp_sieve::upstream::{ClientConfig, Conversation, Era, Machine, Step};
        let config = ClientConfig {
            client_info: json!({"name": "mcp-sieve-gateway", "version": "0.1.0"}),
            capabilities: json!({"sampling": {}, "x": [1, "é"]}),
            headers: vec![("Authorization".into(), "Bearer t".into())],
            discover: true,
            ..ClientConfig::default()
        };
        let conv = || Conversation::new(config.clone()).knowing(Era::Modern);
        let env = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}"#;
        let bodies = [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"id":"item-0"}},"_meta":{{{env}}}}}}}"#),
            format!(r#"{{"method":"tools/call","params":{{"_meta":{{"progressToken":5,{env},"z":null}},"arguments":{{"a":[1,2.5,{{"b":"\u0041\n"}}],"n":-0.0}},"name":"echo"}},"id":"s","jsonrpc":"2.0","extra":1}}"#),
            format!(" {{ \"jsonrpc\" : \"2.0\", \"id\" : 3, \"method\" : \"tools/call\", \"params\" : {{ \"name\" : \"echo\" , \"arguments\" : {{ \"x\" : 1.5e3 }}, \"_meta\" : {{ {env} }} }} }}\n"),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c"}}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"echo","k\"q":"é"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"caf\u00e9","_meta":{}}}"#.into(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{{"name":"p","arguments":{{"k":"v"}},"_meta":{{{env}}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{{"uri":"a://b c","_meta":{{{env}}}}}}}"#),
            // Left to the full builder (checked all the same, through it).
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"other"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":null}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"a":1,"a":2}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}}"#.into(),
        ];
        let mut spliced = 0;
        for body in &bodies {
            let client: Value = serde_json::from_str(body).unwrap();
            let method = client["method"].as_str().unwrap().to_string();
            // Routing renames a tool or prompt to the name its upstream knows.
            let mut params = client["params"].clone();
            if let Some(n) = params.get_mut("name").filter(|_| method != "completion/complete") {
                *n = json!(format!("up_{}", n.as_str().unwrap()));
            }
            let f = Forward {
                params,
                verbatim: true,
                ..forward(&method, json!(9))
            };
            let mut full_conv = conv();
            let mut ex = full_conv.request(&f.method, f.params.clone());
            let Ok(Step::Send(want)) = ex.step(&mut full_conv) else {
                panic!("nothing sent")
            };
            let Some(request) = Request::of(&f, body) else {
                continue;
            };
            spliced += 1;
            let mut c = conv();
            let mirrored = mcp_sieve::protocol::jsonrpc::mirrored_param(&f.method);
            let name = mirrored.and_then(|p| f.params.get(p)?.as_str());
            let sent = c.sent_modern(&f.method, f.params.clone(), name).unwrap();
            let got = request.write(&f, &sent);
            assert_eq!(sent.headers, want.headers, "{body}");
            let (got_v, want_v): (Value, Value) = (
                serde_json::from_str(&got).unwrap(),
                serde_json::from_str(&want.body).unwrap(),
            );
            assert_eq!(got_v, want_v, "{body}");
            assert_eq!(got_v.to_string(), want_v.to_string(), "{body}");
            if !body.contains([' ', '\\']) {
                assert_eq!(got, want.body, "{body}");
            }
            // The two conversations and exchanges are where the full one's are after its step.
            assert_eq!((c.link(), sent.exchange), (full_conv.link(), ex), "{body}");
        }
        assert_eq!(spliced, 9);
        // A forward whose params the core built (search mode's call_tool), or a session's: not spliced.
        let f = Forward {
            params: json!({"name": "echo", "arguments": {}}),
            verbatim: false,
            ..forward("tools/call", json!(1))
        };
        assert!(Request::of(&f, &bodies[3]).is_none());
        let f = Forward {
            verbatim: true,
            stateless: false,
            ..f
        };
        assert!(Request::of(&f, &bodies[3]).is_none());
        // Params other than the client's (a member more, or another order): not spliced.
        let f = Forward {
            params: json!({"arguments": {}, "name": "echo"}),
            stateless: true,
            ..f
        };
        assert!(Request::of(&f, &bodies[3]).is_none());
    }
}
