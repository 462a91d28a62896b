//! The OTLP/HTTP span exporter of the native binary (issue 42): finished spans
//! (`crate::telemetry::spans::Record`) converted to the OpenTelemetry project's generated messages
//! (`opentelemetry-proto`, an `ExportTraceServiceRequest`), encoded by prost and posted to the
//! collector by this binary's hyper client; a unit test checks them against the OpenTelemetry
//! SDK's own conversion of the same spans. The collector's headers come from
//! `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values
//! percent-decoded), the service from `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`, as the
//! SDK reads them.

use std::time::{Duration, SystemTime};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{status, ResourceSpans, ScopeSpans, Span, Status};
use prost::Message;

use crate::telemetry::spans::{Attr, Record};

/// Longest one export may take, unless `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` says otherwise (milliseconds, as the SDK reads them).
const EXPORT_DEADLINE: Duration = Duration::from_secs(10);

/// The instrumentation scope of every span.
const SCOPE: &str = "mcp-sieve";

/// Posts batches of spans to `endpoint` (`…/v1/traces`).
pub struct Exporter {
    runtime: tokio::runtime::Runtime,
    client: hyper_util::client::legacy::Client<crate::http::tls::Connector, http_body_util::Full<bytes::Bytes>>,
    endpoint: hyper::Uri,
    headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    deadline: Duration,
    /// The service's attributes, made once.
    resource: Resource,
}

impl Exporter {
    /// An exporter to `endpoint`, on a runtime of its own (the export thread sends from outside
    /// the server's runtime, and the last spans still go out after it stopped).
    pub fn new(endpoint: &str) -> Result<Self, String> {
        let endpoint = endpoint
            .parse()
            .map_err(|e| format!("the OTLP endpoint {endpoint} is not a URL: {e}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp-sieve-otlp")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the exporter's runtime: {e}"))?;
        let client = {
            let _in = runtime.enter();
            crate::http::tls::client(crate::http::tls::Connector::plain())
        };
        let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
        let headers = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|h| headers(&h))
            .unwrap_or_default();
        let deadline = var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(EXPORT_DEADLINE, Duration::from_millis);
        Ok(Exporter {
            runtime,
            client,
            endpoint,
            headers,
            deadline,
            resource: service(&resource(var("OTEL_SERVICE_NAME"), var("OTEL_RESOURCE_ATTRIBUTES"))),
        })
    }

    /// Posts `spans`, waiting for the collector's answer (at most the deadline).
    pub fn export(&self, spans: &[Record]) -> Result<(), String> {
        let body = bytes::Bytes::from(encode(spans, &self.resource));
        let mut request = hyper::Request::post(self.endpoint.clone())
            .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
            .body(http_body_util::Full::new(body))
            .map_err(|e| e.to_string())?;
        request.headers_mut().extend(self.headers.iter().cloned());
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| e.to_string())?;
            let status = response.status();
            // Read to its end, so the connection is kept for the next batch.
            http_body_util::BodyExt::collect(response.into_body())
                .await
                .map_err(|e| e.to_string())?;
            if status.is_success() {
                Ok(())
            } else {
                Err(format!("the collector answered HTTP {status}"))
            }
        };
        self.runtime.block_on(async {
            tokio::time::timeout(self.deadline, exchange)
                .await
                .map_err(|_| format!("no answer within {} ms", self.deadline.as_millis()))?
        })
    }
}

/// The service's attributes: `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`, values percent-decoded), its
/// `service.name` replaced by `OTEL_SERVICE_NAME` when set (else `mcp-sieve`), then this
/// binary's version and SDK.
fn resource(service: Option<String>, attributes: Option<String>) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = Vec::new();
    let given = attributes.as_deref().map(pairs).unwrap_or_default();
    for (k, v) in given.into_iter().filter(|(k, _)| !k.is_empty()) {
        match all.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => all.push((k, v)),
        }
    }
    let named = all.iter().position(|(k, _)| k == "service.name");
    match (service, named) {
        (Some(s), Some(i)) => all[i].1 = s,
        (Some(s), None) => all.insert(0, ("service.name".into(), s)),
        (None, None) => all.insert(0, ("service.name".into(), SCOPE.into())),
        (None, Some(_)) => {}
    }
    for (k, v) in [
        ("service.version", env!("CARGO_PKG_VERSION")),
        ("telemetry.sdk.name", SCOPE),
        ("telemetry.sdk.language", "rust"),
        ("telemetry.sdk.version", env!("CARGO_PKG_VERSION")),
    ] {
        if !all.iter().any(|(key, _)| key == k) {
            all.push((k.into(), v.into()));
        }
    }
    all
}

