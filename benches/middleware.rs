//! Context middleware throughput: `pii_redaction` over about 1 MB of conversation text
//! (`mcp_sieve::middleware::sample`, one PII value every ~250 bytes) at both aggressiveness
//! levels, detection alone, and restoration. Run: `cargo bench --bench middleware`.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mcp_sieve::middleware::detect::{detect, Options};
use mcp_sieve::middleware::pii_redaction::Redactor;
use mcp_sieve::middleware::pii_restoration::restore;
use mcp_sieve::middleware::sample;

fn bench(c: &mut Criterion) {
    let text = sample::text(1 << 20);
    let names = vec!["Jane Smith".to_string(), "John Doe".to_string()];
    let mut g = c.benchmark_group("middleware");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(20);
    for (label, strict) in [("redact_standard_1MB", false), ("redact_strict_1MB", true)] {
        let opts = Options {
            strict,
            names: &names,
            types: &[],
        };
        g.bench_function(label, |b| {
            b.iter(|| {
                let mut r = Redactor::new(None, std::iter::once(text.as_str()));
                black_box(r.redact(black_box(&text), &opts))
            })
        });
    }
    let opts = Options {
        strict: false,
        names: &names,
        types: &[],
    };
    g.bench_function("detect_standard_1MB", |b| {
        b.iter(|| black_box(detect(black_box(&text), &opts)))
    });
    let mut r = Redactor::new(None, std::iter::once(text.as_str()));
    let redacted = r.redact(&text, &opts).unwrap_or_default();
    let map: HashMap<&str, &str> = r
        .redactions
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
        .collect();
    g.bench_function("restore_1MB", |b| {
        b.iter(|| black_box(restore(black_box(&redacted), &map, &mut Vec::new())))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
