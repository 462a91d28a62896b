//! Operating the native server (issue 42): the rate limits' buckets in this process, the audit
//! sink (a JSON-lines file rotated by size, or stdout) and the metrics, around each request of
//! `serve` and each line of `stdio`: [`Operate::before`] finds the use a request makes and
//! refuses it over a limit (429 over HTTP); [`Operate::after`] (an HTTP reply) or
//! [`Operate::answered`] (a whole JSON answer, as `stdio` writes it) writes its audit record and
//! counts it. The records, refusals and reasons are built by the core (`mcp_sieve::operate`).

pub(crate) mod metrics;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::Instant;

use http_body_util::{BodyExt, Full};
use mcp_sieve::http;
use mcp_sieve::operate::audit::{self, Ended};
use mcp_sieve::operate::limits::Limiter;
use mcp_sieve::operate::Use;
use mcp_sieve::protocol::jsonrpc::Head;
use mcp_sieve::protocol::{Env, Server};
use memchr::memmem::Finder;

use crate::error::ServerError;
use crate::http::reply::{error_code, use_outcome, Reply};
use crate::operate::metrics::{labels, method_label, Counted, Counter, Method, Metrics, Outcome, UseCounted};

/// Where audit records go.
enum Sink {
    File(Mutex<Rotating>),
    Stdout,
}

/// A JSON-lines file rotated by size: `audit.jsonl` → `audit.jsonl.1` → … → `audit.jsonl.N`.
struct Rotating {
    path: PathBuf,
    file: Option<File>,
    size: u64,
    max_bytes: u64,
    keep: u32,
}

impl Rotating {
    fn open(path: PathBuf, max_bytes: u64, keep: u32) -> Result<Self, ServerError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| ServerError::Io(format!("cannot open the audit file {}", path.display()), e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Ok(Rotating {
            path,
            file: Some(file),
            size,
            max_bytes,
            keep,
        })
    }

    fn rotated(&self, n: u32) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(format!(".{n}"));
        p.into()
    }

    /// Writes one line, rotating first when it would pass `max_bytes`.
    fn write(&mut self, line: &str) -> std::io::Result<()> {
        let len = line.len() as u64 + 1;
        if self.size > 0 && self.size + len > self.max_bytes {
            self.file = None;
            if self.keep == 0 {
                std::fs::remove_file(&self.path)?;
            } else {
                let _ = std::fs::remove_file(self.rotated(self.keep));
                for n in (1..self.keep).rev() {
                    let from = self.rotated(n);
                    if from.exists() {
                        std::fs::rename(&from, self.rotated(n + 1))?;
                    }
                }
                std::fs::rename(&self.path, self.rotated(1))?;
            }
            self.size = 0;
        }
        if self.file.is_none() {
            self.file = Some(OpenOptions::new().create(true).append(true).open(&self.path)?);
        }
        let f = self
            .file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("audit file not open"))?;
        f.write_all(format!("{line}\n").as_bytes())?;
        self.size += len;
        Ok(())
    }
}

pub(crate) use crate::cli::MetricsAt;

/// What a request's operating hooks share.
pub(crate) struct Operate {
    limiter: Mutex<Limiter>,
    sink: Option<Sink>,
    /// The cap of each payload in a record, when records hold them.
    payloads: Option<usize>,
    pub(crate) metrics: Option<Metrics>,
    pub(crate) metrics_at: MetricsAt,
}

/// A use seen before the core ran, with when it started.
pub(crate) struct Seen {
    /// Its method's label (`None`: a response, or nothing counts or audits requests).
    method: Option<Method>,
    usage: Option<Use>,
    /// The name metrics count its item under when not the item's own: `unknown` (an item the
    /// server does not have), a resource's template ([`Server::counted_item`]).
    counted_as: Option<String>,
    started_ms: i64,
    started: Instant,
}

impl Seen {
    /// Marks the use as a call a code-mode program made, in run `run` (its audit record says so).
    pub(crate) fn via(&mut self, run: &str) {
        if let Some(u) = &mut self.usage {
            u.via = Some(run.to_string());
        }
    }

    /// The JSON-RPC id of the use it is, as JSON text (`None`: not a use, nothing to audit).
    pub(crate) fn use_id(&self) -> Option<String> {
        self.usage.as_ref().map(|u| u.id.to_string())
    }
}

impl Operate {
    /// The hooks for `server`'s document (`audit`, `limits`); relative audit paths are beside
    /// the document (`folder`).
    pub(crate) fn new(server: &Server, folder: &Path, metrics_at: MetricsAt) -> Result<Self, ServerError> {
        let a = server.audit();
        let sink = match (&a.file, a.stdout) {
            (Some(f), _) => Some(Sink::File(Mutex::new(Rotating::open(
                folder.join(f),
                a.max_bytes,
                a.keep,
            )?))),
            (None, true) => Some(Sink::Stdout),
            (None, false) if a.on => {
                return Err(ServerError::Config(
                    "audit needs a sink: \"file\": \"audit.jsonl\" (rotated by maxBytes, keep) or \"stdout\": true"
                        .into(),
                ))
            }
            _ => None,
        };
        Ok(Operate {
            limiter: Mutex::default(),
            sink,
            payloads: a.payload_cap(),
            metrics: (metrics_at != MetricsAt::Off).then(Metrics::default),
            metrics_at,
        })
    }

