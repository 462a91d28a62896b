//! Gateway mode for the native server: moves the bytes of the core's upstream conversations
//! (`mcp_sieve::upstream`) to each upstream over its driver — a hyper client (Streamable HTTP) or
//! a child process (stdio, `crate::upstream::stdio`). Every rule — sessions, ids, re-open, paging,
//! refresh, merging, routing, forwarding, failure isolation — is in the core; this file only
//! moves bytes, runs the refreshes of several upstreams at once, and retries the ones that are
//! down off the request path. It reads the pin lock file (`mcp-sieve pin`) at start and again
//! whenever it changes, and hands its pins to the core.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};
use tracing::Instrument;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcp_sieve::catalog::{Limits, Transport, Upstream};
use mcp_sieve::http;
use mcp_sieve::pin::{Mode, Pins};
use mcp_sieve::protocol::{Server, Session};
use mcp_sieve::upstream::{self, HttpAnswer, Job, Lists, Post, Serving};
use mcp_sieve::Error;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::platform::now_ms;
use crate::relay::{Downstream, Relaying};
use crate::sessions::outbox::Clients;
use crate::sessions::{WriteBack, MAX_RUNS};
use crate::upstream::stdio::{Pipe, Spec};

/// Longest the closing of an upstream session may take.
const DEADLINE: Duration = Duration::from_secs(30);
/// How often upstreams that are down are looked at for another try.
const RETRY_TICK: Duration = Duration::from_millis(250);
/// How long a request waits for a refresh another request runs, before answering 502.
const MAX_REFRESH_WAIT: Duration = Duration::from_secs(60);
/// How long a refresh of several upstreams waits for all of them before it serves the ones that
/// answered (once one is up): an upstream slower than this joins when it answers (list_changed).
const PATIENCE: Duration = Duration::from_secs(5);

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

/// How the bytes reach one upstream.
enum Driver {
    Http { url: String },
    Stdio(Box<Pipe>),
}

struct Inner {
    state: Mutex<upstream::Gateway>,
    drivers: Vec<Driver>,
    /// Each upstream's name, by member (its spans carry it).
    names: Vec<String>,
    /// Each upstream's budgets (`limits`), by member: its answers' size, its calls' deadline.
    limits: Vec<Limits>,
    /// The HTTP upstreams' clients (`crate::http::tls`: https with the upstream's own TLS settings,
    /// proxies, h2).
    client: crate::http::tls::HttpClients<Full<Bytes>>,
    /// Each HTTP upstream's OAuth sign-in (`crate::oauth`), by member; none for stdio upstreams
    /// and those sent a static Authorization header.
    auth: Vec<Option<Arc<crate::oauth::Auth>>>,
    /// The client of metadata, registration and token requests.
    oauth_http: crate::oauth::Http,
    /// The local document's server (the catalog is rebuilt over it).
    local: Arc<Server>,
    /// The pin lock file, and what it looked like when last read (modified time, length).
    lock: PathBuf,
    lock_seen: Mutex<Option<(SystemTime, u64)>>,
    /// Set when a reload replaced this gateway (`retire`): its retries end.
    retired: std::sync::atomic::AtomicBool,
    /// How long a refresh waits for every upstream (`None`: until each answered or failed).
    patience: Option<Duration>,
    /// The key of the `requestState` a 2026-07-28 client gets with an upstream's questions
    /// (`upstream::wrap_input`): `MCP_SIEVE_SESSION_SECRET` when set (so processes sharing it
    /// take each other's), else random per process.
    secret: http::Secret,
    /// The downstream side, once a server attached it: what upstreams send outside any
    /// request reaches its sessions (`standalone`).
    clients: Mutex<Option<Weak<dyn Clients>>>,
    /// The stdio upstreams' log messages (upstream, message), until a server attaches.
    logs: Mutex<Option<mpsc::UnboundedReceiver<(usize, Value)>>>,
}

/// How long a refresh waits for the slowest upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Serve the upstreams that answered within [`PATIENCE`] (once one is up); the others join
    /// when they answer: a server (`serve`, `stdio`).
    Patient,
    /// Every upstream answers or fails first: a one-shot report (`tools`, `init`).
    ForAll,
}

