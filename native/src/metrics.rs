//! Prometheus metrics of the native server, written by hand in the text exposition format 0.0.4
//! (counters and histograms in one shard per thread, each under its own lock, summed when
//! scraped; a request queued in its shard and added to the series with the shard's next
//! [`PENDING`], or at the scrape; no HTTP stack of their own): requests by
//! method and outcome, uses by tool, upstream and outcome, refusals by reason code, latency
//! histograms, upstream states, sessions and tasks, estimated tokens saved. Served at
//! [`PATH`] behind the same gate as the status endpoint, or on a port of its own
//! (`--metrics-port`), or not at all (`--metrics off`).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where the metrics are served on the MCP port.
pub const PATH: &str = "/metrics";

/// Histogram bucket bounds, in seconds.
const BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BOUNDS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if let Some(i) = BOUNDS.iter().position(|b| seconds <= *b) {
            self.counts[i] += 1;
        }
        self.sum += seconds;
        self.count += 1;
    }

    /// Its lines in the exposition text: `name_bucket{labels,le=…}`, `_sum`, `_count`.
    fn write(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (b, c) in BOUNDS.iter().zip(self.counts) {
            cumulative += c;
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {}\n{name}_count{{{labels}}} {}",
            self.sum, self.count
        );
    }

    fn merge(&mut self, other: &Histogram) {
        for (c, o) in self.counts.iter_mut().zip(other.counts) {
            *c += o;
        }
        self.sum += other.sum;
        self.count += other.count;
    }
}

/// Labels as written: `k1="v1",k2="v2"`.
type Labels = String;

/// The counters the server keeps by label text (their names: [`COUNTERS`]); requests are
/// counted apart ([`Metrics::batch`]'s request).
#[derive(Clone, Copy)]
pub enum Counter {
    ToolCalls,
    Refusals,
    TokensSaved,
}

/// The counters' names, in [`Counter`]'s order.
const COUNTERS: [&str; 3] = [
    "mcp_sieve_tool_calls_total",
    "mcp_sieve_refusals_total",
    "mcp_sieve_tokens_saved_total",
];

/// The latency histograms the server keeps by label text (their names: [`TIMINGS`]); the
/// requests' own is kept apart.
#[derive(Clone, Copy)]
pub enum Timing {
    UpstreamCall,
    Search,
}

/// The histograms' names, in [`Timing`]'s order.
const TIMINGS: [&str; 2] = [
    "mcp_sieve_upstream_call_duration_seconds",
    "mcp_sieve_search_duration_seconds",
];

/// The names of the counter and the histogram of requests (by method, and outcome).
const REQUESTS: &str = "mcp_sieve_requests_total";
const DURATIONS: &str = "mcp_sieve_request_duration_seconds";

/// A request's outcome, as `mcp_sieve_requests_total` labels it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    Ok,
    Error,
    Refused,
}

/// The outcomes' labels, in [`Outcome`]'s order.
const OUTCOMES: [&str; 3] = ["ok", "error", "refused"];

/// A request to count ([`Metrics::count`]): its method, outcome and seconds, and the use it
/// made, if any.
pub struct Counted {
    pub method: Method,
    pub outcome: Outcome,
    pub seconds: f64,
    pub usage: Option<UseCounted>,
}

/// What a use adds: a tool call by item, upstream and outcome; a refusal by reason; its
/// upstream's latency (a use it served); a search's latency (`find_tools`).
pub struct UseCounted {
    pub item: String,
    pub upstream: Option<String>,
    /// Its outcome's label (`ok`, `error`, `tool-error`, `unknown`, `refused`).
    pub outcome: &'static str,
    /// The reason code of its refusal, if refused.
    pub refused: Option<String>,
}

/// Requests a shard holds before it adds them to its series: a request only queues itself, and
/// the series are written [`PENDING`] at a time (their code and data warm in the caches once,
/// not once a request), and whenever they are read (a scrape sees every request counted).
const PENDING: usize = 64;

