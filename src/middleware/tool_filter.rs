//! `tool_filter`: ranks the tools the caller may see (its view filter, concerns and policy)
//! against the conversation text with BM25F over name, title, description, groups (name, title,
//! description) and tags, and suggests the top k.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::middleware::fold;
use crate::middleware::schema::parse_static;
use crate::middleware::{content, Inputs};
use crate::model::{Group, Primitive};

const K1: f64 = 1.2;
const B: f64 = 0.75;

const STOP: [&str; 58] = [
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from", "is", "are", "be", "it",
    "its", "this", "that", "my", "me", "i", "we", "our", "you", "your", "can", "could", "would", "please", "do",
    "does", "what", "which", "how", "all", "some", "any", "as", "into", "out", "up", "about", "there", "have", "has",
    "need", "want", "get", "let", "so", "if", "them", "their", "was", "were",
];

/// Query words that mean a catalog word (small, general vocabulary).
const SYNONYMS: &[(&str, &str)] = &[
    ("mail", "email"),
    ("inbox", "email"),
    ("e-mail", "email"),
    ("meeting", "event"),
    ("appointment", "event"),
    ("schedule", "calendar"),
    ("pr", "pull request"),
    ("repo", "repository"),
    ("build", "pipeline"),
    ("sql", "query database"),
    ("db", "database"),
    ("webpage", "page"),
    ("website", "page"),
    ("site", "page"),
    ("bill", "invoice"),
    ("charge", "payment"),
    ("money", "payment"),
    ("refund", "refund payment"),
    ("folder", "directory"),
    ("rename", "move"),
    ("uuid", "uuid"),
    ("account", "user"),
    ("log", "logs"),
    ("bug", "issue"),
    ("go", "navigate"),
    ("visit", "navigate"),
    ("url", "navigate"),
    ("find", "search"),
    ("look", "search"),
    ("remember", "memory"),
    ("recent", "history"),
    ("done", "status transition"),
    ("hour", "worklog"),
    ("logged", "authenticated"),
    ("who", "user profile"),
    ("field", "form"),
];

/// Lowercase word stems of `text`.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem(&fold::lower(w)))
        .filter(|w| !STOP.contains(&w.as_str()))
        .collect()
}

/// A light English stemmer: plurals and -ing/-ed (`meetings` → `meet`).
pub fn stem(w: &str) -> String {
    strip(&strip(w))
}

fn strip(w: &str) -> String {
    // Every suffix is ASCII: cutting its bytes off the end leaves whole characters.
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..n - 3]);
    }
    if n > 5 && w.ends_with("ing") {
        return undouble(&w[..n - 3]);
    }
    if n > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        return undouble(&w[..n - 2]);
    }
    if n > 4 && (w.ends_with("sses") || w.ends_with("xes") || w.ends_with("ches") || w.ends_with("shes")) {
        return w[..n - 2].to_string();
    }
    if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return w[..n - 1].to_string();
    }
    w.to_string()
}

/// `logg` → `log`, `runn` → `run` (what -ed and -ing leave after a doubled consonant). Only an
/// ASCII byte is undoubled: equal last bytes may be the inside of one multi-byte character
/// (`丸` is E4 B8 B8), and an ASCII byte is always a whole character.
fn undouble(w: &str) -> String {
    match w.as_bytes() {
        [.., x, y] if x == y && x.is_ascii() && !b"aeioulsz".contains(x) => w[..w.len() - 1].to_string(),
        _ => w.to_string(),
    }
}

/// Most distinct query words one ranking weighs on the servers (the most frequent, then the
/// first): each costs a pass over every candidate's words, so a long conversation is not a long
/// ranking.
pub const MAX_TERMS: usize = 32;

