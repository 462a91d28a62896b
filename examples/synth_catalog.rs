//! Writes a synthetic catalog document (`mcp_sieve::synth::catalog`) to stdout, for the load
//! benchmark and for sizing a deployment:
//! `cargo run --release --example synth_catalog -- TOOLS [OTHERS] [SEED] [PAGE_SIZE]`.

fn arg(n: usize, default: u64) -> u64 {
    std::env::args()
        .nth(n)
        .map(|a| {
            a.parse()
                .unwrap_or_else(|_| panic!("argument {n} must be a whole number, got {a:?}"))
        })
        .unwrap_or(default)
}

fn main() {
    let (tools, others, seed, page) = (arg(1, 5000), arg(2, 0), arg(3, 42), arg(4, 100));
    let mut doc = mcp_sieve::synth::catalog(seed, tools as usize, others as usize);
    doc["server"] = serde_json::json!({"name": "mcp-sieve-bench", "version": "1"});
    doc["options"] = serde_json::json!({"pageSize": page});
    println!("{doc}");
}