/// The `Resource` of the service's attributes.
fn service(attributes: &[(String, String)]) -> Resource {
    Resource {
        attributes: attributes
            .iter()
            .map(|(k, v)| key_value(k, &Attr::Text(v.clone().into())))
            .collect(),
        ..Resource::default()
    }
}

/// `k=v,k2=v2` (values percent-decoded) as headers; pairs that are not headers are left out.
fn headers(text: &str) -> Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)> {
    pairs(text)
        .into_iter()
        .filter_map(|(k, v)| Some((k.parse().ok()?, v.parse().ok()?)))
        .collect()
}

/// `k=v,k2=v2` as pairs (keys trimmed, values trimmed and percent-decoded); a part with no `=`
/// is left out.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            Some((k.trim().to_string(), percent_decode(v.trim())))
        })
        .collect()
}

/// `a%20b` → `a b` (an invalid escape is kept as written; bytes that are not UTF-8 become U+FFFD).
fn percent_decode(v: &str) -> String {
    percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned()
}

/// The `ExportTraceServiceRequest` of `spans` under `resource`, encoded: one `ResourceSpans`
/// holding one `ScopeSpans` (this binary's).
pub fn encode(spans: &[Record], resource: &Resource) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource.clone()),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE.into(),
                    ..InstrumentationScope::default()
                }),
                spans: spans.iter().map(span).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
    .encode_to_vec()
}

