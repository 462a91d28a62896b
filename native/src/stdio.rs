//! `mcp-sieve stdio`: MCP over stdin/stdout, newline-delimited JSON-RPC, for a desktop client
//! that launches the server itself. The core's stdio rules (`mcp_sieve::stdio::Connection`) decide
//! every answer; this shell reads lines (each within the body limit), writes lines from one
//! writer task (so messages never interleave), logs to stderr only, and performs the effects:
//! a `tasks/result` that waits, a forward to the upstream, a question asked mid-call (its answer
//! comes back on stdin; a 2026-07-28 client's with its next call, see `relay::ParkedCalls`, or
//! for its task's question with its `tasks/update`, see `task_asks`), list changes. The
//! document's rate limits and audit trail apply as in `serve` (`operate`): a use over a limit
//! gets the same JSON-RPC error (there is no HTTP 429 here), and each use's record is written
//! when its answer goes out. In code mode (`--code`) a `run_code` program's calls are lines of
//! the same client (`code`). stdin closing ends the process.

mod code;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_sieve::http::{self, MemoryStore, SessionStore};
use mcp_sieve::protocol::jsonrpc::Head;
use mcp_sieve::protocol::{ask, Answers, Ask, Env, Server, Watch};
use mcp_sieve::stdio::{one_line, Connection, Step};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::config::load::Document;
use crate::error::ServerError;
use crate::operate::{MetricsAt, Operate, Seen};
use crate::platform::now_ms;
use crate::relay::{self, BoxFuture, Downstream, First, ParkedCalls, Parking};
use crate::reload::{Holder, Live};
use crate::sessions::outbox::Clients;
use crate::upstream::gateway::{Gateway, Wait};
use crate::upstream::task_asks::{self, ParkedTasks};

/// How often a question's answer, a waiting task and the list watch are looked at.
const POLL: Duration = Duration::from_millis(50);
const TICK: Duration = Duration::from_secs(1);
/// Longest a `tasks/result` is held open before it is answered with an error.
const MAX_WAIT_MS: i64 = 10 * 60_000;

/// A use waiting for its answer: the server and the caller it ran on, and what `operate` saw.
type Pending = (Arc<Server>, Env, Seen);

