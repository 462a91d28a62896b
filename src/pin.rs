//! Pinned tool definitions ("rug pull" protection) for gateway mode: a digest of each upstream
//! tool as the model sees it (canonical JSON of its name, title, description, schemas and
//! annotations; SHA-256), the pins an operator approved (a lock file or a KV value, given to the
//! core as data by the shell), and the decision: with `"pinning": "enforce"` a tool that is new or
//! whose digest differs from its pin is quarantined (left out of the catalog: not listed, not
//! callable) until approved; with `"warn"` it is listed and reported. A renamed tool is a new one.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{type_name, Error, Result};

/// The reason code of a tool hidden by pinning (as `sieve/explain` and the status report it).
pub const REASON: &str = "quarantine";
/// Where a listed upstream tool carries its digest: `_meta["dev.mcp-sieve/digest"]`.
pub const META_DIGEST: &str = "dev.mcp-sieve/digest";
/// Where a tool listed in `"warn"` mode says it is not pinned: `"new"` or `"changed"`.
pub const META_UNPINNED: &str = "dev.mcp-sieve/unpinned";
/// The lock file's name when the document names none (next to the document).
pub const DEFAULT_LOCK: &str = "mcp-sieve.lock.json";
/// The fields of a tool the digest covers: what a model is shown of it (in key order: `digest`
/// writes them as they come).
const SEEN: [&str; 6] = [
    "annotations",
    "description",
    "inputSchema",
    "name",
    "outputSchema",
    "title",
];

/// What pinning does with a tool that does not match its pin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Nothing (the digests are still computed and shown).
    #[default]
    Off,
    /// Listed, and reported.
    Warn,
    /// Quarantined: not listed, not callable, reported.
    Enforce,
}

impl Mode {
    /// Its name in the document.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Warn => "warn",
            Mode::Enforce => "enforce",
        }
    }
}

/// The document's `pinning`: `"enforce"`, `"warn"`, `"off"`, or `{"mode": .., "lock": "FILE"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pinning {
    /// The mode.
    pub mode: Mode,
    /// The lock file (native server), relative to the document's folder; default [`DEFAULT_LOCK`].
    pub lock: Option<String>,
}

impl Pinning {
    /// Reads `pinning`; errors name the bad field.
    pub fn parse(v: Option<&Value>) -> Result<Pinning> {
        let mode = |v: &Value| match v.as_str() {
            Some("off") => Ok(Mode::Off),
            Some("warn") => Ok(Mode::Warn),
            Some("enforce") => Ok(Mode::Enforce),
            _ => Err(Error::Catalog(format!(
                "pinning must be \"enforce\", \"warn\" or \"off\" (or {{\"mode\": .., \"lock\": \"FILE\"}}), got {v}"
            ))),
        };
        match v {
            None | Some(Value::Null) => Ok(Pinning::default()),
            Some(Value::Object(o)) => {
                if let Some(k) = o.keys().find(|k| !["mode", "lock"].contains(&k.as_str())) {
                    return Err(Error::Catalog(format!(
                        "pinning has an unknown field \"{k}\"; expected mode, lock"
                    )));
                }
                let lock = match o.get("lock") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                    Some(other) => {
                        return Err(Error::Catalog(format!(
                            "pinning.lock must be a file name, got {}",
                            type_name(other)
                        )))
                    }
                };
                Ok(Pinning {
                    mode: o.get("mode").map_or(Ok(Mode::Enforce), mode)?,
                    lock,
                })
            }
            Some(v) => Ok(Pinning {
                mode: mode(v)?,
                lock: None,
            }),
        }
    }
}

/// `v` as canonical JSON: object keys sorted, no whitespace (strings and numbers as serde_json
/// writes them), so equal definitions give equal text whatever order their keys came in.
pub fn canonical(v: &Value) -> String {
    let mut out = Vec::new();
    write(v, &mut out);
    String::from_utf8(out).unwrap_or_default() // serde_json writes UTF-8
}

/// Appends the canonical JSON of `v` to `out`.
fn write(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(o) => {
            let mut entries: Vec<(&String, &Value)> = o.iter().collect();
            // crate::sort: one sort for the crate (its own was 3.5 KB of the Worker's wasm).
            crate::sort::sort_by(&mut entries, |a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                scalar(k, out);
                out.push(b':');
                write(v, out);
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(x, out);
            }
            out.push(b']');
        }
        other => scalar(other, out),
    }
}

/// Appends a string or scalar as serde_json writes it (writing to a `Vec` cannot fail).
fn scalar<T: serde::Serialize + ?Sized>(v: &T, out: &mut Vec<u8>) {
    let _ = serde_json::to_writer(out, v);
}

/// The digest of `tool` as a model sees it: `sha256:` and the hex SHA-256 of the canonical JSON
/// of its name (as listed, so a rename is a new tool), title, description, input and output
/// schemas and annotations — the fields it has.
pub fn digest(tool: &Value) -> String {
    // The canonical JSON of the object of those fields, written without building it (SEEN is
    // in key order).
    let mut out = vec![b'{'];
    for k in SEEN {
        if let Some(v) = tool.get(k) {
            if out.len() > 1 {
                out.push(b',');
            }
            scalar(k, &mut out);
            out.push(b':');
            write(v, &mut out);
        }
    }
    out.push(b'}');
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for b in Sha256::digest(&out) {
        text.push(HEX[usize::from(b >> 4)] as char);
        text.push(HEX[usize::from(b & 15)] as char);
    }
    text
}

