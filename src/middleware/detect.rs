//! PII detectors: hand-written scanners over the bytes of a text (no regex engine), each with the
//! validation its type allows — Luhn and issuer prefixes for payment cards, ISO 13616 mod-97 and
//! country lengths for IBANs, SSA rules for SSNs, octet ranges for IPv4, the `Ipv6Addr` grammar for IPv6,
//! known key prefixes for secrets. Overlaps resolve by type priority, then length.

mod ip;
mod words;

use words::{names, persons, secrets};

/// A kind of PII.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiType {
    /// API keys, tokens, passwords.
    Secret,
    /// Email addresses.
    Email,
    /// IBANs (checksum-valid).
    Iban,
    /// Payment card numbers (Luhn-valid).
    Card,
    /// US Social Security numbers.
    Ssn,
    /// IPv6 addresses.
    Ipv6,
    /// IPv4 addresses.
    Ipv4,
    /// Phone numbers.
    Phone,
    /// Person names (configured, or by cue words).
    Person,
}

impl PiiType {
    /// Every type, by priority (earlier wins an overlap).
    pub const ALL: [PiiType; 9] = [
        PiiType::Secret,
        PiiType::Email,
        PiiType::Iban,
        PiiType::Card,
        PiiType::Ssn,
        PiiType::Ipv6,
        PiiType::Ipv4,
        PiiType::Phone,
        PiiType::Person,
    ];

    /// The handle prefix, e.g. `EMAIL` in `[EMAIL_1]`.
    pub fn label(self) -> &'static str {
        match self {
            PiiType::Secret => "SECRET",
            PiiType::Email => "EMAIL",
            PiiType::Iban => "IBAN",
            PiiType::Card => "CARD",
            PiiType::Ssn => "SSN",
            PiiType::Ipv6 => "IPV6",
            PiiType::Ipv4 => "IPV4",
            PiiType::Phone => "PHONE",
            PiiType::Person => "PERSON",
        }
    }

    /// The wire name of the type (`metadata.entities[].type`, the `types` argument).
    pub fn wire(self) -> &'static str {
        match self {
            PiiType::Secret => "secret",
            PiiType::Email => "email",
            PiiType::Iban => "iban",
            PiiType::Card => "payment_card",
            PiiType::Ssn => "ssn",
            PiiType::Ipv6 => "ipv6",
            PiiType::Ipv4 => "ipv4",
            PiiType::Phone => "phone",
            PiiType::Person => "person",
        }
    }

    /// The type with wire name `s`.
    pub fn from_wire(s: &str) -> Option<PiiType> {
        Self::ALL.into_iter().find(|t| t.wire() == s)
    }
}

/// One detected value: byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Start byte.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
    /// What it is.
    pub kind: PiiType,
}

/// Detection settings.
#[derive(Debug, Clone, Default)]
pub struct Options<'a> {
    /// `strict`: also unformatted SSNs and phone numbers, cards without a known issuer prefix,
    /// high-entropy tokens as secrets, and capitalised names after cue words.
    pub strict: bool,
    /// Names always redacted as `PERSON`.
    pub names: &'a [String],
    /// Types to look for (empty: all).
    pub types: &'a [PiiType],
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether a number may start at `i`: not inside a word or a longer number.
fn num_start(t: &[u8], i: usize) -> bool {
    if i == 0 {
        return true;
    }
    let p = t[i - 1];
    if alnum(p) || p >= 0x80 {
        return false;
    }
    !(matches!(p, b'-' | b'.' | b'/' | b',') && i >= 2 && t[i - 2].is_ascii_digit())
}

/// Whether a number may end at `i` (exclusive).
fn num_end(t: &[u8], i: usize) -> bool {
    match t.get(i) {
        None => true,
        Some(&c) if alnum(c) || c >= 0x80 => false,
        Some(b'-' | b'.' | b'/' | b',') => !t.get(i + 1).is_some_and(u8::is_ascii_digit),
        _ => true,
    }
}

/// Luhn checksum of a digit string.
pub fn luhn(digits: &[u8]) -> bool {
    let mut sum = 0u32;
    for (i, d) in digits.iter().rev().enumerate() {
        let mut v = u32::from(d - b'0');
        if i % 2 == 1 {
            v *= 2;
            if v > 9 {
                v -= 9;
            }
        }
        sum += v;
    }
    sum % 10 == 0
}

