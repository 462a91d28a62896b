//! Words for the search index: splitting (on anything not a letter or digit, and at camelCase
//! humps), lowercasing, a light English stemmer, stop words, and the small built-in table of
//! synonyms a query is widened with. Every cut is at a char boundary: suffixes are ASCII and
//! are only removed when the word ends with them.

use super::params::Params;
use super::related::Related;
use crate::middleware::fold;

/// Words that carry no meaning for finding a tool.
const STOP: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from", "is", "are", "be", "it",
    "its", "this", "that", "these", "those", "my", "me", "i", "we", "our", "you", "your", "can", "could", "would",
    "should", "please", "do", "does", "did", "what", "which", "how", "some", "any", "as", "into", "there", "have",
    "has", "had", "need", "want", "let", "so", "if", "them", "their", "was", "were", "will", "just", "then", "than",
    "also", "use", "tool", "s", "t", "e", "g", "ll", "re", "ve", "d", "m",
];

/// Groups of words that name the same action or thing, by their stems. A query word in a group
/// also looks for the group's other words (at a lower weight); the first word of a line is the
/// group's usual name. General vocabulary, not any one catalog's.
const SYNONYMS: &[&[&str]] = &[
    // actions (the first `ACTIONS` groups)
    &[
        "create", "add", "new", "make", "open", "start", "generate", "insert", "write", "post", "compose", "draft",
        "append", "set up",
    ],
    &[
        "delete", "remove", "drop", "erase", "forget", "destroy", "trash", "discard", "purge", "unset", "clear",
    ],
    &[
        "list",
        "find",
        "search",
        "show",
        "browse",
        "enumerate",
        "look",
        "lookup",
        "query",
        "filter",
        "all",
    ],
    &[
        "get", "fetch", "read", "retrieve", "show", "view", "see", "inspect", "look", "detail", "describe", "open",
        "load",
    ],
    &[
        "update", "edit", "change", "modify", "set", "patch", "alter", "adjust", "switch", "rewrite", "replace",
    ],
    &["send", "post", "message", "notify", "reply", "tell"],
    &["run", "execute", "trigger", "launch", "invoke", "rerun", "start"],
    &["cancel", "stop", "abort", "terminate", "end", "halt", "kill"],
    &["move", "rename", "relocate", "transfer"],
    &["close", "resolve", "finish", "complete", "done"],
    &["download", "export", "save"],
    &["upload", "attach", "import"],
    &["copy", "duplicate", "clone", "fork"],
    &["assign", "reassign", "owner", "assignee"],
    // things
    &["directory", "folder", "dir"],
    &["repository", "repo", "project"],
    &["issue", "ticket", "bug", "problem", "incident"],
    &["page", "doc", "document", "article", "wiki", "note"],
    &["organization", "org", "company", "workspace"],
    &[
        "user",
        "people",
        "person",
        "member",
        "collaborator",
        "account",
        "who",
        "teammate",
    ],
    &["comment", "remark", "reply", "note", "feedback"],
    &["label", "tag"],
    &["block", "paragraph", "content", "body"],
    &["image", "picture", "photo", "screenshot", "snapshot", "capture"],
    &["dialog", "popup", "modal", "alert", "prompt", "confirm"],
    &["secret", "credential", "password", "token", "key", "leak"],
    &["event", "meeting", "appointment"],
    &["email", "mail", "inbox", "e-mail"],
    &["channel", "conversation", "chat", "room"],
    &["invoice", "bill"],
    &["payment", "charge", "pay", "checkout"],
    &["balance", "fund", "money"],
    &["me", "whoami", "self", "myself", "authenticated", "logged"],
    &["worklog", "hour", "timesheet", "time spent"],
    &["monitor", "check", "watch", "uptime", "ping"],
    &["price", "cost", "amount", "dollar", "fee"],
    &["refund", "reimburse"],
    &["coupon", "discount", "promo", "promotion", "voucher"],
    &["subscription", "plan", "recurring", "monthly", "annual"],
    &["customer", "buyer", "client", "shopper"],
    &["log", "logs", "trace", "output"],
    &["error", "exception", "crash", "failure", "fail"],
    &["release", "version", "deploy", "ship"],
    &["documentation", "doc", "guide", "manual", "reference"],
    &["database", "db", "table", "sql", "postgres", "row", "record"],
    &["url", "link", "address", "website", "site", "webpage"],
    &["navigate", "go", "visit", "browse", "url"],
    &["click", "press", "tap", "push"],
    &["type", "enter", "fill", "input", "box", "textbox"],
    &[
        "history",
        "previous",
        "past",
        "earlier",
        "before",
        "recent",
        "happen",
        "today",
        "yesterday",
    ],
    &["schedule", "calendar", "book"],
];

