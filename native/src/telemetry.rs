//! Logs and traces of the native binary (issue 42). Logs are `tracing` events, written on stderr
//! (never stdout: `mcp-sieve stdio` speaks the protocol there) as human lines
//! (`mcp-sieve: message key=value [method=… id=… principal=… view=…]`) or, with
//! `--log-format json`, one JSON object a line with the request span's fields; the level filter
//! comes from `MCP_SIEVE_LOG`, else `RUST_LOG` (their syntax), else `info`. Traces are the same
//! spans exported over OTLP/HTTP (protobuf, `crate::telemetry::otlp`) when `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (service name, sampling, batching and the
//! collector's settings from the other standard `OTEL_*` variables; whether a request is traced is
//! decided by the SDK's sampler before its span is built): a SERVER span per traced MCP request
//! following the OpenTelemetry MCP semantic conventions, a CLIENT span per upstream exchange, W3C
//! trace context read from a request's `traceparent` header or `params._meta.traceparent` and
//! passed on to upstreams (by traced requests only). Spans in the trace are the OpenTelemetry
//! SDK's (`crate::telemetry::tracer`: its tracer provider, sampler, batch span processor and
//! propagator), exported by `opentelemetry-otlp` (`crate::telemetry::otlp`); `tracing` spans carry
//! only log context.

pub(crate) mod otlp;
pub(crate) mod request_log;
pub(crate) mod tracer;

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use bytes::Bytes;
use mcp_sieve::protocol::jsonrpc::Head;
use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::{Event, Span, Subscriber};
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::{Format, FormatEvent, FormatFields, Json, JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormattedFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::telemetry::tracer::Traced;
use opentelemetry::trace::{SpanContext, SpanKind};
use opentelemetry::KeyValue;
use request_log::{Item, RequestLog};

use crate::cli::LogFormat;

/// The instrumentation scope of every span, and the service name when none is set.
pub const SCOPE: &str = "mcp-sieve";

/// The variables the log filter is read from, first set wins.
const FILTER_VARS: [&str; 2] = ["MCP_SIEVE_LOG", "RUST_LOG"];

/// Whether spans are exported (an OTLP endpoint is set): trace context is read and passed on
/// only then.
pub fn traces_on() -> bool {
    crate::telemetry::tracer::on()
}

/// Installs the logger (and, with `traces` and an OTLP endpoint in the environment, the trace
/// exporter). A filter that does not parse is said on stderr and `info` is used; an exporter
/// that cannot be built is said and traces stay off: neither stops the server.
pub fn init(format: LogFormat, traces: bool) {
    let (filter, bad) = filter();
    // A plain list of levels (`info`, `mcp_sieve=debug,hyper=warn`) is a static `Targets`
    // filter; only one naming spans or fields needs an `EnvFilter`, which tracks every span's
    // entering and leaving (a read lock each time): measurably dearer per request.
    let fmt = match filter {
        Filter::Static(f) => fmt_layer(format, *f),
        Filter::Dynamic(f) => fmt_layer(format, *f),
    };
    let problem = traces.then(endpoint).flatten().and_then(|e| {
        let exporter = crate::telemetry::otlp::exporter(&e).map_err(crate::telemetry::tracer::TraceError::from);
        exporter
            .and_then(|x| crate::telemetry::tracer::start(x, crate::telemetry::otlp::resource()))
            .err()
    });
    let _ = Registry::default().with(fmt).try_init();
    if let Some(bad) = bad {
        tracing::warn!("{bad}; logging at info");
    }
    if let Some(e) = problem {
        tracing::warn!("traces are off: {e}");
    } else if traces_on() {
        tracing::info!(endpoint = %endpoint().unwrap_or_default(), "exporting traces over OTLP/HTTP");
    }
}

/// One line of an upstream's state (`crate::progress`), as an info event.
pub fn progress(line: &str) {
    tracing::info!("{}", line.strip_prefix("mcp-sieve: ").unwrap_or(line));
}

/// Sends the spans not yet exported (at most a few seconds), then stops the exporter.
pub fn shutdown() {
    crate::telemetry::tracer::shutdown();
}

/// A log filter: static levels by target, or an `EnvFilter` (span and field directives). Both
/// boxed: `Targets` is 472 bytes on macOS, which clippy's `large_enum_variant` refuses there.
enum Filter {
    Static(Box<Targets>),
    Dynamic(Box<EnvFilter>),
}

/// The log layer writing `format` on stderr, filtered by `filter`.
fn fmt_layer<F>(format: LogFormat, filter: F) -> Box<dyn Layer<Registry> + Send + Sync>
where
    F: tracing_subscriber::layer::Filter<Registry> + Send + Sync + 'static,
{
    match format {
        LogFormat::Human => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .fmt_fields(Short)
            .event_format(Human)
            .with_filter(filter)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .fmt_fields(JsonFields::new())
            .event_format(JsonLines(
                tracing_subscriber::fmt::format()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false),
            ))
            .with_filter(filter)
            .boxed(),
    }
}

