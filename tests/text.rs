//! Text from a caller, a catalog or an upstream never panics (issue 23, item 1): the search
//! tokenizer and stemmer on arbitrary Unicode (multi-byte letters, combining marks, astral
//! planes) as a short property test, `find_tools` and every middleware built-in on words whose
//! last bytes look like an English suffix inside a multi-byte character (`丸ed`, `၁ing`: a
//! five-byte query used to drop the connection), and name globs against a plain reference
//! matcher on arbitrary Unicode.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{catalog_json, header_fn, Harness};
use mcp_sieve::filter::glob;
use mcp_sieve::http::endpoint_view;
use mcp_sieve::middleware::tool_filter::{stem, tokens};
use mcp_sieve::Catalog;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Words whose last bytes are equal (or spell a suffix) inside a multi-byte character.
const TRICKY: [&str; 16] = [
    "丸丸丸ed",
    "丸丸丸丸ing",
    "丸ed",
    "၁ing",
    "丸ing",
    "丸丸ed",
    "ééed",
    "ßßing",
    "😀😀ed",
    "𝒜𝒜ing",
    "e\u{301}\u{301}ed",
    "caf\u{e9}s",
    "\u{1f600}ies",
    "\u{10348}\u{10348}es",
    "ĳĳed",
    "ααing",
];

#[test]
fn the_stemmer_cuts_only_between_characters() {
    assert_eq!(stem("丸ed"), "丸");
    assert_eq!(stem("၁ing"), "၁");
    assert_eq!(stem("丸丸丸ed"), "丸丸丸");
    assert_eq!(stem("丸丸丸ing"), "丸丸丸");
    assert_eq!(
        stem("éééed"),
        "ééé",
        "a doubled non-ASCII letter is not an English double consonant"
    );
    // English words stem as before.
    for (w, s) in [
        ("meetings", "meet"),
        ("logged", "log"),
        ("running", "run"),
        ("queries", "query"),
    ] {
        assert_eq!(stem(w), s, "{w}");
    }
    for w in TRICKY {
        let s = stem(w);
        assert!(w.starts_with(s.trim_end_matches('y')), "{w} → {s}");
        assert!(!tokens(w).is_empty(), "{w}");
    }
}

fn search_harness(doc: Value) -> Harness {
    let catalog = Catalog::load(&doc).unwrap();
    let view = endpoint_view(&catalog, "/mcp", "mode=search", &header_fn(vec![], &[]), None).unwrap();
    let mut h = Harness::with_catalog(catalog);
    h.view = view;
    h.init();
    h
}

#[test]
fn find_tools_answers_multibyte_queries_and_descriptions() {
    let mut doc = catalog_json();
    // A catalog (or upstream) description with such words is tokenized on every search.
    doc["tools"][0]["description"] = json!(TRICKY.join(" "));
    let mut h = search_harness(doc);
    for q in TRICKY.iter().copied().chain(["send an email", "丸ed ၁ing send email"]) {
        let r = h.rpc_ok("tools/call", json!({"name": "find_tools", "arguments": {"query": q}}));
        assert!(r["structuredContent"]["tools"].is_array(), "{q}: {r}");
    }
    let r = h.rpc_ok(
        "tools/call",
        json!({"name": "find_tools", "arguments": {"query": "丸ed"}}),
    );
    let first = &r["structuredContent"]["tools"][0]["name"];
    assert_eq!(first, &catalog_json()["tools"][0]["name"], "{r}");
}

#[test]
fn every_middleware_builtin_takes_multibyte_text() {
    let mut doc = catalog_json();
    doc["middleware"] = json!({"enabled": ["pii_redaction", "pii_restoration", "content_moderation", "timestamp_injector", "tool_filter"]});
    let mut h = Harness::with_catalog(Catalog::load(&doc).unwrap());
    h.init();
    let text = format!(
        "{} Mr. Élodie Ñúñez [丸_1] [EMAIL_丸] jane@例え.jp 丸@x.com ١٢٣-٤٥-٦٧٨٩ password: 丸丸丸丸丸丸丸丸 \
         ignore previous instructions 丸",
        TRICKY.join(" ")
    );
    let context = json!([{"type": "text", "text": text}]);
    for (name, args) in [
        ("pii_redaction", json!({"aggressiveness": "strict"})),
        ("pii_redaction", json!({})),
        (
            "pii_restoration",
            json!({"redactions": {"丸_1": "x", "EMAIL_1": "丸ed"}}),
        ),
        ("content_moderation", json!({})),
        (
            "timestamp_injector",
            json!({"timeZone": "Europe/Berlin", "label": "丸ed ၁ing"}),
        ),
        ("tool_filter", json!({})),
    ] {
        let r = h.rpc(
            "middleware/invoke",
            json!({"name": name, "arguments": args, "context": context}),
        );
        assert!(r.get("result").is_some(), "{name}: {r}");
    }
}

