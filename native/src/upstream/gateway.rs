//! Gateway mode for the native server: moves the bytes of the core's upstream conversations
//! (`mcp_sieve::upstream`) to each upstream over its driver — a hyper client (Streamable HTTP) or
//! a child process (stdio, `crate::upstream::stdio`). Every rule — sessions, ids, re-open, paging,
//! refresh, merging, routing, forwarding, failure isolation — is in the core; this folder only
//! moves bytes, runs the refreshes of several upstreams at once, and retries the ones that are
//! down off the request path.
//!
//! This file is the [`Gateway`] (built from a document, attached to a server, retired by a
//! reload) and its one way to send an upstream a message ([`Gateway::post`]). Its parts, one
//! concern each, named as the Worker's `upstream/gateway/`: `drivers` (the bytes of a POST over
//! HTTP), `auth` (an upstream's OAuth token on its requests), `sign_in` (a client asked to sign
//! in to an upstream), `pins` (the pin lock file, read at start and whenever it changes),
//! `refresh` (refreshes, retries and checks: the server a request runs on), `forward` (a
//! request's item used at its upstream), `closing` (upstream sessions ended) and `status` (the
//! operator's view).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};
use tracing::Instrument;

use bytes::Bytes;
use http_body_util::Full;
use mcp_sieve::catalog::{Limits, Transport, Upstream};
use mcp_sieve::http;
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream::{self, HttpAnswer, Post};
use mcp_sieve::Error;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::relay::Relaying;
use crate::sessions::outbox::Clients;
use crate::upstream::stdio::{Pipe, Route, Spec};

mod auth;
mod closing;
mod drivers;
mod forward;
mod pins;
mod refresh;
mod sign_in;
mod status;

use drivers::Driver;
pub use pins::lock_path;
pub use status::{status, STATUS_PATH};

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
    /// The gateway that replaced it (`retire`): its streams' readers go on there.
    successor: Mutex<Option<Gateway>>,
    /// Wakes the readers of its upstreams' streams when `retire` sets the successor: they move
    /// to it at once (or end), not at their stream's next message, which may never come (an
    /// idle stream kept each reload's gateway, its lists among them, alive until then).
    replaced: tokio::sync::Notify,
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
    /// Serve the upstreams that answered within [`PATIENCE`](refresh::PATIENCE) (once one is up); the others join
    /// when they answer: a server (`serve`, `stdio`).
    Patient,
    /// Every upstream answers or fails first: a one-shot report (`tools`, `init`).
    ForAll,
}

/// The upstream conversations of this process and the drivers that carry them (cheap to clone).
#[derive(Clone)]
pub struct Gateway(Arc<Inner>);

/// A gateway its holder does not keep (a task that should end with it).
pub(crate) struct WeakGateway(Weak<Inner>);

impl WeakGateway {
    /// The gateway, while something else holds it.
    pub(crate) fn upgrade(&self) -> Option<Gateway> {
        self.0.upgrade().map(Gateway)
    }
}

