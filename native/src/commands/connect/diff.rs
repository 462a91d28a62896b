//! A unified diff of two texts (what `--dry-run` prints), by the `similar` crate: lines compared
//! with Myers' algorithm under a time limit, in hunks with three lines of context, in GNU diff's
//! format (a one-line range is written `-5`, a file without a final newline gets
//! `\ No newline at end of file`).

use similar::TextDiff;
use std::time::Duration;

/// Lines of context around a change.
const CONTEXT: usize = 3;
/// How long the comparison may take before what remains is shown as removed then added (a
/// client's settings file is small; this bounds a pathological one).
const TIMEOUT: Duration = Duration::from_secs(1);

/// The unified diff of `old` into `new` under the names `a` and `b`; empty when they are equal.
pub fn unified(a: &str, b: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::configure()
        .timeout(TIMEOUT)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(a, b)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_in_the_middle_is_one_hunk() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            unified("x", "y", old, new),
            "--- x\n+++ y\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        assert_eq!(unified("x", "y", old, old), "");
    }

    #[test]
    fn from_nothing_and_far_apart_changes() {
        assert_eq!(unified("x", "y", "", "a\n"), "--- x\n+++ y\n@@ -0,0 +1 @@\n+a\n");
        let old: String = (0..20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("17\n", "");
        let d = unified("x", "y", &old, &new);
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(d.contains("-2\n+two\n") && d.contains("-17\n"), "{d}");
    }

    #[test]
    fn a_missing_final_newline_is_marked() {
        assert_eq!(
            unified("x", "y", "a\n", "a\nb"),
            "--- x\n+++ y\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n"
        );
    }
}
