//! The inverted index of a catalog's tools, built once when the catalog loads (a gateway's
//! catalog is rebuilt, index and all, when its upstreams' lists are refreshed): every word of a
//! tool's name, title, description, parameter names and descriptions, groups and tags → the
//! tools it occurs in, each with its BM25F weight already computed. A search scores postings
//! only, keeps the tools in the caller's visible set, and parses no definition.

use std::collections::HashMap;

use serde_json::Value;

use super::text::{self, Concept};
use crate::filter::Bits;
use crate::model::{Group, Primitive};

/// The fields of a tool, with their BM25F weight and length normalization.
#[derive(Clone, Copy)]
enum Field {
    Name,
    Title,
    /// The description's first sentence.
    Lead,
    /// The rest of the description.
    Body,
    ParamName,
    ParamText,
    Group,
    GroupText,
    Tag,
}

const FIELDS: usize = 9;
/// (weight, b) per field, in `Field` order.
const WEIGHTS: [(f32, f32); FIELDS] = [
    (3.0, 0.3),
    (2.0, 0.3),
    (1.2, 0.5),
    (0.5, 0.75),
    (0.6, 0.5),
    (0.25, 0.75),
    (0.8, 0.0),
    (0.25, 0.0),
    (0.3, 0.0),
];
const K1: f32 = 1.2;
/// Most words read from one field of one tool (a description can be long).
const MAX_FIELD_WORDS: usize = 400;
/// Most parameters read from one tool.
const MAX_PARAMS: usize = 64;
/// Most words a query is read for.
pub const MAX_QUERY_WORDS: usize = 32;
/// Most indexed words one query word may reach as their prefix.
const MAX_PREFIX_TERMS: usize = 64;
/// Weight of a prefix match (`work` → `worklog`), against the word's own.
const PREFIX_WEIGHT: f32 = 0.5;
/// Extra score by the share of a tool's name words the query asks for.
const NAME_COVER: f32 = 1.5;
/// Score factor when the query asks for the action the tool's name starts with.
const ACTION_MATCH: f32 = 1.25;
/// Score factor when the query asks for another action than the tool's name starts with.
const ACTION_MISMATCH: f32 = 0.85;
/// Score factor when the query names one of the tool's groups (`Slack`, `Jira`).
const GROUP_NAMED: f32 = 1.5;
/// Extra score when the query names the tool exactly.
const EXACT_NAME: f32 = 20.0;

/// The words of one tool, by field, while the catalog loads.
#[derive(Debug, Default, Clone)]
struct Doc {
    terms: Vec<(u32, u8)>,
    lens: [u16; FIELDS],
    /// The action groups of the first word of the name that is an action (`jira_create_issue`:
    /// create).
    action: u32,
}

/// Collects the tools' words as the catalog loads them (`add` in section order), then
/// `finish`es into a [`SearchIndex`].
#[derive(Debug, Default)]
pub struct Builder {
    vocab: HashMap<String, u32>,
    docs: Vec<Doc>,
    scratch: Vec<String>,
}

impl Builder {
    fn field(&mut self, doc: &mut Doc, f: Field, text: &str) {
        self.scratch.clear();
        text::words(text, MAX_FIELD_WORDS, &mut self.scratch);
        for w in self.scratch.drain(..) {
            let next = self.vocab.len() as u32;
            let id = *self.vocab.entry(w).or_insert(next);
            doc.terms.push((id, f as u8));
            doc.lens[f as usize] = doc.lens[f as usize].saturating_add(1);
        }
    }

    /// Reads one tool's definition (the next position of the tool section).
    pub fn add(&mut self, tool: &Value) {
        let mut doc = Doc::default();
        let s = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or_default();
        self.field(&mut doc, Field::Name, s("name"));
        self.scratch.clear();
        text::words(s("name"), 8, &mut self.scratch);
        doc.action = self
            .scratch
            .iter()
            .map(|w| text::actions(w))
            .find(|&a| a != 0)
            .unwrap_or(0);
        let title = tool
            .get("annotations")
            .and_then(|a| a.get("title"))
            .and_then(Value::as_str)
            .filter(|_| s("title").is_empty())
            .unwrap_or(s("title"));
        self.field(&mut doc, Field::Title, title);
        let description = s("description");
        let cut = lead_end(description);
        self.field(&mut doc, Field::Lead, &description[..cut]);
        self.field(&mut doc, Field::Body, &description[cut..]);
        let props = tool
            .get("inputSchema")
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object);
        for (name, p) in props.into_iter().flatten().take(MAX_PARAMS) {
            self.field(&mut doc, Field::ParamName, name);
            let d = p.get("description").and_then(Value::as_str).unwrap_or_default();
            self.field(&mut doc, Field::ParamText, d);
        }
        self.docs.push(doc);
    }

    /// The index over the tools added, with each tool's groups (`items[i].groups`: the words of
    /// their name, title and description) and tags.
    pub fn finish(mut self, items: &[Primitive], groups: &[Group]) -> SearchIndex {
        // Groups' and tags' words, once per group.
        let mut group_words: HashMap<&str, (Doc, Doc)> = HashMap::new();
        for g in groups {
            let (mut a, mut b) = (Doc::default(), Doc::default());
            let gs = |k: &str| g.json.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            self.field(&mut a, Field::Group, &g.name);
            self.field(&mut a, Field::Group, &gs("title"));
            self.field(&mut b, Field::GroupText, &gs("description"));
            group_words.insert(&g.name, (a, b));
        }
        let mut docs = std::mem::take(&mut self.docs);
        for (doc, item) in docs.iter_mut().zip(items) {
            for g in &item.groups {
                if let Some((a, b)) = group_words.get(g.as_str()) {
                    for d in [a, b] {
                        doc.terms.extend_from_slice(&d.terms);
                        for f in 0..FIELDS {
                            doc.lens[f] = doc.lens[f].saturating_add(d.lens[f]);
                        }
                    }
                } else {
                    self.field(doc, Field::Group, g);
                }
            }
            for t in &item.tags {
                self.field(doc, Field::Tag, t);
            }
        }
        SearchIndex::compile(self.vocab, docs, items)
    }
}

