//! Rate limits across isolates (the document's `limits.rates`): one Durable Object per limited
//! key (the limit's id and the key it counts by, e.g. `paid-api` + `alice`), holding that key's
//! token bucket in memory and handing out leases: a few tokens (`lease_size`) an isolate spends
//! without asking again for up to a second (the core's pure `operate::lease`). One use of an
//! isolate asks a bucket at a time (the others wait for its answer), and a bucket that refills a
//! lease within a second is asked for the next lease before this one is spent (in `waitUntil`:
//! the use that finds it due does not wait for it), so that a use rarely waits for the object.
//! The object writes
//! its bucket to storage only when it refills slower than a lease lasts (so an eviction does not
//! give a slow limit a full bucket again); a bucket that refills within a second and is lost
//! comes back full. Chosen over Cloudflare's rate limiting binding, whose limits are fixed in
//! wrangler.toml (periods of 10 or 60 s only), answer no retry time and count per location: the
//! document's limits are neither.

use std::cell::RefCell;
use std::time::Duration;

use mcp_sieve::http;
use mcp_sieve::operate::lease::{lease_size, Leases, Turn};
use mcp_sieve::operate::limits::{Bucket, Refusal, Take};
use mcp_sieve::operate::Use;
use mcp_sieve::protocol::Server;
use serde::{Deserialize, Serialize};
use worker::{
    durable_object, Context, Delay, DurableObject, Env, Method, Request, RequestInit, Response, Result, State,
};

use crate::telemetry::log::About;

/// The Durable Object namespace binding of the limiters.
pub const BINDING: &str = "RATE_LIMITS";

thread_local! {
    /// The tokens this isolate holds on lease, by bucket.
    static LEASES: RefCell<Leases> = RefCell::new(Leases::default());
}

/// What the front Worker asks one bucket: a lease of up to `want` tokens.
#[derive(Serialize, Deserialize)]
struct Ask {
    want: u32,
    burst: u32,
    rate: u32,
    window_ms: i64,
    now: i64,
}

/// Its answer: the tokens leased, or `retry_after_ms` when no token is there.
#[derive(Serialize, Deserialize)]
struct Answer {
    tokens: u32,
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
    /// The bucket (`None` until read from storage, or full when nothing is stored).
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
        let now = match cached {
            Some(b) => b,
            None => self
                .state
                .storage()
                .get::<(f64, i64)>("bucket")
                .await
                .ok()
                .flatten()
                .map(|(tokens, at_ms)| Bucket { tokens, at_ms })
                .unwrap_or_else(|| Bucket::full(&take, ask.now)),
        };
        let (after, answer) = match now.lease(&take, ask.now, ask.want) {
            Ok((b, tokens)) => (
                b,
                Answer {
                    tokens,
                    retry_after_ms: None,
                },
            ),
            Err(ms) => (
                now,
                Answer {
                    tokens: 0,
                    retry_after_ms: Some(ms),
                },
            ),
        };
        *self.bucket.borrow_mut() = Some(after);
        if answer.tokens > 0 && after.worth_keeping(&take) {
            self.state.storage().put("bucket", (after.tokens, after.at_ms)).await?;
        }
        Response::from_json(&answer)
    }
}

/// Asks `take`'s object for a lease at `now`: the tokens given, or the wait it names.
async fn ask(ns: &worker::ObjectNamespace, take: &Take, now: i64) -> Result<std::result::Result<u32, i64>> {
    let ask = Ask {
        want: lease_size(take),
        burst: take.burst,
        rate: take.rate,
        window_ms: take.window_ms,
        now,
    };
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(serde_json::to_string(&ask)?.into()));
    let req = Request::new_with_init("https://limits.internal/", &init)?;
    let mut res = ns.get_by_name(&take.bucket_name())?.fetch_with_request(req).await?;
    let a = res.json::<Answer>().await?;
    Ok(match a.retry_after_ms {
        Some(ms) if a.tokens == 0 => Err(ms),
        _ => Ok(a.tokens),
    })
}

/// How long a use waits before looking again at a bucket another use of this isolate is asking:
/// 1 ms, doubled each time up to this (the waiting uses of a slow ask would otherwise take the
/// CPU its answer needs).
const WAIT_MAX_MS: u64 = 16;