/// The log filter, and why the one set was not used.
fn filter() -> (Filter, Option<String>) {
    // The Hugging Face client's own events (`retry exhausted …` at each try) are off by default:
    // `crate::search::hub` says what failed once, in its words.
    let info = || {
        Filter::Static(Box::new(
            Targets::new()
                .with_default(tracing::Level::INFO)
                .with_target("hf_hub", tracing_subscriber::filter::LevelFilter::OFF),
        ))
    };
    for var in FILTER_VARS {
        let Ok(value) = std::env::var(var) else { continue };
        if value.trim().is_empty() {
            continue;
        }
        if let Ok(t) = value.parse::<Targets>() {
            return (Filter::Static(Box::new(t)), None);
        }
        return match EnvFilter::try_new(&value) {
            Ok(f) => (Filter::Dynamic(Box::new(f)), None),
            Err(e) => (
                info(),
                Some(format!(
                    "{var}={value:?} is not a log filter ({e}); write a level (error, warn, info, debug, trace) or target=level pairs separated by commas"
                )),
            ),
        };
    }
    (info(), None)
}

/// Where spans go: the traces endpoint as given, or the general one with `/v1/traces`.
fn endpoint() -> Option<String> {
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT").map(|e| format!("{}/v1/traces", e.trim_end_matches('/'))))
}

/// The target of the `tracing` spans of upstream exchanges (log context only).
const UPSTREAM: &str = "mcp_sieve::upstream";

/// The head of a message that was not read (made once, not dropped per request).
static NO_HEAD: LazyLock<Head> = LazyLock::new(Head::default);

/// The log context of one MCP request (server side), `body` its JSON-RPC message and `head` what
/// it says about itself (`None` when it was not read): every log line while it is handled carries
/// its fields (the head's, read from `body` then, and [`RequestLog::record`]'s). When the
/// sampler traces it, its span in the trace: the SERVER span, its parent the trace context of
/// `params._meta.traceparent`, else of `header` (the HTTP `traceparent` and `tracestate`).
pub fn request_span(
    transport: &'static str,
    body: Bytes,
    head: Option<&Head>,
    header: Option<(&str, Option<&str>)>,
) -> RequestLog {
    let traces = traces_on();
    if !traces && !tracing::enabled!(tracing::Level::INFO) {
        // Neither logged nor traced: nothing to record.
        return RequestLog::none();
    }
    let mut f = request_log::Fields::new(transport, body);
    if traces {
        let read = head.is_some();
        let head = head.unwrap_or(&NO_HEAD);
        let parent = head
            .trace_context()
            .or(header)
            .and_then(|(tp, ts)| crate::telemetry::tracer::parent(tp, ts));
        f.trace = server_span(transport, read, head, parent.as_ref()).map(Box::new);
    }
    RequestLog::of(f)
}

