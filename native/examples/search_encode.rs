//! Sentence vectors for the search quality script (issue 40): encodes a catalog's tools (the same
//! text and encoder as the native server, `src/search/encoder.rs`) and every query of the labelled query
//! files, and writes them as one JSON file that `examples/search_rank.rs` (core, no model) reads
//! with `SEARCH_VECTORS` to rank through `find_tools`' fused path. Also times the encoder.
//! `cargo run --release -p mcp-sieve-server --example search_encode -- MODEL CATALOG OUT QUERIES...`
//! `cargo run --release -p mcp-sieve-server --example search_encode -- MODEL --time N` (query
//! encoding p50 over N calls).
//! `cargo run --release -p mcp-sieve-server --features onnx --example search_encode -- MODEL
//! --compare OTHER_MODEL [N]`: two model folders (e.g. candle fp32 and tract int8) side by side:
//! query p50 / p95 and this thread's CPU time, batch speed, and how close their vectors are.
//! `cargo run --release -p mcp-sieve-server --example search_encode -- MODEL --bench 5000,50000`:
//! the native server's background encoding of the public catalog (tools per second, sorted
//! batches, through `src/search/meaning.rs` with a fresh cache), a cached restart at each size, and
//! `find_tools`' ranking p50 at each size (the public catalog repeated with numbered names, as
//! benches/search.rs; each copy's vector the original's), query encoding included.

use mcp_sieve_server::search::{encoder, meaning};

use std::time::Instant;

use serde_json::{json, Map, Value};

fn main() {
    if let Err(e) = run() {
        eprintln!("search_encode: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, catalog, rest @ ..] = args.as_slice() else {
        return Err("usage: search_encode MODEL CATALOG OUT QUERIES... | MODEL --time N".into());
    };
    let began = Instant::now();
    let enc = encoder::Encoder::load(std::path::Path::new(model))?;
    eprintln!("model loaded in {:.2} s", began.elapsed().as_secs_f64());
    if catalog == "--bench" {
        return bench(enc, rest.first().map_or("5000,50000", String::as_str));
    }
    if catalog == "--compare" {
        let other = rest
            .first()
            .ok_or("usage: search_encode MODEL --compare OTHER_MODEL [N]")?;
        let began = Instant::now();
        let b = encoder::Encoder::load(std::path::Path::new(other))?;
        eprintln!("{other} loaded in {:.2} s", began.elapsed().as_secs_f64());
        return compare(&enc, &b, rest.get(1).and_then(|n| n.parse().ok()).unwrap_or(100));
    }
    if catalog == "--time" {
        return time(&enc, rest.first().and_then(|n| n.parse().ok()).unwrap_or(50));
    }
    let [out, queries @ ..] = rest else {
        return Err("usage: search_encode MODEL CATALOG OUT QUERIES...".into());
    };
    let doc = std::fs::read_to_string(catalog).map_err(|e| format!("cannot read {catalog}: {e}"))?;
    let cat = mcp_sieve::Catalog::from_json_str(&doc).map_err(|e| format!("{catalog}: {e}"))?;
    let mut tools = Map::new();
    let items = &cat.section(mcp_sieve::model::Kind::Tool).items;
    let began = Instant::now();
    let texts: Vec<String> = items
        .iter()
        .map(|t| serde_json::from_str(t.fragment()).unwrap_or(Value::Null))
        .map(|t| encoder::encoded_text(&t))
        .collect();
    for (chunk, names) in texts.chunks(32).zip(items.chunks(32)) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for (v, t) in enc.encode(&refs)?.into_iter().zip(names) {
            tools.insert(t.name.clone(), json!(v));
        }
    }
    eprintln!(
        "{} tools encoded in {:.2} s",
        items.len(),
        began.elapsed().as_secs_f64()
    );
    let mut qs = Map::new();
    for path in queries {
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?)
                .map_err(|e| format!("{path}: {e}"))?;
        for k in ["queries", "heldOut"] {
            for q in file[k].as_array().into_iter().flatten() {
                if let Some(text) = q["query"].as_str() {
                    let v = enc.encode(&[text])?.pop().unwrap_or_default();
                    qs.insert(text.to_string(), json!(v));
                }
            }
        }
    }
    let body = json!({"dim": enc.dim, "tools": tools, "queries": qs});
    Ok(std::fs::write(out, body.to_string()).map_err(|e| format!("cannot write {out}: {e}"))?)
}