/// Everything the lines of one stdio connection share.
struct Link {
    /// The server, its gateway and the view, swapped whole by a reload (`reload`).
    live: Mutex<Live>,
    /// Whether its files are watched (so even a local catalog's lists may change).
    reloads: bool,
    conn: Mutex<Connection>,
    store: Mutex<MemoryStore>,
    answers: Mutex<Answers>,
    /// Upstream exchanges waiting for the client's next 2026-07-28 call with its answer.
    parked: ParkedCalls,
    /// Its tasks' `tasks/result` exchanges waiting for its `tasks/update` (`task_asks`).
    asking: ParkedTasks,
    out: mpsc::UnboundedSender<String>,
    /// Rate limits' buckets and the audit sink (`operate`; no metrics: nothing serves them here).
    operate: Operate,
    /// Uses waiting for their answer to be written, by their JSON-RPC id (as JSON text), with
    /// the server and the caller they ran on.
    uses: Mutex<HashMap<String, Pending>>,
    /// Code-mode programs' calls waiting for their answer, by JSON-RPC id (as JSON text): their
    /// answer goes to the program instead of stdout (`code`).
    programs: Mutex<HashMap<String, tokio::sync::oneshot::Sender<String>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// 128 random bits as hex (a session's or a task's id).
fn fresh_id() -> String {
    let mut b = [0u8; 16];
    // Ids here name this one client's session and tasks; they guard nothing, so a failed read
    // of the OS's randomness falls back to the clock.
    if getrandom::fill(&mut b).is_err() {
        b[..8].copy_from_slice(&now_ms().to_le_bytes());
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Link {
    /// What runs now (a reload replaces it).
    fn live(&self) -> Live {
        lock(&self.live).clone()
    }

    /// The gateway now, if the configuration has upstreams.
    fn gateway(&self) -> Option<Gateway> {
        lock(&self.live).gateway.clone()
    }

    /// The server a line runs on now (in gateway mode, over the upstream's lists).
    async fn current(&self) -> Result<Arc<Server>, mcp_sieve::Error> {
        let live = self.live();
        match &live.gateway {
            None => Ok(live.server),
            Some(g) => g.serving(&live.server).await,
        }
    }

    fn send(&self, line: String) {
        self.audit(&line);
        let Some(line) = self.to_program(line) else {
            return;
        };
        let _ = self.out.send(one_line(line));
    }

    /// `line` unless it answers a program's call, which then gets it (`code`).
    fn to_program(&self, line: String) -> Option<String> {
        if lock(&self.programs).is_empty() {
            return Some(line);
        }
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            return Some(line);
        };
        let (Some(id), None) = (msg.get("id"), msg.get("method")) else {
            return Some(line);
        };
        match lock(&self.programs).remove(&id.to_string()) {
            Some(program) => {
                let _ = program.send(line);
                None
            }
            None => Some(line),
        }
    }

    /// The caller's view of the server now (the process's: no principal, the flags' view).
    fn env(&self) -> Env {
        Env {
            now_ms: now_ms(),
            principal: None,
            fresh_id: fresh_id(),
            view: self.live().view,
            identity: None,
        }
    }

    /// Before a line runs, rate limits and audit as `serve` applies them (`operate`): a use over
    /// a limit gets its refusal here (its record written); another waits for its answer
    /// ([`Link::audit`]).
    /// `via`: the run of the program that made the call, if one did (its record says so).
    async fn admit(&self, head: Head<'_>, via: Option<&str>) -> Option<String> {
        // An upstream that cannot be listed: the line gets the reason from `receive`.
        let server = self.current().await.ok()?;
        let env = self.env();
        let (mut seen, over) = self.operate.before(&server, head, &env);
        if let Some(run) = via {
            seen.via(run);
        }
        if let Some(refusal) = over {
            return Some(refusal.body);
        }
        if let Some(id) = seen.use_id() {
            lock(&self.uses).insert(id, (server, env, seen));
        }
        None
    }

    /// Writes the audit record of the use `line` answers, if it is one.
    fn audit(&self, line: &str) {
        if lock(&self.uses).is_empty() {
            return;
        }
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            return;
        };
        // An answer has an id and no method (a request of the server's has both).
        let (Some(id), None) = (msg.get("id"), msg.get("method")) else {
            return;
        };
        if let Some((server, env, seen)) = lock(&self.uses).remove(&id.to_string()) {
            self.operate.answered(&server, &env, seen, line.as_bytes(), 200);
        }
    }

    /// A use its client cancelled (`id`: its JSON-RPC id as JSON text): recorded unanswered.
    fn cancelled(&self, id: &str) {
        if let Some((_, _, seen)) = lock(&self.uses).remove(id) {
            self.operate.unanswered(seen);
        }
    }

    /// Runs one line through the core.
    async fn receive(self: &Arc<Self>, line: &str) -> Step {
        let server = match self.current().await {
            Ok(s) => s,
            Err(e) => {
                // The upstream could not be listed: a request gets the reason, the rest nothing.
                let id = serde_json::from_str::<serde_json::Value>(line)
                    .ok()
                    .and_then(|v| v.get("method").and(v.get("id")).cloned());
                return Step {
                    lines: id
                        .map(|id| mcp_sieve::protocol::jsonrpc::error(&id, &e))
                        .into_iter()
                        .collect(),
                    ..Step::default()
                };
            }
        };
        let env = self.env();
        let (step, opened) = {
            let mut conn = lock(&self.conn);
            let had_session = conn.session_id().is_some();
            let step = conn.receive(&server, line, &mut *lock(&self.store), &env);
            (step, !had_session && conn.session_id().is_some())
        };
        if let (Some(g), Some(id), true) = (
            &self.gateway(),
            self.listening().pop(),
            line.contains("roots/list_changed"),
        ) {
            // Its roots changed: its upstream sessions hear it (see `standalone`).
            if let Some(s) = lock(&self.store).load(&id) {
                let (g, line) = (g.clone(), line.to_string());
                tokio::spawn(async move { g.pass_on(&s, line.as_bytes()).await });
            }
        }
        if line.contains("notifications/initialized") {
            self.ask_to_sign_in();
        }
        if opened && (self.reloads || self.gateway().is_some()) {
            // A 2025-11-25 session over stdio hears about list changes without asking for a stream.
            tokio::spawn(watch(self.clone(), Watch::session(&server)));
        }
        step
    }
}

impl Link {
    /// A client that declared URL-mode elicitation, once initialized, is asked to open the
    /// sign-in page of each upstream that needs a person now (`elicitation/create`, mode `url`):
    /// one not signed in at startup has no tools listed, so no call of its could ask. Its
    /// answer is not awaited; when the sign-in is done the upstream comes up at once, and the
    /// client hears `list_changed` and `notifications/elicitation/complete` (on stdout, as
    /// `Clients::push`).
    fn ask_to_sign_in(self: &Arc<Self>) {
        let Some(g) = self.gateway() else { return };
        let Some(session) = self.listening().pop() else { return };
        let declared = lock(&self.store)
            .load(&session)
            .is_some_and(|s| s.initialize["capabilities"]["elicitation"]["url"].is_object());
        if !declared {
            return;
        }
        for (member, name) in g.needing_sign_in() {
            let (link, g, session) = (self.clone(), g.clone(), session.clone());
            tokio::spawn(async move {
                match g.sign_in_url(member, Some(&session)).await {
                    Ok((id, url)) => {
                        let params =
                            mcp_sieve::upstream::oauth::url_elicitation(&name, &id, &url, "it needs your sign-in");
                        let ask = serde_json::json!({"jsonrpc": "2.0", "id": format!("sieve-sign-in-{id}"),
                            "method": "elicitation/create", "params": params});
                        link.send(ask.to_string());
                    }
                    Err(e) => tracing::warn!("upstream \"{name}\": no sign-in URL for the client: {e}"),
                }
            });
        }
    }
}

/// A reload swaps what the connection runs on; its session, and so its view's name, stay.
impl Holder for Link {
    fn replace(&self, live: Live) -> Live {
        std::mem::replace(&mut *lock(&self.live), live)
    }