impl Gateway {
    /// A gateway in front of `local`'s upstreams (`None` when it names none), their secret
    /// references resolved from the environment: a missing one is a configuration error. Its
    /// pins are read from the lock file (the document's `pinning.lock`, or [`mcp_sieve::pin::DEFAULT_LOCK`],
    /// in `folder`, the document's folder).
    /// `wait` says how long a refresh waits for the slowest upstream. `running`: the gateway a
    /// reload replaces, whose stdio processes this one takes over where their upstream's command,
    /// arguments, environment and folder are unchanged (the rest are stopped by its `retire`),
    /// and whose lists and sessions of unchanged upstreams it carries over.
    pub fn new(
        local: Arc<Server>,
        folder: &Path,
        wait: Wait,
        running: Option<&Gateway>,
    ) -> Result<Option<Self>, Error> {
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
        let mut taken = Vec::new();
        let names = ups.iter().map(|u| u.name.clone()).collect();
        let (logs, logs_rx) = mpsc::unbounded_channel();
        for (member, up) in ups.iter().enumerate() {
            drivers.push(match &up.transport {
                // Sent to as the URL parser resolves it: the URL a token is checked against.
                Transport::Http(url) => Driver::Http {
                    url: upstream::oauth::request_url(url),
                },
                Transport::Stdio { command, args, cwd, .. } => {
                    let spec = Spec {
                        name: up.name.clone(),
                        command: command.clone(),
                        args: args.clone(),
                        env: up.resolved_env(&env)?,
                        cwd: cwd.clone(),
                    };
                    let route = Route {
                        logs: (member, logs.clone()),
                        secrets: secrets.clone(),
                    };
                    // The running gateway's process of this upstream, unchanged, carries on
                    // (its messages come here once this gateway is built: below).
                    Driver::Stdio(match running.and_then(|g| g.pipe_running(&spec)) {
                        Some(pipe) => {
                            taken.push((pipe.clone(), route));
                            pipe
                        }
                        None => Arc::new(Pipe::new(spec, route)),
                    })
                }
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
            client: crate::http::tls::HttpClients::new(&ups, folder).map_err(|e| Error::Config(e.to_string()))?,
            auth,
            oauth_http: crate::oauth::Http::new(),
            local,
            lock,
            lock_seen: Mutex::new(None),
            retired: std::sync::atomic::AtomicBool::new(false),
            successor: Mutex::new(None),
            replaced: tokio::sync::Notify::new(),
            patience: (wait == Wait::Patient).then_some(refresh::PATIENCE),
            secret: state_secret()?,
            clients: Mutex::new(None),
            logs: Mutex::new(Some(logs_rx)),
        }));
        g.read_pins(true)?;
        if let Some(old) = running {
            // The unchanged upstreams' lists and sessions carry on: they are not asked again.
            let carried = g
                .state()
                .carry_over(&old.state(), g.0.local.catalog(), crate::platform::now_ms())?;
            if let Some(refreshed) = carried {
                g.installed(refreshed);
            }
        }
        for (pipe, route) in taken {
            pipe.adopt(route);
        }
        Ok(Some(g))
    }

    /// The gateway serving upstream `member` of this one now, and its place there: this one
    /// until a reload replaced it; then the gateway after it, where an upstream of the same name
    /// is reached the same way — the downstream sessions' sessions there carry on (`None`: a
    /// reload removed it or moved it elsewhere, and what its streams carry is not wanted).
    pub(crate) fn now_serving(&self, member: usize) -> Option<(Gateway, usize)> {
        let (mut g, mut member) = (self.clone(), member);
        loop {
            // The mark before the successor (`retire` sets them in the other order).
            let retired = g.is_replaced();
            let next = g.0.successor.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(next) = next else {
                // Retired with none after it: the reload left no upstream.
                return (!retired).then_some((g, member));
            };
            let (name, transport) = g
                .state()
                .upstream_at(member)
                .map(|u| (u.name.clone(), u.transport.clone()))?;
            let state = next.state();
            member = (0..state.len()).find(|&i| {
                state
                    .upstream_at(i)
                    .is_some_and(|u| u.name == name && u.transport == transport)
            })?;
            drop(state);
            g = next;
        }
    }