/// How many of `SYNONYMS`' first groups are actions (verbs a tool's name starts with).
const ACTIONS: usize = 14;

/// `SYNONYMS` normalized once: per group, each entry's normal form (what a query word is
/// matched against) and the words the group widens a query with.
struct Table {
    norms: Vec<Vec<String>>,
    forms: Vec<Vec<String>>,
    /// Each normal form of the action groups → the groups it is in (as `actions` answers).
    actions: std::collections::HashMap<String, u32>,
}

fn table() -> &'static Table {
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let norms: Vec<Vec<String>> = SYNONYMS.iter().map(|g| g.iter().map(|w| norm(w)).collect()).collect();
        let mut actions = std::collections::HashMap::new();
        for (i, group) in norms[..ACTIONS].iter().enumerate() {
            for w in group {
                *actions.entry(w.clone()).or_insert(0) |= 1 << i;
            }
        }
        Table {
            norms,
            actions,
            forms: SYNONYMS
                .iter()
                .map(|g| {
                    let mut ws = Vec::new();
                    for w in g.iter() {
                        words(w, 4, &mut ws);
                    }
                    ws
                })
                .collect(),
        }
    })
}

/// The action groups (by position in the table) word `w` (stemmed) belongs to, as a bit set.
pub fn actions(w: &str) -> u32 {
    table().actions.get(w).copied().unwrap_or(0)
}

/// Query words that stand for several words (`pr` → `pull request`).
const PHRASES: &[(&str, &str)] = &[
    ("pr", "pull request"),
    ("mr", "merge request"),
    ("ci", "workflow action job"),
    ("dm", "direct message"),
    ("sla", "service level"),
];

/// `w` lowercased and stemmed (no stop-word check).
fn norm(w: &str) -> String {
    let mut s = fold::lower(w);
    stem_in_place(&mut s);
    s
}

/// Whether `w` (lowercased and stemmed) is a stop word.
pub fn is_stop(w: &str) -> bool {
    STOP.contains(&w)
}

/// The stop words, for an index that marks them once in its vocabulary.
pub fn stop_words() -> &'static [&'static str] {
    STOP
}

/// The words of `text`, split at non-alphanumerics and camelCase humps, lowercased, stemmed,
/// stop words left out; at most `max` of them.
pub fn words(text: &str, max: usize, out: &mut Vec<String>) {
    let mut buf = String::new();
    scan(text, max, &mut buf, |w| {
        if is_stop(w) {
            return false;
        }
        out.push(w.to_string());
        true
    });
}

/// Calls `keep` with each word of `text` (split at non-alphanumerics and camelCase humps,
/// lowercased and stemmed into `buf`, so nothing is allocated per word); `keep` answers whether
/// the word counts, and scanning stops after `max` words that count.
pub fn scan(text: &str, max: usize, buf: &mut String, mut keep: impl FnMut(&str) -> bool) {
    let mut kept = 0;
    if max == 0 {
        return;
    }
    split(text, |raw| {
        normalize(raw, buf);
        if !buf.is_empty() && keep(buf) {
            kept += 1;
        }
        kept < max
    });
}