    fn running(&self) -> Option<Gateway> {
        self.gateway()
    }
}

/// Writes what `step` says now (log lines, messages) and hands an answer to the question waiting
/// for it; `true` when something is left to wait for (a retry, a forward, a question, a watch).
fn write(link: &Link, step: &mut Step) -> bool {
    for l in &step.log {
        tracing::info!("{l}");
    }
    if let Some((key, reply)) = step.answered.take() {
        lock(&link.answers).put(key, &reply, now_ms());
    }
    for l in std::mem::take(&mut step.lines) {
        link.send(l);
    }
    step.retry_at.is_some() || step.forward.is_some() || step.ask.is_some() || step.watch.is_some()
}

/// Performs what a line left waiting: a `tasks/result` retried until the task ends, a forward
/// to the upstream, a question whose answer comes back on stdin, a watch of list changes.
async fn finish(link: Arc<Link>, line: String, mut step: Step) {
    let started = now_ms();
    while let Some(at) = step.retry_at {
        if at - started > MAX_WAIT_MS {
            tracing::warn!("a tasks/result waited {} s; giving up", MAX_WAIT_MS / 1000);
            return;
        }
        tokio::time::sleep(Duration::from_millis((at - now_ms()).clamp(1, 60_000) as u64)).await;
        step = link.receive(&line).await;
        write(&link, &mut step);
    }
    if let (Some(f), Some(g)) = (step.forward.take(), &link.gateway()) {
        let stateless = f.stateless;
        let pending = http::Response {
            status: 200,
            forward: Some(f),
            ..Default::default()
        };
        if !stateless {
            let done = g.finish(pending, &link.store, &*link).await;
            link.send(done.body);
        } else if let Some(done) = task_asks::take_update(g, &*link, &pending) {
            // Its answer to a task's question (`task_asks`, as over HTTP).
            link.send(done.body);
        } else {
            // A 2026-07-28 call: its upstream's questions are asked with `input_required`, the
            // exchange parked until the client calls again with the answer (as over HTTP; the
            // one client here is the process's principal). A task's question shows in its
            // `tasks/get` and is answered with `tasks/update` (`task_asks`).
            let asked = pending.forward.clone();
            let first = match link.parked.resume(&pending, None).await {
                Some(first) => first,
                None => {
                    let (g, me) = (g.clone(), link.clone());
                    let rx = relay::spawn(move |out| async move { g.finish(pending, &me.store, &Parking(out)).await });
                    link.parked.first(rx, None, None).await
                }
            };
            match (first, asked) {
                (First::Done(done), Some(f)) => link.send(task_asks::show_question(g, &link, &f, *done).await.body),
                (First::Done(done), None) => link.send(done.body),
                (First::Asked(text), _) => link.send(text),
                (First::Event(..), _) => {} // a 2026-07-28 call's notifications are not relayed
            }
        }
    }
    if let Some(ask) = step.ask.take() {
        let reply = wait_for(&ask, &link).await;
        link.send(ask.finish(reply.as_ref()));
    }
    if let Some(w) = step.watch.take() {
        watch(link, w).await;
    }
}

/// The client of a call forwarded upstream: what the upstream asks or tells it meanwhile goes
/// out on stdout, its answers come back on stdin.
impl Downstream for Link {
    fn live(&self) -> bool {
        true
    }

