//! Fits the search ranking's weights (`mcp_sieve::search::Params`) by coordinate ascent on the
//! TUNING part of the labelled queries only — `part: "tune"` of `tests/search/public-servers.json`
//! and `tests/search/saas-servers.json`, and the `queries` of the earlier
//! `tests/search/queries.json`; no held-out query is ever read — and reports the fit's
//! generalization by two-fold cross-validation by catalog (fit on one catalog's queries, measure
//! on the other's):
//! `cargo run --release --features testing --example search_tune -- [score|misses|fit|cv] [--earlier] [--robust]`
//! (`--earlier`: the earlier set joins the public catalog's objective; its numbers are always
//! shown; `--robust`: a step must not lower any one set's objective).
//! The objective is MRR@10 + (top-1 + top-5) / 2 over the queries fitted, so a change must move
//! ranks, not just scores; a step is taken only when it gains at least `MARGIN`.

use mcp_sieve::model::Kind;
use mcp_sieve::search::{Params, SearchIndex, NAMES};
use mcp_sieve::Catalog;
use serde_json::Value;

/// Least objective gain (per query, averaged) a step must bring, by default (`SEARCH_TUNE_MARGIN`).
const MARGIN: f64 = 0.003;

struct Set {
    name: &'static str,
    /// Which catalog (0 public, 1 SaaS).
    catalog: usize,
    queries: Vec<(String, Vec<String>)>,
}

struct Cat {
    items: Vec<mcp_sieve::model::Primitive>,
    groups: Vec<mcp_sieve::model::Group>,
    names: Vec<String>,
}

fn load_cat(path: &str) -> Cat {
    let c = Catalog::from_json_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let items = c.section(Kind::Tool).items.clone();
    let names = items.iter().map(|t| t.name.clone()).collect();
    Cat {
        items,
        groups: c.groups.clone(),
        names,
    }
}

/// The tuning queries of a labelled file: `part: "tune"` (or the earlier format's `queries`).
fn tuning(path: &str, key: &str, tune_part: bool) -> Vec<(String, Vec<String>)> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| !tune_part || q["part"] == "tune")
        .map(|q| {
            let expect = q["expect"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect();
            (q["query"].as_str().unwrap().to_string(), expect)
        })
        .collect()
}

#[derive(Default, Clone, Copy)]
struct Score {
    n: usize,
    top1: usize,
    top5: usize,
    rr: f64,
}

impl Score {
    fn add(&mut self, o: Score) {
        self.n += o.n;
        self.top1 += o.top1;
        self.top5 += o.top5;
        self.rr += o.rr;
    }
    fn objective(&self) -> f64 {
        let n = self.n.max(1) as f64;
        self.rr / n + (self.top1 + self.top5) as f64 / (2.0 * n)
    }
    fn show(&self) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "n {:>3}  top-1 {:.3}  top-5 {:.3}  MRR {:.3}",
            self.n,
            self.top1 as f64 / n,
            self.top5 as f64 / n,
            self.rr / n
        )
    }
}

struct Data {
    cats: Vec<Cat>,
    sets: Vec<Set>,
}

impl Data {
    /// Scores per set with `p` (printing misses when asked).
    fn run(&self, p: &Params, misses: bool) -> Vec<Score> {
        let indexes: Vec<SearchIndex> = self
            .cats
            .iter()
            .map(|c| SearchIndex::of_tools_with(&c.items, &c.groups, *p))
            .collect();
        self.sets
            .iter()
            .map(|s| {
                let cat = &self.cats[s.catalog];
                let all = mcp_sieve::filter::Bits::full(cat.items.len());
                let mut sc = Score::default();
                for (q, expect) in &s.queries {
                    let hits = indexes[s.catalog].search(q, &all, 10);
                    let rank = hits.iter().position(|(d, _)| expect.contains(&cat.names[*d]));
                    sc.n += 1;
                    if let Some(r) = rank {
                        sc.top1 += (r == 0) as usize;
                        sc.top5 += (r < 5) as usize;
                        sc.rr += 1.0 / (r + 1) as f64;
                    }
                    if misses && rank != Some(0) {
                        let top: Vec<&str> = hits.iter().take(5).map(|(d, _)| cat.names[*d].as_str()).collect();
                        println!(
                            "  miss [{}] {q:?} (rank {:?}): {top:?} expected {expect:?}",
                            s.name,
                            rank.map(|r| r + 1)
                        );
                    }
                }
                sc
            })
            .collect()
    }
}

