//! Word-shaped PII: secrets (known key prefixes, JSON Web Tokens, `password: ...` assignments,
//! high-entropy tokens in strict mode) and person names (a configured list, titles, "my name
//! is", cue words in strict mode).

use super::PiiType;

pub(super) fn secrets(t: &[u8], strict: bool, push: &mut dyn FnMut(usize, usize, PiiType)) {
    let tok = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
    let mut i = 0;
    while i < t.len() {
        if !tok(t[i]) || (i > 0 && (tok(t[i - 1]) || t[i - 1] >= 0x80)) {
            i += 1;
            continue;
        }
        let mut e = i;
        while e < t.len() && tok(t[e]) {
            e += 1;
        }
        let w = &t[i..e];
        let tail = |p: &[u8]| w.len().saturating_sub(p.len());
        // Every known key format is at least 15 characters long: most words skip the checks.
        let known = w.len() >= 15
            && ((w.starts_with(b"sk-") && tail(b"sk-") >= 20)
                || ([&b"sk_live_"[..], b"sk_test_", b"pk_live_", b"rk_live_"]
                    .iter()
                    .any(|p| w.starts_with(p) && tail(p) >= 16))
                || ([&b"ghp_"[..], b"gho_", b"ghu_", b"ghs_", b"ghr_"]
                    .iter()
                    .any(|p| w.starts_with(p) && tail(p) >= 30))
                || (w.starts_with(b"github_pat_") && tail(b"github_pat_") >= 22)
                || ((w.starts_with(b"AKIA") || w.starts_with(b"ASIA"))
                    && w.len() == 20
                    && w[4..].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()))
                || (w.len() > 5
                    && w.starts_with(b"xox")
                    && matches!(w[3], b'a' | b'b' | b'p' | b'r' | b's')
                    && w[4] == b'-'
                    && tail(b"xoxb-") >= 10)
                || (w.starts_with(b"AIza") && w.len() == 39)
                || (w.starts_with(b"glpat-") && tail(b"glpat-") >= 20));
        // JSON Web Tokens: three base64url segments, the first two starting with "eyJ".
        if w.starts_with(b"eyJ") && t.get(e) == Some(&b'.') {
            let mut j = e;
            let mut parts = 1;
            while t.get(j) == Some(&b'.') && t.get(j + 1).is_some_and(|&c| tok(c)) && parts < 3 {
                j += 1;
                while j < t.len() && tok(t[j]) {
                    j += 1;
                }
                parts += 1;
            }
            if parts == 3 && j - i >= 30 {
                push(i, j, PiiType::Secret);
                i = j;
                continue;
            }
        }
        if known || (strict && w.len() >= 32 && high_entropy(w)) {
            push(i, e, PiiType::Secret);
        } else if let Some((vs, ve)) = assigned_secret(t, i, e, strict) {
            push(vs, ve, PiiType::Secret);
            i = ve;
            continue;
        }
        i = e;
    }
}

/// `password: hunter2!x`, `api_key="..."`: the value after a secret-like key.
fn assigned_secret(t: &[u8], s: usize, e: usize, strict: bool) -> Option<(usize, usize)> {
    const KEYS: [&str; 10] = [
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "access_key",
        "client_secret",
    ];
    // Cheap test first: is the word followed by ':' or '='?
    let mut j = e;
    while matches!(t.get(j), Some(b'"' | b'\'')) {
        j += 1;
    }
    while t.get(j) == Some(&b' ') {
        j += 1;
    }
    if !matches!(t.get(j), Some(b':' | b'=')) {
        return None;
    }
    let word = std::str::from_utf8(&t[s..e]).ok()?.to_ascii_lowercase();
    let key = |k: &str| {
        word == k || (word.ends_with(k) && matches!(word.as_bytes().get(word.len() - k.len() - 1), Some(b'_' | b'-')))
    };
    if !KEYS.iter().any(|k| key(k)) {
        return None;
    }
    j += 1;
    while matches!(t.get(j), Some(b' ' | b'"' | b'\'')) {
        j += 1;
    }
    let vs = j;
    while j < t.len() && !t[j].is_ascii_whitespace() && !matches!(t[j], b'"' | b'\'' | b',' | b';') {
        j += 1;
    }
    while j > vs && matches!(t[j - 1], b'.' | b')') {
        j -= 1;
    }
    let min = if strict { 6 } else { 8 };
    let v = &t[vs..j];
    (v.len() >= min
        && v.iter().any(u8::is_ascii_digit) | v.iter().any(|c| c.is_ascii_punctuation())
        && std::str::from_utf8(v).is_ok())
    .then_some((vs, j))
}

