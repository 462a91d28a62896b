//! One stable sort for the whole crate. `slice::sort_by` is generic over the element type and
//! each use brought about 5 KB of sort code into the browser package; sorting indices through a
//! `dyn` comparison keeps a single copy.

use std::cmp::Ordering;

/// Sorts `v` stably by `cmp` (what `slice::sort_by` does).
pub fn sort_by<T>(v: &mut Vec<T>, mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let order = order_by(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    let mut slots: Vec<Option<T>> = v.drain(..).map(Some).collect();
    v.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

/// The indices `0..n`, stably sorted by `cmp`.
pub fn order_by(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| cmp(a, b));
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_stable_and_agrees_with_the_slice_sort() {
        let mut v: Vec<(u8, usize)> = [3u8, 1, 2, 1, 3, 0, 2, 1].iter().copied().zip(0..).collect();
        let mut expected = v.clone();
        expected.sort_by_key(|p| p.0);
        sort_by(&mut v, |a, b| a.0.cmp(&b.0));
        assert_eq!(v, expected);
        let mut empty: Vec<String> = Vec::new();
        sort_by(&mut empty, |a, b| a.cmp(b));
        assert!(empty.is_empty());
    }
}
