//! `${NAME}` references to secrets in a document's values (an upstream's headers and `env`, its
//! `auth.clientSecret`, `search.headers`): checked when the document is read, resolved by the
//! shell with its secrets (the environment; the Worker's secrets and variables).

use serde_json::Value;

use crate::error::{Error, Result};

/// `value` with every `${NAME}` replaced by `secret(NAME)` (the environment, the Worker's secrets
/// and variables); a missing secret is a configuration error naming it and `place` (where it is
/// used), never an empty value. Error messages never hold a secret's value. The references were
/// checked when the document was read ([`check`]).
pub fn substitute(value: &str, place: &str, secret: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        let end = tail.find('}').unwrap_or(0);
        let name = &tail[..end];
        match secret(name) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(Error::Catalog(format!(
                    "{place} uses the secret ${{{name}}}, which is not set (set it in the environment, or as a Worker secret or variable)"
                )))
            }
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks the `${NAME}` references in `value` (names of letters, digits and `_`, closed).
pub fn check(value: &str, path: &str) -> Result<()> {
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let tail = &rest[at + 2..];
        let Some(end) = tail.find('}') else {
            return Err(Error::Catalog(format!("{path} has a \"${{\" with no closing \"}}\"")));
        };
        let name = &tail[..end];
        let ok = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(Error::Catalog(format!(
                "{path}: a secret reference must look like ${{NAME}} (letters, digits, _), got \"${{{name}}}\""
            )));
        }
        rest = &tail[end + 1..];
    }
    Ok(())
}

/// A document's `headers` object at `path` (absent or null: none): header names valid in HTTP to
/// string values whose `${NAME}` references are checked.
pub fn headers(v: Option<&Value>, path: &str) -> Result<Vec<(String, String)>> {
    let headers = crate::json::string_map(v, path)?;
    for (k, v) in &headers {
        let token = !k.is_empty()
            && k.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(Error::Catalog(format!("{path}[\"{k}\"] is not a valid header name")));
        }
        check(v, &format!("{path}[\"{k}\"]"))?;
    }
    Ok(headers)
}
