//! Base64 (RFC 4648) in both alphabets, for the places that need it: JWTs and JWKs
//! (base64url, no padding), the 2026-07-28 mirrored headers (standard, `=?base64?…?=`), and
//! the tools' sentence vectors `mcp-sieve index` writes for a Worker's KV (standard).

/// Which of RFC 4648's two alphabets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    /// `+` and `/` (§4); written padded, read with or without padding (but not with wrong padding).
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

/// The bytes `s` encodes in `alphabet`; `None` when it is not the one Base64 encoding of them in
/// that alphabet: a character outside it, padding in the URL alphabet, padding (standard) that is
/// not the one or two `=` completing the last group of four, a lone trailing sextet, or leftover
/// bits of the last sextet that are not zero (RFC 4648 section 3.5: else several strings decode to
/// the same bytes, and a JWT segment could be altered without changing what it says).
pub fn decode(s: &str, alphabet: Alphabet) -> Option<Vec<u8>> {
    let s = match alphabet {
        Alphabet::Standard => {
            let data = s.trim_end_matches('=');
            let pad = s.len() - data.len();
            if pad > 0 && (pad > 2 || s.len() % 4 != 0) {
                return None;
            }
            data
        }
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
    // `acc` holds the last sextet's leftover bits (`bits` of them).
    (bits < 6 && acc == 0).then_some(out)
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

    /// Issue 58 item 11: one byte string has one encoding; leftover bits that are not zero and
    /// padding that does not complete the last group are refused (else a JWT segment could be
    /// altered without changing what it decodes to).
    #[test]
    fn only_the_canonical_encoding_is_read() {
        // "hello" is aGVsbG8: its last sextet's two low bits are leftover.
        for altered in ["aGVsbG9", "aGVsbG-", "aGVsbG_"] {
            assert!(decode(altered, Url).is_none(), "{altered}");
        }
        assert!(decode("aGVsbG9=", Standard).is_none());
        assert!(
            decode("Zm9vYh==", Standard).is_none(),
            "the last sextet's 4 leftover bits"
        );
        assert_eq!(decode("Zm9vYg==", Standard).unwrap(), b"foob");
        assert_eq!(decode("Zm9vYg", Standard).unwrap(), b"foob", "unpadded still read");
        for padding in ["aGVsbG8==", "Zm9vYg=", "Zm9vYg===", "Zm9vYmFy=", "=", "===="] {
            assert!(decode(padding, Standard).is_none(), "{padding}");
        }
        // Every encoding written reads back, and nothing else decodes to the same bytes.
        for n in 0..=5u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(97).wrapping_add(200)).collect();
            for a in [Standard, Url] {
                assert_eq!(decode(&encode(&bytes, a), a).unwrap(), bytes);
            }
        }
    }
}