/// The query's words (with their synonyms' words) and how often each occurs: on the servers at
/// most [`MAX_TERMS`], the most frequent first, then in order of appearance.
#[cfg(feature = "large-catalogs")]
fn query_terms(text: &str) -> Vec<(String, f64)> {
    // The synonyms' stems once per query, not once per word.
    let stems: Vec<String> = SYNONYMS.iter().map(|(from, _)| stem(from)).collect();
    let mut q: HashMap<String, f64> = HashMap::new();
    let mut words: Vec<String> = Vec::new();
    for t in tokens(text) {
        let mut these = stems
            .iter()
            .position(|s| *s == t)
            .map(|k| tokens(SYNONYMS[k].1))
            .unwrap_or_default();
        these.push(t);
        for w in these {
            let n = q.entry(w.clone()).or_insert(0.0);
            if *n == 0.0 {
                words.push(w);
            }
            *n += 1.0;
        }
    }
    let count = |w: &String| q.get(w).copied().unwrap_or(0.0);
    let order = crate::sort::order_by(words.len(), &mut |a, b| count(&words[b]).total_cmp(&count(&words[a])));
    let mut terms: Vec<(String, f64)> = Vec::with_capacity(order.len().min(MAX_TERMS));
    for i in order.into_iter().take(MAX_TERMS) {
        let w = std::mem::take(&mut words[i]);
        let n = count(&w);
        terms.push((w, n));
    }
    terms
}

/// The query's words with their synonyms' words (the package weighs all of them: its only
/// caller is its own page).
#[cfg(not(feature = "large-catalogs"))]
fn query_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for t in tokens(text) {
        if let Some((_, to)) = SYNONYMS.iter().find(|(from, _)| stem(from) == t) {
            out.extend(tokens(to));
        }
        out.push(t);
    }
    out
}

/// Weighted term frequencies of one tool's fields.
fn document(tool: &Primitive, groups: &[Group]) -> (HashMap<String, f64>, f64) {
    let mut tf: HashMap<String, f64> = HashMap::new();
    let mut len = 0.0;
    let mut add = |text: &str, w: f64| {
        for t in tokens(text) {
            *tf.entry(t).or_insert(0.0) += w;
            len += w;
        }
    };
    let json = tool.json();
    let s = |k: &str| json.get(k).and_then(Value::as_str).unwrap_or_default();
    add(&tool.name, 3.0);
    add(s("title"), 2.0);
    add(s("description"), 1.0);
    for g in &tool.groups {
        add(g, 1.5);
        if let Some(group) = groups.iter().find(|x| &x.name == g) {
            let gs = |k: &str| {
                group
                    .json
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            add(&gs("title"), 1.0);
            add(&gs("description"), 0.5);
        }
    }
    for t in &tool.tags {
        add(t, 1.0);
    }
    (tf, len)
}

/// A query word's weighted frequency in a document: its own, and half that of the words it is a
/// prefix of (for words of four letters or more).
fn frequency(tf: &HashMap<String, f64>, t: &str) -> f64 {
    let exact = tf.get(t).copied().unwrap_or(0.0);
    if t.len() < 4 {
        return exact;
    }
    exact
        + 0.5
            * tf.iter()
                .filter(|(w, _)| w.len() > t.len() && w.starts_with(t))
                .map(|(_, f)| f)
                .sum::<f64>()
}

/// BM25F scores of `candidates` (positions in the tool section) for `query`, best first,
/// only positive scores.
pub fn rank(items: &[Primitive], groups: &[Group], candidates: &[usize], query: &str) -> Vec<(usize, f64)> {
    let docs: Vec<(usize, HashMap<String, f64>, f64)> = candidates
        .iter()
        .map(|&i| {
            let (tf, len) = document(&items[i], groups);
            (i, tf, len)
        })
        .collect();
    if docs.is_empty() {
        return Vec::new();
    }
    let n = docs.len() as f64;
    let avg = docs.iter().map(|d| d.2).sum::<f64>() / n;
    #[cfg(feature = "large-catalogs")]
    let q = query_terms(query);
    #[cfg(not(feature = "large-catalogs"))]
    let mut q: HashMap<String, f64> = HashMap::new();
    #[cfg(not(feature = "large-catalogs"))]
    for t in query_tokens(query) {
        *q.entry(t).or_insert(0.0) += 1.0;
    }
    let mut scores: Vec<(usize, f64)> = docs.iter().map(|d| (d.0, 0.0)).collect();
    for (t, qf) in &q {
        // A query word also matches, at half weight, the longer words it begins
        // (`review` → `reviewers`, `work` → `worklog`).
        let freq: Vec<f64> = docs.iter().map(|d| frequency(&d.1, t)).collect();
        let df = freq.iter().filter(|f| **f > 0.0).count() as f64;
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for ((score, f), d) in scores.iter_mut().zip(&freq).zip(&docs) {
            if *f > 0.0 {
                // Repeated query words count, but sub-linearly.
                score.1 += idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * d.2 / avg)) * (1.0 + qf.ln());
            }
        }
    }
    scores.retain(|(_, s)| *s > 0.0);
    crate::sort::sort_by(&mut scores, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scores
}

