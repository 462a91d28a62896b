//! Writes a synthetic catalog document (`mcp_sieve::synth::catalog`) to stdout, for the load
//! benchmark and for sizing a deployment:
//! `cargo run --release --example synth_catalog -- TOOLS [OTHERS] [SEED] [PAGE_SIZE] [DESCRIPTION]`.
//! DESCRIPTION (default 0: the generator's own one-line descriptions) lengthens every tool's
//! description to at least that many bytes with sentences of a real tool's kind, a paragraph break
//! and quoted names among them (characters a JSON answer escapes), as catalogs written for models
//! have: 150 makes a full page of 50 tools about 28 KB (the shape of issue 63's outside run).

use serde_json::Value;

/// The sentences a longer description is made of, taken in turn from a place set by the tool's
/// index, so neighbouring tools differ.
const SENTENCES: [&str; 8] = [
    " Use it when the user names the item by its \"id\"; otherwise call the matching search tool first.",
    " Results are paged: pass \"limit\" to ask for fewer, and read the cursor of the answer for the rest.",
    "\nReturns the item as JSON with its fields, its owner and the time it last changed.",
    " Fails with a clear error when the item does not exist or the caller may not read it.",
    " Safe to retry: calling it twice with the same arguments gives the same answer.",
    "\nNote: large items are cut to their first 10,000 characters; ask for a field to get it whole.",
    " Works on items of every kind the service holds (records, files, comments and their history).",
    " The answer is cached for a minute, so a change made just before may not show yet.",
];

fn arg(n: usize, default: u64) -> u64 {
    std::env::args()
        .nth(n)
        .map(|a| {
            a.parse()
                .unwrap_or_else(|_| panic!("argument {n} must be a whole number, got {a:?}"))
        })
        .unwrap_or(default)
}

/// Lengthens each tool's description in `doc` to at least `bytes` bytes.
fn lengthen(doc: &mut Value, bytes: usize) {
    let Some(tools) = doc.get_mut("tools").and_then(Value::as_array_mut) else {
        return;
    };
    for (i, tool) in tools.iter_mut().enumerate() {
        let Some(text) = tool.get("description").and_then(Value::as_str) else {
            continue;
        };
        let mut text = text.to_string();
        let mut k = i;
        while text.len() < bytes {
            text.push_str(SENTENCES[k % SENTENCES.len()]);
            k += 3;
        }
        tool["description"] = Value::String(text);
    }
}

fn main() {
    let (tools, others, seed, page) = (arg(1, 5000), arg(2, 0), arg(3, 42), arg(4, 100));
    let mut doc = mcp_sieve::synth::catalog(seed, tools as usize, others as usize);
    doc["server"] = serde_json::json!({"name": "mcp-sieve-bench", "version": "1"});
    doc["options"] = serde_json::json!({"pageSize": page});
    lengthen(&mut doc, arg(5, 0) as usize);
    println!("{doc}");
}
