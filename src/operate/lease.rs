//! Token leases: how the Worker spends a rate limit's tokens without asking its Durable Object
//! on every use. The object keeps the bucket and hands out a lease (a few tokens, valid for
//! [`LEASE_MS`]); an isolate spends them locally ([`Leases`]) and asks again when its lease is
//! spent or expired. The bucket gives no token twice, so more uses than it allows never happen;
//! a token leased and not spent in time is lost (a caller may be refused early while another
//! isolate holds tokens). One use of an isolate asks a bucket at a time ([`Leases::turn`]: the
//! others wait for its answer, and a refusal is kept until the wait it names), and a bucket that
//! refills a lease within a lease's time is asked again before its lease is spent
//! ([`Leases::ask_ahead`]), so that a use rarely waits for the object. All pure: the time is
//! passed in.

use std::collections::HashMap;

use super::limits::{Bucket, Take};

/// How long a lease's tokens may be spent, in milliseconds.
pub const LEASE_MS: i64 = 1000;

/// The most tokens one lease holds.
pub const LEASE_MAX: u32 = 256;

/// Leases kept by one isolate before expired ones are dropped.
const KEEP: usize = 1000;

/// How long an ask is waited for before another use asks again (the use asking may be gone).
pub const ASK_MS: i64 = LEASE_MS;

/// The tokens an isolate asks for at once: a quarter of the burst, 1 to [`LEASE_MAX`].
pub fn lease_size(take: &Take) -> u32 {
    (take.burst / 4).clamp(1, LEASE_MAX)
}

impl Bucket {
    /// Leases up to `want` tokens (at least 1) at `now_ms`: the bucket after and how many were
    /// given, or how many milliseconds until a token is there (the bucket is then unchanged).
    pub fn lease(self, take: &Take, now_ms: i64, want: u32) -> Result<(Self, u32), i64> {
        let b = self.take(take, now_ms)?;
        let more = (b.tokens.floor().max(0.0) as u32).min(want.max(1) - 1);
        Ok((
            Bucket {
                tokens: b.tokens - f64::from(more),
                ..b
            },
            more + 1,
        ))
    }

    /// Whether the bucket must be written to storage to survive its object's eviction: when
    /// it would take longer than a lease to refill. A bucket that refills sooner and is lost
    /// comes back full, which is at most one lease's time of refill early.
    pub fn worth_keeping(&self, take: &Take) -> bool {
        let missing = f64::from(take.burst) - self.tokens;
        missing * take.window_ms.max(1) as f64 > LEASE_MS as f64 * f64::from(take.rate)
    }
}

/// Tokens leased to this isolate for one bucket, spendable until `until_ms` (exclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Lease {
    tokens: u32,
    until_ms: i64,
}

/// What a use does about one bucket ([`Leases::turn`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Turn {
    /// A leased token is reserved for it: the end of its lease.
    Reserved(i64),
    /// It asks the bucket's object, and hands the answer to [`Leases::answered`].
    Ask,
    /// Another use of this isolate is asking: look again shortly.
    Wait,
    /// The object said no token is there for this many milliseconds more.
    Refused(i64),
}

/// The leases one isolate holds, by bucket name.
#[derive(Debug, Default)]
pub struct Leases {
    held: HashMap<String, Vec<Lease>>,
    /// Buckets being asked, and when the ask was sent.
    asking: HashMap<String, i64>,
    /// Buckets whose object refused, and when it said its next token is there.
    empty_until: HashMap<String, i64>,
}

impl Leases {
    /// Takes one leased token of each of `takes` at `now_ms` where one is held: for each take,
    /// the end of the lease it came from, or `None` (that bucket must be asked).
    pub fn reserve(&mut self, takes: &[Take], now_ms: i64) -> Vec<Option<i64>> {
        if self.held.len() > KEEP {
            self.held.retain(|_, ls| {
                ls.retain(|l| l.until_ms > now_ms);
                !ls.is_empty()
            });
        }
        takes
            .iter()
            .map(|t| {
                let ls = self.held.get_mut(&t.bucket_name())?;
                ls.retain(|l| l.until_ms > now_ms && l.tokens > 0);
                // The lease that ends first is spent first.
                let l = ls.iter_mut().min_by_key(|l| l.until_ms)?;
                l.tokens -= 1;
                Some(l.until_ms)
            })
            .collect()
    }

