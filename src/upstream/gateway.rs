//! Gateway mode: the upstreams' lists under the local document (its groups, tags, concerns,
//! overlay and policy), cached and refreshed per upstream (after its `refreshSeconds`, or when it
//! announced a list change; one refresh in flight each), merged into one catalog
//! (`merge::build_many`), and the core's `Forward` effects, each at the upstream that serves the
//! item, in the downstream session's own session there (never the one the lists are fetched over).
//!
//! Failure is isolated: an upstream whose lists cannot be fetched leaves the merged lists (the
//! others keep serving; `list_changed` goes out), is retried with backoff, and comes back by
//! itself. [`Gateway::status`] is the operator's view of each.
//!
//! A refresh is in flight from the [`Job`] being handed out until [`Gateway::refreshed`] or
//! [`Gateway::abandoned`] (a shell calls it when the request running the job is dropped, say
//! because its client left), and at most [`REFRESH_DEADLINE_MS`]: a refresh whose request was
//! stopped without being dropped (a platform that cancels it) does not hold its upstream longer.
//! A refresh that ends after its deadline still installs its lists; at worst two overlap.
//!
//! Pinning: the shell gives the pins an operator approved ([`Gateway::set_pins`], from a lock
//! file or KV); every build decides each tool against them (`merge::build_pinned`), and
//! [`Refreshed::log`] says which tools became quarantined or unpinned.

use std::sync::Arc;

use serde_json::{json, Value};

use super::conversation::{ClientConfig, Conversation, Era, Exchange};
use super::merge::{build_claimed, Source};
use super::pages::{Lists, Refresh};
use super::redact::Secrets;
use super::reply::Reply;
use super::space::{Claims, MAX_REFUSALS_SHOWN};
use super::task_list::TaskList;
use crate::catalog::{Catalog, Grant, Upstream};
use crate::error::{Error, Result};
use crate::http::SessionStore;
use crate::pin::{Pins, Report};
use crate::protocol::{Forward, Server, Session, UpstreamLink};

/// First wait before an upstream that failed is tried again, ms (doubled per failure).
const FIRST_BACKOFF_MS: i64 = 1_000;
/// Longest wait between two tries of an upstream that is down, ms.
const MAX_BACKOFF_MS: i64 = 60_000;
/// Longest a refresh holds its upstream's single flight: after this, the next request due one
/// starts another (30 s, one upstream exchange's deadline in the shells).
pub const REFRESH_DEADLINE_MS: i64 = 30_000;
/// How long an upstream that is up may go unheard (no refresh, no check answered) before it is
/// checked with a `ping` ([`Gateway::checks`]), ms: a dead upstream leaves the lists within
/// about this plus [`CHECK_DEADLINE_MS`] even when nobody calls it.
pub const CHECK_AFTER_MS: i64 = 15_000;
/// Longest a check may take: a shell ends one that has not answered by then as failed, ms.
pub const CHECK_DEADLINE_MS: i64 = 5_000;

/// One refresh of one upstream's lists, for the shell to run over that upstream's transport.
#[derive(Debug)]
pub struct Job {
    /// Which upstream (an index in the catalog's `upstreams`).
    pub member: usize,
    /// The conversation the lists are fetched over (given back to [`Gateway::refreshed`]).
    pub conv: Conversation,
    /// The machine.
    pub refresh: Refresh,
}

/// One check of an upstream that is up (a `ping` over the conversation its lists are fetched
/// over), for the shell to run within [`CHECK_DEADLINE_MS`] and hand to [`Gateway::checked`].
#[derive(Debug)]
pub struct Check {
    /// Which upstream (an index in the catalog's `upstreams`).
    pub member: usize,
    /// The conversation the ping goes over (given back to [`Gateway::checked`]).
    pub conv: Conversation,
    /// The machine.
    pub exchange: Exchange,
}

/// What a request should run on.
#[derive(Debug)]
pub enum Serving {
    /// This server (fresh, or stale while a refresh runs elsewhere).
    Ready(Arc<Server>),
    /// Run these refreshes first (each over its upstream), then call [`Gateway::refreshed`].
    Refresh(Vec<Job>),
    /// A refresh is in flight and nothing is cached yet: ask again shortly.
    Wait,
}

/// One upstream's state.
#[derive(Debug)]
struct Member {
    upstream: Upstream,
    config: ClientConfig,
    conv: Conversation,
    lists: Option<Lists>,
    fetched_ms: i64,
    /// When the upstream last answered a check (see [`CHECK_AFTER_MS`]; a refresh is
    /// `fetched_ms`).
    heard_ms: i64,
    stale: bool,
    /// When the refresh in flight began, if one is.
    refreshing: Option<i64>,
    /// Failures in a row; while above zero the upstream is down (out of the lists).
    failures: u32,
    retry_ms: i64,
    error: Option<String>,
    /// The one upstream session stateless (2026-07-28) callers without roots share at a
    /// legacy-era upstream (opened by the first, opened again when the upstream forgot it).
    shared: UpstreamLink,
    /// Whether `roots` is declared (see [`Gateway::with_roots`]).
    roots: bool,
}

impl Member {
    /// The client configuration of the conversation the lists are fetched over: the forwards'
    /// with `roots` too when roots are relayed (see [`Gateway::with_roots`]).
    fn list_config(&self) -> ClientConfig {
        let mut config = self.config.clone();
        if self.roots && config.capabilities.is_object() {
            config.capabilities["roots"] = json!({});
        }
        config
    }

    /// The configuration of the upstream session opened for a client whose `roots` capability
    /// is `roots`: the forwards', declaring `roots` (with `listChanged` when the client did)
    /// when it has one and the upstream is not a stdio process (its one session is shared).
    fn config_for(&self, roots: Option<&Value>) -> ClientConfig {
        let mut config = self.config.clone();
        let stdio = matches!(self.upstream.transport, crate::catalog::Transport::Stdio { .. });
        if let (Some(r), false, true) = (roots, stdio, self.roots && config.capabilities.is_object()) {
            config.capabilities["roots"] = match r.get("listChanged") {
                Some(Value::Bool(true)) => json!({"listChanged": true}),
                _ => json!({}),
            };
        }
        config
    }

