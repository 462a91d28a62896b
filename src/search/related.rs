//! The table of related words a query is widened with, below the built-in synonyms: derived
//! offline from WordNet and generic word vectors by `scripts/search-related.mjs` (never from the
//! labelled queries) into `related.txt`, which `text` parses once on first use. A line is
//! `key rel:score …` (score in tenths); a key of two words (`give back`) applies when the query
//! has both.

use std::collections::HashMap;

/// Related words with their scores (0–1).
pub type Words = Vec<(String, f32)>;

/// The table, keys and related words stemmed as the index stems words.
pub struct Related {
    /// One-word key → (related word, score 0–1); lines that stem alike are folded.
    pub words: HashMap<String, Words>,
    /// Two-word keys by their first word: (second word, related words).
    pub pairs: HashMap<String, Vec<(String, Words)>>,
}

/// The generated table.
pub const TABLE: &str = include_str!("related.txt");

/// The table `table`, both sides of each line normalized with `stem` (the index's stemmer).
pub fn parse(table: &str, stem: fn(&str) -> String) -> Related {
    let mut words: HashMap<String, Words> = HashMap::new();
    let mut pairs: HashMap<String, Vec<(String, Words)>> = HashMap::new();
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let mut key = Vec::new();
        let mut rel: Words = Vec::new();
        for part in line.split(' ') {
            match part.split_once(':') {
                Some((w, s)) => {
                    let w = stem(w);
                    let s = s.parse::<f32>().unwrap_or(0.0) / 10.0;
                    if !rel.iter().any(|(x, _)| *x == w) {
                        rel.push((w, s));
                    }
                }
                None => key.push(stem(part)),
            }
        }
        match key.as_slice() {
            [k] => {
                let to = words.entry(k.clone()).or_default();
                for (w, s) in rel {
                    if w != *k && !to.iter().any(|(x, _)| *x == w) {
                        to.push((w, s));
                    }
                }
            }
            [a, b] => pairs.entry(a.clone()).or_default().push((b.clone(), rel)),
            _ => {}
        }
    }
    Related { words, pairs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::text::{related, stem};

    #[test]
    fn the_table_stems_and_folds_its_lines() {
        let r = parse(
            "# comment\nbuyers customer:9 client:7\nbuyer purchaser:8 customer:6\ngive back refund:7\n",
            stem,
        );
        let b = &r.words["buyer"];
        assert_eq!(b.len(), 3);
        assert_eq!(b[0], ("customer".to_string(), 0.9));
        assert_eq!(
            r.pairs[&stem("give")],
            [("back".to_string(), vec![("refund".to_string(), 0.7)])]
        );
    }

    #[test]
    fn the_generated_table_loads() {
        let r = related();
        assert!(r.words.len() > 1000);
        let give = &r.pairs[&stem("give")];
        assert!(give
            .iter()
            .any(|(b, rel)| b == "back" && rel.iter().any(|(w, _)| w == "refund")));
    }
}