/// The pins an operator approved: tool name (as listed) → digest. The lock file and the KV value
/// are `{"version": 1, "tools": {name: digest}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins(pub BTreeMap<String, String>);

impl Pins {
    /// Reads a lock's text; errors say what is wrong with it.
    pub fn parse(text: &str) -> Result<Pins> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::Config(format!("the pin lock is not JSON: {e}")))?;
        let tools = v.get("tools").and_then(Value::as_object).ok_or_else(|| {
            Error::Config("the pin lock must be {\"version\": 1, \"tools\": {\"<tool name>\": \"sha256:…\"}}".into())
        })?;
        tools
            .iter()
            .map(|(k, d)| match d.as_str() {
                Some(d) => Ok((k.clone(), d.to_string())),
                None => Err(Error::Config(format!(
                    "the pin lock's tools[\"{k}\"] must be a digest string, got {}",
                    type_name(d)
                ))),
            })
            .collect::<Result<_>>()
            .map(Pins)
    }

    /// The lock's text (pretty, names in order: a diff shows what was approved).
    pub fn to_text(&self) -> String {
        let doc = json!({"version": 1, "tools": self.0});
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    }
}

/// A tool whose digest does not match a pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpinned {
    /// Its upstream (an index in the catalog's `upstreams`).
    pub upstream: usize,
    /// Its digest now.
    pub digest: String,
    /// The digest pinned for its name; `None`: a new tool.
    pub pinned: Option<String>,
}

impl Unpinned {
    /// `"new"` or `"changed"`.
    pub fn change(&self) -> &'static str {
        if self.pinned.is_some() {
            "changed"
        } else {
            "new"
        }
    }
}

/// What pinning found in one build of a gateway's catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The document's mode.
    pub mode: Mode,
    /// Every upstream tool's digest now, by name as listed (quarantined ones too): what
    /// `mcp-sieve pin` writes.
    pub digests: BTreeMap<String, String>,
    /// The tools that match no pin (with `Off`: none).
    pub unpinned: BTreeMap<String, Unpinned>,
}

impl Report {
    /// Records `name`'s `digest` and decides it: `Some` when pinning is on and it matches no pin
    /// (then in `Enforce` the caller leaves it out).
    pub fn decide(&mut self, pins: &Pins, name: &str, digest: &str, upstream: usize) -> Option<&Unpinned> {
        self.digests.insert(name.to_string(), digest.to_string());
        let pinned = pins.0.get(name);
        if self.mode == Mode::Off || pinned.is_some_and(|p| p == digest) {
            return None;
        }
        self.unpinned.insert(
            name.to_string(),
            Unpinned {
                upstream,
                digest: digest.to_string(),
                pinned: pinned.cloned(),
            },
        );
        self.unpinned.get(name)
    }

    /// Why `name` is hidden by pinning, when it is: quarantined (`Enforce`, new or changed since
    /// pinned). The tool is then not in the catalog at all. For `sieve/explain` ([`REASON`]).
    pub fn quarantined(&self, name: &str) -> Option<&Unpinned> {
        (self.mode == Mode::Enforce).then(|| self.unpinned.get(name)).flatten()
    }

    /// Whether `name` matches no pin (`Warn` or `Enforce`).
    pub fn unpinned(&self, name: &str) -> Option<&Unpinned> {
        self.unpinned.get(name)
    }

    /// The log lines for what is unpinned now and was not (or differently) in `before`.
    pub fn news(&self, before: &Report) -> Vec<String> {
        let what = match self.mode {
            Mode::Enforce => "quarantined (not listed, not callable)",
            _ => "listed, but not pinned",
        };
        self.unpinned
            .iter()
            .filter(|(name, u)| before.unpinned.get(*name) != Some(u) || before.mode != self.mode)
            .map(|(name, u)| {
                let since = match &u.pinned {
                    Some(p) => format!("its definition changed since it was pinned ({p} → {})", u.digest),
                    None => format!("it is new ({})", u.digest),
                };
                format!(
                    "pinning: the tool \"{name}\" is {what}: {since}; approve it with `mcp-sieve pin --approve {name}`"
                )
            })
            .collect()
    }

