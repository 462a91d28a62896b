//! Code mode in the HTTP server: the [`Host`] a `run_code` request's program runs against. Each
//! of the program's calls (`crate::code::request`) is sent as an HTTP request of the caller —
//! the `run_code` request's own path, query and headers (its session, token, view headers,
//! protocol version), its `traceparent` the run's span — through [`super::handle`], the function
//! every request goes through, marked [`Via`] the run. A question the tool asks on the call's
//! stream (elicitation, sampling, roots) fails the call: the caller's stream is the `run_code`
//! request's, which is waiting for the program.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::HeaderMap;
use serde_json::Value;

use crate::app::App;
use crate::code::{BoxFuture, CallError, Host, Via};

/// A `run_code` request's program's calls, sent as that request was.
pub(crate) struct Http {
    pub app: Arc<App>,
    /// The request's path and query.
    pub target: String,
    /// Its headers (the token, the session, the view headers, the protocol version).
    pub headers: HeaderMap,
    /// The trace context a call's span is a child of (the run's span), when traced.
    pub trace: Vec<(String, String)>,
}

impl Host for Http {
    fn serve<'a>(&'a self, run: &'a str, call: Value) -> BoxFuture<'a, Result<Value, CallError>> {
        Box::pin(self.call(run, call))
    }
}

impl Http {
    async fn call(&self, run: &str, call: Value) -> Result<Value, CallError> {
        let id = call["id"].as_str().unwrap_or_default().to_string();
        let name = call["params"]["arguments"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let mut headers = self.headers.clone();
        headers.remove(hyper::header::CONTENT_LENGTH);
        let set = |h: &mut HeaderMap, k: &'static str, v: &str| {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.insert(HeaderName::from_static(k), v);
            }
        };
        // A 2026-07-28 request mirrors its method and names into headers.
        if headers.contains_key("mcp-method") {
            set(&mut headers, "mcp-method", "tools/call");
        }
        if headers.contains_key("mcp-name") {
            set(&mut headers, "mcp-name", mcp_sieve::protocol::search::CALL);
            set(&mut headers, "mcp-param-tool", &name);
        }
        headers.remove("traceparent");
        headers.remove("tracestate");
        for (k, v) in &self.trace {
            if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
                headers.insert(k, v);
            }
        }
        let mut req = hyper::Request::post(self.target.as_str())
            .body(Full::new(Bytes::from(call.to_string())))
            .map_err(|source| CallError::Request {
                name: name.clone(),
                source,
            })?;
        *req.headers_mut() = headers;
        req.extensions_mut().insert(Via(run.to_string()));
        // Boxed: a request may, in its type, run a program again.
        let served: BoxFuture<'_, crate::app::Reply> = Box::pin(super::handle(&self.app, req));
        let reply = served.await;
        let status = reply.status().as_u16();
        let sse = reply
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if sse {
            return answer_in_stream(reply.into_body(), &id).await;
        }
        let bytes = reply
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        serde_json::from_slice::<Value>(&bytes).map_err(|_| CallError::Refused {
            name,
            status,
            body: String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned(),
        })
    }
}

/// The response with `id` in an SSE answer, read as it comes; a question the server asks on the
/// way (elicitation, sampling, roots) fails the call: a program's caller is not asked.
async fn answer_in_stream(
    mut body: http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>,
    id: &str,
) -> Result<Value, CallError> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        while let Some(end) = memchr::memmem::find(&buf, b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            let data: String = String::from_utf8_lossy(&event)
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect::<Vec<_>>()
                .join("\n");
            let Ok(msg) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            if msg.get("method").is_some() && msg.get("id").is_some() {
                return Err(CallError::Question(
                    msg["method"].as_str().unwrap_or("a request").to_string(),
                ));
            }
            if msg.get("id").and_then(Value::as_str) == Some(id) {
                return Ok(msg);
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    // One event is a message: past the body limit it is not one we read.
                    if buf.len() > 16 * 1024 * 1024 {
                        return Err(CallError::TooLarge);
                    }
                }
            }
            _ => return Err(CallError::StreamEnded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_question_in_a_stream_fails_the_call_and_the_answer_is_found_by_id() {
        let stream = |s: &str| Full::new(Bytes::from(s.to_string())).boxed();
        let body =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n\
                    event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r:1\",\"result\":{\"content\":[]}}\n\n";
        let m = answer_in_stream(stream(body), "r:1").await.unwrap();
        assert_eq!(m["result"], serde_json::json!({"content": []}));
        let asks =
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n";
        let e = answer_in_stream(stream(asks), "r:1").await.unwrap_err().to_string();
        assert!(e.contains("(elicitation/create)"), "{e}");
        let e = answer_in_stream(stream("event: message\ndata: {}\n\n"), "r:1")
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "the call's stream ended without its answer");
    }
}