/// Takes a token of each bucket `u` takes from: from this isolate's leases, asking a bucket's
/// object for a new lease only when none is held and no other use of this isolate is asking it
/// (the others wait for that answer: `Leases::turn`). A bucket that refills fast is asked for its
/// next lease before this one is spent, without this use waiting (`ctx.wait_until`). `Some` is the
/// refusal (429) when one bucket is empty (the tokens the others gave stay on lease here). An
/// unreachable object refuses nothing (logged).
pub async fn check(env: &Env, ctx: &Context, server: &Server, u: &Use) -> Option<(Refusal, http::Response)> {
    let takes = server.limits().takes(u);
    if takes.is_empty() {
        return None;
    }
    let mut reserved: Vec<Option<i64>> = vec![None; takes.len()];
    let mut refused: Option<Refusal> = None;
    for (t, r) in takes.iter().zip(reserved.iter_mut()) {
        let mut wait = 1;
        loop {
            let now = crate::platform::now_ms();
            match LEASES.with(|l| l.borrow_mut().turn(t, now)) {
                Turn::Reserved(end) => *r = Some(end),
                Turn::Refused(ms) => {
                    if refused.as_ref().is_none_or(|x| x.retry_after_ms < ms) {
                        refused = Some(Refusal::of(t, ms));
                    }
                }
                Turn::Wait => {
                    Delay::from(Duration::from_millis(wait)).await;
                    wait = (wait * 2).min(WAIT_MAX_MS);
                    continue;
                }
                // Answered: its tokens are on lease here (or its refusal kept); look again.
                Turn::Ask if ask_into_leases(env, t, now, &About::of_use(u)).await => continue,
                Turn::Ask => {}
            }
            break;
        }
    }
    if let Some(r) = refused {
        give_back(&takes, &reserved);
        let response = mcp_sieve::operate::refused(&r, &u.id);
        return Some((r, response));
    }
    let now = crate::platform::now_ms();
    for t in takes {
        if LEASES.with(|l| l.borrow_mut().ask_ahead(&t, now)) {
            let (env, about) = (env.clone(), About::of_use(u));
            ctx.wait_until(async move {
                ask_into_leases(&env, &t, now, &about).await;
            });
        }
    }
    None
}

/// Asks `take`'s object for a lease (an ask sent at `now`) and keeps its answer in this
/// isolate's leases; `false` when the object could not be asked (logged about `u`; the ask is
/// then over, with no tokens).
async fn ask_into_leases(env: &Env, take: &Take, now: i64, about: &About) -> bool {
    let answer = match env.durable_object(BINDING) {
        Ok(ns) => ask(&ns, take, now)
            .await
            .map_err(|e| format!("the rate limit \"{}\" could not be asked: {e}", take.id)),
        Err(e) => Err(format!("rate limits need the {BINDING} Durable Object binding: {e}")),
    };
    let ok = answer.is_ok();
    LEASES.with(|l| {
        l.borrow_mut()
            .answered(take, now, answer.as_ref().map_or(Ok(0), |a| *a))
    });
    if let Err(e) = answer {
        about.error(e);
    }
    ok
}

/// Spends a leased token of each bucket `u` takes from, if this isolate holds one of each and
/// no bucket's next lease is due to be asked for (no I/O: the fast path's check); else spends
/// none and the full path's [`check`] asks.
pub fn spend_leased(server: &Server, u: &Use) -> bool {
    let takes = server.limits().takes(u);
    let now = crate::platform::now_ms();
    LEASES.with(|l| {
        let mut l = l.borrow_mut();
        !takes.iter().any(|t| l.ahead_due(t, now)) && l.spend_all(&takes, now)
    })
}

/// Puts the tokens a refused use had reserved back on their leases.
fn give_back(takes: &[Take], reserved: &[Option<i64>]) {
    LEASES.with(|l| {
        let mut l = l.borrow_mut();
        for (t, r) in takes.iter().zip(reserved) {
            if let Some(until) = r {
                l.add(t, 1, *until);
            }
        }
    });
}
