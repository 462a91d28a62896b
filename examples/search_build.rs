//! Times the search index's build against the catalog's load: the best wall time of several
//! runs, and the mean CPU time per run of this process (a shared machine's other work counts in
//! neither), on the synthetic catalog and on the public catalog's tools repeated (names
//! numbered). The load builds no index; the build (`SearchIndex::of_tools`, from the tools'
//! definitions as listed) is what the native server runs on another thread after the load, and
//! what the Worker's first search runs:
//! `cargo run --release --features testing --example search_build -- [TOOLS] [RUNS]`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::public_times;
use mcp_sieve::search::SearchIndex;
use mcp_sieve::{synth, Catalog};

/// This process's CPU time so far (user + system, from /proc/self/stat; clock ticks of 10 ms),
/// so other processes on a shared machine do not count.
fn cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// (best wall time of one run, mean CPU time of one run) over `runs` runs.
fn best(runs: usize, mut f: impl FnMut()) -> (Duration, Option<Duration>) {
    let c0 = cpu();
    let wall = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .min()
        .unwrap_or_default();
    let cpu = cpu().zip(c0).map(|(b, a)| (b - a) / runs as u32);
    (wall, cpu)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(5_000, |a| a.parse().expect("TOOLS is a number"));
    let runs: usize = args.get(2).map_or(5, |a| a.parse().expect("RUNS is a number"));
    let only_build = std::env::var_os("ONLY_BUILD").is_some();
    for (label, doc) in [("synth", synth::catalog(42, n, 0)), ("public", public_times(n))] {
        let text = doc.to_string();
        let catalog = Catalog::from_json_str(&text).expect("catalog loads");
        let items = &catalog.section(mcp_sieve::model::Kind::Tool).items;
        let build = best(runs, || {
            drop(std::hint::black_box(SearchIndex::of_tools(items, &catalog.groups)))
        });
        if only_build {
            eprintln!("{label} n={n}: index build {:.1} ms", ms(build.0));
            continue;
        }
        let load = best(runs, || {
            drop(std::hint::black_box(Catalog::from_json_str(&text).expect("loads")))
        });
        let cpu = match (build.1, load.1) {
            (Some(b), Some(l)) => format!(
                "; CPU per run: load {:.1} ms, build {:.1} ms: {:.1}%",
                ms(l),
                ms(b),
                ms(b) / ms(l) * 100.0
            ),
            _ => String::new(),
        };
        eprintln!(
            "{label} n={n}: catalog load {:.1} ms (no index), index build {:.1} ms: {:.1}% of the load (best of {runs}){cpu}",
            ms(load.0),
            ms(build.0),
            ms(build.0) / ms(load.0) * 100.0
        );
    }
}
