//! Words as written (`Creates`, `issue`) → their ids, for the index builder: every word of a
//! catalog is looked up here once per occurrence, so the common words (16 bytes or shorter) are
//! kept inline in a small open-addressing table, compared as two integers, with no pointer to
//! follow and no allocation; longer ones go to an ordinary map.

use super::fx::FxMap;

/// The word `text[s..e]` when it has 1 to 16 bytes, zero-padded into one integer (little-endian;
/// a word never holds a zero byte, so the padding is unambiguous): one 16-byte read where the
/// text has room, else the text's last 16 bytes shifted, else a copy (texts under 16 bytes).
#[inline]
fn pack(text: &[u8], s: usize, e: usize) -> Option<u128> {
    let n = e.checked_sub(s)?;
    if n == 0 || n > 16 || e > text.len() {
        return None;
    }
    let read = |at: usize| text[at..].first_chunk::<16>().map_or(0, |b| u128::from_le_bytes(*b));
    let raw = if s + 16 <= text.len() {
        read(s)
    } else if text.len() >= 16 {
        read(text.len() - 16) >> (8 * (s + 16 - text.len()))
    } else {
        // A short text (a name, a parameter's): byte by byte, not a call to copy.
        let mut x = 0u128;
        for (k, &b) in text[s..e].iter().enumerate() {
            x |= (b as u128) << (8 * k);
        }
        x
    };
    Some(raw & (u128::MAX >> (8 * (16 - n))))
}

/// One slot of the table: a packed word (0: empty) beside its id, so that a lookup touches one
/// cache line.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    lo: u64,
    hi: u64,
    id: u32,
}

/// Words as written → ids.
#[derive(Debug, Default)]
pub struct Memo {
    /// A power of two of slots.
    keys: Vec<Slot>,
    len: usize,
    long: FxMap<Box<[u8]>, u32>,
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl Memo {
    #[inline]
    fn slot(&self, k: u128) -> usize {
        let h = ((k as u64).wrapping_mul(K).rotate_left(29) ^ (k >> 64) as u64).wrapping_mul(K);
        (h >> 32) as usize & (self.keys.len() - 1)
    }

    /// The id of word `text[s..e]`, or `new()`'s (then remembered) when it was not seen before.
    #[inline(always)]
    pub fn get_or(&mut self, text: &[u8], s: usize, e: usize, new: impl FnOnce() -> u32) -> u32 {
        let Some(k) = pack(text, s, e) else {
            return self.get_long(&text[s..e], new);
        };
        self.get_packed(k, new)
    }

    /// [`Memo::get_or`] where `text` has at least 16 bytes from `s` on (a padded text,
    /// `text::pad`): the word is one read, with no case for where it lies.
    #[inline(always)]
    pub fn get_or_padded(&mut self, text: &[u8], s: usize, e: usize, new: impl FnOnce() -> u32) -> u32 {
        let n = e.wrapping_sub(s);
        match text.get(s..).and_then(|r| r.first_chunk::<16>()) {
            Some(b) if (1..=16).contains(&n) => {
                self.get_packed(u128::from_le_bytes(*b) & (u128::MAX >> (8 * (16 - n))), new)
            }
            _ => self.get_or(text, s, e, new),
        }
    }

    /// [`Memo::get_or`] of a word packed (`pack`).
    #[inline(always)]
    fn get_packed(&mut self, k: u128, new: impl FnOnce() -> u32) -> u32 {
        if self.keys.is_empty() {
            self.start();
        }
        let mask = self.keys.len() - 1;
        let (lo, hi) = (k as u64, (k >> 64) as u64);
        let mut i = self.slot(k);
        loop {
            let x = self.keys[i];
            if x.lo == lo && x.hi == hi {
                return x.id;
            }
            if x.lo == 0 {
                break;
            }
            i = (i + 1) & mask;
        }
        let id = new();
        self.keys[i] = Slot { lo, hi, id };
        self.len += 1;
        if self.len * 2 > self.keys.len() {
            self.grow();
        }
        id
    }

    /// [`Memo::get_or`] of a word longer than 16 bytes (rare: out of line).
    #[inline(never)]
    fn get_long(&mut self, w: &[u8], new: impl FnOnce() -> u32) -> u32 {
        if let Some(&id) = self.long.get(w) {
            return id;
        }
        let id = new();
        self.long.insert(w.into(), id);
        id
    }

    #[cold]
    fn start(&mut self) {
        self.keys = vec![Slot::default(); 1024];
    }

    #[inline(never)]
    fn grow(&mut self) {
        let size = self.keys.len() * 2;
        let keys = std::mem::replace(&mut self.keys, vec![Slot::default(); size]);
        let mask = self.keys.len() - 1;
        for x in keys {
            if x.lo != 0 {
                let mut i = self.slot(x.lo as u128 | (x.hi as u128) << 64);
                while self.keys[i].lo != 0 {
                    i = (i + 1) & mask;
                }
                self.keys[i] = x;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_every_length_keep_their_own_ids() {
        let words: Vec<String> = (0..5000)
            .map(|i| {
                format!(
                    "{}{i}",
                    "abcdefghijklmnopqrstuvwxyzé".chars().take(i % 27).collect::<String>()
                )
            })
            .collect();
        let mut m = Memo::default();
        for round in 0..2 {
            for (i, w) in words.iter().enumerate() {
                let id = m.get_or(w.as_bytes(), 0, w.len(), || {
                    assert_eq!(round, 0, "{w} was seen");
                    i as u32
                });
                assert_eq!(id, i as u32, "{w}");
            }
        }
        // Every piece of a text, wherever it sits (short texts, near the end, in the middle), is
        // its own word, found again from another text.
        let mut m = Memo::default();
        let t = b"abcdefghijklmnopqrstuvwxyz";
        let mut ids = std::collections::HashMap::new();
        for len in [3, 15, 16, 17, 26] {
            for s in 0..len {
                for e in s + 1..=len {
                    let next = ids.len() as u32;
                    let want = *ids.entry(&t[s..e]).or_insert(next);
                    assert_eq!(m.get_or(&t[..len], s, e, || next), want, "{len} {s} {e}");
                }
            }
        }
    }
}
