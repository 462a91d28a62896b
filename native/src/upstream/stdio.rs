//! The stdio driver: one child process per stdio upstream, speaking newline-delimited JSON-RPC
//! on its stdin/stdout, its stderr copied to the log line by line with the upstream's name.
//!
//! It moves the bytes of the core's conversation (each `Post` body is one message) and nothing
//! else, with what a pipe needs that HTTP gave for free:
//! - **one session for everyone**: a process is one MCP session, so the driver opens it itself
//!   (`initialize` + `notifications/initialized`) when the process starts, answers every
//!   conversation's `initialize` with that result and swallows their `notifications/initialized`
//!   (and answers their `server/discover` with `-32601`: the shared session is the era they use).
//!   All downstream sessions share the process; what is per session stays in the core (each
//!   downstream session's upstream tasks are its own, `OwnedTask`).
//! - **ids that cannot clash**: every request gets a driver-wide id on the way in and its own id
//!   back on the way out; the upstream's requests to us are answered, never left hanging: `ping`
//!   here, a question (`sampling/createMessage`, `elicitation/create`) by the client of the call
//!   it belongs to (`attribution`: the relaying call it names by `_meta.progressToken` or the
//!   related task, else the one relaying call in flight only when every call the process was
//!   sent came from that call's principal; otherwise it is refused with `-32603`, never put to a
//!   client it may not belong to); what its relay does not carry is refused by the relay.
//!   Progress notifications go to every relaying call (each keeps only its own token, unique to
//!   the call). Log messages (`notifications/message`) go to the server's log with the
//!   upstream's name, and to every downstream session whose client set a logging level at or
//!   below theirs (on its standalone stream, `standalone`): the process's one session is
//!   everyone's, and a pipe does not say which call, if any, a message is about.
//! - **restart with backoff**: when the process exits, its pending requests fail naming the
//!   upstream and the exit; a message sent later starts it again, but no sooner than the backoff
//!   after the exit (1 s, doubled each time it lived less than 30 s, at most 30 s): until then
//!   messages fail at once, the core takes the upstream out of the lists and retries it. The
//!   process is killed when the server stops (and sees its stdin close if the server is killed).
//! - **a clean environment**: the process gets only [`INHERITED_ENV`] of the gateway's (the
//!   official SDK's default list) and its own `env`, never the gateway's secrets.
//! - **garbage is a cause, not a wait**: a process that writes something other than JSON-RPC on
//!   stdout and has not answered `initialize` [`GARBAGE_GRACE`] later is down at once, the cause
//!   quoting what it wrote (a banner line followed by a prompt answer is forgiven).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_sieve::upstream::{relayed_capabilities, HttpAnswer, Post, PROTOCOL_VERSION};
use mcp_sieve::Error;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::relay::Relaying;

mod attribution;
use attribution::{Call, Calls};

/// Longest one message may be, bytes (a longer line is refused and the process restarted).
const MAX_LINE: usize = 16 << 20;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A process that lived this long before exiting starts again without backoff.
const HEALTHY: Duration = Duration::from_secs(30);
/// How long a process that wrote something other than JSON-RPC on stdout still has to answer
/// `initialize` (a banner line is forgiven; a process that only writes garbage is down in 2 s,
/// not at the exchange deadline).
const GARBAGE_GRACE: Duration = Duration::from_secs(2);
/// How often the start looks at what the reader saw.
const POLL: Duration = Duration::from_millis(50);
/// Lines that are not JSON-RPC logged per process (the rest are counted, not shown).
const GARBAGE_LOGGED: usize = 3;

mod resolve;

/// The variables of the gateway's environment a stdio upstream inherits: the official MCP SDK's
/// default list (`getDefaultEnvironment` of its stdio client transport). Nothing else reaches the
/// process but its own `env`: the gateway's environment holds `MCP_SIEVE_TOKENS`,
/// `MCP_SIEVE_SESSION_SECRET` and every secret the other upstreams' headers reference.
#[cfg(not(windows))]
pub const INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
#[cfg(windows)]
pub const INHERITED_ENV: [&str; 12] = [
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The gateway's values of [`INHERITED_ENV`] (a value that is a shell function, `()…`, is left
/// out, as the SDK does).
fn inherited_env() -> Vec<(&'static str, std::ffi::OsString)> {
    INHERITED_ENV
        .iter()
        .filter_map(|k| Some((*k, std::env::var_os(k)?)))
        .filter(|(_, v)| !v.to_string_lossy().starts_with("()"))
        .collect()
}

/// How to start the process (two are the same process when all of it is equal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The upstream's name (for the log and errors).
    pub name: String,
    /// Program, arguments, its own environment (on top of [`INHERITED_ENV`]), working directory.
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
}

