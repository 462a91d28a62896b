//! Meaning beside words (issue 40; ARCHITECTURE.md "Search mode"): `find_tools` ranked by
//! the lexical index fused with the cosine similarity of sentence embeddings. Pure functions over
//! vectors — cosine, top-k, the fusion — and the catalog's slot the vectors arrive in. The model
//! itself runs in a shell (the native server: `native/src/search/encoder.rs`), which fills the slot
//! off the path of requests; until it is filled, and whenever no model is configured, search is
//! the lexical index alone, as before.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::filter::Bits;

/// The fused score's weight on the cosine when the document gives none: chosen on the tuning
/// queries only (`examples/search_hybrid.rs`, docs/src/search.md "Meaning").
pub const DEFAULT_WEIGHT: f32 = 0.7;
/// How many of each ranking's best tools the fusion considers (the lexical index's and the
/// cosine's); a tool outside both cannot be in the answer.
pub const POOL: usize = 50;

/// The document's `search` object: which sentence encoder (`model`: a folder with
/// `model.safetensors`, `config.json` and `tokenizer.json`, or a Hugging Face model id such as
/// `sentence-transformers/all-MiniLM-L6-v2` that the native shell fetches, at `revision`; `false`
/// for none, not even the native shell's default in search mode), where the tools' vectors are
/// cached (`cache`; the shell's default when absent), and the cosine's weight in the fused score
/// (`weight`, 0 to 1). Where no model runs in the process (the Worker), `embeddings` is an
/// OpenAI-compatible `/v1/embeddings` URL that encodes the query with the same model the tools'
/// vectors were made with (`mcp-sieve index`), sent `headers` (`${NAME}` secrets, such as an API
/// key), waited for at most `deadlineMs`; or `ai`, a Workers AI model's name, run through the
/// Worker's `AI` binding. Absent: search is lexical only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The model's folder or Hugging Face model id.
    pub model: Option<String>,
    /// `"model": false`: no sentence encoder at all (search stays lexical).
    pub no_model: bool,
    /// The model's revision on the Hugging Face Hub (a branch, tag or commit; `main` when absent).
    pub revision: Option<String>,
    /// The vector cache's folder.
    pub cache: Option<String>,
    /// The cosine's weight in the fused score.
    pub weight: Option<f32>,
    /// An OpenAI-compatible embeddings URL for the query (the Worker).
    pub embeddings: Option<String>,
    /// How long a query's encoding is waited for, in milliseconds.
    pub deadline_ms: Option<u64>,
    /// Headers sent with each embeddings request, their `${NAME}` not yet resolved.
    pub headers: Vec<(String, String)>,
    /// A Workers AI embedding model's name (`@cf/…`), run by the Worker's `AI` binding.
    pub ai: Option<String>,
}

impl Settings {
    /// Whether the document asks for meaning in search at all (a model, an embeddings URL or a
    /// Workers AI model).
    pub fn wanted(&self) -> bool {
        self.model.is_some() || self.embeddings.is_some() || self.ai.is_some()
    }

    /// The model's name sent in each embeddings request: the Workers AI model (`ai`), else
    /// `model` (where no model runs in the process, the name the endpoint knows).
    pub fn endpoint_model(&self) -> Option<&str> {
        self.ai.as_deref().or(self.model.as_deref())
    }