/// Where the first sentence of a description ends (a `. ` or a line break), in bytes.
fn lead_end(d: &str) -> usize {
    let line = d.find('\n').unwrap_or(d.len());
    let sentence = d.find(". ").map_or(d.len(), |i| i + 1);
    line.min(sentence)
}

/// One tool a word occurs in, with the word's precomputed BM25F score there; the high bit of
/// `doc` says the word is in the tool's name.
#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    score: f32,
}

const IN_NAME: u32 = 1 << 31;
/// The word names one of the tool's groups (its name or title).
const IN_GROUP: u32 = 1 << 30;
const DOC: u32 = IN_GROUP - 1;

/// The inverted index of a catalog's tools.
#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Indexed words, sorted (a word's id is its position).
    terms: Vec<Box<str>>,
    /// Postings per word id.
    postings: Vec<Box<[Posting]>>,
    /// Each word's idf.
    idf: Vec<f32>,
    /// Distinct words in each tool's name.
    name_words: Vec<u8>,
    /// Each tool's action groups (see `Doc::action`).
    actions: Vec<u32>,
    /// Tool name → position, for exact-name queries.
    by_name: HashMap<Box<str>, u32>,
}

impl SearchIndex {
    fn compile(vocab: HashMap<String, u32>, docs: Vec<Doc>, items: &[Primitive]) -> Self {
        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for d in &docs {
            for (a, l) in avg.iter_mut().zip(d.lens) {
                *a += l as f32;
            }
        }
        avg.iter_mut().for_each(|a| *a = (*a / n).max(1.0));
        // Sorted words; old id → new id.
        let mut sorted: Vec<(String, u32)> = vocab.into_iter().collect();
        sorted.sort_unstable();
        let mut remap = vec![0u32; sorted.len()];
        for (new, (_, old)) in sorted.iter().enumerate() {
            remap[*old as usize] = new as u32;
        }
        let mut lists: Vec<Vec<Posting>> = vec![Vec::new(); sorted.len()];
        let mut name_words = Vec::with_capacity(docs.len());
        let mut tf: HashMap<u32, ([f32; FIELDS], u32)> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            tf.clear();
            for &(t, f) in &d.terms {
                let e = tf.entry(remap[t as usize]).or_insert(([0.0; FIELDS], 0));
                e.0[f as usize] += 1.0;
                if f == Field::Name as u8 {
                    e.1 |= IN_NAME;
                }
                if f == Field::Group as u8 {
                    e.1 |= IN_GROUP;
                }
            }
            name_words.push(tf.values().filter(|e| e.1 & IN_NAME != 0).count().min(255) as u8);
            for (&t, (fs, flags)) in &tf {
                let mut w = 0.0;
                for f in 0..FIELDS {
                    if fs[f] > 0.0 {
                        let (weight, b) = WEIGHTS[f];
                        w += weight * fs[f] / (1.0 - b + b * d.lens[f] as f32 / avg[f]);
                    }
                }
                let doc = i as u32 | flags;
                lists[t as usize].push(Posting {
                    doc,
                    score: w / (K1 + w),
                });
            }
        }
        // idf folded into each posting.
        let mut idfs = Vec::with_capacity(lists.len());
        let postings = lists
            .into_iter()
            .map(|mut l| {
                let df = l.len() as f32;
                let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                idfs.push(idf);
                l.iter_mut().for_each(|p| p.score *= idf);
                l.sort_unstable_by_key(|p| p.doc & DOC);
                l.into_boxed_slice()
            })
            .collect();
        let by_name = items
            .iter()
            .enumerate()
            .map(|(i, p)| (fold_name(&p.name).into_boxed_str(), i as u32))
            .collect();
        SearchIndex {
            terms: sorted.into_iter().map(|(t, _)| t.into_boxed_str()).collect(),
            postings,
            idf: idfs,
            name_words,
            actions: docs.iter().map(|d| d.action).collect(),
            by_name,
        }
    }

    /// Number of indexed words.
    pub fn terms(&self) -> usize {
        self.terms.len()
    }

    /// Number of postings (word, tool) in all.
    pub fn postings(&self) -> usize {
        self.postings.iter().map(|p| p.len()).sum()
    }

    fn term(&self, w: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| (**t).cmp(w)).ok()
    }

    /// Word ids that `w` is a proper prefix of (at most `MAX_PREFIX_TERMS`).
    fn prefixed<'a>(&'a self, w: &'a str) -> impl Iterator<Item = usize> + 'a {
        let start = self.terms.partition_point(|t| **t <= *w);
        (start..self.terms.len())
            .take_while(move |&i| self.terms[i].starts_with(w))
            .take(MAX_PREFIX_TERMS)
    }

    /// The tools in `visible` that best match `query`, best first, at most `limit`, with their
    /// scores (only positive ones).
    pub fn search(&self, query: &str, visible: &Bits, limit: usize) -> Vec<(usize, f32)> {
        let n = self.name_words.len();
        let concepts = text::concepts(query, MAX_QUERY_WORDS);
        let mut total = vec![0f32; n];
        let mut cover = vec![0f32; n];
        let mut best: Vec<f32> = vec![0f32; n];
        let mut named: Vec<f32> = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut grouped = vec![false; n];
        let rarest = ((n as f32 + 0.5) / 0.5 + 1.0).ln();
        for Concept { forms } in &concepts {
            // A synonym rarer than the word asked counts no more than the word would.
            let own = forms
                .first()
                .and_then(|(f, _)| self.term(f))
                .map_or(rarest, |t| self.idf[t]);
            for (form, weight) in forms {
                let exact = self.term(form).map(|t| {
                    let scale = if *weight < 1.0 {
                        (own / self.idf[t]).powf(0.5).min(1.0)
                    } else {
                        1.0
                    };
                    (t, weight * scale)
                });
                let prefixes = (form.chars().count() >= 4 && *weight >= 1.0)
                    .then(|| self.prefixed(form).map(|t| (t, weight * PREFIX_WEIGHT)))
                    .into_iter()
                    .flatten();
                for (t, w) in exact.into_iter().chain(prefixes) {
                    for p in self.postings[t].iter() {
                        let d = (p.doc & DOC) as usize;
                        grouped[d] |= p.doc & IN_GROUP != 0 && w >= 1.0;
                        let s = p.score * w;
                        if best[d] == 0.0 && named[d] == 0.0 {
                            touched.push(d as u32);
                        }
                        if s > best[d] {
                            best[d] = s;
                        }
                        // A name word counts for coverage by how closely it is the word asked.
                        if p.doc & IN_NAME != 0 && w > named[d] {
                            named[d] = w;
                        }
                    }
                }
            }
            for d in touched.drain(..) {
                let d = d as usize;
                total[d] += best[d];
                cover[d] += named[d];
                best[d] = 0.0;
                named[d] = 0.0;
            }
        }
        let exact = self.exact_names(query);
        let asked = concepts.iter().fold(0, |a, c| a | text::actions(&c.forms[0].0));
        let mut hits: Vec<(usize, f32)> = total
            .iter()
            .enumerate()
            .filter(|&(d, &s)| s > 0.0 && visible.get(d))
            .map(|(d, &s)| {
                let cover = cover[d] / self.name_words[d].max(1) as f32;
                let bonus = if exact.contains(&d) { EXACT_NAME } else { 0.0 };
                // The action asked (create, list, delete…) against the tool's.
                let act = self.actions[d];
                let action = if asked == 0 || act == 0 {
                    1.0
                } else if asked & act != 0 {
                    ACTION_MATCH
                } else {
                    ACTION_MISMATCH
                };
                let group = if grouped[d] { GROUP_NAMED } else { 1.0 };
                (
                    d,
                    (s + NAME_COVER * cover.min(1.0) * (s / (s + 1.0))) * action * group + bonus,
                )
            })
            .collect();
        let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if limit == 0 {
            return Vec::new();
        }
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits
    }

    /// Tools the query names exactly (`git_status`, `browser_click`).
    fn exact_names(&self, query: &str) -> Vec<usize> {
        query
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '`' | '"' | '\'' | '(' | ')'))
            .filter(|w| w.len() > 2)
            .take(MAX_QUERY_WORDS)
            .filter_map(|w| self.by_name.get(fold_name(w).as_str()).map(|&d| d as usize))
            .collect()
    }
}

fn fold_name(s: &str) -> String {
    crate::middleware::fold::lower(s.trim_matches(|c: char| !c.is_alphanumeric()))
}
