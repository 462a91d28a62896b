//! Spans in the trace (issue 42; issue 59: the OpenTelemetry SDK's, not a record of our own):
//! one `SdkTracerProvider` made at start when an OTLP endpoint is set, with the SDK's batch span
//! processor (its own thread; `OTEL_BSP_SCHEDULE_DELAY`, `…_MAX_EXPORT_BATCH_SIZE`,
//! `…_MAX_QUEUE_SIZE`, `…_EXPORT_TIMEOUT` as the SDK reads them: a request never waits for the
//! collector, a span past a full queue is dropped and said) in front of `crate::telemetry::otlp`'s
//! exporter, and the SDK's sampler from `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (default
//! `parentbased_always_on`). The sampler decides before a span is built: a span that is not
//! sampled is dropped at once and given no name or attributes ([`Traced::start`]). W3C trace
//! context is read and written by the SDK's `TraceContextPropagator` ([`parent`], [`headers`]).

use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracer, SdkTracerProvider, Span};

/// The provider (kept for the last export at a stop) and its tracer, once traces are on.
static TRACES: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// Longest [`shutdown`] waits for the last export.
const LAST_EXPORT: Duration = Duration::from_secs(5);

/// Why traces could not be started (they stay off; the server runs on).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The exporter could not be made (`crate::telemetry::otlp`).
    #[error(transparent)]
    Exporter(#[from] crate::telemetry::otlp::ExporterError),
    /// Traces were started twice (a bug).
    #[error("traces were started twice")]
    Twice,
}

/// Starts traces: the SDK's provider with its batch processor in front of `exporter`, its
/// sampler from the environment, `resource` the service's attributes.
pub fn start(
    exporter: opentelemetry_otlp::SpanExporter,
    resource: opentelemetry_sdk::Resource,
) -> Result<(), TraceError> {
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_resource(resource)
        .build();
    install(provider)
}

/// Makes `provider` the one spans are made by.
fn install(provider: SdkTracerProvider) -> Result<(), TraceError> {
    let tracer = provider.tracer(crate::telemetry::SCOPE);
    TRACES.set((provider, tracer)).map_err(|_| TraceError::Twice)
}

/// Whether spans are made (traces started).
pub fn on() -> bool {
    TRACES.get().is_some()
}

/// Exports the spans still waiting (for at most a few seconds), then stops the processor.
pub fn shutdown() {
    if let Some((provider, _)) = TRACES.get() {
        if let Err(e) = provider.shutdown_with_timeout(LAST_EXPORT) {
            tracing::warn!("the last spans were not exported: {e}");
        }
    }
}

/// A sampled span being made, ended (and queued for export) when dropped.
pub struct Traced {
    span: Mutex<Span>,
    /// Its ids (a child's parent, the context passed on).
    pub context: SpanContext,
}

impl Traced {
    /// A span of `kind` started now as a child of `parent` (else the root of a new trace), when
    /// the sampler keeps it: only then is it named by `name` and given `attributes` (neither is
    /// made for a span that is dropped). `None`: not sampled, or traces are off.
    pub fn start<A>(
        kind: SpanKind,
        parent: Option<&SpanContext>,
        name: impl FnOnce() -> Cow<'static, str>,
        attributes: impl FnOnce() -> A,
    ) -> Option<Self>
    where
        A: IntoIterator<Item = KeyValue>,
    {
        let (_, tracer) = TRACES.get()?;
        let cx = match parent {
            Some(p) => Context::new().with_remote_span_context(p.clone()),
            None => Context::new(),
        };
        // The sampler runs here, before the span's data exists.
        let mut span = tracer
            .span_builder("span")
            .with_kind(kind)
            .start_with_context(tracer, &cx);
        if !span.is_recording() {
            return None;
        }
        span.update_name(name());
        span.set_attributes(attributes());
        let context = span.span_context().clone();
        Some(Traced {
            span: Mutex::new(span),
            context,
        })
    }

    /// Sets `attributes`.
    pub fn set(&self, attributes: impl IntoIterator<Item = KeyValue>) {
        self.span().set_attributes(attributes);
    }

    /// Marks it failed (`error.type` `why`, status ERROR), with `attributes` beside.
    pub fn failed(&self, why: String, attributes: impl IntoIterator<Item = KeyValue>) {
        let mut span = self.span();
        span.set_attributes(attributes.into_iter().chain([KeyValue::new("error.type", why)]));
        span.set_status(Status::error(""));
    }