/// Each counter's and histogram's series by their labels; the requests' by method index (one
/// array slot each: no label text written or compared per request).
struct Inner {
    requests: [[u64; OUTCOMES.len()]; METHODS.len()],
    durations: [Histogram; METHODS.len()],
    counters: [BTreeMap<Labels, u64>; COUNTERS.len()],
    histograms: [BTreeMap<Labels, Histogram>; TIMINGS.len()],
    /// Requests counted and not yet added (at most [`PENDING`]).
    pending: Vec<Counted>,
}

impl Inner {
    /// Adds the pending requests to the series. Uses in a row with the same labels (a client
    /// calling one tool, one upstream serving them) are added as one: their series is looked up
    /// once a run, not once a use.
    #[inline(never)]
    fn flush(&mut self, admitted: &Admitted) {
        let (mut buf, mut pending) = (String::new(), std::mem::take(&mut self.pending));
        let mut calls: Option<(&UseCounted, u64)> = None;
        let mut served: Option<(&str, Histogram)> = None;
        for c in &pending {
            let m = usize::from(c.method.0);
            self.requests[m][c.outcome as usize] += 1;
            self.durations[m].observe(c.seconds);
            let Some(u) = &c.usage else { continue };
            match &mut calls {
                Some((run, n)) if (&run.item, &run.upstream, run.outcome) == (&u.item, &u.upstream, u.outcome) => {
                    *n += 1
                }
                _ => {
                    if let Some((run, n)) = calls.replace((u, 1)) {
                        self.add_calls(admitted, &mut buf, run, n);
                    }
                }
            }
            let upstream = u.upstream.as_deref().unwrap_or("");
            if let Some(r) = &u.refused {
                let c = Counter::Refusals as usize;
                series(
                    &mut self.counters[c],
                    &admitted.counters[c],
                    &mut buf,
                    &[("reason", r)],
                    |v| *v += 1,
                );
            } else if !upstream.is_empty() {
                match &mut served {
                    Some((run, h)) if *run == upstream => h.observe(c.seconds),
                    _ => {
                        let mut h = Histogram::default();
                        h.observe(c.seconds);
                        if let Some((run, h)) = served.replace((upstream, h)) {
                            self.add_served(admitted, &mut buf, run, &h);
                        }
                    }
                }
            }
            if u.item == "find_tools" {
                let t = Timing::Search as usize;
                series(&mut self.histograms[t], &admitted.histograms[t], &mut buf, &[], |h| {
                    h.observe(c.seconds)
                });
            }
        }
        if let Some((run, n)) = calls {
            self.add_calls(admitted, &mut buf, run, n);
        }
        if let Some((run, h)) = served {
            self.add_served(admitted, &mut buf, run, &h);
        }
        pending.clear();
        self.pending = pending;
    }

    /// Adds `n` tool calls with the labels of `u`.
    fn add_calls(&mut self, admitted: &Admitted, buf: &mut String, u: &UseCounted, n: u64) {
        let upstream = u.upstream.as_deref().unwrap_or("");
        let labels = [
            ("tool", u.item.as_str()),
            ("upstream", upstream),
            ("outcome", u.outcome),
        ];
        let c = Counter::ToolCalls as usize;
        series(&mut self.counters[c], &admitted.counters[c], buf, &labels, |v| *v += n);
    }

    /// Adds the latencies `h` of uses `upstream` served.
    fn add_served(&mut self, admitted: &Admitted, buf: &mut String, upstream: &str, h: &Histogram) {
        let t = Timing::UpstreamCall as usize;
        let (timings, admitted) = (&mut self.histograms[t], &admitted.histograms[t]);
        series(timings, admitted, buf, &[("upstream", upstream)], |into| into.merge(h));
    }
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            requests: [[0; OUTCOMES.len()]; METHODS.len()],
            durations: std::array::from_fn(|_| Histogram::default()),
            counters: Default::default(),
            histograms: Default::default(),
            pending: Vec::with_capacity(PENDING),
        }
    }
}

