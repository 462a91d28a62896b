//! IPv6 address syntax, checked without core's address parser (`Ipv6Addr::from_str` brings
//! about 4 KB into the browser package): the forms `std::net::Ipv6Addr` accepts — one to four
//! hex digits a group, eight groups or fewer with one `::`, and an IPv4 tail counting as two.

/// Whether `s` is an IPv6 address that `std::net::Ipv6Addr` would parse.
pub fn is_ipv6(s: &str) -> bool {
    match s.split_once("::") {
        None => groups(s, true) == Some(8),
        // An IPv4 part may end the address, not come before `::`.
        Some((head, tail)) => match (groups(head, false), groups(tail, true)) {
            (Some(h), Some(t)) => h + t <= 7,
            _ => false,
        },
    }
}

/// How many 16-bit groups `part` holds (`None` if it is not a run of groups); an IPv4 address
/// may be the last one when `ipv4_tail`.
fn groups(part: &str, ipv4_tail: bool) -> Option<usize> {
    if part.is_empty() {
        return Some(0);
    }
    let mut n = 0;
    let mut it = part.split(':').peekable();
    while let Some(g) = it.next() {
        if ipv4_tail && it.peek().is_none() && g.contains('.') {
            n += if is_ipv4(g) { 2 } else { return None };
        } else if (1..=4).contains(&g.len()) && g.bytes().all(|b| b.is_ascii_hexdigit()) {
            n += 1;
        } else {
            return None;
        }
    }
    Some(n)
}

/// Whether `s` is a dotted-quad IPv4 address as `std::net::Ipv4Addr` reads it (no leading zeros).
fn is_ipv4(s: &str) -> bool {
    let octet = |o: &str| {
        (1..=3).contains(&o.len())
            && o.bytes().all(|b| b.is_ascii_digit())
            && (o.len() == 1 || !o.starts_with('0'))
            && o.bytes().fold(0u32, |a, b| a * 10 + u32::from(b - b'0')) <= 255
    };
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4 && parts.iter().all(|o| octet(o))
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;
    use std::str::FromStr;

    use super::is_ipv6;

    fn agrees(s: &str) {
        assert_eq!(is_ipv6(s), Ipv6Addr::from_str(s).is_ok(), "{s:?}");
    }

    #[test]
    fn agrees_with_std_on_known_forms() {
        for s in [
            "::",
            "::1",
            "1::",
            "fe80::1",
            "2001:db8::8a2e:370:7334",
            "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "1:2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "1:2:3:4:5:6:7:8::",
            "::1:2:3:4:5:6:7:8",
            "::ffff:192.0.2.128",
            "64:ff9b::192.0.2.33",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7:1.2.3.4",
            "1.2.3.4::",
            "::01.2.3.4",
            "::1.2.3.256",
            "::1.2.3",
            "12345::",
            "1:::2",
            "1::2::3",
            ":1::",
            "1::2:",
            "g::1",
            "",
            ":",
            ":::",
            "1:2:3:4:5:6:7",
            "::1.2.3.4:5",
            "::0.0.0.0",
            "a:b:c:d:e:f:0:1",
        ] {
            agrees(s);
        }
    }

    #[test]
    fn agrees_with_std_on_random_strings() {
        let alphabet = b"0129af:.:Fg";
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let s: String = (0..len)
                .map(|i| alphabet[((x >> (i % 21 * 3)) as usize + i * 7) % alphabet.len()] as char)
                .collect();
            agrees(&s);
        }
    }
}
