//! Base64 (RFC 4648) in both alphabets, for the places that need it: JWTs and JWKs
//! (base64url, no padding), the 2026-07-28 mirrored headers (standard, `=?base64?…?=`), and
//! the tools' sentence vectors `mcp-sieve index` writes for a Worker's KV (standard).

/// Which of RFC 4648's two alphabets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    /// `+` and `/` (§4); written padded, read with or without padding.
    Standard,
    /// `-` and `_` (§5); written and read without padding, as JOSE uses it.
    #[cfg_attr(not(feature = "auth"), allow(dead_code))]
    Url,
}

impl Alphabet {
    fn chars(self) -> &'static [u8; 64] {
        match self {
            Alphabet::Standard => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            Alphabet::Url => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        }
    }
}

/// `bytes` in Base64 of `alphabet`.
pub fn encode(bytes: &[u8], alphabet: Alphabet) -> String {
    let chars = alphabet.chars();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(chars[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
        if alphabet == Alphabet::Standard {
            (chunk.len()..3).for_each(|_| out.push('='));
        }
    }
    out
}

/// The bytes `s` encodes in `alphabet`; `None` when it is not Base64 of that alphabet (a
/// character outside it, padding in the URL alphabet, a lone trailing sextet).
pub fn decode(s: &str, alphabet: Alphabet) -> Option<Vec<u8>> {
    let s = match alphabet {
        Alphabet::Standard => s.trim_end_matches('='),
        Alphabet::Url => s,
    };
    let (c62, c63) = match alphabet {
        Alphabet::Standard => (b'+', b'/'),
        Alphabet::Url => (b'-', b'_'),
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            _ if c == c62 => 62,
            _ if c == c63 => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, encode, Alphabet::*};

    #[test]
    fn standard_round_trips_with_padding() {
        assert_eq!(encode(b"", Standard), "");
        assert_eq!(encode(b"hello", Standard), "aGVsbG8=");
        assert_eq!(encode(b"hel", Standard), "aGVs");
        assert_eq!(encode(b"he", Standard), "aGU=");
        // RFC 4648 §10's vectors (what `mcp-sieve index` writes for the Worker to read).
        assert_eq!(encode(b"foobar", Standard), "Zm9vYmFy");
        assert_eq!(encode(b"fooba", Standard), "Zm9vYmE=");
        assert_eq!(encode(b"foob", Standard), "Zm9vYg==");
        assert_eq!(decode("aGVsbG8=", Standard).unwrap(), b"hello");
        assert_eq!(decode("aGVsbG8", Standard).unwrap(), b"hello");
        assert_eq!(decode("w6lj", Standard).unwrap(), "éc".as_bytes());
        assert!(decode("a*b=", Standard).is_none());
        assert!(decode("a", Standard).is_none(), "a lone sextet is not a byte");
    }

    #[test]
    fn url_has_no_padding_and_its_own_two_characters() {
        assert_eq!(encode(b"hello", Url), "aGVsbG8");
        assert_eq!(encode(&[0xfb, 0xff], Url), "-_8");
        assert_eq!(decode("-_8", Url).unwrap(), [0xfb, 0xff]);
        assert!(decode("aGVsbG8=", Url).is_none());
        assert!(decode("a+b/", Url).is_none());
    }
}
