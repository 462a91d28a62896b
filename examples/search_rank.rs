//! Answers labelled queries through search mode's `find_tools` (the whole protocol path, as a
//! client sees it), for `scripts/search-quality.sh`: reads a catalog document and a queries file
//! (`tests/search/*.json`), writes one JSON line per query with the names `find_tools` answered,
//! best first:
//! `cargo run --features testing --example search_rank -- CATALOG QUERIES [LIMIT]`.

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
    let doc = std::fs::read_to_string(catalog).expect("the catalog file is readable");
    let catalog = Catalog::from_json_str(&doc).expect("the catalog loads");
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
        if direct {
            let all = mcp_sieve::filter::Bits::full(tools.len());
            let hits = index.get().expect("built above").search(&q, &all, limit as usize);
            let names: Vec<&str> = hits.iter().map(|(d, _)| tools[*d].as_str()).collect();
            let scores: Vec<String> = hits.iter().map(|(d, s)| format!("{} {s:.2}", tools[*d])).collect();
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
