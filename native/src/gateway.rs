//! Gateway mode for the native server: moves the bytes of the core's upstream conversation
//! (`mcp_sieve::upstream`) over a hyper client. Every rule — sessions, ids, re-open, paging,
//! refresh, catalog building, forwarding — is in the core; this file only posts and reads.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use mcp_sieve::http::{self, MemoryStore};
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, HttpAnswer, Post, Serving};
use mcp_sieve::{catalog::Upstream, Error};
use std::sync::Arc;

use crate::platform::now_ms;

/// Largest upstream answer read, bytes.
const MAX_ANSWER: usize = 16 << 20;
/// Longest one upstream exchange may take.
const DEADLINE: Duration = Duration::from_secs(30);
/// How long a request waits for a refresh another request runs, before answering 502.
const MAX_REFRESH_WAIT: Duration = Duration::from_secs(60);

/// The upstream conversation of this process and the HTTP client that carries it.
pub struct Gateway {
    url: String,
    state: Mutex<upstream::Gateway>,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Gateway {
    /// A gateway in front of `up`.
    pub fn new(up: Upstream) -> Self {
        Gateway {
            url: up.url.clone(),
            state: Mutex::new(upstream::Gateway::new(up)),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, upstream::Gateway> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One POST, within [`DEADLINE`].
    async fn post(&self, post: Post) -> Result<HttpAnswer, Error> {
        tokio::time::timeout(DEADLINE, self.post_once(post))
            .await
            .map_err(|_| Error::Upstream(format!("no answer within {} s", DEADLINE.as_secs())))?
    }

    async fn post_once(&self, post: Post) -> Result<HttpAnswer, Error> {
        let unreachable = |e: &dyn std::fmt::Display| Error::Upstream(format!("cannot reach {}: {e}", self.url));
        let mut req = hyper::Request::post(&self.url);
        for (k, v) in &post.headers {
            req = req.header(k, v);
        }
        let request = post.body;
        let req = req
            .body(Full::new(Bytes::from(request.clone())))
            .map_err(|e| unreachable(&e))?;
        let resp = self.client.request(req).await.map_err(|e| unreachable(&e))?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (status, session, content_type) = (
            resp.status().as_u16(),
            header("mcp-session-id"),
            header("content-type").unwrap_or_default(),
        );
        // Read until the body ends, or until an SSE stream carries the response (it may stay open).
        let mut reader = upstream::AnswerReader::new(&content_type, &request, MAX_ANSWER);
        let mut body = resp.into_body();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| unreachable(&e))?;
            if let Some(data) = frame.data_ref() {
                if reader.push(data)? {
                    break;
                }
            }
        }
        Ok(HttpAnswer {
            status,
            session,
            content_type,
            body: reader.body(),
        })
    }

    /// The server to run a request on: the upstream's lists under `local`'s document, refreshed
    /// when due (one refresh at a time; a stale server keeps serving while it runs or when it fails).
    pub async fn serving(&self, local: &Server) -> Result<Arc<Server>, Error> {
        let started = tokio::time::Instant::now();
        loop {
            let serving = self.state().serving(now_ms());
            match serving {
                Serving::Ready(s) => return Ok(s),
                Serving::Wait if started.elapsed() < MAX_REFRESH_WAIT => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Serving::Wait => return Err(Error::Upstream("its lists are still being fetched".into())),
                Serving::Refresh(mut refresh) => {
                    let mut conv = self.state().conversation();
                    let lists = upstream::drive(&mut conv, &mut *refresh, |p| self.post(p)).await;
                    let done = self.state().refreshed(local.catalog(), conv, lists, now_ms())?;
                    if let Some(e) = done.failure {
                        eprintln!("mcp-sieve: upstream refresh failed, serving the cached lists: {e}");
                    }
                    return Ok(done.server);
                }
            }
        }
    }

    /// Performs the core's `Forward` effect of `answer` at the upstream (in the session's own
    /// upstream session, remembered in `store`) and completes the answer with the upstream's
    /// reply, passed through.
    pub async fn finish(&self, answer: http::Response, store: &Mutex<MemoryStore>) -> http::Response {
        let Some(f) = answer.forward.clone() else {
            return answer;
        };
        let (mut conv, mut exchange) = self.state().forward(&f);
        let reply = upstream::drive(&mut conv, &mut exchange, |p| self.post(p)).await;
        self.state().note_changes(&mut conv);
        let mut store = store.lock().unwrap_or_else(|p| p.into_inner());
        upstream::forwarded(answer, &conv, reply, &mut *store, now_ms())
    }
}