/// Where a process's log messages go and what is redacted from what it says: its gateway's, and
/// the next gateway's when a reload keeps the process ([`Pipe::adopt`]).
#[derive(Debug, Clone)]
pub struct Route {
    /// Its index among the gateway's upstreams, and the gateway's channel.
    pub logs: (usize, mpsc::UnboundedSender<(usize, Value)>),
    /// The gateway's secrets, redacted from what it writes to stderr and logs.
    pub secrets: mcp_sieve::upstream::Secrets,
}

type Routed = Arc<Mutex<Route>>;

/// One running process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    /// Set by the reader when stdout ends.
    dead: Arc<AtomicBool>,
    /// The `initialize` result of this process's session.
    initialize: Value,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;
/// The forwarded calls in flight that relay what the process asks or tells meanwhile, by our id,
/// and whose calls the process was sent (`attribution`).
type Listeners = Arc<Mutex<Calls>>;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
/// The first line a process wrote on stdout that is not JSON-RPC (shortened), and when.
type Garbage = Arc<Mutex<Option<(String, Instant)>>>;

/// A process's lifetimes, for the backoff.
struct Life {
    started: Option<Instant>,
    died: Option<Instant>,
    backoff: Duration,
}

/// One stdio upstream, started on first use.
pub struct Pipe {
    spec: Spec,
    /// The gateway its log messages go to (read by its readers at each message).
    route: Routed,
    process: tokio::sync::Mutex<Option<Process>>,
    pending: Pending,
    listeners: Listeners,
    /// Writes our answers to the process's requests (set while it runs).
    answers: Arc<Mutex<Option<std::sync::mpsc::Sender<Value>>>>,
    next_id: AtomicU64,
    /// A list change the process announced, given to the next answer.
    changed: Arc<AtomicBool>,
    /// When the process last started and exited, and the wait before the next start.
    life: Arc<Mutex<Life>>,
    /// The running process's id (0: none), cleared by the reader when it exits.
    pid: Arc<AtomicU32>,
    /// Set by `stop`: the process is not started again.
    stopped: AtomicBool,
}

impl Pipe {
    /// A driver for `spec` whose messages go by `route`; nothing starts until the first message.
    pub fn new(spec: Spec, route: Route) -> Self {
        Pipe {
            route: Arc::new(Mutex::new(route)),
            spec,
            process: tokio::sync::Mutex::new(None),
            pending: Arc::default(),
            listeners: Arc::default(),
            answers: Arc::default(),
            next_id: AtomicU64::new(1),
            changed: Arc::default(),
            life: Arc::new(Mutex::new(Life {
                started: None,
                died: None,
                backoff: FIRST_BACKOFF,
            })),
            pid: Arc::default(),
            stopped: AtomicBool::new(false),
        }
    }

    /// Whether this pipe runs (or would start) the process `spec` describes, and may go on
    /// serving a gateway that a reload built over it: not stopped, the same process.
    pub fn runs(&self, spec: &Spec) -> bool {
        !self.stopped.load(Ordering::SeqCst) && self.spec == *spec
    }

    /// Carries on under a reload's new gateway: its log messages go by `route` (the upstream's
    /// place and channel there, that gateway's secrets redacted), and nothing more to the old
    /// one. The process, its session and its calls in flight are untouched.
    pub fn adopt(&self, route: Route) {
        *locked(&self.route) = route;
    }

