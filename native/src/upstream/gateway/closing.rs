//! Upstream sessions ended: those of a downstream session that ended, and every one this
//! process holds as it ends — an HTTP `DELETE` each, at once, within [`DEADLINE`].

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use mcp_sieve::protocol::Session;

use super::drivers::Driver;
use super::Gateway;

/// Longest the closing of an upstream session may take.
const DEADLINE: Duration = Duration::from_secs(30);

impl Gateway {
    /// Closes the upstream sessions `ended` (a downstream session that ended) held (see
    /// [`Gateway::close_all`]).
    pub async fn close(&self, ended: &Session) {
        let closing = self.state().closing(ended);
        self.close_all(closing).await;
    }

    /// Closes every upstream session this process still holds, as it ends: those of each
    /// downstream session in `ended` (task holders among them) and the gateway's own (see
    /// [`upstream::Gateway::closing_own`](mcp_sieve::upstream::Gateway::closing_own)), at once
    /// (see [`Gateway::close_all`]).
    pub async fn close_every(&self, ended: &[Session]) {
        let mut closing: Vec<_> = {
            let state = self.state();
            ended
                .iter()
                .flat_map(|s| state.closing(s))
                .chain(state.closing_own())
                .collect()
        };
        // One DELETE per upstream session, should two records name the same one.
        closing.sort();
        closing.dedup();
        self.close_all(closing).await;
    }

    /// Sends each HTTP `DELETE` of `closing` (an upstream and the headers naming its session),
    /// at once, each within [`DEADLINE`]; a failure is only logged (the upstream expires the
    /// session on its own then).
    pub(super) async fn close_all(&self, closing: Vec<(usize, Vec<(String, String)>)>) {
        let mut deletes = Vec::new();
        for (member, headers) in closing {
            let Some(Driver::Http { url }) = self.0.drivers.get(member) else {
                continue;
            };
            let mut req = hyper::Request::delete(url);
            for (k, v) in &headers {
                req = req.header(k, v);
            }
            if let Some(bearer) = self.current_authorization(member) {
                req = req.header("authorization", bearer);
            }
            let Ok(req) = req.body(Full::new(Bytes::new())) else {
                continue;
            };
            let client = self.0.client.clone();
            deletes.push(tokio::spawn(async move {
                match tokio::time::timeout(DEADLINE, client.request(req)).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::warn!("an upstream session was not closed: {e}"),
                    Err(_) => tracing::warn!("an upstream session was not closed within {} s", DEADLINE.as_secs()),
                }
            }));
        }
        for d in deletes {
            let _ = d.await;
        }
    }
}
