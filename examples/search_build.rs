//! Times the search index's build against the catalog's load: the best wall time of several
//! runs, and the median CPU time of this process per run (a shared machine's other work counts in
//! neither), on the synthetic catalog and on the public catalog's tools repeated (names
//! numbered; and again with each copy's parameter descriptions made its own, so that they repeat
//! no more than in the catalog itself). The load builds no index; the build (`SearchIndex::of_tools`, from the tools'
//! definitions as listed) is what the native server runs on another thread after the load, and
//! what the Worker's first search runs:
//! `cargo run --release --features testing --example search_build -- [TOOLS] [RUNS]`
//! (`ONLY_CATALOG=synth|public|public-own-params` times one; `ONLY_BUILD=1` times only the build).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::public_times;
use mcp_sieve::search::SearchIndex;
use mcp_sieve::{synth, Catalog};
use serde_json::Value;

/// This process's CPU time so far (user + system, from /proc/self/stat; clock ticks of 10 ms),
/// so other processes on a shared machine do not count.
fn cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// This process's CPU time so far, to the nanosecond (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`,
/// which, unlike /proc, counts the time since the last scheduler tick too).
#[cfg(target_os = "linux")]
fn cpu_ns() -> Option<Duration> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let ok = unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0;
    ok.then(|| Duration::new(ts.sec as u64, ts.nsec as u32))
}

#[cfg(not(target_os = "linux"))]
fn cpu_ns() -> Option<Duration> {
    None
}

/// (best wall time of one run, CPU time of one run) over `runs` runs: the median of each run's
/// own CPU time where the clock has it (a run slowed by the machine's other work then moves the
/// figure least), else the mean from clock ticks.
fn best(runs: usize, mut f: impl FnMut()) -> (Duration, Option<Duration>) {
    let c0 = cpu();
    let mut cpus = Vec::new();
    let wall = (0..runs)
        .map(|_| {
            let (s, c) = (Instant::now(), cpu_ns());
            f();
            let wall = s.elapsed();
            cpus.extend(cpu_ns().zip(c).map(|(b, a)| b - a));
            wall
        })
        .min()
        .unwrap_or_default();
    cpus.sort();
    let cpu = if cpus.len() == runs && runs > 0 {
        Some(cpus[runs / 2])
    } else {
        cpu().zip(c0).map(|(b, a)| (b - a) / runs as u32)
    };
    (wall, cpu)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The public catalog's tools repeated, each copy's parameter descriptions made its own (copy
/// `k` > 0 appends ` k`): parameter descriptions then repeat only as much as in the catalog
/// itself, not once per copy.
fn own_params(mut doc: Value) -> Value {
    let base: Value = serde_json::from_str(include_str!("../catalog/public-servers.json")).expect("public catalog");
    let per = base["tools"].as_array().map_or(1, Vec::len).max(1);
    for (i, t) in doc["tools"].as_array_mut().into_iter().flatten().enumerate() {
        let copy = i / per;
        if copy == 0 {
            continue;
        }
        for p in t["inputSchema"]["properties"]
            .as_object_mut()
            .into_iter()
            .flat_map(|o| o.values_mut())
        {
            if let Some(d) = p.get_mut("description") {
                if let Some(text) = d.as_str() {
                    *d = Value::String(format!("{text} {copy}"));
                }
            }
        }
    }
    doc
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(5_000, |a| a.parse().expect("TOOLS is a number"));
    let runs: usize = args.get(2).map_or(5, |a| a.parse().expect("RUNS is a number"));
    let only_build = std::env::var_os("ONLY_BUILD").is_some();
    let catalogs = [
        ("synth", synth::catalog(42, n, 0)),
        ("public", public_times(n)),
        ("public-own-params", own_params(public_times(n))),
    ];
    let only = std::env::var("ONLY_CATALOG").ok();
    for (label, doc) in catalogs {
        if only.as_deref().is_some_and(|o| o != label) {
            continue;
        }
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
                "; CPU per run (median): load {:.1} ms, build {:.1} ms: {:.1}%",
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
