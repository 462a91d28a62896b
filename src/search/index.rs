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

/// Where one tool's (or group's) words are in the builder's word list, with its field lengths.
#[derive(Debug, Default, Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
    lens: [u16; FIELDS],
}

impl Span {
    fn add_lens(&mut self, other: &Span) {
        for (a, b) in self.lens.iter_mut().zip(other.lens) {
            *a = a.saturating_add(b);
        }
    }
}

/// Collects the tools' words as the catalog loads them (`add` in section order), then
/// `finish`es into a [`SearchIndex`]. Words are lowercased and stemmed in one reused buffer and
/// looked up by `&str` (a word already seen allocates nothing), and all tools' words go to one
/// list, a tool keeping its span of it.
#[derive(Debug)]
pub struct Builder {
    /// Word → id, in order of first sight; the stop words come first (ids below `stops`).
    vocab: HashMap<Box<str>, u32>,
    /// Each word id's action groups (`text::actions`).
    acts: Vec<u32>,
    stops: u32,
    /// (word id, field) of every tool, tool after tool; then the groups' and tags' words.
    words: Vec<(u32, u8)>,
    /// Each tool's span of `words`.
    docs: Vec<Span>,
    /// The action groups of the first word of each tool's name that is an action
    /// (`jira_create_issue`: create).
    actions: Vec<u32>,
    buf: String,
}

impl Default for Builder {
    fn default() -> Self {
        let mut vocab = HashMap::new();
        for w in text::stop_words() {
            let next = vocab.len() as u32;
            vocab.entry((*w).into()).or_insert(next);
        }
        let stops = vocab.len() as u32;
        Builder {
            vocab,
            acts: vec![0; stops as usize],
            stops,
            words: Vec::new(),
            docs: Vec::new(),
            actions: Vec::new(),
            buf: String::new(),
        }
    }
}

/// The value of key `k` of a JSON object, by a scan (tool objects have a few keys).
fn key<'a>(o: &'a serde_json::Map<String, Value>, k: &str) -> Option<&'a Value> {
    o.iter().find(|(x, _)| x.as_str() == k).map(|(_, v)| v)
}

impl Builder {
    /// Appends the words of `text`, as field `f`, to `span` (which ends where `words` does).
    fn field(&mut self, span: &mut Span, f: Field, text: &str) {
        let Builder {
            vocab,
            acts,
            stops,
            buf,
            words,
            ..
        } = self;
        let before = words.len();
        text::scan(text, MAX_FIELD_WORDS, buf, |w| {
            let id = match vocab.get(w) {
                Some(&id) => id,
                None => {
                    let id = vocab.len() as u32;
                    vocab.insert(w.into(), id);
                    acts.push(text::actions(w));
                    id
                }
            };
            if id < *stops {
                return false;
            }
            words.push((id, f as u8));
            true
        });
        let added = (words.len() - before).min(u16::MAX as usize) as u16;
        span.lens[f as usize] = span.lens[f as usize].saturating_add(added);
        span.end = words.len() as u32;
    }

    fn span(&self) -> Span {
        let at = self.words.len() as u32;
        Span {
            start: at,
            end: at,
            lens: [0; FIELDS],
        }
    }

