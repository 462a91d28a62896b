//! `timestamp_injector`: the current time — passed in by the shell, never read here — in a
//! requested time zone and format, prefixed (or appended) to the context. Time zones are UTC,
//! fixed offsets (`+05:30`, `UTC-3`) and a table of common IANA zones with their daylight-saving
//! rules (EU, US, southern Australia, New Zealand).

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::middleware::content;
use crate::middleware::schema::parse_static;
use crate::time::{format_iso, parse_iso};

#[derive(Clone, Copy, PartialEq)]
enum Rule {
    None,
    Eu,
    Us,
    AuSouth,
    Nz,
}

/// (IANA name, standard offset in minutes, daylight-saving rule).
const ZONES: &[(&str, i32, Rule)] = &[
    ("UTC", 0, Rule::None),
    ("Etc/UTC", 0, Rule::None),
    ("GMT", 0, Rule::None),
    ("Europe/London", 0, Rule::Eu),
    ("Europe/Dublin", 0, Rule::Eu),
    ("Europe/Lisbon", 0, Rule::Eu),
    ("Europe/Paris", 60, Rule::Eu),
    ("Europe/Berlin", 60, Rule::Eu),
    ("Europe/Madrid", 60, Rule::Eu),
    ("Europe/Rome", 60, Rule::Eu),
    ("Europe/Amsterdam", 60, Rule::Eu),
    ("Europe/Brussels", 60, Rule::Eu),
    ("Europe/Vienna", 60, Rule::Eu),
    ("Europe/Zurich", 60, Rule::Eu),
    ("Europe/Stockholm", 60, Rule::Eu),
    ("Europe/Oslo", 60, Rule::Eu),
    ("Europe/Copenhagen", 60, Rule::Eu),
    ("Europe/Warsaw", 60, Rule::Eu),
    ("Europe/Prague", 60, Rule::Eu),
    ("Europe/Budapest", 60, Rule::Eu),
    ("Europe/Helsinki", 120, Rule::Eu),
    ("Europe/Athens", 120, Rule::Eu),
    ("Europe/Kyiv", 120, Rule::Eu),
    ("Europe/Bucharest", 120, Rule::Eu),
    ("Europe/Istanbul", 180, Rule::None),
    ("Europe/Moscow", 180, Rule::None),
    ("America/New_York", -300, Rule::Us),
    ("America/Toronto", -300, Rule::Us),
    ("America/Chicago", -360, Rule::Us),
    ("America/Denver", -420, Rule::Us),
    ("America/Phoenix", -420, Rule::None),
    ("America/Los_Angeles", -480, Rule::Us),
    ("America/Vancouver", -480, Rule::Us),
    ("America/Anchorage", -540, Rule::Us),
    ("Pacific/Honolulu", -600, Rule::None),
    ("America/Mexico_City", -360, Rule::None),
    ("America/Sao_Paulo", -180, Rule::None),
    ("America/Bogota", -300, Rule::None),
    ("America/Argentina/Buenos_Aires", -180, Rule::None),
    ("Africa/Lagos", 60, Rule::None),
    ("Africa/Johannesburg", 120, Rule::None),
    ("Africa/Nairobi", 180, Rule::None),
    ("Asia/Dubai", 240, Rule::None),
    ("Asia/Karachi", 300, Rule::None),
    ("Asia/Kolkata", 330, Rule::None),
    ("Asia/Dhaka", 360, Rule::None),
    ("Asia/Bangkok", 420, Rule::None),
    ("Asia/Jakarta", 420, Rule::None),
    ("Asia/Shanghai", 480, Rule::None),
    ("Asia/Hong_Kong", 480, Rule::None),
    ("Asia/Singapore", 480, Rule::None),
    ("Asia/Taipei", 480, Rule::None),
    ("Asia/Tokyo", 540, Rule::None),
    ("Asia/Seoul", 540, Rule::None),
    ("Australia/Perth", 480, Rule::None),
    ("Australia/Brisbane", 600, Rule::None),
    ("Australia/Sydney", 600, Rule::AuSouth),
    ("Australia/Melbourne", 600, Rule::AuSouth),
    ("Australia/Adelaide", 570, Rule::AuSouth),
    ("Pacific/Auckland", 720, Rule::Nz),
];

const DAY: i64 = 86_400_000;

fn date_ms(y: i64, m: u32, d: u32) -> i64 {
    parse_iso(&format!("{y:04}-{m:02}-{d:02}T00:00:00Z"), "date").unwrap_or(0)
}

fn weekday(ms: i64) -> i64 {
    (ms.div_euclid(DAY) + 4).rem_euclid(7) // 0 = Sunday
}

fn first_sunday(y: i64, m: u32) -> i64 {
    let d = date_ms(y, m, 1);
    d + (7 - weekday(d)).rem_euclid(7) * DAY
}

fn last_sunday(y: i64, m: u32) -> i64 {
    let next = if m == 12 {
        date_ms(y + 1, 1, 1)
    } else {
        date_ms(y, m + 1, 1)
    };
    let last = next - DAY;
    last - weekday(last) * DAY
}

fn year_of(ms: i64) -> i64 {
    format_iso(ms, 0)[..4].parse().unwrap_or(1970)
}

