//! ISO 8601 / RFC 3339 timestamps to and from milliseconds since the Unix epoch. The core has no
//! clock: the shell passes "now" in.

use crate::error::{Error, Result};

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`, shifted by
/// `offset_minutes` (then written with that offset instead of `Z`).
pub fn format_iso(ms: i64, offset_minutes: i32) -> String {
    let local = ms + i64::from(offset_minutes) * 60_000;
    let (days, rem) = (local.div_euclid(86_400_000), local.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    let zone = if offset_minutes == 0 {
        "Z".to_string()
    } else {
        let sign = if offset_minutes < 0 { '-' } else { '+' };
        let a = offset_minutes.unsigned_abs();
        format!("{sign}{:02}:{:02}", a / 60, a % 60)
    };
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}{zone}")
}

/// Parses an ISO 8601 timestamp: a date (`2025-11-20`, midnight UTC), or a date and time with
/// optional fractional seconds and a `Z`, `±HH:MM`, `±HHMM` or `±HH` offset (none: UTC); `path`
/// names the field in the error.
pub fn parse_iso(s: &str, path: &str) -> Result<i64> {
    let with_time;
    let b = if s.len() == 10 {
        with_time = format!("{s}T00:00:00Z");
        with_time.as_bytes()
    } else {
        s.as_bytes()
    };
    parse(b).ok_or_else(|| {
        Error::params(format!(
            "{path} must be an ISO 8601 date or timestamp, like \"2025-11-20\", \"2025-11-20T10:30:00Z\" or \"2025-11-20T12:30:00+02:00\"; got \"{s}\""
        ))
    })
}

fn parse(b: &[u8]) -> Option<i64> {
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |a, c| a * 10 + i64::from(c - b'0')))
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    let dim = [
        31,
        if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 {
            29
        } else {
            28
        },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d < 1 || d > dim[(mo - 1) as usize] || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start || i - start > 9 {
            return None;
        }
        let digits = &b[start..i.min(start + 3)];
        millis = digits.iter().fold(0i64, |a, c| a * 10 + i64::from(c - b'0')) * 10i64.pow(3 - digits.len() as u32);
    }
    let offset = match b.get(i) {
        None => 0, // no offset: UTC
        Some(b'Z' | b'z') if b.len() == i + 1 => 0,
        Some(sign @ (b'+' | b'-')) if matches!(b.len() - i, 3 | 5 | 6) => {
            let om_at = if b.len() == i + 6 && b[i + 3] == b':' {
                i + 4
            } else {
                i + 3
            };
            let om = if b.len() == i + 3 { 0 } else { num(om_at..om_at + 2)? };
            if b.len() == i + 6 && b[i + 3] != b':' {
                return None;
            }
            let oh = num(i + 1..i + 3)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 60 + om;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s.min(59) - offset * 60;
    Some(secs * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_offsets() {
        let t = parse_iso("2025-11-20T10:30:00Z", "t").unwrap();
        assert_eq!(t, 1_763_634_600_000);
        assert_eq!(parse_iso("2025-11-20T12:30:00+02:00", "t").unwrap(), t);
        assert_eq!(parse_iso("2025-11-20T10:30:00.250Z", "t").unwrap(), t + 250);
        assert_eq!(format_iso(t + 250, 0), "2025-11-20T10:30:00.250Z");
        assert_eq!(format_iso(t, -300), "2025-11-20T05:30:00.000-05:00");
        assert_eq!(parse_iso(&format_iso(t, 90), "t").unwrap(), t);
        // The other forms ISO 8601 allows: a date (midnight UTC), no offset (UTC), ±HHMM, ±HH.
        assert_eq!(parse_iso("2025-11-20", "t").unwrap(), t - (10 * 3600 + 30 * 60) * 1000);
        assert_eq!(parse_iso("2025-11-20T10:30:00", "t").unwrap(), t);
        assert_eq!(parse_iso("2025-11-20T12:30:00+0200", "t").unwrap(), t);
        assert_eq!(parse_iso("2025-11-20T12:30:00+02", "t").unwrap(), t);
        for bad in [
            "2025-11-2",
            "2025-13-01",
            "2025-13-01T00:00:00Z",
            "2025-02-30T00:00:00Z",
            "yesterday",
            "2025-11-20T10:30:00+2",
            "2025-11-20T10:30:00+02:0",
            "2025-11-20T10:30:00+020",
        ] {
            let e = parse_iso(bad, "params.createdAfter").unwrap_err();
            assert!(e.to_string().contains("params.createdAfter"), "{e}");
        }
    }
}