    /// Whether a refresh is in flight at `now_ms` (begun; not ended, abandoned or overdue).
    fn in_flight(&self, now_ms: i64) -> bool {
        self.refreshing
            .is_some_and(|began| now_ms.saturating_sub(began) < REFRESH_DEADLINE_MS)
    }

    fn due(&self, now_ms: i64) -> bool {
        !self.in_flight(now_ms)
            && if self.failures > 0 {
                now_ms >= self.retry_ms
            } else {
                self.lists.is_none()
                    || self.stale
                    || self.conv.list_changed()
                    || self.upstream.stale(self.fetched_ms, now_ms)
            }
    }

    /// Whether it is up, idle and unheard for [`CHECK_AFTER_MS`]: due for a check.
    fn check_due(&self, now_ms: i64) -> bool {
        self.failures == 0
            && self.lists.is_some()
            && !self.in_flight(now_ms)
            && now_ms.saturating_sub(self.heard_ms.max(self.fetched_ms)) >= CHECK_AFTER_MS
    }

    fn job(&mut self, member: usize, now_ms: i64) -> Job {
        self.refreshing = Some(now_ms);
        self.stale = false;
        let conv = self.conv.clone();
        Job {
            member,
            refresh: Refresh::new(&conv).within(&self.upstream.limits),
            conv,
        }
    }

    fn failed(&mut self, why: String, now_ms: i64) {
        self.failures = self.failures.saturating_add(1);
        let backoff = FIRST_BACKOFF_MS.saturating_mul(1 << (self.failures - 1).min(16));
        self.retry_ms = now_ms.saturating_add(backoff.min(MAX_BACKOFF_MS).min(self.upstream.refresh_ms));
        self.error = Some(self.config.secrets.redact(&why).into_owned());
        self.lists = None;
        self.conv.reset();
    }
}

/// One gateway's state: a conversation with each upstream and the catalog served over them.
#[derive(Debug)]
pub struct Gateway {
    members: Vec<Member>,
    server: Option<Arc<Server>>,
    /// The pins the shell gave (`set_pins`).
    pins: Pins,
    /// The names and URI spaces each upstream held at the last build (kept while it is down).
    claims: Claims,
    /// Every secret it knows: redacted from its status and log lines.
    secrets: Secrets,
    /// Whether its shell signs each principal in to its `authorization_code` upstreams (see
    /// [`Gateway::tokens_per_principal`]).
    per_principal: bool,
}

/// The end of a refresh.
#[derive(Debug)]
pub struct Refreshed {
    /// The server to run requests on: the new one, or the stale one when the refresh failed.
    pub server: Arc<Server>,
    /// `list_changed` notifications the change calls for (every session should get them).
    pub notifications: Vec<String>,
    /// Why the refresh failed, when a stale server keeps serving (for the log).
    pub failure: Option<Error>,
    /// Tools that pinning quarantined or found unpinned since the last build (for the log).
    pub log: Vec<String>,
}

fn client(headers: Vec<(String, String)>) -> ClientConfig {
    ClientConfig {
        client_info: json!({"name": "mcp-sieve-gateway", "version": env!("CARGO_PKG_VERSION")}),
        headers,
        discover: true,
        ..ClientConfig::default()
    }
}

impl Gateway {
    /// A gateway in front of one `upstream` whose headers hold no secret references.
    pub fn new(upstream: Upstream) -> Self {
        let headers = upstream.headers.clone();
        Self::of(vec![(upstream, headers)])
    }

    /// A gateway in front of `upstreams` whose headers hold no secret references.
    pub fn new_many(upstreams: &[Upstream]) -> Self {
        Self::of(upstreams.iter().map(|u| (u.clone(), u.headers.clone())).collect())
    }

