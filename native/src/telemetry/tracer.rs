//! Spans being made ([`Traced`], issue 42), the finished ones waiting to be exported, and the
//! thread exporting them in batches, as the OpenTelemetry batch span processor does and
//! configured by its variables: a batch goes when `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans wait
//! (default 512) or `OTEL_BSP_SCHEDULE_DELAY` ms passed (default 5000); past
//! `OTEL_BSP_MAX_QUEUE_SIZE` waiting (default 2048) a span is dropped (a request never waits for
//! the collector). A finished span costs its request one push under a lock; encoding and posting
//! are this thread's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::telemetry::otlp::Exporter;
use crate::telemetry::spans::{next_random, Attr, Kind, Record, SpanContext};

/// The queue, once traces are on.
static QUEUE: OnceLock<Queue> = OnceLock::new();

/// Told when the thread has exported the last spans (after [`shutdown`] asked it to stop).
static DONE: Mutex<Option<mpsc::Receiver<()>>> = Mutex::new(None);

/// How often dropped spans are said at most.
const DROPS_SAID: Duration = Duration::from_secs(60);

/// Longest [`shutdown`] waits for the last export.
const LAST_EXPORT: Duration = Duration::from_secs(5);

struct Queue {
    spans: Mutex<Vec<Record>>,
    wake: Condvar,
    max_queue: usize,
    max_batch: usize,
    delay: Duration,
    stopping: AtomicBool,
    dropped: AtomicU64,
}