    fn span(&self) -> std::sync::MutexGuard<'_, Span> {
        self.span.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The W3C trace context of a `traceparent` (and `tracestate`) from elsewhere, read by the SDK's
/// propagator; `None` when it is not one (a `tracestate` that is not one is left out, the parent
/// kept). The fields' lengths are checked first: the SDK's propagator (0.33) reads a trace id of
/// 31 digits as one with a leading zero, where W3C says such a header is no parent.
pub fn parent(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let mut fields = traceparent.trim().split('-').map(str::len);
    if (fields.next()?, fields.next()?, fields.next()?, fields.next()?) != (2, 32, 16, 2) {
        return None;
    }
    struct Received<'a>(&'a str, Option<&'a str>);
    impl Extractor for Received<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            match key {
                "traceparent" => Some(self.0.trim()),
                "tracestate" => self.1,
                _ => None,
            }
        }
        fn keys(&self) -> Vec<&str> {
            vec!["traceparent", "tracestate"]
        }
    }
    // The SDK's `TraceState` takes a member with an empty key (`=v`), which W3C Trace Context
    // does not allow: such a header is left out, the parent kept, as for its other faults.
    let tracestate = tracestate.filter(|s| !s.split(',').any(|m| m.trim_start().starts_with('=')));
    let cx = TraceContextPropagator::new().extract(&Received(traceparent, tracestate));
    let context = cx.span().span_context().clone();
    context.is_valid().then_some(context)
}

/// The headers passing `context` on (`traceparent`, and `tracestate` when there is one), written
/// by the SDK's propagator.
pub fn headers(context: &SpanContext) -> Vec<(String, String)> {
    struct Out(Vec<(String, String)>);
    impl Injector for Out {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_string(), value));
        }
    }
    let mut out = Out(Vec::with_capacity(2));
    let cx = Context::new().with_remote_span_context(context.clone());
    TraceContextPropagator::new().inject_context(&cx, &mut out);
    out.0.retain(|(_, v)| !v.is_empty());
    out.0
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags};
    use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SimpleSpanProcessor, SpanData};

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const NOT_SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

    /// Traces on for this test binary, into memory, sampled as `parentbased_traceidratio` 0:
    /// what a span exported looks like, and that the sampler decides before it is made.
    pub(crate) fn in_memory() -> &'static InMemorySpanExporter {
        static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
        EXPORTER.get_or_init(|| {
            let exporter = InMemorySpanExporter::default();
            let provider = SdkTracerProvider::builder()
                .with_span_processor(SimpleSpanProcessor::new(exporter.clone()))
                .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.0))))
                .build();
            install(provider).unwrap();
            exporter
        })
    }

    /// The spans exported of trace `of`.
    pub(crate) fn exported(of: &SpanContext) -> Vec<SpanData> {
        let all = in_memory().get_finished_spans().unwrap();
        all.into_iter()
            .filter(|s| s.span_context.trace_id() == of.trace_id())
            .collect()
    }

    #[test]
    fn a_traceparent_is_read_and_written_back_the_same() {
        let c = parent(TP, Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")).unwrap();
        assert!(c.is_remote() && c.is_sampled());
        assert_eq!(
            headers(&c),
            [
                ("traceparent".to_string(), TP.to_string()),
                (
                    "tracestate".to_string(),
                    "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7".to_string()
                )
            ]
        );
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
            assert_eq!(parent(bad, None), None, "{bad}");
        }
    }

    #[test]
    fn a_tracestate_that_is_not_one_is_left_out_and_the_parent_kept() {
        for bad in ["Upper=1", "=v", "k=a,b"] {
            let c = parent(TP, Some(bad)).unwrap();
            assert_eq!(headers(&c).len(), 1, "{bad:?}");
        }
    }

    #[test]
    fn a_sampled_parents_child_is_made_with_its_name_and_a_root_is_not_sampled() {
        in_memory();
        let remote = parent(TP, Some("k=v")).unwrap();
        let child = Traced::start(
            SpanKind::Server,
            Some(&remote),
            || "tools/call echo".into(),
            || [KeyValue::new("a", 1)],
        )
        .unwrap();
        assert_eq!(child.context.trace_id(), remote.trace_id());
        assert_ne!(child.context.span_id(), remote.span_id());
        assert!(!child.context.is_remote() && child.context.is_sampled());
        child.failed("-32602".into(), [KeyValue::new("rpc.response.status_code", -32602)]);
        let context = child.context.clone();
        drop(child);
        let spans = exported(&context);
        assert_eq!(spans.len(), 1);
        let s = &spans[0];
        assert_eq!(s.name, "tools/call echo");
        assert_eq!(s.parent_span_id, remote.span_id());
        assert!(s.parent_span_is_remote);
        assert_eq!(s.span_kind, SpanKind::Server);
        assert_eq!(s.status, Status::error(""));
        let keys: Vec<_> = s.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(keys, ["a", "rpc.response.status_code", "error.type"]);

        // Not sampled: a root at ratio 0, a parent that is not sampled. Neither is named.
        let named = std::cell::Cell::new(false);
        let name = || {
            named.set(true);
            Cow::Borrowed("x")
        };
        assert!(Traced::start(SpanKind::Server, None, name, Vec::new).is_none());
        let unsampled = parent(NOT_SAMPLED, None).unwrap();
        assert_eq!(unsampled.trace_flags(), TraceFlags::default());
        assert!(Traced::start(SpanKind::Server, Some(&unsampled), name, Vec::new).is_none());
        assert!(!named.get(), "a span that is not sampled is not named");
        assert_ne!(remote.span_id(), SpanId::INVALID);
    }
}
