//! A tool definition's indexed fields (name, title, the annotations' title, description, each
//! parameter's name and description, groups and tags), read from its JSON text
//! (`Primitive::fragment`, which serde_json wrote) by a small scanner: no tree, no tokens for
//! what is skipped (a skipped value is stepped over by its brackets and strings, eight bytes at a
//! time inside strings), strings borrowed where the text has no escapes. A field of another type
//! than the index reads counts as empty, as in a tree; of two fields of one name the later
//! counts (within `annotations`, `inputSchema` and a parameter, the first), as serde_json reads
//! them. A text the scanner finds is not JSON reads as an empty tool; what it steps over is not
//! checked as a parser would (a fragment is JSON: serde_json wrote it).

use std::borrow::Cow;

/// What the index reads of one tool.
#[derive(Debug, Default)]
pub struct ToolText<'a> {
    /// `name`.
    pub name: Cow<'a, str>,
    /// `title`.
    pub title: Cow<'a, str>,
    /// `annotations.title`.
    pub annotated: Cow<'a, str>,
    /// `description`.
    pub description: Cow<'a, str>,
    /// `inputSchema.properties`: each parameter's name and description, in order.
    pub params: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// `groups` (a loaded tool's: all its groups, also those of `_meta`).
    pub groups: Vec<Cow<'a, str>>,
    /// `tags` (a loaded tool's: without repeats).
    pub tags: Vec<Cow<'a, str>>,
}

impl<'a> ToolText<'a> {
    /// The fields of the tool definition `json` (all empty when it is not an object).
    pub fn read(json: &'a str) -> Self {
        let mut t = ToolText::default();
        t.read_into(json);
        t
    }

    /// [`ToolText::read`] into `self`, reusing its lists' room (a builder reads tool after tool).
    pub fn read_into(&mut self, json: &'a str) {
        self.clear();
        let mut s = Scan {
            t: json.as_bytes(),
            i: 0,
            text: json,
        };
        if s.tool(self).is_none() {
            self.clear();
        }
    }

    fn clear(&mut self) {
        for f in [
            &mut self.name,
            &mut self.title,
            &mut self.annotated,
            &mut self.description,
        ] {
            *f = Cow::Borrowed("");
        }
        self.params.clear();
        self.groups.clear();
        self.tags.clear();
    }
}

/// A position in a JSON text. Every method answers `None` where the text is not JSON.
struct Scan<'a> {
    t: &'a [u8],
    i: usize,
    text: &'a str,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` that is zero (exactly: no borrow reaches a set byte's).
#[inline]
fn zeros(x: u64) -> u64 {
    !(((x & !HIGHS) + !HIGHS) | x) & HIGHS
}

/// The quotes and backslashes of `b` as bits (bit `k`: byte `k`): with SSE2 (every x86-64),
/// compared as one vector.
#[cfg(target_arch = "x86_64")]
#[inline]
fn quotes16(b: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x};
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn vector(b: &[u8; 16]) -> u32 {
        let x = _mm_set_epi64x(
            i64::from_le_bytes(b[8..].try_into().unwrap_or_default()),
            i64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
        );
        let q = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let s = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(q, s)) as u32
    }
    // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline).
    unsafe { vector(b) }
}

/// [`quotes16_swar`] where SSE2 is not (the Worker's wasm).
#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn quotes16(b: &[u8; 16]) -> u32 {
    quotes16_swar(b)
}

