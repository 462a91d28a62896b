//! Text from a caller, a catalog or an upstream (issue 23, item 1), straight into the functions
//! that cut it: any Unicode through the tokenizer, the stemmer and `tool_filter::rank` over the
//! catalog, the PII detectors (spans fall on character boundaries and do not overlap; redaction
//! then restoration gives the text back) and the globs (they agree with a plain reference
//! matcher) → never a panic. The input is split at NUL bytes into text, pattern and name.
//! (`text_server` sends the same through the whole server.)
#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp_sieve::filter::glob;
use mcp_sieve::middleware::detect::{self, Options};
use mcp_sieve::middleware::pii_redaction::Redactor;
use mcp_sieve::middleware::{pii_restoration, tool_filter};
use mcp_sieve::model::Kind;
use mcp_sieve::protocol::Server;
use mcp_sieve::Catalog;
use serde_json::{json, Value};

const BUILTINS: [&str; 5] = ["pii_redaction", "pii_restoration", "content_moderation", "timestamp_injector", "tool_filter"];

fn server() -> &'static Server {
    static S: OnceLock<Server> = OnceLock::new();
    S.get_or_init(|| {
        let mut doc: Value = serde_json::from_str(include_str!("../../catalog/default.json")).unwrap();
        doc["middleware"] = json!({"enabled": BUILTINS, "pii": {"names": ["Jane Smith", "丸山"]}});
        Server::new(Catalog::load(&doc).unwrap())
    })
}

/// The glob rules as the textbook dynamic programme over characters.
fn reference_glob(p: &[char], n: &[char]) -> bool {
    let mut row = vec![false; n.len() + 1];
    row[0] = true;
    for &pc in p {
        let mut next = vec![false; n.len() + 1];
        if pc == '*' {
            let mut seen = false;
            for j in 0..=n.len() {
                seen |= row[j];
                next[j] = seen;
            }
        } else {
            for j in 1..=n.len() {
                next[j] = row[j - 1] && (pc == '?' || pc == n[j - 1]);
            }
        }
        row = next;
    }
    row[n.len()]
}

fn direct(text: &str, pattern: &str, name: &str) {
    // Tokenizer, stemmer and ranking over the catalog.
    for w in text.split_whitespace() {
        let _ = tool_filter::stem(w);
    }
    let _ = tool_filter::tokens(text);
    let catalog = server().catalog();
    let section = catalog.section(Kind::Tool);
    let all: Vec<usize> = (0..section.items.len()).collect();
    let ranked = tool_filter::rank(&section.items, &catalog.groups, &all, text);
    assert!(ranked.iter().all(|(i, s)| *i < section.items.len() && s.is_finite() && *s > 0.0));
    // PII spans: on character boundaries, sorted, disjoint; redaction round-trips.
    for strict in [false, true] {
        let opts = Options { strict, names: &[], types: &[] };
        let spans = detect::detect(text, &opts);
        let mut last = 0;
        for s in &spans {
            assert!(s.start >= last && s.start < s.end && s.end <= text.len(), "{spans:?}");
            assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end), "{spans:?}");
            last = s.end;
        }
        let mut r = Redactor::new(None, std::iter::once(text));
        if let Some(red) = r.redact(text, &opts) {
            let map: HashMap<&str, &str> =
                r.redactions.iter().filter_map(|(k, v)| Some((k.as_str(), v.as_str()?))).collect();
            let back = pii_restoration::restore(&red, &map, &mut Vec::new());
            assert_eq!(back.as_deref(), Some(text), "redacted: {red:?}");
        }
    }
    // Globs against the reference (short inputs: the reference is quadratic).
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().take(64).collect(), name.chars().take(64).collect());
    let (ps, ns): (String, String) = (p.iter().collect(), n.iter().collect());
    assert_eq!(glob::matches(&ps, &ns), reference_glob(&p, &n), "{ps:?} on {ns:?}");
    let _ = glob::matches(pattern, name);
}

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let mut parts = s.splitn(3, '\0');
    let (text, pattern, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    direct(text, pattern, name);
});
