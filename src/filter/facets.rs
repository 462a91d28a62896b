//! Facet counts: for the current filter, how many items each group, tag and concern value would
//! leave. Hosts show them beside each option so a user sees the effect of a click before making it.
//!
//! Meaning of each count (all under the same concern configuration):
//! - group `g`: items passing the filter *without its `groups` part* that are in `g` (groups are
//!   ANY, so this is what `g` contributes whether or not it is ticked);
//! - tag `t`, `require`: items passing the filter that carry `t` (what ticking it leaves);
//! - tag `t`, `exclude`: items passing the filter that do not carry `t`;
//! - concern `c` = `v`: items passing the filter with `c` configured to `v` (other concerns as
//!   configured); only concerns declared with a list of values.

use crate::concern::{ConcernConfig, ConcernValues, Concerns};
use crate::filter::Section;
use crate::filter::{Bits, Filter};

/// The count for one tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFacet {
    /// The tag.
    pub name: String,
    /// Items left if the tag were required.
    pub require: usize,
    /// Items left if the tag were excluded.
    pub exclude: usize,
}

/// Facet counts of one section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facets {
    /// Items passing the filter as it is.
    pub total: usize,
    /// `(group, count)` in the order asked.
    pub groups: Vec<(String, usize)>,
    /// One entry per tag, in the order asked.
    pub tags: Vec<TagFacet>,
    /// `(concern, [(value, count)])` in declaration order.
    pub concerns: Vec<(String, Vec<(String, usize)>)>,
}

/// Counts for `groups` and `tags` (usually every group and tag of the catalog) and every declared
/// concern value, given `filter` and the host's *configured* concerns (defaults are applied here
/// exactly as the server applies them, through [`Concerns::effective`]). `visible`, when given, is
/// what policy leaves visible: every count stays inside it.
pub fn facets<'a>(
    section: &Section,
    visible: Option<&Bits>,
    filter: &Filter,
    decls: &Concerns,
    configured: &ConcernConfig,
    groups: impl IntoIterator<Item = &'a str>,
    tags: impl IntoIterator<Item = &'a str>,
) -> Facets {
    let select = |f: &Filter, c: &ConcernConfig| {
        let mut b = section.select(f, c);
        if let Some(v) = visible {
            b.and(v);
        }
        b
    };
    let effective = decls.effective(configured);
    let selected = select(filter, &effective);
    let without_groups = Filter {
        groups: Vec::new(),
        ..filter.clone()
    };
    let base = select(&without_groups, &effective);
    let groups = groups
        .into_iter()
        .map(|g| {
            let n = section.index.group(g).map_or(0, |b| {
                let mut x = base.clone();
                x.and(b);
                x.count()
            });
            (g.to_string(), n)
        })
        .collect();
    let total = selected.count();
    let tags = tags
        .into_iter()
        .map(|t| {
            let require = section.index.tag(t).map_or(0, |b| {
                let mut x = selected.clone();
                x.and(b);
                x.count()
            });
            TagFacet {
                name: t.to_string(),
                require,
                exclude: total - require,
            }
        })
        .collect();
    let concerns = decls
        .decls
        .iter()
        .filter_map(|d| match &d.values {
            ConcernValues::Enum(values) => Some((d, values)),
            ConcernValues::Range { .. } => None,
        })
        .map(|(d, values)| {
            let counts = values
                .iter()
                .map(|v| {
                    let mut config = configured.clone();
                    config.insert(d.name.clone(), v.clone());
                    (v.clone(), select(filter, &decls.effective(&config)).count())
                })
                .collect();
            (d.name.clone(), counts)
        })
        .collect();
    Facets {
        total,
        groups,
        tags,
        concerns,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::Kind;
    use crate::Catalog;

    fn catalog() -> Catalog {
        Catalog::load(&json!({
            "groups": [{"name": "code"}, {"name": "github", "parent": "code"}, {"name": "mail"}],
            "concerns": [{"name": "security", "values": ["high", "low"]}],
            "tools": [
                {"name": "a", "inputSchema": {}, "groups": ["github"], "tags": ["ro"], "_meta": {"concerns": {"security": "high"}}},
                {"name": "b", "inputSchema": {}, "groups": ["code"], "tags": ["ro", "beta"], "_meta": {"concerns": {"security": "low"}}},
                {"name": "c", "inputSchema": {}, "groups": ["mail"]},
            ]
        }))
        .unwrap()
    }

    #[test]
    fn counts_match_evaluating_the_filter_with_one_more_option() {
        let cat = catalog();
        let s = cat.section(Kind::Tool);
        let filter = Filter::parse(&json!({"groups": ["mail"], "tags": []}), "filter").unwrap();
        let f = facets(
            s,
            None,
            &filter,
            &cat.concerns,
            &ConcernConfig::new(),
            ["code", "github", "mail"],
            ["ro", "beta"],
        );
        assert_eq!(f.total, 1);
        // Groups ignore the ticked groups: code has a and b (github is under code).
        assert_eq!(
            f.groups,
            vec![("code".into(), 2), ("github".into(), 1), ("mail".into(), 1)]
        );
        // Tags count within the selection (only c, which has no tags).
        assert_eq!(
            f.tags[0],
            TagFacet {
                name: "ro".into(),
                require: 0,
                exclude: 1
            }
        );
        // Concern values: c is unmapped so every value keeps it.
        assert_eq!(
            f.concerns,
            vec![("security".into(), vec![("high".into(), 1), ("low".into(), 1)])]
        );

        let everything = Filter::default();
        let f = facets(
            s,
            None,
            &everything,
            &cat.concerns,
            &ConcernConfig::new(),
            ["code"],
            ["ro", "beta"],
        );
        assert_eq!(f.total, 3);
        assert_eq!((f.tags[0].require, f.tags[0].exclude), (2, 1));
        assert_eq!((f.tags[1].require, f.tags[1].exclude), (1, 2));
        assert_eq!(f.concerns[0].1, vec![("high".into(), 2), ("low".into(), 2)]);
    }

    #[test]
    fn unknown_names_count_zero() {
        let cat = catalog();
        let f = facets(
            cat.section(Kind::Tool),
            None,
            &Filter::default(),
            &cat.concerns,
            &ConcernConfig::new(),
            ["nope"],
            ["nope"],
        );
        assert_eq!(f.groups, vec![("nope".into(), 0)]);
        assert_eq!((f.tags[0].require, f.tags[0].exclude), (0, 3));
    }
}
