//! Head sampling of traces (issue 42): whether a request is traced is decided before its span
//! exists, from `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the OpenTelemetry SDK's
//! variables, with their meanings) and the W3C trace context it arrives with. A request that is
//! not traced makes no span (nine in ten at a ratio of 0.1); every span made is queued for export.

use crate::telemetry::spans::{next_random, SpanContext};

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
        crate::telemetry::spans::seed();
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

    /// Whether a request whose parent is `parent` (`None`: a root) is traced.
    pub fn traced(&self, parent: Option<&SpanContext>) -> bool {
        match parent {
            Some(p) if self.parent_based => p.sampled(),
            Some(p) => self.keeps(p.trace_low()),
            None => self.keeps(next_random()),
        }
    }

    /// The SDK's `traceidratio` rule on the low 64 bits of a trace id (or a random number).
    fn keeps(&self, low: u64) -> bool {
        let bound = (self.ratio * (1u64 << 63) as f64) as u64;
        (low >> 1) < bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent(traceparent: &str) -> Option<SpanContext> {
        SpanContext::remote(traceparent, None)
    }

    const SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const NOT_SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

    #[test]
    fn the_sdk_default_follows_the_parent_and_traces_every_root() {
        let s = Sampler::named(None, None);
        assert!(s.traced(None));
        assert!(s.traced(parent(SAMPLED).as_ref()));
        assert!(!s.traced(parent(NOT_SAMPLED).as_ref()));
    }

    #[test]
    fn parentbased_traceidratio_zero_follows_a_sampled_parent_and_drops_roots() {
        let s = Sampler::named(Some("parentbased_traceidratio"), Some("0"));
        assert!(s.traced(parent(SAMPLED).as_ref()));
        assert!(!s.traced(parent(NOT_SAMPLED).as_ref()));
        assert!((0..1000).all(|_| !s.traced(None)));
        // A traceparent that is not one is no parent: a root.
        assert!(!s.traced(parent("00-00000000000000000000000000000000-00f067aa0ba902b7-01").as_ref()));
        assert!(!s.traced(parent("garbage").as_ref()));
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
        assert!(s.traced(parent(low).as_ref()));
        assert!(!s.traced(parent(high).as_ref()));
        assert!(Sampler::named(Some("always_on"), None).traced(parent(NOT_SAMPLED).as_ref()));
        assert!(!Sampler::named(Some("always_off"), None).traced(parent(SAMPLED).as_ref()));
    }

    #[test]
    fn a_bad_ratio_or_an_unknown_name_is_the_default() {
        assert_eq!(Sampler::named(Some("traceidratio"), Some("2")).ratio, 1.0);
        assert_eq!(Sampler::named(Some("jaeger_remote"), None), Sampler::named(None, None));
    }
}