    /// Whether anything is kept per request (else the hooks do nothing).
    fn active(&self, server: &Server) -> bool {
        self.keeps_outcomes() || !server.limits().is_empty()
    }

    /// Whether requests are counted or audited (their answers read): a limit alone reads none.
    fn keeps_outcomes(&self) -> bool {
        self.sink.is_some() || self.metrics.is_some()
    }

    /// Before the core: the use the message of `head` makes, and the refusal when it is over a
    /// rate limit (already audited and counted).
    pub(crate) fn before(&self, server: &Server, head: Head, env: &Env) -> (Seen, Option<http::Response>) {
        let mut seen = Seen {
            method: None,
            usage: None,
            counted_as: None,
            started_ms: env.now_ms,
            started: Instant::now(),
        };
        if !self.active(server) {
            return (seen, None);
        }
        if self.keeps_outcomes() {
            seen.method = head.method().map(method_label);
        }
        seen.usage = server.use_in(head, env);
        let Some(u) = &seen.usage else { return (seen, None) };
        if self.metrics.is_some() {
            seen.counted_as = match server.counted_item(u) {
                Some(name) if name == u.item => None,
                Some(name) => Some(name.to_string()),
                None => Some(mcp_sieve::operate::UNKNOWN_ITEM.to_string()),
            };
        }
        if server.limits().is_empty() {
            return (seen, None);
        }
        let verdict = self
            .limiter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take_use(server.limits(), u, env.now_ms);
        match verdict {
            Ok(()) => (seen, None),
            Err(r) => {
                // Audited and counted here: what is left of it is not a use.
                let refused = Seen {
                    usage: seen.usage.take(),
                    counted_as: seen.counted_as.take(),
                    ..seen
                };
                (seen, Some(self.refuse(refused, &r)))
            }
        }
    }

    /// The answer to a use over limit `r`, audited and counted.
    #[cold]
    fn refuse(&self, seen: Seen, r: &mcp_sieve::operate::limits::Refusal) -> http::Response {
        let id = seen.usage.as_ref().map_or(&serde_json::Value::Null, |u| &u.id);
        let answer = mcp_sieve::operate::refused(r, id);
        self.finish(seen, Some(r.reason()), &Ended::of_body(&answer.body), 429);
        answer
    }

    /// After the core (and the upstream): audits and counts the request whose answer is
    /// `reply` (its JSON body read when it is whole; a stream's outcome is `unknown`).
    pub(crate) async fn after(&self, server: &Server, env: &Env, seen: Seen, reply: Reply) -> Reply {
        if seen.method.is_none() {
            return reply;
        }
        let status = reply.status().as_u16();
        if !is_json(reply.headers().get("content-type").and_then(|v| v.to_str().ok())) {
            self.finish(seen, None, &Ended::unknown(), status);
            return reply;
        }
        let (parts, body) = reply.into_parts();
        let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        self.answered(server, env, seen, &bytes, status);
        hyper::Response::from_parts(parts, Full::new(bytes).boxed())
    }

    /// [`Operate::after`] for the core's whole answer `r`, before it becomes a reply (its body is
    /// read where it is, not collected from the reply and boxed again).
    pub(crate) fn after_whole(&self, server: &Server, env: &Env, seen: Seen, r: &http::Response) {
        if seen.method.is_none() {
            return;
        }
        let content_type = r.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        if is_json(content_type.map(|(_, v)| v.as_str())) {
            self.answered(server, env, seen, r.body.as_bytes(), r.status);
        } else {
            self.finish(seen, None, &Ended::unknown(), r.status);
        }
    }

    /// After the core (and the upstream): audits and counts the request whose whole JSON answer
    /// is `bytes`, sent with HTTP `status` (200 for a line of `stdio`).
    pub(crate) fn answered(&self, server: &Server, env: &Env, seen: Seen, bytes: &[u8], status: u16) {
        if seen.method.is_none() {
            return;
        }
        // A use's answer is read whole (its outcome, its payload); any other only where an
        // error code would be (a large list is not read again).
        let ended = match &seen.usage {
            // Payloads in the record: the answer read whole.
            Some(_) if self.payloads.is_some() && self.sink.is_some() => {
                Ended::of_body(&String::from_utf8_lossy(bytes))
            }
            Some(_) => {
                let (error_code, tool_error) = use_outcome(bytes);
                Ended {
                    error_code,
                    tool_error,
                    ..Ended::default()
                }
            }
            None => Ended {
                error_code: error_code(bytes),
                ..Ended::default()
            },
        };
        // Refused when the item was not usable, or the message itself was (a string past the
        // body limits): such a use never ran.
        let refused = match &seen.usage {
            Some(u) => server.refusal_for(u, env, ended.error_code),
            None => None,
        };
        let method = seen.method;
        self.finish(seen, refused, &ended, status);
        if let Some(m) = &self.metrics {
            tokens_saved(m, server, env, method, bytes);
        }
    }

