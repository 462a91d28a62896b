//! Rate limits across isolates (the document's `limits.rates`): one Durable Object per limited
//! key (the limit's id and the key it counts by, e.g. `paid-api` + `alice`), holding that key's
//! token bucket in its storage and deciding with the core's pure bucket math
//! (`mcp_sieve::operate::limits::Bucket`). The front Worker asks the objects of a use's buckets
//! before the use runs; when one refuses, the tokens the others gave are given back. Chosen over
//! Cloudflare's rate limiting binding, whose limits are fixed in wrangler.toml (periods of 10 or
//! 60 s only), answer no retry time and count per location: the document's limits are neither.

use std::cell::RefCell;

use mcp_sieve::http;
use mcp_sieve::operate::limits::{Bucket, Refusal, Take};
use mcp_sieve::operate::Use;
use mcp_sieve::protocol::Server;
use serde::{Deserialize, Serialize};
use worker::{durable_object, DurableObject, Env, Method, Request, RequestInit, Response, Result, State};

/// The Durable Object namespace binding of the limiters.
pub const BINDING: &str = "RATE_LIMITS";

/// What the front Worker asks one bucket.
#[derive(Serialize, Deserialize)]
struct Ask {
    /// `take` or `refund`.
    op: String,
    burst: u32,
    rate: u32,
    window_ms: i64,
    now: i64,
}

/// Its answer: `retry_after_ms` when no token is there.
#[derive(Serialize, Deserialize)]
struct Answer {
    retry_after_ms: Option<i64>,
}

/// The take an ask stands for (its id and key are the object's name; not needed here).
fn take_of(a: &Ask) -> Take {
    Take {
        id: String::new(),
        key: String::new(),
        burst: a.burst,
        rate: a.rate,
        window_ms: a.window_ms,
    }
}

/// One limited key's bucket.
#[durable_object]
pub struct RateLimiter {
    state: State,
    bucket: RefCell<Option<Bucket>>,
}

impl DurableObject for RateLimiter {
    fn new(state: State, _env: Env) -> Self {
        RateLimiter {
            state,
            bucket: RefCell::new(None),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let ask: Ask = req.json().await?;
        let take = take_of(&ask);
        let cached = *self.bucket.borrow();
        let stored = match cached {
            Some(b) => Some(b),
            None => self
                .state
                .storage()
                .get::<(f64, i64)>("bucket")
                .await
                .ok()
                .flatten()
                .map(|(tokens, at_ms)| Bucket { tokens, at_ms }),
        };
        let now = bucket_now(stored, &take, ask.now);
        let (after, answer) = match ask.op.as_str() {
            "refund" => (now.refund(&take), Answer { retry_after_ms: None }),
            _ => match now.take(&take, ask.now) {
                Ok(b) => (b, Answer { retry_after_ms: None }),
                Err(ms) => (
                    now,
                    Answer {
                        retry_after_ms: Some(ms),
                    },
                ),
            },
        };
        *self.bucket.borrow_mut() = Some(after);
        self.state.storage().put("bucket", (after.tokens, after.at_ms)).await?;
        Response::from_json(&answer)
    }
}

/// The bucket as stored, or a full one.
fn bucket_now(stored: Option<Bucket>, take: &Take, now: i64) -> Bucket {
    stored.unwrap_or_else(|| Bucket::full(take, now))
}

/// Sends `op` for `take` to its object; the wait it names, if no token is there.
async fn send(ns: &worker::ObjectNamespace, take: &Take, op: &str) -> Result<Option<i64>> {
    let ask = Ask {
        op: op.into(),
        burst: take.burst,
        rate: take.rate,
        window_ms: take.window_ms,
        now: crate::platform::now_ms(),
    };
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(serde_json::to_string(&ask)?.into()));
    let req = Request::new_with_init("https://limits.internal/", &init)?;
    let mut res = ns.get_by_name(&take.bucket_name())?.fetch_with_request(req).await?;
    Ok(res.json::<Answer>().await?.retry_after_ms)
}

/// Asks the buckets `u` takes from: `Some` is the refusal (429) when one of them is empty (the
/// tokens the others gave are given back). An unreachable object refuses nothing (logged).
pub async fn check(env: &Env, server: &Server, u: &Use) -> Option<(Refusal, http::Response)> {
    let takes = server.limits().takes(u);
    if takes.is_empty() {
        return None;
    }
    let ns = match env.durable_object(BINDING) {
        Ok(ns) => ns,
        Err(e) => {
            crate::log::About::of_use(u).error(format_args!(
                "rate limits need the {BINDING} Durable Object binding: {e}"
            ));
            return None;
        }
    };
    let mut given = Vec::new();
    let mut refused: Option<Refusal> = None;
    for t in &takes {
        match send(&ns, t, "take").await {
            Ok(None) => given.push(t),
            Ok(Some(ms)) if refused.as_ref().is_none_or(|r| r.retry_after_ms < ms) => {
                refused = Some(Refusal::of(t, ms))
            }
            Ok(Some(_)) => {}
            Err(e) => {
                crate::log::About::of_use(u).error(format_args!("the rate limit \"{}\" could not be asked: {e}", t.id))
            }
        }
    }
    let r = refused?;
    for t in given {
        if let Err(e) = send(&ns, t, "refund").await {
            crate::log::About::of_use(u).error(format_args!(
                "a token of rate limit \"{}\" could not be given back: {e}",
                t.id
            ));
        }
    }
    let response = mcp_sieve::operate::refused(&r, &u.id);
    Some((r, response))
}