/// [`quotes16`] as two eight-byte words.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline]
fn quotes16_swar(b: &[u8; 16]) -> u32 {
    let mut bits = 0;
    for (k, w) in b.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(w.try_into().unwrap_or_default());
        let hit = zeros(x ^ (ONES * b'"' as u64)) | zeros(x ^ (ONES * b'\\' as u64));
        // The high bit of each byte hit → bit `byte` of eight.
        bits |= (((hit >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32) << (8 * k);
    }
    bits
}

impl<'a> Scan<'a> {
    /// The next byte that is not white space (not consumed).
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.t.get(self.i) {
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(b);
            }
            self.i += 1;
        }
        None
    }

    /// Consumes `b` (after white space).
    #[inline]
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    /// Where the string whose opening quote was just consumed ends (its closing quote's
    /// position), and whether it has escapes; the quote is consumed.
    #[inline]
    fn string_end(&mut self) -> Option<(usize, bool)> {
        let t = self.t;
        let mut i = self.i;
        let mut escaped = false;
        loop {
            // Sixteen bytes at a time to the next quote or backslash, then eight, then one.
            'found: {
                while let Some(w) = t.get(i..).and_then(|r| r.first_chunk::<16>()) {
                    let hit = quotes16(w);
                    if hit != 0 {
                        i += hit.trailing_zeros() as usize;
                        break 'found;
                    }
                    i += 16;
                }
                while let Some(&w) = t.get(i..).and_then(|r| r.first_chunk::<8>()) {
                    let x = u64::from_le_bytes(w);
                    let hit = zeros(x ^ (ONES * b'"' as u64)) | zeros(x ^ (ONES * b'\\' as u64));
                    if hit != 0 {
                        i += hit.trailing_zeros() as usize / 8;
                        break 'found;
                    }
                    i += 8;
                }
            }
            match t.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some((i, escaped));
                }
                b'\\' => {
                    escaped = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
    }

    /// A string value whose opening quote was just consumed.
    #[inline]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.i;
        let (end, escaped) = self.string_end()?;
        let raw = self.text.get(start..end)?;
        if escaped {
            unescape(raw).map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(raw))
        }
    }

    /// Steps over one value of any kind.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string_end().map(drop)
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    let b = *self.t.get(self.i)?;
                    self.i += 1;
                    match b {
                        b'"' => {
                            self.string_end()?;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {
                // A number or a literal: to the next delimiter.
                let start = self.i;
                while let Some(&b) = self.t.get(self.i) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }

    /// A value read as text: a string kept, anything else stepped over and empty.
    fn text(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? == b'"' {
            self.i += 1;
            self.string()
        } else {
            self.skip().map(|_| Cow::Borrowed(""))
        }
    }

    /// Calls `field` with each key of the object that starts here (its value next, for
    /// `field` to read or skip); anything but an object is stepped over, as an empty one.
    fn object(&mut self, mut field: impl FnMut(&mut Self, Cow<'a, str>) -> Option<()>) -> Option<()> {
        if self.peek()? != b'{' {
            return self.skip();
        }
        self.i += 1;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let key = self.string()?;
            self.eat(b':')?;
            self.peek()?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object's first field `name` read as text ("" when it has none, or is no object).
    fn key_text(&mut self, name: &str) -> Option<Cow<'a, str>> {
        let mut found = None;
        self.object(|s, k| {
            if found.is_none() && k == name {
                found = Some(s.text()?);
                Some(())
            } else {
                s.skip()
            }
        })?;
        Some(found.unwrap_or_default())
    }

    /// An array's strings into `out` (anything else in it as ""); anything but an array
    /// leaves `out` empty.
    fn strings(&mut self, out: &mut Vec<Cow<'a, str>>) -> Option<()> {
        out.clear();
        if self.peek()? != b'[' {
            return self.skip();
        }
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            out.push(self.text()?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `inputSchema`: the first `properties`' parameters into `out` (cleared).
    fn schema(&mut self, out: &mut Vec<(Cow<'a, str>, Cow<'a, str>)>) -> Option<()> {
        out.clear();
        let mut seen = false;
        self.object(|s, k| {
            if seen || k != "properties" {
                return s.skip();
            }
            seen = true;
            s.object(|s, name| {
                let d = s.key_text("description")?;
                out.push((name, d));
                Some(())
            })
        })
    }

    /// The tool object, the whole text.
    fn tool(&mut self, t: &mut ToolText<'a>) -> Option<()> {
        if self.peek()? != b'{' {
            return None;
        }
        self.object(|s, k| {
            match &*k {
                "name" => t.name = s.text()?,
                "title" => t.title = s.text()?,
                "description" => t.description = s.text()?,
                "annotations" => t.annotated = s.key_text("title")?,
                "inputSchema" => s.schema(&mut t.params)?,
                "groups" => s.strings(&mut t.groups)?,
                "tags" => s.strings(&mut t.tags)?,
                _ => s.skip()?,
            }
            Some(())
        })?;
        // Then nothing but white space.
        self.peek().is_none().then_some(())
    }
}

/// The text of a JSON string's body with escapes (`raw`, between its quotes).
fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let b = rest.as_bytes();
        let c = match *b.get(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = |at: usize| u32::from_str_radix(rest.get(at..at + 4)?, 16).ok();
                let hi = hex(at + 2)?;
                let (c, used) = if (0xd800..0xdc00).contains(&hi) {
                    // A surrogate pair: `\uD83D\uDE00`.
                    if rest.get(at + 6..at + 8)? != "\\u" {
                        return None;
                    }
                    let lo = hex(at + 8)?;
                    if !(0xdc00..0xe000).contains(&lo) {
                        return None;
                    }
                    (char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00))?, 12)
                } else {
                    (char::from_u32(hi)?, 6)
                };
                out.push(c);
                rest = &rest[at + used..];
                continue;
            }
            _ => return None,
        };
        out.push(c);
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn reads_the_indexed_fields_and_skips_the_rest() {
        let t = ToolText::read(
            r#"{"name":"a_b","x":[1,{"y":null}],"title":7,"annotations":{"title":"T\"q","z":{}},
                "description":"D\nE","inputSchema":{"type":"object","properties":{"p":{"description":"P"},
                "q":{"type":"string"},"r":3}}}"#,
        );
        assert_eq!(t.name, "a_b");
        assert_eq!(t.title, "");
        assert_eq!(t.annotated, "T\"q");
        assert_eq!(t.description, "D\nE");
        let params: Vec<(&str, &str)> = t.params.iter().map(|(a, b)| (&**a, &**b)).collect();
        assert_eq!(params, [("p", "P"), ("q", ""), ("r", "")]);
        assert!(t.groups.is_empty() && t.tags.is_empty());
        let t = ToolText::read(r#"{"groups":["g\u0031","h"],"_meta":{"groups":["x"]},"tags":7}"#);
        assert_eq!(t.groups, ["g1", "h"]);
        assert!(t.tags.is_empty());
        assert!(ToolText::read("[1]").name.is_empty());
        // Of two fields of one name, the later at the top, the first within.
        let t = ToolText::read(
            r#"{"name":"a","name":"b","annotations":{"title":"t","title":"u"},
                "inputSchema":{"properties":{"p":{"description":"x","description":"y"}},"properties":{}}}"#,
        );
        assert_eq!((&*t.name, &*t.annotated), ("b", "t"));
        assert_eq!(t.params, [("p".into(), "x".into())]);
        assert!(ToolText::read(r#"{"annotations":"x","inputSchema":{"properties":[]}}"#)
            .params
            .is_empty());
    }

    #[test]
    fn quotes_are_found_at_every_position() {
        for at in 0..16 {
            for (b, hit) in [
                (b'"', true),
                (b'\\', true),
                (b'a', false),
                (0x80 | b'"', false),
                (0, false),
            ] {
                let mut w = [b'x'; 16];
                w[at] = b;
                let want = (hit as u32) << at;
                assert_eq!(quotes16(&w), want, "{b} at {at}");
                assert_eq!(quotes16_swar(&w), want, "{b} at {at}");
            }
        }
    }

    /// (name, title, annotations' title, description), parameters, groups, tags.
    type Read = (Vec<String>, Vec<(String, String)>, Vec<String>, Vec<String>);

    /// What a tree of `json` gives for each field (the reading the scanner replaces).
    fn from_tree(json: &str) -> Option<Read> {
        let v: Value = serde_json::from_str(json).ok()?;
        let o = v.as_object()?;
        let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        let first = |v: Option<&Value>, k: &str| s(v.and_then(Value::as_object).and_then(|o| o.get(k)));
        let list = |v: Option<&Value>| -> Vec<String> {
            v.and_then(Value::as_array)
                .map(|a| a.iter().map(|x| s(Some(x))).collect())
                .unwrap_or_default()
        };
        let params = o
            .get("inputSchema")
            .and_then(|x| x.get("properties"))
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.clone(), first(Some(v), "description")))
                    .collect()
            })
            .unwrap_or_default();
        Some((
            vec![
                s(o.get("name")),
                s(o.get("title")),
                first(o.get("annotations"), "title"),
                s(o.get("description")),
            ],
            params,
            list(o.get("groups")),
            list(o.get("tags")),
        ))
    }

    #[test]
    fn reads_every_catalog_tool_as_a_tree_does() {
        let mut texts: Vec<String> = Vec::new();
        for file in ["default", "public-servers", "saas-servers", "conformance"] {
            let path = format!("{}/catalog/{file}.json", env!("CARGO_MANIFEST_DIR"));
            let v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("catalog")).expect("JSON");
            texts.extend(v["tools"].as_array().into_iter().flatten().map(|t| t.to_string()));
            texts.extend(v["tools"].as_array().into_iter().flatten().map(|t| format!(" {t:#} ")));
        }
        texts.extend(
            [
                r#"{"name":"\ud83d\ude00 a\/b\\c\td\u00e9","tags":["x",1,null,{"a":"]"}],"groups":"g"}"#,
                r#"{"inputSchema":{"properties":{"a\"b":{"description":["x"]}}},"description":-1.5e3}"#,
                r#"{ "name" : "x" , "inputSchema" : { "properties" : { "p" : { } } } }"#,
                r#"{}"#,
            ]
            .map(String::from),
        );
        assert!(texts.len() > 500);
        for json in &texts {
            let t = ToolText::read(json);
            let got = (
                [&t.name, &t.title, &t.annotated, &t.description]
                    .map(|c| c.to_string())
                    .to_vec(),
                t.params
                    .iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect::<Vec<_>>(),
                t.groups.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
                t.tags.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
            );
            assert_eq!(Some(got), from_tree(json), "{json}");
        }
        for bad in ["", "{", r#"{"name":"x""#, r#"{"name":"\q"}"#, "[]", "7", r#"{"a":1}x"#] {
            let t = ToolText::read(bad);
            assert!(t.name.is_empty() && t.params.is_empty(), "{bad}");
        }
    }
}
