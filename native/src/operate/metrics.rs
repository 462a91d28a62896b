//! Prometheus metrics of the native server, kept and written by `prometheus-client` (the
//! Prometheus project's Rust client; the text exposition format 0.0.4): requests by method and
//! outcome, uses by tool, upstream and outcome, refusals by reason code, latency histograms,
//! upstream states, sessions and tasks, estimated tokens saved. A request's counter and histogram
//! handles are resolved once per method and outcome and kept ([`Metrics::count`] then adds to
//! atomics); a use's series are looked up in their family by label set. Label values are cut at
//! [`mcp_sieve::operate::MAX_LABEL_BYTES`], and past [`MAX_SERIES`] label sets in one family (the
//! process's: a family is one map) a new one counts under `overflow="true"`. Served at [`PATH`]
//! behind the same gate as the status endpoint, or on a port of its own (`--metrics-port`), or
//! not at all (`--metrics off`).

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use mcp_sieve::operate::label_value;
use prometheus_client::metrics::counter::Counter as Count;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Where the metrics are served on the MCP port.
pub const PATH: &str = "/metrics";

/// Histogram bucket bounds, in seconds.
const BOUNDS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// A series' labels: names, and values that may come from requests (cut at 128 bytes).
pub type Labels = Vec<(&'static str, Cow<'static, str>)>;

/// `[("method", "tools/call")]` as [`Labels`], each value cut at 128 bytes.
pub fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (*k, Cow::Owned(label_value(v).to_string())))
        .collect()
}

/// A value a request gave (moved, not copied), cut at 128 bytes.
fn owned(mut v: String) -> Cow<'static, str> {
    let keep = label_value(&v).len();
    v.truncate(keep);
    Cow::Owned(v)
}

/// The counters the server keeps by labels; requests are counted apart ([`Metrics::count`]).
#[derive(Clone, Copy)]
pub enum Counter {
    ToolCalls,
    Refusals,
    TokensSaved,
}

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

/// Label sets one family keeps in the process: label values come from requests (a reason, an
/// upstream, a tool's name — one the server does not have is `unknown` already), so past this
/// many a new set of labels is counted under `overflow="true"` instead (memory and a scrape stay
/// bounded whatever callers send).
const MAX_SERIES: usize = 1_000;

/// A histogram with [`BOUNDS`].
fn histogram() -> Histogram {
    Histogram::new(BOUNDS)
}

/// A histogram family's constructor.
type NewHistogram = fn() -> Histogram;

/// A family whose label sets come from requests, and how many it has (at most [`MAX_SERIES`]
/// and the overflow's).
struct Capped<M> {
    family: Family<Labels, M, fn() -> M>,
    len: AtomicUsize,
}

impl<M: Default> Default for Capped<M> {
    fn default() -> Self {
        Capped {
            family: Family::new_with_constructor(M::default as fn() -> M),
            len: AtomicUsize::new(0),
        }
    }
}

impl Capped<Histogram> {
    fn histograms() -> Self {
        Capped {
            family: Family::new_with_constructor(histogram as NewHistogram),
            len: AtomicUsize::new(0),
        }
    }
}