    /// Whether a reload replaced this gateway ([`Gateway::retire`]).
    pub(crate) fn is_replaced(&self) -> bool {
        self.0.retired.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once a reload replaced this gateway ([`Gateway::retire`]); to be created (and
    /// enabled) before [`Gateway::now_serving`] is asked, so that a retirement between the two
    /// is not missed.
    pub(crate) fn replaced(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.replaced.notified()
    }

    /// This gateway, not kept alive by the holder of what this returns.
    pub(crate) fn weak(&self) -> WeakGateway {
        WeakGateway(Arc::downgrade(&self.0))
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

    /// Its pipe that runs the process `spec` describes, if it has one still running it.
    fn pipe_running(&self, spec: &Spec) -> Option<Arc<Pipe>> {
        self.pipes().find(|(_, p)| p.runs(spec)).map(|(_, p)| p.clone())
    }

    /// Its stdio upstreams' pipes, with their names.
    fn pipes(&self) -> impl Iterator<Item = (&str, &Arc<Pipe>)> {
        self.0.drivers.iter().zip(&self.0.names).filter_map(|(d, n)| match d {
            Driver::Stdio(p) => Some((n.as_str(), p)),
            Driver::Http { .. } => None,
        })
    }

    /// Whether this gateway uses `pipe` (it took the process over: [`Gateway::new`]).
    fn uses(&self, pipe: &Arc<Pipe>) -> bool {
        self.pipes().any(|(_, p)| Arc::ptr_eq(p, pipe))
    }

    /// The names of its stdio upstreams (each runs a process).
    pub fn processes(&self) -> Vec<String> {
        self.pipes().map(|(n, _)| n.to_string()).collect()
    }

    /// The stdio upstreams whose processes `next` took over from this gateway ([`Gateway::new`]).
    pub fn kept_by(&self, next: Option<&Gateway>) -> Vec<String> {
        self.pipes()
            .filter(|(_, p)| next.is_some_and(|n| n.uses(p)))
            .map(|(n, _)| n.to_string())
            .collect()
    }

    /// Stops this gateway for good, a reload having replaced it with `next`: its retries end,
    /// its stdio upstreams' processes are stopped (and not started again by a request still
    /// under way), except those `next` took over, and its own sessions at HTTP upstreams (the
    /// lists', the one stateless callers shared) are closed in the background unless `next`
    /// carried them over, as are the downstream sessions' own sessions at upstreams `next` no
    /// longer reaches; their sessions at the others carry on under `next`, which finds them by
    /// upstream name.
    pub async fn retire(&self, next: Option<&Gateway>) {
        // The successor before the mark: a reader that sees the mark finds it (`now_serving`).
        *self.0.successor.lock().unwrap_or_else(|p| p.into_inner()) = next.cloned();
        self.0.retired.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0.replaced.notify_waiters();
        let mut own = self.state().closing_own();
        // Not those `next` carried over (`upstream::Gateway::carry_over`).
        let carried = next.map(|n| n.state().closing_own()).unwrap_or_default();
        own.retain(|(_, session)| !carried.iter().any(|(_, c)| c == session));
        // The downstream sessions' own sessions at upstreams `next` no longer reaches.
        let sessions = self.clients().map(|c| c.sessions()).unwrap_or_default();
        let theirs: Vec<_> = {
            let state = self.state();
            sessions.iter().flat_map(|s| state.closing(s)).collect()
        };
        own.extend(
            theirs
                .into_iter()
                .filter(|(member, _)| next.is_none() || self.now_serving(*member).is_none()),
        );
        if !own.is_empty() {
            let me = self.clone();
            tokio::spawn(async move { me.close_all(own).await });
        }
        for (_, p) in self.pipes() {
            if !next.is_some_and(|n| n.uses(p)) {
                p.stop().await;
            }
        }
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::sessions::outbox::Clients;

    /// A downstream side with no sessions.
    struct Nobody;

    impl Clients for Nobody {
        fn session(&self, _: &str) -> Option<mcp_sieve::protocol::Session> {
            None
        }
        fn listening(&self) -> Vec<String> {
            Vec::new()
        }
        fn sessions(&self) -> Vec<mcp_sieve::protocol::Session> {
            Vec::new()
        }
        fn reachable(&self, _: &str) -> bool {
            false
        }
        fn push(&self, _: &str, _: String) {}
        fn ask<'a>(
            &'a self,
            _: &'a mcp_sieve::protocol::Ask,
            _: &'a str,
        ) -> futures_util::future::BoxFuture<'a, Result<Option<Value>, Error>> {
            Box::pin(async { Ok(None) })
        }
    }

    /// An upstream that opens its session, then reads until its stdin closes (its stdout open).
    const QUIET: &str = r#"read line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"quiet","version":"1"}}}'
while read -r line; do :; done"#;

    /// A gateway over one stdio upstream running `script`, taking over `running`'s process when
    /// it is the same, attached to a server with no sessions.
    fn gateway(running: Option<&Gateway>, script: &str, clients: &Arc<Nobody>) -> Gateway {
        let doc = serde_json::json!({"upstreams": {"quiet": {"command": "sh", "args": ["-c", script]}}});
        gateway_of(running, &doc, clients)
    }

    /// A gateway over the upstreams of document `doc` (see [`gateway`]).
    fn gateway_of(running: Option<&Gateway>, doc: &Value, clients: &Arc<Nobody>) -> Gateway {
        let catalog = mcp_sieve::catalog::Catalog::from_json_str(&doc.to_string()).unwrap();
        let folder = std::env::temp_dir();
        let g = Gateway::new(Arc::new(Server::new(catalog)), &folder, Wait::Patient, running)
            .unwrap()
            .unwrap();
        let weak: Weak<dyn Clients> = Arc::downgrade(clients) as Weak<dyn Clients>;
        g.attach(weak);
        g
    }

    /// The pid of its one stdio upstream's process, once started.
    async fn started(g: &Gateway) -> u32 {
        let post = Post {
            headers: Vec::new(),
            body: r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        };
        g.post(0, post, None).await.expect("started");
        g.pipes().next().and_then(|(_, p)| p.pid()).unwrap()
    }

    #[tokio::test]
    async fn a_replaced_gateway_is_freed_once_retired_and_its_unchanged_process_runs_on() {
        let clients = Arc::new(Nobody);
        let first = gateway(None, QUIET, &clients);
        let pid = started(&first).await;

        // Reloaded with the same upstream: the process is taken over, the old gateway freed.
        let second = gateway(Some(&first), QUIET, &clients);
        assert_eq!(first.kept_by(Some(&second)), vec!["quiet".to_string()]);
        let weak = first.weak();
        first.retire(Some(&second)).await;
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            weak.upgrade().is_none(),
            "nothing holds the old gateway (its log task neither)"
        );
        assert_eq!(started(&second).await, pid, "the same process serves the new gateway");

        // Reloaded with another command: the old process stops, the new one is another.
        let third = gateway(Some(&second), &format!("{QUIET} # changed"), &clients);
        assert!(second.kept_by(Some(&third)).is_empty());
        let weak = second.weak();
        second.retire(Some(&third)).await;
        assert!(weak
            .upgrade()
            .and_then(|g| g.pipes().next().and_then(|(_, p)| p.pid()))
            .is_none());
        drop(second);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(weak.upgrade().is_none());
        assert_ne!(started(&third).await, pid);
        third.retire(None).await;
    }

    /// An HTTP upstream whose `GET` streams open and stay open with nothing sent; says "opened"
    /// when one opens and "closed" when its reader let it go.
    async fn streaming_upstream() -> (String, mpsc::UnboundedReceiver<&'static str>) {
        use http_body_util::StreamBody;
        use hyper::body::Frame;
        type Chunk = Result<Frame<Bytes>, std::convert::Infallible>;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (seen, said) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((io, _)) = listener.accept().await {
                let seen = seen.clone();
                let service = hyper::service::service_fn(move |_req| {
                    let seen = seen.clone();
                    async move {
                        let (chunks, mut rx) = mpsc::channel::<Chunk>(1);
                        let _ = seen.send("opened");
                        tokio::spawn(async move {
                            chunks.closed().await;
                            let _ = seen.send("closed");
                        });
                        let body = StreamBody::new(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
                        let answer = hyper::Response::builder().header("content-type", "text/event-stream");
                        Ok::<_, std::convert::Infallible>(answer.body(body).unwrap())
                    }
                });
                let io = hyper_util::rt::TokioIo::new(io);
                tokio::spawn(hyper::server::conn::http1::Builder::new().serve_connection(io, service));
            }
        });
        (url, said)
    }

