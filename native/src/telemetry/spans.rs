//! What a span in the trace is (issue 42): a plain [`Record`] (ids, name, times, attributes,
//! status) of a traced request's SERVER span, an upstream exchange's CLIENT span or a search's
//! INTERNAL span (made by `crate::telemetry::tracer`); the W3C trace context they are parented by and pass
//! on ([`SpanContext`]); and the random numbers of new ids and of the head sampler.
//! Before, the OpenTelemetry SDK made them: its span builder, span, processor channel and
//! `SpanData` were most of the estimated cycles one traced request in ten cost (callgrind), for
//! fields this binary mostly does not use (events, links, dropped counts, a sampler per span).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::platform::push_hex;

/// Who a span is and how it is passed on (W3C trace context).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanContext {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// The `tracestate` received (empty: none, or one that was not valid).
    pub state: String,
    /// Whether it came from elsewhere (a `traceparent`), not a span of this process.
    pub remote: bool,
}

/// Longest `tracestate` kept (W3C: at least 512 bytes are to be passed on; a longer one is left
/// out, the parent kept).
const MAX_STATE: usize = 512;

impl SpanContext {
    /// The context of a W3C `traceparent` (and `tracestate`) from elsewhere; `None` when it is not
    /// one (an unknown field count for version 00, an all-zero id, a version `ff`).
    pub fn remote(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let mut parts = traceparent.trim().split('-');
        let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let valid = hex::<1>(version).is_some_and(|v| v[0] != 0xff) && (version != "00" || parts.next().is_none());
        let (trace_id, span_id, flags) = (hex::<16>(trace)?, hex::<8>(span)?, hex::<1>(flags)?);
        if !valid || trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        let state = tracestate.map(str::trim).filter(|s| valid_state(s)).unwrap_or_default();
        Some(SpanContext {
            trace_id,
            span_id,
            flags: flags[0],
            state: state.to_string(),
            remote: true,
        })
    }

    /// Whether its trace is sampled (its flags' bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The low 64 bits of its trace id (what a `traceidratio` sampler decides by).
    pub fn trace_low(&self) -> u64 {
        let mut low = [0u8; 8];
        low.copy_from_slice(&self.trace_id[8..]);
        u64::from_be_bytes(low)
    }

    /// The headers passing it on: `traceparent`, and `tracestate` when there is one.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut tp = String::with_capacity(55);
        tp.push_str("00-");
        push_hex(&mut tp, &self.trace_id);
        tp.push('-');
        push_hex(&mut tp, &self.span_id);
        tp.push('-');
        push_hex(&mut tp, &[self.flags]);
        let mut out = vec![("traceparent".to_string(), tp)];
        if !self.state.is_empty() {
            out.push(("tracestate".to_string(), self.state.clone()));
        }
        out
    }
}

/// `N` bytes written as `2N` hex digits (either case), or `None`.
fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let s = s.as_bytes();
    if s.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let mut out = [0u8; N];
    for (i, pair) in s.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

/// Whether `s` is a W3C `tracestate`: at most 32 `key=value` members, keys of lowercase letters,
/// digits and `_-*/@`, values of printable ASCII but `,` and `=`, at most [`MAX_STATE`] bytes.
fn valid_state(s: &str) -> bool {
    let member = |m: &str| {
        let Some((k, v)) = m.trim().split_once('=') else {
            return false;
        };
        let key = !k.is_empty()
            && k.len() <= 256
            && k.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
        let value = !v.is_empty()
            && v.len() <= 256
            && !v.ends_with(' ')
            && v.bytes().all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        key && value
    };
    !s.is_empty() && s.len() <= MAX_STATE && s.split(',').count() <= 32 && s.split(',').all(member)
}

/// What a span is to its trace (OTLP's `SpanKind` numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

/// An attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Text(Cow<'static, str>),
    Int(i64),
}

impl From<&'static str> for Attr {
    fn from(v: &'static str) -> Self {
        Attr::Text(Cow::Borrowed(v))
    }
}

impl From<String> for Attr {
    fn from(v: String) -> Self {
        Attr::Text(Cow::Owned(v))
    }
}

/// A span as it is exported.
#[derive(Clone, Debug)]
pub struct Record {
    pub context: SpanContext,
    /// Its parent's span id, and whether that parent is remote.
    pub parent: Option<([u8; 8], bool)>,
    pub kind: Kind,
    pub name: String,
    pub start: SystemTime,
    pub end: SystemTime,
    pub attributes: Vec<(&'static str, Attr)>,
    /// Whether it failed (status ERROR).
    pub failed: bool,
}

/// Seeds [`next_random`] from the clock (once traces start).
pub fn seed() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    STATE.store(now.map_or(1, |d| d.as_nanos() as u64), Ordering::Relaxed);
}

/// The state of [`next_random`] (seeded from the clock by [`seed`]).
static STATE: AtomicU64 = AtomicU64::new(0x853C_49E6_748F_EA9B);

/// A pseudo-random number (splitmix64 over a counter): enough to pick one root in ten, cheaper
/// than the system's random source. Each thread steps a counter of its own (the threads do not
/// take turns at one cache line), started at a number drawn from the shared one.
pub fn next_random() -> u64 {
    thread_local! {
        static COUNTER: std::cell::Cell<u64> = std::cell::Cell::new(mix(STATE.fetch_add(GOLDEN, Ordering::Relaxed)));
    }
    mix(COUNTER.with(|c| {
        let z = c.get();
        c.set(z.wrapping_add(GOLDEN));
        z
    }))
}

/// splitmix64's step between two counter values.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output for counter value `z`.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_is_read_and_written_back_the_same() {
        let c = SpanContext::remote(TP, Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")).unwrap();
        assert!(c.remote && c.sampled());
        assert_eq!(c.trace_low(), 0xa3ce929d0e0e4736);
        assert_eq!(
            c.headers(),
            [
                ("traceparent".to_string(), TP.to_string()),
                (
                    "tracestate".to_string(),
                    "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7".to_string()
                )
            ]
        );
        // Upper case is read; a future version may carry more fields.
        assert!(SpanContext::remote(&TP.to_uppercase(), None).is_some());
        assert!(SpanContext::remote(&format!("01{}-more", &TP[2..]), None).is_some());
    }

    #[test]
    fn what_is_not_a_traceparent_is_no_parent() {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "garbage",
            "",
        ] {
            assert_eq!(SpanContext::remote(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn a_tracestate_that_is_not_one_is_left_out_and_the_parent_kept() {
        let long = format!("k={}", "v".repeat(MAX_STATE));
        let many = (0..33).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(",");
        for bad in [
            "Upper=1",
            "k=",
            "=v",
            "k=a,b",
            "k=v\u{1}w",
            long.as_str(),
            many.as_str(),
        ] {
            let c = SpanContext::remote(TP, Some(bad)).unwrap();
            assert_eq!(c.state, "", "{bad:?}");
            assert_eq!(c.headers().len(), 1);
        }
    }
}