/// Query encoding p50 over `n` calls of the bench's three queries, and batch encoding speed.
fn time(enc: &encoder::Encoder, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    for q in [
        "create a branch",
        "delete the synthetic item",
        "show me the logs of the failed CI job on the main branch so I can see why the build broke",
    ] {
        enc.encode(&[q])?;
        let mut times: Vec<f64> = (0..n)
            .map(|_| {
                let t = Instant::now();
                let _ = enc.encode(&[q]);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "encode {}-word query: p50 {:.2} ms, p90 {:.2} ms ({n} calls)",
            q.split_whitespace().count(),
            times[n / 2],
            times[n * 9 / 10]
        );
    }
    Ok(())
}

/// This thread's CPU time in ms (the shared machine's load does not count in it).
fn cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// Query encoding p50 / p95 of one engine over `n` calls of each query.
fn latency(enc: &encoder::Encoder, queries: &[&str], n: usize) -> Result<(), Box<dyn std::error::Error>> {
    for q in queries {
        enc.encode(&[q])?;
        let mut cpu = Vec::with_capacity(n);
        let mut times: Vec<f64> = (0..n)
            .map(|_| {
                let (t, c) = (Instant::now(), cpu_ms());
                let _ = enc.encode(&[q]);
                cpu.push(cpu_ms() - c);
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        cpu.sort_by(f64::total_cmp);
        println!(
            "  {}: {}-word query ({} tokens): p50 {:.2} ms, p95 {:.2} ms; this thread's CPU p50 {:.2} ms, p95 {:.2} ms ({n} calls)",
            enc.engine(),
            q.split_whitespace().count(),
            enc.tokens(q)?.len(),
            times[n / 2],
            times[n * 95 / 100],
            cpu[n / 2],
            cpu[n * 95 / 100]
        );
    }
    Ok(())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Two models side by side on the same texts: query latency (interleaved, `n` calls each), the
/// cosine between their vectors of every public catalog tool and labelled query, whether each
/// query's nearest tools are the same, and the batch speed of encoding the catalog.
fn compare(a: &encoder::Encoder, b: &encoder::Encoder, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let queries = [
        "create a branch",
        "delete the synthetic item",
        "show me the logs of the failed CI job on the main branch so I can see why the build broke",
    ];
    for round in 0..2 {
        println!("round {}:", round + 1);
        latency(a, &queries, n)?;
        latency(b, &queries, n)?;
    }
    let public = public_times(362)?;
    let texts: Vec<String> = public
        .section(mcp_sieve::model::Kind::Tool)
        .items
        .iter()
        .map(|t| encoder::tool_text(&serde_json::from_str(t.fragment()).unwrap_or(Value::Null)))
        .collect();
    let mut tools = Vec::new();
    for e in [a, b] {
        let began = Instant::now();
        let mut vs = Vec::new();
        for chunk in texts.chunks(32) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            vs.extend(e.encode(&refs)?);
        }
        println!(
            "{}: {} tool texts in batches of 32 (catalog order, unsorted) in {:.2} s = {:.1} tools/s",
            e.engine(),
            vs.len(),
            began.elapsed().as_secs_f64(),
            vs.len() as f64 / began.elapsed().as_secs_f64()
        );
        tools.push(vs);
    }
    let mut cos: Vec<f32> = tools[0].iter().zip(&tools[1]).map(|(x, y)| cosine(x, y)).collect();
    let mut qtexts = Vec::new();
    for path in ["tests/search/queries.json"] {
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?)
                .map_err(|e| format!("{path}: {e}"))?;
        for k in ["queries"] {
            for q in file[k].as_array().into_iter().flatten() {
                if let Some(text) = q["query"].as_str() {
                    qtexts.push(text.to_string());
                }
            }
        }
    }
    let (mut top1, mut top5) = (0, 0);
    let mut qcos = Vec::new();
    for q in &qtexts {
        let va = a.encode(&[q])?.pop().unwrap_or_default();
        let vb = b.encode(&[q])?.pop().unwrap_or_default();
        qcos.push(cosine(&va, &vb));
        let best = |v: &[f32], ts: &[Vec<f32>]| {
            let mut r: Vec<(f32, usize)> = ts.iter().enumerate().map(|(i, t)| (cosine(v, t), i)).collect();
            r.sort_by(|x, y| y.0.total_cmp(&x.0));
            r.into_iter().take(5).map(|x| x.1).collect::<Vec<_>>()
        };
        let (ra, rb) = (best(&va, &tools[0]), best(&vb, &tools[1]));
        top1 += usize::from(ra[0] == rb[0]);
        top5 += usize::from(ra == rb);
    }
    let summary = |name: &str, c: &mut Vec<f32>| {
        c.sort_by(f32::total_cmp);
        println!(
            "cosine {} vs {} over {} {name}: min {:.4}, p5 {:.4}, median {:.4}",
            a.engine(),
            b.engine(),
            c.len(),
            c[0],
            c[c.len() / 20],
            c[c.len() / 2]
        );
    };
    summary("tool texts", &mut cos);
    summary("tuning queries", &mut qcos);
    println!(
        "nearest tool by cosine alone over the {} public tools: the same first tool for {top1} of {} queries, the same five in the same order for {top5}",
        texts.len(),
        qtexts.len()
    );
    Ok(())
}

/// The public catalog's tools repeated with numbered names up to `n` (as benches/search.rs).
fn public_times(n: usize) -> Result<mcp_sieve::Catalog, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string("catalog/public-servers.json")
        .map_err(|e| format!("catalog/public-servers.json: {e}"))?;
    let mut doc: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let base = doc["tools"].as_array().cloned().unwrap_or_default();
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            let mut t = base[i % base.len()].clone();
            if i >= base.len() {
                t["name"] = json!(format!("{}_{}", t["name"].as_str().unwrap_or_default(), i / base.len()));
            }
            t
        })
        .collect();
    doc["tools"] = json!(tools);
    Ok(mcp_sieve::Catalog::from_json_str(&doc.to_string()).map_err(|e| e.to_string())?)
}