/// The registry and the families in it (each a handle onto what the registry encodes).
pub struct Metrics {
    registry: Registry,
    requests: Family<Labels, Count>,
    durations: Family<Labels, Histogram, NewHistogram>,
    /// The requests' handles by method and outcome, resolved on first use.
    request_counts: Box<[[OnceLock<Count>; OUTCOMES.len()]]>,
    request_durations: Box<[OnceLock<Histogram>]>,
    counters: [Capped<Count>; 3],
    upstream_calls: Capped<Histogram>,
    searches: Capped<Histogram>,
    upstream_up: Family<Labels, Gauge>,
    upstream_failures: Family<Labels, Gauge>,
    up: Gauge,
    sessions: Gauge,
    tasks: Gauge,
    /// Taken to add a label set to a family (so the cap is checked and the set added as one),
    /// and to measure the gauges and write the text as one.
    adding: Mutex<()>,
    scraping: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let histograms = || Family::<Labels, Histogram, NewHistogram>::new_with_constructor(histogram);
        let m = Metrics {
            requests: Family::default(),
            durations: histograms(),
            request_counts: (0..METHODS.len()).map(|_| Default::default()).collect(),
            request_durations: (0..METHODS.len()).map(|_| OnceLock::new()).collect(),
            counters: Default::default(),
            upstream_calls: Capped::histograms(),
            searches: Capped::histograms(),
            upstream_up: Family::default(),
            upstream_failures: Family::default(),
            up: Gauge::default(),
            sessions: Gauge::default(),
            tasks: Gauge::default(),
            adding: Mutex::default(),
            scraping: Mutex::default(),
            registry: Registry::default(),
        };
        let [calls, refusals, saved] = &m.counters;
        // `_total` is the client's: a counter is registered by its name without it.
        registry.register(
            "mcp_sieve_requests",
            "JSON-RPC requests by method and outcome (ok, error, refused)",
            m.requests.clone(),
        );
        registry.register(
            "mcp_sieve_tool_calls",
            "Uses (tool calls, prompt gets, resource reads) by item, upstream and outcome",
            calls.family.clone(),
        );
        registry.register(
            "mcp_sieve_refusals",
            "Refused uses by reason code (policy:<id>, view, rate-limit:<id>, upstream-down:<name>, unknown)",
            refusals.family.clone(),
        );
        registry.register(
            "mcp_sieve_tokens_saved",
            "Estimated tokens (4 bytes each) a full tools/list would have sent minus those sent, by how (view, search)",
            saved.family.clone(),
        );
        registry.register(
            "mcp_sieve_request_duration_seconds",
            "Time to answer a request, by method",
            m.durations.clone(),
        );
        registry.register(
            "mcp_sieve_upstream_call_duration_seconds",
            "Time of a use served by an upstream, by upstream",
            m.upstream_calls.family.clone(),
        );
        registry.register(
            "mcp_sieve_search_duration_seconds",
            "Time to answer a find_tools search",
            m.searches.family.clone(),
        );
        registry.register(
            "mcp_sieve_upstream_up",
            "Whether each upstream is in this state (up, down, starting, needs-login): 1 for its state",
            m.upstream_up.clone(),
        );
        registry.register(
            "mcp_sieve_upstream_failures",
            "Failed fetches of each upstream's lists since it last answered",
            m.upstream_failures.clone(),
        );
        registry.register(
            "mcp_sieve_sessions",
            "Sessions held (2025-11-25 sessions and 2026-07-28 task holders)",
            m.sessions.clone(),
        );
        registry.register("mcp_sieve_tasks", "Tasks held in sessions", m.tasks.clone());
        registry.register("mcp_sieve_up", "1 while the server runs", m.up.clone());
        Metrics { registry, ..m }
    }
}