    /// Reads one tool's definition (the next position of the tool section).
    pub fn add(&mut self, tool: &Value) {
        let mut span = self.span();
        let (mut name, mut title, mut annotated, mut description, mut props) = ("", "", "", "", None);
        for (k, v) in tool.as_object().into_iter().flatten() {
            match k.as_str() {
                "name" => name = v.as_str().unwrap_or_default(),
                "title" => title = v.as_str().unwrap_or_default(),
                "description" => description = v.as_str().unwrap_or_default(),
                "annotations" => {
                    annotated = v
                        .as_object()
                        .and_then(|a| key(a, "title"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                }
                "inputSchema" => {
                    props = v
                        .as_object()
                        .and_then(|s| key(s, "properties"))
                        .and_then(Value::as_object)
                }
                _ => {}
            }
        }
        self.field(&mut span, Field::Name, name);
        let action = self.words[span.start as usize..]
            .iter()
            .take(8)
            .map(|&(w, _)| self.acts[w as usize])
            .find(|&a| a != 0)
            .unwrap_or(0);
        self.field(
            &mut span,
            Field::Title,
            if title.is_empty() { annotated } else { title },
        );
        let cut = lead_end(description);
        self.field(&mut span, Field::Lead, &description[..cut]);
        self.field(&mut span, Field::Body, &description[cut..]);
        for (name, p) in props.into_iter().flatten().take(MAX_PARAMS) {
            self.field(&mut span, Field::ParamName, name);
            let d = p
                .as_object()
                .and_then(|p| key(p, "description"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            self.field(&mut span, Field::ParamText, d);
        }
        self.docs.push(span);
        self.actions.push(action);
    }

    /// The index over the tools added, with each tool's groups (`items[i].groups`: the words of
    /// their name, title and description) and tags.
    pub fn finish(mut self, items: &[Primitive], groups: &[Group]) -> SearchIndex {
        // Groups' words, once per group: (name and title, description).
        let mut group_words: HashMap<&str, (Span, Span)> = HashMap::new();
        for g in groups {
            let gs = |k: &str| g.json.get(k).and_then(Value::as_str).unwrap_or_default();
            let mut a = self.span();
            self.field(&mut a, Field::Group, &g.name);
            self.field(&mut a, Field::Group, gs("title"));
            let mut b = self.span();
            self.field(&mut b, Field::GroupText, gs("description"));
            group_words.insert(&g.name, (a, b));
        }
        // Each tool's other spans: its groups' and its tags' words.
        let mut docs = std::mem::take(&mut self.docs);
        let mut extra: Vec<Vec<Span>> = vec![Vec::new(); docs.len()];
        for ((doc, item), more) in docs.iter_mut().zip(items).zip(extra.iter_mut()) {
            for g in &item.groups {
                let (a, b) = match group_words.get(g.as_str()) {
                    Some(&ab) => ab,
                    None => {
                        let mut a = self.span();
                        self.field(&mut a, Field::Group, g);
                        let ab = (a, self.span());
                        group_words.insert(g, ab);
                        ab
                    }
                };
                more.extend([a, b]);
            }
            for t in &item.tags {
                let mut s = self.span();
                self.field(&mut s, Field::Tag, t);
                more.push(s);
            }
            for s in more.iter() {
                doc.add_lens(s);
            }
        }
        self.docs = docs;
        SearchIndex::compile(self, extra, items)
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
    /// Where each word id's postings start in `postings` (one more than the words: the end).
    starts: Vec<u32>,
    /// All postings, by word id, each word's in tool order.
    postings: Vec<Posting>,
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
    fn compile(b: Builder, extra: Vec<Vec<Span>>, items: &[Primitive]) -> Self {
        let Builder {
            vocab,
            stops,
            words,
            docs,
            actions,
            ..
        } = b;
        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for d in &docs {
            for (a, l) in avg.iter_mut().zip(d.lens) {
                *a += l as f32;
            }
        }
        avg.iter_mut().for_each(|a| *a = (*a / n).max(1.0));
        // The words that occur (not the stop words), sorted; old id → new id.
        let mut seen = vec![false; vocab.len()];
        for &(t, _) in &words {
            seen[t as usize] = true;
        }
        let mut sorted: Vec<(Box<str>, u32)> = vocab
            .into_iter()
            .filter(|&(_, id)| id >= stops && seen[id as usize])
            .collect();
        sorted.sort_unstable();
        let mut remap = vec![u32::MAX; seen.len()];
        for (new, (_, old)) in sorted.iter().enumerate() {
            remap[*old as usize] = new as u32;
        }
        let mut terms: Vec<(u32, u8)> = Vec::new();
        // Each tool's distinct words with their BM25F saturation, in tool order.
        let mut all: Vec<(u32, Posting)> = Vec::new();
        let mut df = vec![0u32; sorted.len()];
        let mut name_words = Vec::with_capacity(docs.len());
        for (i, (d, more)) in docs.iter().zip(&extra).enumerate() {
            terms.clear();
            for s in std::iter::once(d).chain(more) {
                let own = &words[s.start as usize..s.end as usize];
                terms.extend(own.iter().map(|&(t, f)| (remap[t as usize], f)));
            }
            terms.sort_unstable();
            let mut names = 0usize;
            let mut k = 0;
            while k < terms.len() {
                let t = terms[k].0;
                let mut tf = [0f32; FIELDS];
                let mut flags = 0;
                while k < terms.len() && terms[k].0 == t {
                    let f = terms[k].1;
                    tf[f as usize] += 1.0;
                    if f == Field::Name as u8 {
                        flags |= IN_NAME;
                    }
                    if f == Field::Group as u8 {
                        flags |= IN_GROUP;
                    }
                    k += 1;
                }
                names += (flags & IN_NAME != 0) as usize;
                let mut w = 0.0;
                for f in 0..FIELDS {
                    if tf[f] > 0.0 {
                        let (weight, b) = WEIGHTS[f];
                        w += weight * tf[f] / (1.0 - b + b * d.lens[f] as f32 / avg[f]);
                    }
                }
                df[t as usize] += 1;
                all.push((
                    t,
                    Posting {
                        doc: i as u32 | flags,
                        score: w / (K1 + w),
                    },
                ));
            }
            name_words.push(names.min(255) as u8);
        }
        // Postings by word (each list in tool order), idf folded into each.
        let mut starts = Vec::with_capacity(df.len() + 1);
        let mut at = 0u32;
        starts.push(0);
        for &c in &df {
            at += c;
            starts.push(at);
        }
        let idf: Vec<f32> = df
            .iter()
            .map(|&c| ((n - c as f32 + 0.5) / (c as f32 + 0.5) + 1.0).ln())
            .collect();
        let mut fill = starts.clone();
        let mut flat = vec![Posting { doc: 0, score: 0.0 }; all.len()];
        for (t, mut p) in all {
            p.score *= idf[t as usize];
            flat[fill[t as usize] as usize] = p;
            fill[t as usize] += 1;
        }
        let by_name = items
            .iter()
            .enumerate()
            .map(|(i, p)| (fold_name(&p.name).into_boxed_str(), i as u32))
            .collect();
        SearchIndex {
            terms: sorted.into_iter().map(|(t, _)| t).collect(),
            starts,
            postings: flat,
            idf,
            name_words,
            actions,
            by_name,
        }
    }

    /// Number of indexed words.
    pub fn terms(&self) -> usize {
        self.terms.len()
    }

    /// Number of postings (word, tool) in all.
    pub fn postings(&self) -> usize {
        self.postings.len()
    }

    fn list(&self, t: usize) -> &[Posting] {
        &self.postings[self.starts[t] as usize..self.starts[t + 1] as usize]
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
                    for p in self.list(t) {
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
