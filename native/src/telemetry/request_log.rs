//! A request's log context (issue 42 item 1, at issue 43's cost): what every log line written
//! while a request is handled says of it — method, id, principal, view, session — kept here, in a
//! task-local of the request's future, and read by a log line only when it is written, and, when
//! the request is traced, its span in the trace ([`Traced`], `crate::telemetry::tracer`). Most requests
//! write no line: a `tracing` span made for each, its fields formatted, entered on every poll and
//! closed, was about half of what logs, metrics, traces and a rate limit cost a `tools/call`
//! (perf, scripts/bench-operate.sh's shape).

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use mcp_sieve::protocol::jsonrpc::Head;
use serde_json::{Map, Value};
use tracing::instrument::Instrument;

use crate::telemetry::tracer::Traced;
use opentelemetry::trace::SpanContext;
use opentelemetry::KeyValue;

tokio::task_local! {
    /// The fields of the request being handled (`None`: neither logged nor traced).
    static REQUEST: Option<Arc<Fields>>;
}

/// One request's log context: its fields, and its span when it is traced (`None`: neither).
#[derive(Clone)]
pub struct RequestLog {
    fields: Option<Arc<Fields>>,
}

/// Sets a traced request's caller attributes: principal, view (`""`: none) and session.
fn set_caller(t: &Traced, principal: Option<&str>, view: &str, session: Option<&str>) {
    let known = [
        ("mcp_sieve.principal", principal),
        ("mcp_sieve.view", Some(view).filter(|v| !v.is_empty())),
        ("mcp.session.id", session),
    ];
    t.set(
        known
            .into_iter()
            .filter_map(|(k, v)| Some(KeyValue::new(k, v?.to_string()))),
    );
}

/// What a log line says of a request (the names of the span's fields in JSON), and its span in
/// the trace when it is traced. The message's head (method, id, item, protocol version) is read
/// from its bytes when the first line is written, not when the request starts: most requests
/// write none.
pub(crate) struct Fields {
    pub transport: &'static str,
    /// The message as received (empty: not read).
    body: Bytes,
    /// What its head names, read once (boxed: every request's fields are made and moved, few
    /// read it).
    named: OnceLock<Box<Named>>,
    /// Who calls, set once per request (a lock, not a `OnceLock`: whose first `set` takes the
    /// slow path every time, and every request sets it).
    caller: Mutex<Option<Caller>>,
    /// Its span in the trace, boxed: one request in ten at a ratio of 0.1 has one, and a span
    /// is larger than the rest of the fields every request allocates.
    pub trace: Option<Box<Traced>>,
}

/// What a message's head names, as a log line writes it.
struct Named {
    method: Option<String>,
    id: Option<String>,
    tool: Option<String>,
    prompt: Option<String>,
    uri: Option<String>,
    version: Option<String>,
}

/// Who calls, through which view and session: known after the request's span or fields are made.
struct Caller {
    principal: Option<String>,
    view: String,
    session: Option<String>,
}

impl RequestLog {
    /// Neither logged nor traced.
    pub fn none() -> Self {
        RequestLog { fields: None }
    }

    /// A request's context: `fields` (their caller set later by [`RequestLog::record`]).
    pub(crate) fn of(fields: Fields) -> Self {
        RequestLog {
            fields: Some(Arc::new(fields)),
        }
    }

    /// The request's span in the trace, when it is traced.
    pub fn trace(&self) -> Option<&Traced> {
        self.fields.as_ref()?.trace.as_deref()
    }

    /// The caller and the view of the request (`None` and `""`: none), once.
    pub fn record(&self, principal: Option<&str>, view: &str, session: Option<&str>) {
        let Some(f) = &self.fields else { return };
        if let Some(t) = &f.trace {
            set_caller(t, principal, view, session);
        }
        let mut caller = f.caller();
        if caller.is_none() {
            *caller = Some(Caller {
                principal: principal.map(str::to_string),
                view: view.to_string(),
                session: session.map(str::to_string),
            });
        }
    }

    /// Runs `f` in the request (its log lines carry its fields).
    pub fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        REQUEST.sync_scope(self.fields.clone(), f)
    }

    /// `future`, run in the request.
    pub fn scope<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        REQUEST.scope(self.fields.clone(), future)
    }
}

impl Fields {
    /// The fields of the request whose message is `body` (empty: not read).
    pub(crate) fn new(transport: &'static str, body: Bytes) -> Self {
        Fields {
            transport,
            body,
            named: OnceLock::new(),
            caller: Mutex::new(None),
            trace: None,
        }
    }

    /// Who calls (`None` until [`RequestLog::record`]).
    fn caller(&self) -> std::sync::MutexGuard<'_, Option<Caller>> {
        self.caller.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the message names (its head read on the first call).
    fn named(&self) -> &Named {
        self.named.get_or_init(|| {
            let head = Head::read(&self.body);
            let item = Item::of(&head);
            let text = |v: Option<&str>| v.map(str::to_string);
            Box::new(Named {
                method: text(head.method()),
                id: head.id_text().map(|i| i.into_owned()),
                tool: text(item.tool),
                prompt: text(item.prompt),
                uri: text(item.uri),
                version: text(head.protocol_version()),
            })
        })
    }