    fn send(&self, message: String) {
        Link::send(self, message);
    }

    fn expect(&self, ask: &Ask, method: &str) -> Result<(), mcp_sieve::Error> {
        let mut store = lock(&self.store);
        mcp_sieve::upstream::await_answer(&mut *store, ask, method, now_ms())
    }

    fn ask<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Option<serde_json::Value>> {
        Link::send(self, ask.request.clone());
        Box::pin(wait_for(ask, self))
    }
}

/// The one client's tasks' questions are parked here, its principal the process's (`task_asks`).
impl task_asks::Shell for Link {
    type Sessions = Mutex<MemoryStore>;
    fn sessions(&self) -> &Mutex<MemoryStore> {
        &self.store
    }
    fn asking(&self) -> &ParkedTasks {
        &self.asking
    }
}

/// The one client as the gateway's readers of upstream streams reach it (see `outbox`): on
/// stdout, while its session lives (its log messages and `resources/updated`, its questions).
impl Clients for Link {
    fn session(&self, id: &str) -> Option<mcp_sieve::protocol::Session> {
        lock(&self.store).load(id)
    }

    fn listening(&self) -> Vec<String> {
        lock(&self.conn).session_id().map(str::to_string).into_iter().collect()
    }

    fn sessions(&self) -> Vec<mcp_sieve::protocol::Session> {
        self.listening().iter().filter_map(|id| self.session(id)).collect()
    }

    fn reachable(&self, session: &str) -> bool {
        lock(&self.conn).session_id() == Some(session)
    }

    fn push(&self, session: &str, message: String) {
        if self.reachable(session) {
            Link::send(self, message);
        }
    }

    fn ask<'a>(
        &'a self,
        ask: &'a Ask,
        method: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, mcp_sieve::Error>> {
        Box::pin(async move {
            Downstream::expect(self, ask, method)?;
            Ok(Downstream::ask(self, ask).await)
        })
    }
}

/// The client's answer to `ask`, once it came (`None` after `ask::ANSWER_WAIT_MS`).
async fn wait_for(ask: &Ask, link: &Link) -> Option<serde_json::Value> {
    let started = tokio::time::Instant::now();
    while started.elapsed() < Duration::from_millis(ask::ANSWER_WAIT_MS as u64) {
        if let Some(reply) = lock(&link.answers).take(ask) {
            return Some(reply);
        }
        tokio::time::sleep(POLL).await;
    }
    None
}

/// Sends what `w` reports, every second, while the process lives (only a gateway's lists change,
/// and a reloaded configuration's: a local catalog not watched is fixed for the process's life).
async fn watch(link: Arc<Link>, mut w: Watch) {
    if link.gateway().is_none() && !link.reloads {
        return;
    }
    loop {
        tokio::time::sleep(TICK).await;
        if let Ok(server) = link.current().await {
            for event in w.tick(&server) {
                link.send(event);
            }
        }
    }
}

/// One line of the client's — or a code-mode program's call, made in run `via` — through the
/// server: its span, rate limits and audit, the core, what it answers now; what is left to wait
/// for (a retry, a forward, a question, a watch, a program's run) comes back to be run on its own.
async fn handle(link: &Arc<Link>, line: String, via: Option<&str>) -> Option<BoxFuture<'static, ()>> {
    // The line's span (`crate::telemetry`): its log lines carry its method, id and view, and
    // with traces on it is the trace's SERVER span (its parent from `_meta.traceparent`).
    // What the line says about itself, read once for its span and its limits and audit.
    let head = Head::read(line.as_bytes());
    let log = crate::telemetry::request_span(
        "pipe",
        bytes::Bytes::copy_from_slice(line.as_bytes()),
        Some(&head),
        None,
    );
    let live = link.live();
    let label = live.view.as_ref().map_or("", |v| v.label.as_str());
    log.record(None, label, None);
    let search = crate::telemetry::is_search(&head, live.view.as_ref().is_some_and(|v| v.search));
    let asked = crate::code::asked(&head, live.view.as_ref(), line.as_bytes());
    if let Some(refusal) = log.scope(link.admit(head, via)).await {
        link.send(refusal);
        return None;
    }
    // A search's own span (traced requests), around the core that searches.
    let search = search.then(|| crate::telemetry::search_span(&log)).flatten();
    let mut step = log.scope(link.receive(&line)).await;
    crate::telemetry::searched(search, step.lines.last().map(String::as_str));
    if let Some(run) = asked.and_then(|asked| code::run(link, &log, &mut step, asked)) {
        log.in_scope(|| write(link, &mut step));
        return Some(Box::pin(log.scope(run)));
    }
    if log.in_scope(|| write(link, &mut step)) {
        return Some(Box::pin(log.scope(finish(link.clone(), line, step))));
    }
    None
}