    /// A request that got no answer (a `stdio` call its client cancelled): its outcome `unknown`.
    pub(crate) fn unanswered(&self, seen: Seen) {
        self.finish(seen, None, &Ended::unknown(), 200);
    }

    /// Writes the record and counts the request.
    fn finish(&self, seen: Seen, refused: Option<String>, ended: &Ended, status: u16) {
        let elapsed = seen.started.elapsed();
        if let (Some(sink), Some(u)) = (&self.sink, &seen.usage) {
            self.audit(
                sink,
                u,
                seen.started_ms,
                elapsed.as_millis() as i64,
                refused.as_deref(),
                ended,
            );
        }
        let Some(m) = &self.metrics else { return };
        let outcome = match (status, ended.error_code, &refused) {
            (_, _, Some(_)) => Outcome::Refused,
            (200..=299, None, _) => Outcome::Ok,
            (200..=299, Some(_), _) => Outcome::Error,
            _ => Outcome::Refused,
        };
        // The use's own strings move into the count (nothing copied).
        let counted_as = seen.counted_as;
        let usage = seen.usage.map(|u| UseCounted {
            outcome: if refused.is_some() { "refused" } else { ended.outcome() },
            item: counted_as.unwrap_or(u.item),
            upstream: u.upstream,
            refused,
        });
        m.count(Counted {
            method: seen.method.unwrap_or(Method::OTHER),
            outcome,
            seconds: elapsed.as_secs_f64(),
            usage,
        });
    }

    /// Writes the audit record of use `u` to `sink`.
    fn audit(&self, sink: &Sink, u: &Use, started_ms: i64, duration: i64, refused: Option<&str>, ended: &Ended) {
        let line = audit::record(u, started_ms, duration, refused, ended, self.payloads);
        match sink {
            Sink::Stdout => println!("{line}"),
            Sink::File(f) => {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                if let Err(e) = f.write(&line) {
                    eprintln!(
                        "mcp-sieve: the audit record could not be written to {}: {e}",
                        f.path.display()
                    );
                }
            }
        }
    }

    /// The exposition text now (the gauges measured at this moment: `sessions` and `tasks` in
    /// use, and the gateway's `status`, if any).
    pub(crate) fn metrics_text(
        &self,
        (sessions, tasks): (usize, usize),
        status: Option<serde_json::Value>,
    ) -> Option<String> {
        let m = self.metrics.as_ref()?;
        let mut gauges = vec![
            ("mcp_sieve_up", Vec::new(), 1),
            ("mcp_sieve_sessions", Vec::new(), sessions as i64),
            ("mcp_sieve_tasks", Vec::new(), tasks as i64),
        ];
        if let Some(status) = status {
            for up in status["upstreams"].as_array().into_iter().flatten() {
                let name = up["name"].as_str().filter(|n| !n.is_empty()).unwrap_or("upstream");
                let state = up["state"].as_str().unwrap_or("unknown");
                for s in ["up", "down", "starting", "needs-login"] {
                    let v = i64::from(s == state);
                    gauges.push(("mcp_sieve_upstream_up", labels(&[("upstream", name), ("state", s)]), v));
                }
                let failures = up["failures"].as_i64().unwrap_or(0);
                gauges.push(("mcp_sieve_upstream_failures", labels(&[("upstream", name)]), failures));
            }
        }
        Some(m.render(&gauges))
    }
}

/// The search for the end of a list's page, built once (a searcher's set-up costs more than a short
/// answer's search).
static NEXT_CURSOR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"nextCursor\""));

/// Whether a `Content-Type` is JSON (an answer read whole; else a stream, whose outcome is
/// unknown here).
fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|v| v.starts_with("application/json"))
}

/// Counts the tokens a whole, unfiltered `tools/list` page would have sent beyond what this one
/// sent, when a view or search mode narrowed it (estimated at four bytes a token).
fn tokens_saved(m: &Metrics, server: &Server, env: &Env, method: Option<Method>, body: &[u8]) {
    let Some(view) = env.view.as_ref().filter(|_| method == Some(method_label("tools/list"))) else {
        return;
    };
    // A page with more to come is not the whole list: `nextCursor` ends the result.
    let tail = &body[body.len().saturating_sub(1024)..];
    if NEXT_CURSOR.find(tail).is_some() {
        return;
    }
    let full: usize = server
        .catalog()
        .section(mcp_sieve::model::Kind::Tool)
        .items
        .iter()
        .map(|t| t.fragment().len() + 1)
        .sum();
    if full > body.len() {
        let how = if view.search { "search" } else { "view" };
        m.add(
            Counter::TokensSaved,
            labels(&[("how", how)]),
            ((full - body.len()) / 4) as u64,
        );
    }
}