fn high_entropy(w: &[u8]) -> bool {
    let mut counts = [0u32; 256];
    w.iter().for_each(|&c| counts[c as usize] += 1);
    let n = w.len() as f64;
    let h: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum();
    h >= 3.5 && w.iter().any(u8::is_ascii_digit) && w.iter().any(u8::is_ascii_alphabetic)
}

pub(super) fn names(text: &str, list: &[String], push: &mut dyn FnMut(usize, usize, PiiType)) {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    for name in list.iter().filter(|n| !n.trim().is_empty()) {
        let mut from = 0;
        while let Some(k) = text[from..].find(name.as_str()) {
            let s = from + k;
            let e = s + name.len();
            if !word(text[..s].chars().next_back()) && !word(text[e..].chars().next()) {
                push(s, e, PiiType::Person);
            }
            from = s + name.len().max(1);
        }
    }
}

/// A capitalised word at byte `i` (`Jane`, `O'Brien`, `Smith-Jones`, `José`): its end.
fn cap_word(text: &str, i: usize) -> Option<usize> {
    let mut chars = text[i..].char_indices();
    let (_, first) = chars.next()?;
    if !first.is_uppercase() {
        return None;
    }
    let mut end = i + first.len_utf8();
    let mut lower = 0;
    for (k, c) in chars {
        if c.is_lowercase() {
            lower += 1;
            end = i + k + c.len_utf8();
        } else if (c == '\'' || c == '-') && text[i + k + 1..].chars().next().is_some_and(char::is_alphabetic) {
            end = i + k + 1;
        } else if c.is_uppercase() && text[i..i + k].ends_with(['\'', '-']) {
            end = i + k + c.len_utf8();
        } else {
            break;
        }
    }
    (lower >= 1).then_some(end)
}

/// 1-3 capitalised words from `i` (at least `min`): the end of the last.
fn cap_words(text: &str, i: usize, min: usize) -> Option<usize> {
    let mut end = cap_word(text, i)?;
    let mut n = 1;
    while n < 3 && text[end..].starts_with(' ') {
        match cap_word(text, end + 1) {
            Some(e) if !STOP_CAPS.contains(&&text[end + 1..e]) => {
                end = e;
                n += 1;
            }
            _ => break,
        }
    }
    (n >= min).then_some(end)
}

const STOP_CAPS: [&str; 12] = [
    "I",
    "The",
    "This",
    "That",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "Please",
];

/// Names after titles and "my name is" (both levels), and after cue words (strict).
pub(super) fn persons(text: &str, strict: bool, push: &mut dyn FnMut(usize, usize, PiiType)) {
    const TITLES: [&str; 6] = ["Mr. ", "Mrs. ", "Ms. ", "Dr. ", "Prof. ", "Mx. "];
    const PHRASES: [&str; 4] = ["my name is ", "My name is ", "name: ", "Name: "];
    const CUES: [&str; 18] = [
        "for ", "with ", "from ", "to ", "by ", "contact ", "Contact ", "Dear ", "dear ", "cc ", "and ", "ask ",
        "call ", "tell ", "met ", "Hi ", "Hello ", "Thanks ",
    ];
    let bytes = text.as_bytes();
    let boundary = |s: usize| s == 0 || !bytes[s - 1].is_ascii_alphanumeric();
    for (list, min) in [(&TITLES[..], 1), (&PHRASES[..], 1)] {
        for cue in list {
            for (s, _) in text.match_indices(cue) {
                let w = s + cue.len();
                if boundary(s) {
                    if let Some(e) = cap_words(text, w, min) {
                        push(w, e, PiiType::Person);
                    }
                }
            }
        }
    }
    if strict {
        for cue in CUES {
            for (s, _) in text.match_indices(cue) {
                let w = s + cue.len();
                if boundary(s) {
                    if let Some(e) = cap_words(text, w, 2) {
                        push(w, e, PiiType::Person);
                    }
                }
            }
        }
    }
}
