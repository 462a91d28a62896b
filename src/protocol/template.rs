//! Placeholders: `{name}` in prompt message templates and resource texts, and level-1 URI
//! templates (`test://template/{id}/data`) matched against a URI.

use serde_json::Value;

use crate::error::{Error, Result};

/// Template variables captured from a URI: (name, value).
pub type Vars = Vec<(String, String)>;

/// Matches `uri` against a level-1 URI template (`test://template/{id}/data`): each `{var}`
/// takes a non-empty run without `/`. Returns the variables, or `None` when it does not match.
pub fn match_template(template: &str, uri: &str) -> Option<Vars> {
    let mut vars = Vec::new();
    let (mut t, mut u) = (template, uri);
    while !t.is_empty() {
        if let Some(rest) = t.strip_prefix('{') {
            let close = rest.find('}')?;
            let name = &rest[..close];
            t = &rest[close + 1..];
            // The variable ends where the next literal part begins (or at a `/`, or the end).
            let literal_end = t.find('{').unwrap_or(t.len());
            let literal = &t[..literal_end];
            let limit = u.find('/').unwrap_or(u.len());
            let end = if literal.is_empty() {
                limit
            } else {
                u[..].find(literal).filter(|e| *e <= limit)?
            };
            if end == 0 {
                return None;
            }
            vars.push((name.to_string(), u[..end].to_string()));
            u = &u[end..];
        } else {
            let literal_end = t.find('{').unwrap_or(t.len());
            u = u.strip_prefix(&t[..literal_end])?;
            t = &t[literal_end..];
        }
    }
    u.is_empty().then_some(vars)
}

/// Most bytes the substituted strings of one answer may reach.
pub const MAX_OUTPUT: usize = 256 * 1024;

/// Replaces `{name}` in every string inside `v` with the value of `name` in `vars`, in one pass
/// over each template: inserted text is never scanned again, unknown names stay literal, and the
/// output is capped at [`MAX_OUTPUT`] bytes (`-32602` beyond).
pub fn substitute(v: &Value, vars: &[(String, String)]) -> Result<Value> {
    let mut budget = MAX_OUTPUT;
    substitute_in(v, vars, &mut budget)
}

fn substitute_in(v: &Value, vars: &[(String, String)], budget: &mut usize) -> Result<Value> {
    Ok(match v {
        Value::String(s) => Value::String(fill(s, vars, budget)?),
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|x| substitute_in(x, vars, budget))
                .collect::<Result<_>>()?,
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), substitute_in(x, vars, budget)?)))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

fn fill(template: &str, vars: &[(String, String)], budget: &mut usize) -> Result<String> {
    let too_long = || {
        Error::params(format!(
            "the arguments make the answer larger than {MAX_OUTPUT} bytes; send shorter arguments"
        ))
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after
            .find('}')
            .and_then(|close| vars.iter().find(|(k, _)| k == &after[..close]).map(|(_, v)| (close, v)));
        match value {
            Some((close, v)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
        if out.len() > *budget {
            return Err(too_long());
        }
    }
    out.push_str(rest);
    *budget = budget.checked_sub(out.len()).ok_or_else(too_long)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn templates_match_level_one() {
        let t = "test://template/{id}/data";
        assert_eq!(
            match_template(t, "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(match_template(t, "test://template//data"), None);
        assert_eq!(match_template(t, "test://template/1/2/data"), None);
        assert_eq!(match_template(t, "test://template/123/datum"), None);
        assert_eq!(match_template("a://{x}", "a://y"), Some(vec![("x".into(), "y".into())]));
        assert_eq!(match_template("a://b", "a://b"), Some(vec![]));
    }

    #[test]
    fn substitution_is_one_pass_and_capped() {
        let vars = vec![("a".to_string(), "{b}".to_string()), ("b".to_string(), "B".repeat(10))];
        let v = substitute(&json!({"t": ["x{a}y{b}z{c}", 5]}), &vars).unwrap();
        assert_eq!(
            v,
            json!({"t": ["x{b}yBBBBBBBBBBz{c}", 5]}),
            "inserted text is not scanned again"
        );
        let big = vec![("a".to_string(), "A".repeat(2_000))];
        let t = json!("{a}".repeat(200));
        let e = substitute(&t, &big).unwrap_err();
        assert_eq!(e.code(), -32602);
        assert!(e.to_string().contains("262144 bytes"), "{e}");
        assert_eq!(
            substitute(&json!("{a}{a}"), &big).unwrap().as_str().unwrap().len(),
            4_000
        );
    }
}