    /// The embeddings request's headers with each `${NAME}` replaced by `secret(NAME)`; a missing
    /// secret is an error naming it.
    pub fn resolved_headers(&self, secret: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>> {
        self.headers
            .iter()
            .map(|(k, v)| {
                let place = format!("search.headers[\"{k}\"]");
                Ok((k.clone(), crate::secret_refs::substitute(v, &place, secret)?))
            })
            .collect()
    }
}

/// The Workers AI embedding model a Worker encodes its queries with when it has an `[ai]`
/// binding and the document names no encoder (issue 61 item 5); `mcp-sieve index --ai` encodes
/// the tools with it too. 384 numbers a vector, as all-MiniLM-L6-v2's, but another space.
pub const WORKERS_AI_MODEL: &str = "@cf/baai/bge-small-en-v1.5";

impl Settings {
    /// The Workers AI model a Worker encodes queries with: `search.ai`; else, when the Worker has
    /// an `AI` binding (`bound`) and the document names no other encoder (no `model`, no
    /// `embeddings`, not `"model": false`), [`WORKERS_AI_MODEL`]; else none.
    pub fn workers_ai(&self, bound: bool) -> Option<&str> {
        if let Some(m) = &self.ai {
            return Some(m);
        }
        (bound && self.model.is_none() && self.embeddings.is_none() && !self.no_model).then_some(WORKERS_AI_MODEL)
    }
}

/// Whether `name` is a Workers AI model's (`@cf/…`, `@hf/…`).
pub fn is_workers_ai(name: &str) -> bool {
    name.starts_with("@cf/") || name.starts_with("@hf/")
}

/// Tools' vectors and queries' from two models: never fused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the tools' vectors were made by {} but the queries are encoded by {query}: two models' vectors are \
     never mixed (write the tools' with `mcp-sieve index{}` and load them into KV)",
    made_by.as_deref().unwrap_or("a model they do not name (no search/model)"),
    if query.starts_with("Workers AI") { " --ai" } else { "" }
)]
pub struct MixedModels {
    /// The tools' model as recorded (KV's `search/model`), if it is.
    pub made_by: Option<String>,
    /// What encodes the queries.
    pub query: String,
}

/// Checks that tools' vectors made by `made_by` (what `mcp-sieve index` recorded; `None`: not
/// recorded) go with queries encoded by Workers AI's model `ai`, or else by an embeddings
/// endpoint asked for `endpoint_model`. A Workers AI model is told by its name, so the check is
/// made whenever one is on either side; an endpoint's other models cannot be told apart from
/// here (their vectors' length is still checked when fused).
pub fn same_model(
    made_by: Option<&str>,
    ai: Option<&str>,
    endpoint_model: Option<&str>,
) -> std::result::Result<(), MixedModels> {
    let query = ai.or(endpoint_model);
    if !(ai.is_some() || made_by.is_some_and(is_workers_ai)) || made_by == query {
        return Ok(());
    }
    Err(MixedModels {
        made_by: made_by.map(str::to_string),
        query: match (ai, endpoint_model) {
            (Some(m), _) => format!("Workers AI's {m}"),
            (None, Some(m)) => format!("the embeddings endpoint's {m}"),
            (None, None) => "the embeddings endpoint (no search.model or search.ai names its model)".into(),
        },
    })
}

/// The fields of the document's `search`.
const FIELDS: [&str; 8] = [
    "model",
    "cache",
    "weight",
    "embeddings",
    "deadlineMs",
    "headers",
    "ai",
    "revision",
];

/// Longest `search.deadlineMs`.
pub const MAX_DEADLINE_MS: u64 = 10_000;

