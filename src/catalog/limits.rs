//! Rate limits and quotas from the document's `limits.rates`: which limits a use falls under
//! (matchers as policy rules and views write them: globs on names, groups with ancestors,
//! principals with `role:`), the key each counts by (`per`), and token buckets decided by pure
//! functions (the time is passed in). The native server keeps the buckets in a [`Limiter`]; the
//! Worker keeps each key's bucket in a Durable Object that calls [`Bucket::take`].

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::usage::Use;
use crate::error::{type_name, Error, Result};
use crate::filter::glob;
use crate::model::Kind;

/// What a limit counts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    /// One bucket per principal (callers without one share the bucket `(anonymous)`).
    Principal,
    /// One bucket per role of the caller (that `match.roles` admits); a caller without a role is
    /// not counted.
    Role,
    /// One bucket per tool, prompt or resource.
    Tool,
    /// One bucket per group of the item (with ancestors; those `match.groups` names, if given).
    Group,
    /// One bucket per upstream (gateway); items of no upstream are not counted.
    Upstream,
    /// One bucket for every use that matches.
    Global,
}

impl Per {
    const NAMES: [(&'static str, Per); 6] = [
        ("principal", Per::Principal),
        ("role", Per::Role),
        ("tool", Per::Tool),
        ("group", Per::Group),
        ("upstream", Per::Upstream),
        ("global", Per::Global),
    ];
}

/// Which uses a limit applies to: every matcher given must hold (an absent one holds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Match {
    methods: Vec<String>,
    tools: Vec<String>,
    prompts: Vec<String>,
    resources: Vec<String>,
    groups: Vec<String>,
    upstreams: Vec<String>,
    principals: Vec<String>,
    roles: Vec<String>,
}

/// One rate limit: `rate` uses per `per_ms`, at most `burst` at once.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// The limit's id (unique), named in refusals as `rate-limit:<id>`.
    pub id: String,
    /// What it counts by.
    pub per: Per,
    matcher: Match,
    /// Its matcher holds for every use (none given): not asked per use.
    everyone: bool,
    /// Uses per window.
    pub rate: u32,
    /// The window, in milliseconds.
    pub window_ms: i64,
    /// The bucket's size (default: `rate`).
    pub burst: u32,
}

impl Rate {
    /// The one key `u` counts by under this limit, for a limit whose key is one of the use's
    /// texts (per principal, tool or upstream, or global; `Some(None)`: a use with no upstream);
    /// `None` for one per role or group (a use may have several).
    fn text_key<'a>(&self, u: &'a Use) -> Option<Option<&'a str>> {
        match self.per {
            Per::Principal => Some(Some(u.principal.as_deref().unwrap_or(ANONYMOUS))),
            Per::Tool => Some(Some(u.item.as_str())),
            Per::Upstream => Some(u.upstream.as_deref()),
            Per::Global => Some(Some("*")),
            Per::Role | Per::Group => None,
        }
    }

    /// Its size, rate and window.
    fn shape(&self) -> (u32, u32, i64) {
        (self.burst, self.rate, self.window_ms)
    }

    /// Whether use `u` counts against it.
    fn applies(&self, u: &Use) -> bool {
        self.everyone || self.matcher.holds(u)
    }
}

/// The document's `limits`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// The rate limits, in document order.
    pub rates: Vec<Rate>,
}

/// One bucket a use takes a token from.
#[derive(Debug, Clone, PartialEq)]
pub struct Take {
    /// The limit's id.
    pub id: String,
    /// What it counts by, as text (`alice`, `role:admin`, `gh_search`, `*`).
    pub key: String,
    /// The bucket's size.
    pub burst: u32,
    /// Uses per window, and the window.
    pub rate: u32,
    /// The window, in milliseconds.
    pub window_ms: i64,
}

impl Take {
    /// The name of its bucket: the limit's id and the key (a Durable Object's name).
    pub fn bucket_name(&self) -> String {
        format!("{}\n{}", self.id, self.key)
    }

    /// Its limit's size, rate and window.
    fn shape(&self) -> (u32, u32, i64) {
        (self.burst, self.rate, self.window_ms)
    }

    /// Tokens regained per millisecond.
    fn refill(&self) -> f64 {
        f64::from(self.rate) / self.window_ms.max(1) as f64
    }
}

