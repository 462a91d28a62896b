//! Filter evaluation and `tools/list` assembly at 100 … 100k tools: the compiled index and
//! pre-serialized fragments beside the naive baseline (a loop over `serde_json::Value` plus
//! re-serialization), in the same run. Run: `scripts/bench.sh` (or `cargo bench --bench filter`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcp_sieve::concern::ConcernConfig;
use mcp_sieve::filter::{index::write_list, naive};
use mcp_sieve::model::Kind;
use mcp_sieve::{synth, Catalog, Filter};
use serde_json::json;

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];

fn setup(n: usize) -> (serde_json::Value, Catalog, Filter, ConcernConfig) {
    let doc = synth::catalog(42, n, 0);
    let catalog = Catalog::load(&doc).expect("synthetic catalog loads");
    let filter = Filter::parse(&json!({"groups": ["g1", "g2", "g5"], "tags": ["t3"]}), "filter").expect("filter");
    let concerns: ConcernConfig = [("security", "high"), ("cost", "minimal")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (doc, catalog, filter, concerns)
}

fn bench(c: &mut Criterion) {
    for n in SIZES {
        let (doc, catalog, filter, concerns) = setup(n);
        let tools = catalog.section(Kind::Tool);
        let selected = tools.select(&filter, &concerns);
        let mut out = String::new();
        write_list(&mut out, "tools", &tools.items, selected.ones());
        out.push('}');
        let full: Vec<usize> = (0..n).collect();
        let mut full_out = String::new();
        write_list(&mut full_out, "tools", &tools.items, full.iter().copied());
        eprintln!(
            "n={n}: filter keeps {} tools, {} bytes (full list {} bytes)",
            selected.count(),
            out.len(),
            full_out.len()
        );

        let mut g = c.benchmark_group("filter");
        g.bench_with_input(BenchmarkId::new("index", n), &n, |b, _| {
            b.iter(|| black_box(tools.select(black_box(&filter), &concerns)))
        });
        g.bench_with_input(BenchmarkId::new("naive", n), &n, |b, _| {
            b.iter(|| black_box(naive::filter(&doc, "tools", black_box(&filter), &concerns).len()))
        });
        g.finish();

        let mut g = c.benchmark_group("assemble");
        g.throughput(Throughput::Bytes(out.len() as u64));
        g.bench_with_input(BenchmarkId::new("index", n), &n, |b, _| {
            b.iter(|| {
                let sel = tools.select(black_box(&filter), &concerns);
                let mut s = String::with_capacity(out.len());
                write_list(&mut s, "tools", &tools.items, sel.ones());
                s.push('}');
                black_box(s)
            })
        });
        g.bench_with_input(BenchmarkId::new("naive", n), &n, |b, _| {
            b.iter(|| black_box(naive::list_json(&doc, "tools", black_box(&filter), &concerns)))
        });
        g.finish();

        let mut g = c.benchmark_group("assemble_full");
        g.throughput(Throughput::Bytes(full_out.len() as u64));
        g.bench_with_input(BenchmarkId::new("index", n), &n, |b, _| {
            b.iter(|| {
                let mut s = String::with_capacity(full_out.len() + 1);
                write_list(&mut s, "tools", &tools.items, 0..n);
                s.push('}');
                black_box(s)
            })
        });
        g.bench_with_input(BenchmarkId::new("naive", n), &n, |b, _| {
            b.iter(|| {
                black_box(naive::list_json(
                    &doc,
                    "tools",
                    &Filter::default(),
                    &ConcernConfig::new(),
                ))
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