/// `raw` (one piece of [`split`]) lowercased and stemmed into `buf`: a word as the index and
/// queries know it (empty when nothing is left).
pub fn normalize(raw: &str, buf: &mut String) {
    buf.clear();
    if raw.is_ascii() {
        buf.push_str(raw);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(raw.chars().map(fold::lower_char));
    }
    stem_in_place(buf);
}

/// Char classes for [`split`]: 0 separates words (not alphanumeric); `OTHER` is alphanumeric
/// but neither cased nor an ASCII digit (`日`, `٣`).
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 4;
const OTHER: u8 = 8;
/// The classes of the ASCII bytes (the others are read as chars).
const CLASS: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            _ => 0,
        };
        b += 1;
    }
    t
};

/// The class of the char at byte `i` of `text` (a char boundary) and its length in bytes.
#[inline]
fn class_at(text: &str, i: usize) -> (u8, usize) {
    let b = text.as_bytes()[i];
    if b < 128 {
        return (CLASS[b as usize], 1);
    }
    let c = text[i..].chars().next().unwrap_or_default();
    let class = if !c.is_alphanumeric() {
        0
    } else if c.is_lowercase() {
        LOWER
    } else if c.is_uppercase() {
        UPPER
    } else {
        OTHER
    };
    (class, c.len_utf8())
}

/// Calls `piece` with each word of `text` as written (split at non-alphanumerics and camelCase
/// humps, not lowercased) until it answers false.
pub fn split<'a>(text: &'a str, mut piece: impl FnMut(&'a str) -> bool) {
    pieces(text, |s, e| piece(&text[s..e]));
}

/// [`split`] by byte ranges.
#[inline]
pub fn pieces(text: &str, piece: impl FnMut(usize, usize) -> bool) {
    if text.is_ascii() {
        pieces_ascii(text.as_bytes(), piece)
    } else {
        pieces_chars(text, piece)
    }
}

/// The lower, upper and digit bytes of `chunk` (at most 64 ASCII bytes) as bit masks (a chunk
/// shorter than 64 bytes is padded with zeros, which are no letter or digit).
#[inline]
fn masks(chunk: &[u8]) -> (u64, u64, u64) {
    let mut padded = [0u8; 64];
    let full: &[u8; 64] = match chunk.first_chunk::<64>() {
        Some(c) => c,
        None => {
            padded[..chunk.len()].copy_from_slice(chunk);
            &padded
        }
    };
    masks64(full)
}

/// [`masks`] of 64 bytes with SSE2 (every x86-64): sixteen bytes at a time, compared as vectors.
#[cfg(target_arch = "x86_64")]
#[inline]
fn masks64(full: &[u8; 64]) -> (u64, u64, u64) {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_movemask_epi8, _mm_set1_epi8, _mm_set_epi64x,
    };
    /// Bytes of `x` in `lo..=hi` (signed compares: a byte ≥ 0x80 is in no range).
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn range(x: __m128i, lo: u8, hi: u8) -> u64 {
        let above = _mm_cmpgt_epi8(x, _mm_set1_epi8(lo as i8 - 1));
        let below = _mm_cmplt_epi8(x, _mm_set1_epi8(hi as i8 + 1));
        _mm_movemask_epi8(_mm_and_si128(above, below)) as u16 as u64
    }
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn block(b: &[u8]) -> (u64, u64, u64) {
        let x: __m128i = _mm_set_epi64x(
            i64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
            i64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
        );
        (range(x, b'a', b'z'), range(x, b'A', b'Z'), range(x, b'0', b'9'))
    }
    let (mut l, mut u, mut d) = (0u64, 0u64, 0u64);
    for (k, b) in full.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline).
        let (bl, bu, bd) = unsafe { block(b) };
        l |= bl << (16 * k);
        u |= bu << (16 * k);
        d |= bd << (16 * k);
    }
    (l, u, d)
}

/// [`masks64`] where SSE2 is not (the Worker's wasm).
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn masks64(full: &[u8; 64]) -> (u64, u64, u64) {
    masks_swar(full)
}