    /// Stops the process for good (a reload left this upstream out or replaced it).
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let process = self.process.lock().await.take();
        // Killed and waited for on a blocking thread (`Process`'s drop).
        let _ = tokio::task::spawn_blocking(move || drop(process)).await;
        self.pid.store(0, Ordering::SeqCst);
    }

    /// An error of this upstream (the core adds its name).
    fn fail(&self, why: impl std::fmt::Display) -> Error {
        Error::Upstream(why.to_string())
    }

    /// The pid of the running process, if any (for tests and the status).
    pub fn pid(&self) -> Option<u32> {
        Some(self.pid.load(Ordering::SeqCst)).filter(|p| *p != 0)
    }

    /// Sends one message and waits for its response, all within `deadline` from now (what the
    /// process asks or tells meanwhile, carried by `relaying` to the call's client, does not
    /// restart it), as an HTTP-shaped answer. A request given up (the deadline passed, or the
    /// caller dropped this future: its client went away) is cancelled at the process
    /// (`notifications/cancelled`).
    pub async fn post(
        &self,
        post: Post,
        deadline: Duration,
        relaying: Option<&mut Relaying<'_>>,
    ) -> Result<HttpAnswer, Error> {
        let until = tokio::time::Instant::now() + deadline;
        let msg: Value = serde_json::from_str(&post.body).map_err(|e| self.fail(e))?;
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        let id = msg.get("id").cloned();
        let mut guard = self.process.lock().await;
        if self.stopped.load(Ordering::SeqCst) {
            return Err(self.fail("it was stopped: the configuration was reloaded without it"));
        }
        if guard.as_ref().is_none_or(|p| p.dead.load(Ordering::SeqCst)) {
            *guard = None;
            *guard = Some(self.start(deadline).await?);
            // What the new process asks concerns the calls sent to it (`attribution`).
            locked(&self.listeners).started();
        }
        let process = guard.as_mut().ok_or_else(|| self.fail("it is not running"))?;
        if method == "server/discover" {
            // The driver's one session is of the legacy era (it opened it with `initialize`):
            // every conversation speaks in it, without asking the process.
            let refusal = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                "message": "a stdio upstream is spoken to in the session the driver opened"}});
            return Ok(self.answer(vec![refusal]));
        }
        if method == "initialize" {
            // The process's session is open already: every conversation shares it.
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": process.initialize});
            return Ok(self.answer(vec![reply]));
        }
        let Some(id) = id else {
            if method != "notifications/initialized" {
                write(&mut process.stdin, &msg).map_err(|e| self.fail(e))?;
            }
            return Ok(HttpAnswer {
                status: 202,
                ..HttpAnswer::default()
            });
        };
        let ours = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut out = msg.clone();
        out["id"] = json!(ours);
        let (tx, mut rx) = oneshot::channel();
        locked(&self.pending).insert(ours, tx);
        let (events_tx, mut events) = mpsc::unbounded_channel();
        if let Some(r) = relaying.as_deref() {
            let meta = &msg["params"]["_meta"];
            locked(&self.listeners).add(
                ours,
                Call {
                    to: events_tx,
                    token: meta.get("progressToken").filter(|t| !t.is_null()).cloned(),
                    task: msg["params"].get("taskId").cloned(),
                    owner: r.owner().map(str::to_string),
                },
            );
        }
        if let Err(e) = write(&mut process.stdin, &out) {
            locked(&self.pending).remove(&ours);
            locked(&self.listeners).remove(ours);
            return Err(self.fail(format!("cannot write to the process: {e}")));
        }
        drop(guard);
        // Until it is answered: given up, it is forgotten here and cancelled at the process.
        let mut asking = Asking {
            pipe: self,
            id: ours,
            answered: false,
        };
        let mut relaying = relaying;
        let got = loop {
            // What came before the response is relayed before it.
            tokio::select! {
                biased;
                Some(msg) = events.recv() => self.relay(msg, relaying.as_deref_mut()).await,
                got = &mut rx => break Some(got),
                _ = tokio::time::sleep_until(until) => break None,
            }
        };
        asking.answered = matches!(got, Some(Ok(_)));
        locked(&self.listeners).remove(ours);
        while let Ok(msg) = events.try_recv() {
            self.relay(msg, relaying.as_deref_mut()).await;
        }
        let mut reply = match got {
            Some(Ok(r)) => r,
            Some(Err(_)) => return Err(self.fail("the process exited before it answered")),
            None => {
                return Err(crate::error::late(&method, deadline.as_millis() as u64));
            }
        };
        drop(asking);
        reply["id"] = id;
        Ok(self.answer(vec![reply]))
    }

    /// Relays `msg`, which the process sent while a call was in flight, to that call's client;
    /// the answer, if any, goes back to the process.
    async fn relay(&self, msg: Value, relaying: Option<&mut Relaying<'_>>) {
        let Some(r) = relaying else {
            return;
        };
        if let (Some(a), Some(w)) = (r.handle(msg).await, locked(&self.answers).as_ref()) {
            let _ = w.send(a);
        }
    }

    /// The messages as an SSE answer, with a list change the process announced since the last.
    fn answer(&self, mut messages: Vec<Value>) -> HttpAnswer {
        if self.changed.swap(false, Ordering::SeqCst) {
            messages.insert(
                0,
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            );
        }
        let body: String = messages
            .iter()
            .map(|m| format!("event: message\ndata: {m}\n\n"))
            .collect();
        HttpAnswer {
            status: 200,
            session: None,
            content_type: "text/event-stream".into(),
            body,
        }
    }

    /// Starts the process (no sooner than the backoff after it last exited) and opens its session.
    async fn start(&self, deadline: Duration) -> Result<Process, Error> {
        {
            let mut l = self.life.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(died) = l.died {
                if died.elapsed() < l.backoff {
                    // Not yet: the caller fails now, and the core tries again later.
                    let left = l.backoff - died.elapsed();
                    return Err(self.fail(format!(
                        "its process exited; it is started again in {} ms",
                        left.as_millis()
                    )));
                }
                // A process that lived a while starts the next time with the first backoff.
                let lived = l.started.map(|s| died.duration_since(s)).unwrap_or_default();
                l.backoff = if lived >= HEALTHY {
                    FIRST_BACKOFF
                } else {
                    (l.backoff * 2).min(MAX_BACKOFF)
                };
            }
            l.started = Some(Instant::now());
            l.died = None;
        }
        let spec = &self.spec;
        // Found as the OS finds it (`npx` is `npx.cmd` on Windows): `resolve`.
        let cwd = match &spec.cwd {
            Some(d) => std::path::PathBuf::from(d),
            None => std::env::current_dir().unwrap_or_default(),
        };
        let program = resolve::program(&spec.command, resolve::child_path(&spec.env).as_deref(), &cwd);
        let mut cmd = Command::new(program);
        cmd.args(&spec.args)
            .env_clear()
            .envs(inherited_env())
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(d) = &spec.cwd {
            cmd.current_dir(d);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| self.fail(format!("cannot start \"{}\": {e}", spec.command)))?;
        tracing::info!("[{}] started \"{}\" (pid {})", spec.name, spec.command, child.id());
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.fail("its pipes could not be opened"));
        };
        let name = spec.name.clone();
        let route = self.route.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let secrets = locked(&route).secrets.clone();
                tracing::info!("[{name}] {}", secrets.redact(&line));
            }
        });
        let dead = Arc::new(AtomicBool::new(false));
        self.pid.store(child.id(), Ordering::SeqCst);
        let (init_tx, mut init_rx) = oneshot::channel();
        let garbage: Garbage = Arc::default();
        let reader = Reader {
            name: spec.name.clone(),
            pending: self.pending.clone(),
            listeners: self.listeners.clone(),
            changed: self.changed.clone(),
            dead: dead.clone(),
            pid: self.pid.clone(),
            life: self.life.clone(),
            init: Some(init_tx),
            garbage: garbage.clone(),
            route: self.route.clone(),
        };
        // Answers to the upstream's own requests go through a second handle on stdin.
        let (answers_tx, answers_rx) = std::sync::mpsc::channel::<Value>();
        *locked(&self.answers) = Some(answers_tx.clone());
        std::thread::spawn(move || reader.run(stdout, answers_tx));
        let mut process = Process {
            child,
            stdin,
            dead,
            initialize: Value::Null,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL_VERSION,
            // What its calls' clients can be asked (see `relay`).
            "capabilities": relayed_capabilities(),
            "clientInfo": {"name": "mcp-sieve-gateway", "version": env!("CARGO_PKG_VERSION")},
        }});
        write(&mut process.stdin, &init).map_err(|e| self.fail(format!("cannot write to the process: {e}")))?;
        let started = Instant::now();
        let answer = loop {
            tokio::select! {
                a = &mut init_rx => match a {
                    Ok(a) => break a,
                    Err(_) => return Err(self.fail(match garbage.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                        Some((line, _)) => format!("the process exited during initialize, after writing what is not JSON-RPC on stdout: \"{line}\""),
                        None => "the process exited during initialize".into(),
                    })),
                },
                _ = tokio::time::sleep(POLL) => {
                    let seen = garbage.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    if let Some((line, _)) = seen.filter(|(_, at)| at.elapsed() >= GARBAGE_GRACE) {
                        return Err(self.fail(format!(
                            "it writes what is not JSON-RPC on stdout (\"{line}\") and did not answer initialize; an MCP server over stdio writes only JSON-RPC messages there (logs go to stderr)"
                        )));
                    }
                    if started.elapsed() >= deadline {
                        return Err(self.fail(format!("it did not answer initialize within {} s", deadline.as_secs())));
                    }
                }
            }
        };
        let result = match (answer.get("result"), answer.get("error")) {
            (Some(r), _) => r.clone(),
            (_, Some(e)) => return Err(self.fail(format!("it refused initialize: {e}"))),
            _ => return Err(self.fail("its answer to initialize has no result")),
        };
        process.initialize = result;
        write(
            &mut process.stdin,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .map_err(|e| self.fail(e))?;
        // The writer of answers to the upstream's requests, on a clone of the stdin handle.
        if let Ok(fd) = process.stdin.try_clone_handle() {
            std::thread::spawn(move || {
                let mut fd = fd;
                for m in answers_rx {
                    if write(&mut fd, &m).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(process)
    }
}

/// A request sent to the process and not yet answered: dropped unanswered (its deadline passed,
/// or its caller went away), it is forgotten and the process is told to stop working on it.
struct Asking<'a> {
    pipe: &'a Pipe,
    id: u64,
    answered: bool,
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        locked(&self.pipe.pending).remove(&self.id);
        locked(&self.pipe.listeners).remove(self.id);
        if !self.answered {
            if let Some(w) = locked(&self.pipe.answers).as_ref() {
                let _ = w.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": self.id, "reason": "the gateway's caller gave up (deadline or gone)"}}));
            }
        }
    }
}

/// A clone of a `ChildStdin`'s file handle (a unix fd, a Windows handle), so a second thread can
/// write to it.
trait CloneHandle {
    fn try_clone_handle(&self) -> std::io::Result<std::fs::File>;
}

impl CloneHandle for ChildStdin {
    fn try_clone_handle(&self) -> std::io::Result<std::fs::File> {
        #[cfg(unix)]
        let owned = std::os::fd::AsFd::as_fd(self).try_clone_to_owned()?;
        #[cfg(windows)]
        let owned = std::os::windows::io::AsHandle::as_handle(self).try_clone_to_owned()?;
        Ok(std::fs::File::from(owned))
    }
}

fn write(to: &mut impl Write, msg: &Value) -> std::io::Result<()> {
    let mut line = msg.to_string();
    line.push('\n');
    to.write_all(line.as_bytes())?;
    to.flush()
}

/// Reads the process's stdout line by line.
struct Reader {
    name: String,
    pending: Pending,
    listeners: Listeners,
    changed: Arc<AtomicBool>,
    dead: Arc<AtomicBool>,
    pid: Arc<AtomicU32>,
    life: Arc<Mutex<Life>>,
    init: Option<oneshot::Sender<Value>>,
    garbage: Garbage,
    route: Routed,
}

impl Reader {
    fn run(mut self, stdout: std::process::ChildStdout, answers: std::sync::mpsc::Sender<Value>) {
        let mut lines = BufReader::new(stdout);
        let mut buf = Vec::new();
        let mut garbage_lines = 0usize;
        loop {
            buf.clear();
            match std::io::Read::take(&mut lines, MAX_LINE as u64 + 1).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) if buf.len() > MAX_LINE => {
                    tracing::warn!(
                        "[{}] a message longer than {MAX_LINE} bytes: stopping the process",
                        self.name
                    );
                    break;
                }
                Ok(_) => {}
            }
            let Ok(msg) = serde_json::from_slice::<Value>(&buf) else {
                let text = String::from_utf8_lossy(&buf);
                let text = text.trim();
                if !text.is_empty() {
                    garbage_lines += 1;
                    if garbage_lines <= GARBAGE_LOGGED {
                        let secrets = locked(&self.route).secrets.clone();
                        let text = secrets.redact(text);
                        tracing::warn!("[{}] not JSON-RPC on stdout: {text}", self.name);
                    }
                    let mut first = self.garbage.lock().unwrap_or_else(|p| p.into_inner());
                    if first.is_none() {
                        let short: String = text.chars().take(80).collect();
                        *first = Some((short, Instant::now()));
                    }
                }
                continue;
            };
            self.take(msg, &answers);
        }
        self.dead.store(true, Ordering::SeqCst);
        self.pid.store(0, Ordering::SeqCst);
        self.life.lock().unwrap_or_else(|p| p.into_inner()).died = Some(Instant::now());
        // Pending requests fail at once: dropping their senders wakes them.
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
        tracing::warn!("[{}] the process exited", self.name);
    }

    fn take(&mut self, msg: Value, answers: &std::sync::mpsc::Sender<Value>) {
        let answers_us = msg.get("result").is_some() || msg.get("error").is_some();
        match (msg.get("id").cloned(), msg["method"].as_str()) {
            (Some(id), _) if answers_us => {
                if id == json!(0) {
                    if let Some(tx) = self.init.take() {
                        let _ = tx.send(msg);
                    }
                    return;
                }
                let tx = id
                    .as_u64()
                    .and_then(|i| self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&i));
                if let Some(tx) = tx {
                    let _ = tx.send(msg);
                }
            }
            (Some(id), Some(method)) => {
                // The upstream asks us something: a ping is answered here; the rest relayed (its
                // relay refuses what it does not relay) only by the call it belongs to
                // (`attribution`), otherwise refused, never put to a client whose call it may not
                // be (a late question of a call that returned, while another principal's call
                // runs, is not that principal's).
                if method == "ping" {
                    let _ = answers.send(json!({"jsonrpc": "2.0", "id": id, "result": {}}));
                    return;
                }
                let why = match locked(&self.listeners).attribute(&msg) {
                    // Not taken: the call ended meanwhile.
                    Ok(to) => match to.send(msg.clone()) {
                        Ok(()) => return,
                        Err(_) => attribution::Unattributed::NoCall,
                    },
                    Err(why) => why,
                };
                let _ = answers.send(why.refusal(&id, method));
            }
            (None, Some(method)) if method.ends_with("/list_changed") => self.changed.store(true, Ordering::SeqCst),
            (None, Some("notifications/progress")) => {
                // Each relaying call keeps the progress of its own token only.
                for to in locked(&self.listeners).all() {
                    let _ = to.send(msg.clone());
                }
            }
            (None, Some("notifications/message")) => {
                // The shared session's log: the server's log, and the sessions that set a level.
                let p = &msg["params"];
                let data = p["data"].as_str().map_or_else(|| p["data"].to_string(), str::to_string);
                let level = p["level"].as_str().unwrap_or("info");
                let Route { logs, secrets } = locked(&self.route).clone();
                tracing::info!("[{}] log {level}: {}", self.name, secrets.redact(&data));
                let mut msg = msg;
                secrets.redact_value(&mut msg);
                let _ = logs.1.send((logs.0, msg));
            }
            // Other notifications concern the shared session, not a call.
            _ => {}
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A process that opens its session, then writes a log message every 100 ms (naming itself).
    const LOGGER: &str = r#"read line
echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{}},"serverInfo":{"name":"logger","version":"1"}}}'
while true; do echo "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"from $$\"}}"; sleep 0.1; done"#;

    fn spec(script: &str) -> Spec {
        Spec {
            name: "logger".into(),
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: Vec::new(),
            cwd: None,
        }
    }

    fn route(member: usize, logs: &mpsc::UnboundedSender<(usize, Value)>) -> Route {
        Route {
            logs: (member, logs.clone()),
            secrets: mcp_sieve::upstream::Secrets::default(),
        }
    }

    /// The next log message on `rx` within 5 s: its member and its text.
    async fn next(rx: &mut mpsc::UnboundedReceiver<(usize, Value)>) -> (usize, String) {
        let (member, msg) = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("a log message within 5 s")
            .expect("the channel open");
        (member, msg["params"]["data"].as_str().unwrap_or_default().to_string())
    }

    #[tokio::test]
    async fn an_adopted_process_logs_to_its_new_gateway_and_runs_on() {
        let (old_tx, mut old_rx) = mpsc::unbounded_channel();
        let pipe = Pipe::new(spec(LOGGER), route(0, &old_tx));
        drop(old_tx);
        let started = Post {
            headers: Vec::new(),
            body: r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        };
        pipe.post(started, Duration::from_secs(5), None).await.unwrap();
        let pid = pipe.pid().unwrap();
        assert_eq!(next(&mut old_rx).await, (0, format!("from {pid}")));

        // The same process under another gateway, where it is member 3.
        let (new_tx, mut new_rx) = mpsc::unbounded_channel();
        assert!(pipe.runs(&spec(LOGGER)));
        assert!(!pipe.runs(&spec("exit 1")), "another command is another process");
        pipe.adopt(route(3, &new_tx));
        assert_eq!(next(&mut new_rx).await, (3, format!("from {pid}")));
        // The old gateway's channel closes once what was on its way is read: the pipe holds no
        // sender of it any more (the old gateway's log task ends).
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(m) = old_rx.recv().await {
                assert_eq!(m.0, 0);
            }
        });
        closed.await.expect("the old channel closed");
        assert_eq!(pipe.pid(), Some(pid), "the process runs on");

        pipe.stop().await;
        assert!(!pipe.runs(&spec(LOGGER)), "a stopped pipe is not taken over");
    }
}