    /// A gateway in front of `upstreams` (the catalog's, in its order), their headers' `${NAME}`
    /// resolved with `secret`; a missing secret is a configuration error naming it.
    pub fn with_secrets(upstreams: &[Upstream], secret: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let resolved = upstreams
            .iter()
            .map(|u| Ok((u.clone(), u.resolved_headers(secret)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut gateway = Self::of(resolved);
        for m in &mut gateway.members {
            let referenced = m.upstream.references().into_iter().filter_map(|n| {
                let v = secret(&n)?;
                Some((n, v))
            });
            // Written into the document as they are (an `mcpServers` file's literal headers and
            // env): a header's value (and its token after the scheme), an env value whose name
            // says it is secret.
            let written: Vec<&str> = m
                .upstream
                .headers
                .iter()
                .filter(|(_, v)| !v.contains("${"))
                .map(|(k, _)| k.as_str())
                .collect();
            let literal = m
                .config
                .headers
                .iter()
                .filter(|(k, _)| written.contains(&k.as_str()))
                .flat_map(|(k, v)| {
                    let token = v.rsplit_once(' ').map(|(_, t)| (format!("{k} header"), t.to_string()));
                    [(format!("{k} header"), v.clone())].into_iter().chain(token)
                });
            let env = match &m.upstream.transport {
                crate::catalog::Transport::Stdio { env, .. } => env.clone(),
                _ => Vec::new(),
            };
            let secretive = |k: &str| {
                let k = k.to_ascii_uppercase();
                ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "AUTH", "CREDENTIAL"]
                    .iter()
                    .any(|w| k.contains(w))
            };
            let literal_env = env.into_iter().filter(|(k, v)| secretive(k) && !v.contains("${"));
            let own = Secrets::new(referenced.chain(literal).chain(literal_env));
            gateway.secrets = gateway.secrets.with(&own);
            m.config.secrets = own;
            m.conv = Conversation::new(m.list_config());
        }
        Ok(gateway)
    }

    /// Adds the shell's own secrets (its callers' tokens, its session key) to those redacted
    /// from what upstreams say in the status and the log.
    pub fn redacting(mut self, more: &Secrets) -> Self {
        self.secrets = self.secrets.with(more);
        self
    }

    /// Every secret the gateway knows (to redact what upstreams say where the shell relays it).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// `text` (an upstream's words) with every secret the gateway knows redacted.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        self.secrets.redact(text)
    }

    fn of(upstreams: Vec<(Upstream, Vec<(String, String)>)>) -> Self {
        let members = upstreams
            .into_iter()
            .map(|(upstream, headers)| {
                let config = client(headers);
                Member {
                    upstream,
                    conv: Conversation::new(config.clone()),
                    config,
                    lists: None,
                    fetched_ms: 0,
                    heard_ms: 0,
                    stale: false,
                    refreshing: None,
                    failures: 0,
                    retry_ms: 0,
                    error: None,
                    shared: UpstreamLink::default(),
                    roots: false,
                }
            })
            .collect();
        Gateway {
            members,
            server: None,
            pins: Pins::default(),
            claims: Claims::default(),
            secrets: Secrets::default(),
            per_principal: false,
        }
    }

    /// The same gateway, declaring to its upstreams the client capabilities whose requests its
    /// shell relays to the downstream client that made the call (see `Relay`); without it, an
    /// upstream is told of none and asks nothing.
    pub fn relaying(mut self) -> Self {
        for m in &mut self.members {
            m.config.capabilities = super::relayed_capabilities();
            m.conv = Conversation::new(m.list_config());
        }
        self
    }

    /// The same gateway, declaring `roots` in the upstream sessions of clients that declared
    /// them: for a shell that reads those sessions' standalone streams, where servers ask for
    /// roots (`upstream::on_stream`). The lists are then fetched in a session that declares
    /// `roots` too (never asked there: an upstream that lists some tools only to clients with
    /// roots lists them to the gateway, which forwards their calls in the sessions of clients
    /// that declared roots).
    pub fn with_roots(mut self) -> Self {
        for m in &mut self.members {
            m.roots = true;
            m.conv = Conversation::new(m.list_config());
        }
        self
    }

    /// The same gateway, for a shell that sends each principal's own token to its upstreams with
    /// `auth` of the `authorization_code` grant (the Worker): stateless requests there do not
    /// share one upstream session (see [`Gateway::shares_session`]).
    pub fn tokens_per_principal(mut self) -> Self {
        self.per_principal = true;
        self
    }

    /// Whether `forward`, a request with no upstream session of its own, runs in the session
    /// stateless callers share at upstream `member`: a legacy-era upstream, a client without
    /// roots, and not an upstream each principal signs in to separately (their tokens would
    /// meet in one session there).
    pub fn shares_session(&self, member: usize, forward: &Forward) -> bool {
        self.members.get(member).is_some_and(|m| {
            let own_tokens = self.per_principal
                && m.upstream
                    .auth
                    .as_ref()
                    .is_some_and(|a| a.grant == Grant::AuthorizationCode);
            forward.roots.is_none() && m.conv.era() == Era::Legacy && !own_tokens
        })
    }

    /// The upstream this gateway fronts (the first one).
    pub fn upstream(&self) -> &Upstream {
        &self.members[0].upstream
    }

    /// The upstream at `member`.
    pub fn upstream_at(&self, member: usize) -> Option<&Upstream> {
        self.members.get(member).map(|m| &m.upstream)
    }

    /// How many upstreams it fronts.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether it fronts none.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// A copy of the conversation the first upstream's lists are fetched over.
    pub fn conversation(&self) -> Conversation {
        self.members[0].conv.clone()
    }

    /// Takes note of a list change an upstream (`member`) announced in a forwarded exchange, and
    /// of the era the exchange found it in when that changed (the lists are fetched again in it).
    pub fn note_changes(&mut self, member: usize, conv: &mut Conversation) {
        if let Some(m) = self.members.get_mut(member) {
            m.stale |= conv.take_list_changed();
            if conv.discovered() && conv.era() != m.conv.era() {
                // Discovered again by the refresh, which needs the capabilities it answers.
                m.conv = Conversation::new(m.list_config());
                m.stale = true;
            }
        }
    }

    /// Takes note that `member` announced a list change outside any exchange (on its standalone
    /// stream): its lists are fetched again on the next request.
    pub fn note_announced(&mut self, member: usize) {
        if let Some(m) = self.members.get_mut(member) {
            m.stale = true;
        }
    }

    /// Makes upstream `member` due at once (a person just signed in to it): one that is down is
    /// retried by the next [`Gateway::retries`] without waiting out its backoff; one that is up
    /// has its lists fetched again by the next [`Gateway::serving`].
    pub fn due_now(&mut self, member: usize) {
        if let Some(m) = self.members.get_mut(member) {
            m.retry_ms = 0;
            m.stale = true;
        }
    }

    /// Takes note that a forwarded exchange with `member` failed to reach it (not a JSON-RPC
    /// error: no answer, or garbage): its lists are fetched again on the next request, and if
    /// that fails it leaves the lists.
    pub fn note_unreachable(&mut self, member: usize) {
        if let Some(m) = self.members.get_mut(member) {
            m.stale = true;
        }
    }

    /// What a request at `now_ms` runs on: the cached server when every upstream that is up is
    /// fresh; else the refreshes to run (one per upstream at a time: while one runs, others get
    /// the stale server, or wait when there is none). Upstreams that are down are retried by
    /// [`Gateway::retries`], off the request path, once a server exists.
    pub fn serving(&mut self, now_ms: i64) -> Serving {
        let cold = self.server.is_none();
        let jobs: Vec<Job> = self
            .members
            .iter_mut()
            .enumerate()
            .filter(|(_, m)| (cold && !m.in_flight(now_ms)) || (m.failures == 0 && m.due(now_ms)))
            .map(|(i, m)| m.job(i, now_ms))
            .collect();
        match (&self.server, jobs.is_empty()) {
            (_, false) => Serving::Refresh(jobs),
            (Some(s), true) => Serving::Ready(s.clone()),
            (None, true) => Serving::Wait,
        }
    }

    /// What a reload keeps of `old`, the gateway this one replaces: each upstream whose
    /// configuration is unchanged and whose lists `old` holds lends this gateway those lists,
    /// the conversation they were fetched over and the session stateless callers share there,
    /// so it is neither asked again nor opened anew, and a server is built over them at once
    /// (under `local`, the new document). The other upstreams are fetched at the next request,
    /// as at a start. `None` when nothing was kept (no server built).
    pub fn carry_over(&mut self, old: &Gateway, local: &Catalog, now_ms: i64) -> Result<Option<Refreshed>> {
        let mut kept = false;
        for m in &mut self.members {
            let same = |o: &&Member| o.upstream == m.upstream && o.config == m.config && o.roots == m.roots;
            let Some(o) = old
                .members
                .iter()
                .filter(same)
                .find(|o| o.lists.is_some() && o.failures == 0)
            else {
                continue;
            };
            (m.conv, m.lists, m.shared) = (o.conv.clone(), o.lists.clone(), o.shared.clone());
            (m.fetched_ms, m.heard_ms, m.stale) = (o.fetched_ms, o.heard_ms, o.stale);
            kept = true;
        }
        match kept {
            true => self.refreshed(local, Vec::new(), now_ms).map(Some),
            false => Ok(None),
        }
    }

    /// Refreshes of upstreams that are down and due for another try (backoff), for the shell to
    /// run off the request path (nothing when no server is built yet: requests retry then).
    pub fn retries(&mut self, now_ms: i64) -> Vec<Job> {
        if self.server.is_none() {
            return Vec::new();
        }
        self.members
            .iter_mut()
            .enumerate()
            .filter(|(_, m)| m.failures > 0 && m.due(now_ms))
            .map(|(i, m)| m.job(i, now_ms))
            .collect()
    }

    /// Checks of upstreams that are up but were not heard from for [`CHECK_AFTER_MS`] (none
    /// in flight for them), for the shell to run off the request path (the native server's
    /// background loop; the Worker along with its next request) within [`CHECK_DEADLINE_MS`]
    /// and hand to [`Gateway::checked`]. A check holds its upstream's single flight as a
    /// refresh does (the cached server serves meanwhile).
    pub fn checks(&mut self, now_ms: i64) -> Vec<Check> {
        if self.server.is_none() {
            return Vec::new();
        }
        self.members
            .iter_mut()
            .enumerate()
            .filter(|(_, m)| m.check_due(now_ms))
            .map(|(member, m)| {
                m.refreshing = Some(now_ms);
                let conv = m.conv.clone();
                Check {
                    member,
                    exchange: conv.request("ping", Value::Null),
                    conv,
                }
            })
            .collect()
    }

    /// Whether an upstream is due for a check ([`Gateway::checks`]).
    pub fn check_due(&self, now_ms: i64) -> bool {
        self.server.is_some() && self.members.iter().any(|m| m.check_due(now_ms))
    }

    /// Ends checks begun by [`Gateway::checks`]: an upstream that answered (anything, an error
    /// too: it is there) was heard from; one that did not (no answer, garbage, the deadline)
    /// is down: it leaves the lists until a retry brings it back, and the catalog is rebuilt
    /// over `local`'s document — the new server, whose `notifications` say what changed, is
    /// returned then (`None` when every upstream answered).
    pub fn checked(
        &mut self,
        local: &Catalog,
        done: Vec<(Check, Result<Reply>)>,
        now_ms: i64,
    ) -> Result<Option<Refreshed>> {
        let mut failure = None;
        for (check, reply) in done {
            let Some(m) = self.members.get_mut(check.member) else {
                continue;
            };
            m.refreshing = None;
            match reply {
                Ok(_) => {
                    m.conv = check.conv;
                    m.stale |= m.conv.take_list_changed();
                    m.heard_ms = now_ms;
                }
                Err(e) => {
                    let e = match e {
                        Error::Upstream(why) => Error::Upstream(format!("it did not answer a check (ping): {why}")),
                        other => other,
                    };
                    let e = named(&m.upstream, e);
                    m.failed(e.to_string(), now_ms);
                    failure = Some(e);
                }
            }
        }
        let Some(failure) = failure else {
            return Ok(None);
        };
        let document = kept(local)?;
        // Fewer upstreams than a catalog built before: nothing can collide.
        let catalog = self.build(document)?;
        Ok(Some(self.install(catalog, Some(failure))))
    }

    /// The cached server when a request at `now_ms` would get it from [`Gateway::serving`]
    /// without a refresh being started, read without changing anything: for a shell's
    /// synchronous path, which leaves every other case to `serving`.
    pub fn ready(&self, now_ms: i64) -> Option<Arc<Server>> {
        let due = self.members.iter().any(|m| m.failures == 0 && m.due(now_ms));
        self.server.clone().filter(|_| !due)
    }

    /// Whether upstream `member` has lists (fetched once at least, and not lost since).
    pub fn has_lists(&self, member: usize) -> bool {
        self.members.get(member).is_some_and(|m| m.lists.is_some())
    }

    /// Whether an upstream that is down is due for another try ([`Gateway::retries`]): a shell's
    /// synchronous path leaves such a request to the path that retries it.
    pub fn retry_due(&self, now_ms: i64) -> bool {
        self.server.is_some() && self.members.iter().any(|m| m.failures > 0 && m.due(now_ms))
    }

    /// Ends the refreshes of `members` begun by [`Gateway::serving`] or [`Gateway::retries`]
    /// without lists: the request running them was dropped before they ended (a shell's guard
    /// calls this). The next request due one starts it again; the cached server keeps serving.
    pub fn abandoned(&mut self, members: &[usize]) {
        for &i in members {
            if let Some(m) = self.members.get_mut(i) {
                m.refreshing = None;
            }
        }
    }

    /// Ends refreshes begun by [`Gateway::serving`] or [`Gateway::retries`]: each upstream that
    /// answered takes its new lists; each that failed leaves the lists until a retry succeeds;
    /// the catalog is rebuilt over `local`'s document (with no upstream up, over it alone:
    /// `failure` says why).
    pub fn refreshed(&mut self, local: &Catalog, done: Vec<(Job, Result<Lists>)>, now_ms: i64) -> Result<Refreshed> {
        let mut failure = None;
        let mut batch = Vec::new();
        for (job, lists) in done {
            let Some(m) = self.members.get_mut(job.member) else {
                continue;
            };
            m.refreshing = None;
            m.conv = job.conv;
            m.stale |= m.conv.take_list_changed();
            m.fetched_ms = now_ms;
            match lists {
                Ok(l) => {
                    m.lists = Some(l);
                    batch.push((job.member, m.failures));
                    (m.failures, m.error) = (0, None);
                }
                Err(e) => {
                    let e = named(&m.upstream, e);
                    m.failed(e.to_string(), now_ms);
                    failure = Some(e);
                }
            }
        }
        let document = kept(local)?;
        let catalog = match self.build(document) {
            Ok(c) => c,
            // The lists just fetched do not fit with the others (a name two upstreams serve): the
            // last upstream (in the document's order) without which they fit stays out until a
            // retry fits; when none is enough, all of this refresh's stay out.
            Err(e) => {
                // Through crate::sort (one sort for the crate): this rare path's own
                // `sort_unstable` was 8 KB of the Worker's wasm.
                crate::sort::sort_by(&mut batch, Ord::cmp);
                let mut fits = None;
                for &(i, _) in batch.iter().rev() {
                    let kept = self.members[i].lists.take();
                    let built = self.build(document);
                    self.members[i].lists = kept;
                    if let Ok(c) = built {
                        fits = Some((i, c));
                        break;
                    }
                }
                let out: Vec<(usize, u32)> = match &fits {
                    Some((i, _)) => batch.into_iter().filter(|(b, _)| b == i).collect(),
                    None => batch,
                };
                // Its failures before this refresh go on counting: the backoff grows.
                for (i, failures) in out {
                    self.members[i].failures = failures;
                    self.members[i].failed(e.to_string(), now_ms);
                }
                failure = Some(e);
                match fits {
                    Some((_, c)) => c,
                    None => self.build(document)?,
                }
            }
        };
        // No upstream up yet: the local document's catalog alone serves (initialize answers,
        // the lists hold its own items), and each upstream joins when a retry brings it up
        // (`retries`, list_changed): a client never sees the gateway itself as broken.
        let up = self.members.iter().any(|m| m.lists.is_some());
        if !up && self.server.is_none() && failure.is_none() {
            failure = Some(Error::Upstream("no upstream answered".into()));
        }
        let failure = failure.map(|e| self.secrets.redact_error(e));
        let mut done = self.install(catalog, failure);
        for line in &mut done.log {
            *line = self.secrets.redact(line).into_owned();
        }
        Ok(done)
    }

    /// Serves `catalog` from now on (a new server, or the cached one with its catalog replaced).
    fn install(&mut self, catalog: Catalog, failure: Option<Error>) -> Refreshed {
        let before = self
            .server
            .as_ref()
            .map(|s| s.catalog().pins.clone())
            .unwrap_or_default();
        let mut log = catalog.pins.news(&before);
        let refused_before = self
            .server
            .as_ref()
            .map(|s| s.catalog().origins.refused.clone())
            .unwrap_or_default();
        for (i, why) in catalog
            .origins
            .refused
            .iter()
            .filter(|r| !refused_before.contains(r))
            .take(MAX_REFUSALS_SHOWN)
        {
            if let Some(m) = self.members.get(*i) {
                log.push(format!("{}: {why}; left out", m.upstream.label()));
            }
        }
        self.claims = self.claims.after_build(&catalog.origins);
        let (server, notes) = match &self.server {
            // Same server, new catalog: the version moves on, so older cursors are refused.
            Some(prev) => {
                let mut s = (**prev).clone();
                let notes = s.replace_catalog(catalog);
                (s, notes)
            }
            None => (Server::new(catalog), Vec::new()),
        };
        let server = Arc::new(server);
        self.server = Some(server.clone());
        Refreshed {
            server,
            notifications: notes,
            failure,
            log,
        }
    }

    /// Takes the pins an operator approved (a lock file's, a KV value's). When they differ from
    /// the last ones and a server is built, it is rebuilt over the cached lists at once (a tool
    /// approved comes back, one unpinned leaves), and the new server is returned.
    pub fn set_pins(&mut self, local: &Catalog, pins: Pins) -> Result<Option<Refreshed>> {
        if pins == self.pins {
            return Ok(None);
        }
        self.pins = pins;
        if self.server.is_none() {
            return Ok(None);
        }
        let document = kept(local)?;
        let catalog = self.build(document)?;
        Ok(Some(self.install(catalog, None)))
    }

    /// The pins the shell gave last ([`Gateway::set_pins`]).
    pub fn pins(&self) -> &Pins {
        &self.pins
    }

    /// What pinning found in the catalog served now.
    pub fn pin_report(&self) -> Arc<Report> {
        self.server
            .as_ref()
            .map(|s| s.catalog().pins.clone())
            .unwrap_or_default()
    }

    fn build(&self, document: &Value) -> Result<Catalog> {
        let sources: Vec<Source> = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(index, m)| {
                Some(Source {
                    index,
                    upstream: &m.upstream,
                    lists: m.lists.as_ref()?,
                })
            })
            .collect();
        let mut catalog = build_claimed(document, &sources, &self.pins, &self.claims)?;
        // A use of a down upstream's item names it and why (`Server::usable`).
        catalog.origins.why_down = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| Some((i, m.error.clone()?)))
            .filter(|(i, _)| catalog.origins.down.contains(i))
            .collect();
        // The URIs they held at the last build, so a read of one names its upstream too.
        let down = &catalog.origins.down;
        catalog.origins.down_uris = self.claims.uris_of(down);
        // And their tools and prompts: by the names they held, or, for one never listed, by prefix.
        catalog.origins.down_names = self.claims.names_of(down);
        Ok(catalog)
    }

    /// The upstream (`member`), the conversation and the exchange that perform `forward`: in
    /// the downstream session's own session there; for a stateless request, in the session
    /// stateless callers share at a legacy-era upstream (ids reserved in it; see
    /// [`Gateway::stateless_done`]), or a fresh one, used once, when it shares none there
    /// ([`Gateway::shares_session`]: its client declared roots, which the session declares; or
    /// each principal's token goes to that upstream). A call to an upstream that is down is
    /// refused at once, naming it and why.
    pub fn forward(&mut self, forward: &Forward) -> Result<(usize, Conversation, Exchange)> {
        let (i, conv, answered) = self.forward_in(forward)?;
        let exchange = answered.unwrap_or_else(|| conv.request(&forward.method, forward.params.clone()));
        Ok((i, conv, exchange))
    }

    /// [`Gateway::forward`]'s upstream and conversation, for a shell that may write the request
    /// itself ([`Conversation::sent_modern`]: the Worker's fast forward); with the exchange when
    /// it is answered without asking the upstream (a subscription it does not offer).
    pub fn forward_in(&mut self, forward: &Forward) -> Result<(usize, Conversation, Option<Exchange>)> {
        let i = forward.upstream;
        let shares = self.shares_session(i, forward);
        let m = self
            .members
            .get_mut(i)
            .ok_or_else(|| Error::Internal(format!("no upstream number {i} is configured")))?;
        if let (true, Some(why)) = (m.failures > 0, &m.error) {
            return Err(Error::Upstream(format!("{} is down ({why})", m.upstream.label())));
        }
        let link = match &forward.link {
            Some(l) => l.clone(),
            None if shares => {
                let start = m.shared.next_id.max(1);
                m.shared.next_id = start.saturating_add(crate::protocol::IDS_PER_EXCHANGE);
                UpstreamLink {
                    next_id: start,
                    ..m.shared.clone()
                }
            }
            None => UpstreamLink::default(),
        };
        let mut config = m.config_for(forward.roots.as_ref());
        let tasky = match forward.method.as_str() {
            "tools/call" => {
                forward.params.get("task").is_some_and(|t| !t.is_null())
                    || forward.stateless && crate::protocol::declares_tasks(&forward.params)
            }
            m => m.starts_with("tasks/"),
        };
        if tasky && m.conv.era() == Era::Modern {
            // A task asked in 2025-11-25 terms (`params.task`), or a call of a 2026-07-28 client
            // that declares the tasks extension: in 2026-07-28 terms the gateway declares it
            // (SEP-2663) and the upstream decides (its tools' `execution` may not be listed); and
            // only a client that declares it may use tasks/get, tasks/update, tasks/cancel.
            declare_tasks(&mut config);
        }
        // A request with no upstream session of its own speaks in the era the lists were fetched in.
        let conv = Conversation::resume(config, link).knowing(m.conv.era());
        let subscription = matches!(forward.method.as_str(), "resources/subscribe" | "resources/unsubscribe");
        let subscribes = m
            .lists
            .as_ref()
            .is_some_and(|l| l.initialize["capabilities"]["resources"]["subscribe"] == Value::Bool(true));
        // An upstream that offers no subscriptions is not asked: subscribed, as before.
        let answered = (subscription && !(subscribes && m.conv.era() == Era::Legacy)).then(|| conv.answered(json!({})));
        Ok((i, conv, answered))
    }

    /// Whether `forward`, a stateless call, is relayed its upstream's mid-call questions
    /// ([`super::relays_stateless`]; an upstream spoken to in 2026-07-28 asks otherwise).
    pub fn relays_stateless(&self, forward: &Forward) -> bool {
        let midcall = self
            .members
            .get(forward.upstream)
            .is_some_and(|m| m.conv.era() != Era::Modern);
        super::relays_stateless(forward, midcall)
    }

    /// Whether upstream `member` is spoken to in 2026-07-28 (a task of its own shows its
    /// questions inline; one of a session era needs `task_asks`).
    pub fn speaks_modern(&self, member: usize) -> bool {
        self.members.get(member).is_some_and(|m| m.conv.era() == Era::Modern)
    }

    /// After a stateless request's exchange with `member` (`began`: the upstream session it
    /// began in, `link`: the one it ended in): the headers of the `DELETE` of an upstream
    /// session that served it alone (one [`Gateway::shares_session`] says is not shared; or one
    /// opened while another caller opened the shared one), else `None` — the shared session is
    /// kept, or replaced by the one the exchange opened when the upstream forgot it (or it had
    /// none yet).
    pub fn stateless_done(
        &mut self,
        member: usize,
        forward: &Forward,
        began: Option<&str>,
        link: &UpstreamLink,
    ) -> Option<Vec<(String, String)>> {
        let shares = self.shares_session(member, forward);
        let m = self.members.get_mut(member)?;
        if shares && link.session == m.shared.session {
            return None;
        }
        if shares && m.shared.session.as_deref() == began {
            m.shared.next_id = m.shared.next_id.max(link.next_id);
            (m.shared.session, m.shared.version) = (link.session.clone(), link.version.clone());
            return None;
        }
        self.closing_link(member, link)
    }

    /// The upstream sessions `ended` (a downstream session that ended) held, to close: for each,
    /// the upstream (`member`) and the headers of its HTTP `DELETE` (see [`Gateway::closing_link`]).
    pub fn closing(&self, ended: &Session) -> Vec<(usize, Vec<(String, String)>)> {
        let mut links: Vec<(&str, &UpstreamLink)> = ended.upstream.iter().map(|l| ("", l)).collect();
        links.extend(ended.upstream_links.iter().map(|(name, l)| (name.as_str(), l)));
        links
            .into_iter()
            .filter_map(|(name, link)| {
                let i = self.members.iter().position(|m| m.upstream.name == name)?;
                Some((i, self.closing_link(i, link)?))
            })
            .collect()
    }

    /// The upstream sessions the gateway holds for no downstream session, to close when its
    /// process ends: at each upstream, the one stateless callers share and the one the lists are
    /// fetched over (see [`Gateway::closing_link`]).
    pub fn closing_own(&self) -> Vec<(usize, Vec<(String, String)>)> {
        self.members
            .iter()
            .enumerate()
            .flat_map(|(i, m)| [(i, m.shared.clone()), (i, m.conv.link())])
            .filter_map(|(i, link)| Some((i, self.closing_link(i, &link)?)))
            .collect()
    }

    /// The exchanges that pass `body`, a message the client of downstream session `s` sent, on
    /// to each of its upstream sessions: a `notifications/roots/list_changed` of a client that
    /// declared roots goes to its sessions at HTTP upstreams (which it declared roots to);
    /// nothing else.
    pub fn notifying(&self, s: &Session, body: &[u8]) -> Vec<(usize, Conversation, Exchange)> {
        let msg: Value = serde_json::from_slice(body).unwrap_or_default();
        let method = "notifications/roots/list_changed";
        let roots = s.initialize["capabilities"].get("roots").filter(|r| r.is_object());
        if msg["method"] != method || msg.get("id").is_some() || roots.is_none() {
            return Vec::new();
        }
        let mut links: Vec<(&str, &UpstreamLink)> = s.upstream.iter().map(|l| ("", l)).collect();
        links.extend(s.upstream_links.iter().map(|(name, l)| (name.as_str(), l)));
        links
            .into_iter()
            .filter(|(_, l)| l.session.is_some())
            .filter_map(|(name, link)| {
                let i = self.members.iter().position(|m| m.upstream.name == name)?;
                let m = &self.members[i];
                if matches!(m.upstream.transport, crate::catalog::Transport::Stdio { .. }) {
                    return None;
                }
                let conv = Conversation::resume(m.config_for(roots), link.clone());
                let exchange = conv.notify(method, Value::Null);
                Some((i, conv, exchange))
            })
            .collect()
    }

    /// The headers of the HTTP `DELETE` that closes the session `link` holds at upstream
    /// `member`: its `Mcp-Session-Id`, the protocol version and the upstream's configured
    /// headers. `None` when there is nothing to close: no session, or a stdio upstream (its one
    /// session is shared and stays open).
    pub fn closing_link(&self, member: usize, link: &UpstreamLink) -> Option<Vec<(String, String)>> {
        let session = link.session.as_ref()?;
        let m = self.members.get(member)?;
        if matches!(m.upstream.transport, crate::catalog::Transport::Stdio { .. }) {
            return None;
        }
        let mut headers = vec![("Mcp-Session-Id".to_string(), session.clone())];
        if !link.version.is_empty() {
            headers.push(("MCP-Protocol-Version".into(), link.version.clone()));
        }
        headers.extend(m.config.headers.iter().cloned());
        Some(headers)
    }

    /// A `tasks/list` forward's exchanges: the tasks of each upstream running the session's
    /// tasks ([`TaskList`]: its whole list, or at a 2026-07-28 upstream each task by
    /// `tasks/get`), in the session's own session there (`None`: not a `tasks/list`).
    /// An upstream that is down is left out (its tasks with it; [`gathered`] says so).
    pub fn gather(&self, forward: &Forward) -> Option<Vec<(usize, Conversation, TaskList)>> {
        if forward.method != "tasks/list" {
            return None;
        }
        let jobs = forward
            .gather
            .iter()
            .filter_map(|g| {
                let m = self.members.get(g.upstream)?;
                let mut config = m.config.clone();
                if m.conv.era() == Era::Modern {
                    // Each task asked with tasks/get, which needs the tasks extension (SEP-2663).
                    declare_tasks(&mut config);
                }
                let conv = Conversation::resume(config, g.link.clone()).knowing(m.conv.era());
                let tasks = TaskList::new(conv.era(), &g.tasks);
                Some((g.upstream, conv, tasks))
            })
            .collect();
        Some(jobs)
    }

    /// The server requests run on now (none before the first refresh ends).
    pub fn server(&self) -> Option<Arc<Server>> {
        self.server.clone()
    }

    /// Each upstream's state for an operator: name, transport, up or down, tools listed, the
    /// last error (never a header or secret), when it is tried again.
    pub fn status(&self, now_ms: i64) -> Value {
        let report = self.pin_report();
        let upstreams: Vec<Value> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let transport = match &m.upstream.transport {
                    crate::catalog::Transport::Http(_) => "http",
                    crate::catalog::Transport::Stdio { .. } => "stdio",
                    crate::catalog::Transport::Service(_) => "service",
                };
                let state = match (m.failures, &m.lists) {
                    (0, Some(_)) => "up",
                    (0, None) => "starting",
                    _ => "down",
                };
                let tools = m.lists.as_ref().map_or(0, |l| l.items(crate::model::Kind::Tool).len());
                let quarantined: Vec<&String> = report
                    .unpinned
                    .iter()
                    .filter(|(n, u)| u.upstream == i && report.quarantined(n).is_some())
                    .map(|(n, _)| n)
                    .collect();
                // This upstream's entries of a list the build kept (refusals, shortened names).
                let of = |list: fn(&crate::catalog::Origins) -> &Vec<(usize, String)>| -> Vec<String> {
                    let Some(s) = &self.server else { return Vec::new() };
                    let entries = list(&s.catalog().origins).iter().filter(|(u, _)| *u == i);
                    entries.map(|(_, why)| why.clone()).collect()
                };
                let refused = of(|o| &o.refused);
                json!({
                    "name": m.upstream.name,
                    "prefix": m.upstream.prefix,
                    "transport": transport,
                    "state": state,
                    "tools": tools,
                    "protocolVersion": m.lists.as_ref().map(|_| m.conv.protocol_version()),
                    "stateless": m.lists.is_some() && m.conv.era() == Era::Modern,
                    "failures": m.failures,
                    "error": m.error,
                    "retryInMs": (m.failures > 0).then(|| (m.retry_ms - now_ms).max(0)),
                    "fetchedMs": m.fetched_ms,
                    "quarantined": quarantined,
                    "refused": refused.iter().take(MAX_REFUSALS_SHOWN).collect::<Vec<_>>(),
                    "shortened": of(|o| &o.shortened).iter().take(MAX_REFUSALS_SHOWN).collect::<Vec<_>>(),
                    "refusedCount": refused.len(),
                })
            })
            .collect();
        let names: Vec<String> = self.members.iter().map(|m| m.upstream.name.clone()).collect();
        let mut status = json!({"upstreams": upstreams, "pinning": report.status(&names)});
        self.secrets.redact_value(&mut status);
        status
    }
}

