//! The HTTP server: hyper on tokio. Accepts connections (TCP_NODELAY: answers go out at once, no
//! Nagle/delayed-ACK stall), reads the body up to the limit, hands method, headers and body to the
//! core's Streamable HTTP rules (`mcp_sieve::http::serve`) and writes what comes back; the gateway
//! (when the catalog names an `upstream`) picks the server and performs forwards.
//!
//! Requests run in parallel: the core's rules run on the blocking pool (a slow request never
//! holds an async worker), and no lock is held while they run — sessions are read and written
//! back under short locks, and a run whose write-back conflicts with another request of the same
//! session is run again (see `sessions`).

mod code;
pub(crate) mod relay;
pub(crate) mod watch;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use mcp_sieve::auth::Rejection;
use mcp_sieve::http::{self, SessionStore, Who};
use mcp_sieve::protocol::jsonrpc::{self, Head};
use mcp_sieve::protocol::{Answers, Env, Server};
use tokio::net::TcpListener;

use crate::app::{reply, App, Reply};
use crate::auth::Verifier;
use crate::config::load::Document;
use crate::error::ServerError;
use crate::http::headers::Texts;
use crate::operate::{MetricsAt, Operate};
use crate::platform::{fresh_id, now_ms};
use crate::sessions::{Sessions, WriteBack, MAX_RUNS};
use crate::telemetry::request_log::RequestLog;
use crate::upstream::gateway::{Gateway, Wait};

/// A request's body: a client's (`Incoming`) or a code-mode program's call (whole).
pub(crate) trait Body: hyper::body::Body<Data = Bytes> + Send + Unpin + 'static {}
impl<B: hyper::body::Body<Data = Bytes> + Send + Unpin + 'static> Body for B {}

/// Longest a client may take to send its request head, and then its body.
const HEAD_DEADLINE: Duration = Duration::from_secs(10);
const BODY_DEADLINE: Duration = Duration::from_secs(10);
/// Longest the rest of a body past the limit is read and dropped before the 413: a client still
/// writing its body then reads the 413 instead of a reset connection. Longer, it is cut off.
const DRAIN: Duration = Duration::from_secs(1);
/// Most connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 1024;
/// Longest a `tasks/result` waits in one request.
const MAX_WAIT_MS: i64 = 30_000;

