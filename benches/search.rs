//! Search mode at 5,000 and 50,000 tools: `find_tools` through the protocol (a search-mode view,
//! JSON-RPC in, the answer out: what the native server runs per call, without the socket), the
//! index's own search, the index's build against the catalog's load, and the first `find_tools`
//! (which builds the index where no thread did before). Two catalogs per
//! size: the synthetic one (`synth::catalog`, where every description has the same words, so a
//! query's words reach every tool: the worst case for postings) and the public tools of
//! `catalog/public-servers.json` repeated with numbered names (real text). Besides criterion's
//! estimates it prints p50 and p99 of single calls. Run: `cargo bench --features testing --bench search`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{header_fn, public_times, Harness};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcp_sieve::filter::Bits;
use mcp_sieve::http::endpoint_view;
use mcp_sieve::search::SearchIndex;
use mcp_sieve::{synth, Catalog};
use serde_json::json;

const SIZES: [usize; 2] = [5_000, 50_000];
const QUERIES: [&str; 3] = [
    "create a branch",
    "delete the synthetic item",
    "show me the logs of the failed CI job on the main branch so I can see why the build broke",
];

fn percentiles(mut f: impl FnMut(), runs: usize) -> (Duration, Duration) {
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    (t[runs / 2], t[runs * 99 / 100])
}

fn bench(c: &mut Criterion) {
    for n in SIZES {
        for (label, doc) in [("synth", synth::catalog(42, n, 0)), ("public", public_times(n))] {
            let text = doc.to_string();
            let start = Instant::now();
            let catalog = Catalog::from_json_str(&text).expect("catalog loads");
            let load = start.elapsed();
            let start = Instant::now();
            let index = SearchIndex::of_tools(&catalog.section(mcp_sieve::model::Kind::Tool).items, &catalog.groups);
            let build = start.elapsed();
            eprintln!(
                "{label} n={n}: load {:.1} ms (no index), index build {:.1} ms ({:.1}% of load; off the load's path); {} words, {} postings",
                load.as_secs_f64() * 1e3,
                build.as_secs_f64() * 1e3,
                build.as_secs_f64() / load.as_secs_f64() * 100.0,
                index.terms(),
                index.postings()
            );
            let view = endpoint_view(&catalog, "/mcp", "mode=search", &header_fn(vec![], &[]), None).expect("view");
            let all = Bits::full(n);
            let mut h = Harness::with_catalog(catalog);
            h.view = view;
            h.init();
            // The catalog's own index is built by its first search (as in the Worker).
            let start = Instant::now();
            black_box(h.rpc(
                "tools/call",
                json!({"name": "find_tools", "arguments": {"query": QUERIES[0], "limit": 5}}),
            ));
            eprintln!(
                "{label} n={n}: first find_tools (builds the index) {:.1} ms",
                start.elapsed().as_secs_f64() * 1e3
            );
            let mut g = c.benchmark_group(format!("find_tools/{label}"));
            g.sample_size(20)
                .measurement_time(Duration::from_secs(3))
                .warm_up_time(Duration::from_millis(500));
            for (qi, q) in QUERIES.iter().enumerate() {
                let args = json!({"name": "find_tools", "arguments": {"query": q, "limit": 5}});
                let (p50, p99) = percentiles(
                    || {
                        black_box(h.rpc("tools/call", args.clone()));
                    },
                    50,
                );
                let (i50, _) = percentiles(|| drop(black_box(index.search(q, &all, 5))), 50);
                eprintln!(
                    "{label} n={n} query {qi} ({} words): find_tools p50 {:.3} ms p99 {:.3} ms; index search alone p50 {:.3} ms",
                    q.split_whitespace().count(),
                    p50.as_secs_f64() * 1e3,
                    p99.as_secs_f64() * 1e3,
                    i50.as_secs_f64() * 1e3
                );
                g.bench_with_input(BenchmarkId::new(format!("q{qi}"), n), &n, |b, _| {
                    b.iter(|| black_box(h.rpc("tools/call", args.clone())))
                });
            }
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