fn card_issuer(d: &[u8]) -> bool {
    let n = |k: usize| d[..k].iter().fold(0u32, |a, c| a * 10 + u32::from(c - b'0'));
    let len = d.len();
    match d[0] {
        b'4' => matches!(len, 13 | 16 | 19),
        b'5' => (51..=55).contains(&n(2)) && len == 16,
        b'2' => (2221..=2720).contains(&n(4)) && len == 16,
        b'3' => {
            (matches!(n(2), 34 | 37) && len == 15)
                || ((3528..=3589).contains(&n(4)) && len >= 16)
                || (matches!(n(2), 36 | 38 | 39) && len >= 14)
                || ((300..=305).contains(&n(3)) && len >= 14)
        }
        b'6' => (n(4) == 6011 || n(2) == 65 || (644..=649).contains(&n(3)) || n(2) == 62) && len >= 16,
        _ => false,
    }
}

/// ISO 13616 check of an IBAN given without spaces (uppercase).
pub fn iban_valid(s: &[u8]) -> bool {
    if s.len() < 15
        || s.len() > 34
        || !s[..2].iter().all(u8::is_ascii_uppercase)
        || !s[2..4].iter().all(u8::is_ascii_digit)
    {
        return false;
    }
    if let Some(len) = iban_length(&s[..2]) {
        if len != s.len() {
            return false;
        }
    }
    let mut rem = 0u32;
    for &c in s[4..].iter().chain(&s[..4]) {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// IBAN lengths by country (SWIFT registry, the common ones).
fn iban_length(cc: &[u8]) -> Option<usize> {
    const TABLE: &[(&[u8; 2], usize)] = &[
        (b"AD", 24),
        (b"AE", 23),
        (b"AT", 20),
        (b"BE", 16),
        (b"BG", 22),
        (b"BH", 22),
        (b"BR", 29),
        (b"CH", 21),
        (b"CY", 28),
        (b"CZ", 24),
        (b"DE", 22),
        (b"DK", 18),
        (b"EE", 20),
        (b"ES", 24),
        (b"FI", 18),
        (b"FO", 18),
        (b"FR", 27),
        (b"GB", 22),
        (b"GI", 23),
        (b"GL", 18),
        (b"GR", 27),
        (b"HR", 21),
        (b"HU", 28),
        (b"IE", 22),
        (b"IL", 23),
        (b"IS", 26),
        (b"IT", 27),
        (b"KW", 30),
        (b"KZ", 20),
        (b"LB", 28),
        (b"LI", 21),
        (b"LT", 20),
        (b"LU", 20),
        (b"LV", 21),
        (b"MC", 27),
        (b"MT", 31),
        (b"NL", 18),
        (b"NO", 15),
        (b"PL", 28),
        (b"PT", 25),
        (b"QA", 29),
        (b"RO", 24),
        (b"RS", 22),
        (b"SA", 24),
        (b"SE", 24),
        (b"SI", 19),
        (b"SK", 24),
        (b"SM", 27),
        (b"TR", 26),
        (b"UA", 29),
    ];
    TABLE.iter().find(|(c, _)| c[..] == *cc).map(|(_, l)| *l)
}

/// All PII spans of `text`, sorted, non-overlapping.
pub fn detect(text: &str, opts: &Options) -> Vec<Span> {
    let t = text.as_bytes();
    let want = |k: PiiType| opts.types.is_empty() || opts.types.contains(&k);
    let mut found: Vec<Span> = Vec::new();
    let mut push = |start: usize, end: usize, kind: PiiType| found.push(Span { start, end, kind });
    if want(PiiType::Secret) {
        secrets(t, opts.strict, &mut push);
    }
    if want(PiiType::Email) {
        emails(t, &mut push);
    }
    if want(PiiType::Iban) {
        ibans(t, &mut push);
    }
    if want(PiiType::Ipv6) {
        ipv6(t, &mut push);
    }
    if [PiiType::Ssn, PiiType::Card, PiiType::Ipv4, PiiType::Phone]
        .into_iter()
        .any(want)
    {
        numbers(t, opts.strict, &|k| want(k), &mut push);
    }
    if want(PiiType::Person) {
        names(text, opts.names, &mut push);
        persons(text, opts.strict, &mut push);
    }
    resolve(found)
}

/// Keeps the best of overlapping spans: higher priority type, then longer, then earlier.
fn resolve(mut found: Vec<Span>) -> Vec<Span> {
    crate::sort::sort_by(&mut found, |a, b| {
        (a.kind, std::cmp::Reverse(a.end - a.start), a.start).cmp(&(
            b.kind,
            std::cmp::Reverse(b.end - b.start),
            b.start,
        ))
    });
    let mut chosen: Vec<Span> = Vec::with_capacity(found.len());
    for s in found {
        let pos = chosen.partition_point(|c| c.start < s.start);
        let clash_prev = pos > 0 && chosen[pos - 1].end > s.start;
        let clash_next = chosen.get(pos).is_some_and(|c| c.start < s.end);
        if !clash_prev && !clash_next {
            chosen.insert(pos, s);
        }
    }
    chosen
}

fn emails(t: &[u8], push: &mut dyn FnMut(usize, usize, PiiType)) {
    let local = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-');
    let domain = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-');
    let mut last_end = 0;
    for at in memchr_iter(b'@', t) {
        if at < last_end {
            continue;
        }
        let mut s = at;
        while s > last_end && local(t[s - 1]) {
            s -= 1;
        }
        while s < at && t[s] == b'.' {
            s += 1;
        }
        let mut e = at + 1;
        while e < t.len() && domain(t[e]) {
            e += 1;
        }
        while e > at + 1 && matches!(t[e - 1], b'.' | b'-') {
            e -= 1;
        }
        if s == at || e <= at + 1 {
            continue;
        }
        let dom = &t[at + 1..e];
        let Some(dot) = dom.iter().rposition(|&c| c == b'.') else {
            continue;
        };
        let tld = &dom[dot + 1..];
        if tld.len() < 2
            || !tld.iter().all(u8::is_ascii_alphabetic)
            || dom.windows(2).any(|w| w == b"..")
            || dom[0] == b'.'
        {
            continue;
        }
        push(s, e, PiiType::Email);
        last_end = e;
    }
}

fn memchr_iter(needle: u8, t: &[u8]) -> impl Iterator<Item = usize> + '_ {
    t.iter().enumerate().filter(move |(_, &c)| c == needle).map(|(i, _)| i)
}

fn ibans(t: &[u8], push: &mut dyn FnMut(usize, usize, PiiType)) {
    let mut i = 0;
    while i + 4 <= t.len() {
        if !(t[i].is_ascii_uppercase()
            && t[i + 1].is_ascii_uppercase()
            && t[i + 2].is_ascii_digit()
            && t[i + 3].is_ascii_digit())
            || (i > 0 && (alnum(t[i - 1]) || t[i - 1] >= 0x80))
        {
            i += 1;
            continue;
        }
        // Collect up to 34 characters, allowing single spaces between groups.
        let mut compact = Vec::with_capacity(34);
        let mut ends = Vec::with_capacity(34);
        let mut j = i;
        while j < t.len() && compact.len() < 34 {
            let c = t[j];
            if c.is_ascii_uppercase() || c.is_ascii_digit() {
                compact.push(c);
                ends.push(j + 1);
                j += 1;
            } else if c == b' '
                && j + 1 < t.len()
                && (t[j + 1].is_ascii_uppercase() || t[j + 1].is_ascii_digit())
                && compact.len() >= 4
            {
                j += 1;
            } else {
                break;
            }
        }
        let lens: Vec<usize> = match iban_length(&compact[..2]) {
            Some(l) => vec![l],
            None => (15..=compact.len().min(34)).rev().collect(),
        };
        let hit = lens.into_iter().find(|&l| {
            l <= compact.len() && {
                let end = ends[l - 1];
                num_end_alnum(t, end) && iban_valid(&compact[..l])
            }
        });
        match hit {
            Some(l) => {
                push(i, ends[l - 1], PiiType::Iban);
                i = ends[l - 1];
            }
            None => i += 1,
        }
    }
}

fn num_end_alnum(t: &[u8], i: usize) -> bool {
    t.get(i).is_none_or(|&c| !(alnum(c) || c >= 0x80))
}

fn ipv6(t: &[u8], push: &mut dyn FnMut(usize, usize, PiiType)) {
    let part = |c: u8| c.is_ascii_hexdigit() || c == b':' || c == b'.';
    let mut i = 0;
    while i < t.len() {
        if t[i] != b':' {
            i += 1;
            continue;
        }
        let mut s = i;
        while s > 0 && part(t[s - 1]) {
            s -= 1;
        }
        let mut e = i;
        while e < t.len() && part(t[e]) {
            e += 1;
        }
        let next = e;
        while s < e && t[s] == b'.' {
            s += 1;
        }
        let before_ok = s == 0 || !(alnum(t[s - 1]) || t[s - 1] >= 0x80);
        let after_ok = num_end_alnum(t, e);
        if before_ok && after_ok && t[s..e].iter().filter(|&&c| c == b':').count() >= 2 {
            // Trim sentence punctuation: a final '.' or a single ':' that is not '::'.
            let mut cands = vec![e];
            if t[e - 1] == b'.' {
                cands.push(e - 1);
            }
            if t[e - 1] == b':' && t[e - 2] != b':' {
                cands.push(e - 1);
            }
            for end in cands {
                let s_txt = std::str::from_utf8(&t[s..end]).unwrap_or_default();
                if s_txt.bytes().filter(u8::is_ascii_hexdigit).count() >= 2 && ip::is_ipv6(s_txt) {
                    push(s, end, PiiType::Ipv6);
                    break;
                }
            }
        }
        i = next.max(i + 1);
    }
}

fn digits_at(t: &[u8], i: usize, n: usize) -> bool {
    i + n <= t.len() && t[i..i + n].iter().all(u8::is_ascii_digit)
}

fn val(t: &[u8]) -> u32 {
    t.iter()
        .fold(0u32, |a, c| a.saturating_mul(10).saturating_add(u32::from(c - b'0')))
}

fn ssn_ok(area: &[u8], group: &[u8], serial: &[u8]) -> bool {
    let a = val(area);
    // 9xx areas are ITINs, also personal tax ids.
    a != 0 && a != 666 && val(group) != 0 && val(serial) != 0
}

/// Numbers: SSNs, payment cards, IPv4 addresses and phone numbers.
fn numbers(t: &[u8], strict: bool, want: &dyn Fn(PiiType) -> bool, push: &mut dyn FnMut(usize, usize, PiiType)) {
    for i in 0..t.len() {
        let c = t[i];
        let starts_num = c.is_ascii_digit() && num_start(t, i);
        if starts_num {
            if want(PiiType::Ssn) {
                ssn(t, i, strict, push);
            }
            if want(PiiType::Card) {
                card(t, i, strict, push);
            }
            if want(PiiType::Ipv4) {
                ipv4(t, i, push);
            }
        }
        if want(PiiType::Phone) && (starts_num || ((c == b'+' || c == b'(') && num_start(t, i))) {
            phone(t, i, strict, push);
        }
    }
}

fn ssn(t: &[u8], i: usize, strict: bool, push: &mut dyn FnMut(usize, usize, PiiType)) {
    if digits_at(t, i, 3) && matches!(t.get(i + 3), Some(b'-' | b' ')) {
        let sep = t[i + 3];
        if digits_at(t, i + 4, 2)
            && t.get(i + 6) == Some(&sep)
            && digits_at(t, i + 7, 4)
            && num_end(t, i + 11)
            && ssn_ok(&t[i..i + 3], &t[i + 4..i + 6], &t[i + 7..i + 11])
        {
            push(i, i + 11, PiiType::Ssn);
        }
    } else if strict
        && digits_at(t, i, 9)
        && num_end(t, i + 9)
        && ssn_ok(&t[i..i + 3], &t[i + 3..i + 5], &t[i + 5..i + 9])
    {
        push(i, i + 9, PiiType::Ssn);
    }
}

fn card(t: &[u8], i: usize, strict: bool, push: &mut dyn FnMut(usize, usize, PiiType)) {
    let mut digits = Vec::with_capacity(19);
    let mut j = i;
    let mut sep: Option<u8> = None;
    let mut best = None;
    while j < t.len() && digits.len() < 19 {
        let c = t[j];
        if c.is_ascii_digit() {
            digits.push(c);
            j += 1;
            if (13..=19).contains(&digits.len()) && num_end(t, j) {
                best = Some((j, digits.len()));
            }
        } else if matches!(c, b' ' | b'-')
            && sep.is_none_or(|s| s == c)
            && t.get(j + 1).is_some_and(u8::is_ascii_digit)
            && !digits.is_empty()
        {
            sep = Some(c);
            j += 1;
        } else {
            break;
        }
    }
    if let Some((end, n)) = best {
        let d = &digits[..n];
        if luhn(d) && (strict || card_issuer(d)) && d.iter().any(|&c| c != d[0]) {
            push(i, end, PiiType::Card);
        }
    }
}

fn ipv4(t: &[u8], i: usize, push: &mut dyn FnMut(usize, usize, PiiType)) {
    let mut j = i;
    for octet in 0..4 {
        let s = j;
        while j < t.len() && t[j].is_ascii_digit() && j - s < 3 {
            j += 1;
        }
        let n = j - s;
        if n == 0 || (n > 1 && t[s] == b'0') || val(&t[s..j]) > 255 || t.get(j).is_some_and(u8::is_ascii_digit) {
            return;
        }
        if octet < 3 {
            if t.get(j) != Some(&b'.') {
                return;
            }
            j += 1;
        }
    }
    if num_end(t, j) {
        push(i, j, PiiType::Ipv4);
    }
}

fn phone(t: &[u8], i: usize, strict: bool, push: &mut dyn FnMut(usize, usize, PiiType)) {
    if t[i] == b'+' {
        // +CC then groups: digits with single separators or one parenthesised group.
        let mut j = i + 1;
        let mut n = 0;
        let mut groups = 0;
        let mut end = None;
        let mut open = false;
        if !t.get(j).is_some_and(|c| (b'1'..=b'9').contains(c)) {
            return;
        }
        while j < t.len() && n <= 15 {
            let c = t[j];
            if c.is_ascii_digit() {
                let s = j;
                while j < t.len() && t[j].is_ascii_digit() {
                    j += 1;
                }
                n += j - s;
                groups += 1;
                if open && t.get(j) == Some(&b')') {
                    open = false;
                    j += 1;
                }
                if (8..=15).contains(&n) && num_end(t, j) {
                    end = Some(j);
                }
            } else if (matches!(c, b' ' | b'-' | b'.')
                && t.get(j + 1).is_some_and(|d| d.is_ascii_digit() || *d == b'('))
                || (c == b'(' && !open && t.get(j + 1).is_some_and(u8::is_ascii_digit))
            {
                open |= c == b'(';
                j += 1;
            } else {
                break;
            }
        }
        if let Some(e) = end {
            if groups >= 2 || strict || n >= 10 {
                push(i, e, PiiType::Phone);
            }
        }
        return;
    }
    // North American: (ddd) ddd-dddd, ddd-ddd-dddd, ddd.ddd.dddd, ddd ddd dddd, 1-ddd-ddd-dddd.
    let mut j = i;
    if t[j] == b'1'
        && matches!(t.get(j + 1), Some(b'-' | b' ' | b'.'))
        && (digits_at(t, j + 2, 3) || t.get(j + 2) == Some(&b'('))
    {
        j += 2;
    }
    let area_ok = |k: usize| digits_at(t, k, 3) && t[k] >= b'2';
    let rest = |k: usize, sep: Option<u8>| -> Option<usize> {
        // ddd SEP dddd, exchange starting 2-9
        if !(digits_at(t, k, 3) && t[k] >= b'2') {
            return None;
        }
        let s = t.get(k + 3).copied()?;
        if !matches!(s, b'-' | b'.' | b' ') || sep.is_some_and(|x| x != s) || !digits_at(t, k + 4, 4) {
            return None;
        }
        num_end(t, k + 8).then_some(k + 8)
    };
    let end = if t.get(j) == Some(&b'(') {
        if area_ok(j + 1) && t.get(j + 4) == Some(&b')') {
            let k = if t.get(j + 5) == Some(&b' ') { j + 6 } else { j + 5 };
            rest(k, None)
        } else {
            None
        }
    } else if area_ok(j) && matches!(t.get(j + 3), Some(b'-' | b'.' | b' ')) {
        rest(j + 4, Some(t[j + 3]))
    } else if strict && area_ok(j) && digits_at(t, j, 10) && num_end(t, j + 10) && t[j + 3] >= b'2' {
        Some(j + 10)
    } else {
        None
    };
    if let Some(e) = end {
        push(i, e, PiiType::Phone);
        return;
    }
    // National formats starting with 0: 0dd dddd dddd, 0ddd ddd dddd (10-11 digits, >= 3 groups).
    if t[i] == b'0' {
        let mut j = i;
        let (mut n, mut groups) = (0, 0);
        let mut sep = None;
        while j < t.len() {
            let s = j;
            while j < t.len() && t[j].is_ascii_digit() {
                j += 1;
            }
            if j == s {
                break;
            }
            n += j - s;
            groups += 1;
            match t.get(j) {
                Some(&c)
                    if matches!(c, b' ' | b'-')
                        && sep.is_none_or(|x| x == c)
                        && t.get(j + 1).is_some_and(u8::is_ascii_digit)
                        && n < 11 =>
                {
                    sep = Some(c);
                    j += 1;
                }
                _ => break,
            }
        }
        if (10..=11).contains(&n) && groups >= 3 && num_end(t, j) {
            push(i, j, PiiType::Phone);
        }
    }
}