    /// What a use does about `take` at `now_ms`: reserves a leased token when one is held; else
    /// is refused while the object's last refusal lasts, waits while another use asks (for up
    /// to [`ASK_MS`]), or asks (then this isolate's only ask of that bucket).
    pub fn turn(&mut self, take: &Take, now_ms: i64) -> Turn {
        if let Some(until) = self.reserve(std::slice::from_ref(take), now_ms).pop().flatten() {
            return Turn::Reserved(until);
        }
        let name = take.bucket_name();
        if self.empty_until.len() > KEEP {
            self.empty_until.retain(|_, at| *at > now_ms);
        }
        match self.empty_until.get(&name) {
            Some(&at) if at > now_ms => return Turn::Refused(at - now_ms),
            Some(_) => {
                self.empty_until.remove(&name);
            }
            None => {}
        }
        match self.asking.get(&name) {
            Some(&sent) if now_ms - sent < ASK_MS => Turn::Wait,
            _ => {
                self.asking.insert(name, now_ms);
                Turn::Ask
            }
        }
    }

    /// Whether `take`'s next lease is due to be asked for at `now_ms`, before the held tokens
    /// are spent: when the bucket refills a lease within [`LEASE_MS`] (so a lease asked early
    /// and not spent is soon refilled), no ask of it is being made, and under a quarter of a
    /// lease is held or every held token expires within a quarter of [`LEASE_MS`].
    pub fn ahead_due(&self, take: &Take, now_ms: i64) -> bool {
        let size = lease_size(take);
        let refills = f64::from(take.rate) * LEASE_MS as f64 >= f64::from(size) * take.window_ms.max(1) as f64;
        let name = take.bucket_name();
        if !refills || self.asking.get(&name).is_some_and(|&sent| now_ms - sent < ASK_MS) {
            return false;
        }
        let live = || {
            self.held
                .get(&name)
                .into_iter()
                .flatten()
                .filter(|l| l.until_ms > now_ms)
        };
        let held: u32 = live().map(|l| l.tokens).sum();
        let last = live().map(|l| l.until_ms).max().unwrap_or(now_ms);
        held * 4 < size || (last - now_ms) * 4 < LEASE_MS
    }

    /// Whether a use that just reserved a token of `take` asks for its next lease now
    /// ([`Leases::ahead_due`]; then it is this isolate's ask of that bucket, and its answer goes
    /// to [`Leases::answered`]).
    pub fn ask_ahead(&mut self, take: &Take, now_ms: i64) -> bool {
        let due = self.ahead_due(take, now_ms);
        if due {
            self.asking.insert(take.bucket_name(), now_ms);
        }
        due
    }

    /// The answer to an ask of `take` sent at `sent_ms`: the tokens leased (kept until
    /// `sent_ms` + [`LEASE_MS`]; none when the object could not be asked), or how many
    /// milliseconds after `sent_ms` the object said its next token is there.
    pub fn answered(&mut self, take: &Take, sent_ms: i64, answer: Result<u32, i64>) {
        let name = take.bucket_name();
        if self.asking.get(&name) == Some(&sent_ms) {
            self.asking.remove(&name);
        }
        match answer {
            Ok(tokens) => self.add(take, tokens, sent_ms + LEASE_MS),
            Err(ms) => {
                self.empty_until.insert(name, sent_ms + ms);
            }
        }
    }

    /// Spends one leased token of each of `takes` at `now_ms` if one of each is held; else
    /// spends none. Whether it spent them.
    pub fn spend_all(&mut self, takes: &[Take], now_ms: i64) -> bool {
        let reserved = self.reserve(takes, now_ms);
        if reserved.iter().all(Option::is_some) {
            return true;
        }
        for (t, until) in takes.iter().zip(reserved) {
            if let Some(until) = until {
                self.add(t, 1, until);
            }
        }
        false
    }

    /// Keeps `tokens` tokens of `take` leased until `until_ms`.
    pub fn add(&mut self, take: &Take, tokens: u32, until_ms: i64) {
        if tokens == 0 {
            return;
        }
        let ls = self.held.entry(take.bucket_name()).or_default();
        match ls.iter_mut().find(|l| l.until_ms == until_ms) {
            Some(l) => l.tokens += tokens,
            None => ls.push(Lease { tokens, until_ms }),
        }
    }