/// The SERVER span of a request (see [`request_span`]), when the sampler keeps it: its name and
/// attributes are made only then.
#[cold]
#[inline(never)]
fn server_span(transport: &'static str, read: bool, head: &Head, parent: Option<&SpanContext>) -> Option<Traced> {
    let method = head.method();
    let item = Item::of(head);
    // The trace's name for the span: `tools/call echo` (a message that was not read: `request`).
    let name = || -> Cow<'static, str> {
        match (read, method, item.target) {
            (false, ..) => "request".into(),
            (_, Some(m), Some(t)) => [m, " ", t].concat().into(),
            (_, Some(m), None) => m.to_string().into(),
            (_, None, _) => "response".into(),
        }
    };
    let attributes = || {
        let id = head.id_text();
        let known = [
            ("mcp.method.name", method),
            ("jsonrpc.request.id", id.as_deref()),
            ("gen_ai.tool.name", item.tool),
            ("gen_ai.prompt.name", item.prompt),
            ("mcp.resource.uri", item.uri),
            ("mcp.protocol.version", head.protocol_version()),
        ];
        let mut attributes = Vec::with_capacity(known.len() + 3);
        attributes.extend(
            known
                .into_iter()
                .filter_map(|(k, v)| Some(KeyValue::new(k, v?.to_string()))),
        );
        if item.tool.is_some() {
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        attributes.push(KeyValue::new("network.transport", transport));
        attributes.push(KeyValue::new("jsonrpc.protocol.version", "2.0"));
        attributes
    };
    Traced::start(SpanKind::Server, parent, name, attributes)
}

/// Whether the message of `head`, through a view that is `searching` (search mode), is a search
/// (`tools/call find_tools`).
pub fn is_search(head: &Head, searching: bool) -> bool {
    searching && head.method() == Some("tools/call") && head.params.name.as_deref() == Some("find_tools")
}

/// The span of a traced request's search (an INTERNAL child of its SERVER span; `None` when the
/// request is not traced), ended by [`searched`].
pub fn search_span(log: &RequestLog) -> Option<Traced> {
    let parent = &log.trace()?.context;
    Traced::start(SpanKind::Internal, Some(parent), || "search".into(), Vec::new)
}

/// Ends a search's span with what ranked `answer` (its `find_tools` response) as
/// `mcp_sieve.search.mode`: the core's own note in the result's `_meta` (`hybrid`, or `lexical`
/// when the vectors are not ready or the query's encoding failed), `lexical` without one (no
/// model in the document).
pub fn searched(span: Option<Traced>, answer: Option<&str>) {
    let Some(span) = span else { return };
    let answer = answer.and_then(|a| serde_json::from_str::<Value>(a).ok());
    let ranking = answer
        .as_ref()
        .and_then(|a| a["result"]["_meta"][mcp_sieve::protocol::search::META_RANKING]["ranking"].as_str())
        .unwrap_or("lexical");
    span.set([KeyValue::new("mcp_sieve.search.mode", ranking.to_string())]);
}

/// Marks the request of `log` (traced) failed with JSON-RPC error `code` (a SERVER span's error).
pub fn failed(log: &RequestLog, code: i64) {
    if let Some(t) = log.trace() {
        t.failed(code.to_string(), [KeyValue::new("rpc.response.status_code", code)]);
    }
}

/// Marks the request of `log` (traced) answered with HTTP `status` (400 and up: an error).
pub fn failed_http(log: &RequestLog, status: u16) {
    if let Some(t) = log.trace() {
        t.failed(status.to_string(), []);
    }
}

/// Marks the request of `log` (traced) failed when `body` (its JSON answer) is a JSON-RPC error
/// (its code read from the answer's head: a list's page is not searched).
pub fn answered(log: &RequestLog, body: &str) {
    if log.trace().is_none() {
        return;
    }
    if let Some(code) = crate::http::reply::error_code(body.as_bytes()) {
        failed(log, i64::from(code));
    }
}

/// One exchange with an upstream: its log context (a `tracing` span: log lines in it name the
/// upstream), and its CLIENT span in the trace when the request it is part of is traced.
pub struct Exchange {
    /// The log context.
    pub log: Span,
    trace: Option<Traced>,
}

