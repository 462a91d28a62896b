//! How a core response becomes a hyper one ([`reply`]), for every answer the native server sends.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use mcp_sieve::http;

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