/// The registry: one shard per thread (up to [`SHARDS`]), so the server's threads count
/// without taking turns at one lock; a scrape sums them. Which label sets have a series is kept
/// once for the process ([`Admitted`]), so the cap on series is the process's, not a shard's.
pub struct Metrics {
    shards: Box<[Mutex<Inner>]>,
    admitted: Admitted,
}

/// The label sets each counter and histogram has a series for, in any shard (at most
/// [`MAX_SERIES`] each): asked only when a shard meets a label set it has not counted yet.
#[derive(Default)]
struct Admitted {
    counters: [Mutex<HashSet<Labels>>; COUNTERS.len()],
    histograms: [Mutex<HashSet<Labels>>; TIMINGS.len()],
}

/// How many shards a registry has (threads beyond it share).
const SHARDS: usize = 16;

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            admitted: Admitted::default(),
        }
    }
}

/// This thread's shard: threads take the next one when they first count.
fn shard_of_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

/// Each metric's help text and type.
const HELP: [(&str, &str, &str); 12] = [
    (
        "mcp_sieve_requests_total",
        "counter",
        "JSON-RPC requests by method and outcome (ok, error, refused)",
    ),
    (
        "mcp_sieve_tool_calls_total",
        "counter",
        "Uses (tool calls, prompt gets, resource reads) by item, upstream and outcome",
    ),
    (
        "mcp_sieve_refusals_total",
        "counter",
        "Refused uses by reason code (policy:<id>, view, rate-limit:<id>, upstream-down:<name>, unknown)",
    ),
    (
        "mcp_sieve_tokens_saved_total",
        "counter",
        "Estimated tokens (4 bytes each) a full tools/list would have sent minus those sent, by how (view, search)",
    ),
    (
        "mcp_sieve_request_duration_seconds",
        "histogram",
        "Time to answer a request, by method",
    ),
    (
        "mcp_sieve_upstream_call_duration_seconds",
        "histogram",
        "Time of a use served by an upstream, by upstream",
    ),
    (
        "mcp_sieve_search_duration_seconds",
        "histogram",
        "Time to answer a find_tools search",
    ),
    (
        "mcp_sieve_upstream_up",
        "gauge",
        "Whether each upstream is in this state (up, down, starting, needs-login): 1 for its state",
    ),
    (
        "mcp_sieve_upstream_failures",
        "gauge",
        "Failed fetches of each upstream's lists since it last answered",
    ),
    (
        "mcp_sieve_sessions",
        "gauge",
        "Sessions held (2025-11-25 sessions and 2026-07-28 task holders)",
    ),
    ("mcp_sieve_tasks", "gauge", "Tasks held in sessions"),
    ("mcp_sieve_up", "gauge", "1 while the server runs"),
];

/// A label value escaped for the exposition format.
fn escape(v: &str) -> std::borrow::Cow<'_, str> {
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        return v.into();
    }
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n").into()
}

/// `[("method", "tools/call")]` → `method="tools/call"`.
pub fn labels(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    write_labels(&mut s, pairs);
    s
}

/// Writes `pairs` as labels at the end of `s`.
fn write_labels(s: &mut String, pairs: &[(&str, &str)]) {
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(k);
        s.push_str("=\"");
        s.push_str(&escape(mcp_sieve::operate::label_value(v)));
        s.push('"');
    }
}

/// A counter's or histogram's label pairs, as a request has them (written out only for a
/// series not seen before).
pub type Pairs<'a> = &'a [(&'a str, &'a str)];

/// Series one metric keeps in the process: label values come from requests (a reason, an
/// upstream, a tool's name — one the server does not have is `unknown` already), so past this
/// many a new set of labels is counted under [`OVERFLOW`] instead (memory and a scrape stay
/// bounded whatever callers send).
const MAX_SERIES: usize = 1_000;

