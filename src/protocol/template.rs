//! Placeholders: `{name}` in prompt message templates and resource texts, and level-1 URI
//! templates (`test://template/{id}/data`) matched against a URI.

use serde_json::Value;

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

/// Replaces `{name}` in every string inside `v` with the matching value.
pub fn substitute(v: &Value, vars: &[(String, String)]) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (k, val) in vars {
                s = s.replace(&format!("{{{k}}}"), val);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, vars)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), substitute(x, vars))).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