    /// A human line's bracket: `method=… id=… principal=… view=… session=…` (those known).
    pub(crate) fn short(&self) -> String {
        let caller = self.caller();
        let caller = caller.as_ref();
        let named = self.named();
        let pairs = [
            ("method", named.method.as_deref()),
            ("id", named.id.as_deref()),
            ("principal", caller.and_then(|c| c.principal.as_deref())),
            ("view", caller.map(|c| c.view.as_str()).filter(|v| !v.is_empty())),
            ("session", caller.and_then(|c| c.session.as_deref())),
        ];
        let mut out = String::new();
        for (name, value) in pairs {
            if let Some(v) = value {
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push_str(name);
                out.push('=');
                out.push_str(v);
            }
        }
        out
    }

    /// A JSON line's `span` object, as the request's span would be written (its fields by name,
    /// then `name`).
    pub(crate) fn json(&self) -> Value {
        let caller = self.caller();
        let caller = caller.as_ref();
        let named = self.named();
        let operation = named.tool.as_ref().map(|_| "execute_tool".to_string());
        let mut pairs = vec![
            ("gen_ai.operation.name", operation),
            ("gen_ai.prompt.name", named.prompt.clone()),
            ("gen_ai.tool.name", named.tool.clone()),
            ("jsonrpc.protocol.version", Some("2.0".into())),
            ("jsonrpc.request.id", named.id.clone()),
            ("mcp.method.name", named.method.clone()),
            ("mcp.protocol.version", named.version.clone()),
            ("mcp.resource.uri", named.uri.clone()),
            ("mcp.session.id", caller.and_then(|c| c.session.clone())),
            ("mcp_sieve.principal", caller.and_then(|c| c.principal.clone())),
            (
                "mcp_sieve.view",
                caller.map(|c| c.view.clone()).filter(|v| !v.is_empty()),
            ),
            ("network.transport", Some(self.transport.into())),
            ("otel.kind", Some("server".into())),
        ];
        pairs.push(("name", Some("request".into())));
        let mut span = Map::new();
        for (k, v) in pairs {
            if let Some(v) = v {
                span.insert(k.into(), Value::String(v));
            }
        }
        Value::Object(span)
    }
}

/// What a message names, as a span says it: the tool (`tools/call`), prompt (`prompts/get`) or
/// resource (`resources/read`, `…subscribe`, `…unsubscribe`), and the target of the span's name
/// (a tool or prompt).
#[derive(Default)]
pub(crate) struct Item<'h> {
    pub tool: Option<&'h str>,
    pub prompt: Option<&'h str>,
    pub uri: Option<&'h str>,
    pub target: Option<&'h str>,
}

impl<'h> Item<'h> {
    /// What `head` names.
    pub(crate) fn of(head: &'h Head<'_>) -> Self {
        let name = head.params.name.as_deref();
        match head.method() {
            Some("tools/call") => Item {
                tool: name,
                target: name,
                ..Item::default()
            },
            Some("prompts/get") => Item {
                prompt: name,
                target: name,
                ..Item::default()
            },
            Some("resources/read" | "resources/subscribe" | "resources/unsubscribe") => Item {
                uri: head.params.uri.as_deref(),
                ..Item::default()
            },
            _ => Item::default(),
        }
    }
}

/// `future` in the request this runs in (its fields and span, and the current `tracing` span): for
/// a task spawned on its behalf (an upstream exchange is part of the request that made it).
pub fn in_current_request<F: Future>(future: F) -> impl Future<Output = F::Output> {
    REQUEST.scope(current(), future.in_current_span())
}

/// The fields of the request whose future (or scope) this runs in.
pub(crate) fn current() -> Option<Arc<Fields>> {
    REQUEST.try_with(Clone::clone).ok().flatten()
}

/// The span context of the request this runs in: `Some(None)` in a request that is not traced,
/// `None` outside any request.
pub(crate) fn request_trace() -> Option<Option<SpanContext>> {
    REQUEST
        .try_with(|f| f.as_ref().and_then(|f| f.trace.as_ref()).map(|t| t.context.clone()))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Fields {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;
        Fields::new("tcp", Bytes::from_static(body.as_bytes()))
    }

    #[test]
    fn a_line_reads_the_fields_of_the_request_it_is_written_in() {
        let log = RequestLog::of(fields());
        assert!(current().is_none());
        log.record(Some("alice"), "/mcp/readonly", Some("s1"));
        let short = log.in_scope(|| current().map(|f| f.short()));
        assert_eq!(
            short.as_deref(),
            Some("method=tools/call id=7 principal=alice view=/mcp/readonly session=s1")
        );
        assert_eq!(log.in_scope(request_trace), Some(None));
        assert_eq!(request_trace(), None);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let seen = rt.block_on(log.scope(async { current().map(|f| f.json()) }));
        let json = seen.unwrap();
        // A task spawned on the request's behalf is in it too.
        let spawned = rt.block_on(log.scope(async {
            tokio::spawn(in_current_request(async { current().map(|f| f.short()) }))
                .await
                .unwrap()
        }));
        assert_eq!(spawned, short);
        assert!(rt.block_on(in_current_request(async { current().is_none() })));
        assert_eq!(json["mcp_sieve.principal"], "alice");
        assert_eq!(json["gen_ai.operation.name"], "execute_tool");
        assert_eq!(json["name"], "request");
        assert!(json.get("mcp.resource.uri").is_none());
    }

    #[test]
    fn fields_not_known_are_left_out() {
        let f = Fields::new("pipe", Bytes::new());
        assert_eq!(f.short(), "");
        let json = f.json();
        assert_eq!(
            json.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["jsonrpc.protocol.version", "network.transport", "otel.kind", "name"]
        );
        let log = RequestLog::of(f);
        log.record(None, "", None);
        assert_eq!(log.in_scope(|| current().unwrap().short()), "");
    }
}