    /// The report for an operator (the upstreams' status): mode, how many tools are pinned and
    /// which are not (each with `reason: "quarantine"` when hidden).
    pub fn status(&self, upstream_names: &[String]) -> Value {
        let unpinned: Vec<Value> = self
            .unpinned
            .iter()
            .map(|(name, u)| {
                let mut o = json!({
                    "name": name,
                    "upstream": upstream_names.get(u.upstream),
                    "change": u.change(),
                    "digest": u.digest,
                    "pinned": u.pinned,
                });
                if self.mode == Mode::Enforce {
                    o["reason"] = json!(REASON);
                }
                o
            })
            .collect();
        json!({
            "mode": self.mode.as_str(),
            "tools": self.digests.len(),
            "pinned": self.digests.len() - self.unpinned.len(),
            "unpinned": unpinned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_covers_what_the_model_sees_in_any_key_order() {
        let a = json!({"name": "t", "description": "d", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}, "a": {}}}});
        let b = json!({"inputSchema": {"properties": {"a": {}, "x": {"type": "string"}}, "type": "object"}, "description": "d", "name": "t", "groups": ["g"], "_meta": {"k": 1}});
        assert_eq!(digest(&a), digest(&b));
        assert!(digest(&a).starts_with("sha256:") && digest(&a).len() == 7 + 64);
        // The digest is the SHA-256 of the canonical JSON of those fields (what another tool
        // would compute from the listed tool).
        let seen = json!({"name": "t", "description": "d", "inputSchema": a["inputSchema"]});
        let hex: String = Sha256::digest(canonical(&seen).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest(&b), format!("sha256:{hex}"));
        // Known answer: Python's json.dumps(sort_keys=True, separators=(",", ":")) + hashlib.
        let echo = json!({"name": "echo", "description": "Echoes", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}, "_meta": {"x": 1}});
        assert_eq!(
            digest(&echo),
            "sha256:f5817a5f0a54006be391f197dd2d60fd376bf2d1ca879385197544cc5ad7f3a1"
        );
        assert_eq!(
            canonical(&json!({"b": [1, {"d": null, "c": "é\n"}], "a": true})),
            r#"{"a":true,"b":[1,{"c":"é\n","d":null}]}"#
        );
        for changed in [
            json!({"name": "t2", "description": "d", "inputSchema": a["inputSchema"]}),
            json!({"name": "t", "description": "d!", "inputSchema": a["inputSchema"]}),
            json!({"name": "t", "description": "d", "inputSchema": {}}),
            json!({"name": "t", "description": "d", "inputSchema": a["inputSchema"], "annotations": {"readOnlyHint": true}}),
            json!({"name": "t", "description": "d", "inputSchema": a["inputSchema"], "title": "T"}),
            json!({"name": "t", "description": "d", "inputSchema": a["inputSchema"], "outputSchema": {}}),
        ] {
            assert_ne!(digest(&a), digest(&changed), "{changed}");
        }
    }

    #[test]
    fn enforce_quarantines_new_and_changed_tools_and_warn_only_reports_them() {
        let pins = Pins::parse(r#"{"version": 1, "tools": {"a": "sha256:1", "b": "sha256:2"}}"#).unwrap();
        assert_eq!(Pins::parse(&pins.to_text()).unwrap(), pins);
        for mode in [Mode::Off, Mode::Warn, Mode::Enforce] {
            let mut r = Report {
                mode,
                ..Report::default()
            };
            assert!(r.decide(&pins, "a", "sha256:1", 0).is_none());
            let changed = r.decide(&pins, "b", "sha256:9", 0).cloned();
            let new = r.decide(&pins, "c", "sha256:3", 1).cloned();
            assert_eq!(r.digests.len(), 3);
            match mode {
                Mode::Off => assert!(changed.is_none() && new.is_none() && r.quarantined("b").is_none()),
                _ => {
                    assert_eq!(changed.unwrap().change(), "changed");
                    assert_eq!(new.unwrap().change(), "new");
                    assert_eq!(r.quarantined("b").is_some(), mode == Mode::Enforce);
                    assert!(r.unpinned("c").is_some() && r.quarantined("a").is_none());
                    let lines = r.news(&Report::default());
                    assert_eq!(lines.len(), 2);
                    assert!(
                        lines[0].contains("\"b\"") && lines[0].contains("sha256:2 → sha256:9"),
                        "{lines:?}"
                    );
                    assert!(r.news(&r).is_empty());
                    let s = r.status(&["x".into(), "y".into()]);
                    assert_eq!(s["pinned"], json!(1));
                    assert_eq!(s["unpinned"][1]["upstream"], json!("y"));
                    assert_eq!(s["unpinned"][0].get("reason").is_some(), mode == Mode::Enforce);
                }
            }
        }
        assert!(Pins::parse(r#"{"tools": {"a": 1}}"#)
            .unwrap_err()
            .to_string()
            .contains("tools[\"a\"]"));
        assert!(Pins::parse("[]").is_err());
    }

    #[test]
    fn the_document_names_a_mode_and_maybe_a_lock() {
        assert_eq!(Pinning::parse(None).unwrap(), Pinning::default());
        assert_eq!(Pinning::parse(Some(&json!("warn"))).unwrap().mode, Mode::Warn);
        let p = Pinning::parse(Some(&json!({"lock": "pins.json"}))).unwrap();
        assert_eq!((p.mode, p.lock.as_deref()), (Mode::Enforce, Some("pins.json")));
        assert!(Pinning::parse(Some(&json!("strict"))).is_err());
        assert!(Pinning::parse(Some(&json!({"mode": "warn", "file": "x"}))).is_err());
        assert!(Pinning::parse(Some(&json!({"lock": 3}))).is_err());
    }
}