/// A token bucket: the tokens it held at `at_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// Tokens held.
    pub tokens: f64,
    /// When, ms since the epoch.
    pub at_ms: i64,
}

impl Bucket {
    /// A full bucket for `take` at `now_ms`.
    pub fn full(take: &Take, now_ms: i64) -> Self {
        Bucket {
            tokens: f64::from(take.burst),
            at_ms: now_ms,
        }
    }

    /// The bucket refilled up to `now_ms` (never past its size; time going back adds nothing).
    pub fn at(self, take: &Take, now_ms: i64) -> Self {
        let elapsed = (now_ms - self.at_ms).max(0) as f64;
        Bucket {
            tokens: (self.tokens + elapsed * take.refill()).min(f64::from(take.burst)),
            at_ms: now_ms.max(self.at_ms),
        }
    }

    /// Takes one token at `now_ms`: the bucket after, or how many milliseconds until a token is
    /// there (the bucket is then unchanged).
    pub fn take(self, take: &Take, now_ms: i64) -> std::result::Result<Self, i64> {
        let b = self.at(take, now_ms);
        if b.tokens >= 1.0 {
            return Ok(Bucket {
                tokens: b.tokens - 1.0,
                ..b
            });
        }
        let missing = 1.0 - b.tokens;
        Err(((missing / take.refill()).ceil() as i64).max(1))
    }

    /// Gives one token back (a use refused by another bucket).
    pub fn refund(self, take: &Take) -> Self {
        Bucket {
            tokens: (self.tokens + 1.0).min(f64::from(take.burst)),
            ..self
        }
    }
}

/// A use over a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The limit's id.
    pub id: String,
    /// The key whose bucket is empty.
    pub key: String,
    /// When a token is there again.
    pub retry_after_ms: i64,
    /// The limit's uses per window.
    pub rate: u32,
    /// The limit's window.
    pub window_ms: i64,
}

impl Refusal {
    /// What a refusal says of `take` with `retry_after_ms`.
    pub fn of(take: &Take, retry_after_ms: i64) -> Self {
        Refusal {
            id: take.id.clone(),
            key: take.key.clone(),
            retry_after_ms,
            rate: take.rate,
            window_ms: take.window_ms,
        }
    }

    /// Its reason code.
    pub fn reason(&self) -> String {
        format!("rate-limit:{}", self.id)
    }

    /// The JSON-RPC error: `-32602` (the codes the protocol defines; a use refused as policy
    /// refuses one), naming the limit, what it allows and when to try again.
    pub fn error(&self) -> Error {
        let secs = (self.retry_after_ms + 999) / 1000;
        Error::params_with(
            format!(
                "rate limit \"{}\" reached: {} uses per {} for {}; retry in {secs} s",
                self.id,
                self.rate,
                window_text(self.window_ms),
                self.key
            ),
            json!({"limit": self.id, "retryAfterMs": self.retry_after_ms, "reason": self.reason()}),
        )
    }
}

/// `60000` → `1 min`, `2000` → `2 s`.
fn window_text(ms: i64) -> String {
    match ms {
        ms if ms % 86_400_000 == 0 => format!("{} d", ms / 86_400_000),
        ms if ms % 3_600_000 == 0 => format!("{} h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{} s", ms / 1000),
        ms => format!("{ms} ms"),
    }
}

/// The buckets of one process, in one map by limit id and key (see [`bucket_key`]; its text
/// written into a buffer the limiter keeps: a use allocates nothing once its buckets exist, and
/// finds its bucket in one lookup).
#[derive(Debug, Default)]
pub struct Limiter {
    buckets: Buckets<(Bucket, Take)>,
    key: Vec<u8>,
}

/// Writes the map key of limit `id`'s bucket for `key` into `out`: the id's length (8 bytes),
/// the id, then the key (no id and key pair writes another's: a key may hold any text, the id's
/// length says where it starts).
fn bucket_key<'a>(out: &'a mut Vec<u8>, id: &str, key: &str) -> &'a [u8] {
    out.clear();
    out.extend_from_slice(&(id.len() as u64).to_le_bytes());
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(key.as_bytes());
    out
}

/// The limiter's map by text (limit id and key): hashed by foldhash, seeded per process, where the
/// server's limiter is built (`operate`; SipHash was most of a use's lookups).
#[cfg(feature = "operate")]
type Buckets<V> = HashMap<Vec<u8>, V, foldhash::fast::RandomState>;
#[cfg(not(feature = "operate"))]
type Buckets<V> = HashMap<Vec<u8>, V>;