/// The lower, upper and digit bytes of `chunk` (at most 64 ASCII bytes) as bit masks, eight
/// bytes at a time in one integer (the last few bytes padded with zeros, which are no letter or
/// digit).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline]
fn masks_swar(chunk: &[u8]) -> (u64, u64, u64) {
    let (mut l, mut u, mut d) = (0u64, 0u64, 0u64);
    let mut add = |k: usize, x: u64| {
        // Letters of either case are the bytes that are lower letters with bit 5 set; bit 5
        // tells the case.
        let letter = in_range(x | (ONES * 0x20), b'a', b'z');
        let lower = gather((x >> 5) & ONES);
        l |= (letter & lower) << (8 * k);
        u |= (letter & !lower) << (8 * k);
        d |= in_range(x, b'0', b'9') << (8 * k);
    };
    let mut words = chunk[..chunk.len().min(64)].chunks_exact(8);
    let mut k = 0;
    for w in &mut words {
        add(k, u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]));
        k += 1;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        add(k, u64::from_le_bytes(b));
    }
    (l, u, d)
}

const ONES: u64 = 0x0101_0101_0101_0101;

/// Bit `k` set for each byte `k` of `x` (eight ASCII bytes) in `lo..=hi` (`lo` ≥ 0x30).
#[inline]
fn in_range(x: u64, lo: u8, hi: u8) -> u64 {
    // A byte's high bit: at least `lo`, and above `hi` (no carry: bytes are below 0x80).
    let ge = x + ONES * (0x80 - lo as u64);
    let gt = x + ONES * (0x7f - hi as u64);
    gather(((ge & !gt) >> 7) & ONES)
}

