//! Session ids a server can recognise as its own: a random part and its HMAC-SHA256 tag under
//! the server's secret (`MCP_SIEVE_SESSION_SECRET`), so a forged or guessed `Mcp-Session-Id` is
//! refused (404) before any storage is touched. Also the one keyed digest the bearer-token
//! comparison uses, so its timing depends on neither the token's content nor its length.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type Tag = Hmac<Sha256>;

/// Bytes of the tag kept in an id (128 bits).
const TAG_BYTES: usize = 16;

/// A server secret (never printed), with its HMAC state keyed once: a tag costs the message's
/// blocks, not the key's again.
#[derive(Clone)]
pub struct Secret {
    key: Vec<u8>,
    keyed: Tag,
}

impl Default for Secret {
    fn default() -> Self {
        Secret::new(Vec::new())
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Secret {}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The value of one hex digit.
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// A secret from its bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        let key = bytes.into();
        // HMAC accepts keys of any length: this cannot fail.
        let keyed = Tag::new_from_slice(&key).unwrap_or_else(|_| unreachable!());
        Secret { key, keyed }
    }

    fn tag(&self, data: &[u8]) -> Tag {
        let mut mac = self.keyed.clone();
        mac.update(data);
        mac
    }

    /// The id for the random string `random`: `random.tag`.
    pub fn sign(&self, random: &str) -> String {
        let tag = self.tag(random.as_bytes()).finalize().into_bytes();
        let mut id = String::with_capacity(random.len() + 1 + TAG_BYTES * 2);
        id.push_str(random);
        id.push('.');
        for b in &tag[..TAG_BYTES] {
            id.push(char::from(HEX[usize::from(b >> 4)]));
            id.push(char::from(HEX[usize::from(b & 15)]));
        }
        id
    }

    /// Whether `id` was made by [`Secret::sign`] with this secret (compared in constant time).
    pub fn verify(&self, id: &str) -> bool {
        let Some((random, hex)) = id.rsplit_once('.') else {
            return false;
        };
        let hex = hex.as_bytes();
        if hex.len() != TAG_BYTES * 2 {
            return false;
        }
        let mut tag = [0u8; TAG_BYTES];
        for (t, pair) in tag.iter_mut().zip(hex.chunks_exact(2)) {
            let (Some(hi), Some(lo)) = (nibble(pair[0]), nibble(pair[1])) else {
                return false;
            };
            *t = hi << 4 | lo;
        }
        self.tag(random.as_bytes()).verify_truncated_left(&tag).is_ok()
    }
}

/// Whether two strings are equal, in time that depends on neither their content nor their
/// lengths: their keyed digests (fixed length) are compared in constant time.
pub fn same_secret(given: &str, expected: &str) -> bool {
    let key = Secret::new(*b"mcp-sieve: compare");
    let expected = key.tag(expected.as_bytes()).finalize().into_bytes();
    key.tag(given.as_bytes()).verify_slice(&expected).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_ids_verify_and_forged_ones_do_not() {
        let s = Secret::new(*b"0123456789abcdef0123456789abcdef");
        let id = s.sign("5f0c2a");
        assert!(s.verify(&id), "{id}");
        assert!(!Secret::new(*b"another secret, same length here").verify(&id));
        assert!(!s.verify("5f0c2a"), "no tag");
        assert!(!s.verify(&id.replace("5f0c2a", "5f0c2b")), "another random part");
        let mut forged = id.clone();
        forged.replace_range(id.len() - 1.., if id.ends_with('0') { "1" } else { "0" });
        assert!(!s.verify(&forged), "another tag");
        assert!(!s.verify("x.zz"), "not hex");
        assert!(!s.verify(&format!("x.{}", "é".repeat(16))), "not ASCII");
        assert!(format!("{s:?}").find("0123").is_none(), "the secret is not printed");
    }

    #[test]
    fn secrets_compare_by_content_only() {
        assert!(same_secret("token-1", "token-1"));
        assert!(!same_secret("token-1", "token-2"));
        assert!(!same_secret("token", "token-1"));
        assert!(!same_secret("", "token"));
    }
}
