//! The client side of Streamable HTTP as a conversation without I/O, in the style of a sync
//! protocol: the caller asks a [`Machine`] what to send next ([`Step::Send`]), performs that HTTP
//! POST however it can (`worker::Fetch`, hyper, the browser's `fetch`), and feeds the answer back
//! ([`Machine::receive`]) until the machine is [`Step::Done`]. The conversation owns the request
//! ids, `initialize` + `notifications/initialized`, the session and protocol headers, the one
//! re-open after the upstream forgets our session (HTTP 404), paging with one page limit, reading
//! JSON and SSE replies, and — for gateway mode — the refresh of the upstream's lists (one in
//! flight), the catalog built over them and the forwarding of calls.
//!
//! Used by the Worker's gateway, the native server's gateway and the browser package's
//! `McpClient`; each of them only moves bytes.

mod conversation;
#[cfg(feature = "gateway")]
mod gateway;
#[cfg(feature = "gateway")]
mod merge;
#[cfg(feature = "gateway")]
pub mod oauth;
mod pages;
#[cfg(feature = "gateway")]
mod redact;
#[cfg(feature = "gateway")]
mod relay;
mod reply;
#[cfg(feature = "gateway")]
mod rounds;
#[cfg(feature = "gateway")]
mod space;
#[cfg(feature = "gateway")]
mod standalone;
#[cfg(feature = "gateway")]
mod task_asks;
#[cfg(feature = "gateway")]
mod task_list;
#[cfg(feature = "gateway")]
mod task_shape;

pub use crate::protocol::UpstreamLink as Link;
pub use conversation::{ClientConfig, Conversation, Exchange};
#[cfg(feature = "gateway")]
pub use conversation::{Era, SentModern};
#[cfg(feature = "gateway")]
pub use gateway::{
    forwarded, gathered, named, named_by, status_response, unavailable, Check, Gateway, Job, Refreshed, Serving,
    CHECK_AFTER_MS, CHECK_DEADLINE_MS, REFRESH_DEADLINE_MS, STATUS_PATH,
};
#[cfg(feature = "gateway")]
pub use merge::{build, build_claimed, build_many, build_pinned, Source};
pub use pages::{Lists, Pages, Refresh, MAX_PAGES};
#[cfg(feature = "gateway")]
pub use redact::Secrets;
#[cfg(feature = "gateway")]
pub use relay::{
    answer_post, answering, await_answer, carry, input_required, input_response, refusal, relayed_capabilities,
    relays_stateless, unawaited, waiting_for, waiting_name, Carried, Downstream, Relay, Relayed,
};
pub use reply::{parse_reply, AnswerReader, Reply};
#[cfg(feature = "gateway")]
pub use rounds::{drive_rounds, needed, unwrap_input, wrap_input, Needed, MAX_ROUNDS, STATE_TTL_MS};
#[cfg(feature = "gateway")]
pub use space::{shown, Claims, MAX_REFUSALS_SHOWN, MAX_TOOL_NAME};
#[cfg(feature = "gateway")]
pub use standalone::{
    enqueue, on_stream, opens_stream, post_headers, stream_answer, stream_reader, FromStream, MAX_QUEUED,
};
#[cfg(feature = "gateway")]
pub use task_asks::{acknowledgement, parked_name, result_forward, update, waits_on_result, with_question, Update};
#[cfg(feature = "gateway")]
pub use task_list::TaskList;
#[cfg(feature = "gateway")]
pub use task_shape::{legacy_task, to_client};

use std::future::Future;

use crate::error::Result;

/// The protocol version the client asks the upstream for in `initialize` (the gateway first
/// asks `server/discover`, and speaks 2026-07-28 to an upstream that offers it).
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// One HTTP POST to perform at the upstream's endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Post {
    /// Headers to send (content type, accept, session, protocol version, the client's own).
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC message.
    pub body: String,
}

/// What the upstream answered to a [`Post`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpAnswer {
    /// HTTP status.
    pub status: u16,
    /// The `Mcp-Session-Id` header, if any.
    pub session: Option<String>,
    /// The `Content-Type` header (JSON or `text/event-stream`).
    pub content_type: String,
    /// The whole body.
    pub body: String,
}

/// What a machine wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<T> {
    /// Perform this POST, then call [`Machine::receive`] with its answer.
    Send(Post),
    /// Finished with this output.
    Done(T),
}

/// A conversation step by step: `step` until `Done`, feeding every answer to `receive`.
pub trait Machine {
    /// What the machine produces.
    type Output;
    /// What to do next: send a POST, or done.
    fn step(&mut self, conv: &mut Conversation) -> Result<Step<Self::Output>>;
    /// The answer to the last POST asked for.
    fn receive(&mut self, conv: &mut Conversation, answer: HttpAnswer) -> Result<()>;
}

/// Runs `m` to its end over `conv`, performing each POST with `send` (the shell's HTTP client).
pub async fn drive<M, F, Fut>(conv: &mut Conversation, m: &mut M, mut send: F) -> Result<M::Output>
where
    M: Machine,
    F: FnMut(Post) -> Fut,
    Fut: Future<Output = Result<HttpAnswer>>,
{
    loop {
        match m.step(conv)? {
            Step::Done(out) => return Ok(out),
            Step::Send(post) => {
                let answer = send(post).await?;
                m.receive(conv, answer)?;
            }
        }
    }
}