/// The upstream conversations of this process and the drivers that carry them (cheap to clone).
#[derive(Clone)]
pub struct Gateway(Arc<Inner>);

impl Gateway {
    /// A gateway in front of `local`'s upstreams (`None` when it names none), their secret
    /// references resolved from the environment: a missing one is a configuration error. Its
    /// pins are read from the lock file (the document's `pinning.lock`, or [`mcp_sieve::pin::DEFAULT_LOCK`],
    /// in `folder`, the document's folder).
    /// `wait` says how long a refresh waits for the slowest upstream.
    pub fn new(local: Arc<Server>, folder: &Path, wait: Wait) -> Result<Option<Self>, Error> {
        let ups: Vec<Upstream> = local.catalog().upstreams.clone();
        if ups.is_empty() {
            return Ok(None);
        }
        let env = |name: &str| std::env::var(name).ok();
        // Their questions mid-call are relayed to the client that made the call (`relay`), and
        // what they send on their sessions' GET streams, roots questions among it (`standalone`).
        let state = upstream::Gateway::with_secrets(&ups, &env)?
            .redacting(&upstream::Secrets::own(&env))
            .relaying()
            .with_roots();
        let secrets = state.secrets().clone();
        let mut drivers = Vec::new();
        let names = ups.iter().map(|u| u.name.clone()).collect();
        let (logs, logs_rx) = mpsc::unbounded_channel();
        for (member, up) in ups.iter().enumerate() {
            drivers.push(match &up.transport {
                // Sent to as the URL parser resolves it: the URL a token is checked against.
                Transport::Http(url) => Driver::Http {
                    url: upstream::oauth::request_url(url),
                },
                Transport::Stdio { command, args, cwd, .. } => Driver::Stdio(Box::new(Pipe::new(Spec {
                    name: up.name.clone(),
                    command: command.clone(),
                    args: args.clone(),
                    env: up.resolved_env(&env)?,
                    cwd: cwd.clone(),
                    logs: (member, logs.clone()),
                    secrets: secrets.clone(),
                }))),
                Transport::Service(b) => {
                    return Err(Error::Catalog(format!(
                        "upstreams.{}.service (\"{b}\") is a Cloudflare service binding: only the Worker can reach one; give the native server a url or a command",
                        up.name
                    )))
                }
            });
        }
        let auth = ups
            .iter()
            .map(|u| crate::oauth::Auth::new(u, &env))
            .collect::<Result<Vec<_>, Error>>()?;
        if auth.iter().flatten().any(|a| a.active()) {
            tracing::info!("upstream tokens are kept in {}", crate::oauth::kept_in());
        }
        let lock = lock_path(&local.catalog().pinning, folder);
        let g = Gateway(Arc::new(Inner {
            state: Mutex::new(state),
            drivers,
            names,
            limits: ups.iter().map(|u| u.limits).collect(),
            client: crate::http::tls::HttpClients::new(&ups, folder).map_err(Error::Config)?,
            auth,
            oauth_http: crate::oauth::Http::new(),
            local,
            lock,
            lock_seen: Mutex::new(None),
            retired: std::sync::atomic::AtomicBool::new(false),
            patience: (wait == Wait::Patient).then_some(PATIENCE),
            secret: state_secret()?,
            clients: Mutex::new(None),
            logs: Mutex::new(Some(logs_rx)),
        }));
        g.read_pins(true)?;
        Ok(Some(g))
    }

