//! The document's `code` block (issue 62): the limits of one code-mode program's run, parsed with
//! the rest of the document; code mode's tools are `protocol::code`'s.

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};

/// The document's `code` block: the limits of one program's run, each with its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time of one run, in seconds (`timeoutSeconds`, default 30).
    pub timeout_seconds: u64,
    /// The engine's memory, in MB (`memoryMb`, default 64).
    pub memory_mb: u64,
    /// Tool calls one run may make (`maxCalls`, default 50).
    pub max_calls: u64,
    /// Largest answer (the returned value and the logs as JSON), in bytes (`maxAnswerBytes`,
    /// default 1,000,000).
    pub max_answer_bytes: u64,
    /// Runs of one caller at once (`maxConcurrentRuns`, default 4; by principal, else session).
    pub max_concurrent_runs: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_seconds: 30,
            memory_mb: 64,
            max_calls: 50,
            max_answer_bytes: 1_000_000,
            max_concurrent_runs: 4,
        }
    }
}

/// Each field of the `code` block: its name, the most it may be, and where it goes.
const FIELDS: [(&str, u64); 5] = [
    ("timeoutSeconds", 600),
    ("memoryMb", 1024),
    ("maxCalls", 10_000),
    ("maxAnswerBytes", 100_000_000),
    ("maxConcurrentRuns", 64),
];

impl Limits {
    /// The document's `code` block (absent: the defaults); an unknown field or a value that is
    /// not a whole number from 1 to its bound is an error naming it.
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        let o: &Map<String, Value> = match v {
            None | Some(Value::Null) => return Ok(Limits::default()),
            Some(Value::Object(o)) => o,
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "code must be an object like {{\"timeoutSeconds\": 30}}, got {}",
                    type_name(v)
                )))
            }
        };
        if let Some(k) = o.keys().find(|k| !FIELDS.iter().any(|(f, _)| f == k)) {
            let names: Vec<&str> = FIELDS.iter().map(|(f, _)| *f).collect();
            return Err(Error::Catalog(format!(
                "code: unknown field \"{k}\"; expected one of: {}",
                names.join(", ")
            )));
        }
        let mut l = Limits::default();
        for (name, most) in FIELDS {
            let Some(v) = o.get(name) else { continue };
            let n = v.as_u64().filter(|n| (1..=most).contains(n)).ok_or_else(|| {
                Error::Catalog(format!("code.{name} must be a whole number from 1 to {most}, got {v}"))
            })?;
            match name {
                "timeoutSeconds" => l.timeout_seconds = n,
                "memoryMb" => l.memory_mb = n,
                "maxCalls" => l.max_calls = n,
                "maxAnswerBytes" => l.max_answer_bytes = n,
                _ => l.max_concurrent_runs = n,
            }
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn limits_have_defaults_and_errors_name_the_field() {
        assert_eq!(Limits::parse(None).unwrap(), Limits::default());
        let l = Limits::parse(Some(&json!({"timeoutSeconds": 5, "maxCalls": 3}))).unwrap();
        assert_eq!((l.timeout_seconds, l.max_calls, l.memory_mb), (5, 3, 64));
        for (v, want) in [
            (json!(3), "code must be an object"),
            (json!({"timeout": 3}), "unknown field \"timeout\""),
            (
                json!({"memoryMb": 0}),
                "code.memoryMb must be a whole number from 1 to 1024, got 0",
            ),
            (json!({"maxCalls": "5"}), "code.maxCalls"),
            (json!({"timeoutSeconds": 1.5}), "code.timeoutSeconds"),
        ] {
            let e = Limits::parse(Some(&v)).unwrap_err().to_string();
            assert!(e.contains(want), "{e} should contain {want}");
        }
    }
}
