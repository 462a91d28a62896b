//! A unified diff of two texts (what `--dry-run` prints): common lines at both ends are set
//! aside, the rest is compared line by line (longest common subsequence), in hunks with three
//! lines of context.

/// Lines of context around a change.
const CONTEXT: usize = 3;
/// Beyond this many lines × lines in the changed middle, it is shown as removed then added.
const MAX_CELLS: usize = 4_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Same,
    Del,
    Add,
}

/// The unified diff of `old` into `new` under the names `a` and `b`; empty when they are equal.
pub fn unified(a: &str, b: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let (x, y): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let head = x.iter().zip(&y).take_while(|(p, q)| p == q).count();
    let tail = x[head..]
        .iter()
        .rev()
        .zip(y[head..].iter().rev())
        .take_while(|(p, q)| p == q)
        .count();
    let (xm, ym) = (&x[head..x.len() - tail], &y[head..y.len() - tail]);
    let mut ops: Vec<(Op, &str)> = x[..head].iter().map(|l| (Op::Same, *l)).collect();
    ops.extend(middle(xm, ym));
    ops.extend(x[x.len() - tail..].iter().map(|l| (Op::Same, *l)));
    let mut out = format!("--- {a}\n+++ {b}\n");
    // Hunks: runs of changes with their context, joined when their contexts meet.
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != Op::Same).collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i];
        while i < changed.len() && changed[i] <= end + 2 * CONTEXT + 1 {
            end = changed[i];
            i += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let (mut ol, mut nl) = (1, 1);
        for (op, _) in &ops[..start] {
            if *op != Op::Add {
                ol += 1;
            }
            if *op != Op::Del {
                nl += 1;
            }
        }
        let hunk = &ops[start..end];
        let oc = hunk.iter().filter(|(o, _)| *o != Op::Add).count();
        let nc = hunk.iter().filter(|(o, _)| *o != Op::Del).count();
        out.push_str(&format!(
            "@@ -{},{oc} +{},{nc} @@\n",
            if oc == 0 { ol - 1 } else { ol },
            if nc == 0 { nl - 1 } else { nl }
        ));
        for (op, line) in hunk {
            let sign = match op {
                Op::Same => ' ',
                Op::Del => '-',
                Op::Add => '+',
            };
            out.push(sign);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The edit script of `x` into `y`.
fn middle<'a>(x: &[&'a str], y: &[&'a str]) -> Vec<(Op, &'a str)> {
    if x.len().saturating_mul(y.len()) > MAX_CELLS {
        return x
            .iter()
            .map(|l| (Op::Del, *l))
            .chain(y.iter().map(|l| (Op::Add, *l)))
            .collect();
    }
    // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
    let w = y.len() + 1;
    let mut lcs = vec![0u32; (x.len() + 1) * w];
    for i in (0..x.len()).rev() {
        for j in (0..y.len()).rev() {
            lcs[i * w + j] = if x[i] == y[j] {
                lcs[(i + 1) * w + j + 1] + 1
            } else {
                lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::new());
    while i < x.len() || j < y.len() {
        if i < x.len() && j < y.len() && x[i] == y[j] {
            ops.push((Op::Same, x[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < x.len() && (j == y.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
            ops.push((Op::Del, x[i]));
            i += 1;
        } else {
            ops.push((Op::Add, y[j]));
            j += 1;
        }
    }
    ops
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
        assert_eq!(unified("x", "y", "", "a\n"), "--- x\n+++ y\n@@ -0,0 +1,1 @@\n+a\n");
        let old: String = (0..20).map(|i| format!("{i}\n")).collect();
        let new = old.replace("2\n", "two\n").replace("17\n", "");
        let d = unified("x", "y", &old, &new);
        assert_eq!(d.matches("@@ -").count(), 2, "{d}");
        assert!(d.contains("-2\n+two\n") && d.contains("-17\n"), "{d}");
    }
}