/// The low bits of the eight bytes of `x` (each byte 0 or 1) as one byte, byte `k` → bit `k`.
#[inline]
fn gather(x: u64) -> u64 {
    x.wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// [`pieces`] of an ASCII text, 64 bytes at a time: the bytes' classes become bit masks, where
/// words start and end (at separators and humps) is computed on the masks, and only the
/// boundaries are visited, so a word costs no branch per byte.
fn pieces_ascii(t: &[u8], piece: impl FnMut(usize, usize) -> bool) {
    let n = t.len();
    let chunk = |base: usize| {
        if base >= n {
            (0, 0, 0)
        } else {
            masks(&t[base..(base + 64).min(n)])
        }
    };
    pieces_by_masks(n, chunk, piece)
}

/// [`pieces`] of the ASCII text `t[..n]`, where `t` goes on with zeros to a multiple of 64
/// bytes and then 64 more (see [`pad`]): every chunk is read whole, none copied.
#[inline]
pub fn pieces_padded(t: &[u8], n: usize, piece: impl FnMut(usize, usize) -> bool) {
    let chunk = |base: usize| match t.get(base..).and_then(|r| r.first_chunk::<64>()) {
        Some(c) if base < n => masks64(c),
        _ => (0, 0, 0),
    };
    pieces_by_masks(n, chunk, piece)
}

/// `text` (ASCII) into `out`, followed by zeros as [`pieces_padded`] and
/// `Memo::get_or_padded` read it.
#[inline]
pub fn pad(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(text);
    out.resize(text.len().div_ceil(64) * 64 + 64, 0);
}

/// [`pieces`] of an ASCII text of `n` bytes whose 64-byte chunks' masks `chunk` gives.
#[inline(always)]
fn pieces_by_masks(n: usize, chunk: impl Fn(usize) -> (u64, u64, u64), mut piece: impl FnMut(usize, usize) -> bool) {
    let (mut l, mut u, mut d) = chunk(0);
    // The previous chunk's last byte: alphanumeric, lower or digit, upper.
    let (mut prev_a, mut prev_ld, mut prev_u) = (0u64, 0u64, 0u64);
    let mut start = 0;
    let mut base = 0;
    // Up to and including the chunk where the text ends, so a word ending there is closed.
    while base <= n {
        let next = chunk(base + 64);
        let a = l | u | d;
        let ld = l | d;
        let a1 = a << 1 | prev_a;
        let ld1 = ld << 1 | prev_ld;
        let u1 = u << 1 | prev_u;
        let l_next = l >> 1 | (next.0 & 1) << 63;
        // A hump: a capital after a lower or a digit, or the last capital of a run before a lower.
        let hump = u & (ld1 | u1 & l_next);
        let starts = a & (!a1 | hump);
        let ends = a1 & (!a | hump);
        // Each end closes the piece of the last start before it (in this chunk, or carried).
        let mut open = ends;
        while open != 0 {
            let j = open.trailing_zeros();
            let before = starts & ((1u64 << j) - 1);
            let s = if before != 0 {
                base + 63 - before.leading_zeros() as usize
            } else {
                start
            };
            if !piece(s, base + j as usize) {
                return;
            }
            open &= open - 1;
        }
        if starts != 0 {
            start = base + 63 - starts.leading_zeros() as usize;
        }
        prev_a = a >> 63;
        prev_ld = ld >> 63;
        prev_u = u >> 63;
        (l, u, d) = next;
        base += 64;
    }
}

/// [`pieces`] of any text: ASCII through a table, other chars decoded.
fn pieces_chars(text: &str, mut piece: impl FnMut(usize, usize) -> bool) {
    let n = text.len();
    let mut i = 0;
    while i < n {
        let (mut prev, mut len) = class_at(text, i);
        if prev == 0 {
            i += len;
            continue;
        }
        let mut s = i;
        i += len;
        while i < n {
            let c;
            (c, len) = class_at(text, i);
            if c == 0 {
                break;
            }
            // A hump: lower (or digit) → Upper (`getUser`), or the last capital of a run
            // before a lower (`HTTPServer` → `HTTP`, `Server`).
            if c == UPPER
                && (prev & (LOWER | DIGIT) != 0 || prev == UPPER && i + len < n && class_at(text, i + len).0 == LOWER)
            {
                if !piece(s, i) {
                    return;
                }
                s = i;
            }
            prev = c;
            i += len;
        }
        if !piece(s, i) {
            return;
        }
        i += len;
    }
}

/// [`split`] char by char: the reference it is tested against.
#[cfg(test)]
fn split_chars<'a>(text: &'a str, mut piece: impl FnMut(&'a str) -> bool) {
    let mut start = None;
    let mut prev: Option<char> = None;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if !c.is_alphanumeric() {
            if let Some(s) = start.take() {
                if !piece(&text[s..i]) {
                    return;
                }
            }
            prev = None;
            continue;
        }
        // A hump: lower → Upper (`getUser`), or the last capital of a run before a lower
        // (`HTTPServer` → `HTTP`, `Server`).
        let hump = prev.is_some_and(|p| {
            (p.is_lowercase() || p.is_ascii_digit()) && c.is_uppercase()
                || p.is_uppercase() && c.is_uppercase() && it.peek().is_some_and(|(_, n)| n.is_lowercase())
        });
        if hump {
            if let Some(s) = start {
                if !piece(&text[s..i]) {
                    return;
                }
            }
            start = Some(i);
        } else if start.is_none() {
            start = Some(i);
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        piece(&text[s..]);
    }
}

/// A light English stemmer: plurals, -ing, -ed, a final -e (`creates`, `creating`, `created`
/// and `create` → `creat`). Only ASCII suffixes are removed, so every cut is a char boundary.
pub fn stem(w: &str) -> String {
    let mut s = w.to_string();
    stem_in_place(&mut s);
    s
}

/// [`stem`] in place.
fn stem_in_place(w: &mut String) {
    let n = w.chars().count();
    if n > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if n > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
        undouble(w);
    } else if n > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
        undouble(w);
    } else if n > 4 && (w.ends_with("sses") || w.ends_with("xes") || w.ends_with("ches") || w.ends_with("shes")) {
        w.truncate(w.len() - 2);
    } else if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.truncate(w.len() - 1);
    }
    if w.len() > 3 && w.chars().count() > 3 && w.ends_with('e') && !w.ends_with("ee") {
        w.truncate(w.len() - 1);
    }
}

