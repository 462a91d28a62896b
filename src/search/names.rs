//! The tools' names folded (trimmed of non-alphanumerics at both ends, lowercased) → their
//! positions, for queries that name a tool exactly: all folded names in one text, found through
//! an open-addressing table of positions, so building it allocates nothing per tool.

use std::hash::Hasher;

use super::fx::Fx;

/// Folded tool names → positions (of two tools folding alike, the later).
#[derive(Debug, Default)]
pub struct Names {
    /// Every tool's folded name, one after another.
    text: String,
    /// Where each tool's folded name ends in `text`.
    ends: Vec<u32>,
    /// Tool position + 1 (0: an empty slot), a power of two of them.
    table: Vec<u32>,
}

/// `s` trimmed of non-alphanumerics at both ends and lowercased, appended to `out`.
pub fn fold_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        let t = s.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let at = out.len();
        out.push_str(t);
        out[at..].make_ascii_lowercase();
    } else {
        out.push_str(&crate::middleware::fold::lower(
            s.trim_matches(|c: char| !c.is_alphanumeric()),
        ));
    }
}

fn hash(s: &str) -> u64 {
    let mut h = Fx::default();
    h.write(s.as_bytes());
    h.finish()
}

impl Names {
    /// Adds the next tool's name.
    pub fn push(&mut self, name: &str) {
        fold_into(name, &mut self.text);
        self.ends.push(self.text.len() as u32);
    }

    /// Makes the names pushed so far findable.
    pub fn index(&mut self) {
        self.table = vec![0; (self.ends.len() * 2).next_power_of_two().max(8)];
        let mask = self.table.len() - 1;
        for d in 0..self.ends.len() {
            let key = self.name(d);
            let mut i = hash(key) as usize & mask;
            loop {
                match self.table[i] {
                    0 => break,
                    x if self.name(x as usize - 1) == key => break,
                    _ => i = (i + 1) & mask,
                }
            }
            self.table[i] = d as u32 + 1;
        }
    }

    /// The table of `names` (tool `i` is the `i`-th).
    #[cfg(test)]
    fn new<'a>(names: impl Iterator<Item = &'a str>) -> Self {
        let mut n = Names::default();
        for name in names {
            n.push(name);
        }
        n.index();
        n
    }

    fn name(&self, d: usize) -> &str {
        let start = if d == 0 { 0 } else { self.ends[d - 1] as usize };
        &self.text[start..self.ends[d] as usize]
    }

    /// The position of the tool whose folded name is `key`.
    pub fn get(&self, key: &str) -> Option<usize> {
        if self.table.is_empty() {
            return None;
        }
        let mask = self.table.len() - 1;
        let mut i = hash(key) as usize & mask;
        loop {
            match self.table[i] {
                0 => return None,
                x if self.name(x as usize - 1) == key => return Some(x as usize - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_names_find_their_tool_and_the_later_of_two_alike() {
        let names = ["git_status", "  Browser_Click!", "", "Ünïcode_Ñame", "GIT_STATUS", "x"];
        let n = Names::new(names.iter().copied());
        assert_eq!(n.get("git_status"), Some(4));
        assert_eq!(n.get("browser_click"), Some(1));
        assert_eq!(n.get(""), Some(2));
        assert_eq!(n.get("ünïcode_ñame"), Some(3));
        assert_eq!(n.get("x"), Some(5));
        assert_eq!(n.get("git"), None);
        assert_eq!(Names::new([].into_iter()).get(""), None);
        let mut s = String::new();
        fold_into("**Get-User**", &mut s);
        assert_eq!(s, "get-user");
    }
}