/// Applies `f` to the series of `labels` in `c`: found under the family's read lock; a new label
/// set is added under `adding` when the family has fewer than [`MAX_SERIES`], else the overflow's
/// series (`overflow="true"`) takes it.
fn series<M>(c: &Capped<M>, adding: &Mutex<()>, labels: Labels, f: impl FnOnce(&M)) {
    if let Some(m) = c.family.get(&labels) {
        return f(&m);
    }
    let _turn = adding.lock().unwrap_or_else(|p| p.into_inner());
    let labels = if c.family.get(&labels).is_some() {
        labels
    } else if c.len.load(Ordering::Relaxed) < MAX_SERIES {
        c.len.fetch_add(1, Ordering::Relaxed);
        labels
    } else {
        vec![("overflow", Cow::Borrowed("true"))]
    };
    f(&c.family.get_or_create(&labels))
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
    /// Adds `n` to counter `c` with `labels`.
    pub fn add(&self, c: Counter, labels: Labels, n: u64) {
        series(&self.counters[c as usize], &self.adding, labels, |v| {
            v.inc_by(n);
        });
    }

    /// Counts a request: its method's and outcome's handles (resolved once), and the use's
    /// series.
    pub fn count(&self, c: Counted) {
        let m = usize::from(c.method.0);
        let method = || vec![("method", Cow::Borrowed(METHODS[m]))];
        self.request_counts[m][c.outcome as usize]
            .get_or_init(|| {
                let mut l = method();
                l.push(("outcome", Cow::Borrowed(OUTCOMES[c.outcome as usize])));
                self.requests.get_or_create_owned(&l)
            })
            .inc();
        self.request_durations[m]
            .get_or_init(|| self.durations.get_or_create_owned(&method()))
            .observe(c.seconds);
        let Some(u) = c.usage else { return };
        let search = u.item == "find_tools";
        let upstream = owned(u.upstream.unwrap_or_default());
        if let Some(r) = u.refused {
            self.add(Counter::Refusals, vec![("reason", owned(r))], 1);
        } else if !upstream.is_empty() {
            let l = vec![("upstream", upstream.clone())];
            series(&self.upstream_calls, &self.adding, l, |h| h.observe(c.seconds));
        }
        if search {
            series(&self.searches, &self.adding, Vec::new(), |h| h.observe(c.seconds));
        }
        let l = vec![
            ("tool", owned(u.item)),
            ("upstream", upstream),
            ("outcome", Cow::Borrowed(u.outcome)),
        ];
        self.add(Counter::ToolCalls, l, 1);
    }

    /// The exposition text, with `gauges` (name, labels, value) measured by the caller now.
    pub fn render(&self, gauges: &[(&'static str, Labels, i64)]) -> String {
        let _one = self.scraping.lock().unwrap_or_else(|p| p.into_inner());
        // Upstreams come and go with the document: only those measured now are written.
        self.upstream_up.clear();
        self.upstream_failures.clear();
        for (name, l, v) in gauges {
            match *name {
                "mcp_sieve_up" => {
                    self.up.set(*v);
                }
                "mcp_sieve_sessions" => {
                    self.sessions.set(*v);
                }
                "mcp_sieve_tasks" => {
                    self.tasks.set(*v);
                }
                "mcp_sieve_upstream_up" => {
                    self.upstream_up.get_or_create(l).set(*v);
                }
                "mcp_sieve_upstream_failures" => {
                    self.upstream_failures.get_or_create(l).set(*v);
                }
                _ => {}
            }
        }
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads enough that several count each series (the hand-written registry's shards).
    const SHARDS: usize = 16;
    /// Requests enough to count some twice over (the hand-written registry's batch).
    const PENDING: usize = 64;

    #[test]
    fn counters_histograms_and_gauges_in_the_text_format() {
        let m = Metrics::default();
        m.count(call(None, 0.003));
        m.count(call(Some(("find_tools", None, "ok", None)), 0.003));
        let text = m.render(&[("mcp_sieve_up", Vec::new(), 1)]);
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
        assert!(text.contains("mcp_sieve_search_duration_seconds_count 1\n"), "{text}");
        assert!(text.contains("# TYPE mcp_sieve_up gauge\nmcp_sieve_up 1\n"), "{text}");
        m.add(Counter::Refusals, labels(&[("reason", "x\"y\\z\nw")]), 1);
        let text = m.render(&[]);
        assert!(
            text.contains("mcp_sieve_refusals_total{reason=\"x\\\"y\\\\z\\nw\"} 1\n"),
            "{text}"
        );
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
                        m.add(Counter::ToolCalls, labels(&[("tool", &tool), ("outcome", "error")]), 1);
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
                scope.spawn(|| m.add(Counter::ToolCalls, labels(&[("tool", &first), ("outcome", "error")]), 1));
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
        m.add(Counter::ToolCalls, labels(&[("tool", &long), ("outcome", "ok")]), 1);
        m.add(Counter::Refusals, labels(&[("reason", &"x".repeat(200_007))]), 1);
        let text = m.render(&[(
            "mcp_sieve_upstream_failures",
            labels(&[("upstream", &"u".repeat(300))]),
            0,
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
            m.add(Counter::ToolCalls, labels(&[("tool", &tool), ("outcome", "error")]), 1);
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