/// `logg` → `log`, `runn` → `run` (what -ed and -ing leave after a doubled consonant).
fn undouble(w: &mut String) {
    let mut rev = w.chars().rev();
    if let (Some(x), Some(y)) = (rev.next(), rev.next()) {
        if x == y && x.is_ascii_alphabetic() && !"aeioudlsz".contains(x) {
            w.truncate(w.len() - 1);
        }
    }
}

/// One meaning a query asks for: the word itself and what else stands for it, with weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Concept {
    /// (stemmed word, weight): the word itself at 1.0 first.
    pub forms: Vec<(String, f32)>,
}

/// Most words (not stop words) between a two-word key's words in a query.
const PAIR_GAP: usize = 2;

/// The related-words table (`related.txt`), parsed on first use.
pub(crate) fn related() -> &'static Related {
    static R: std::sync::OnceLock<Related> = std::sync::OnceLock::new();
    R.get_or_init(|| super::related::parse(super::related::TABLE, stem))
}

/// The concepts of a query: its words (at most `max`), each with its synonyms and then its
/// related words (`related.txt`: a two-word key's when the query has both words, then the
/// word's own); a phrase word (`pr`) becomes the words it stands for. Weights as `Params`
/// defaults.
pub fn concepts(query: &str, max: usize) -> Vec<Concept> {
    concepts_with(query, max, &Params::default())
}

/// [`concepts`] with the synonyms' and related words' weights of `p`.
pub fn concepts_with(query: &str, max: usize, p: &Params) -> Vec<Concept> {
    let mut raw = Vec::new();
    words(query, max, &mut raw);
    let all = raw.clone();
    // Whether `w` follows position `i` closely (`give … back`: at most PAIR_GAP words between).
    let follows = |i: usize, w: &str| all.iter().skip(i + 1).take(PAIR_GAP + 1).any(|x| x == w);
    let mut out: Vec<Concept> = Vec::new();
    for (i, w) in raw.into_iter().enumerate() {
        if let Some((_, to)) = PHRASES.iter().find(|(from, _)| *from == w) {
            let mut ws = Vec::new();
            words(to, 8, &mut ws);
            for x in ws {
                push(&mut out, Concept { forms: vec![(x, 1.0)] });
            }
            continue;
        }
        let mut forms = vec![(w.clone(), 1.0)];
        let t = table();
        for (norms, group) in t.norms.iter().zip(&t.forms) {
            if norms.contains(&w) {
                for x in group {
                    if !forms.iter().any(|(f, _)| f == x) {
                        forms.push((x.clone(), p.synonym));
                    }
                }
            }
        }
        let rel = related();
        let widen = |forms: &mut Vec<(String, f32)>, list: &[(String, f32)], weight: f32| {
            for (x, s) in list {
                if !forms.iter().any(|(f, _)| f == x) {
                    forms.push((x.clone(), weight * s));
                }
            }
        };
        for (b, list) in rel.pairs.get(&w).into_iter().flatten() {
            if follows(i, b) {
                widen(&mut forms, list, p.pair);
            }
        }
        if let Some(list) = rel.words.get(&w) {
            widen(&mut forms, list, p.related);
        }
        push(&mut out, Concept { forms });
    }
    out
}

