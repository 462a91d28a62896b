//! How a core response becomes a hyper one ([`reply`]), for every answer the native server
//! sends, and the JSON-RPC error code an answer carries ([`error_code`]).

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
    for (k, v) in &answer.headers {
        if let (Ok(k), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(k.as_bytes()),
            hyper::header::HeaderValue::from_str(v),
        ) {
            r.headers_mut().append(k, v);
        }
    }
    r
}

/// The search for an error's code, built once.
static ERROR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"error\":{\"code\":"));

/// The JSON-RPC error code of an answer (`error_code_in`), searched for only where its head has
/// one (most answers are results: one vector search, not a walk from quote to quote).
pub(crate) fn error_code(answer: &[u8]) -> Option<i32> {
    ERROR.find(&answer[..answer.len().min(300)])?;
    mcp_sieve::protocol::jsonrpc::error_code_in(answer)
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
        }
        assert_eq!(
            error_code(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}"#),
            Some(-32602)
        );
    }
}