/// The key of callers without a principal, in limits per principal.
const ANONYMOUS: &str = "(anonymous)";

/// Buckets kept before full ones (which a new bucket equals) are dropped.
const KEEP: usize = 10_000;

impl Limiter {
    /// Takes a token from each bucket of `takes` at `now_ms`, or from none: the refusal of the
    /// limit that asks the longest wait.
    pub fn take(&mut self, takes: &[Take], now_ms: i64) -> std::result::Result<(), Refusal> {
        let mut refused: Option<Refusal> = None;
        for t in takes {
            let b = self
                .bucket(&t.id, &t.key)
                .map_or_else(|| Bucket::full(t, now_ms), |(b, _)| *b);
            match b.take(t, now_ms) {
                Ok(_) => {}
                Err(ms) if refused.as_ref().is_none_or(|r| r.retry_after_ms < ms) => refused = Some(Refusal::of(t, ms)),
                Err(_) => {}
            }
        }
        if let Some(r) = refused {
            return Err(r);
        }
        if self.buckets.len() > KEEP {
            // A bucket refilled to the full is what a new one would be: dropped.
            self.buckets
                .retain(|_, (b, t)| b.at(t, now_ms).tokens < f64::from(t.burst));
        }
        // Every bucket had a token above (one named twice gives what it has).
        for t in takes {
            match self.bucket(&t.id, &t.key) {
                Some((b, kept)) => {
                    *b = b.take(t, now_ms).unwrap_or(*b);
                    // A limit a reload changed: its bucket is kept under the new one.
                    if kept.shape() != t.shape() {
                        *kept = t.clone();
                    }
                }
                None => {
                    let full = Bucket::full(t, now_ms);
                    let b = full.take(t, now_ms).unwrap_or(full);
                    let key = bucket_key(&mut self.key, &t.id, &t.key).to_vec();
                    self.buckets.insert(key, (b, t.clone()));
                }
            }
        }
        Ok(())
    }

    /// [`Limiter::take`] of what `u` counts against under `limits`: a use counted against one
    /// bucket that is kept already (the common case: one limit, one key) is looked up once and
    /// allocates nothing; any other is taken as [`Limits::takes`] lists it.
    pub fn take_use(&mut self, limits: &Limits, u: &Use, now_ms: i64) -> std::result::Result<(), Refusal> {
        if let Some((r, key)) = limits.single_take(u) {
            // A bucket kept from before a reload that changed the limit is taken the long way.
            if let Some((b, t)) = self.bucket(&r.id, key).filter(|(_, t)| t.shape() == r.shape()) {
                *b = b.take(t, now_ms).map_err(|ms| Refusal::of(t, ms))?;
                return Ok(());
            }
        }
        self.take(&limits.takes(u), now_ms)
    }

    /// How many buckets are kept.
    pub fn kept(&self) -> usize {
        self.buckets.len()
    }

    /// The bucket of limit `id` for `key`, if kept.
    fn bucket(&mut self, id: &str, key: &str) -> Option<&mut (Bucket, Take)> {
        self.buckets.get_mut(bucket_key(&mut self.key, id, key))
    }
}