    /// Reads the lock file when it changed since last read (or `always`) and hands its pins to
    /// the core, which rebuilds the catalog at once when they differ. A missing file is no pins
    /// (said once when pinning is on); a broken one is an error at start and logged later.
    fn read_pins(&self, always: bool) -> Result<(), Error> {
        let path = &self.0.lock;
        let seen = std::fs::metadata(path)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        {
            let mut last = self.0.lock_seen.lock().unwrap_or_else(|p| p.into_inner());
            if !always && *last == seen {
                return Ok(());
            }
            *last = seen;
        }
        let mode = self.0.local.catalog().pinning.mode;
        let pins = match std::fs::read_to_string(path) {
            Ok(text) => Pins::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?,
            Err(_) => {
                if mode != Mode::Off {
                    tracing::warn!(
                        "pinning: no lock file at {} yet: every tool is unpinned (write it with `mcp-sieve pin`)",
                        path.display()
                    );
                }
                Pins::default()
            }
        };
        let changed = self.state().set_pins(self.0.local.catalog(), pins)?;
        if let Some(r) = changed {
            tracing::info!("pinning: read {}", path.display());
            for line in &r.log {
                tracing::info!("{line}");
            }
        }
        Ok(())
    }

    /// The core's gateway state.
    pub(crate) fn state(&self) -> std::sync::MutexGuard<'_, upstream::Gateway> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Lets what upstreams send outside any request reach the sessions of `clients` (a server):
    /// their standalone streams' messages, and the stdio upstreams' log messages.
    pub(crate) fn attach(&self, clients: Weak<dyn Clients>) {
        *self.0.clients.lock().unwrap_or_else(|p| p.into_inner()) = Some(clients);
        let logs = self.0.logs.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(logs) = logs {
            tokio::spawn(self.clone().broadcast_logs(logs));
        }
    }

    /// The downstream side, while it is attached.
    pub(crate) fn clients(&self) -> Option<Arc<dyn Clients>> {
        self.0
            .clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()?
            .upgrade()
    }

    /// The URL of upstream `member` when it is spoken to over HTTP.
    pub(crate) fn http_url(&self, member: usize) -> Option<&str> {
        match self.0.drivers.get(member) {
            Some(Driver::Http { url }) => Some(url),
            _ => None,
        }
    }

    /// The HTTP client the upstreams are reached with.
    pub(crate) fn http_client(&self) -> &crate::http::tls::HttpClients<Full<Bytes>> {
        &self.0.client
    }

    /// The operator's view of each upstream (no header, no secret), with a stdio upstream's
    /// process id.
    pub fn status(&self) -> Value {
        let mut status = self.state().status(now_ms());
        if let Some(search) = crate::search::meaning::status() {
            status["search"] = search;
        }
        if let Some(Value::Array(ups)) = status.get_mut("upstreams") {
            for ((up, driver), auth) in ups.iter_mut().zip(&self.0.drivers).zip(&self.0.auth) {
                if let Driver::Stdio(p) = driver {
                    up["pid"] = serde_json::json!(p.pid());
                }
                if let Some(a) = auth.as_ref().filter(|a| a.active()) {
                    up["auth"] = "oauth".into();
                    if a.needs_login() {
                        let name = up["name"].as_str().unwrap_or_default().to_string();
                        up["state"] = "needs-login".into();
                        up["login"] = format!("mcp-sieve login {name}").into();
                    }
                }
            }
        }
        status
    }

    /// Upstream `member`'s budgets.
    fn limits(&self, member: usize) -> Limits {
        self.0.limits.get(member).copied().unwrap_or_default()
    }