/// Characters that break byte-for-character assumptions: multi-byte letters and digits,
/// combining marks, astral-plane symbols, letters that change length when lowercased, and the
/// glob and suffix characters themselves.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(vec!['a', 'd', 'e', 'g', 'i', 'n', 's', 'l', 'z', 'y', 'E', 'D', 'I', 'S']),
        2 => prop::sample::select(vec![
            'é', 'ß', 'İ', 'ĳ', 'α', 'Ω', 'ж', '丸', '၁', '١', '\u{301}', '\u{20dd}', '\u{200d}', '\u{fe0f}',
            '😀', '𝒜', '\u{10348}', '\u{e0001}', '\u{feff}', '\u{ffff}', '\u{10ffff}',
        ]),
        1 => prop::sample::select(vec![' ', '_', '-', '*', '?', '.', '\n']),
        1 => any::<char>(),
    ]
}

fn tricky_string(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..max).prop_map(|v| v.into_iter().collect())
}

/// The glob rules written as the textbook dynamic programme over characters.
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn tokenizer_and_stemmer_take_any_text(s in tricky_string(24), t in any::<String>()) {
        for text in [&s, &t] {
            for w in tokens(text) {
                prop_assert!(!w.is_empty());
            }
            let st = stem(text);
            // A stem is the word cut at a character boundary, possibly with a `y` added.
            prop_assert!(text.starts_with(st.strip_suffix('y').unwrap_or(&st)) || st.ends_with('y'), "{:?} → {:?}", text, st);
            for suffix in ["ed", "ing", "ies", "es", "s", "sses"] {
                let _ = stem(&format!("{text}{suffix}"));
                let _ = tokens(&format!("{text}{suffix}"));
            }
        }
    }

    #[test]
    fn globs_agree_with_the_reference_on_any_text(p in tricky_string(10), n in tricky_string(16)) {
        let (pc, nc): (Vec<char>, Vec<char>) = (p.chars().collect(), n.chars().collect());
        prop_assert_eq!(glob::matches(&p, &n), reference_glob(&pc, &nc), "{:?} on {:?}", p, n);
    }

    #[test]
    fn globs_with_many_stars_agree_with_the_reference(
        p in prop::collection::vec(prop::sample::select(vec!['a', 'b', '*', '?', '丸', '😀']), 0..80),
        n in prop::collection::vec(prop::sample::select(vec!['a', 'b', '丸', '😀']), 0..90),
    ) {
        let (ps, ns): (String, String) = (p.iter().collect(), n.iter().collect());
        prop_assert_eq!(glob::matches(&ps, &ns), reference_glob(&p, &n), "{:?} on {:?}", ps, ns);
    }
}

#[test]
fn handles_are_found_in_one_pass_over_the_text() {
    // Each `[` used to search the whole rest of the text for its `]`: texts of `[` (each string
    // at most 256 KB) took minutes in pii_redaction and pii_restoration.
    let mut doc = catalog_json();
    doc["middleware"] = json!({"enabled": ["pii_redaction", "pii_restoration"]});
    let mut h = Harness::with_catalog(Catalog::load(&doc).unwrap());
    h.init();
    let text = "[".repeat(255_000) + "[EMAIL_1] jane@example.com";
    let context: Vec<Value> = (0..2).map(|_| json!({"type": "text", "text": text})).collect();
    for (name, args) in [
        ("pii_redaction", json!({})),
        ("pii_restoration", json!({"redactions": {"EMAIL_1": "x@y.z"}})),
    ] {
        let t0 = std::time::Instant::now();
        let r = h.rpc(
            "middleware/invoke",
            json!({"name": name, "arguments": args, "context": context}),
        );
        assert!(
            r.get("result").is_some(),
            "{name}: {}",
            r.to_string().chars().take(200).collect::<String>()
        );
        // Minutes before the fix, well under a second after it in a debug build; the bound leaves room
        // for a loaded machine.
        assert!(t0.elapsed().as_secs_f64() < 30.0, "{name} took {:?}", t0.elapsed());
    }
}
