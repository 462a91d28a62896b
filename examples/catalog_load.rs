//! Times a catalog document's load (`Catalog::from_json_str`, then `Server::new`, and
//! `Catalog::from_prepared` of its prepared form, `catalog::prepared`) natively, the
//! work a Worker isolate does on its first request besides compiling its code: for sizing the
//! cold start (docs/src/performance.md, "Cold start"). Reads the document from a file (or the
//! embedded default catalog when given none) and loads it RUNS times (default 20).
//! `cargo run --release --features testing --example catalog_load -- [FILE] [RUNS]`

use std::time::{Duration, Instant};

use mcp_sieve::protocol::Server;
use mcp_sieve::Catalog;

fn main() {
    let mut args = std::env::args().skip(1);
    let text = match args.next().filter(|a| a != "-") {
        Some(path) => std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}")),
        None => mcp_sieve::catalog::DEMO_CATALOG.to_string(),
    };
    let runs: usize = args
        .next()
        .map_or(20, |r| r.parse().expect("RUNS must be a whole number"));
    let median = |mut t: Vec<Duration>| {
        t.sort();
        t[t.len() / 2].as_secs_f64() * 1e3
    };
    let (mut value, mut load, mut server, mut prepared) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let form = mcp_sieve::catalog::prepared::prepare(&text).ok();
    for _ in 0..runs {
        let start = Instant::now();
        let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        value.push(start.elapsed());
        drop(v);
        let start = Instant::now();
        let catalog = Catalog::from_json_str(&text).expect("catalog loads");
        load.push(start.elapsed());
        let start = Instant::now();
        let s = Server::new(catalog);
        server.push(start.elapsed());
        drop(s);
        if let Some(form) = &form {
            let start = Instant::now();
            let header = mcp_sieve::catalog::prepared::header(form)
                .expect("prepared")
                .expect("its first line");
            let json = std::str::from_utf8(&form[header.json.clone()]).expect("UTF-8");
            let c = Catalog::from_prepared(json, &header, &form[header.index.clone()]).expect("it loads");
            prepared.push(start.elapsed());
            drop(c);
        }
    }
    println!(
        "{} bytes: the whole text to a Value tree {:.2} ms; Catalog::from_json_str {:.2} ms; Server::new {:.3} ms; its prepared form (UTF-8 check and Catalog::from_prepared) {} (medians of {runs})",
        text.len(),
        median(value),
        median(load),
        median(server),
        match prepared.is_empty() {
            true => "not made (a gateway's document)".to_string(),
            false => format!("{:.2} ms", median(prepared)),
        }
    );
}