impl Settings {
    /// Reads the document's `search` field.
    pub fn parse(v: Option<&Value>) -> Result<Settings> {
        let o = match v {
            None | Some(Value::Null) => return Ok(Settings::default()),
            Some(Value::Object(o)) => o,
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "search must be an object like {{\"model\": \"<folder>\"}}, got {v}"
                )))
            }
        };
        if let Some(k) = o.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "search.{k} is not a field of search; expected one of {}",
                FIELDS.join(", ")
            )));
        }
        let text = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(v) => Err(Error::Catalog(format!(
                "search.{k} must be a folder's path (a non-empty string), got {v}"
            ))),
        };
        let weight = match o.get("weight") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64().filter(|w| (0.0..=1.0).contains(w)) {
                Some(w) => Some(w as f32),
                None => {
                    return Err(Error::Catalog(format!(
                        "search.weight must be a number from 0 to 1 (the cosine's share of the score), got {v}"
                    )))
                }
            },
        };
        let embeddings = match o.get("embeddings") {
            None | Some(Value::Null) => None,
            Some(Value::String(u)) if u.starts_with("http://") || u.starts_with("https://") => Some(u.clone()),
            Some(v) => {
                return Err(Error::Catalog(format!(
                "search.embeddings must be an http:// or https:// URL of an OpenAI-compatible /v1/embeddings, got {v}"
            )))
            }
        };
        let deadline_ms = match o.get("deadlineMs") {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_u64().filter(|n| (1..=MAX_DEADLINE_MS).contains(n)) {
                Some(n) => Some(n),
                None => {
                    return Err(Error::Catalog(format!(
                        "search.deadlineMs must be an integer from 1 to {MAX_DEADLINE_MS}, got {v}"
                    )))
                }
            },
        };
        let headers = crate::secret_refs::headers(o.get("headers"), "search.headers")?;
        let ai = match o.get("ai") {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) if !m.is_empty() => Some(m.clone()),
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "search.ai must be a Workers AI embedding model's name, such as \"@cf/baai/bge-small-en-v1.5\", got {v}"
                )))
            }
        };
        let (model, no_model) = match o.get("model") {
            Some(Value::Bool(false)) => (None, true),
            None | Some(Value::Null) => (None, false),
            Some(Value::String(s)) if !s.is_empty() => (Some(s.clone()), false),
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "search.model must be a Hugging Face model id (\"sentence-transformers/all-MiniLM-L6-v2\"), a folder's path, or false (no sentence encoder), got {v}"
                )))
            }
        };
        let revision = match o.get("revision") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) if !r.is_empty() && !r.contains("..") && model.is_some() => Some(r.clone()),
            Some(v) => {
                return Err(Error::Catalog(format!(
                    "search.revision must be a branch, tag or commit of search.model's Hugging Face repository (a non-empty string, with search.model set), got {v}"
                )))
            }
        };
        Ok(Settings {
            model,
            no_model,
            revision,
            cache: text("cache")?,
            weight,
            embeddings,
            deadline_ms,
            headers,
            ai,
        })
    }
}

/// Why an embeddings answer or a catalog's vectors could not be taken (the message names the
/// field of the answer and what was expected).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VectorsError {
    /// The answer's `data` is missing, not an array, or not of the inputs' count.
    #[error("the answer has no data array of {0} embeddings")]
    NoData(usize),
    /// `data[k].embedding` is not an array of numbers.
    #[error("data[{0}].embedding is not an array of numbers")]
    NotNumbers(usize),
    /// `data[k].index` names no input.
    #[error("data[{k}].index {index} is out of range")]
    OutOfRange {
        /// The item's place in `data`.
        k: usize,
        /// Its `index`.
        index: usize,
    },
    /// No item of `data` is the embedding of input `k`.
    #[error("no embedding for input {0}")]
    Missing(usize),
    /// Empty vectors, or vectors of different lengths.
    #[error("the embeddings are empty or not all of one length")]
    Uneven,
    /// The numbers handed to [`Slot::fill`] are not whole vectors of `dim`.
    #[error("{len} numbers are not whole vectors of {dim}")]
    NotWhole {
        /// How many numbers.
        len: usize,
        /// The vectors' length.
        dim: usize,
    },
    /// [`Slot::fill`] was called twice.
    #[error("the vectors were already filled")]
    AlreadyFilled,
}

/// Encodes a query to a unit vector (`Err`: why it could not, and the search is lexical then;
/// the reason goes in the answer's `_meta`).
pub type QueryEncoder = dyn Fn(&str) -> std::result::Result<Vec<f32>, String> + Send + Sync;

/// The tools' vectors, ready: one unit row of `dim` numbers per tool, in the catalog's order (a
/// tool the encoder could not read has a row of zeros), and the query encoder that goes with them.
pub struct Meaning {
    /// Numbers per vector.
    pub dim: usize,
    /// `dim` numbers per tool, tool after tool.
    pub vectors: Vec<f32>,
    /// The query's encoder.
    pub encode: Arc<QueryEncoder>,
}

impl std::fmt::Debug for Meaning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meaning")
            .field("dim", &self.dim)
            .field("tools", &(self.vectors.len() / self.dim.max(1)))
            .finish()
    }
}

