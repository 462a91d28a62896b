//! Search with the host's sentence vectors (issue 40 item 4): `Sieve.setToolVectors` takes the
//! tools' vectors from the host's embedding model, and `Sieve.search` ranks the visible tools for a
//! query by `tool_filter`'s BM25 fused with the cosine of the query's vector — the core's fusion
//! (`crate::search::hybrid`), with the native server's and the Worker's weight and pool. Without a
//! query vector the ranking is `tool_filter`'s alone.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::convert::{from_js, js_error, small};
use super::sieve::Sieve;
use crate::middleware::tool_filter;
use crate::model::Kind;
use crate::search::hybrid::{self, Fusion, DEFAULT_WEIGHT, POOL};
use crate::Error;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** `sieve.search` options: how many tools (1 to 100, default 5), a filter narrowing them, and the query's sentence vector (same model and length as `setToolVectors`'). */
export interface SearchOptions { k?: number; filter?: Filter; queryVector?: Float32Array | number[] }
/** `sieve.search`'s answer: `hybrid` with a query vector, else `lexical`; the tools best first, `score` the fused score (or BM25 / the best BM25). */
export interface SearchResult { ranking: "hybrid" | "lexical"; tools: { name: string; index: number; score: number }[] }
"#;

/// A `-32602` error with `message`.
fn bad(message: String) -> JsValue {
    js_error(&Error::params(message))
}

/// An error unless every number of `v` is finite, naming the first that is not as `what[i]`.
fn finite(what: &str, v: &[f32]) -> Result<(), JsValue> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(bad(format!("{what}[{i}] is not a finite number"))),
        None => Ok(()),
    }
}

#[wasm_bindgen]
impl Sieve {
    /// Hands over the tools' sentence vectors for `search`: `dim` numbers per tool, tool after
    /// tool, in the catalog's order, or in the order of `names` (tools not named get none and rank
    /// by their words). They must come from the model that will encode the queries. Throws an
    /// `Error` with `code` -32602 naming the field for a wrong dimension, count or name.
    ///
    /// @example
    /// ```js
    /// sieve.setToolVectors(new Float32Array(await embed(texts)), 384, names);
    /// ```
    #[wasm_bindgen(js_name = setToolVectors)]
    pub fn set_tool_vectors(
        &mut self,
        vectors: Vec<f32>,
        dim: usize,
        #[wasm_bindgen(unchecked_optional_param_type = "string[]")] names: Option<JsValue>,
    ) -> Result<(), JsValue> {
        let section = self.catalog().section(Kind::Tool);
        let tools = section.items.len();
        let count = vectors.len();
        if dim == 0 || count % dim != 0 {
            return Err(bad(format!(
                "vectors holds {count} numbers: not whole vectors of dim {dim}"
            )));
        }
        let rows = count / dim;
        finite("vectors", &vectors)?;
        let names = from_js(names, "names")?;
        let listed = names.as_array();
        match listed {
            None if !names.is_null() => return Err(bad("names must be an array of tool names".into())),
            None if rows != tools => {
                return Err(bad(format!(
                    "vectors holds {rows} vectors of dim {dim}, the catalog {tools} tools: give one per tool in its order, or names"
                )))
            }
            Some(l) if l.len() != rows => {
                return Err(bad(format!("names has {} names for {rows} vectors of dim {dim}", l.len())))
            }
            _ => {}
        }
        // Each row to its tool's place (a tool not named keeps zeros), scaled to unit length; a
        // size past the wasm's memory is an error, not a trap (names may be few, the tools many).
        let mut out = Vec::new();
        if tools.checked_mul(dim).is_none_or(|n| out.try_reserve_exact(n).is_err()) {
            return Err(bad(format!(
                "{tools} tools of dim {dim} are more numbers than this page's memory holds"
            )));
        }
        out.resize(tools * dim, 0.0);
        for (r, row) in vectors.chunks_exact(dim).enumerate() {
            let t = match listed {
                None => r,
                Some(l) => section
                    .find(l[r].as_str().unwrap_or_default())
                    .ok_or_else(|| bad(format!("names[{r}] is {}: not a tool of this catalog", l[r])))?,
            };
            let place = &mut out[t * dim..(t + 1) * dim];
            // Not `copy_from_slice`: its length panic brings `Debug` formatting.
            for (o, x) in place.iter_mut().zip(row) {
                *o = *x;
            }
            hybrid::normalize(place);
        }
        self.vectors = out;
        self.dim = dim;
        Ok(())
    }

