//! Opaque page cursors bound to the method, the filter and concerns, and the catalog version.

use crate::error::{Error, Result};

fn fnv(s: &str) -> u64 {
    fnv_on(0xcbf2_9ce4_8422_2325, s.as_bytes())
}

/// What a cursor is issued for: FNV-1a of `method`, a newline and `binding` (hashed in turn, no
/// text of them built).
fn issued_for(method: &str, binding: &str) -> u64 {
    fnv_on(fnv_on(fnv(method), b"\n"), binding.as_bytes())
}

/// FNV-1a over `bytes`, from `h`.
fn fnv_on(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A binding digested from its parts as they come (a list's filter fields, its concerns), with
/// no text of them built: each list of parts is written as its length then each part's length
/// and bytes, so two different sequences of lists do not write the same bytes.
pub struct Binding(u64);

impl Default for Binding {
    fn default() -> Self {
        Binding(fnv(""))
    }
}

impl Binding {
    /// Adds one list of parts.
    pub fn list<S: AsRef<str>>(&mut self, parts: impl ExactSizeIterator<Item = S>) {
        self.0 = fnv_on(self.0, &(parts.len() as u64).to_le_bytes());
        for p in parts {
            let p = p.as_ref().as_bytes();
            self.0 = fnv_on(fnv_on(self.0, &(p.len() as u64).to_le_bytes()), p);
        }
    }

    /// The binding's text, for [`encode`] and [`decode`].
    pub fn text(&self) -> String {
        let mut s = String::with_capacity(16);
        push_hex(&mut s, self.0, 16);
        s
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `v` in lowercase hex digits, at least `width` (at most 16) of them (`{:0width$x}`
/// without the formatter: a list's answer writes a binding and a cursor, 2% of a native
/// `tools/list`'s user time through `core::fmt`).
fn push_hex(out: &mut String, v: u64, width: usize) {
    let digits = (((64 - v.leading_zeros()) as usize).div_ceil(4))
        .max(width.min(16))
        .max(1);
    for i in (0..digits).rev() {
        out.push(char::from(HEX[((v >> (4 * i)) & 15) as usize]));
    }
}

/// The cursor for the page starting at `offset` of the list `binding` describes: hex digits only
/// (a list writes it into its answer unescaped).
pub fn encode(method: &str, binding: &str, version: u64, offset: usize) -> String {
    let mut raw = String::with_capacity(48);
    raw.push_str("1.");
    push_hex(&mut raw, issued_for(method, binding), 16);
    raw.push('.');
    push_hex(&mut raw, version, 1);
    raw.push('.');
    push_hex(&mut raw, offset as u64, 1);
    // Written into one string (not a string per byte: this runs for most list answers).
    let mut out = String::with_capacity(raw.len() * 2);
    for b in raw.bytes().map(|b| b ^ 0x5a) {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// `offset` if it lies within a list of `len` items (a forged cursor may point anywhere).
pub fn within(offset: usize, len: usize) -> Result<usize> {
    if offset > len {
        return Err(Error::params(
            "params.cursor points past the end of the list; omit it to get the first page",
        ));
    }
    Ok(offset)
}

/// The offset a cursor points at, if it was issued for the same method, binding and version.
pub fn decode(cursor: &str, method: &str, binding: &str, version: u64) -> Result<usize> {
    let bad = || Error::params("params.cursor is not a cursor this server issued; omit it to get the first page");
    if cursor.len() % 2 != 0 || cursor.len() > 128 {
        return Err(bad());
    }
    let bytes: Vec<u8> = (0..cursor.len())
        .step_by(2)
        .map(|i| {
            cursor
                .get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .map(|b| b ^ 0x5a)
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let parts: Vec<&str> = text.split('.').collect();
    let ["1", hash, ver, off] = parts.as_slice() else {
        return Err(bad());
    };
    let hash = u64::from_str_radix(hash, 16).map_err(|_| bad())?;
    let ver = u64::from_str_radix(ver, 16).map_err(|_| bad())?;
    let off = usize::from_str_radix(off, 16).map_err(|_| bad())?;
    if hash != issued_for(method, binding) {
        return Err(Error::params(
            "params.cursor was issued for another method, filter or concern configuration; send the same filter or omit the cursor",
        ));
    }
    // Only the exact text this server issues is a cursor (no other spelling of the same numbers).
    if encode(method, binding, ver, off) != cursor {
        return Err(bad());
    }
    if ver != version {
        return Err(Error::params(
            "params.cursor is stale: the catalog changed since it was issued; omit it to list again",
        ));
    }
    Ok(off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_are_what_the_formatter_writes() {
        for v in [0u64, 1, 15, 16, 255, 4096, 0x0123_4567_89ab_cdef, u64::MAX] {
            for width in [1, 16] {
                let mut s = String::new();
                push_hex(&mut s, v, width);
                assert_eq!(s, format!("{v:0width$x}"));
            }
        }
    }

    #[test]
    fn bound_to_method_binding_and_version() {
        let c = encode("tools/list", "f", 3, 50);
        assert_eq!(decode(&c, "tools/list", "f", 3).unwrap(), 50);
        // Written into answers unescaped.
        assert!(c.bytes().all(|b| b.is_ascii_hexdigit()), "{c}");
        assert!(decode(&c, "prompts/list", "f", 3)
            .unwrap_err()
            .to_string()
            .contains("another method"));
        assert!(decode(&c, "tools/list", "g", 3).is_err());
        assert!(decode(&c, "tools/list", "f", 4)
            .unwrap_err()
            .to_string()
            .contains("stale"));
        assert!(decode("zz", "tools/list", "f", 3).is_err());
        // Lowercase hex of the obfuscated text, two digits a byte.
        let raw = format!("1.{:016x}.3.32", fnv("tools/list\nf"));
        let hex: String = raw.bytes().map(|b| format!("{:02x}", b ^ 0x5a)).collect();
        assert_eq!(c, hex);
        assert!(decode("", "tools/list", "f", 3).is_err());
    }
}
