//! A fixed-length bitset: the unit the index combines with word-wise AND / OR / AND-NOT.

/// A set of item positions `0..len`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// The empty set over `len` items.
    pub fn empty(len: usize) -> Self {
        Bits {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The full set over `len` items.
    pub fn full(len: usize) -> Self {
        let mut b = Bits {
            words: vec![u64::MAX; len.div_ceil(64)],
            len,
        };
        b.trim();
        b
    }

    fn trim(&mut self) {
        let rem = self.len % 64;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    /// Number of positions.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the universe is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds position `i`.
    pub fn set(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Removes position `i`.
    pub fn clear(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    /// Whether position `i` is in the set.
    pub fn get(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// `self ∩= other`.
    pub fn and(&mut self, other: &Bits) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a &= b);
    }

    /// `self ∪= other`.
    pub fn or(&mut self, other: &Bits) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a |= b);
    }

    /// `self −= other`.
    pub fn and_not(&mut self, other: &Bits) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a &= !b);
    }

    /// `self ∩= (a ∪ b)` without a temporary.
    pub fn and_either(&mut self, a: &Bits, b: &Bits) {
        for ((w, x), y) in self.words.iter_mut().zip(&a.words).zip(&b.words) {
            *w &= x | y;
        }
    }

    /// Complement within `0..len`.
    pub fn not(&mut self) {
        self.words.iter_mut().for_each(|w| *w = !*w);
        self.trim();
    }

    /// Number of positions in the set.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The positions in the set, ascending.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let t = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(wi * 64 + t)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Bits;

    #[test]
    fn ops() {
        let mut a = Bits::empty(130);
        a.set(0);
        a.set(64);
        a.set(129);
        let mut b = Bits::full(130);
        assert_eq!(b.count(), 130);
        b.and(&a);
        assert_eq!(b.ones().collect::<Vec<_>>(), vec![0, 64, 129]);
        b.not();
        assert_eq!(b.count(), 127);
        assert!(!b.get(64) && b.get(65));
    }
}
