//! Answers labelled queries through search mode's `find_tools` (the whole protocol path, as a
//! client sees it), for `scripts/search-quality.sh`: reads a catalog document and a queries file
//! (`tests/search/*.json`), writes one JSON line per query with the names `find_tools` answered,
//! best first:
//! `cargo run --features testing --example search_rank -- CATALOG QUERIES [LIMIT]`.
//! With `SEARCH_VECTORS=FILE` (written by `native/examples/search_encode.rs`: the tools' and the
//! queries' sentence vectors) the catalog's vector slot is filled from it, so `find_tools` fuses
//! words and meaning (issue 40) with the cosine's weight `SEARCH_WEIGHT` (default: the
//! built-in one); `SEARCH_FUSION=rrf:K` ranks by reciprocal rank fusion instead (directly, with
//! the core's `hybrid::fuse`; the server does not offer it).

#[path = "../tests/common/mod.rs"]
mod common;

use common::{header_fn, Harness};
use mcp_sieve::http::endpoint_view;
use mcp_sieve::Catalog;
use serde_json::{json, Value};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(catalog), Some(queries)) = (args.get(1), args.get(2)) else {
        panic!("usage: search_rank CATALOG QUERIES [LIMIT]");
    };
    let limit: u64 = args.get(3).map_or(10, |a| a.parse().expect("LIMIT is a whole number"));
    let mut doc = std::fs::read_to_string(catalog).expect("the catalog file is readable");
    let weight: Option<f64> = std::env::var("SEARCH_WEIGHT")
        .ok()
        .map(|w| w.parse().expect("SEARCH_WEIGHT is a number"));
    if let Some(w) = weight {
        let mut v: Value = serde_json::from_str(&doc).expect("the catalog is JSON");
        v["search"] = json!({ "weight": w });
        doc = v.to_string();
    }
    let catalog = Catalog::from_json_str(&doc).expect("the catalog loads");
    let vectors = std::env::var_os("SEARCH_VECTORS").map(|f| meaning(&catalog, &f));
    let rrf: Option<f32> = std::env::var("SEARCH_FUSION").ok().and_then(|f| {
        f.strip_prefix("rrf:")
            .map(|k| k.parse().expect("SEARCH_FUSION=rrf:K, K a number"))
    });
    // Built now, shared with the harness's copy of the catalog.
    catalog.search_index();
    let index = catalog.search.clone();
    let tools: Vec<String> = catalog
        .section(mcp_sieve::model::Kind::Tool)
        .items
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let direct = std::env::var_os("SEARCH_RANK_DIRECT").is_some();
    let view = endpoint_view(&catalog, "/mcp", "mode=search", &header_fn(vec![], &[]), None).expect("a search view");
    let mut h = Harness::with_catalog(catalog);
    h.view = view;
    h.init();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(queries).expect("the queries file is readable"))
        .expect("the queries file is JSON");
    for q in all_queries(&file) {
        if let (Some(k), Some(queries)) = (rrf, &vectors) {
            use mcp_sieve::search::hybrid::{self, Fusion, POOL};
            let all = mcp_sieve::filter::Bits::full(tools.len());
            let m = h.server.catalog().meaning.meaning().expect("filled above");
            let qv = &queries[&q];
            let lexical = index.get().expect("built above").search(&q, &all, POOL);
            let by_cos = hybrid::top_k(hybrid::cosines(&m.vectors, m.dim, qv, &all), POOL);
            let of = |d: usize| hybrid::dot(&m.vectors[d * m.dim..(d + 1) * m.dim], qv);
            let hits = hybrid::fuse(&lexical, &by_cos, of, Fusion::Rrf(k), limit as usize);
            let names: Vec<&str> = hits.iter().map(|(d, _)| tools[*d].as_str()).collect();
            println!("{}", json!({"query": q, "ranked": names}));
            continue;
        }
        if direct {
            let all = mcp_sieve::filter::Bits::full(tools.len());
            let hits = index.get().expect("built above").search(&q, &all, limit as usize);
            let names: Vec<&str> = hits.iter().map(|(d, _)| tools[*d].as_str()).collect();
            let scores: Vec<String> = hits.iter().map(|(d, s)| format!("{} {s}", tools[*d])).collect();
            println!("{}", json!({"query": q, "ranked": names, "scores": scores}));
            continue;
        }
        let r = h.rpc_ok(
            "tools/call",
            json!({"name": "find_tools", "arguments": {"query": q, "limit": limit}}),
        );
        let names: Vec<&str> = r["structuredContent"]["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        println!("{}", json!({"query": q, "ranked": names}));
    }
}

/// Every query string of a queries file (`queries`, and `heldOut` in the earlier format).
fn all_queries(file: &Value) -> Vec<String> {
    ["queries", "heldOut"]
        .iter()
        .filter_map(|k| file[k].as_array())
        .flatten()
        .filter_map(|q| q["query"].as_str().map(str::to_string))
        .collect()
}

/// Fills `catalog`'s vector slot from a `search_encode` file: the tools' vectors by name, and an
/// encoder that looks the query up (every labelled query is in the file). Returns the queries'.
fn meaning(catalog: &Catalog, file: &std::ffi::OsStr) -> std::collections::HashMap<String, Vec<f32>> {
    use std::sync::Arc;
    let text = std::fs::read_to_string(file).expect("the vectors file is readable");
    let v: Value = serde_json::from_str(&text).expect("the vectors file is JSON");
    let dim = v["dim"].as_u64().expect("dim") as usize;
    let floats = |x: &Value| -> Vec<f32> {
        x.as_array()
            .expect("a vector")
            .iter()
            .map(|f| f.as_f64().unwrap_or(0.0) as f32)
            .collect()
    };
    let mut rows = Vec::new();
    for t in &catalog.section(mcp_sieve::model::Kind::Tool).items {
        rows.extend(v["tools"].get(&t.name).map(floats).unwrap_or_else(|| vec![0.0; dim]));
    }
    let queries: std::collections::HashMap<String, Vec<f32>> = v["queries"]
        .as_object()
        .expect("queries")
        .iter()
        .map(|(q, x)| (q.clone(), floats(x)))
        .collect();
    let lookup = queries.clone();
    catalog
        .meaning
        .fill(mcp_sieve::search::hybrid::Meaning {
            dim,
            vectors: rows,
            encode: Arc::new(move |q: &str| lookup.get(q).cloned().ok_or_else(|| format!("no vector for {q}"))),
        })
        .expect("filled once");
    queries
}