/// A catalog's place for its tools' vectors: the settings it was loaded with, how far the shell
/// is (`done` of `total`), and the vectors once all are there. Shared by the catalog's clones; a
/// refreshed catalog has a new, empty one.
#[derive(Debug, Default)]
pub struct Slot {
    /// The document's `search` settings.
    pub settings: Settings,
    ready: OnceLock<Meaning>,
    done: AtomicUsize,
    total: AtomicUsize,
}

impl Slot {
    /// An empty slot for `settings`.
    pub fn new(settings: Settings) -> Slot {
        Slot {
            settings,
            ..Slot::default()
        }
    }

    /// The vectors, once ready.
    pub fn meaning(&self) -> Option<&Meaning> {
        self.ready.get()
    }

    /// The shell's progress: `done` of `total` tools have a vector.
    pub fn progress(&self, done: usize, total: usize) {
        self.total.store(total, Ordering::Relaxed);
        self.done.store(done, Ordering::Relaxed);
    }

    /// (tools with a vector, tools) so far.
    pub fn status(&self) -> (usize, usize) {
        (self.done.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed))
    }

    /// Hands over the finished vectors (`Err`: a mismatch, or they were already there).
    pub fn fill(&self, meaning: Meaning) -> std::result::Result<(), VectorsError> {
        if meaning.dim == 0 || meaning.vectors.len() % meaning.dim != 0 {
            return Err(VectorsError::NotWhole {
                len: meaning.vectors.len(),
                dim: meaning.dim,
            });
        }
        let n = meaning.vectors.len() / meaning.dim;
        self.ready.set(meaning).map_err(|_| VectorsError::AlreadyFilled)?;
        self.progress(n, n);
        Ok(())
    }
}

/// The text a tool is encoded from, given the shell's text of its name, title and description:
/// the names of the tool's groups (its servers, such as `github` or `stripe`) before it, so a
/// query that names the server ("… on Supabase", "the Slack workspace") is near the tools of
/// that server. Measured on the tuning queries only (docs/src/search.md "Meaning"): the
/// encoder alone 0.667 → 0.685 top-1, fused 0.759 → 0.787.
pub fn with_groups(tool: &Value, text: String) -> String {
    let groups: Vec<&str> = tool["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|g| !g.is_empty())
        .collect();
    if groups.is_empty() {
        return text;
    }
    format!("{} {text}", groups.join(" "))
}

/// The dot product of two vectors of equal length (the cosine of unit vectors), in eight
/// independent sums so the compiler keeps them in SIMD registers.
#[cfg(feature = "search-index")]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// The dot product of two vectors of equal length, in one sum: the npm package's (its wasm has no
/// SIMD and its catalogs are a browser's; the eight sums were 0.5 KB more of its code).
#[cfg(not(feature = "search-index"))]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

/// `v` scaled to length 1 (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

/// A JSON array of numbers as a unit vector (`None`: not an array of numbers).
pub fn unit_vector(v: &Value) -> Option<Vec<f32>> {
    let mut out = v
        .as_array()?
        .iter()
        .map(|x| x.as_f64().map(|f| f as f32))
        .collect::<Option<Vec<f32>>>()?;
    normalize(&mut out);
    Some(out)
}

/// The `n` unit vectors of an OpenAI-shaped embeddings answer (`{"data": [{"index", "embedding"}]}`,
/// what an embeddings endpoint sends back), in input order (by `index`), all of one length.
pub fn embeddings(answer: &Value, n: usize) -> std::result::Result<Vec<Vec<f32>>, VectorsError> {
    let data = answer
        .get("data")
        .and_then(Value::as_array)
        .filter(|d| d.len() == n)
        .ok_or(VectorsError::NoData(n))?;
    let mut rows: Vec<Option<Vec<f32>>> = vec![None; n];
    for (k, item) in data.iter().enumerate() {
        let index = item.get("index").and_then(Value::as_u64).map_or(k, |i| i as usize);
        let row = item
            .get("embedding")
            .and_then(unit_vector)
            .ok_or(VectorsError::NotNumbers(k))?;
        let slot = rows.get_mut(index).ok_or(VectorsError::OutOfRange { k, index })?;
        *slot = Some(row);
    }
    let rows: Vec<Vec<f32>> = rows
        .into_iter()
        .enumerate()
        .map(|(k, r)| r.ok_or(VectorsError::Missing(k)))
        .collect::<std::result::Result<_, _>>()?;
    let dim = rows.first().map_or(0, Vec::len);
    if dim == 0 || rows.iter().any(|r| r.len() != dim) {
        return Err(VectorsError::Uneven);
    }
    Ok(rows)
}

/// The cosine of `query` with every visible tool's row of `vectors` (unit rows and query).
pub fn cosines(vectors: &[f32], dim: usize, query: &[f32], visible: &Bits) -> Vec<(usize, f32)> {
    let mut out = Vec::new();
    if dim == 0 || query.len() != dim {
        return out;
    }
    for i in visible.ones() {
        if let Some(row) = vectors.get(i * dim..(i + 1) * dim) {
            out.push((i, dot(row, query)));
        }
    }
    out
}

/// The `k` best of `scored`, best first (ties: the lower index first), without sorting the rest
/// (in the npm package, whose catalogs are a browser's: by the crate's one sort, which adds no
/// code there, where the selection and the unstable sort would add about 2.5 KB gzipped).
pub fn top_k(mut scored: Vec<(usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    #[cfg(not(feature = "search-index"))]
    {
        let ranked = crate::sort::order_by(scored.len(), &mut |a, b| order(&scored[a], &scored[b]));
        let mut best = Vec::with_capacity(k.min(ranked.len()));
        for &i in ranked.iter().take(k) {
            best.push(scored[i]);
        }
        scored = best;
    }
    #[cfg(feature = "search-index")]
    {
        if k == 0 {
            return Vec::new();
        }
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, order);
            scored.truncate(k);
        }
        scored.sort_unstable_by(order);
    }
    scored
}