/// UTC offset in minutes of a zone at `ms`.
fn offset_at(std: i32, rule: Rule, ms: i64) -> i32 {
    let y = year_of(ms + i64::from(std) * 60_000);
    let h = 3_600_000;
    let std_ms = i64::from(std) * 60_000;
    let dst = match rule {
        Rule::None => false,
        Rule::Eu => ms >= last_sunday(y, 3) + h && ms < last_sunday(y, 10) + h,
        Rule::Us => {
            ms >= first_sunday(y, 3) + 7 * DAY + 2 * h - std_ms && ms < first_sunday(y, 11) + 2 * h - std_ms - h
        }
        Rule::AuSouth => !(ms >= first_sunday(y, 4) + 3 * h - std_ms - h && ms < first_sunday(y, 10) + 2 * h - std_ms),
        Rule::Nz => !(ms >= first_sunday(y, 4) + 3 * h - std_ms - h && ms < last_sunday(y, 9) + 2 * h - std_ms),
    };
    std + if dst { 60 } else { 0 }
}

/// A fixed offset: `+05:30`, `-03:00`, `UTC+2`, `GMT-3:30`.
fn fixed_offset(s: &str) -> Option<i32> {
    let rest = s.strip_prefix("UTC").or_else(|| s.strip_prefix("GMT")).unwrap_or(s);
    let (sign, rest) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 14 && m < 60 && !rest.is_empty()).then_some(sign * (h * 60 + m))
}

/// The offset of `zone` at `ms`, or an error naming `path`.
pub fn zone_offset(zone: &str, ms: i64, path: &str) -> Result<i32> {
    if let Some((_, std, rule)) = ZONES.iter().find(|(n, _, _)| *n == zone) {
        return Ok(offset_at(*std, *rule, ms));
    }
    fixed_offset(zone).ok_or_else(|| {
        Error::params(format!(
            "{path} \"{zone}\" is not a known time zone; use an offset like \"+02:00\" or \"UTC-5\", or one of: {}",
            ZONES.iter().map(|z| z.0).collect::<Vec<_>>().join(", ")
        ))
    })
}

fn offset_text(min: i32) -> String {
    if min == 0 {
        return "UTC".into();
    }
    let sign = if min < 0 { '-' } else { '+' };
    format!("UTC{sign}{:02}:{:02}", min.abs() / 60, min.abs() % 60)
}

/// Formats `ms` at `offset` minutes: `human` ("Saturday, October 4, 2025, 3:42 PM UTC"),
/// `iso`, `date` or `unix`.
pub fn format(ms: i64, offset: i32, zone: &str, fmt: &str) -> String {
    let iso = format_iso(ms, offset);
    match fmt {
        "iso" => iso,
        "unix" => (ms.div_euclid(1000)).to_string(),
        _ => {
            const DAYS: [&str; 7] = [
                "Sunday",
                "Monday",
                "Tuesday",
                "Wednesday",
                "Thursday",
                "Friday",
                "Saturday",
            ];
            const MONTHS: [&str; 12] = [
                "January",
                "February",
                "March",
                "April",
                "May",
                "June",
                "July",
                "August",
                "September",
                "October",
                "November",
                "December",
            ];
            let local = ms + i64::from(offset) * 60_000;
            let num = |r: std::ops::Range<usize>| iso[r].parse::<usize>().unwrap_or(0);
            let (y, mo, d, h, mi) = (num(0..4), num(5..7), num(8..10), num(11..13), num(14..16));
            let day = DAYS[weekday(local) as usize];
            let month = MONTHS[mo.clamp(1, 12) - 1];
            if fmt == "date" {
                return format!("{day}, {month} {d}, {y}");
            }
            let (h12, ampm) = (if h % 12 == 0 { 12 } else { h % 12 }, if h < 12 { "AM" } else { "PM" });
            let zone_txt = if zone == "UTC" || offset_text(offset) == zone {
                offset_text(offset)
            } else {
                format!("{zone} ({})", offset_text(offset))
            };
            format!("{day}, {month} {d}, {y}, {h12}:{mi:02} {ampm} {zone_txt}")
        }
    }
}

/// The wire name.
pub const NAME: &str = "timestamp_injector";
/// What it does, as `middleware/list` shows it.
pub const DESCRIPTION: &str = "Prefix the context with the current time in a requested time zone and format";

/// `inputSchema` of `timestamp_injector`.
pub fn schema() -> Value {
    parse_static(
        r#"{"type": "object", "properties": {
            "timeZone": {"type": "string", "default": "UTC", "description": "an IANA zone such as Europe/Berlin, or an offset such as +05:30"},
            "format": {"type": "string", "enum": ["human", "iso", "date", "unix"], "default": "human"},
            "label": {"type": "string", "default": "Current time", "maxLength": 100},
            "position": {"type": "string", "enum": ["prepend", "append"], "default": "prepend"}
        }, "additionalProperties": false}"#,
    )
}

/// Runs `timestamp_injector` at `now_ms` (arguments already validated).
pub fn invoke(args: &Map<String, Value>, mut context: Vec<Value>, now_ms: i64) -> Result<Value> {
    let s = |k: &str, d: &'static str| args.get(k).and_then(Value::as_str).unwrap_or(d).to_string();
    let (zone, fmt, label) = (s("timeZone", "UTC"), s("format", "human"), s("label", "Current time"));
    let offset = zone_offset(&zone, now_ms, "params.arguments.timeZone")?;
    let when = format(now_ms, offset, &zone, &fmt);
    let line = format!("[{label}: {when}]");
    if s("position", "prepend") == "append" {
        context.push(json!({"type": "text", "text": line}));
    } else {
        content::prepend(&mut context, &format!("{line}\n\n"));
    }
    Ok(json!({
        "content": context,
        "metadata": {"timestamp": format_iso(now_ms, offset), "timeZone": zone, "utcOffsetMinutes": offset, "formatted": when}
    }))
}