/// The wire name.
pub const NAME: &str = "tool_filter";
/// What it does, as `middleware/list` shows it.
pub const DESCRIPTION: &str = "Rank this server's tools against the conversation (BM25 over name, title, description, groups and tags); metadata.relevantTools and suggestedToolSet";

/// `inputSchema` of `tool_filter`.
pub fn schema() -> Value {
    parse_static(
        r#"{"type": "object", "properties": {
            "k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 5, "description": "size of suggestedToolSet"},
            "availableTools": {"type": "array", "maxItems": 10000, "items": {"type": "string", "maxLength": 256}, "description": "rank only these tools (default: all the caller may see)"},
            "filter": {"type": "object", "description": "a tools/list filter (groups, tags, excludeTags, namePatterns, concerns, expr) narrowing the candidates"}
        }, "additionalProperties": false}"#,
    )
}

/// Runs `tool_filter` (arguments already validated).
pub fn invoke(args: &Map<String, Value>, context: Vec<Value>, inputs: &mut Inputs) -> Result<Value> {
    let filter = Filter::parse(args.get("filter").unwrap_or(&Value::Null), "params.arguments.filter")?;
    let k = args.get("k").and_then(Value::as_f64).unwrap_or(5.0) as usize;
    let visible = (inputs.visible_tools)(&filter)?;
    let items = inputs.tools;
    let mut candidates: Vec<usize> = visible.ones().collect();
    if let Some(names) = args.get("availableTools").and_then(Value::as_array) {
        // On the servers a set: up to 10,000 names against every candidate (the package, whose
        // caller is its own page, keeps the smaller list scan).
        #[cfg(feature = "large-catalogs")]
        let names: std::collections::HashSet<&str> = names.iter().filter_map(Value::as_str).collect();
        #[cfg(not(feature = "large-catalogs"))]
        let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
        candidates.retain(|&i| names.contains(&items[i].name.as_str()));
    }
    let mut text = String::new();
    content::for_each_text(&context, &mut |t| {
        text.push_str(t);
        text.push('\n');
    });
    let ranked = rank(items, inputs.groups, &candidates, &text);
    let top = ranked.first().map_or(1.0, |r| r.1);
    let relevant: Vec<Value> = ranked
        .iter()
        .take(k.max(1))
        .map(|(i, s)| json!({"name": items[*i].name, "score": (s / top * 1000.0).round() / 1000.0, "bm25": (s * 1000.0).round() / 1000.0}))
        .collect();
    let suggested: Vec<&str> = ranked.iter().take(k).map(|(i, _)| items[*i].name.as_str()).collect();
    if candidates.is_empty() && !items.is_empty() && args.contains_key("availableTools") {
        return Err(Error::params(
            "params.arguments.availableTools names no tool this client can see",
        ));
    }
    Ok(json!({
        "content": context,
        "metadata": {"relevantTools": relevant, "suggestedToolSet": suggested, "candidates": candidates.len()}
    }))
}
