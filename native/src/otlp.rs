//! The OTLP/HTTP span exporter of the native binary (issue 42): finished spans
//! (`crate::spans::Record`) written straight into the protobuf bytes of an
//! `ExportTraceServiceRequest` (opentelemetry-proto's `trace.proto`, field by field; a unit test
//! decodes them with the project's generated types against the OpenTelemetry SDK's own conversion
//! of the same spans) and posted to the collector by this binary's hyper client. The collector's
//! headers come from `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS`
//! (`k=v,k2=v2`, values percent-decoded), the service from `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`, as the SDK reads them.

use std::time::{Duration, SystemTime};

use crate::spans::{Attr, Record};

/// Longest one export may take, unless `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` says otherwise (milliseconds, as the SDK reads them).
const EXPORT_DEADLINE: Duration = Duration::from_secs(10);

/// The instrumentation scope of every span.
const SCOPE: &str = "mcp-sieve";

/// Posts batches of spans to `endpoint` (`…/v1/traces`).
pub struct Exporter {
    runtime: tokio::runtime::Runtime,
    client: hyper_util::client::legacy::Client<crate::tls::Connector, http_body_util::Full<bytes::Bytes>>,
    endpoint: hyper::Uri,
    headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    deadline: Duration,
    /// The `Resource` message (the service's attributes), encoded once.
    resource: Vec<u8>,
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
            crate::tls::client(crate::tls::Connector::plain())
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
            resource: encode_resource(&resource(var("OTEL_SERVICE_NAME"), var("OTEL_RESOURCE_ATTRIBUTES"))),
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

/// A `Resource` message's fields.
fn encode_resource(attributes: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in attributes {
        message(&mut out, 1, |b| key_value(b, k, &Attr::Text(v.clone().into())));
    }
    out
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

/// `a%20b` → `a b` (an invalid escape is kept as written).
fn percent_decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `ExportTraceServiceRequest` of `spans`, under the encoded `Resource` `resource`: one
/// `ResourceSpans` holding one `ScopeSpans` (this binary's).
pub fn encode(spans: &[Record], resource: &[u8]) -> Vec<u8> {
    // A span with a dozen attributes takes about 500 bytes: one allocation for most batches.
    let mut out = Vec::with_capacity(256 + spans.len() * 640);
    message(&mut out, 1, |rs| {
        message(rs, 1, |r| r.extend_from_slice(resource));
        message(rs, 2, |ss| {
            message(ss, 1, |is| string(is, 1, SCOPE));
            for s in spans {
                message(ss, 2, |b| span(b, s));
            }
        });
    });
    out
}

/// A `Span`, in prost's field order.
fn span(b: &mut Vec<u8>, s: &Record) {
    let context = &s.context;
    bytes(b, 1, &context.trace_id);
    bytes(b, 2, &context.span_id);
    string(b, 3, &context.state);
    if let Some((parent, _)) = &s.parent {
        bytes(b, 4, parent);
    }
    string(b, 5, &s.name);
    uint(b, 6, s.kind as u64);
    fixed64(b, 7, nanos(s.start));
    fixed64(b, 8, nanos(s.end));
    for (k, v) in &s.attributes {
        message(b, 9, |m| key_value(m, k, v));
    }
    // Its status: ERROR (2) with no message, or UNSET.
    message(b, 15, |m| uint(m, 3, if s.failed { 2 } else { 0 }));
    let remote = s.parent.is_some_and(|(_, remote)| remote);
    fixed32(b, 16, flags(remote, context.flags));
}

/// A span's `flags`: its trace flags, and whether its parent is remote (known: bit 8; remote: bit 9).
fn flags(remote: bool, trace_flags: u8) -> u32 {
    u32::from(trace_flags) | 0x100 | if remote { 0x200 } else { 0 }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A `KeyValue`'s fields.
#[inline]
fn key_value(b: &mut Vec<u8>, key: &str, value: &Attr) {
    string(b, 1, key);
    // The `AnyValue`, its oneof written even when it is the default.
    message(b, 2, |m| match value {
        Attr::Text(v) => {
            tag(m, 1, 2);
            varint(m, v.len() as u64);
            m.extend_from_slice(v.as_bytes());
        }
        Attr::Int(v) => tag_varint(m, 3, *v as u64),
    });
}

/// A nested message as field `field`: written in place after one byte kept for its length,
/// which is that byte when under 128 (most attributes), else put there as a longer varint.
#[inline]
fn message(b: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    tag(b, field, 2);
    let at = b.len();
    b.push(0);
    write(b);
    let len = b.len() - at - 1;
    if len < 0x80 {
        b[at] = len as u8;
        return;
    }
    let (prefix, n) = varint_bytes(len as u64);
    b.splice(at..at + 1, prefix[..n].iter().copied());
}

/// A string field (left out when empty, as proto3 does).
#[inline]
fn string(b: &mut Vec<u8>, field: u32, v: &str) {
    bytes(b, field, v.as_bytes());
}

/// A bytes field (left out when empty).
#[inline]
fn bytes(b: &mut Vec<u8>, field: u32, v: &[u8]) {
    if !v.is_empty() {
        tag(b, field, 2);
        varint(b, v.len() as u64);
        b.extend_from_slice(v);
    }
}

/// An unsigned varint field (left out when 0).
#[inline]
fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        tag_varint(b, field, v);
    }
}

#[inline]
fn tag_varint(b: &mut Vec<u8>, field: u32, v: u64) {
    tag(b, field, 0);
    varint(b, v);
}

#[inline]
fn fixed64(b: &mut Vec<u8>, field: u32, v: u64) {
    if v != 0 {
        tag(b, field, 1);
        b.extend_from_slice(&v.to_le_bytes());
    }
}

#[inline]
fn fixed32(b: &mut Vec<u8>, field: u32, v: u32) {
    if v != 0 {
        tag(b, field, 5);
        b.extend_from_slice(&v.to_le_bytes());
    }
}

#[inline]
fn tag(b: &mut Vec<u8>, field: u32, wire: u32) {
    varint(b, u64::from(field << 3 | wire));
}

/// A varint: one byte for most (tags, short lengths), pushed without the general loop.
#[inline]
fn varint(b: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        b.push(v as u8);
        return;
    }
    let (bytes, n) = varint_bytes(v);
    b.extend_from_slice(&bytes[..n]);
}

/// `v` as a protobuf varint: its bytes, and how many.
fn varint_bytes(mut v: u64) -> ([u8; 10], usize) {
    let (mut bytes, mut n) = ([0u8; 10], 0);
    while v >= 0x80 {
        bytes[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    (bytes, n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spans::{Kind, SpanContext};
    use opentelemetry::trace::{SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
    use opentelemetry::{InstrumentationScope, KeyValue};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
    use opentelemetry_sdk::Resource;
    use prost::Message;

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
        let ours =
            sorted(ExportTraceServiceRequest::decode(&encode(&spans, &encode_resource(&attributes))[..]).unwrap());
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
    }
}
