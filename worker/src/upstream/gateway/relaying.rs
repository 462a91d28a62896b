//! What carries out an upstream's messages during a forwarded call: the [`Relaying`] a session's
//! streaming call has (`relay::Relaying`), or [`Refusing`] for a call whose client cannot be
//! reached while it runs.

use std::cell::RefCell;

use mcp_sieve::http;
use mcp_sieve::upstream;
use mcp_sieve::Error;

use crate::platform::now_ms;

/// A future a [`Relaying`] hands back.
pub type LocalFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

/// What carries out the upstream's messages during a forwarded call (`relay::Relaying` for a
/// session's call that streams; [`Refusing`] for one whose client cannot be reached).
pub trait Relaying {
    /// Carries out what `msg`, sent by the upstream during the exchange, becomes; returns the
    /// answer to send the upstream (in the same session), if any.
    fn handle(&self, msg: serde_json::Value) -> LocalFuture<'_, Option<serde_json::Value>>;
    /// Whether `note` (a notification of the reply) was carried already.
    fn relays(&self, note: &serde_json::Value) -> bool;
    /// Whether a question went to the client during the exchange.
    fn asked(&self) -> bool;
    /// The answer completed with the exchange's outcome (`upstream::forwarded`, in its store).
    fn forwarded(
        &self,
        answer: http::Response,
        conv: &upstream::Conversation,
        reply: Result<upstream::Reply, Error>,
    ) -> http::Response;
}

/// The relay of a call whose client cannot be reached while it runs (stateless, or no SSE):
/// what the upstream asks is refused at once; its notifications go with the result.
pub struct Refusing(RefCell<upstream::Relay>);

impl Refusing {
    pub(crate) fn new(f: &mcp_sieve::protocol::Forward) -> Self {
        Refusing(RefCell::new(
            upstream::Relay::new(f, &crate::platform::fresh_id(), false).0,
        ))
    }
}

impl Relaying for Refusing {
    fn handle(&self, msg: serde_json::Value) -> LocalFuture<'_, Option<serde_json::Value>> {
        let step = self.0.borrow_mut().on_message(&msg);
        Box::pin(async move {
            match step {
                upstream::Relayed::Reply(m) => Some(m),
                _ => None,
            }
        })
    }
    fn relays(&self, _: &serde_json::Value) -> bool {
        false
    }
    fn asked(&self) -> bool {
        false // it refuses every question
    }
    fn forwarded(
        &self,
        answer: http::Response,
        conv: &upstream::Conversation,
        reply: Result<upstream::Reply, Error>,
    ) -> http::Response {
        upstream::forwarded(answer, conv, reply, &mut http::MemoryStore::default(), now_ms())
    }
}