/// Loads the catalog document `doc` and the transport options, then serves until it is
/// terminated (SIGTERM, or SIGINT: Ctrl-C); it then stops accepting and closes every upstream
/// session it holds (its sessions' and the gateway's own) before it exits.
pub async fn run(
    doc: Document,
    source: &crate::cli::Source,
    host: &str,
    port: u16,
    metrics_at: MetricsAt,
) -> Result<(), ServerError> {
    fresh_id()?;
    let folder = &crate::config::load::folder(source);
    let var = std::env::var(mcp_sieve::catalog::Lockdown::VAR).ok();
    let text = match mcp_sieve::catalog::Lockdown::var_enables(var.as_deref()) {
        true => mcp_sieve::catalog::Lockdown::enable_in(&doc.text)?,
        false => doc.text.clone(),
    };
    let server = Arc::new(Server::new(doc.catalog(&text)?));
    crate::config::load::index_in_background(&server);
    // Origin allow-list, bearer token, CORS and body limit: the Worker's variables, from the environment.
    let mut cfg = http::Config::from_vars(&|name| std::env::var(name).ok())?;
    if cfg.session_secret.is_none() {
        // Sessions live in this process: a secret of its own tags their ids.
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        cfg.session_secret = Some(http::Secret::new(key));
    }
    // Who may call: the catalog's `auth` block (tokens then checked by the verifier).
    cfg.auth = server.catalog().auth.clone();
    let verifier = cfg.auth.as_deref().map(Verifier::new);
    let gateway = Gateway::new(server.clone(), folder, Wait::Patient, None)?;
    let operate = Operate::new(&server, folder, metrics_at)?;
    // Taken from here on, so a signal during the startup fetch waits for it (its session is
    // then held, and closed below) instead of killing the process.
    let mut term = crate::shutdown::terminated(true)?;
    let app = Arc::new(App {
        live: Mutex::new(crate::reload::Live {
            server,
            gateway,
            view: None,
        }),
        cfg,
        store: Sessions::default(),
        answers: Mutex::new(Answers::default()),
        parked: Default::default(),
        cancels: Default::default(),
        asking: Default::default(),
        verifier,
        outbox: Default::default(),
        operate,
    });
    // What upstreams send outside any request reaches the sessions (`standalone`).
    let clients: Arc<dyn crate::sessions::outbox::Clients> = app.clone();
    if let Some(g) = &app.gateway() {
        g.attach(Arc::downgrade(&clients));
        // Fetch the upstream's lists now, so the first client does not wait (and a bad upstream shows at once).
        if let Err(e) = g.serving(&app.live().server).await {
            tracing::warn!("the upstreams are not reachable yet: {e}");
        }
        // Which upstreams are up, which failed and why (their tools are left out until they answer).
        for line in crate::progress::lines(&g.status()) {
            crate::telemetry::progress(&line);
        }
        g.keep_retrying();
    }
    // An edit of its files is picked up (`reload`).
    let holder: Arc<dyn crate::reload::Holder> = app.clone();
    let watched = (source.clone(), None);
    let fixed = "the port, --host, the auth block, rate limits and the audit";
    crate::reload::spawn(holder, Arc::downgrade(&clients), watched, fixed);
    let listener = TcpListener::bind((host, port))
        .await
        .map_err(|e| ServerError::Io(format!("cannot listen on {host}:{port}"), e))?;
    tracing::info!("serving MCP at http://{host}:{port}/mcp");
    // Idle sessions are evicted even if nobody asks for them again.
    let sweeper = app.clone();
    tokio::spawn(async move {
        let every = Duration::from_millis((sweeper.cfg.idle_ms() / 4).clamp(1_000, 60_000) as u64);
        loop {
            tokio::time::sleep(every).await;
            let cutoff = now_ms() - sweeper.cfg.idle_ms() - 60_000; // last_seen lags by up to a minute
            let evicted = sweeper.store.evict_idle(cutoff);
            for s in &evicted {
                mcp_sieve::http::released(s, &mut sweeper.store.snapshot(), now_ms());
            }
            if let Some(g) = &sweeper.gateway() {
                for s in &evicted {
                    g.close(s).await;
                }
            }
        }
    });
    if let MetricsAt::Port(p) = metrics_at {
        crate::app::listen_metrics(app.clone(), host, p).await?;
    }
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            _ = term.recv() => break,
            accepted = async {
                let slot = slots.clone().acquire_owned().await;
                (slot, listener.accept().await)
            } => accepted,
        };
        let (stream, slot) = match accepted {
            (Err(_), _) => break,
            (Ok(slot), Ok((stream, _))) => (stream, slot),
            (_, Err(e)) => {
                tracing::warn!("accept failed: {e}");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = service_fn(move |req| {
                let app = app.clone();
                async move { Ok::<_, Infallible>(handle(&app, req).await) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_DEADLINE)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    // Terminated: no more connections; every session ends with the process, and every upstream
    // session it opened is closed with it (as `mcp-sieve stdio` does): each session's, its tasks'
    // holders', the one stateless calls share and the lists'.
    drop(listener);
    if let Some(g) = &app.gateway() {
        crate::shutdown::close(g, &app.store.drain()).await;
    }
    Ok(())
}

fn text(status: u16, body: &str) -> Reply {
    reply(http::Response {
        status,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: body.into(),
        ..Default::default()
    })
}

/// One request, in its span (see `crate::telemetry`): every log line about it carries its
/// method, id, principal and view, and with traces on it is the trace's SERVER span. A client's
/// request, or a code-mode program's call made as its caller's (`code`).
pub(crate) async fn handle<B: Body>(app: &Arc<App>, req: hyper::Request<B>) -> Reply {
    // Timed only for the debug line that says it.
    let started = tracing::enabled!(tracing::Level::DEBUG).then(std::time::Instant::now);
    let mut log = None;
    let reply = handle_in(app, req, &mut log).await;
    // Answered before its body was read (a refusal, metadata, status): a span of the answer.
    let log = log.unwrap_or_else(|| crate::telemetry::request_span("tcp", Bytes::new(), None, None));
    let status = reply.status().as_u16();
    if crate::telemetry::traces_on() && status >= 400 {
        crate::telemetry::failed_http(&log, status);
    }
    if let Some(started) = started {
        log.in_scope(|| tracing::debug!(status, ms = started.elapsed().as_millis() as u64, "answered"));
    }
    reply
}

/// [`handle`]: `log` is set to the request's log context (its span, when traced) once its body
/// is read (the head sampler may need the trace context in it).
async fn handle_in<B: Body>(app: &Arc<App>, req: hyper::Request<B>, log: &mut Option<RequestLog>) -> Reply {
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path();
    // Protected Resource Metadata (RFC 9728), public.
    if let Some(r) = http::metadata(&app.cfg, parts.method.as_str(), path) {
        return reply(r);
    }
    let status = path == crate::upstream::gateway::STATUS_PATH;
    let metrics = path == crate::operate::metrics::PATH && app.operate.metrics_at == MetricsAt::Endpoint;
    let embeddings = path == crate::search::embeddings::PATH;
    if !(status
        || metrics
        || embeddings
        || path == http::ENDPOINT
        || path.strip_prefix(http::ENDPOINT).is_some_and(|r| r.starts_with('/')))
    {
        return text(404, "Not found: MCP is served at /mcp (and its views at /mcp/{view})");
    }
    let query = parts.uri.query().unwrap_or_default();
    // Kept as hyper parsed them (no copy of each name and value per request).
    let headers = Arc::new(std::mem::take(&mut parts.headers));
    let texts = Texts::of(&headers);
    let header = |name: &str| texts.get(name);
    // The transport's gate (Origin, token, declared length) before a byte of the body is read.
    let refusal = http::gate(
        &app.cfg,
        &http::Request {
            method: parts.method.as_str(),
            header: &header,
            body: &[],
        },
    );
    if let Some(refusal) = refusal {
        return reply(refusal);
    }
    // Who calls: a static token at once, an access token verified (before the body is read).
    let caller = match http::who(&app.cfg, &header) {
        Who::Known(c) => c,
        Who::Refused(r) => return reply(*r),
        Who::Verify(token, party) => {
            let verified = match &app.verifier {
                Some(v) => v.verify(&token, party).await,
                None => Err(Rejection::Invalid("no issuer is configured for it".into())),
            };
            match verified {
                Ok(identity) => http::Caller::verified(identity),
                Err(why) => return reply(http::refused(&app.cfg, &why, header("origin").as_deref())),
            }
        }
    };
    if status {
        return reply(crate::upstream::gateway::status(
            app.gateway().as_ref(),
            parts.method.as_str(),
        ));
    }
    if metrics {
        return reply(crate::app::metrics_response(app, parts.method.as_str()));
    }
    // Counted while read (a chunked body has no declared length), and within a deadline.
    let limit = app.cfg.limits.max_body;
    let body = match tokio::time::timeout(BODY_DEADLINE, read_body(body, limit)).await {
        Ok(Some(b)) => b,
        Ok(None) => return reply(http::too_large(limit)),
        Err(_) => return text(408, "the request body did not arrive in time"),
    };
    if embeddings {
        // The document's sentence encoder for a Worker's queries (issue 40), off the runtime's thread.
        let model = crate::search::meaning::model_dir(&app.live().server.catalog().meaning);
        let method = parts.method.to_string();
        let done = tokio::task::spawn_blocking(move || crate::search::embeddings::answer(model, &method, &body)).await;
        let (status, value) =
            done.unwrap_or_else(|_| (500, serde_json::json!({"error": {"message": "the encoder failed"}})));
        return reply(http::Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: value.to_string(),
            ..Default::default()
        });
    }
    // The message, parsed once here: what it says about itself (method, id, item, trace context)
    // for its span, its fresh id, its limits, audit and metrics, and the whole of it for the core.
    // A body the core refuses is left to it (it answers why); its head is read from the bytes.
    let mut parsed = jsonrpc::parse(&body, &app.cfg.limits).ok();
    let head = match &parsed {
        Some(msg) => Head::of(msg),
        None => Head::read(&body),
    };
    let traceparent = header("traceparent");
    let tracestate = header("tracestate");
    let context = traceparent.as_deref().map(|tp| (tp, tracestate.as_deref()));
    let log = &*log.insert(crate::telemetry::request_span(
        "tcp",
        body.clone(),
        Some(&head),
        context,
    ));
    // In the request's log context (and span) from here on.
    let work = async {
        // Minted only for a message that may use it (a session, a task, a question): not for a list.
        let id = match head.needs_fresh_id().then(fresh_id) {
            None => String::new(),
            Some(Ok(id)) => app.cfg.session_id(&id),
            Some(Err(e)) => {
                tracing::error!("{}", ServerError::from(e));
                return reply(http::failed());
            }
        };
        // Gateway mode: the catalog over the upstream's lists; calls are performed there. What
        // runs now is read once (a lock and three counts) and holds for the whole request.
        let live = app.live();
        let server = match &live.gateway {
            None => live.server.clone(),
            Some(g) => match g.serving(&live.server).await {
                Ok(s) => s,
                Err(e) => return reply(mcp_sieve::upstream::unavailable(&e)),
            },
        };
        // The endpoint's view (`/mcp/{view}`, a URL query, `X-MCP-*` headers).
        let principal = caller.principal.clone();
        // Over the catalog served (in gateway mode the upstreams' tools, whose overlay aliases
        // X-MCP-Tools and X-MCP-Exclude-Tools accept as over a plain catalog).
        let view = match http::endpoint_view_for(
            server.catalog(),
            path,
            query,
            &header,
            principal.as_deref(),
            caller.roles(),
        ) {
            Ok(v) => v,
            Err(refusal) => return reply(*refusal),
        };
        let label = view.as_ref().map_or("", |v| v.label.as_str());
        let session = header("mcp-session-id");
        log.record(principal.as_deref(), label, session.as_deref());
        let run_asked = crate::code::asked(&head, view.as_ref(), &body);
        // Rate limits, audit and metrics (`operate`): a use over a limit is refused here.
        let first = Env {
            now_ms: now_ms(),
            principal: principal.clone(),
            fresh_id: String::new(),
            view: view.clone(),
            identity: caller.identity.clone(),
        };
        let searching = view.as_ref().is_some_and(|v| v.search);
        if searching {
            // Search mode wants the default sentence encoder (fetched once, in the background).
            crate::search::meaning::searched();
        }
        let search = crate::telemetry::is_search(&head, searching);
        let (mut seen, over) = app.operate.before(&server, head, &first);
        if let Some(r) = over {
            return reply(r);
        }
        if let Some(crate::code::Via(run)) = parts.extensions.get() {
            seen.via(run);
        }
        // The core's environment of one run (the clock read each time).
        let env_now = || Env {
            now_ms: now_ms(),
            principal: principal.clone(),
            fresh_id: id.clone(),
            view: view.clone(),
            identity: caller.identity.clone(),
        };
        if let Some(asked) = run_asked {
            // Code mode: the core checks the request (session, headers); the program runs here.
            let env = env_now();
            let mut answer = run_rules(app, &server, parts.method.as_str(), &texts, &body, parsed.take(), &env);
            let host = code::Http {
                app: app.clone(),
                target: parts.uri.to_string(),
                headers: (*headers).clone(),
                trace: log
                    .trace()
                    .map(|t| crate::telemetry::tracer::headers(&t.context))
                    .unwrap_or_default(),
            };
            let owner = principal.clone().or(session.clone()).unwrap_or_default();
            // The client's `notifications/cancelled` of this request (a POST of its own, from
            // the same session, else the same principal) stops the run.
            let whose = session.clone().or_else(|| principal.clone()).unwrap_or_default();
            let registered = app.cancels.register(&whose, &asked.id);
            let sse = answer
                .headers
                .iter()
                .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with("text/event-stream"));
            let limits = server.catalog().code;
            if let Some(body) = crate::code::answer(
                &host,
                &owner,
                &answer.body,
                sse,
                asked,
                &limits,
                Some(registered.cancelled),
            )
            .await
            {
                answer.body = body;
            }
            drop(registered.guard);
            crate::telemetry::answered(log, &answer.body);
            app.operate.after_whole(&server, &first, seen, &answer);
            return reply(answer);
        }
        // A search's own span (traced requests), around the core that searches.
        let search = search.then(|| crate::telemetry::search_span(log)).flatten();
        let started = now_ms();
        let answer = loop {
            let env = env_now();
            // The first run takes the parsed message; a run again (a wait) parses the body again.
            let parsed = parsed.take();
            let answer = if may_take_long(&body) {
                let (app, server, env) = (app.clone(), server.clone(), env.clone());
                let (method, headers, body) = (parts.method.to_string(), headers.clone(), body.clone());
                let log = log.clone();
                tokio::task::spawn_blocking(move || {
                    let texts = Texts::of(&headers);
                    log.in_scope(|| run_rules(&app, &server, &method, &texts, &body, parsed, &env))
                })
                .await
                .unwrap_or_else(|e| {
                    tracing::error!("a request failed: {e}");
                    http::failed()
                })
            } else {
                run_rules(app, &server, parts.method.as_str(), &texts, &body, parsed, &env)
            };
            // Filter failures and ignored inputs reach stderr (no conversation content).
            for line in &answer.log {
                tracing::info!("{line}");
            }
            match answer.retry_at {
                Some(at) if at - started <= MAX_WAIT_MS => {
                    tokio::time::sleep(Duration::from_millis((at - env.now_ms).clamp(1, MAX_WAIT_MS) as u64)).await
                }
                _ => break answer,
            }
        };
        crate::telemetry::searched(search, Some(&answer.body));
        crate::telemetry::answered(log, &answer.body);
        if let (Some(g), Some(ended)) = (&live.gateway, answer.ended.clone()) {
            // The session ended (DELETE, or found expired): so do its upstream sessions.
            let g = g.clone();
            tokio::spawn(async move { g.close(&ended).await });
        }
        if answer.status == 202 {
            // A client's cancel of its own forwarded call (that exchange is dropped) or run of a
            // program (`run_code`: the run stops).
            let owner = header("mcp-session-id")
                .or_else(|| principal.clone())
                .unwrap_or_default();
            app.cancels.cancel(&owner, &body);
        }
        if let (Some(g), Some(id), 202) = (&live.gateway, header("mcp-session-id"), answer.status) {
            // A client's notification some upstream sessions of its session need (its roots changed).
            if let Some(s) = app.store.snapshot().load(&id) {
                let (g, body) = (g.clone(), body.clone());
                tokio::spawn(async move { g.pass_on(&s, &body).await });
            }
        }
        let out = match &live.gateway {
            Some(g) if answer.forward.is_some() => {
                crate::serve::relay::respond(g, app.clone(), answer, principal.as_deref()).await
            }
            _ if answer.watch.is_some() || answer.ask.is_some() || answer.answered.is_some() => {
                // A session's GET stream also carries what its upstreams send outside its requests.
                let listening = (parts.method == hyper::Method::GET && answer.watch.is_some())
                    .then(|| header("mcp-session-id"))
                    .flatten();
                crate::serve::watch::stream(answer, app.clone(), listening)
            }
            _ => {
                app.operate.after_whole(&server, &first, seen, &answer);
                return reply(answer);
            }
        };
        app.operate.after(&server, &first, seen, out).await
    };
    log.scope(work).await
}

/// The body, counted while read (a chunked one has no declared length); `None` past `limit`,
/// after reading the rest (nothing kept) for at most [`DRAIN`].
/// A body of one frame (the usual request) is that frame's bytes, not a copy.
async fn read_body<B: Body>(mut body: B, limit: usize) -> Option<Bytes> {
    let (mut first, mut kept, mut len) = (None::<Bytes>, Vec::new(), 0);
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map(|f| f.into_data().unwrap_or_default()) else {
            return None;
        };
        len += data.len();
        if len > limit {
            let _ = tokio::time::timeout(DRAIN, async { while let Some(Ok(_)) = body.frame().await {} }).await;
            return None;
        }
        match first.take() {
            None if len == data.len() => first = Some(data),
            f => {
                kept.extend_from_slice(&f.unwrap_or_default());
                kept.extend_from_slice(&data);
            }
        }
    }
    Some(first.unwrap_or_else(|| Bytes::from(kept)))
}

