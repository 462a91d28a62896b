//! The document's `explain`: who may call `sieve/explain`. Off unless the document says: the
//! answer tells a caller that items policy hides exist (a use of one is "Unknown", exactly like
//! an item that does not) and shows the policy rules, which may name principals and claims.

use serde_json::Value;

use crate::error::{type_name, Error, Result};
use crate::json::str_array;

/// Who may call `sieve/explain`.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Access {
    /// Nobody (no `explain` in the document, or `false`).
    #[default]
    Off,
    /// Every caller, with or without a principal (`"explain": true`: local and development
    /// setups).
    Anyone,
    /// Callers whose principal (or, with `role:<glob>`, one of whose roles) matches one of these
    /// globs (`"explain": {"principals": ["alice", "role:admin"]}`).
    Principals(Vec<String>),
}

/// Parses `explain`: absent, `null` or `false` (off), `true` (anyone), or
/// `{"principals": [..]}`.
pub fn parse(v: Option<&Value>) -> Result<Access> {
    let expected = "explain must be true, false or {\"principals\": [\"alice\", \"role:admin\"]}";
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(Access::Off),
        Some(Value::Bool(true)) => Ok(Access::Anyone),
        Some(Value::Object(o)) => {
            if let Some(k) = o.keys().find(|k| k.as_str() != "principals") {
                return Err(Error::Catalog(format!(
                    "explain has an unknown field \"{k}\"; {expected}"
                )));
            }
            let globs = str_array(o.get("principals"), "explain.principals").map_err(Error::in_catalog)?;
            if globs.is_empty() {
                return Err(Error::Catalog(format!(
                    "explain.principals must name at least one principal (or use \"explain\": false); {expected}"
                )));
            }
            Ok(Access::Principals(globs))
        }
        Some(other) => Err(Error::Catalog(format!("{expected}; got {}", type_name(other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn explain_access_parses_and_names_what_is_wrong() {
        assert_eq!(parse(None).unwrap(), Access::Off);
        assert_eq!(parse(Some(&json!(false))).unwrap(), Access::Off);
        assert_eq!(parse(Some(&json!(true))).unwrap(), Access::Anyone);
        assert_eq!(
            parse(Some(&json!({"principals": ["alice", "role:admin"]}))).unwrap(),
            Access::Principals(vec!["alice".into(), "role:admin".into()])
        );
        let e = parse(Some(&json!({"principals": []}))).unwrap_err().to_string();
        assert!(e.contains("at least one"), "{e}");
        let e = parse(Some(&json!({"users": ["a"]}))).unwrap_err().to_string();
        assert!(e.contains("unknown field \"users\""), "{e}");
        let e = parse(Some(&json!("yes"))).unwrap_err().to_string();
        assert!(e.contains("got a string") || e.contains("got string"), "{e}");
    }
}
