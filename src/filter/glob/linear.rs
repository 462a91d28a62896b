//! The servers' glob matcher: linear in the name's length whatever the pattern. A pattern
//! without `*` or with one compares the name's ends; with more, the pattern's automaton runs over
//! the name once, its states as bits (one per pattern position, a run of `*` being one), so
//! nothing backtracks (`*a*a*a*b` against `aaaa…` costs what `*b` does).

/// A glob prepared for matching many names.
#[derive(Debug, Clone)]
pub enum Glob<'a> {
    /// No `*`: the name has the pattern's length, character by character.
    Plain(&'a str),
    /// One `*`: the name starts with the first part and ends with the second.
    Ends(&'a str, &'a str),
    /// Two or more `*`.
    Automaton(Automaton),
}

impl<'a> Glob<'a> {
    /// Prepares `pattern` (allocates only for two or more `*`).
    pub fn new(pattern: &'a str) -> Self {
        match pattern.split_once('*') {
            None => Glob::Plain(pattern),
            Some((head, tail)) if !tail.contains('*') => Glob::Ends(head, tail),
            Some(_) => Glob::Automaton(Automaton::new(pattern)),
        }
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Glob::Plain(p) => {
                let mut n = name.chars();
                fits(p.chars(), &mut n) && n.next().is_none()
            }
            Glob::Ends(head, tail) => {
                fits(head.chars(), &mut name.chars())
                    && fits(tail.chars().rev(), &mut name.chars().rev())
                    && name.chars().count() >= head.chars().count() + tail.chars().count()
            }
            Glob::Automaton(a) => a.matches(name),
        }
    }
}

/// Whether the characters of `name` begin with those of `pattern` (`?` is any one).
fn fits(mut pattern: impl Iterator<Item = char>, name: &mut impl Iterator<Item = char>) -> bool {
    pattern.all(|p| name.next().is_some_and(|c| p == '?' || p == c))
}

/// The automaton of a pattern: state `i` is "the first `i` positions matched"; position `i` is a
/// `*` (stays, or moves on without a character), a `?` or a character (moves on when it fits).
#[derive(Debug, Clone)]
pub struct Automaton {
    /// `u64` words per state set.
    words: usize,
    /// Positions in the pattern (the last state, all matched, is `len`).
    len: usize,
    /// Positions holding `*`.
    star: Vec<u64>,
    /// Positions holding `?`.
    any: Vec<u64>,
    /// The pattern's characters, sorted, each with the positions holding it.
    chars: Vec<(char, Vec<u64>)>,
}

fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

impl Automaton {
    fn new(pattern: &str) -> Self {
        // A run of `*` is one position.
        let mut tokens: Vec<char> = Vec::new();
        for c in pattern.chars() {
            if c != '*' || tokens.last() != Some(&'*') {
                tokens.push(c);
            }
        }
        let len = tokens.len();
        let words = len / 64 + 1;
        let mut a = Automaton {
            words,
            len,
            star: vec![0; words],
            any: vec![0; words],
            chars: Vec::new(),
        };
        for (i, &c) in tokens.iter().enumerate() {
            match c {
                '*' => set(&mut a.star, i),
                '?' => set(&mut a.any, i),
                _ => {
                    let k = match a.chars.binary_search_by(|(x, _)| x.cmp(&c)) {
                        Ok(k) => k,
                        Err(k) => {
                            a.chars.insert(k, (c, vec![0; words]));
                            k
                        }
                    };
                    set(&mut a.chars[k].1, i);
                }
            }
        }
        a
    }

    /// Adds the states reached from a `*` without a character.
    fn close(&self, s: &mut [u64]) {
        let mut carry = 0;
        for (x, star) in s.iter_mut().zip(&self.star) {
            let moved = *x & star;
            *x |= (moved << 1) | carry;
            carry = moved >> 63;
        }
    }

    fn matches(&self, name: &str) -> bool {
        let mut s = vec![0u64; self.words];
        s[0] = 1;
        self.close(&mut s);
        for c in name.chars() {
            let lit = self
                .chars
                .binary_search_by(|(x, _)| x.cmp(&c))
                .ok()
                .map(|k| &self.chars[k].1);
            let mut carry = 0;
            for i in 0..self.words {
                let moving = s[i] & (self.any[i] | lit.map_or(0, |l| l[i]));
                s[i] = (moving << 1) | carry | (s[i] & self.star[i]);
                carry = moving >> 63;
            }
            self.close(&mut s);
            if s.iter().all(|&x| x == 0) {
                return false;
            }
        }
        s[self.len / 64] >> (self.len % 64) & 1 == 1
    }
}