/// The exchange with upstream `name` (its era: `stateless` 2026-07-28, `session`, or `stdio`),
/// for `message` (the JSON-RPC message sent).
pub fn upstream_span(name: &str, transport: &'static str, era: &str, version: Option<&str>, message: &str) -> Exchange {
    let log = tracing::info_span!(
        target: UPSTREAM,
        "upstream",
        "mcp.protocol.version" = version,
        "mcp_sieve.upstream.name" = name,
        "mcp_sieve.upstream.era" = era,
        "network.transport" = transport,
    );
    // Traced with the request it is part of (not when it is not traced); one outside any
    // request is a root the sampler decides on.
    let parent = match request_log::request_trace() {
        Some(Some(in_request)) => Some(in_request),
        Some(None) => return Exchange { log, trace: None },
        None => None,
    };
    if !traces_on() {
        return Exchange { log, trace: None };
    }
    let msg = std::cell::OnceCell::new();
    let msg = || msg.get_or_init(|| serde_json::from_str::<Value>(message).ok());
    let method = || {
        msg()
            .as_ref()
            .map(|m| m.get("method").and_then(Value::as_str).unwrap_or("response"))
    };
    let tool = || {
        msg()
            .as_ref()
            .and_then(|m| m.pointer("/params/name"))
            .and_then(Value::as_str)
            .filter(|_| method() == Some("tools/call"))
    };
    let span_name = || -> Cow<'static, str> {
        match (method(), tool()) {
            (Some(m), Some(t)) => [m, " ", t].concat().into(),
            (Some(m), None) => m.to_string().into(),
            (None, _) => "upstream".into(),
        }
    };
    let attributes = || {
        let mut attributes = vec![
            KeyValue::new("mcp_sieve.upstream.name", name.to_string()),
            KeyValue::new("mcp_sieve.upstream.era", era.to_string()),
            KeyValue::new("network.transport", transport),
        ];
        if let Some(v) = version {
            attributes.push(KeyValue::new("mcp.protocol.version", v.to_string()));
        }
        if let Some(m) = method() {
            attributes.push(KeyValue::new("mcp.method.name", m.to_string()));
        }
        if let Some(t) = tool() {
            attributes.push(KeyValue::new("gen_ai.tool.name", t.to_string()));
        }
        attributes
    };
    let trace = Traced::start(SpanKind::Client, parent.as_ref(), span_name, attributes);
    Exchange { log, trace }
}

/// Marks the upstream exchange failed (`why`: a short kind, such as `timeout`).
pub fn upstream_failed(exchange: &Exchange, why: &str) {
    if let Some(t) = &exchange.trace {
        t.failed(why.to_string(), []);
    }
}

/// The W3C trace context of an exchange (`traceparent`, and `tracestate` when set) to pass on,
/// when it is traced.
pub fn context_of(exchange: &Exchange) -> Vec<(String, String)> {
    exchange
        .trace
        .as_ref()
        .map(|t| crate::telemetry::tracer::headers(&t.context))
        .unwrap_or_default()
}

/// `message` with `context` in `params._meta` (stdio upstreams get trace context there, the MCP
/// convention); unchanged when it is not a JSON object or holds no params object to add to.
pub fn with_meta_context(message: String, context: &[(String, String)]) -> String {
    if context.is_empty() {
        return message;
    }
    let Ok(mut msg) = serde_json::from_str::<Value>(&message) else {
        return message;
    };
    let Some(obj) = msg.as_object_mut() else {
        return message;
    };
    if !obj.contains_key("method") {
        return message;
    }
    let params = obj.entry("params").or_insert_with(|| Value::Object(Default::default()));
    let Some(params) = params.as_object_mut() else {
        return message;
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Default::default()));
    let Some(meta) = meta.as_object_mut() else {
        return message;
    };
    for (k, v) in context {
        meta.insert(k.clone(), Value::String(v.clone()));
    }
    serde_json::to_string(&msg).unwrap_or(message)
}

