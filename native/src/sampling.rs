//! Head sampling of traces (issue 42): whether a request is traced is decided before its span
//! exists, from `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the OpenTelemetry SDK's
//! variables, with their meanings) and the W3C trace context it arrives with. A request that is
//! not traced gets a span only the log layer sees: the trace layer never builds the attributes of
//! a span its sampler would then drop (nine in ten at a ratio of 0.1: most of what traces cost).
//! The SDK then keeps every span it is given (`Sampler::AlwaysOn`).

use std::sync::atomic::{AtomicU64, Ordering};

/// A sampler read from the environment: roots traced at `ratio`; with `parent_based`, a request
/// with a parent follows the parent's `sampled` flag, else its trace id decides at `ratio` (the
/// same choice every service of the trace makes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampler {
    ratio: f64,
    parent_based: bool,
}

impl Sampler {
    /// The sampler `OTEL_TRACES_SAMPLER` names (default `parentbased_always_on`), its
    /// `OTEL_TRACES_SAMPLER_ARG` the ratio of the `traceidratio` ones (default 1). A name this
    /// binary does not know is the default, as the SDK does.
    pub fn from_env() -> Self {
        let var = |n: &str| std::env::var(n).ok();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        STATE.store(now.map_or(1, |d| d.as_nanos() as u64), Ordering::Relaxed);
        Self::named(
            var("OTEL_TRACES_SAMPLER").as_deref(),
            var("OTEL_TRACES_SAMPLER_ARG").as_deref(),
        )
    }

    fn named(name: Option<&str>, arg: Option<&str>) -> Self {
        let ratio = || {
            arg.and_then(|a| a.trim().parse::<f64>().ok())
                .filter(|r| (0.0..=1.0).contains(r))
                .unwrap_or(1.0)
        };
        let (ratio, parent_based) = match name.map(str::trim).unwrap_or_default() {
            "always_on" => (1.0, false),
            "always_off" => (0.0, false),
            "traceidratio" => (ratio(), false),
            "parentbased_always_off" => (0.0, true),
            "parentbased_traceidratio" => (ratio(), true),
            _ => (1.0, true),
        };
        Sampler { ratio, parent_based }
    }

    /// Whether a request whose parent's `traceparent` is `parent` (none, or one that does not
    /// parse: a root) is traced.
    pub fn traced(&self, parent: Option<&str>) -> bool {
        match parent.and_then(parse) {
            Some((_, sampled)) if self.parent_based => sampled,
            Some((low, _)) => self.keeps(low),
            None => self.keeps(next_random()),
        }
    }

    /// The SDK's `traceidratio` rule on the low 64 bits of a trace id (or a random number).
    fn keeps(&self, low: u64) -> bool {
        let bound = (self.ratio * (1u64 << 63) as f64) as u64;
        (low >> 1) < bound
    }
}

/// A W3C `traceparent`'s trace id (its low 64 bits) and `sampled` flag; `None` when it is not
/// one (an all-zero id is not).
fn parse(tp: &str) -> Option<(u64, bool)> {
    let mut parts = tp.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && hex(span, 16)
        && hex(flags, 2)
        && (version != "00" || parts.next().is_none());
    if !valid || trace.bytes().all(|b| b == b'0') || span.bytes().all(|b| b == b'0') {
        return None;
    }
    let low = u64::from_str_radix(&trace[16..], 16).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some((low, flags & 1 == 1))
}

/// The state of [`next_random`] (seeded from the clock by [`Sampler::from_env`]).
static STATE: AtomicU64 = AtomicU64::new(0x853C_49E6_748F_EA9B);

/// A pseudo-random number (splitmix64 over a counter): enough to pick one root in ten, cheaper
/// than the system's random source. Each thread steps a counter of its own (the threads do not
/// take turns at one cache line), started at a number drawn from the shared one.
fn next_random() -> u64 {
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

    const SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const NOT_SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

    #[test]
    fn the_sdk_default_follows_the_parent_and_traces_every_root() {
        let s = Sampler::named(None, None);
        assert!(s.traced(None));
        assert!(s.traced(Some(SAMPLED)));
        assert!(!s.traced(Some(NOT_SAMPLED)));
    }

    #[test]
    fn parentbased_traceidratio_zero_follows_a_sampled_parent_and_drops_roots() {
        let s = Sampler::named(Some("parentbased_traceidratio"), Some("0"));
        assert!(s.traced(Some(SAMPLED)));
        assert!(!s.traced(Some(NOT_SAMPLED)));
        assert!((0..1000).all(|_| !s.traced(None)));
        // A traceparent that is not one is no parent: a root.
        assert!(!s.traced(Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01")));
        assert!(!s.traced(Some("garbage")));
    }

    #[test]
    fn a_ratio_traces_about_that_share_of_roots() {
        let s = Sampler::named(Some("traceidratio"), Some("0.1"));
        let traced = (0..20_000).filter(|_| s.traced(None)).count();
        assert!(
            (1_600..2_400).contains(&traced),
            "{traced} of 20,000 roots traced at 0.1"
        );
    }

    #[test]
    fn traceidratio_decides_by_the_trace_id_not_the_parents_flag() {
        let s = Sampler::named(Some("traceidratio"), Some("0.5"));
        // The low 64 bits of the id: 0 is kept at any ratio above 0, all ones at none below 1.
        let low = "00-4bf92f3577b34da60000000000000000-00f067aa0ba902b7-00";
        let high = "00-4bf92f3577b34da6ffffffffffffffff-00f067aa0ba902b7-01";
        assert!(s.traced(Some(low)));
        assert!(!s.traced(Some(high)));
        assert!(Sampler::named(Some("always_on"), None).traced(Some(NOT_SAMPLED)));
        assert!(!Sampler::named(Some("always_off"), None).traced(Some(SAMPLED)));
    }

    #[test]
    fn a_bad_ratio_or_an_unknown_name_is_the_default() {
        assert_eq!(Sampler::named(Some("traceidratio"), Some("2")).ratio, 1.0);
        assert_eq!(Sampler::named(Some("jaeger_remote"), None), Sampler::named(None, None));
    }
}