impl Limits {
    /// Parses the document's `limits` (`null`: none).
    pub fn parse(v: Option<&Value>) -> Result<Self> {
        let obj = match v {
            None | Some(Value::Null) => return Ok(Limits::default()),
            Some(Value::Object(o)) => o,
            Some(v) => return Err(bad("limits", "an object like {\"rates\": [...]}", v)),
        };
        if let Some(k) = obj.keys().find(|k| *k != "rates") {
            return Err(Error::Catalog(format!(
                "limits has an unknown field \"{k}\"; expected rates"
            )));
        }
        let rates = match obj.get("rates") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a,
            Some(v) => return Err(bad("limits.rates", "an array", v)),
        };
        let mut out = Limits::default();
        for (i, r) in rates.iter().enumerate() {
            let rate = parse_rate(r, &format!("limits.rates[{i}]"))?;
            if let Some(j) = out.rates.iter().position(|x| x.id == rate.id) {
                return Err(Error::Catalog(format!(
                    "limits.rates[{i}] has the id \"{}\" of limits.rates[{j}]; each limit's id must be unique",
                    rate.id
                )));
            }
            out.rates.push(rate);
        }
        Ok(out)
    }

    /// Whether there is any limit.
    pub fn is_empty(&self) -> bool {
        self.rates.is_empty()
    }

    /// Whether any limit reads a use's groups (counts per group, or matches groups): else a use
    /// need not look them up.
    pub fn read_groups(&self) -> bool {
        self.rates
            .iter()
            .any(|r| r.per == Per::Group || !r.matcher.groups.is_empty())
    }

    /// The one limit `u` counts against and its key, when it counts against exactly one bucket
    /// whose key it holds as text (per principal, tool or upstream, or global).
    fn single_take<'a>(&'a self, u: &'a Use) -> Option<(&'a Rate, &'a str)> {
        let mut holding = self.rates.iter().filter(|r| r.applies(u));
        let r = holding.next()?;
        if holding.next().is_some() {
            return None;
        }
        Some((r, r.text_key(u)??))
    }

    /// The buckets `u` takes a token from: one per key of each limit it falls under.
    pub fn takes(&self, u: &Use) -> Vec<Take> {
        let mut out = Vec::new();
        for r in self.rates.iter().filter(|r| r.applies(u)) {
            let keys: Vec<String> = match r.per {
                Per::Principal | Per::Tool | Per::Upstream | Per::Global => {
                    r.text_key(u).flatten().into_iter().map(str::to_string).collect()
                }
                Per::Role => u
                    .roles
                    .iter()
                    .filter(|x| r.matcher.roles.is_empty() || any_glob(&r.matcher.roles, x))
                    .map(|x| format!("role:{x}"))
                    .collect(),
                Per::Group => u
                    .groups
                    .iter()
                    .filter(|g| r.matcher.groups.is_empty() || r.matcher.groups.contains(g))
                    .cloned()
                    .collect(),
            };
            out.extend(keys.into_iter().map(|key| Take {
                id: r.id.clone(),
                key,
                burst: r.burst,
                rate: r.rate,
                window_ms: r.window_ms,
            }));
        }
        out
    }
}

fn any_glob(globs: &[String], s: &str) -> bool {
    globs.iter().any(|g| glob::matches(g, s))
}

impl Match {
    /// Whether `u` falls under it.
    fn holds(&self, u: &Use) -> bool {
        let names = |globs: &Vec<String>, kinds: &[Kind]| {
            globs.is_empty() || (kinds.contains(&u.kind) && any_glob(globs, &u.item))
        };
        (self.methods.is_empty() || self.methods.iter().any(|m| m == u.method))
            && names(&self.tools, &[Kind::Tool])
            && names(&self.prompts, &[Kind::Prompt])
            && names(&self.resources, &[Kind::Resource, Kind::ResourceTemplate])
            && (self.groups.is_empty() || u.groups.iter().any(|g| self.groups.contains(g)))
            && (self.upstreams.is_empty() || u.upstream.as_deref().is_some_and(|x| any_glob(&self.upstreams, x)))
            && (self.principals.is_empty() || principal_admitted(&self.principals, u))
            && (self.roles.is_empty() || u.roles.iter().any(|x| any_glob(&self.roles, x)))
    }
}

/// `principals` as views write them: globs on the principal, `role:<glob>` on a role.
fn principal_admitted(globs: &[String], u: &Use) -> bool {
    globs.iter().any(|g| match g.strip_prefix("role:") {
        Some(r) => u.roles.iter().any(|x| glob::matches(r, x)),
        None => u.principal.as_deref().is_some_and(|p| glob::matches(g, p)),
    })
}

const RATE_KEYS: &[&str] = &["id", "per", "match", "rate", "perSeconds", "window", "burst"];
const MATCH_KEYS: &[&str] = &[
    "methods",
    "tools",
    "prompts",
    "resources",
    "groups",
    "upstreams",
    "principals",
    "roles",
];
/// The uses a limit may count.
const USES: &[&str] = &["tools/call", "prompts/get", "resources/read"];