fn push(out: &mut Vec<Concept>, c: Concept) {
    if !out.iter().any(|x| x.forms[0].0 == c.forms[0].0) {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        words(text, 100, &mut v);
        v
    }

    #[test]
    fn names_split_on_separators_and_humps() {
        assert_eq!(all("get_issue-details.v2"), ["get", "issu", "detail", "v2"]);
        assert_eq!(all("getUserHTTPServer"), ["get", "user", "http", "server"]);
        assert_eq!(all("API-retrieve-a-page"), ["api", "retriev", "pag"]);
    }

    #[test]
    fn the_stemmer_joins_forms_and_never_cuts_inside_a_char() {
        for (a, b) in [
            ("creates", "create"),
            ("creating", "created"),
            ("entities", "entity"),
            ("logged", "log"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        for w in ["丸ed", "၁ing", "ééing", "ßßed", "日本語s", "ñes"] {
            let _ = stem(w);
            let _ = all(w);
        }
    }

    #[test]
    fn masks_class_every_ascii_byte_at_every_position() {
        for b in 0u8..128 {
            for at in 0..64 {
                let mut chunk = [b' '; 64];
                chunk[at] = b;
                for len in [at + 1, 64] {
                    let (l, u, d) = masks(&chunk[..len]);
                    assert_eq!((l, u, d), masks_swar(&chunk[..len]), "{b} at {at} of {len}");
                    let c = CLASS[b as usize];
                    let bit = |m: u64| m >> at & 1 == 1;
                    assert_eq!(
                        (bit(l), bit(u), bit(d)),
                        (c == LOWER, c == UPPER, c == DIGIT),
                        "{b} at {at} of {len}"
                    );
                    assert_eq!((l | u | d) & !(1u64 << at), 0, "{b} at {at}: only it");
                }
            }
        }
    }

    #[test]
    fn split_agrees_with_reading_char_by_char() {
        let parts = [
            "get", "User", "HTTP", "Server", "v2", "_", "-", ".", " ", "x", "X", "9", "\n", "é", "É", "日本", "٣", "—",
            "’", "ß", "Ǆ", "ǅ", "ª", "İ", "Σ", "ⓐ", "Ⅸ", "\u{0345}",
        ];
        let mut seed = 7u64;
        for _ in 0..5000 {
            let mut t = String::new();
            let ascii = seed % 3 == 0;
            for _ in 0..(seed % 9 + if ascii { seed % 60 } else { 0 }) {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let k = (seed >> 33) as usize % if ascii { 13 } else { parts.len() };
                t.push_str(parts[k]);
            }
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for stop in [usize::MAX, 2] {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                split(&t, |w| {
                    a.push(w);
                    a.len() < stop
                });
                split_chars(&t, |w| {
                    b.push(w);
                    b.len() < stop
                });
                assert_eq!(a, b, "{t:?}");
            }
        }
    }

    #[test]
    fn query_words_bring_their_synonyms() {
        let c = concepts("remove the folder", 10);
        assert_eq!(c.len(), 2);
        assert!(c[0].forms.iter().any(|(f, _)| f == "delet"));
        assert!(c[1].forms.iter().any(|(f, _)| f == "directory"));
        let pr = concepts("merge my PR", 10);
        assert!(pr.iter().any(|c| c.forms[0].0 == "pull"));
    }

    #[test]
    fn query_words_bring_related_words_below_their_synonyms() {
        let weight = |c: &Concept, w: &str| c.forms.iter().find(|(f, _)| f == w).map(|(_, x)| *x);
        let c = concepts("give this buyer their money back", 10);
        let give = c.iter().find(|c| c.forms[0].0 == stem("give")).expect("give");
        let refund = weight(give, "refund").expect("give … back brings refund");
        assert!(refund < 1.0 && refund > Params::default().related);
        for q in ["give it to me", "back then, give it", "give the red shiny ball back"] {
            let alone = concepts(q, 10);
            let give = alone.iter().find(|c| c.forms[0].0 == stem("give")).expect("give");
            assert_eq!(weight(give, "refund"), None, "only with back soon after: {q}");
        }
        let r = concepts("leave a remark", 10);
        let remark = r.iter().find(|c| c.forms[0].0 == "remark").expect("remark");
        assert_eq!(
            weight(remark, "comment"),
            Some(Params::default().synonym),
            "the synonym's weight wins"
        );
    }
}
