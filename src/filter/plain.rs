//! A list request's filter read straight from its text when it is of the plain shape most are —
//! an object of string lists (`groups`, `tags`, `excludeTags`, `namePatterns`, `uriPatterns`)
//! and `concerns` (an object), each named once, within the bounds — with no `Value` of the lists
//! built, walked and dropped. Any other text (`expr`, a vendor field, a member given twice, a
//! bound passed, a type that is not a list of strings) is not read here: the caller reads it as a
//! `Value` and [`Filter::parse`] gives its filter or its error, so both readings give one answer.
//! Servers' builds only (feature `large-catalogs`: the raw text needs serde_json's `raw_value`).

use serde::Deserialize;

use super::spec::{check_len, MAX_LIST};
use super::Filter;

/// The plain shape: only these members, each at most once (serde's derive refuses a duplicate).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Plain {
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    exclude_tags: Vec<String>,
    #[serde(default)]
    name_patterns: Vec<String>,
    #[cfg(feature = "standards")]
    #[serde(default)]
    uri_patterns: Vec<String>,
    /// `null` as absent (as `Filter::parse` reads it); anything but an object is not plain.
    #[serde(default)]
    concerns: Option<serde_json::Value>,
}

impl Filter {
    /// The filter `text` (a JSON value's text) gives, when it is of the plain shape; `None` for
    /// anything else, to be read by [`Filter::parse`].
    pub(crate) fn read_plain(text: &str) -> Option<Filter> {
        // An object only (serde's derive would read an array as the members in order).
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let p: Plain = serde_json::from_str(text).ok()?;
        let lists = [&p.groups, &p.tags, &p.exclude_tags, &p.name_patterns];
        #[cfg(feature = "standards")]
        let lists = [lists[0], lists[1], lists[2], lists[3], &p.uri_patterns];
        let within = |l: &&Vec<String>| l.len() <= MAX_LIST && l.iter().all(|s| check_len(s, "").is_ok());
        if !lists.iter().all(within) || p.concerns.as_ref().is_some_and(|c| !c.is_object()) {
            return None;
        }
        Some(Filter {
            groups: p.groups,
            tags: p.tags,
            exclude_tags: p.exclude_tags,
            name_patterns: p.name_patterns,
            #[cfg(feature = "standards")]
            uri_patterns: p.uri_patterns,
            concerns: p.concerns,
            ..Filter::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// What `Filter::parse` makes of `text`.
    fn parsed(text: &str) -> Option<crate::error::Result<Filter>> {
        let v: Value = serde_json::from_str(text).ok()?;
        Some(Filter::parse(&v, "params.filter"))
    }

    #[test]
    fn a_plain_filter_reads_as_parse_reads_it_and_anything_else_is_left_to_parse() {
        let long = "x".repeat(super::super::spec::MAX_STRING + 1);
        let many = serde_json::to_string(&vec!["g"; MAX_LIST + 1]).unwrap();
        let plain = [
            r#"{"groups":["a","b"],"tags":["t"]}"#.to_string(),
            r#"{"excludeTags":["x"],"namePatterns":["gh_*"],"uriPatterns":["file:*"]}"#.into(),
            r#"{}"#.into(),
            r#"{"groups":[]}"#.into(),
            r#"{"groups":["\u0041\n"]}"#.into(),
            r#"{"groups":["a"],"concerns":{"cost":"low"}}"#.into(),
            r#"{"concerns":null}"#.into(),
        ];
        for text in &plain {
            let read = Filter::read_plain(text).unwrap_or_else(|| panic!("{text} is plain"));
            assert_eq!(Some(read), parsed(text).map(Result::unwrap), "{text}");
        }
        let other = [
            r#"{"expr":{"group":"a"}}"#.to_string(),
            r#"{"concerns":"low"}"#.into(),
            r#"{"concerns":{"a":1},"concerns":{"b":2}}"#.into(),
            r#"{"com.example/ids":[1]}"#.into(),
            r#"{"groups":["a"],"groups":["b"]}"#.into(),
            r#"{"groups":null}"#.into(),
            r#"{"groups":"a"}"#.into(),
            r#"{"groups":[1]}"#.into(),
            r#"{"group":["a"]}"#.into(),
            "null".into(),
            "[]".into(),
            r#"[["a"]]"#.into(),
            format!(r#"{{"tags":["{long}"]}}"#),
            format!(r#"{{"groups":{many}}}"#),
        ];
        for text in &other {
            assert_eq!(Filter::read_plain(text), None, "{text} is left to parse");
            assert!(parsed(text).is_some(), "{text} is JSON");
        }
    }
}