/// How the two rankings are combined (the choice is measured, docs/src/search.md "Meaning").
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// `w × cosine + (1 − w) × lexical / the query's best lexical score`.
    Weighted(f32),
    /// Reciprocal rank fusion: Σ 1 / (k + rank) over the two rankings.
    Rrf(f32),
}

/// The best `limit` tools of the fused ranking, best first, from the lexical index's ranking
/// (`lexical`, best first, scores ≥ 0), the cosine's (`by_cosine`, best first, e.g. `top_k` of
/// `cosines` at `POOL`) and the cosine of any tool (`cosine_of`, for lexical candidates the
/// cosine's top does not hold). The pool is the two lists.
pub fn fuse(
    lexical: &[(usize, f32)],
    by_cosine: &[(usize, f32)],
    cosine_of: impl Fn(usize) -> f32,
    fusion: Fusion,
    limit: usize,
) -> Vec<(usize, f32)> {
    let lex_top = lexical.first().map_or(0.0, |&(_, s)| s);
    let score = |d: usize, lr: Option<usize>, cr: Option<usize>| match fusion {
        Fusion::Weighted(w) => {
            let lex = lr.map_or(0.0, |r| lexical[r].1);
            let lex = if lex_top > 0.0 { lex / lex_top } else { 0.0 };
            let cos = cr.map_or_else(|| cosine_of(d), |r| by_cosine[r].1);
            w * cos + (1.0 - w) * lex
        }
        Fusion::Rrf(k) => {
            let r = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (k + r as f32 + 1.0));
            r(lr) + r(cr)
        }
    };
    // The pool, each tool once: the lexical ranking's, then the cosine's others.
    let mut scored: Vec<(usize, f32)> = Vec::with_capacity(lexical.len() + by_cosine.len());
    for (r, &(d, _)) in lexical.iter().enumerate() {
        let cr = by_cosine.iter().position(|c| c.0 == d);
        scored.push((d, score(d, Some(r), cr)));
    }
    for (r, &(d, _)) in by_cosine.iter().enumerate() {
        if !lexical.iter().any(|l| l.0 == d) {
            scored.push((d, score(d, None, Some(r))));
        }
    }
    top_k(scored, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(n: usize, on: &[usize]) -> Bits {
        let mut b = Bits::empty(n);
        for &i in on {
            b.set(i);
        }
        b
    }

    #[test]
    fn with_groups_puts_the_group_names_first() {
        let t = serde_json::json!({"name": "users_search", "groups": ["slack", "chat"]});
        assert_eq!(with_groups(&t, "users search".into()), "slack chat users search");
        let none = serde_json::json!({"name": "x", "groups": []});
        assert_eq!(with_groups(&none, "x".into()), "x");
        assert_eq!(with_groups(&serde_json::json!({"name": "x"}), "x".into()), "x");
    }

    #[test]
    fn dot_and_normalize() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let expect: f32 = a.iter().map(|x| x * x).sum();
        assert_eq!(dot(&a, &a), expect);
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut z = vec![0.0; 3];
        normalize(&mut z);
        assert_eq!(z, vec![0.0; 3]);
    }

    #[test]
    fn cosines_only_visible_rows() {
        // Three tools of dimension 2: along x, along y, diagonal.
        let h = std::f32::consts::FRAC_1_SQRT_2;
        let vectors = [1.0, 0.0, 0.0, 1.0, h, h];
        let got = cosines(&vectors, 2, &[1.0, 0.0], &bits(3, &[0, 2]));
        assert_eq!(got, vec![(0, 1.0), (2, h)]);
        assert!(
            cosines(&vectors, 2, &[1.0, 0.0, 0.0], &bits(3, &[0])).is_empty(),
            "a query of another dimension"
        );
    }

    #[test]
    fn top_k_best_first_ties_by_index() {
        let s = vec![(0, 0.1), (1, 0.9), (2, 0.5), (3, 0.9), (4, 0.2)];
        assert_eq!(top_k(s.clone(), 3), vec![(1, 0.9), (3, 0.9), (2, 0.5)]);
        assert_eq!(top_k(s.clone(), 10).len(), 5);
        assert!(top_k(s, 0).is_empty());
    }

    #[test]
    fn weighted_fusion_lets_meaning_win_where_words_do_not_match() {
        // Lexically tool 0 is first, tool 1 unmatched; by meaning tool 1 is far closer.
        let lexical = vec![(0, 4.0), (2, 2.0)];
        let cosine = [0.1, 0.8, 0.3];
        let by_cos = top_k(cosine.iter().copied().enumerate().collect(), POOL);
        let of = |d: usize| cosine[d];
        let ids = |v: Vec<(usize, f32)>| v.into_iter().map(|x| x.0).collect::<Vec<_>>();
        // 0.7 × 0.8 = 0.56 for tool 1; 0.7 × 0.1 + 0.3 = 0.37 for tool 0; 0.21 + 0.15 for tool 2.
        assert_eq!(
            ids(fuse(&lexical, &by_cos, of, Fusion::Weighted(0.7), 3)),
            vec![1, 0, 2]
        );
        // Words only: the lexical order, the unmatched tool last.
        assert_eq!(
            ids(fuse(&lexical, &by_cos, of, Fusion::Weighted(0.0), 3)),
            vec![0, 2, 1]
        );
        // Reciprocal rank fusion (k = 60): tool 0 is 1st and 3rd (1/61 + 1/63), tool 2 2nd and
        // 2nd (2/62, just lower), tool 1 only the cosine's 1st (1/61).
        assert_eq!(ids(fuse(&lexical, &by_cos, of, Fusion::Rrf(60.0), 3)), vec![0, 2, 1]);
        // A lexical candidate outside the cosine's list gets its cosine from `cosine_of`.
        let short = top_k(cosine.iter().copied().enumerate().collect(), 1);
        let fused = fuse(&lexical, &short, of, Fusion::Weighted(1.0), 3);
        assert_eq!(fused, vec![(1, 0.8), (2, 0.3), (0, 0.1)]);
    }

    #[test]
    fn fusion_without_lexical_matches_is_the_cosine_order() {
        let cosine = top_k(vec![(5, 0.2), (6, 0.9), (7, 0.5)], POOL);
        let fused = fuse(&[], &cosine, |_| 0.0, Fusion::Weighted(0.7), 2);
        assert_eq!(fused.iter().map(|x| x.0).collect::<Vec<_>>(), vec![6, 7]);
    }

    #[test]
    fn settings_parse_and_errors_name_the_field() {
        assert_eq!(Settings::parse(None).unwrap(), Settings::default());
        let s = Settings::parse(Some(&serde_json::json!({"model": "m", "weight": 0.5}))).unwrap();
        assert_eq!((s.model.as_deref(), s.weight), (Some("m"), Some(0.5)));
        let e = Settings::parse(Some(&serde_json::json!({"modle": "m"})))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("search.modle") && e.contains("expected one of model, cache"),
            "{e}"
        );
        let e = Settings::parse(Some(&serde_json::json!({"weight": 2})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("search.weight must be a number from 0 to 1"), "{e}");
        let s = Settings::parse(Some(
            &serde_json::json!({"embeddings": "http://127.0.0.1:1/v1/embeddings", "deadlineMs": 300}),
        ))
        .unwrap();
        assert!(s.wanted() && s.deadline_ms == Some(300));
        let e = Settings::parse(Some(&serde_json::json!({"embeddings": "ftp://x"})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("search.embeddings must be an http"), "{e}");
        let e = Settings::parse(Some(&serde_json::json!({"deadlineMs": 0})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("search.deadlineMs must be an integer"), "{e}");
        let e = Settings::parse(Some(&serde_json::json!("m"))).unwrap_err().to_string();
        assert!(e.contains("search must be an object"), "{e}");
        let s = Settings::parse(Some(&serde_json::json!({"model": false}))).unwrap();
        assert!(s.no_model && s.model.is_none() && !s.wanted());
        let s = Settings::parse(Some(
            &serde_json::json!({"model": "sentence-transformers/all-MiniLM-L6-v2", "revision": "main"}),
        ))
        .unwrap();
        assert_eq!(s.revision.as_deref(), Some("main"));
        let e = Settings::parse(Some(&serde_json::json!({"model": true})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("search.model must be a Hugging Face model id"), "{e}");
        let e = Settings::parse(Some(&serde_json::json!({"revision": "v1"})))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("search.revision must be") && e.contains("with search.model set"),
            "{e}"
        );
    }

    #[test]
    fn embeddings_headers_resolve_secrets_and_ai_names_a_model() {
        let s = Settings::parse(Some(&serde_json::json!({
            "embeddings": "https://api.example/v1/embeddings",
            "headers": {"Authorization": "Bearer ${KEY}", "x-team": "a"},
            "ai": "@cf/baai/bge-small-en-v1.5"
        })))
        .unwrap();
        assert_eq!(s.ai.as_deref(), Some("@cf/baai/bge-small-en-v1.5"));
        let got = s.resolved_headers(&|n| (n == "KEY").then(|| "k1".to_string())).unwrap();
        assert_eq!(
            got,
            vec![
                ("Authorization".to_string(), "Bearer k1".to_string()),
                ("x-team".to_string(), "a".to_string())
            ]
        );
        let e = s.resolved_headers(&|_| None).unwrap_err().to_string();
        assert!(
            e.contains("search.headers[\"Authorization\"] uses the secret ${KEY}, which is not set"),
            "{e}"
        );
        assert!(Settings::parse(Some(&serde_json::json!({"ai": "@cf/x"})))
            .unwrap()
            .wanted());
        for (doc, want) in [
            (
                serde_json::json!({"headers": {"a": 1}}),
                "search.headers[\"a\"] must be a string",
            ),
            (
                serde_json::json!({"headers": {"a": "${bad name}"}}),
                "search.headers[\"a\"]: a secret reference",
            ),
            (serde_json::json!({"headers": "x"}), "search.headers must be an object"),
            (
                serde_json::json!({"ai": ""}),
                "search.ai must be a Workers AI embedding model's name",
            ),
        ] {
            let e = Settings::parse(Some(&doc)).unwrap_err().to_string();
            assert!(e.contains(want), "{doc}: {e}");
        }
    }

    #[test]
    fn a_worker_with_an_ai_binding_and_no_model_named_uses_bge_small() {
        let parse = |v: serde_json::Value| Settings::parse(Some(&v)).unwrap();
        let none = Settings::default();
        assert_eq!(none.workers_ai(true), Some(WORKERS_AI_MODEL));
        assert_eq!(none.workers_ai(false), None);
        assert_eq!(
            parse(serde_json::json!({"weight": 0.5})).workers_ai(true),
            Some(WORKERS_AI_MODEL)
        );
        let ai = parse(serde_json::json!({"ai": "@cf/baai/bge-base-en-v1.5"}));
        assert_eq!(ai.workers_ai(true), Some("@cf/baai/bge-base-en-v1.5"));
        // Named: the binding is then only used when search.ai says so (the shell reports a
        // missing binding).
        assert_eq!(ai.workers_ai(false), Some("@cf/baai/bge-base-en-v1.5"));
        for other in [
            serde_json::json!({"model": "sentence-transformers/all-MiniLM-L6-v2"}),
            serde_json::json!({"model": false}),
            serde_json::json!({"embeddings": "https://e.example/v1/embeddings"}),
        ] {
            assert_eq!(parse(other.clone()).workers_ai(true), None, "{other}");
        }
    }

    #[test]
    fn vectors_of_two_models_are_never_mixed() {
        let bge = Some(WORKERS_AI_MODEL);
        assert_eq!(same_model(bge, bge, None), Ok(()));
        // Through the REST API's OpenAI-compatible URL with search.ai: the same model.
        assert_eq!(same_model(bge, None, bge), Ok(()));
        let e = same_model(Some("bert384-00ab-12cd-90000"), bge, None).unwrap_err();
        assert_eq!(e.made_by.as_deref(), Some("bert384-00ab-12cd-90000"));
        let text = e.to_string();
        assert!(
            text.contains("made by bert384-00ab-12cd-90000")
                && text.contains("Workers AI's @cf/baai/bge-small-en-v1.5")
                && text.contains("`mcp-sieve index --ai`"),
            "{text}"
        );
        let text = same_model(None, bge, None).unwrap_err().to_string();
        assert!(text.contains("no search/model"), "{text}");
        // Workers AI's vectors with an endpoint's queries.
        let text = same_model(bge, None, None).unwrap_err().to_string();
        assert!(text.contains("the embeddings endpoint (no search.model"), "{text}");
        assert!(same_model(bge, Some("@cf/baai/bge-base-en-v1.5"), None).is_err());
        // Neither side is Workers AI: only the vectors' length can tell (checked when fused).
        assert_eq!(same_model(Some("bert384-x"), None, None), Ok(()));
        assert_eq!(same_model(None, None, Some("text-embedding-3-small")), Ok(()));
    }

    #[test]
    fn a_slot_fills_once() {
        let slot = Slot::new(Settings::default());
        assert!(slot.meaning().is_none());
        slot.progress(3, 10);
        assert_eq!(slot.status(), (3, 10));
        let meaning = || Meaning {
            dim: 2,
            vectors: vec![1.0, 0.0, 0.0, 1.0],
            encode: Arc::new(|_: &str| Ok(vec![1.0, 0.0])),
        };
        slot.fill(meaning()).unwrap();
        assert_eq!(slot.status(), (2, 2));
        assert!(slot.fill(meaning()).is_err());
        let bad = Slot::default().fill(Meaning { dim: 3, ..meaning() }).unwrap_err();
        assert_eq!(bad, VectorsError::NotWhole { len: 4, dim: 3 });
        assert_eq!(bad.to_string(), "4 numbers are not whole vectors of 3");
    }
}
