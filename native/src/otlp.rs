//! The OTLP/HTTP span exporter of the native binary (issue 42): the SDK's finished spans written
//! straight into the protobuf bytes of an `ExportTraceServiceRequest` (opentelemetry-proto's
//! `trace.proto`, field by field) and posted to the collector by this binary's hyper client.
//! opentelemetry-otlp's exporter first copied every span into generated structs (each attribute's
//! key and value into a new `String`) and measured each nested message again at every level: in
//! `perf`, exporting cost about twice what making the spans did. The collector's headers come
//! from `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`,
//! values percent-decoded), as the SDK reads them.

use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

/// Longest one export may take.
const EXPORT_DEADLINE: Duration = Duration::from_secs(10);

/// Posts batches of spans to `endpoint` (`…/v1/traces`).
#[derive(Debug)]
pub struct Exporter {
    runtime: tokio::runtime::Runtime,
    client: hyper_util::client::legacy::Client<crate::tls::Connector, http_body_util::Full<bytes::Bytes>>,
    endpoint: hyper::Uri,
    headers: Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)>,
    /// The `Resource` message (the service's attributes), encoded once.
    resource: Vec<u8>,
}

impl Exporter {
    /// An exporter to `endpoint`, on a runtime of its own (the batch processor's thread sends
    /// from outside the server's runtime, and the last spans still go out after it stopped).
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
        Ok(Exporter {
            runtime,
            client,
            endpoint,
            headers,
            resource: Vec::new(),
        })
    }
}

impl SpanExporter for Exporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let mut request = hyper::Request::post(self.endpoint.clone())
            .header(hyper::header::CONTENT_TYPE, "application/x-protobuf")
            .body(http_body_util::Full::new(bytes::Bytes::from(encode(
                &batch,
                &self.resource,
            ))))
            .map_err(|e| OTelSdkError::InternalFailure(e.to_string()))?;
        request.headers_mut().extend(self.headers.iter().cloned());
        let sent = self.client.request(request);
        let answer = self.runtime.spawn(async move {
            let exchange = async {
                let response = sent.await.map_err(|e| e.to_string())?;
                let status = response.status();
                // Read to its end, so the connection is kept for the next batch.
                http_body_util::BodyExt::collect(response.into_body())
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(status)
            };
            tokio::time::timeout(EXPORT_DEADLINE, exchange)
                .await
                .map_err(|_| format!("no answer within {} s", EXPORT_DEADLINE.as_secs()))?
        });
        match answer.await {
            Ok(Ok(status)) if status.is_success() => Ok(()),
            Ok(Ok(status)) => Err(OTelSdkError::InternalFailure(format!(
                "the collector answered HTTP {status}"
            ))),
            Ok(Err(e)) => Err(OTelSdkError::InternalFailure(e)),
            Err(e) => Err(OTelSdkError::InternalFailure(format!("the export stopped: {e}"))),
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource.clear();
        for (k, v) in resource.iter() {
            message(&mut self.resource, 1, |b| key_value(b, k.as_str(), v));
        }
    }
}