/// The labels of the series counting what came past [`MAX_SERIES`].
const OVERFLOW: &str = "overflow=\"true\"";

/// Applies `f` to the series with labels `pairs` in `by_labels` (a shard's), found through `buf`
/// (the label text, written there): one lookup, and no allocation unless the series is new to the
/// shard; then `admitted` (the process's) says whether it has a series.
fn series<T: Default>(
    by_labels: &mut BTreeMap<Labels, T>,
    admitted: &Mutex<HashSet<Labels>>,
    buf: &mut String,
    pairs: Pairs<'_>,
    f: impl FnOnce(&mut T),
) {
    buf.clear();
    write_labels(buf, pairs);
    match by_labels.get_mut(buf.as_str()) {
        Some(v) => f(v),
        None => f(added(by_labels, admitted, buf)),
    }
}

/// The series of label text `labels`, new to the shard `by_labels`: its own when the process
/// has it or has fewer than [`MAX_SERIES`], else the overflow's.
#[cold]
fn added<'m, T: Default>(
    by_labels: &'m mut BTreeMap<Labels, T>,
    admitted: &Mutex<HashSet<Labels>>,
    labels: &str,
) -> &'m mut T {
    let mut known = admitted.lock().unwrap_or_else(|p| p.into_inner());
    let labels = if known.contains(labels) || labels == OVERFLOW {
        labels
    } else if known.len() < MAX_SERIES {
        known.insert(labels.to_string());
        labels
    } else {
        OVERFLOW
    };
    by_labels.entry(labels.to_string()).or_default()
}

/// A request's method, as metrics label it: MCP's methods and this server's extensions by name,
/// any other as `other` (a client inventing names adds no series).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Method(u8);

impl Method {
    /// `other`: any method not in [`METHODS`]'s list (the last).
    pub const OTHER: Method = Method((METHODS.len() - 1) as u8);
}

/// Whether two texts are equal, at compile time.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of `name` in [`METHODS`], at compile time (every name the `match` lists is there:
/// a unit test checks each counts under its own name).
const fn index_of(name: &str) -> Method {
    let mut i = 0;
    while i < METHODS.len() {
        if same(METHODS[i], name) {
            return Method(i as u8);
        }
        i += 1;
    }
    Method::OTHER
}

macro_rules! methods {
    ($($name:literal,)*) => {
        /// The methods metrics count by name; the last, `other`, counts the rest.
        const METHODS: [&str; [$($name,)*].len() + 1] = [$($name,)* "other"];

        /// The label of a request's method (nothing allocated; a `match` on its text).
        pub fn method_label(method: &str) -> Method {
            match method {
                $($name => const { index_of($name) },)*
                _ => Method::OTHER,
            }
        }
    };
}

methods!(
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "tools/catalog",
    "tools/describe",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/cancel",
    "tasks/list",
    "tasks/update",
    "groups/list",
    "groups/get",
    "tags/list",
    "concerns/list",
    "concerns/update",
    "middleware/list",
    "middleware/invoke",
    "sieve/explain",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/roots/list_changed",
    "notifications/tasks/status",
    "notifications/elicitation/complete",
    "roots/list",
    "sampling/createMessage",
    "elicitation/create",
);

impl Metrics {
    fn shard(&self, i: usize) -> std::sync::MutexGuard<'_, Inner> {
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every shard's series summed.
    fn merged(&self) -> Inner {
        let mut all = Inner::default();
        for i in 0..self.shards.len() {
            let mut shard = self.shard(i);
            shard.flush(&self.admitted);
            for (into, from) in all.requests.iter_mut().zip(&shard.requests) {
                for (c, n) in into.iter_mut().zip(from) {
                    *c += n;
                }
            }
            for (into, h) in all.durations.iter_mut().zip(&shard.durations) {
                into.merge(h);
            }
            for (into, series) in all.counters.iter_mut().zip(&shard.counters) {
                for (l, v) in series {
                    *into.entry(l.clone()).or_default() += v;
                }
            }
            for (into, series) in all.histograms.iter_mut().zip(&shard.histograms) {
                for (l, h) in series {
                    into.entry(l.clone()).or_default().merge(h);
                }
            }
        }
        all
    }

