//! Glob matching on names: `*` is any run of characters, `?` is one character.

/// Whether `name` matches `pattern`.
pub fn matches(pattern: &str, name: &str) -> bool {
    // ASCII (the usual case) matches byte by byte without allocating: a list filter runs this
    // once per item, so two `Vec<char>` per name dominated the browser's filter time.
    if pattern.is_ascii() && name.is_ascii() {
        return run(pattern.as_bytes(), name.as_bytes(), b'*', b'?');
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    run(&p, &n, '*', '?')
}

/// Iterative wildcard matching with one backtrack point (the last `*`).
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

/// Whether a pattern has wildcards (otherwise it is an exact name).
pub fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?'])
}

#[cfg(test)]
mod tests {
    use super::matches;

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
    }
}