    /// The `options.k` (default 5) tools best matching `query` among those `options.filter`
    /// leaves visible (JS policy filters included), best first. With `options.queryVector` (the
    /// query's sentence vector, from the model of `setToolVectors`) the ranking fuses the words'
    /// BM25 with the cosine as the mcp-sieve server does (`0.7 × cosine + 0.3 × BM25 / the best
    /// BM25`); without, it is the words' ranking alone, as the `tool_filter` middleware's.
    ///
    /// @example
    /// ```js
    /// const { ranking, tools } = sieve.search('give this buyer their money back', { k: 3, queryVector });
    /// tools[0].name; // 'create_refund'
    /// ```
    #[wasm_bindgen(unchecked_return_type = "SearchResult")]
    pub fn search(
        &self,
        query: &str,
        #[wasm_bindgen(unchecked_optional_param_type = "SearchOptions")] options: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let get = |key: &str| {
            options
                .as_ref()
                .and_then(|o| js_sys::Reflect::get(o, &key.into()).ok())
                .filter(|v| !v.is_undefined() && !v.is_null())
        };
        let k = match get("k").map(|k| k.as_f64()) {
            None => 5,
            Some(Some(k)) if k.fract() == 0.0 && (1.0..=100.0).contains(&k) => k as usize,
            Some(_) => return Err(bad("options.k must be an integer from 1 to 100".into())),
        };
        let visible = self
            .select(Kind::Tool, get("filter"), "options.filter", "options.filter.concerns")?
            .bits;
        let section = self.catalog().section(Kind::Tool);
        let candidates: Vec<usize> = visible.ones().collect();
        // The words' ranking, each score a share of the best (as the fusion weighs it).
        let lexical = tool_filter::rank(&section.items, &self.catalog().groups, &candidates, query);
        let top = lexical.first().map_or(1.0, |r| r.1);
        let lexical: Vec<(usize, f32)> = lexical.iter().map(|&(i, s)| (i, (s / top) as f32)).collect();
        let (ranking, ranked) = match get("queryVector") {
            None => ("lexical", lexical),
            Some(v) => {
                // Number by number (a `Float32Array` or an array of numbers): `Float32Array::to_vec`
                // asserts the length it copies, which brings `Debug` formatting into the wasm.
                let mut q: Vec<f32> = Vec::new();
                for x in js_sys::Array::from(&v).iter() {
                    q.push(x.as_f64().unwrap_or(f64::NAN) as f32);
                }
                let dim = self.dim;
                if dim == 0 {
                    return Err(bad(
                        "options.queryVector is given, but no tool vectors: call setToolVectors first".into(),
                    ));
                }
                if q.len() != dim {
                    return Err(bad(format!(
                        "options.queryVector has {} numbers, the tools' vectors {dim}: not the same model",
                        q.len()
                    )));
                }
                finite("options.queryVector", &q)?;
                hybrid::normalize(&mut q);
                let by_cosine = hybrid::top_k(hybrid::cosines(&self.vectors, dim, &q, &visible), POOL.max(k));
                let cosine_of = |d: usize| {
                    self.vectors
                        .get(d * dim..(d + 1) * dim)
                        .map_or(0.0, |v| hybrid::dot(v, &q))
                };
                let pool = &lexical[..lexical.len().min(POOL)];
                (
                    "hybrid",
                    hybrid::fuse(pool, &by_cosine, cosine_of, Fusion::Weighted(DEFAULT_WEIGHT), k),
                )
            }
        };
        // Scores cross as numbers (no float formatting in the wasm).
        let tools = ranked
            .iter()
            .take(k)
            .map(|&(i, s)| Ranked {
                name: &section.items[i].name,
                index: i,
                score: (f64::from(s) * 1000.0).round() / 1000.0,
            })
            .collect();
        small(&SearchOut { ranking, tools })
    }
}

/// `search`'s result.
#[derive(Serialize)]
struct SearchOut<'a> {
    ranking: &'a str,
    tools: Vec<Ranked<'a>>,
}

/// A tool of `search`'s result, best first.
#[derive(Serialize)]
struct Ranked<'a> {
    name: &'a str,
    index: usize,
    score: f64,
}