    #[tokio::test]
    async fn a_reload_moves_a_quiet_streams_reader_at_once_and_ends_it_when_its_upstream_left() {
        let clients = Arc::new(Nobody);
        let (url, mut seen) = streaming_upstream().await;
        let doc = serde_json::json!({"upstreams": {"web": {"url": url}}});
        let first = gateway_of(None, &doc, &clients);
        first.open_stream(0, Vec::new(), "a-session".into()).await;
        assert_eq!(seen.recv().await, Some("opened"));

        // Reloaded with the same upstream: its reader goes on under the new gateway and lets the
        // old one go at once, though its stream says nothing.
        let second = gateway_of(Some(&first), &doc, &clients);
        let weak = first.weak();
        first.retire(Some(&second)).await;
        drop(first);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            weak.upgrade().is_none(),
            "the quiet stream's reader let the old gateway go"
        );
        assert!(seen.try_recv().is_err(), "the stream is still read, not opened again");

        // Reloaded without it: the reader ends and lets its stream go.
        let other = serde_json::json!({"upstreams": {"other": {"url": "http://127.0.0.1:9/mcp"}}});
        let third = gateway_of(Some(&second), &other, &clients);
        second.retire(Some(&third)).await;
        let closed = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
        assert_eq!(closed.ok().flatten(), Some("closed"));
        third.retire(None).await;
    }
}