fn parse_rate(v: &Value, path: &str) -> Result<Rate> {
    let obj = v.as_object().ok_or_else(|| bad(path, "an object", v))?;
    known(obj, path, RATE_KEYS)?;
    let id = match obj.get("id") {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 64 && !s.contains(char::is_whitespace) => s.clone(),
        Some(v) => {
            return Err(bad(
                &format!("{path}.id"),
                "a non-empty string of at most 64 bytes without spaces",
                v,
            ))
        }
        None => {
            return Err(Error::Catalog(format!(
                "{path}.id is required (the limit's name in refusals)"
            )))
        }
    };
    let per = match obj.get("per") {
        None => Per::Principal,
        Some(Value::String(s)) => Per::NAMES.iter().find(|(n, _)| n == s).map(|(_, p)| *p).ok_or_else(|| {
            Error::Catalog(format!(
                "{path}.per \"{s}\" is not known; expected principal (the default), role, tool, group, upstream or global"
            ))
        })?,
        Some(v) => return Err(bad(&format!("{path}.per"), "a string", v)),
    };
    let count = |key: &str, min: u64| -> Result<Option<u32>> {
        match obj.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .filter(|n| *n >= min && *n <= 1_000_000_000)
                .map(|n| Some(n as u32))
                .ok_or_else(|| {
                    bad(
                        &format!("{path}.{key}"),
                        &format!("an integer from {min} to 1000000000"),
                        v,
                    )
                }),
        }
    };
    let rate = count("rate", 1)?.ok_or_else(|| Error::Catalog(format!("{path}.rate is required (uses per window)")))?;
    let window_ms = match (obj.get("perSeconds"), obj.get("window")) {
        (Some(_), Some(_)) => {
            return Err(Error::Catalog(format!(
                "{path} gives both perSeconds and window; give one (\"perSeconds\": 60 or \"window\": \"1m\")"
            )))
        }
        (Some(_), None) => i64::from(count("perSeconds", 1)?.unwrap_or(1)) * 1000,
        (None, Some(w)) => duration_ms(w, &format!("{path}.window"))?,
        (None, None) => {
            return Err(Error::Catalog(format!(
                "{path} needs its window: \"perSeconds\": 60 or \"window\": \"1m\""
            )))
        }
    };
    let burst = count("burst", 1)?.unwrap_or(rate);
    let matcher = parse_match(obj.get("match"), &format!("{path}.match"))?;
    Ok(Rate {
        id,
        per,
        everyone: matcher == Match::default(),
        matcher,
        rate,
        window_ms,
        burst,
    })
}

fn parse_match(v: Option<&Value>, path: &str) -> Result<Match> {
    let obj = match v {
        None | Some(Value::Null) => return Ok(Match::default()),
        Some(Value::Object(o)) => o,
        Some(v) => return Err(bad(path, "an object", v)),
    };
    known(obj, path, MATCH_KEYS)?;
    let list = |k: &str| crate::json::str_array(obj.get(k), &format!("{path}.{k}")).map_err(Error::in_catalog);
    let m = Match {
        methods: list("methods")?,
        tools: list("tools")?,
        prompts: list("prompts")?,
        resources: list("resources")?,
        groups: list("groups")?,
        upstreams: list("upstreams")?,
        principals: list("principals")?,
        roles: list("roles")?,
    };
    if let Some(m) = m.methods.iter().find(|m| !USES.contains(&m.as_str())) {
        return Err(Error::Catalog(format!(
            "{path}.methods: \"{m}\" is not a use a limit counts; expected {}",
            USES.join(", ")
        )));
    }
    Ok(m)
}

/// `"30s"`, `"1m"`, `"2h"`, `"1d"` (or a bare number of seconds as text) → milliseconds.
pub(crate) fn duration_ms(v: &Value, path: &str) -> Result<i64> {
    let s = v
        .as_str()
        .ok_or_else(|| bad(path, "a duration like \"30s\", \"1m\", \"1h\" or \"1d\"", v))?;
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let scale = match unit {
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => 0,
    };
    match n.parse::<i64>() {
        Ok(n) if n > 0 && scale > 0 && n <= 1_000_000 => Ok(n * scale),
        _ => Err(Error::Catalog(format!(
            "{path} \"{s}\" is not a duration; expected a positive number with s, m, h or d, like \"1m\""
        ))),
    }
}

fn known(obj: &Map<String, Value>, path: &str, keys: &[&str]) -> Result<()> {
    match obj.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(Error::Catalog(format!(
            "{path} has an unknown field \"{k}\"; expected: {}",
            keys.join(", ")
        ))),
        None => Ok(()),
    }
}

fn bad(path: &str, expected: &str, got: &Value) -> Error {
    Error::Catalog(format!("{path} must be {expected}, got {}", type_name(got)))
}
