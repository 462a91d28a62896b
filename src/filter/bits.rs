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

    /// The set over `len` items whose words are `words` (a prepared form's index): `None` when
    /// their number is not `len`'s or a bit past `len` is set (every position is below `len`).
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn from_words(words: Vec<u64>, len: usize) -> Option<Self> {
        let rem = len % 64;
        let trimmed = rem == 0 || words.last().is_none_or(|w| w >> rem == 0);
        (words.len() == len.div_ceil(64) && trimmed).then_some(Bits { words, len })
    }

    /// Its words, position `i` in bit `i % 64` of word `i / 64` (a prepared form's index).
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn words(&self) -> &[u64] {
        &self.words
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

    #[cfg(feature = "large-catalogs")]
    #[test]
    fn from_words_takes_only_positions_below_len() {
        let mut a = Bits::empty(65);
        a.set(64);
        assert_eq!(Bits::from_words(a.words().to_vec(), 65), Some(a));
        assert_eq!(Bits::from_words(vec![0, 2], 65), None, "position 65");
        assert_eq!(Bits::from_words(vec![0], 65), None, "a word short");
        assert_eq!(Bits::from_words(vec![0, 0, 0], 65), None, "a word more");
        assert_eq!(Bits::from_words(vec![u64::MAX], 64).map(|b| b.count()), Some(64));
        assert_eq!(Bits::from_words(Vec::new(), 0).map(|b| b.len()), Some(0));
    }
}
