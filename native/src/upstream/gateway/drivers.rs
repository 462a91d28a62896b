//! How the bytes reach one upstream ([`Driver`]: an HTTP URL or a stdio child process), and
//! one POST over HTTP: the answer read to its end within the upstream's `maxAnswerBytes`, what
//! the upstream asks or tells meanwhile handed to the call's relay.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_sieve::upstream::{self, HttpAnswer, Post};
use mcp_sieve::Error;

use super::Gateway;
use crate::relay::Relaying;
use crate::upstream::stdio::Pipe;

/// How the bytes reach one upstream.
pub(super) enum Driver {
    Http {
        url: String,
    },
    /// Shared with the gateway a reload builds next when it keeps the process ([`Pipe::runs`]).
    Stdio(std::sync::Arc<Pipe>),
}

impl Gateway {
    /// `post` to `url`, its answer read up to `max` bytes (no deadline of its own: the caller's).
    pub(crate) async fn post_http(
        &self,
        url: &str,
        post: Post,
        relaying: Option<&mut Relaying<'_>>,
        max: usize,
    ) -> Result<HttpAnswer, Error> {
        Ok(self.post_http_with(url, post, relaying, max).await?.0)
    }

    /// [`Gateway::post_http`], with the answer's `WWW-Authenticate` header.
    pub(super) async fn post_http_with(
        &self,
        url: &str,
        post: Post,
        mut relaying: Option<&mut Relaying<'_>>,
        max: usize,
    ) -> Result<(HttpAnswer, Option<String>), Error> {
        let unreachable = |e: &dyn std::fmt::Display| Error::Upstream(format!("cannot reach {url}: {e}"));
        let mut req = hyper::Request::post(url);
        for (k, v) in &post.headers {
            req = req.header(k, v);
        }
        let request = post.body;
        let req = req
            .body(Full::new(Bytes::from(request.clone())))
            .map_err(|e| unreachable(&e))?;
        let resp = self.0.client.request(req).await.map_err(|e| unreachable(&e))?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (status, session, content_type, www) = (
            resp.status().as_u16(),
            header("mcp-session-id"),
            header("content-type").unwrap_or_default(),
            header("www-authenticate"),
        );
        // Read until the body ends, or until an SSE stream carries the response (it may stay open).
        let mut reader = upstream::AnswerReader::new(&content_type, &request, max);
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| unreachable(&e))?;
            if let Some(data) = frame.data_ref() {
                let done = reader.push(data)?;
                // What the upstream asks or tells the caller meanwhile goes to it now.
                if let Some(r) = relaying.as_deref_mut() {
                    for msg in reader.take_events() {
                        let Some(answer) = r.handle(msg).await else {
                            continue;
                        };
                        // In the same upstream session; its reply (202) carries nothing.
                        let post = upstream::answer_post(&post.headers, &answer);
                        if let Err(e) = Box::pin(self.post_http(url, post, None, max)).await {
                            tracing::warn!("an answer to an upstream's request was not delivered: {e}");
                        }
                    }
                }
                if done {
                    break;
                }
            }
        }
        let answer = HttpAnswer {
            status,
            session,
            content_type,
            body: reader.body(),
        };
        Ok((answer, www))
    }
}
