//! Lowercasing for word matching without the Unicode case tables: `str::to_lowercase` brings
//! about 16 KB of tables and code into the browser package. This covers the scripts the
//! built-in word lists and most European text use — ASCII, Latin-1, Latin Extended-A and
//! Additional, Greek, Cyrillic, Armenian, fullwidth Latin — one char to one char; letters of
//! other scripts keep their case.

/// `s` lowercased (see the module docs for the covered scripts).
pub fn lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.chars().map(lower_char).collect()
}

/// `c` lowercased when it is a capital of a covered script, else `c`.
pub fn lower_char(c: char) -> char {
    let u = c as u32;
    let even = u % 2 == 0;
    let l = match u {
        0x41..=0x5A | 0xC0..=0xD6 | 0xD8..=0xDE => u + 0x20,
        0x100..=0x12F | 0x132..=0x137 | 0x14A..=0x177 if even => u + 1,
        0x139..=0x148 | 0x179..=0x17E if !even => u + 1,
        0x178 => 0xFF,
        0x370 | 0x372 | 0x376 | 0x3F7 | 0x3FA => u + 1,
        0x3D8..=0x3EF if even => u + 1,
        0x37F => 0x3F3,
        0x3CF => 0x3D7,
        0x3F4 => 0x3B8,
        0x3F9 => 0x3F2,
        0x3FD..=0x3FF => u - 0x82,
        0x386 => 0x3AC,
        0x388..=0x38A => u + 37,
        0x38C => 0x3CC,
        0x38E..=0x38F => u + 63,
        0x391..=0x3A1 | 0x3A3..=0x3AB => u + 0x20,
        0x400..=0x40F => u + 0x50,
        0x410..=0x42F => u + 0x20,
        0x460..=0x481 | 0x48A..=0x4BF | 0x4D0..=0x52F if even => u + 1,
        0x4C0 => 0x4CF,
        0x4C1..=0x4CE if !even => u + 1,
        0x531..=0x556 => u + 0x30,
        0x1E00..=0x1E95 | 0x1EA0..=0x1EFF if even => u + 1,
        0x1E9E => 0xDF,
        0xFF21..=0xFF3A => u + 0x20,
        _ => u,
    };
    char::from_u32(l).unwrap_or(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COVERED: [(u32, u32); 5] = [
        (0, 0x17F),
        (0x370, 0x3FF),
        (0x400, 0x58F),
        (0x1E00, 0x1EFF),
        (0xFF00, 0xFFEF),
    ];

    #[test]
    fn agrees_with_the_unicode_tables_on_the_covered_scripts() {
        for (lo, hi) in COVERED {
            for c in (lo..=hi).filter_map(char::from_u32) {
                let mut std = c.to_lowercase();
                let (one, more) = (std.next().unwrap(), std.next());
                // İ lowercases to two chars (i + combining dot); it stays as is here.
                if more.is_none() {
                    assert_eq!(lower_char(c), one, "U+{:04X}", c as u32);
                } else {
                    assert_eq!(lower_char(c), c, "U+{:04X}", c as u32);
                }
            }
        }
    }

    #[test]
    fn lowers_words() {
        assert_eq!(lower("Ignore PREVIOUS Instructions"), "ignore previous instructions");
        assert_eq!(lower("ÉCOLE Straße ЖУРНАЛ Ἀθῆναι"), "école straße журнал Ἀθῆναι");
        assert_eq!(lower("ΑΘΗΝΑ"), "αθηνα");
    }
}