fn p50(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

fn bench(enc: encoder::Encoder, sizes: &str) -> Result<(), Box<dyn std::error::Error>> {
    use std::sync::Arc;
    let enc = Arc::new(enc);
    let dir = std::env::temp_dir().join(format!("search-encode-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let public = public_times(362)?;
    let frags = |c: &mcp_sieve::Catalog| -> Vec<String> {
        c.section(mcp_sieve::model::Kind::Tool)
            .items
            .iter()
            .map(|t| t.fragment().to_string())
            .collect()
    };
    let base = frags(&public);
    let began = Instant::now();
    let mut cache = meaning::Cache::open(&dir, &enc);
    let (base_vectors, made) = meaning::vectors(&base, &enc, &mut cache, &|_, _| {})?;
    let secs = began.elapsed().as_secs_f64();
    println!(
        "background encoding: {} distinct public tools in {secs:.1} s = {:.1} tools/s (one thread); 5,000 distinct tools would take {:.0} s",
        made.encoded,
        made.encoded as f64 / secs,
        5000.0 * secs / made.encoded as f64
    );
    let queries = [
        "create a branch",
        "delete the synthetic item",
        "show me the logs of the failed CI job on the main branch so I can see why the build broke",
    ];
    for n in sizes.split(',').filter_map(|s| s.parse::<usize>().ok()) {
        let cat = public_times(n)?;
        let tools = frags(&cat);
        let dim = enc.dim;
        // The cache as a restart finds it: every tool's vector there (a copy's is the original's).
        let mut vectors = Vec::with_capacity(n * dim);
        let mut new = Vec::new();
        for (i, t) in tools.iter().enumerate() {
            let v = &base_vectors[(i % 362) * dim..(i % 362 + 1) * dim];
            vectors.extend_from_slice(v);
            let d = mcp_sieve::pin::digest(&serde_json::from_str(t).unwrap_or(Value::Null));
            new.push((d.trim_start_matches("sha256:").to_string(), v.to_vec()));
        }
        let size_dir = dir.join(n.to_string());
        meaning::Cache::open(&size_dir, &enc).add(new)?;
        let began = Instant::now();
        let mut again = meaning::Cache::open(&size_dir, &enc);
        let (_, made) = meaning::vectors(&tools, &enc, &mut again, &|_, _| {})?;
        println!(
            "{n} tools: cached restart (cache read, every definition's digest, vectors laid out) {:.0} ms, {} encoded; vectors {} bytes per tool ({:.1} MB)",
            began.elapsed().as_secs_f64() * 1e3,
            made.encoded,
            dim * 4,
            (n * dim * 4) as f64 / 1e6
        );
        let all = mcp_sieve::filter::Bits::full(n);
        for query in queries {
            let qv = enc.encode(&[query])?.pop().unwrap_or_default();
            let (mut wall, mut cpu) = (Vec::new(), Vec::new());
            for _ in 0..30 {
                let (t, c) = (Instant::now(), cpu_ms());
                let top =
                    mcp_sieve::search::hybrid::top_k(mcp_sieve::search::hybrid::cosines(&vectors, dim, &qv, &all), 50);
                std::hint::black_box(top);
                cpu.push(cpu_ms() - c);
                wall.push(t.elapsed().as_secs_f64() * 1e3);
            }
            println!(
                "{n} tools, {}-word query: the exact cosine pass alone (fp32, every row, best 50) p50 {:.2} ms, this thread's CPU p50 {:.2} ms",
                query.split_whitespace().count(),
                p50(wall),
                p50(cpu)
            );
        }
        let q = Arc::clone(&enc);
        cat.meaning
            .fill(mcp_sieve::search::hybrid::Meaning {
                dim,
                vectors,
                encode: Arc::new(move |t: &str| {
                    q.encode(&[t])
                        .map_err(|e| e.to_string())
                        .and_then(|mut v| v.pop().ok_or_else(|| "the encoder answered nothing".to_string()))
                }),
            })
            .map_err(|e| e.to_string())?;
        for query in queries {
            let _ = mcp_sieve::protocol::search::ranked(&cat, query, &all, 5);
            let mut total = Vec::new();
            let mut encode = Vec::new();
            let mut cpu = Vec::new();
            for _ in 0..30 {
                let t = Instant::now();
                let _ = enc.encode(&[query]);
                encode.push(t.elapsed().as_secs_f64() * 1e3);
                let (t, c) = (Instant::now(), cpu_ms());
                let _ = mcp_sieve::protocol::search::ranked(&cat, query, &all, 5);
                cpu.push(cpu_ms() - c);
                total.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let (tot, enc_ms) = (p50(total), p50(encode));
            println!(
                "{n} tools, {}-word query: find_tools ranking p50 {tot:.2} ms, this thread's CPU p50 {:.2} ms (query encoding alone p50 {enc_ms:.2} ms, so the lexical index + cosine + fusion about {:.2} ms)",
                query.split_whitespace().count(),
                p50(cpu),
                tot - enc_ms
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