    /// The tokens of `take` held at `now_ms`.
    pub fn held(&self, take: &Take, now_ms: i64) -> u32 {
        self.held.get(&take.bucket_name()).map_or(0, |ls| {
            ls.iter().filter(|l| l.until_ms > now_ms).map(|l| l.tokens).sum()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(rate: u32, window_ms: i64, burst: u32) -> Take {
        Take {
            id: "l".into(),
            key: "alice".into(),
            burst,
            rate,
            window_ms,
        }
    }

    #[test]
    fn lease_size_is_a_quarter_of_the_burst_from_1_to_256() {
        assert_eq!(lease_size(&take(3, 60_000, 3)), 1);
        assert_eq!(lease_size(&take(20, 1000, 20)), 5);
        assert_eq!(lease_size(&take(1000, 1000, 1000)), 250);
        assert_eq!(lease_size(&take(1_000_000, 1000, 1_000_000)), 256);
    }

    #[test]
    fn a_lease_gives_what_the_bucket_holds_and_never_more() {
        let t = take(3, 60_000, 3);
        let b = Bucket::full(&t, 0);
        let (b, n) = b.lease(&t, 0, 8).unwrap();
        assert_eq!(n, 3);
        assert_eq!(b.tokens, 0.0);
        // Empty: the wait until one token is there (20 s at 3 a minute).
        assert_eq!(b.lease(&t, 0, 8), Err(20_000));
        let (b, n) = b.lease(&t, 20_000, 8).unwrap();
        assert_eq!((n, b.tokens), (1, 0.0));
    }

    #[test]
    fn leases_over_time_never_give_more_than_the_bucket_allows() {
        // 10 a second, burst 10, asked every 10 ms for 5 s by leases of 2.
        let t = take(10, 1000, 10);
        let mut b = Bucket::full(&t, 0);
        let mut given = 0;
        for now in (0..5000).step_by(10) {
            if let Ok((after, n)) = b.lease(&t, now, 2) {
                b = after;
                given += n;
            }
        }
        assert!(given <= 10 + 50, "{given}");
        assert!(given >= 55, "{given}");
    }

    #[test]
    fn spent_tokens_are_reserved_from_the_lease_that_ends_first_and_expire() {
        let t = take(100, 1000, 100);
        let other = Take {
            key: "bob".into(),
            ..t.clone()
        };
        let mut l = Leases::default();
        assert_eq!(l.reserve(std::slice::from_ref(&t), 0), vec![None]);
        l.add(&t, 2, 1000);
        l.add(&t, 1, 500);
        assert_eq!(l.held(&t, 0), 3);
        assert_eq!(l.reserve(&[t.clone(), other.clone()], 0), vec![Some(500), None]);
        assert_eq!(l.reserve(std::slice::from_ref(&t), 10), vec![Some(1000)]);
        // The last token's lease has ended: nothing is spent after it.
        assert_eq!(l.reserve(std::slice::from_ref(&t), 1000), vec![None]);
        assert_eq!(l.held(&t, 1000), 0);
        // A token given back is spendable until its lease ends.
        l.add(&t, 1, 1500);
        assert_eq!(l.reserve(std::slice::from_ref(&t), 1400), vec![Some(1500)]);
        l.add(&t, 1, 1500);
        assert_eq!(l.held(&t, 1499), 1);
        assert_eq!(l.held(&t, 1500), 0);
    }

    #[test]
    fn all_or_none_is_spent() {
        let a = take(100, 1000, 100);
        let b = Take {
            key: "bob".into(),
            ..a.clone()
        };
        let mut l = Leases::default();
        l.add(&a, 1, 1000);
        assert!(!l.spend_all(&[a.clone(), b.clone()], 0));
        assert_eq!(l.held(&a, 0), 1);
        l.add(&b, 1, 900);
        assert!(l.spend_all(&[a.clone(), b.clone()], 0));
        assert_eq!((l.held(&a, 0), l.held(&b, 0)), (0, 0));
    }

    #[test]
    fn one_use_asks_a_bucket_at_a_time_and_the_others_wait_for_its_lease() {
        let t = take(1000, 1000, 12);
        let mut l = Leases::default();
        assert_eq!(l.turn(&t, 0), Turn::Ask);
        // Every other use of the isolate at an empty lease waits for that ask.
        for now in [0, 1, 50] {
            assert_eq!(l.turn(&t, now), Turn::Wait);
        }
        l.answered(&t, 0, Ok(3));
        assert_eq!(l.turn(&t, 60), Turn::Reserved(1000));
        assert_eq!(l.turn(&t, 60), Turn::Reserved(1000));
        assert_eq!(l.turn(&t, 61), Turn::Reserved(1000));
        // Spent: the next asks, once.
        assert_eq!(l.turn(&t, 62), Turn::Ask);
        assert_eq!(l.turn(&t, 62), Turn::Wait);
        // An ask that failed (no tokens) lets the next use ask.
        l.answered(&t, 62, Ok(0));
        assert_eq!(l.turn(&t, 63), Turn::Ask);
    }

    #[test]
    fn an_ask_unanswered_for_ask_ms_is_made_again_and_its_late_answer_still_counts() {
        let t = take(1000, 1000, 12);
        let mut l = Leases::default();
        assert_eq!(l.turn(&t, 0), Turn::Ask);
        assert_eq!(l.turn(&t, ASK_MS - 1), Turn::Wait);
        assert_eq!(l.turn(&t, ASK_MS), Turn::Ask);
        // The first ask's answer comes late: its tokens are kept, the newer ask still waited for.
        l.answered(&t, 0, Ok(2));
        assert_eq!(l.turn(&t, ASK_MS + 1), Turn::Wait);
        l.answered(&t, ASK_MS, Ok(1));
        assert_eq!(l.turn(&t, ASK_MS + 2), Turn::Reserved(ASK_MS + LEASE_MS));
        assert_eq!(l.turn(&t, ASK_MS + 3), Turn::Ask);
    }

    #[test]
    fn a_refusal_is_kept_until_the_wait_it_names() {
        let t = take(2, 2000, 2);
        let mut l = Leases::default();
        assert_eq!(l.turn(&t, 100), Turn::Ask);
        l.answered(&t, 100, Err(700));
        assert_eq!(l.turn(&t, 300), Turn::Refused(500));
        assert_eq!(l.turn(&t, 799), Turn::Refused(1));
        assert_eq!(l.turn(&t, 800), Turn::Ask);
    }

    #[test]
    fn a_fast_bucket_is_asked_ahead_once_under_a_quarter_of_a_lease_or_near_its_end() {
        // LEASE_MAX a lease (a billion a second): asked again when under a quarter is left.
        let t = take(1_000_000_000, 1000, 1_000_000_000);
        let size = lease_size(&t);
        assert_eq!(size, LEASE_MAX);
        let left = (size - 1) / 4;
        let mut l = Leases::default();
        l.add(&t, size, 1000);
        for _ in 0..size - left {
            assert!(!l.ask_ahead(&t, 0));
            assert!(matches!(l.turn(&t, 0), Turn::Reserved(1000)));
        }
        assert!(l.ask_ahead(&t, 0));
        // Being asked: no second ask, and the held tokens are still spent meanwhile.
        assert!(!l.ask_ahead(&t, 1));
        assert_eq!(l.turn(&t, 1), Turn::Reserved(1000));
        l.answered(&t, 0, Ok(size));
        assert_eq!(l.held(&t, 2), left - 1 + size);
        assert!(!l.ask_ahead(&t, 2));
        // Everything held expires within a quarter of a lease: asked again.
        assert!(l.ask_ahead(&t, 751));
        // A slow bucket (20 a minute, leases of 5) is never asked ahead: a lease asked early
        // and not spent would be lost for a long time.
        let slow = take(20, 60_000, 20);
        l.add(&slow, 1, 1000);
        assert!(!l.ask_ahead(&slow, 990));
    }

    #[test]
    fn only_a_bucket_slow_to_refill_is_worth_keeping() {
        let slow = take(3, 60_000, 3);
        assert!(Bucket { tokens: 2.0, at_ms: 0 }.worth_keeping(&slow));
        assert!(!Bucket { tokens: 3.0, at_ms: 0 }.worth_keeping(&slow));
        let fast = take(1_000_000, 1000, 1_000_000);
        assert!(!Bucket {
            tokens: 999_990.0,
            at_ms: 0
        }
        .worth_keeping(&fast));
    }
}
