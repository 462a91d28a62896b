//! The upstreams' lists kept fresh: refreshes run at once over each upstream's driver (a
//! patient one serves those that answered), upstreams that are down retried off the request
//! path, quiet ones checked with a `ping`, and the server a request runs on.

use std::sync::Arc;
use std::time::Duration;

use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, Job, Lists, Refreshed, Serving};
use mcp_sieve::Error;

use super::Gateway;
use crate::platform::now_ms;

/// How often upstreams that are down are looked at for another try.
const RETRY_TICK: Duration = Duration::from_millis(250);
/// How long a request waits for a refresh another request runs, before answering 502.
const MAX_REFRESH_WAIT: Duration = Duration::from_secs(60);
/// How long a refresh of several upstreams waits for all of them before it serves the ones that
/// answered (once one is up): an upstream slower than this joins when it answers (list_changed).
pub(super) const PATIENCE: Duration = Duration::from_secs(5);

/// Ends the refreshes of its upstreams as abandoned when dropped armed: a request running a
/// refresh that is dropped (hyper drops a request's future when its client disconnects) must
/// not leave their single flight taken.
struct Abandon<'a>(Option<(&'a Gateway, Vec<usize>)>);

impl Abandon<'_> {
    /// The refreshes reached their end: nothing to release.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if let Some((g, members)) = self.0.take() {
            g.state().abandoned(&members);
        }
    }
}

impl Gateway {
    /// Runs refreshes at once (each over its upstream's driver) and hands them back to the core:
    /// all of them, or (patient) those that ended within [`PATIENCE`] once one is up — the rest
    /// are installed as each ends, and announced on stderr.
    pub(super) async fn run(&self, jobs: Vec<Job>) -> Result<Arc<Server>, Error> {
        // Dropped before the refreshes end (a request whose client left): the next request
        // refreshes (the spawned exchanges run on; their lists are not taken).
        let guard = Abandon(Some((self, jobs.iter().map(|j| j.member).collect())));
        let count = jobs.len();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Job, Result<Lists, Error>)>();
        for mut job in jobs {
            let (me, tx) = (self.clone(), tx.clone());
            tokio::spawn(async move {
                let member = job.member;
                let lists = upstream::drive(&mut job.conv, &mut job.refresh, |p| me.post(member, p, None)).await;
                let _ = tx.send((job, lists));
            });
        }
        drop(tx);
        let started = tokio::time::Instant::now();
        let mut done: Vec<(Job, Result<Lists, Error>)> = Vec::new();
        while done.len() < count {
            let up = done.iter().any(|(_, lists)| lists.is_ok());
            let next = match self.0.patience {
                Some(p) if up => match tokio::time::timeout(p.saturating_sub(started.elapsed()), rx.recv()).await {
                    Ok(next) => next,
                    Err(_) => break, // the others join when they answer
                },
                _ => rx.recv().await,
            };
            match next {
                Some(d) => done.push(d),
                None => {
                    tracing::warn!("an upstream refresh stopped");
                    break;
                }
            }
        }
        guard.disarm();
        if done.len() < count {
            let me = self.clone();
            tokio::spawn(async move {
                while let Some(late) = rx.recv().await {
                    let member = late.0.member;
                    let _ = me.install(vec![late]);
                    // The late upstream's state, as at startup (up with its tools, or why not).
                    if let Some(line) = crate::progress::lines(&me.status()).get(member) {
                        crate::telemetry::progress(line);
                    }
                }
            });
        }
        self.install(done)
    }

    /// Hands ended refreshes to the core: the server over the lists now held.
    fn install(&self, done: Vec<(Job, Result<Lists, Error>)>) -> Result<Arc<Server>, Error> {
        let refreshed = self.state().refreshed(self.0.local.catalog(), done, now_ms())?;
        Ok(self.installed(refreshed))
    }

    /// A server the core built (a refresh, or a reload's carried-over lists): what it says
    /// logged, its search index and sentence vectors built in the background.
    pub(super) fn installed(&self, refreshed: Refreshed) -> Arc<Server> {
        if let Some(e) = refreshed.failure {
            tracing::warn!("{e}; the other upstreams keep serving");
        }
        for line in &refreshed.log {
            tracing::info!("{line}");
        }
        crate::config::load::index_in_background(&refreshed.server);
        refreshed.server
    }

    /// Tries the upstreams that are down again, each after its backoff, every [`RETRY_TICK`] —
    /// whether or not requests come (a client may serve its lists from its own cache) — until
    /// the process ends; and reads the pin lock file again when it changed (an approval). A
    /// change reaches subscribed clients through their streams' ticks.
    pub fn keep_retrying(&self) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(RETRY_TICK).await;
                if me.is_replaced() {
                    break;
                }
                if let Err(e) = me.read_pins(false) {
                    tracing::warn!("pinning: {e}; the pins read before stay");
                }
                let jobs = me.state().retries(now_ms());
                if !jobs.is_empty() {
                    let _ = me.run(jobs).await;
                }
                let checks = me.state().checks(now_ms());
                if !checks.is_empty() {
                    me.check(checks).await;
                }
            }
        });
    }

    /// Runs checks of upstreams nobody heard from lately (`upstream::Gateway::checks`: a
    /// `ping` each, at once, within [`upstream::CHECK_DEADLINE_MS`]) and hands them to the
    /// core: one that did not answer leaves the lists (its tools' `list_changed` reaches
    /// subscribed clients through their streams' ticks) and is retried with backoff.
    async fn check(&self, checks: Vec<upstream::Check>) {
        let deadline = Duration::from_millis(upstream::CHECK_DEADLINE_MS as u64);
        let running = checks.into_iter().map(|mut check| {
            let me = self.clone();
            tokio::spawn(async move {
                let member = check.member;
                let ping = upstream::drive(&mut check.conv, &mut check.exchange, |p| me.post(member, p, None));
                let reply = tokio::time::timeout(deadline, ping)
                    .await
                    .unwrap_or_else(|_| Err(Error::Upstream(format!("no answer within {} s", deadline.as_secs()))));
                (check, reply)
            })
        });
        let mut done = Vec::new();
        for task in running.collect::<Vec<_>>() {
            if let Ok(d) = task.await {
                done.push(d);
            }
        }
        let checked = self.state().checked(self.0.local.catalog(), done, now_ms());
        match checked {
            Ok(Some(r)) => {
                if let Some(e) = r.failure {
                    tracing::warn!("{e}; it left the lists, the other upstreams keep serving");
                }
                crate::config::load::index_in_background(&r.server);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("the lists were not rebuilt after a check: {e}"),
        }
    }

    /// The server to run a request on: the upstreams' lists under the local document, refreshed
    /// when due (one refresh per upstream at a time; a stale server keeps serving while it
    /// runs). Upstreams that are down are retried in the background ([`Gateway::keep_retrying`]).
    pub async fn serving(&self, _local: &Server) -> Result<Arc<Server>, Error> {
        let started = tokio::time::Instant::now();
        loop {
            let serving = self.state().serving(now_ms());
            match serving {
                Serving::Ready(s) => return Ok(s),
                Serving::Wait if started.elapsed() < MAX_REFRESH_WAIT => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Serving::Wait => return Err(Error::Upstream("its lists are still being fetched".into())),
                Serving::Refresh(jobs) => return self.run(jobs).await,
            }
        }
    }
}
