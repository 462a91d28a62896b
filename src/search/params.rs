//! The ranking's weights in one place: BM25F's weight and length normalization per field, and
//! the factors a search applies on top (synonyms, related words, prefixes, name coverage, the
//! action asked, the group named, the share of the query the name matches). `Params::default()`
//! is what every index uses: `examples/search_tune.rs fit --robust` fitted them by coordinate
//! ascent on the tuning part of the labelled queries (never the held-out part), from the
//! hand-set weights before, and its result is written here.

/// Number of indexed fields (`index::Field`).
pub const FIELDS: usize = 9;

/// The ranking's weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// (weight, b) per field, in `index::Field` order: name, title, the description's first
    /// sentence, its rest, parameter names, parameter descriptions, group names, group
    /// descriptions, tags.
    pub fields: [(f32, f32); FIELDS],
    /// BM25's saturation.
    pub k1: f32,
    /// Weight of a built-in synonym's match, against the word's own.
    pub synonym: f32,
    /// Weight of a related word's match (`related.txt`), times its score there.
    pub related: f32,
    /// Weight of a two-word key's related word (`give back` → refund), times its score.
    pub pair: f32,
    /// Weight of a prefix match (`work` → `worklog`), against the word's own.
    pub prefix: f32,
    /// Extra score by the share of a tool's name words the query asks for.
    pub name_cover: f32,
    /// Score factor when the query asks for the action the tool's name starts with.
    pub action_match: f32,
    /// Score factor when the query asks for another action than the tool's name starts with.
    pub action_mismatch: f32,
    /// Score factor when the query names one of the tool's groups (`Slack`, `Jira`).
    pub group_named: f32,
    /// Extra score by the share of the query's words (concepts) the tool's name matches, as
    /// `name_cover` is by the share of the name's words the query asks for.
    pub query_cover: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            fields: [
                (3.0, 0.3),
                (2.0, 0.3),
                (1.2, 0.5),
                (0.5, 0.75),
                (0.6, 0.5),
                (0.25, 0.75),
                (0.8, 0.0),
                (0.25, 0.0),
                (0.3, 0.0),
            ],
            k1: 1.2,
            synonym: 0.54,
            related: 0.4,
            pair: 0.8,
            prefix: 0.7,
            name_cover: 1.5,
            action_match: 1.25,
            action_mismatch: 0.85,
            group_named: 1.5,
            query_cover: 2.0,
        }
    }
}

/// Names of [`Params::slot`]s, for a tuner's report.
pub const NAMES: [&str; 2 * FIELDS + 10] = [
    "name.w",
    "name.b",
    "title.w",
    "title.b",
    "lead.w",
    "lead.b",
    "body.w",
    "body.b",
    "param.w",
    "param.b",
    "paramtext.w",
    "paramtext.b",
    "group.w",
    "group.b",
    "grouptext.w",
    "grouptext.b",
    "tag.w",
    "tag.b",
    "k1",
    "synonym",
    "related",
    "pair",
    "prefix",
    "name_cover",
    "action_match",
    "action_mismatch",
    "group_named",
    "query_cover",
];

impl Params {
    /// Number of tunable weights.
    pub const SLOTS: usize = NAMES.len();

    /// The `i`th weight (in [`NAMES`] order), to change.
    pub fn slot(&mut self, i: usize) -> &mut f32 {
        if i < 2 * FIELDS {
            let f = &mut self.fields[i / 2];
            return if i % 2 == 0 { &mut f.0 } else { &mut f.1 };
        }
        match i - 2 * FIELDS {
            0 => &mut self.k1,
            1 => &mut self.synonym,
            2 => &mut self.related,
            3 => &mut self.pair,
            4 => &mut self.prefix,
            5 => &mut self.name_cover,
            6 => &mut self.action_match,
            7 => &mut self.action_mismatch,
            8 => &mut self.group_named,
            _ => &mut self.query_cover,
        }
    }

    /// Whether the `i`th weight is a length normalization (`b`, kept within 0–1).
    pub fn is_b(i: usize) -> bool {
        i < 2 * FIELDS && i % 2 == 1
    }

    /// Whether the `i`th weight is one a query word's own match outweighs (kept below 1).
    pub fn below_one(i: usize) -> bool {
        matches!(i.checked_sub(2 * FIELDS), Some(1..=4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_a_different_weight() {
        let mut p = Params::default();
        for i in 0..Params::SLOTS {
            *p.slot(i) = 100.0 + i as f32;
        }
        let mut seen: Vec<f32> = (0..Params::SLOTS).map(|i| *p.slot(i)).collect();
        seen.dedup();
        assert_eq!(seen.len(), Params::SLOTS);
    }
}
