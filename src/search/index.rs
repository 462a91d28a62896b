//! The inverted index of a catalog's tools, built once per catalog, after it loads (a gateway's
//! catalog is rebuilt, index and all, when its upstreams' lists are refreshed): every word of a
//! tool's name, title, description, parameter names and descriptions, groups and tags → the
//! tools it occurs in, each with its BM25F weight already computed. A search scores postings
//! only, keeps the tools in the caller's visible set, and parses no definition.

use std::borrow::Cow;

use serde_json::Value;

use super::fields::ToolText;
use super::fx::FxMap;
use super::memo::Memo;
use super::names::{self, Names};
use super::params::{Params, FIELDS};
use super::text::{self, Concept};
use crate::filter::Bits;
use crate::model::{Group, Primitive};

/// The fields of a tool, each with its BM25F weight and length normalization (`Params::fields`).
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

/// Most words read from one field of one tool (a description can be long).
const MAX_FIELD_WORDS: usize = 400;
/// Most parameters read from one tool.
const MAX_PARAMS: usize = 64;
/// Most words a query is read for.
pub const MAX_QUERY_WORDS: usize = 32;
/// Most indexed words one query word may reach as their prefix.
const MAX_PREFIX_TERMS: usize = 64;
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

/// Collects the tools' words from their definitions (`add` in section order), then `finish`es
/// into a [`SearchIndex`]; everything a tool brings (name, groups and tags too) is read from its
/// definition's text, which is read in order, not from the catalog's items, whose parts are
/// scattered in memory. A word is looked up as written (`Creates`) in a memo of
/// the words seen so far, so it is lowercased, stemmed and checked against the stop words once
/// per distinct spelling, not per occurrence; all tools' words go to one list, a tool keeping its
/// span of it.
#[derive(Debug)]
pub struct Builder<'a> {
    /// Word → id, in order of first sight; the stop words come first (ids below `stops`).
    vocab: FxMap<Box<str>, u32>,
    /// Word as written → its id in `vocab` (`NOTHING` when stemming leaves nothing).
    seen: Memo,
    /// Each word id's action groups (`text::actions`).
    acts: Vec<u32>,
    stops: u32,
    /// (word id, field) of every tool, tool after tool; then the groups' and tags' words. Only
    /// the first `used` count: the rest is room a field's words are written to before they are
    /// known to count.
    words: Vec<(u32, u8)>,
    used: usize,
    /// Each tool's span of `words`.
    docs: Vec<Span>,
    /// The action groups of the first word of each tool's name that is an action
    /// (`jira_create_issue`: create).
    actions: Vec<u32>,
    buf: String,
    /// A field's text with zeros after it (`text::pad`).
    pad: Vec<u8>,
    params: Params,
    /// Group name → the spans of its words (name and title, description), read once per group.
    group_words: FxMap<Cow<'a, str>, (Span, Span)>,
    /// Tag → the span of its words, read once per tag.
    tag_words: FxMap<Cow<'a, str>, Span>,
    /// Each tool's groups' and tags' spans, in one list (tool `i`'s from `ends[i - 1]`).
    extra: Vec<Span>,
    ends: Vec<u32>,
    /// The tools' names, for exact-name queries.
    names: Names,
}

/// The id of a word as written that is no word once normalized: a stop word's (which is not
/// indexed either).
const NOTHING: u32 = 0;

impl<'a> Builder<'a> {
    /// A builder for the tools of a catalog whose groups are `groups`, whose index ranks with
    /// `params`.
    pub fn new(groups: &'a [Group], params: Params) -> Self {
        let mut vocab = FxMap::default();
        for w in text::stop_words() {
            let next = vocab.len() as u32;
            vocab.entry((*w).into()).or_insert(next);
        }
        let stops = vocab.len() as u32;
        let mut b = Builder {
            vocab,
            seen: Memo::default(),
            acts: vec![0; stops as usize],
            stops,
            words: Vec::new(),
            used: 0,
            docs: Vec::new(),
            actions: Vec::new(),
            buf: String::new(),
            pad: Vec::new(),
            params,
            group_words: FxMap::default(),
            tag_words: FxMap::default(),
            extra: Vec::new(),
            ends: Vec::new(),
            names: Names::default(),
        };
        // Groups' words, once per group: (name and title, description).
        for g in groups {
            let gs = |k: &str| g.json.get(k).and_then(Value::as_str).unwrap_or_default();
            let mut a = b.span();
            b.field(&mut a, Field::Group, &g.name);
            b.field(&mut a, Field::Group, gs("title"));
            let mut d = b.span();
            b.field(&mut d, Field::GroupText, gs("description"));
            b.group_words.insert(Cow::Borrowed(g.name.as_str()), (a, d));
        }
        b
    }