/// The document a gateway's catalog is rebuilt from (kept by `Catalog::load` in gateway mode).
fn kept(local: &Catalog) -> Result<&Value> {
    local
        .document
        .as_deref()
        .ok_or_else(|| Error::Internal("the local catalog document was not kept".into()))
}

/// `e`, saying which upstream it came from when it has a name.
pub fn named(up: &Upstream, e: Error) -> Error {
    named_by(&up.name, &up.label(), e)
}

/// [`named`] for the upstream named `name`, whose [`Upstream::label`] is `label`.
pub fn named_by(name: &str, label: &str, e: Error) -> Error {
    match e {
        Error::Upstream(m) if !name.is_empty() => Error::Upstream(format!("{label}: {m}")),
        other => other,
    }
}

/// Completes an answer that carried a `Forward` with the outcome of its exchange over `conv`:
/// the downstream session (in `store`; a stateless caller's task holder) remembers its upstream
/// session and any task it created; the upstream's response (its tasks in the shapes of the
/// client's era, `task_shape`) and notifications are passed through, or a `-32603` says why
/// there is no response. What the server's task budget learns (a task made or not, a task
/// finished) goes to `store`'s budget.
pub fn forwarded(
    answer: crate::http::Response,
    conv: &Conversation,
    reply: Result<super::Reply>,
    store: &mut dyn SessionStore,
    now_ms: i64,
) -> crate::http::Response {
    // What the upstream says reaches the client without the secrets it was sent.
    let secrets = conv.secrets();
    let mut reply = reply.map_err(|e| secrets.redact_error(e));
    if let Ok(r) = &mut reply {
        r.response
            .iter_mut()
            .chain(r.notifications.iter_mut())
            .for_each(|v| secrets.redact_value(v));
    }
    if let (
        Some(f),
        Ok(super::Reply {
            response: Some(msg), ..
        }),
    ) = (&answer.forward, &mut reply)
    {
        // The task shapes of the client's era, whichever era the upstream spoke.
        super::task_shape::to_client(f, msg);
    }
    if let Some(f) = &answer.forward {
        let response = reply.as_ref().ok().and_then(|r| r.response.as_ref());
        let mut steps = Vec::new();
        if let Some(mut s) = f.session.as_deref().and_then(|id| store.load(id)) {
            if f.record(&mut s, conv.link(), response, now_ms, &mut steps) {
                store.save(&s);
            }
        }
        // The server's task budget learns what the exchange made and finished.
        f.settle(response, now_ms, &mut steps);
        for step in steps {
            // Neither step admits a task: nothing to refuse, no cap to pass.
            let _ = store.budget(step, crate::task::budget::Budget::UNCAPPED, now_ms);
        }
    }
    match reply {
        Ok(super::Reply {
            response: Some(msg),
            notifications,
        }) => crate::http::complete(answer, Ok(&msg), &notifications),
        Ok(_) => crate::http::complete(
            answer,
            Err(&Error::Upstream("its reply carried no response".into())),
            &[],
        ),
        Err(e) => crate::http::complete(answer, Err(&e), &[]),
    }
}

