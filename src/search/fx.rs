//! A small, fast, non-keyed hasher (the Fx hash of rustc) for the search index's own maps: its
//! keys are catalog words and tool names, hashed once per word read while the index builds,
//! where SipHash's resistance to chosen keys costs more than it buys (a catalog is the
//! operator's own document).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed with [`Fx`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

const K: u64 = 0xf135_7aea_2e62_a9c5;

/// The Fx hash: each 8 bytes rotated in and multiplied.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(K);
    }
}

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.add(x as u64);
    }

    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }

    /// The high bits, which the multiply mixes best, rotated down to where a table indexes.
    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_every_length_are_found_and_told_apart() {
        let words: Vec<String> = (0..2000).map(|i| "w".repeat(i % 19) + &i.to_string()).collect();
        let mut m: FxMap<&[u8], usize> = FxMap::default();
        for (i, w) in words.iter().enumerate() {
            m.insert(w.as_bytes(), i);
        }
        assert_eq!(m.len(), words.len());
        for (i, w) in words.iter().enumerate() {
            assert_eq!(m.get(w.as_bytes()), Some(&i));
        }
        assert_eq!(m.get(&b"ab\0"[..]), None);
    }
}