    /// Appends the words of `text`, as field `f`, to `span` (which ends where `words` does).
    fn field(&mut self, span: &mut Span, f: Field, text: &str) {
        let Builder {
            vocab,
            seen,
            acts,
            stops,
            buf,
            pad,
            words,
            used,
            ..
        } = self;
        let before = *used;
        // Room for as many words as can count; each is written, and kept only if it counts
        // (no branch on it).
        let room = before + text.len().min(MAX_FIELD_WORDS) + 1;
        if words.len() < room {
            words.resize(room, (0, 0));
        }
        let mut kept = 0;
        // As `text::scan` with `MAX_FIELD_WORDS`, a word normalized only at its first sight.
        let mut one = |id: u32| {
            words[before + kept] = (id, f as u8);
            kept += (id >= *stops) as usize;
            kept < MAX_FIELD_WORDS
        };
        if text.is_ascii() {
            // Copied once with zeros after it, so that every chunk and word is read whole.
            text::pad(text.as_bytes(), pad);
            text::pieces_padded(pad, text.len(), |s, e| {
                one(seen.get_or_padded(pad, s, e, || learn(vocab, acts, buf, &text[s..e])))
            });
        } else {
            text::pieces(text, |s, e| {
                one(seen.get_or(text.as_bytes(), s, e, || learn(vocab, acts, buf, &text[s..e])))
            });
        }
        *used += kept;
        span.lens[f as usize] = span.lens[f as usize].saturating_add(kept as u16);
        span.end = *used as u32;
    }

    fn span(&self) -> Span {
        let at = self.used as u32;
        Span {
            start: at,
            end: at,
            lens: [0; FIELDS],
        }
    }

    /// Reads one tool's definition (the next position of the tool section).
    pub fn add(&mut self, tool: &ToolText<'a>) {
        let mut span = self.span();
        let ToolText {
            name,
            title,
            annotated,
            description,
            params,
            groups,
            tags,
        } = tool;
        self.names.push(name);
        self.field(&mut span, Field::Name, name);
        let action = self.words[span.start as usize..span.end as usize]
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
        for (name, d) in params.iter().take(MAX_PARAMS) {
            self.field(&mut span, Field::ParamName, name);
            self.field(&mut span, Field::ParamText, d);
        }
        // Its groups' and tags' words, each group's and tag's read once.
        let from = self.extra.len();
        for g in groups {
            let (a, b) = match self.group_words.get(&**g) {
                Some(&ab) => ab,
                None => {
                    let mut a = self.span();
                    self.field(&mut a, Field::Group, g);
                    let ab = (a, self.span());
                    self.group_words.insert(g.clone(), ab);
                    ab
                }
            };
            self.extra.extend([a, b]);
        }
        for t in tags {
            let s = match self.tag_words.get(&**t) {
                Some(&s) => s,
                None => {
                    let mut s = self.span();
                    self.field(&mut s, Field::Tag, t);
                    self.tag_words.insert(t.clone(), s);
                    s
                }
            };
            self.extra.push(s);
        }
        for s in &self.extra[from..] {
            span.add_lens(s);
        }
        self.ends.push(self.extra.len() as u32);
        self.docs.push(span);
        self.actions.push(action);
    }

    /// The index over the tools added.
    pub fn finish(self) -> SearchIndex {
        SearchIndex::compile(self)
    }
}

/// The id of word `raw` (as written, seen for the first time) once lowercased and stemmed,
/// added to `vocab` (and its action groups to `acts`) when new; `NOTHING` when nothing is left.
/// Out of line: the per-word loop that calls it once per spelling stays small.
#[inline(never)]
#[cold]
fn learn(vocab: &mut FxMap<Box<str>, u32>, acts: &mut Vec<u32>, buf: &mut String, raw: &str) -> u32 {
    text::normalize(raw, buf);
    if buf.is_empty() {
        NOTHING
    } else if let Some(&id) = vocab.get(buf.as_str()) {
        id
    } else {
        let id = vocab.len() as u32;
        vocab.insert(buf.as_str().into(), id);
        acts.push(text::actions(buf));
        id
    }
}

/// Where the first sentence of a description ends (a `. ` or a line break), in bytes.
fn lead_end(d: &str) -> usize {
    // One pass to the first line break or `. `, whichever comes first.
    let b = d.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => return i,
            b'.' if b.get(i + 1) == Some(&b' ') => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
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
    by_name: Names,
    params: Params,
}