/// Completes a `tasks/list` answer with what [`Gateway::gather`]'s exchanges brought back, on
/// `server` (the gateway's, [`Gateway::server`]): the session (in `store`) remembers each upstream
/// session, and the client gets the merged list filtered, ordered and paged by its query.
pub fn gathered(
    server: &Server,
    answer: crate::http::Response,
    done: Vec<(usize, Conversation, Result<Vec<Value>>)>,
    store: &mut dyn SessionStore,
    now_ms: i64,
) -> crate::http::Response {
    let Some(f) = answer.forward.clone() else {
        return answer;
    };
    let ups = &server.catalog().upstreams;
    let mut lists = Vec::new();
    for g in &f.gather {
        lists.push(match done.iter().find(|(i, ..)| *i == g.upstream) {
            Some((i, _, r)) => r.clone().map_err(|e| ups.get(*i).map_or(e.clone(), |up| named(up, e))),
            None => Err(Error::Upstream(format!("{} is not configured", g.name))),
        });
    }
    if let Some(mut s) = f.session.as_deref().and_then(|id| store.load(id)) {
        let mut changed = false;
        for (i, conv, _) in &done {
            let one = Forward {
                upstream_name: ups.get(*i).map(|u| u.name.clone()).unwrap_or_default(),
                ..Forward::default()
            };
            changed |= one.record(&mut s, conv.link(), None, now_ms, &mut Vec::new());
        }
        if changed {
            store.save(&s);
        }
    }
    let msg = match server.gathered_tasks(&f, lists) {
        Ok(r) => json!({"result": r}),
        Err(e) => serde_json::from_str(&crate::protocol::jsonrpc::error(&Value::Null, &e)).unwrap_or_default(),
    };
    crate::http::complete(answer, Ok(&msg), &[])
}