/// Whether a request may hold a thread long: a search (`find_tools` encodes its query with the
/// sentence encoder when one is configured: milliseconds) or a body past [`INLINE_BODY`] bytes
/// (a filter's work grows with its patterns: 256 long ones over 5,000 tools take a while).
/// Those run on the blocking pool; the rest (lists, calls and their filters: tens of
/// microseconds) run on the runtime's thread, without the hand-off to another thread and back
/// (a quarter of the CPU of a `tools/list`, measured with scripts/bench-native.sh).
fn may_take_long(body: &[u8]) -> bool {
    static SEARCH: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"find_tools"));
    body.len() > INLINE_BODY || SEARCH.find(body).is_some()
}

/// Largest body whose request runs on the runtime's thread.
const INLINE_BODY: usize = 1024;

/// The core's Streamable HTTP rules for one request, with no lock held while they run: run again
/// while the write-back conflicts with another request of the same session (at most
/// [`MAX_RUNS`] times, then 500). Only the run that was written counts. `parsed`: the body as
/// `jsonrpc::parse` read it, if it did (the first run takes it; another parses the body). The
/// request passed the transport's gate in `handle_in`, before its body was read.
fn run_rules(
    app: &App,
    server: &Server,
    method: &str,
    texts: &Texts,
    body: &[u8],
    mut parsed: Option<jsonrpc::Incoming>,
    env: &Env,
) -> http::Response {
    let header = |name: &str| texts.get(name);
    let request = http::Request {
        method,
        header: &header,
        body,
    };
    app.store
        .write_back(|store| http::serve_gated(server, &app.cfg, request, parsed.take(), store, env))
        .unwrap_or_else(|| {
            tracing::warn!("a request was refused: its session changed under it {MAX_RUNS} times");
            http::failed()
        })
}