/// Human lines: `mcp-sieve: [level: ]message key=value [the request span's fields]`.
struct Human;

impl<S, N> FormatEvent<S, N> for Human
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let level = *event.metadata().level();
        let tag = match level {
            tracing::Level::ERROR => "error: ",
            tracing::Level::WARN => "warning: ",
            tracing::Level::INFO => "",
            tracing::Level::DEBUG => "debug: ",
            tracing::Level::TRACE => "trace: ",
        };
        let mut fields = Collect::default();
        event.record(&mut fields);
        // A message that says its own level ("warning: …") is not tagged twice.
        let tag = if fields.message.starts_with(tag) { "" } else { tag };
        write!(w, "mcp-sieve: {tag}{}{}", fields.message, fields.rest)?;
        // The request's fields (`crate::telemetry::request_log`), then the spans' (an upstream exchange's).
        let mut first = true;
        if let Some(f) = request_log::current().map(|f| f.short()).filter(|f| !f.is_empty()) {
            w.write_str(" [")?;
            w.write_str(&f)?;
            first = false;
        }
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let ext = span.extensions();
                let Some(f) = ext.get::<FormattedFields<N>>() else {
                    continue;
                };
                let f = f.trim();
                if f.is_empty() {
                    continue;
                }
                w.write_str(if first { " [" } else { " " })?;
                w.write_str(f)?;
                first = false;
            }
        }
        if !first {
            w.write_str("]")?;
        }
        writeln!(w)
    }
}

/// JSON lines: tracing's, with the request's fields (`crate::telemetry::request_log`) under `span`
/// when no span is current (as its span's were written).
struct JsonLines(Format<Json>);

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let Some(fields) = request_log::current().filter(|_| ctx.lookup_current().is_none()) else {
            return self.0.format_event(ctx, w, event);
        };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        let object = line.trim_end().strip_suffix('}').ok_or(fmt::Error)?;
        writeln!(w, "{object},\"span\":{}}}", fields.json())
    }
}

/// A human line's view of a span's fields: the request's method, id, principal, view and
/// session, the upstream's name, under short names; the rest (trace attributes) left out.
struct Short;

impl<'w> FormatFields<'w> for Short {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(&self, mut w: Writer<'w>, fields: R) -> fmt::Result {
        let mut v = ShortVisitor { out: String::new() };
        fields.record(&mut v);
        w.write_str(v.out.trim_start())
    }
}

struct ShortVisitor {
    out: String,
}

impl ShortVisitor {
    /// The short name a human line gives `field`, if it shows it.
    fn short(field: &Field) -> Option<&'static str> {
        Some(match field.name() {
            "mcp.method.name" => "method",
            "jsonrpc.request.id" => "id",
            "mcp_sieve.principal" => "principal",
            "mcp_sieve.view" => "view",
            "mcp.session.id" => "session",
            "mcp_sieve.upstream.name" => "upstream",
            _ => return None,
        })
    }

    fn put(&mut self, field: &Field, value: &dyn fmt::Display) {
        if let Some(short) = Self::short(field) {
            use std::fmt::Write;
            let _ = write!(self.out, " {short}={value}");
        }
    }
}

impl Visit for ShortVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        // Strings (nearly all of a request's fields) without the formatting machinery.
        if let Some(short) = Self::short(field) {
            self.out.push(' ');
            self.out.push_str(short);
            self.out.push('=');
            self.out.push_str(value);
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, &value);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, &value);
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, &format_args!("{value:?}"));
    }
}

/// An event's message and its other fields (` key=value`).
#[derive(Default)]
struct Collect {
    message: String,
    rest: String,
}

impl Visit for Collect {
    fn record_str(&mut self, field: &Field, value: &str) {
        use std::fmt::Write;
        if field.name() == "message" {
            self.message.push_str(value);
        } else if value.contains(char::is_whitespace) || value.is_empty() {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        } else {
            let _ = write!(self.rest, " {}={value}", field.name());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, " {}={value:?}", field.name());
        }
    }
}