    /// Adds `n` to counter `c` with `labels`.
    pub fn add(&self, c: Counter, labels: Pairs<'_>, n: u64) {
        let mut buf = String::new();
        series(
            &mut self.shard(shard_of_thread()).counters[c as usize],
            &self.admitted.counters[c as usize],
            &mut buf,
            labels,
            |v| *v += n,
        );
    }

    /// Counts a request: queued in the thread's shard, added to the series with the shard's
    /// other pending requests (see [`PENDING`]).
    pub fn count(&self, c: Counted) {
        let mut inner = self.shard(shard_of_thread());
        if inner.pending.len() >= PENDING {
            inner.flush(&self.admitted);
        }
        inner.pending.push(c);
    }

    /// The exposition text: the counters and histograms, then `gauges` (name, labels, value)
    /// measured by the caller now.
    pub fn render(&self, gauges: &[(&'static str, Labels, f64)]) -> String {
        let inner = self.merged();
        let mut out = String::new();
        for (name, kind, help) in HELP {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            if name == REQUESTS {
                for (method, counts) in METHODS.iter().zip(&inner.requests) {
                    for (outcome, n) in OUTCOMES.iter().zip(counts).filter(|(_, n)| **n > 0) {
                        let _ = writeln!(out, "{name}{{method=\"{method}\",outcome=\"{outcome}\"}} {n}");
                    }
                }
            }
            if name == DURATIONS {
                for (method, h) in METHODS.iter().zip(&inner.durations).filter(|(_, h)| h.count > 0) {
                    h.write(&mut out, name, &format!("method=\"{method}\""));
                }
            }
            if let Some(c) = COUNTERS.iter().position(|c| *c == name) {
                for (l, v) in &inner.counters[c] {
                    let _ = writeln!(out, "{name}{{{l}}} {v}");
                }
            }
            if let Some(t) = TIMINGS.iter().position(|t| *t == name) {
                for (l, h) in &inner.histograms[t] {
                    h.write(&mut out, name, l);
                }
            }
            for (g, l, v) in gauges.iter().filter(|(g, ..)| *g == name) {
                let _ = writeln!(out, "{g}{{{l}}} {v}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_histograms_and_gauges_in_the_text_format() {
        let m = Metrics::default();
        m.count(call(None, 0.003));
        m.count(call(Some(("find_tools", None, "ok", None)), 0.003));
        let text = m.render(&[("mcp_sieve_up", String::new(), 1.0)]);
        assert!(
            text.contains("mcp_sieve_requests_total{method=\"tools/call\",outcome=\"ok\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("mcp_sieve_search_duration_seconds_bucket{le=\"0.0025\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("mcp_sieve_search_duration_seconds_bucket{le=\"0.005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("mcp_sieve_search_duration_seconds_bucket{le=\"+Inf\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("mcp_sieve_search_duration_seconds_count{} 1\n"), "{text}");
        assert!(text.contains("# TYPE mcp_sieve_up gauge\nmcp_sieve_up{} 1\n"), "{text}");
        assert_eq!(labels(&[("a", "x\"y")]), "a=\"x\\\"y\"");
    }

    #[test]
    fn counts_from_many_threads_are_summed_in_one_series() {
        let m = Metrics::default();
        std::thread::scope(|scope| {
            for _ in 0..SHARDS + 3 {
                scope.spawn(|| {
                    for _ in 0..10 {
                        m.count(Counted {
                            method: method_label("ping"),
                            outcome: Outcome::Ok,
                            seconds: 0.002,
                            usage: None,
                        });
                    }
                });
            }
        });
        let n = (SHARDS + 3) * 10;
        let text = m.render(&[]);
        assert!(
            text.contains(&format!(
                "mcp_sieve_requests_total{{method=\"ping\",outcome=\"ok\"}} {n}\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "mcp_sieve_request_duration_seconds_bucket{{method=\"ping\",le=\"0.0025\"}} {n}\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "mcp_sieve_request_duration_seconds_count{{method=\"ping\"}} {n}\n"
            )),
            "{text}"
        );
        assert_eq!(text.matches("mcp_sieve_requests_total{").count(), 1, "{text}");
    }

    /// A `tools/call` of `seconds` making `usage`: (item, upstream, outcome, refusal reason).
    fn call(usage: Option<(&str, Option<&str>, &'static str, Option<&str>)>, seconds: f64) -> Counted {
        Counted {
            method: method_label("tools/call"),
            outcome: Outcome::Ok,
            seconds,
            usage: usage.map(|(item, upstream, outcome, refused)| UseCounted {
                item: item.into(),
                upstream: upstream.map(str::to_string),
                outcome,
                refused: refused.map(str::to_string),
            }),
        }
    }

    #[test]
    fn uses_in_runs_and_apart_each_count_under_their_own_labels() {
        let m = Metrics::default();
        // More than a shard holds pending: runs of one tool, tools taking turns, a refusal
        // between, across flushes.
        let uses = [
            ("a", Some("gh"), "ok", None),
            ("a", Some("gh"), "ok", None),
            ("b", Some("gh"), "ok", None),
            ("a", Some("gh"), "error", None),
            ("a", Some("gh"), "refused", Some("rate-limit:all")),
            ("c", Some("fs"), "ok", None),
            ("c", None, "ok", None),
        ];
        for _ in 0..PENDING {
            for u in uses {
                m.count(call(Some(u), 0.003));
            }
        }
        let n = PENDING;
        let text = m.render(&[]);
        for (series, count) in [
            (
                "mcp_sieve_tool_calls_total{tool=\"a\",upstream=\"gh\",outcome=\"ok\"}",
                2 * n,
            ),
            (
                "mcp_sieve_tool_calls_total{tool=\"b\",upstream=\"gh\",outcome=\"ok\"}",
                n,
            ),
            (
                "mcp_sieve_tool_calls_total{tool=\"a\",upstream=\"gh\",outcome=\"error\"}",
                n,
            ),
            (
                "mcp_sieve_tool_calls_total{tool=\"a\",upstream=\"gh\",outcome=\"refused\"}",
                n,
            ),
            (
                "mcp_sieve_tool_calls_total{tool=\"c\",upstream=\"fs\",outcome=\"ok\"}",
                n,
            ),
            ("mcp_sieve_tool_calls_total{tool=\"c\",upstream=\"\",outcome=\"ok\"}", n),
            ("mcp_sieve_refusals_total{reason=\"rate-limit:all\"}", n),
            ("mcp_sieve_upstream_call_duration_seconds_count{upstream=\"gh\"}", 4 * n),
            (
                "mcp_sieve_upstream_call_duration_seconds_bucket{upstream=\"gh\",le=\"0.005\"}",
                4 * n,
            ),
            ("mcp_sieve_upstream_call_duration_seconds_count{upstream=\"fs\"}", n),
            ("mcp_sieve_requests_total{method=\"tools/call\",outcome=\"ok\"}", 7 * n),
        ] {
            assert!(
                text.contains(&format!("{series} {count}\n")),
                "{series} {count}: {text}"
            );
        }
        assert_eq!(text.matches("mcp_sieve_tool_calls_total{").count(), 6, "{text}");
    }

    #[test]
    fn the_series_cap_is_one_for_the_process_whatever_thread_counts() {
        let m = Metrics::default();
        // Each thread (its own shard) invents names of its own.
        std::thread::scope(|scope| {
            for t in 0..4 {
                let m = &m;
                scope.spawn(move || {
                    for i in 0..MAX_SERIES {
                        let tool = format!("made_up_{t}_{i}");
                        m.add(Counter::ToolCalls, &[("tool", &tool), ("outcome", "error")], 1);
                    }
                });
            }
        });
        let text = m.render(&[]);
        let series = text.matches("mcp_sieve_tool_calls_total{").count();
        assert_eq!(series, MAX_SERIES + 1, "{series} series");
        assert!(
            text.contains(&format!(
                "mcp_sieve_tool_calls_total{{overflow=\"true\"}} {}\n",
                3 * MAX_SERIES
            )),
            "the overflow's count"
        );
        // A series admitted in one thread is counted under its labels in any other.
        let first = text
            .lines()
            .find(|l| l.starts_with("mcp_sieve_tool_calls_total{tool="))
            .and_then(|l| l.split('"').nth(1))
            .unwrap()
            .to_string();
        std::thread::scope(|scope| {
            for _ in 0..SHARDS {
                scope.spawn(|| m.add(Counter::ToolCalls, &[("tool", &first), ("outcome", "error")], 1));
            }
        });
        let text = m.render(&[]);
        let series = format!(
            "mcp_sieve_tool_calls_total{{tool=\"{first}\",outcome=\"error\"}} {}\n",
            SHARDS + 1
        );
        assert!(text.contains(&series), "{series}");
    }

    #[test]
    fn a_label_value_is_cut_at_128_bytes_between_characters() {
        let m = Metrics::default();
        let long = format!("a{}", "é".repeat(100_000));
        m.add(Counter::ToolCalls, &[("tool", &long), ("outcome", "ok")], 1);
        m.add(Counter::Refusals, &[("reason", &"x".repeat(200_007))], 1);
        let text = m.render(&[(
            "mcp_sieve_upstream_failures",
            labels(&[("upstream", &"u".repeat(300))]),
            0.0,
        )]);
        let cut = format!("a{}", "é".repeat(63));
        assert!(
            text.contains(&format!(
                "mcp_sieve_tool_calls_total{{tool=\"{cut}\",outcome=\"ok\"}} 1\n"
            )),
            "{text}"
        );
        assert!(text.contains(&format!("{{reason=\"{}\"}} 1\n", "x".repeat(128))));
        assert!(text.contains(&format!("{{upstream=\"{}\"}} 0\n", "u".repeat(128))));
        assert!(text.lines().all(|l| l.len() < 300), "a line past 300 bytes");
    }

    fn name(m: Method) -> &'static str {
        METHODS[usize::from(m.0)]
    }

    #[test]
    fn names_callers_invent_add_no_series() {
        assert_eq!(name(method_label("tools/call")), "tools/call");
        assert_eq!(name(method_label("sieve/explain")), "sieve/explain");
        assert_eq!(name(method_label("elicitation/create")), "elicitation/create");
        assert_eq!(name(method_label("tools/call2")), "other");
        for known in &METHODS[..METHODS.len() - 1] {
            assert_eq!(name(method_label(known)), *known);
        }
        assert_eq!(name(method_label(&"x".repeat(100_000))), "other");
        let m = Metrics::default();
        for i in 0..MAX_SERIES + 500 {
            let tool = format!("made_up_{i}");
            m.add(Counter::ToolCalls, &[("tool", &tool), ("outcome", "error")], 1);
        }
        let text = m.render(&[]);
        let series = text.matches("mcp_sieve_tool_calls_total{").count();
        assert_eq!(series, MAX_SERIES + 1, "{series} series");
        assert!(
            text.contains("mcp_sieve_tool_calls_total{overflow=\"true\"} 500\n"),
            "{text}"
        );
    }
}