/// Starts the thread exporting finished spans through `exporter`.
pub fn start(exporter: Exporter) -> Result<(), String> {
    let ms = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(default)
    };
    let max_queue = ms("OTEL_BSP_MAX_QUEUE_SIZE", 2048).max(1) as usize;
    let queue = Queue {
        spans: Mutex::new(Vec::new()),
        wake: Condvar::new(),
        max_queue,
        max_batch: (ms("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512).max(1) as usize).min(max_queue),
        delay: Duration::from_millis(ms("OTEL_BSP_SCHEDULE_DELAY", 5000)),
        stopping: AtomicBool::new(false),
        dropped: AtomicU64::new(0),
    };
    QUEUE.set(queue).map_err(|_| "traces were started twice".to_string())?;
    let (done, waiter) = mpsc::channel();
    *DONE.lock().unwrap_or_else(|p| p.into_inner()) = Some(waiter);
    std::thread::Builder::new()
        .name("mcp-sieve-spans".into())
        .spawn(move || {
            if let Some(q) = QUEUE.get() {
                q.run(&exporter);
            }
            let _ = done.send(());
        })
        .map(drop)
        .map_err(|e| format!("cannot start the span exporter's thread: {e}"))
}

/// Queues a finished span (dropped when traces are off or the queue is full).
pub fn finished(span: Record) {
    if let Some(q) = QUEUE.get() {
        q.push(span);
    }
}

/// Exports the spans still waiting (for at most a few seconds), then stops the thread.
pub fn shutdown() {
    let Some(q) = QUEUE.get() else { return };
    {
        // Under the queue's lock, so the thread cannot miss it between looking and waiting.
        let _spans = q.spans.lock().unwrap_or_else(|p| p.into_inner());
        q.stopping.store(true, Ordering::Relaxed);
    }
    q.wake.notify_one();
    if let Some(done) = DONE.lock().unwrap_or_else(|p| p.into_inner()).take() {
        if done.recv_timeout(LAST_EXPORT).is_err() {
            tracing::warn!("the last spans were not exported within {} s", LAST_EXPORT.as_secs());
        }
    }
}

impl Queue {
    fn push(&self, span: Record) {
        let mut spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        if spans.len() >= self.max_queue {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        spans.push(span);
        if spans.len() == self.max_batch {
            self.wake.notify_one();
        }
    }

    /// The thread: waits for a batch or the delay, exports, until stopped and empty.
    fn run(&self, exporter: &Exporter) {
        let mut failing = false;
        let mut warned: Option<Instant> = None;
        loop {
            let (spans, stopping) = {
                let mut spans = self.spans.lock().unwrap_or_else(|p| p.into_inner());
                let deadline = Instant::now() + self.delay;
                loop {
                    let stopping = self.stopping.load(Ordering::Relaxed);
                    let now = Instant::now();
                    if stopping || spans.len() >= self.max_batch || now >= deadline {
                        break;
                    }
                    spans = self
                        .wake
                        .wait_timeout(spans, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                (std::mem::take(&mut *spans), self.stopping.load(Ordering::Relaxed))
            };
            for batch in spans.chunks(self.max_batch) {
                match exporter.export(batch) {
                    Ok(()) if failing => {
                        failing = false;
                        tracing::info!("traces are exported again");
                    }
                    Ok(()) => {}
                    // Said once until an export succeeds again (not once a batch).
                    Err(e) if !failing => {
                        failing = true;
                        tracing::warn!("traces could not be exported: {e}");
                    }
                    Err(_) => {}
                }
            }
            // Drops said at most once a minute, with how many.
            if self.dropped.load(Ordering::Relaxed) > 0 && warned.is_none_or(|w| w.elapsed() >= DROPS_SAID) {
                warned = Some(Instant::now());
                tracing::warn!(
                    "{} spans dropped: more than OTEL_BSP_MAX_QUEUE_SIZE={} waited for export",
                    self.dropped.swap(0, Ordering::Relaxed),
                    self.max_queue
                );
            }
            if stopping && self.spans.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
                return;
            }
        }
    }
}

/// A span being made, exported when dropped (its end then).
pub struct Traced {
    record: Mutex<Option<Record>>,
    /// Its ids (a child's parent, the context passed on).
    pub context: SpanContext,
}

impl Traced {
    /// A span started now: a child of `parent`, else the root of a new trace.
    pub fn start(
        kind: Kind,
        name: String,
        parent: Option<&SpanContext>,
        attributes: Vec<(&'static str, Attr)>,
    ) -> Self {
        let (trace_id, state) = match parent {
            Some(p) => (p.trace_id, p.state.clone()),
            None => (new_trace_id(), String::new()),
        };
        let context = SpanContext {
            trace_id,
            span_id: nonzero().to_be_bytes(),
            flags: 1,
            state,
            remote: false,
        };
        let record = Record {
            context: context.clone(),
            parent: parent.map(|p| (p.span_id, p.remote)),
            kind,
            name,
            start: SystemTime::now(),
            end: SystemTime::UNIX_EPOCH,
            attributes,
            failed: false,
        };
        Traced {
            record: Mutex::new(Some(record)),
            context,
        }
    }

    /// Sets `attributes` (one already set is set again: the last value counts).
    pub fn set(&self, attributes: impl IntoIterator<Item = (&'static str, Attr)>) {
        let mut record = self.record.lock().unwrap_or_else(|p| p.into_inner());
        let Some(r) = record.as_mut() else { return };
        for (k, v) in attributes {
            match r.attributes.iter_mut().find(|(key, _)| *key == k) {
                Some(slot) => slot.1 = v,
                None => r.attributes.push((k, v)),
            }
        }
    }

    /// Marks it failed (`error.type` `why`, status ERROR), with `attributes` beside.
    pub fn failed(&self, why: String, attributes: impl IntoIterator<Item = (&'static str, Attr)>) {
        self.set(attributes.into_iter().chain([("error.type", Attr::from(why))]));
        if let Some(r) = self.record.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            r.failed = true;
        }
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        let record = self.record.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut r) = record {
            r.end = SystemTime::now();
            finished(r);
        }
    }
}

/// A random number that is not 0 (an id).
fn nonzero() -> u64 {
    loop {
        let n = next_random();
        if n != 0 {
            return n;
        }
    }
}

/// A new trace's id.
fn new_trace_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&next_random().to_be_bytes());
    id[8..].copy_from_slice(&nonzero().to_be_bytes());
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_keeps_its_parents_trace_and_a_root_starts_one() {
        let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let parent = SpanContext::remote(tp, Some("k=v")).unwrap();
        let child = Traced::start(Kind::Client, "x".into(), Some(&parent), Vec::new());
        assert_eq!(child.context.trace_id, parent.trace_id);
        assert_ne!(child.context.span_id, parent.span_id);
        assert_eq!(child.context.state, "k=v");
        assert!(!child.context.remote && child.context.sampled());
        let r = child.record.lock().unwrap().clone().unwrap();
        assert_eq!(r.parent, Some((parent.span_id, true)));
        let root = Traced::start(Kind::Server, "y".into(), None, Vec::new());
        assert_ne!(root.context.trace_id, parent.trace_id);
        assert_ne!(root.context.trace_id, [0; 16]);
        assert_eq!(root.record.lock().unwrap().as_ref().unwrap().parent, None);
    }

    #[test]
    fn an_attribute_set_again_keeps_the_last_value_and_failing_marks_the_status() {
        let t = Traced::start(Kind::Server, "x".into(), None, vec![("a", Attr::Int(1))]);
        t.set([("a", Attr::Int(2)), ("b", "x".into())]);
        t.failed("-32602".into(), [("rpc.response.status_code", Attr::Int(-32602))]);
        let r = t.record.lock().unwrap().clone().unwrap();
        assert_eq!(
            r.attributes,
            [
                ("a", Attr::Int(2)),
                ("b", Attr::from("x")),
                ("rpc.response.status_code", Attr::Int(-32602)),
                ("error.type", Attr::from("-32602".to_string())),
            ]
        );
        assert!(r.failed);
    }
}