/// Reads one line of at most `limit` bytes into `buf`; `Ok(false)` at the end of input. A longer
/// line is read to its end and dropped, leaving `buf` empty and `too_long` set.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    input: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
    too_long: &mut bool,
) -> std::io::Result<bool> {
    buf.clear();
    *too_long = false;
    let n = (&mut *input).take(limit as u64 + 1).read_until(b'\n', buf).await?;
    if n == 0 {
        return Ok(false);
    }
    if buf.len() > limit && buf.last() != Some(&b'\n') {
        *too_long = true;
        buf.clear();
        // Skip the rest of the line, a bounded chunk at a time.
        loop {
            let mut skip = Vec::new();
            let n = (&mut *input).take(64 * 1024).read_until(b'\n', &mut skip).await?;
            if n == 0 || skip.last() == Some(&b'\n') {
                break;
            }
        }
    }
    Ok(true)
}

/// Serves the catalog document `doc` over stdio through `view` until stdin closes or it is
/// terminated (SIGTERM); either way it closes every upstream session it holds first.
pub async fn run(
    doc: Document,
    source: &crate::cli::Source,
    view_args: &crate::cli::ViewArgs,
) -> Result<(), ServerError> {
    let folder = &crate::config::load::folder(source);
    let server = Arc::new(Server::new(doc.catalog(&doc.text)?));
    if server.audit().stdout {
        // Its stdout is the protocol: a record there would break the client's stream.
        return Err(ServerError::Config(
            "audit.stdout cannot be used with `mcp-sieve stdio`: its stdout carries the protocol; write the audit to a file (\"audit\": {\"file\": \"audit.jsonl\"}) or run `mcp-sieve serve`".into(),
        ));
    }
    crate::config::load::index_in_background(&server);
    let view = view_args.resolve(server.catalog())?;
    if view.as_ref().is_some_and(|v| v.search) {
        // Search mode wants the default sentence encoder: fetched (once) and loaded in the background.
        crate::search::meaning::searched();
    }
    let operate = Operate::new(&server, folder, MetricsAt::Off)?;
    let limits = http::Config::from_vars(&|name| std::env::var(name).ok())?.limits;
    let gateway = Gateway::new(server.clone(), folder, Wait::Patient, None)?;
    // Taken from here on, so a SIGTERM during the startup fetch waits for it (its session is
    // then held, and closed below) instead of killing the process.
    let mut term = crate::shutdown::terminated(false)?;
    if let Some(g) = &gateway {
        // Fetch the upstreams' lists now, so the first request does not wait (and a bad upstream shows at once).
        if let Err(e) = g.serving(&server).await {
            tracing::warn!("the upstreams are not reachable yet: {e}");
        }
        // Which upstreams are up, which failed and why (their tools are left out until they answer).
        for line in crate::progress::lines(&g.status()) {
            crate::telemetry::progress(&line);
        }
        g.keep_retrying();
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    // One writer, so messages never interleave; an empty string is the end (after what came before it).
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = rx.recv().await {
            if line.is_empty() {
                break;
            }
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break; // the client is gone
            }
        }
    });
    let reloads = !crate::reload::files(source).is_empty();
    let link = Arc::new(Link {
        live: Mutex::new(Live { server, gateway, view }),
        reloads,
        conn: Mutex::new(Connection::new(limits)),
        store: Mutex::new(MemoryStore::default()),
        answers: Mutex::new(Answers::default()),
        parked: ParkedCalls::default(),
        asking: ParkedTasks::default(),
        out: tx,
        operate,
        uses: Mutex::default(),
        programs: Mutex::default(),
    });
    // What upstreams send outside any request reaches the client (`standalone`).
    let clients: Arc<dyn Clients> = link.clone();
    if let Some(g) = &link.gateway() {
        g.attach(Arc::downgrade(&clients));
    }
    // An edit of its files is picked up (`reload`).
    let holder: Arc<dyn Holder> = link.clone();
    let watched = (source.clone(), Some(view_args.clone()));
    crate::reload::spawn(
        holder,
        Arc::downgrade(&clients),
        watched,
        "the files' paths and the view flags",
    );
    tracing::info!("serving MCP over stdio");
    let mut input = BufReader::new(tokio::io::stdin());
    let (mut buf, mut too_long) = (Vec::new(), false);
    let mut waiting = tokio::task::JoinSet::new();
    let mut running: std::collections::HashMap<String, tokio::task::AbortHandle> = std::collections::HashMap::new();
    let mut signalled = false;
    loop {
        let more = tokio::select! {
            more = read_line(&mut input, &mut buf, limits.max_body, &mut too_long) => more,
            _ = term.recv() => {
                signalled = true;
                Ok(false)
            }
        };
        if !more.map_err(|e| ServerError::Io("cannot read stdin".into(), e))? {
            break;
        }
        if too_long {
            let e = mcp_sieve::Error::InvalidRequest(format!("a message is longer than {} bytes", limits.max_body));
            link.send(mcp_sieve::protocol::jsonrpc::error(&serde_json::Value::Null, &e));
            continue;
        }
        let line = String::from_utf8_lossy(&buf).into_owned();
        // Lines are handled in order; what waits (an upstream, a task, the client's answer)
        // waits on its own, so the next line is read meanwhile.
        // The client's `notifications/cancelled` drops the call it names (its upstream request
        // with it); a request that waits is kept by its id until then.
        let msg: Option<serde_json::Value> = serde_json::from_str(&line).ok();
        let named = |k: &str| msg.as_ref().and_then(|m| m.get(k)).map(|v| v.to_string());
        if named("method").as_deref() == Some("\"notifications/cancelled\"") {
            let id = msg
                .as_ref()
                .and_then(|m| m["params"].get("requestId"))
                .map(|v| v.to_string());
            if let Some(id) = id {
                if let Some(handle) = running.remove(&id) {
                    handle.abort();
                }
                link.cancelled(&id);
            }
        }
        if let Some(rest) = handle(&link, line, None).await {
            let handle = waiting.spawn(rest);
            if let Some(id) = named("id").filter(|_| named("method").is_some()) {
                running.insert(id, handle);
            }
        }
        while waiting.try_join_next().is_some() {}
        running.retain(|_, h| !h.is_finished());
    }
    // stdin closed: answers under way get a moment to be written, then the process ends (and
    // with it the upstreams it started). Terminated (SIGTERM: a client's disposal, which ends
    // stdin and signals at once, then kills a second later), it ends at once, closing as below.
    if !signalled {
        let _ = tokio::time::timeout(crate::shutdown::GRACE, async {
            while waiting.join_next().await.is_some() {}
        })
        .await;
    }
    waiting.abort_all();
    // The client's session ends with its connection, and every upstream session the process
    // opened is closed with it: its session's, its tasks' holder's (`tasks:#`), the one its
    // stateless calls share and the lists'.
    if let Some(g) = &link.gateway() {
        let ended: Vec<_> = lock(&link.store).sessions().cloned().collect();
        crate::shutdown::close(g, &ended).await;
    }
    link.send(String::new());
    let _ = writer.await;
    Ok(())
}