/// Where the operator reads each upstream's state (behind the same gate as `/mcp`: Origin,
/// bearer token), in the native server and the Worker.
pub const STATUS_PATH: &str = "/mcp-sieve/upstreams";

/// The answer to `method` at [`STATUS_PATH`]: `status` ([`Gateway::status`]) as JSON to a `GET`,
/// 404 when the server fronts no upstream (`None`), 405 to another method.
pub fn status_response(status: Option<Value>, method: &str) -> crate::http::Response {
    let json = |code: u16, body: String| crate::http::Response {
        status: code,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("Cache-Control".into(), "no-store".into()),
        ],
        body,
        ..Default::default()
    };
    match (status, method) {
        (_, m) if m != "GET" => json(405, r#"{"error":"use GET"}"#.into()),
        (None, _) => json(404, r#"{"error":"this server fronts no upstream"}"#.into()),
        (Some(s), _) => json(200, s.to_string()),
    }
}

/// HTTP 502 with a JSON-RPC `-32603` error: the upstream could not be listed.
pub fn unavailable(e: &Error) -> crate::http::Response {
    crate::http::Response {
        status: 502,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: crate::protocol::jsonrpc::error(&Value::Null, e),
        ..Default::default()
    }
}

/// Declares the 2026-07-28 tasks extension (SEP-2663) in the client capabilities of `config`'s
/// requests, as a request that may be answered with a task or uses `tasks/*` must.
fn declare_tasks(config: &mut ClientConfig) {
    if config.capabilities.is_object() {
        config.capabilities["extensions"]["io.modelcontextprotocol/tasks"] = json!({});
    }
}

#[cfg(test)]
mod tests;