/// A `Span` of a finished record.
fn span(s: &Record) -> Span {
    let context = &s.context;
    let remote = s.parent.is_some_and(|(_, remote)| remote);
    Span {
        trace_id: context.trace_id.to_vec(),
        span_id: context.span_id.to_vec(),
        trace_state: context.state.clone(),
        parent_span_id: s.parent.map(|(p, _)| p.to_vec()).unwrap_or_default(),
        // Its trace flags, and whether its parent is remote (known: bit 8; remote: bit 9).
        flags: u32::from(context.flags) | 0x100 | if remote { 0x200 } else { 0 },
        name: s.name.clone(),
        kind: s.kind as i32,
        start_time_unix_nano: nanos(s.start),
        end_time_unix_nano: nanos(s.end),
        attributes: s.attributes.iter().map(|(k, v)| key_value(k, v)).collect(),
        status: Some(Status {
            message: String::new(),
            code: if s.failed {
                status::StatusCode::Error
            } else {
                status::StatusCode::Unset
            } as i32,
        }),
        ..Span::default()
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// An attribute.
fn key_value(key: &str, value: &Attr) -> KeyValue {
    let value = match value {
        Attr::Text(v) => any_value::Value::StringValue(v.to_string()),
        Attr::Int(v) => any_value::Value::IntValue(*v),
    };
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::spans::{Kind, SpanContext};
    use opentelemetry::trace::{SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
    use opentelemetry::{InstrumentationScope, KeyValue};
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
    use opentelemetry_sdk::Resource;

    const TP: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn record(name: &str, kind: Kind, parent: Option<([u8; 8], bool)>, failed: bool) -> Record {
        let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_000_000_123_456_789);
        let mut context = SpanContext::remote(TP, Some("k=v")).unwrap();
        context.span_id[7] ^= name.len() as u8;
        Record {
            context,
            parent,
            kind,
            name: name.into(),
            start: at,
            end: at + Duration::from_micros(1500),
            attributes: vec![
                ("mcp.method.name", "tools/call".into()),
                ("rpc.response.status_code", Attr::Int(-32602)),
                ("empty", "".into()),
                ("long", "x".repeat(300).into()),
            ],
            failed,
        }
    }

    /// The SDK's own span for `r` (what its exporter would have been given).
    fn sdk(r: &Record) -> SpanData {
        let c = &r.context;
        let state: TraceState = c.state.parse().unwrap();
        SpanData {
            span_context: opentelemetry::trace::SpanContext::new(
                TraceId::from_bytes(c.trace_id),
                SpanId::from_bytes(c.span_id),
                TraceFlags::new(c.flags),
                false,
                state,
            ),
            parent_span_id: r.parent.map_or(SpanId::INVALID, |(p, _)| SpanId::from_bytes(p)),
            parent_span_is_remote: r.parent.is_some_and(|(_, remote)| remote),
            span_kind: match r.kind {
                Kind::Internal => SpanKind::Internal,
                Kind::Server => SpanKind::Server,
                Kind::Client => SpanKind::Client,
            },
            name: r.name.clone().into(),
            start_time: r.start,
            end_time: r.end,
            attributes: r
                .attributes
                .iter()
                .map(|(k, v)| match v {
                    Attr::Text(t) => KeyValue::new(*k, t.to_string()),
                    Attr::Int(i) => KeyValue::new(*k, *i),
                })
                .collect(),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: if r.failed { Status::error("") } else { Status::Unset },
            instrumentation_scope: InstrumentationScope::builder(SCOPE).build(),
        }
    }

    /// A request's resource attributes in key order (the SDK keeps them in a hash map).
    fn sorted(mut r: ExportTraceServiceRequest) -> ExportTraceServiceRequest {
        for rs in &mut r.resource_spans {
            if let Some(res) = rs.resource.as_mut() {
                res.attributes.sort_by(|a, b| a.key.cmp(&b.key));
            }
        }
        r
    }

    #[test]
    fn spans_decode_as_the_sdks_own_conversion_of_them() {
        let spans = vec![
            record("tools/call echo", Kind::Server, Some(([1; 8], true)), false),
            record("tools/call upstream_echo", Kind::Client, Some(([2; 8], false)), true),
            record("search", Kind::Internal, None, false),
        ];
        let attributes = resource(Some("svc".into()), Some("deployment.environment=test".into()));
        let ours = sorted(ExportTraceServiceRequest::decode(&encode(&spans, &service(&attributes))[..]).unwrap());
        let resource = Resource::builder_empty()
            .with_attributes(attributes.iter().map(|(k, v)| KeyValue::new(k.clone(), v.clone())))
            .build();
        let theirs = sorted(ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans.iter().map(sdk).collect(),
                &ResourceAttributesWithSchema::from(&resource),
            ),
        });
        assert_eq!(ours, theirs);
        assert_eq!(ours.resource_spans[0].scope_spans[0].spans.len(), 3);
    }

    #[test]
    fn the_service_is_named_as_the_sdk_names_it() {
        let named = |r: &[(String, String)]| r.iter().find(|(k, _)| k == "service.name").map(|(_, v)| v.clone());
        assert_eq!(named(&resource(None, None)).as_deref(), Some("mcp-sieve"));
        let attrs = Some("service.name=from%20attrs, team = core,=nameless".to_string());
        let r = resource(None, attrs.clone());
        assert_eq!(named(&r).as_deref(), Some("from attrs"));
        assert!(r.contains(&("team".into(), "core".into())));
        assert!(r.iter().all(|(k, _)| !k.is_empty()));
        // OTEL_SERVICE_NAME wins over the attribute.
        assert_eq!(named(&resource(Some("svc".into()), attrs)).as_deref(), Some("svc"));
        assert!(r
            .iter()
            .any(|(k, v)| k == "service.version" && v == env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn headers_are_read_as_the_sdk_reads_them() {
        let h = headers("authorization=Bearer%20abc, x-tenant = one ,bad header=1,novalue");
        let text: Vec<_> = h.iter().map(|(k, v)| (k.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(text, [("authorization", "Bearer abc"), ("x-tenant", "one")]);
        assert_eq!(percent_decode("a%2Cb%zz%4"), "a,b%zz%4");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }
}
