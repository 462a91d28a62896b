//! Glob matching on names: `*` is any run of characters, `?` is one character. The servers
//! (feature `large-catalogs`, which the Worker and the native server enable) match in time linear
//! in the name's length whatever the pattern ([`linear`]). The browser package, whose only caller
//! is its own page, keeps the smaller backtracking matcher below (work at most the name's length
//! times the pattern's); everywhere, a filter's pattern is at most
//! [`MAX_STRING`](crate::filter::MAX_STRING) bytes.

#[cfg(feature = "large-catalogs")]
pub mod linear;
#[cfg(feature = "large-catalogs")]
pub use linear::Glob;

/// Whether `name` matches `pattern`.
#[cfg(feature = "large-catalogs")]
pub fn matches(pattern: &str, name: &str) -> bool {
    Glob::new(pattern).matches(name)
}

/// Whether a pattern has wildcards (otherwise it is an exact name).
pub fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?'])
}

/// A glob prepared for matching many names (the package's: the pattern as given).
#[cfg(not(feature = "large-catalogs"))]
#[derive(Debug, Clone)]
pub struct Glob<'a>(&'a str);

#[cfg(not(feature = "large-catalogs"))]
impl<'a> Glob<'a> {
    /// Prepares `pattern`.
    #[inline]
    pub fn new(pattern: &'a str) -> Self {
        Glob(pattern)
    }

    /// Whether `name` matches.
    #[inline]
    pub fn matches(&self, name: &str) -> bool {
        matches(self.0, name)
    }
}

/// Whether `name` matches `pattern` (the package's matcher).
#[cfg(not(feature = "large-catalogs"))]
pub fn matches(pattern: &str, name: &str) -> bool {
    backtracking(pattern, name)
}

/// The package's matcher. ASCII (the usual case) matches byte by byte without allocating: a
/// list filter runs this once per item, so two `Vec<char>` per name dominated the browser's
/// filter time.
#[cfg(any(test, not(feature = "large-catalogs")))]
fn backtracking(pattern: &str, name: &str) -> bool {
    if pattern.is_ascii() && name.is_ascii() {
        return run(pattern.as_bytes(), name.as_bytes(), b'*', b'?');
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    run(&p, &n, '*', '?')
}

/// Iterative wildcard matching with one backtrack point (the last `*`).
#[cfg(any(test, not(feature = "large-catalogs")))]
fn run<T: PartialEq + Copy>(p: &[T], n: &[T], star_sym: T, any: T) -> bool {
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] != star_sym && (p[pi] == any || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == star_sym {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == star_sym)
}

#[cfg(test)]
mod tests {
    use super::{backtracking, matches};

    #[test]
    fn both_matchers_agree() {
        // The package's backtracking matcher against whichever `matches` this build has, on
        // short random patterns and names over a small alphabet (many stars, multi-byte chars).
        let alphabet = ['a', 'b', '*', '?', '丸', '😀', '*'];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..50_000 {
            let (lp, ln) = (next() % 12, next() % 14);
            let p: Vec<char> = (0..lp).map(|_| alphabet[(next() % 7) as usize]).collect();
            let n: Vec<char> = (0..ln).map(|_| alphabet[[0, 1, 4, 5][(next() % 4) as usize]]).collect();
            let (ps, ns): (String, String) = (p.iter().collect(), n.iter().collect());
            assert_eq!(matches(&ps, &ns), backtracking(&ps, &ns), "{ps:?} on {ns:?}");
        }
    }

    #[test]
    fn globs() {
        assert!(matches("git*", "github_create_issue"));
        assert!(matches("*_issue", "github_create_issue"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "abbc"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
        assert!(matches("exact", "exact"));
        assert!(!matches("exact", "exactly"));
        assert!(matches("caf?_*", "café_au_lait"));
        assert!(!matches("caf?", "café!"));
        assert!(matches("*", "*"));
        assert!(!matches("a", "*"));
        assert!(!matches("ab*ba", "aba"), "the ends may not overlap");
        assert!(matches("ab*ba", "abba"));
        assert!(matches("**a**b**", "xaxbx"));
        assert!(matches("*丸*?", "x丸yz"));
        assert!(!matches("*丸*?", "x丸"));
        let long = format!("*{}*", "a?".repeat(100));
        assert!(matches(&long, &format!("zz{}zz", "ab".repeat(100))));
        assert!(!matches(&long, &"ab".repeat(99)));
    }
}