    /// One message to upstream `member`, all of it (its answer read to the end, what the
    /// upstream asks or tells meanwhile relayed by `relaying`) within the upstream's
    /// `limits.callTimeoutSeconds`, from now: not of silence, nor per frame.
    ///
    /// In a CLIENT span of its own (`crate::telemetry`): the upstream's name, era and method;
    /// with traces on, its trace context goes along (an HTTP upstream's `traceparent` header, a
    /// stdio upstream's `params._meta.traceparent`).
    pub(crate) async fn post(
        &self,
        member: usize,
        mut post: Post,
        relaying: Option<&mut Relaying<'_>>,
    ) -> Result<HttpAnswer, Error> {
        let version = post
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("mcp-protocol-version"))
            .map(|(_, v)| v.clone());
        let stdio = matches!(self.0.drivers.get(member), Some(Driver::Stdio(_)));
        let era = match (stdio, version.as_deref()) {
            (true, _) => "stdio",
            (false, None) => "discovery",
            (false, Some(v)) if v >= "2026-07-28" => "stateless",
            (false, Some(_)) => "session",
        };
        let name = self.0.names.get(member).map_or("", String::as_str);
        let transport = if stdio { "pipe" } else { "tcp" };
        let span = crate::telemetry::upstream_span(name, transport, era, version.as_deref(), &post.body);
        let context = crate::telemetry::context_of(&span);
        if stdio {
            post.body = crate::telemetry::with_meta_context(post.body, &context);
        } else {
            post.headers
                .retain(|(k, _)| !context.iter().any(|(c, _)| k.eq_ignore_ascii_case(c)));
            post.headers.extend(context);
        }
        let answer = self.post_now(member, post, relaying).instrument(span.log.clone()).await;
        match &answer {
            Err(e) => crate::telemetry::upstream_failed(&span, &e.code().to_string()),
            Ok(a) if a.status >= 400 => crate::telemetry::upstream_failed(&span, &a.status.to_string()),
            Ok(_) => {}
        }
        answer
    }

    /// [`Gateway::post`], without its span.
    async fn post_now(
        &self,
        member: usize,
        post: Post,
        relaying: Option<&mut Relaying<'_>>,
    ) -> Result<HttpAnswer, Error> {
        let limits = self.limits(member);
        let deadline = Duration::from_millis(limits.call_ms);
        let method = method_of(&post.body);
        let answer = match self.0.drivers.get(member) {
            Some(Driver::Stdio(p)) => return p.post(post, deadline, relaying).await,
            Some(Driver::Http { url }) => {
                let auth = self.0.auth.get(member).and_then(Option::as_ref);
                let posting = self.post_signed_in(auth, url, post, relaying, limits.max_answer_bytes);
                tokio::time::timeout(deadline, posting).await
            }
            None => return Err(Error::Internal(format!("no upstream number {member}"))),
        };
        answer.map_err(|_| crate::error::late(&method, limits.call_ms))?
    }

    /// The upstreams that need a person to sign in now (`needs-login`): member, name.
    pub(crate) fn needing_sign_in(&self) -> Vec<(usize, String)> {
        let needs = |a: &Option<Arc<crate::oauth::Auth>>| a.as_ref().is_some_and(|a| a.needs_login());
        let members = self.0.auth.iter().enumerate().filter(|(_, a)| needs(a));
        members.map(|(m, _)| (m, self.0.names[m].clone())).collect()
    }

    /// The sign-in URL of upstream `member` for a client (of downstream `session`) that declared
    /// URL-mode elicitation, and its elicitation id (`sign_in::asked_of_client`). When the
    /// sign-in is done, the upstream is listed again at once (`list_changed` when that changed
    /// the lists), then each session handed it hears `notifications/elicitation/complete`.
    pub(crate) async fn sign_in_url(&self, member: usize, session: Option<&str>) -> Result<(String, String), Error> {
        let auth = self.0.auth.get(member).and_then(Option::as_ref);
        let auth = auth.ok_or_else(|| Error::Internal(format!("upstream number {member} does not sign in")))?;
        let me = self.clone();
        crate::oauth::sign_in::asked_of_client(auth, session, move |id, sessions| async move {
            me.state().due_now(member);
            let jobs = me.state().retries(now_ms());
            if !jobs.is_empty() {
                let _ = me.run(jobs).await;
            }
            let _ = me.serving(&me.0.local).await;
            if let Some(clients) = me.clients() {
                for s in &sessions {
                    clients.push(s, upstream::oauth::elicitation_complete(&id));
                }
            }
        })
        .await
    }

    /// `e`, the error of a request of downstream `session` that needed upstream `member`, or,
    /// when that upstream needs a person to sign in, the URL-mode elicitation of its sign-in
    /// (MCP 2025-11-25 `-32042`).
    async fn sign_in_instead(&self, member: usize, session: Option<&str>, e: Error) -> Error {
        let Some(auth) = self.0.auth.get(member).and_then(Option::as_ref) else {
            return e;
        };
        if !auth.needs_login() {
            return e;
        }
        match self.sign_in_url(member, session).await {
            Ok((id, url)) => upstream::oauth::url_elicitation_required(auth.name(), &id, &url, "it needs your sign-in"),
            Err(why) => {
                tracing::warn!("upstream \"{}\": no sign-in URL for the client: {why}", auth.name());
                e
            }
        }
    }

    /// The `Authorization` header last sent to upstream `member` (its OAuth token), for
    /// requests that do not wait for token work (DELETE, GET streams).
    pub(crate) fn current_authorization(&self, member: usize) -> Option<String> {
        self.0.auth.get(member)?.as_ref()?.current()
    }

    /// `post` to `url` with the upstream's OAuth token when it signs in (`auth`): refreshed
    /// when it expires soon; on 401 refreshed (or, for an upstream without `auth` answering
    /// with a Bearer challenge, looked up) and sent once more; on 403 `insufficient_scope`
    /// stepped up (client_credentials) or the upstream needs a sign-in.
    async fn post_signed_in(
        &self,
        auth: Option<&Arc<crate::oauth::Auth>>,
        url: &str,
        post: Post,
        mut relaying: Option<&mut Relaying<'_>>,
        max: usize,
    ) -> Result<HttpAnswer, Error> {
        let Some(auth) = auth else {
            return self.post_http(url, post, relaying, max).await;
        };
        let mut again = false;
        // What the upstream said when it refused (said with the sign-in's error).
        let mut refusal: Option<String> = None;
        let said = |refusal: &Option<String>, e: Error| match (refusal, e) {
            (Some(r), Error::Upstream(m)) => Error::Upstream(format!("{r}: {m}")),
            (_, e) => e,
        };
        loop {
            let bearer = match auth.bearer(&self.0.oauth_http, false).await {
                Ok(b) => b,
                Err(e) => return Err(said(&refusal, e)),
            };
            let mut p = post.clone();
            if let Some(b) = &bearer {
                p.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                p.headers.push(("Authorization".into(), b.clone()));
            }
            let (answer, www) = self.post_http_with(url, p, relaying.as_deref_mut(), max).await?;
            let refused = answer.status == 401 || (answer.status == 403 && bearer.is_some());
            if !refused {
                return Ok(answer);
            }
            let reason = if answer.status == 401 {
                "Unauthorized"
            } else {
                "Forbidden"
            };
            let error = www
                .as_deref()
                .and_then(mcp_sieve::upstream::oauth::parse_challenge)
                .and_then(|c| c.error)
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            refusal = Some(format!(
                "it refused {} with HTTP {} {reason}{error}",
                method_of(&post.body),
                answer.status
            ));
            if again {
                return Err(said(&refusal, auth.refused_again().await));
            }
            match auth
                .refused(&self.0.oauth_http, answer.status, www.as_deref(), bearer.as_deref())
                .await
            {
                // Once more after a refresh; a request sent without a token (the upstream just
                // turned out to want one) does not spend that: its stored token may be refused too.
                crate::oauth::Refused::Retry => again = bearer.is_some(),
                // Not an OAuth upstream (no Bearer challenge): its own answer, as before.
                crate::oauth::Refused::Fail(_) if !auth.active() => return Ok(answer),
                crate::oauth::Refused::Fail(e) if answer.status == 401 || auth.needs_login() => {
                    return Err(said(&refusal, e))
                }
                // A 403 that is no step-up: the upstream's own answer.
                crate::oauth::Refused::Fail(_) => return Ok(answer),
            }
        }
    }

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
    async fn post_http_with(
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

    /// Closes the upstream sessions `ended` (a downstream session that ended) held (see
    /// [`Gateway::close_all`]).
    pub async fn close(&self, ended: &Session) {
        let closing = self.state().closing(ended);
        self.close_all(closing).await;
    }

    /// Closes every upstream session this process still holds, as it ends: those of each
    /// downstream session in `ended` (task holders among them) and the gateway's own (see
    /// [`upstream::Gateway::closing_own`]), at once (see [`Gateway::close_all`]).
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
    async fn close_all(&self, closing: Vec<(usize, Vec<(String, String)>)>) {
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

    /// Runs refreshes at once (each over its upstream's driver) and hands them back to the core:
    /// all of them, or (patient) those that ended within [`PATIENCE`] once one is up — the rest
    /// are installed as each ends, and announced on stderr.
    async fn run(&self, jobs: Vec<Job>) -> Result<Arc<Server>, Error> {
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
        if let Some(e) = refreshed.failure {
            tracing::warn!("{e}; the other upstreams keep serving");
        }
        for line in &refreshed.log {
            tracing::info!("{line}");
        }
        crate::config::load::index_in_background(&refreshed.server);
        Ok(refreshed.server)
    }

    /// Stops this gateway for good, a reload having replaced it: its retries end and its stdio
    /// upstreams' processes are stopped (and not started again by a request still under way).
    pub async fn retire(&self) {
        self.0.retired.store(true, std::sync::atomic::Ordering::SeqCst);
        for driver in &self.0.drivers {
            if let Driver::Stdio(p) = driver {
                p.stop().await;
            }
        }
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
                if me.0.retired.load(std::sync::atomic::Ordering::SeqCst) {
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

    /// Performs the core's `Forward` effect of `answer` at the upstream that serves the item (in
    /// the session's own session there, remembered in `store`) and completes the answer with
    /// the upstream's reply, passed through; what the upstream asks or tells the caller
    /// meanwhile is relayed to `down` (see `relay`). A failure names the upstream.
    pub(crate) async fn finish(
        &self,
        answer: http::Response,
        sessions: &impl WriteBack,
        down: &dyn Downstream,
    ) -> http::Response {
        let Some(mut f) = answer.forward.clone() else {
            return answer;
        };
        let gather = self.state().gather(&f);
        if let Some(jobs) = gather {
            return self.finish_gather(answer, jobs, sessions).await;
        }
        let (relaying, params) = Relaying::new(&f, down);
        f.params = params;
        // A 2026-07-28 client's answers to an upstream's questions, back in the upstream's terms.
        if let Err(e) = upstream::unwrap_input(&mut f, &self.0.secret, now_ms()) {
            return http::complete(answer, Ok(&upstream::refusal(&Value::Null, &e)), &[]);
        }
        let forward = self.state().forward(&f);
        let (member, mut conv, exchange) = match forward {
            Ok(x) => x,
            Err(e) => return http::complete(answer, Err(&e), &[]),
        };
        let relaying = tokio::sync::Mutex::new(relaying);
        let began = conv.session_id().map(str::to_string);
        // A session's own upstream session: its standalone stream is read for it (`standalone`).
        let listener = f.session.clone().filter(|_| !f.stateless);
        // A 2026-07-28 upstream's questions go to the caller (`upstream::drive_rounds`).
        let send = |p| {
            let relaying = &relaying;
            let opens = listener.clone().zip(upstream::opens_stream(&p));
            async move {
                let answer = self.post(member, p, Some(&mut *relaying.lock().await)).await;
                if let (Some((session, headers)), Ok(a)) = (opens, &answer) {
                    if (200..300).contains(&a.status) {
                        self.open_stream(member, headers, session).await;
                    }
                }
                answer
            }
        };
        let ask = |q| {
            let relaying = &relaying;
            async move { relaying.lock().await.handle(q).await }
        };
        // A 2025-11-25 tasks/result waiting for a task at an upstream without one sleeps here.
        let wait = |ms| tokio::time::sleep(Duration::from_millis(ms));
        let signer = Some((&self.0.secret, now_ms()));
        // One deadline for the whole exchange, from its start (not per message, per frame or
        // per relayed question): the upstream's `limits.callTimeoutSeconds`. When it passes (or
        // the caller goes away: the task running this is dropped), the exchange is dropped, and
        // with it the upstream request.
        let call_ms = self.limits(member).call_ms;
        let rounds = upstream::drive_rounds(&f, &mut conv, exchange, send, ask, wait, signer);
        let reply = tokio::time::timeout(Duration::from_millis(call_ms), rounds)
            .await
            .unwrap_or_else(|_| Err(crate::error::late(&f.method, call_ms)));
        // Notifications the relay took as they came are not passed on again with the result.
        let relaying = relaying.into_inner();
        let reply = reply.map(|mut r| {
            r.notifications.retain(|n| !relaying.relay().relays(n));
            r
        });
        let reply = {
            let mut state = self.state();
            state.note_changes(member, &mut conv);
            if matches!(reply, Err(Error::Upstream(_))) {
                state.note_unreachable(member);
            }
            match (reply, state.upstream_at(member)) {
                (Err(e), Some(up)) => Err(upstream::named(up, e)),
                (r, _) => r,
            }
        };
        // An upstream that needs a person to sign in, for a client that declared URL-mode
        // elicitation: the sign-in URL (`-32042`) in place of `mcp-sieve login NAME`.
        let reply = match reply {
            Err(e) if f.url_elicitation => Err(self.sign_in_instead(member, f.session.as_deref(), e).await),
            r => r,
        };
        if f.session.is_none() {
            // A stateless request's upstream session: kept when shared, else closed now.
            let closing = self.state().stateless_done(member, &f, began.as_deref(), &conv.link());
            if let Some(headers) = closing {
                let me = self.clone();
                tokio::spawn(async move { me.close_all(vec![(member, headers)]).await });
            }
        }
        // The session's record of the forward is written like a request's (see `sessions`).
        sessions
            .write_back(|store| upstream::forwarded(answer.clone(), &conv, reply.clone(), store, now_ms()))
            .unwrap_or_else(|| {
                tracing::warn!("a forwarded answer was not recorded: its session changed under it {MAX_RUNS} times");
                http::failed()
            })
    }
}

/// The method of the JSON-RPC message `body` (empty when it has none).
fn method_of(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|m| m.get("method").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default()
}

/// The key of the gateway's `requestState` (see `Inner::secret`).
fn state_secret() -> Result<http::Secret, Error> {
    if let Some(s) = http::Config::from_vars(&|n| std::env::var(n).ok())?.session_secret {
        return Ok(s);
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| Error::Internal(format!("no random key: {e}")))?;
    Ok(http::Secret::new(key))
}

/// The lock file of `pinning`: its `lock` (relative to `folder`, the document's), else
/// [`mcp_sieve::pin::DEFAULT_LOCK`] in `folder`.
pub fn lock_path(pinning: &mcp_sieve::pin::Pinning, folder: &Path) -> PathBuf {
    let name = pinning.lock.as_deref().unwrap_or(mcp_sieve::pin::DEFAULT_LOCK);
    folder.join(crate::platform::expand_home(Path::new(name)))
}

impl Gateway {
    /// `tasks/list`: the whole list of each upstream running the session's tasks (one after
    /// another), merged, filtered and paged by the core (`upstream::gathered`).
    async fn finish_gather(
        &self,
        answer: http::Response,
        jobs: Vec<(usize, upstream::Conversation, upstream::TaskList)>,
        sessions: &impl WriteBack,
    ) -> http::Response {
        let mut done = Vec::new();
        for (member, mut conv, mut tasks) in jobs {
            let lists = upstream::drive(&mut conv, &mut tasks, |p| self.post(member, p, None)).await;
            self.state().note_changes(member, &mut conv);
            done.push((member, conv, lists));
        }
        let Some(server) = self.state().server() else {
            return http::complete(answer, Err(&Error::Upstream("no upstream answered yet".into())), &[]);
        };
        sessions
            .write_back(|store| upstream::gathered(&server, answer.clone(), done.clone(), store, now_ms()))
            .unwrap_or_else(|| {
                tracing::warn!("a task list was not recorded: its session changed under it {MAX_RUNS} times");
                http::failed()
            })
    }
}

/// Where the operator reads each upstream's state (behind the same gate as `/mcp`).
pub const STATUS_PATH: &str = upstream::STATUS_PATH;

/// `GET` [`STATUS_PATH`]: each upstream's state as JSON (404 when the server fronts none).
pub fn status(gateway: Option<&Gateway>, method: &str) -> http::Response {
    upstream::status_response(gateway.map(Gateway::status), method)
}
