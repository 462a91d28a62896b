//! Dumps the search index of several catalogs (every field, floats exactly) and every labelled
//! query's scores over each, so that a change to how the index is built can be checked to give
//! the same index and rankings byte for byte: run it before and after, then `cmp` the outputs:
//! `cargo run --release --features testing --example search_dump -- OUT_FILE`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;

use common::public_times;
use mcp_sieve::filter::Bits;
use mcp_sieve::model::Kind;
use mcp_sieve::{synth, Catalog};
use serde_json::Value;

fn main() {
    let out = std::env::args().nth(1).expect("usage: search_dump OUT_FILE");
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut queries: Vec<String> = Vec::new();
    for file in [
        "tests/search/queries.json",
        "tests/search/public-servers.json",
        "tests/search/saas-servers.json",
    ] {
        let v: Value = serde_json::from_str(&read(file)).expect("queries are JSON");
        for k in ["queries", "heldOut"] {
            for q in v[k].as_array().into_iter().flatten() {
                queries.extend(q["query"].as_str().map(str::to_string));
            }
        }
    }
    // Words of the synthetic catalogs too (their names, groups, tags and numbers).
    queries.extend(
        [
            "get tool 17",
            "list_tool_3",
            "delete g5 t3",
            "export synthetic benchmarks",
            "identifier of the item",
        ]
        .map(String::from),
    );
    let catalogs: Vec<(&str, String)> = vec![
        ("default", read("catalog/default.json")),
        ("public", read("catalog/public-servers.json")),
        ("saas", read("catalog/saas-servers.json")),
        ("conformance", read("catalog/conformance.json")),
        ("synth-5000", synth::catalog(42, 5000, 0).to_string()),
        ("public-5000", public_times(5000).to_string()),
    ];
    let mut s = String::new();
    for (label, text) in &catalogs {
        let catalog = Catalog::from_json_str(text).expect("catalog loads");
        let items = &catalog.section(Kind::Tool).items;
        let index = mcp_sieve::search::SearchIndex::of_tools(items, &catalog.groups);
        writeln!(s, "== {label}: {} terms, {} postings", index.terms(), index.postings()).unwrap();
        // Everything but the exact-name table (a map, printed in its own order), which the
        // queries of every tool's name below check instead.
        let dump = format!("{index:?}");
        writeln!(s, "{}", &dump[..dump.find("by_name").unwrap_or(dump.len())]).unwrap();
        let all = Bits::full(items.len());
        let names = items.iter().take(800).enumerate().map(|(i, t)| match i % 3 {
            0 => t.name.clone(),
            1 => format!("call `{}` now", t.name.to_uppercase()),
            _ => format!("{}, {}", t.name, t.name.replace('_', "-")),
        });
        for q in queries.iter().cloned().chain(names) {
            let q = &q;
            let hits = index.search(q, &all, usize::MAX);
            write!(s, "{q}:").unwrap();
            for (d, score) in hits {
                write!(s, " {d}={:08x}", score.to_bits()).unwrap();
            }
            s.push('\n');
        }
    }
    std::fs::write(&out, s).expect("OUT_FILE is writable");
}