fn pooled(scores: &[Score], which: impl Fn(usize) -> bool) -> Score {
    let mut s = Score::default();
    for (i, x) in scores.iter().enumerate() {
        if which(i) {
            s.add(*x);
        }
    }
    s
}

fn report(d: &Data, p: &Params) {
    let s = d.run(p, false);
    for (set, sc) in d.sets.iter().zip(&s) {
        println!("  {:<22} {}", set.name, sc.show());
    }
    println!(
        "  {:<22} {}",
        "both catalogs (tune)",
        pooled(&s, |i| d.sets[i].name != "earlier-tuned").show()
    );
}

/// Coordinate ascent from `p` on the sets `on` says. With a `guard`, a step must also not lower
/// the objective of any one set it names (each catalog's, and the earlier set's): a change that
/// helps one catalog at another's cost is not taken.
fn fit(d: &Data, mut p: Params, on: &dyn Fn(&Set) -> bool, guard: Option<&dyn Fn(&Set) -> bool>) -> Params {
    let obj = |p: &Params| {
        let s = d.run(p, false);
        let each: Vec<f64> = s.iter().map(Score::objective).collect();
        (pooled(&s, |i| on(&d.sets[i])).objective(), each)
    };
    let margin: f64 = std::env::var("SEARCH_TUNE_MARGIN").map_or(MARGIN, |m| m.parse().unwrap());
    // Only these weights (`SEARCH_TUNE_ONLY=name.w,k1`), or all.
    let only: Option<Vec<String>> = std::env::var("SEARCH_TUNE_ONLY")
        .ok()
        .map(|s| s.split(',').map(str::to_string).collect());
    let (mut best, mut each) = obj(&p);
    eprintln!("start objective {best:.4}");
    for pass in 0..8 {
        let mut moved = false;
        for (i, name) in NAMES.iter().enumerate() {
            if only.as_ref().is_some_and(|o| !o.iter().any(|n| n == name)) {
                continue;
            }
            let cur = *p.slot(i);
            let cands: Vec<f32> = if Params::is_b(i) {
                [-0.3, -0.15, 0.15, 0.3]
                    .iter()
                    .map(|x| (cur + x).clamp(0.0, 1.0))
                    .collect()
            } else if *name == "query_cover" && cur == 0.0 {
                // Off: tried from 0 upwards.
                [0.1, 0.25, 0.5, 1.0, 2.0]
                    .iter()
                    .map(|x| cur + x)
                    .chain([0.0f32, cur * 0.7])
                    .collect()
            } else {
                [0.0, 0.5, 0.7, 0.85, 1.2, 1.4, 2.0]
                    .iter()
                    .map(|x| {
                        let v = cur * x;
                        if Params::below_one(i) {
                            v.min(0.95)
                        } else {
                            v
                        }
                    })
                    .collect()
            };
            let mut step: Option<(f32, f64, Vec<f64>)> = None;
            for v in cands {
                if v == cur || (*name == "k1" && v < 0.1) {
                    continue;
                }
                let mut q = p;
                *q.slot(i) = v;
                let (o, e) = obj(&q);
                let fair = guard.is_none_or(|g| {
                    e.iter()
                        .zip(&each)
                        .zip(&d.sets)
                        .all(|((new, old), set)| !g(set) || *new >= old - 1e-9)
                });
                if fair && o > best + margin && step.as_ref().is_none_or(|(_, so, _)| o > *so) {
                    step = Some((v, o, e));
                }
            }
            if let Some((v, o, e)) = step {
                eprintln!("pass {pass}: {name} {cur} → {v}: {best:.4} → {o:.4}");
                *p.slot(i) = v;
                best = o;
                each = e;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    p
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map_or("score", String::as_str);
    let earlier = args.iter().any(|a| a == "--earlier");
    let d = Data {
        cats: vec![
            load_cat("catalog/public-servers.json"),
            load_cat("catalog/saas-servers.json"),
        ],
        sets: vec![
            Set {
                name: "public tune",
                catalog: 0,
                queries: tuning("tests/search/public-servers.json", "queries", true),
            },
            Set {
                name: "saas tune",
                catalog: 1,
                queries: tuning("tests/search/saas-servers.json", "queries", true),
            },
            Set {
                name: "earlier-tuned",
                catalog: 0,
                queries: tuning("tests/search/queries.json", "queries", false),
            },
        ],
    };
    // The fits start from the hand-set weights before the first fit (this example's output is
    // what `Params::default()` now holds: `fit --robust` from these).
    let base = Params {
        synonym: 0.45,
        prefix: 0.5,
        query_cover: 0.0,
        ..Params::default()
    };
    let in_obj = |s: &Set| earlier || s.name != "earlier-tuned";
    let robust = args.iter().any(|a| a == "--robust");
    match mode {
        "score" => {
            println!("hand-set weights (before the fit):");
            report(&d, &base);
            println!("Params::default():");
            report(&d, &Params::default());
        }
        "misses" => {
            d.run(&Params::default(), true);
        }
        "fit" => {
            println!("before:");
            report(&d, &base);
            let guard = |s: &Set| !s.name.ends_with('B');
            let p = fit(&d, base, &in_obj, robust.then_some(&guard as &dyn Fn(&Set) -> bool));
            println!("after:\n{p:#?}");
            report(&d, &p);
        }
        "cv" => {
            for (fold, cat) in [("public", 0), ("saas", 1)] {
                let on = |s: &Set| in_obj(s) && s.catalog == cat;
                let guard = |s: &Set| s.catalog == cat;
                let p = fit(&d, base, &on, robust.then_some(&guard as &dyn Fn(&Set) -> bool));
                println!("fitted on {fold} only: {p:?}");
                report(&d, &p);
            }
            println!("defaults:");
            report(&d, &base);
        }
        "cv2" => {
            // Two folds within each set (queries alternately), both catalogs in each fold.
            let mut halves = Vec::new();
            for set in &d.sets {
                for (half, tag) in [(0, "A"), (1, "B")] {
                    halves.push(Set {
                        name: if tag == "A" {
                            Box::leak(format!("{} A", set.name).into_boxed_str())
                        } else {
                            Box::leak(format!("{} B", set.name).into_boxed_str())
                        },
                        catalog: set.catalog,
                        queries: set.queries.iter().skip(half).step_by(2).cloned().collect(),
                    });
                }
            }
            let d = Data {
                cats: d.cats,
                sets: halves,
            };
            for fold in ["A", "B"] {
                let on = |s: &Set| s.name.ends_with(fold) && (earlier || !s.name.starts_with("earlier"));
                let guard = |s: &Set| s.name.ends_with(fold);
                let p = fit(&d, base, &on, robust.then_some(&guard as &dyn Fn(&Set) -> bool));
                println!("fitted on {fold}: {p:?}");
                for (name, scores) in [("fitted", d.run(&p, false)), ("defaults", d.run(&base, false))] {
                    for other in ["A", "B"] {
                        let sc = pooled(&scores, |i| {
                            d.sets[i].name.ends_with(other) && !d.sets[i].name.starts_with("earlier")
                        });
                        let e = pooled(&scores, |i| {
                            d.sets[i].name.ends_with(other) && d.sets[i].name.starts_with("earlier")
                        });
                        println!(
                            "  {name:<9} half {other} both catalogs: {}   earlier: {}",
                            sc.show(),
                            e.show()
                        );
                    }
                }
            }
        }
        _ => panic!("mode: score, misses, fit, cv or cv2"),
    }
}