/// `k=v,k2=v2` (values percent-decoded) as headers; pairs that are not headers are left out.
fn headers(text: &str) -> Vec<(hyper::header::HeaderName, hyper::header::HeaderValue)> {
    text.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let v = percent_decode(v.trim());
            Some((k.trim().parse().ok()?, v.parse().ok()?))
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
/// `ResourceSpans`, one `ScopeSpans` per instrumentation scope, in the order first seen.
pub fn encode(spans: &[SpanData], resource: &[u8]) -> Vec<u8> {
    // A span with a dozen attributes takes about 500 bytes: one allocation for most batches.
    let mut out = Vec::with_capacity(256 + spans.len() * 640);
    message(&mut out, 1, |rs| {
        message(rs, 1, |r| r.extend_from_slice(resource));
        let mut scopes: Vec<&opentelemetry::InstrumentationScope> = Vec::new();
        for s in spans {
            if !scopes.contains(&&s.instrumentation_scope) {
                scopes.push(&s.instrumentation_scope);
            }
        }
        for scope in scopes {
            message(rs, 2, |ss| {
                message(ss, 1, |is| {
                    string(is, 1, scope.name());
                    string(is, 2, scope.version().unwrap_or_default());
                    for kv in scope.attributes() {
                        message(is, 3, |b| key_value(b, kv.key.as_str(), &kv.value));
                    }
                });
                for s in spans.iter().filter(|s| s.instrumentation_scope == *scope) {
                    message(ss, 2, |b| span(b, s));
                }
                string(ss, 3, scope.schema_url().unwrap_or_default());
            });
        }
    });
    out
}

/// A `Span`, in prost's field order.
fn span(b: &mut Vec<u8>, s: &SpanData) {
    let context = &s.span_context;
    bytes(b, 1, &context.trace_id().to_bytes());
    bytes(b, 2, &context.span_id().to_bytes());
    string(b, 3, &context.trace_state().header());
    if s.parent_span_id != opentelemetry::trace::SpanId::INVALID {
        bytes(b, 4, &s.parent_span_id.to_bytes());
    }
    string(b, 5, &s.name);
    let kind = match s.span_kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    };
    uint(b, 6, kind);
    fixed64(b, 7, nanos(s.start_time));
    fixed64(b, 8, nanos(s.end_time));
    for kv in &s.attributes {
        message(b, 9, |m| key_value(m, kv.key.as_str(), &kv.value));
    }
    uint(b, 10, s.dropped_attributes_count.into());
    for e in s.events.iter() {
        message(b, 11, |m| {
            fixed64(m, 1, nanos(e.timestamp));
            string(m, 2, &e.name);
            for kv in &e.attributes {
                message(m, 3, |a| key_value(a, kv.key.as_str(), &kv.value));
            }
            uint(m, 4, e.dropped_attributes_count.into());
        });
    }
    uint(b, 12, s.events.dropped_count.into());
    for l in s.links.iter() {
        message(b, 13, |m| {
            bytes(m, 1, &l.span_context.trace_id().to_bytes());
            bytes(m, 2, &l.span_context.span_id().to_bytes());
            string(m, 3, &l.span_context.trace_state().header());
            for kv in &l.attributes {
                message(m, 4, |a| key_value(a, kv.key.as_str(), &kv.value));
            }
            uint(m, 5, l.dropped_attributes_count.into());
            fixed32(
                m,
                6,
                flags(l.span_context.is_remote(), l.span_context.trace_flags().to_u8()),
            );
        });
    }
    uint(b, 14, s.links.dropped_count.into());
    message(b, 15, |m| {
        let (code, why) = match &s.status {
            Status::Unset => (0, ""),
            Status::Ok => (1, ""),
            Status::Error { description } => (2, description.as_ref()),
        };
        string(m, 2, why);
        uint(m, 3, code);
    });
    fixed32(b, 16, flags(s.parent_span_is_remote, context.trace_flags().to_u8()));
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
fn key_value(b: &mut Vec<u8>, key: &str, value: &Value) {
    string(b, 1, key);
    message(b, 2, |m| any_value(m, value));
}

/// An `AnyValue`'s field (its oneof, written even when it is the default).
#[inline]
fn any_value(b: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bool(v) => tag_varint(b, 2, u64::from(*v)),
        Value::I64(v) => tag_varint(b, 3, *v as u64),
        Value::F64(v) => {
            tag(b, 4, 1);
            b.extend_from_slice(&v.to_le_bytes());
        }
        Value::String(v) => {
            tag(b, 1, 2);
            varint(b, v.as_str().len() as u64);
            b.extend_from_slice(v.as_str().as_bytes());
        }
        Value::Array(a) => message(b, 5, |m| {
            let mut item = |v: Value| message(m, 1, |i| any_value(i, &v));
            match a {
                Array::Bool(vs) => vs.iter().for_each(|v| item(Value::Bool(*v))),
                Array::I64(vs) => vs.iter().for_each(|v| item(Value::I64(*v))),
                Array::F64(vs) => vs.iter().for_each(|v| item(Value::F64(*v))),
                Array::String(vs) => vs.iter().for_each(|v| item(Value::String(v.clone()))),
                _ => {}
            }
        }),
        _ => {}
    }
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
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry::{InstrumentationScope, KeyValue};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use prost::Message;

    fn span(name: &'static str, parent: u64, status: Status, scope: &InstrumentationScope) -> SpanData {
        let context = SpanContext::new(
            TraceId::from(0x0af7651916cd43dd8448eb211c80319c),
            SpanId::from(0xb7ad6b7169203331 + parent),
            TraceFlags::SAMPLED,
            false,
            TraceState::from_key_value([("k", "v")]).unwrap(),
        );
        let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_764_000_000_123_456_789);
        let mut events = opentelemetry_sdk::trace::SpanEvents::default();
        events.events.push(opentelemetry::trace::Event::new(
            "retry",
            at,
            vec![KeyValue::new("attempt", 2)],
            0,
        ));
        let mut links = opentelemetry_sdk::trace::SpanLinks::default();
        links.links.push(opentelemetry::trace::Link::new(
            context.clone(),
            vec![KeyValue::new("l", true)],
            1,
        ));
        SpanData {
            span_context: context,
            parent_span_id: SpanId::from(parent),
            parent_span_is_remote: parent != 0,
            span_kind: if parent == 0 {
                SpanKind::Server
            } else {
                SpanKind::Client
            },
            name: name.into(),
            start_time: at,
            end_time: at + Duration::from_micros(1500),
            attributes: vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("rpc.response.status_code", -32602i64),
                KeyValue::new("ok", false),
                KeyValue::new("ratio", 0.25),
                KeyValue::new("empty", ""),
                KeyValue::new("names", Value::Array(Array::String(vec!["a".into(), "b".into()]))),
                KeyValue::new("n", Value::Array(Array::I64(vec![1, -2]))),
                KeyValue::new("long", "x".repeat(300)),
            ],
            dropped_attributes_count: 3,
            events,
            links,
            status,
            instrumentation_scope: scope.clone(),
        }
    }

    #[test]
    fn spans_decode_as_the_sdks_own_conversion_of_them() {
        let ours = InstrumentationScope::builder("mcp-sieve").build();
        let other = InstrumentationScope::builder("lib")
            .with_version("1.2")
            .with_schema_url("https://opentelemetry.io/schemas/1.30.0")
            .with_attributes([KeyValue::new("a", 1)])
            .build();
        let spans = vec![
            span("tools/call echo", 0, Status::Unset, &ours),
            span("upstream", 7, Status::error("down"), &other),
            span("search", 9, Status::Ok, &ours),
        ];
        let resource = Resource::builder_empty()
            .with_attributes([
                KeyValue::new("service.name", "mcp-sieve"),
                KeyValue::new("service.version", "1"),
            ])
            .build();
        let mut exporter = Exporter::new("http://127.0.0.1:4318/v1/traces").unwrap();
        exporter.set_resource(&resource);
        let theirs = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans.clone(),
                &ResourceAttributesWithSchema::from(&resource),
            ),
        };
        let decoded = ExportTraceServiceRequest::decode(&encode(&spans, &exporter.resource)[..]).unwrap();
        assert_eq!(decoded, theirs);
        assert_eq!(decoded.resource_spans[0].scope_spans.len(), 2);
    }

    #[test]
    fn headers_are_read_as_the_sdk_reads_them() {
        let h = headers("authorization=Bearer%20abc, x-tenant = one ,bad header=1,novalue");
        let text: Vec<_> = h.iter().map(|(k, v)| (k.as_str(), v.to_str().unwrap())).collect();
        assert_eq!(text, [("authorization", "Bearer abc"), ("x-tenant", "one")]);
        assert_eq!(percent_decode("a%2Cb%zz%4"), "a,b%zz%4");
    }
}