impl SearchIndex {
    fn compile(b: Builder) -> Self {
        let Builder {
            vocab,
            stops,
            mut words,
            used,
            docs,
            actions,
            params,
            extra,
            ends,
            names: mut by_name,
            ..
        } = b;
        by_name.index();
        words.truncate(used);
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
        // Each tool's distinct words (old ids) with their counts per field, gathered through
        // `slot` (where a word is in `terms`, valid while `mark` says this tool).
        let mut mark = vec![u32::MAX; seen.len()];
        let mut slot = vec![0u32; seen.len()];
        // (word, its count in each field, the fields it is in as bits).
        let mut terms: Vec<(u32, [u32; FIELDS], u32)> = Vec::new();
        // Each tool's distinct words with their BM25F saturation, in tool order (at most one per
        // word of its spans).
        let pairs = docs.iter().chain(&extra).map(|s| (s.end - s.start) as usize).sum();
        let mut all: Vec<(u32, Posting)> = Vec::with_capacity(pairs);
        let mut df = vec![0u32; sorted.len()];
        let mut name_words = Vec::with_capacity(docs.len());
        let mut norm = [0f32; FIELDS];
        let mut from = 0;
        for (i, (d, &to)) in docs.iter().zip(&ends).enumerate() {
            terms.clear();
            for s in std::iter::once(d).chain(&extra[from..to as usize]) {
                for &(t, f) in &words[s.start as usize..s.end as usize] {
                    let t = t as usize;
                    if mark[t] != i as u32 {
                        mark[t] = i as u32;
                        slot[t] = terms.len() as u32;
                        terms.push((t as u32, [0; FIELDS], 0));
                    }
                    let e = &mut terms[slot[t] as usize];
                    e.1[f as usize] += 1;
                    e.2 |= 1 << f;
                }
            }
            from = to as usize;
            // Each field's length normalization for this tool, once (not per word).
            for f in 0..FIELDS {
                let b = params.fields[f].1;
                norm[f] = 1.0 - b + b * d.lens[f] as f32 / avg[f];
            }
            let mut names = 0usize;
            for &(t, tf, in_fields) in &terms {
                let t = remap[t as usize];
                let mut flags = 0;
                if in_fields & 1 << Field::Name as u32 != 0 {
                    flags |= IN_NAME;
                }
                if in_fields & 1 << Field::Group as u32 != 0 {
                    flags |= IN_GROUP;
                }
                names += (flags & IN_NAME != 0) as usize;
                // Summed over the fields it is in, in field order (as over all of them).
                let mut w = 0.0;
                let mut left = in_fields;
                while left != 0 {
                    let f = left.trailing_zeros() as usize;
                    left &= left - 1;
                    w += params.fields[f].0 * tf[f] as f32 / norm[f];
                }
                df[t as usize] += 1;
                all.push((
                    t,
                    Posting {
                        doc: i as u32 | flags,
                        score: w / (params.k1 + w),
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
        SearchIndex {
            terms: sorted.into_iter().map(|(t, _)| t).collect(),
            starts,
            postings: flat,
            idf,
            name_words,
            actions,
            by_name,
            params,
        }
    }

    /// The index of a catalog's tools, read from their definitions as listed (each tool's
    /// `fragment`), with their groups and tags.
    pub fn of_tools(items: &[Primitive], groups: &[Group]) -> Self {
        Self::of_tools_with(items, groups, Params::default())
    }

    /// [`SearchIndex::of_tools`] ranking with `params` (for a tuner).
    pub fn of_tools_with(items: &[Primitive], groups: &[Group], params: Params) -> Self {
        let mut b = Builder::new(groups, params);
        let mut tool = ToolText::default();
        for item in items {
            tool.read_into(item.fragment());
            b.add(&tool);
        }
        b.finish()
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
        let p = &self.params;
        let concepts = text::concepts_with(query, MAX_QUERY_WORDS, p);
        let mut total = vec![0f32; n];
        // How many of the query's concepts each tool's name matches (`Params::query_cover`).
        let mut in_name = vec![0u16; n];
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
                    .then(|| self.prefixed(form).map(|t| (t, weight * p.prefix)))
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
                in_name[d] += (named[d] > 0.0) as u16;
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
                    p.action_match
                } else {
                    p.action_mismatch
                };
                let group = if grouped[d] { p.group_named } else { 1.0 };
                let asked_in_name = in_name[d] as f32 / concepts.len().max(1) as f32;
                let extra = p.name_cover * cover.min(1.0) + p.query_cover * asked_in_name;
                (d, (s + extra * (s / (s + 1.0))) * action * group + bonus)
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
        let mut buf = String::new();
        query
            .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '`' | '"' | '\'' | '(' | ')'))
            .filter(|w| w.len() > 2)
            .take(MAX_QUERY_WORDS)
            .filter_map(|w| {
                buf.clear();
                names::fold_into(w, &mut buf);
                self.by_name.get(&buf)
            })
            .collect()
    }
}
