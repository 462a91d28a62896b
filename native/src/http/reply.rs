//! How a core response becomes a hyper one ([`reply`]), for every answer the native server
//! sends, and the JSON-RPC error code an answer carries ([`error_code`], and with a tool error:
//! [`use_outcome`]).

use std::convert::Infallible;
use std::sync::LazyLock;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use mcp_sieve::http;
use memchr::memmem::Finder;

/// A hyper response with a body that is whole or streamed.
pub(crate) type Reply = hyper::Response<BoxBody<Bytes, Infallible>>;

/// The hyper response for a core response (status, headers, body).
pub(crate) fn reply(answer: http::Response) -> Reply {
    let mut r = hyper::Response::new(Full::new(Bytes::from(answer.body)).boxed());
    *r.status_mut() = hyper::StatusCode::from_u16(answer.status).unwrap_or(hyper::StatusCode::GATEWAY_TIMEOUT);
    for (k, v) in answer.headers {
        // The value's own bytes, not a copy (`from_str` copies each one).
        if let (Ok(k), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(k.as_bytes()),
            hyper::header::HeaderValue::from_maybe_shared(Bytes::from(v)),
        ) {
            r.headers_mut().append(k, v);
        }
    }
    r
}

/// What an error's code follows, and how far into an answer it is looked for (its head: a
/// list's page is not searched through).
const ERROR_CODE: &[u8] = b"\"error\":{\"code\":";
const HEAD: usize = 300;

/// The search for an error's code, built once.
static ERROR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(ERROR_CODE));

/// The JSON-RPC error code of an answer (`error_code_in`), searched for only where its head has
/// one (most answers are results: one vector search, not a walk from quote to quote).
pub(crate) fn error_code(answer: &[u8]) -> Option<i32> {
    ERROR.find(&answer[..answer.len().min(HEAD)])?;
    mcp_sieve::protocol::jsonrpc::error_code_in(answer)
}

/// The search for what an error's code and a tool error have in common, built once.
static RROR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"rror\""));

/// A use's answer: its JSON-RPC error code ([`error_code`]'s reading) and whether it is a tool
/// result with `"isError":true`, in one search of it (for `rror"`, which both hold).
pub(crate) fn use_outcome(answer: &[u8]) -> (Option<i32>, bool) {
    let mut tool_error = false;
    for i in RROR.find_iter(answer) {
        // `"error":{"code":` starts two bytes before `rror"`, and within the head.
        if i >= 2 && answer[i - 2..].starts_with(ERROR_CODE) && i - 2 + ERROR_CODE.len() <= HEAD {
            // The answer's own error, or one its result holds (read on).
            if let Some(code) = mcp_sieve::protocol::jsonrpc::error_code_in(answer) {
                return (Some(code), tool_error);
            }
        }
        tool_error |= answer[..i].ends_with(b"\"isE") && answer[i + 5..].starts_with(b":true");
    }
    (None, tool_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answers_error_code_is_the_cores_reading_of_it() {
        let long_id = format!(
            r#"{{"jsonrpc":"2.0","id":"{}","error":{{"code":-32602}}}}"#,
            "x".repeat(300)
        );
        for answer in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":{"code":5}}}}"#,
            &long_id,
        ] {
            let core = mcp_sieve::protocol::jsonrpc::error_code_in(answer.as_bytes());
            assert_eq!(error_code(answer.as_bytes()), core, "{answer}");
            assert_eq!(use_outcome(answer.as_bytes()), (core, false), "{answer}");
        }
        // A tool error, wherever the result holds it, and text that only looks like one.
        for (answer, tool_error) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"an error"}]}}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":"rror\"","result":{"isError":true}}"#, true),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":{"code":5}},"isError":true}}"#,
                true,
            ),
        ] {
            assert_eq!(use_outcome(answer.as_bytes()), (None, tool_error), "{answer}");
        }
        assert_eq!(
            error_code(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}"#),
            Some(-32602)
        );
    }
}
