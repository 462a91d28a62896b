//! The Worker's configuration: the catalog document (the `MCP_SIEVE_CONFIG` variable, else the
//! `config` key of the `MCP_SIEVE_KV` namespace when bound, else the embedded default) and the
//! transport options (`http::Config::from_vars`), read on an isolate's first request. Validated
//! together; an invalid configuration is kept as its error, which every request then receives.
//! Change without a restart: when the document is not the variable's and the namespace is
//! bound, each isolate reads the `config` key again on requests (a GET stream's ticks among
//! them), at most every [`CHECK_MS`]; a changed value is built whole — server, gateway over its
//! upstreams, keeping the lists of those unchanged (`gateway::install`) — and only then put in
//! place for the requests that follow (a session keeps its view and concerns; its GET stream
//! sends `list_changed`); a value with errors changes nothing
//! and logs each error with its line and field. Variables, secrets and bindings (among them
//! `MCP_SIEVE_CONFIG` and the upstreams' service bindings) change only with a deploy.
//! The `config` key may hold the document's prepared form (`mcp-sieve prepare`,
//! `mcp_sieve::catalog::prepared`): loaded from its index without parsing the primitive lists; a
//! form this build does not read (another version, a corrupt index) is logged and its JSON
//! document loaded instead. Its first line carries a digest of the value, which the look every
//! [`CHECK_MS`] compares instead of hashing the whole value.
//! `MCP_SIEVE_DIAGNOSTICS` (for tests only) turns on the shell's diagnostics (`shell::respond`,
//! `shell::run`).

use std::cell::{Cell, RefCell};
use std::hash::{BuildHasher, Hasher};
use std::rc::Rc;

use mcp_sieve::catalog::{locate, prepared};
use mcp_sieve::http;
use mcp_sieve::protocol::Server;
use mcp_sieve::{Catalog, Error};
use worker::kv::KvStore;
use worker::Env;

use crate::platform;
use crate::telemetry::log;
use crate::upstream::gateway;

/// The embedded default catalog.
const DEFAULT_CATALOG: &str = include_str!("../../catalog/default.json");
/// The KV binding that may hold the catalog document under the key [`KV_KEY`].
const KV_BINDING: &str = "MCP_SIEVE_KV";
const KV_KEY: &str = "config";
/// How often an isolate reads the KV key again, at most (on requests).
const CHECK_MS: i64 = 5_000;

/// The transport options and the catalog, each validated, or what is wrong with it. They are kept
/// apart so that the transport's gate (Origin, token) runs before a catalog error is shown.
pub struct Config {
    /// `MCP_SIEVE_ALLOWED_ORIGINS`, `MCP_SIEVE_TOKEN`, `MCP_SIEVE_CORS`, `MCP_SIEVE_MAX_BODY`.
    pub transport: Result<http::Config, Error>,
    /// The server over the catalog document.
    pub server: Result<Server, Error>,
}

/// This isolate's configuration.
pub type Loaded = Rc<Config>;

thread_local! {
    static LOADED: RefCell<Option<Loaded>> = const { RefCell::new(None) };
    static DIAGNOSTICS: Cell<bool> = const { Cell::new(false) };
    static ENV: RefCell<Option<Env>> = const { RefCell::new(None) };
}

/// Whether `MCP_SIEVE_DIAGNOSTICS` is set (read with the configuration). Tests only: it lets any
/// client crash its own request on purpose.
pub fn diagnostics() -> bool {
    DIAGNOSTICS.get()
}

/// The Worker's environment (bindings, secrets), once a request has loaded the configuration.
pub fn env() -> Option<Env> {
    ENV.with_borrow(Clone::clone)
}

/// A variable or secret, if set.
pub fn var(env: &Env, name: &str) -> Option<String> {
    env.secret(name).or_else(|_| env.var(name)).ok().map(|v| v.to_string())
}

async fn read(env: &Env) -> Config {
    let transport = http::Config::from_vars(&|name| var(env, name)).map(|mut cfg| {
        if cfg.session_secret.is_none() {
            // Without a configured secret, session ids are tagged with one of this isolate's:
            // sound for one isolate (`wrangler dev`); a deployment sets the secret so that every
            // isolate recognises every session.
            log::warn("MCP_SIEVE_SESSION_SECRET is not set; using a random one for this isolate");
            cfg.session_secret = Some(http::Secret::new(format!(
                "{}{}",
                platform::fresh_id(),
                platform::fresh_id()
            )));
        }
        cfg
    });
    let server = read_catalog(env).await;
    // Who may call: the catalog's `auth` block (tokens then verified by `auth::authenticate`).
    let transport = transport.map(|mut cfg| {
        cfg.auth = server.as_ref().ok().and_then(|s| s.catalog().auth.clone());
        cfg
    });
    Config { transport, server }
}

/// Where the catalog document came from.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    Var,
    Kv,
    Embedded,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Var => "MCP_SIEVE_CONFIG",
            Source::Kv => "MCP_SIEVE_KV key \"config\"",
            Source::Embedded => "the embedded catalog",
        }
    }
}

/// A catalog document as read: its JSON text and, for a prepared form, its first line and index.
struct Document {
    text: String,
    prepared: Option<(prepared::Header, Vec<u8>)>,
}

impl Document {
    fn json(text: String) -> Self {
        Document { text, prepared: None }
    }

    fn embedded() -> (Self, Source) {
        (Document::json(DEFAULT_CATALOG.to_string()), Source::Embedded)
    }
}

/// The catalog document, where it came from (the embedded catalog when the variable is empty and
/// the KV key absent or unbound) and, read from KV, what [`seen`] makes of its value.
async fn document(env: &Env) -> Result<(Document, Source, Option<u64>), Error> {
    if let Some(t) = variable_document(env) {
        return Ok((Document::json(t), Source::Var, None));
    }
    let Ok(kv) = env.kv(KV_BINDING) else {
        let (doc, source) = Document::embedded();
        return Ok((doc, source, None));
    };
    match kv_value(&kv).await? {
        Some(value) => {
            let seen = seen(&value);
            Ok((kv_document(value)?, Source::Kv, Some(seen)))
        }
        None => {
            let (doc, source) = Document::embedded();
            Ok((doc, source, None))
        }
    }
}

/// The document in the `MCP_SIEVE_CONFIG` variable, when it is set and not blank (read by the
/// request's load and by [`preload`] alike).
fn variable_document(env: &Env) -> Option<String> {
    var(env, "MCP_SIEVE_CONFIG").filter(|t| !t.trim().is_empty())
}

/// The `config` key's value (`None`: it has none). Read as bytes: read as text, a JS string would
/// be decoded from them and then encoded again into the wasm's memory (at 5,000 tools, 2.2 MB,
/// 7% of a fresh isolate's first answer).
async fn kv_value(kv: &KvStore) -> Result<Option<Vec<u8>>, Error> {
    kv.get(KV_KEY)
        .bytes()
        .await
        .map_err(|e| Error::Config(format!("cannot read {KV_BINDING} key \"{KV_KEY}\": {e}")))
}

/// The document in the `config` key's value: a JSON document, or a prepared form (its JSON and
/// its index), the JSON checked as UTF-8.
fn kv_document(mut value: Vec<u8>) -> Result<Document, Error> {
    let key = format!("{KV_BINDING} key \"{KV_KEY}\"");
    let prepared = match prepared::header(&value) {
        None => None,
        Some(Err(e)) => return Err(Error::Config(format!("{key}: {e}"))),
        Some(Ok(header)) => {
            let index = value[header.index.clone()].to_vec();
            value.truncate(header.json.end);
            value.drain(..header.json.start);
            Some((header, index))
        }
    };
    let text = String::from_utf8(value).map_err(|e| {
        Error::Config(format!(
            "{key} is not UTF-8 text (byte {}); expected a JSON document",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(Document { text, prepared })
}

async fn read_catalog(env: &Env) -> Result<Server, Error> {
    let (doc, source, seen) = document(env).await?;
    if source != Source::Var {
        if let Ok(kv) = env.kv(KV_BINDING) {
            watch(kv, env, seen);
        }
    }
    let preloaded = match PRELOADED.take() {
        // The embedded catalog is one text; a variable's is compared.
        Some(p) if p.source == source && (source == Source::Embedded || p.text == doc.text) => Some(p.built),
        // Not this document: freed on a later request (`check`), not during this first answer
        // (freeing the embedded catalog's server was 2-3 ms of it with 5,000 tools in KV).
        other => {
            UNUSED.set(other);
            None
        }
    };
    let (server, setup) = match preloaded {
        Some(built) => built,
        None => build(env, &doc, source),
    }
    .map_err(|e| e.joined())?;
    let (_, retired) = gateway::install(setup);
    retired.close().await;
    Ok(server)
}

/// The server [`preload`] built at the module's load, over the document it could read then.
struct Preloaded {
    source: Source,
    text: String,
    built: Result<(Server, Option<gateway::Setup>), Refused>,
}

thread_local! {
    static PRELOADED: RefCell<Option<Preloaded>> = const { RefCell::new(None) };
    /// A preloaded server the first request did not take, freed by a later one.
    static UNUSED: RefCell<Option<Preloaded>> = const { RefCell::new(None) };
}

/// Builds the server at the module's load (`entry.mjs`, at global scope, with the importable
/// `env`), over the document that needs no I/O to read: the `MCP_SIEVE_CONFIG` variable, else the
/// embedded catalog. The first request takes it when its document is that one (with `MCP_SIEVE_KV`
/// bound, when the key holds no value); else it is dropped and the request builds its own. On
/// Cloudflare an isolate is started while the client's TLS handshake runs, so this work overlaps
/// it; what it costs is measured at the load, beside the first answer (docs/src/performance.md,
/// "Cold start (issue 63)").
pub fn preload(env: &Env) {
    let (text, source) = match variable_document(env) {
        Some(t) => (t, Source::Var),
        None => (DEFAULT_CATALOG.to_string(), Source::Embedded),
    };
    let doc = Document::json(text);
    let built = build(env, &doc, source);
    PRELOADED.set(Some(Preloaded {
        source,
        text: doc.text,
        built,
    }));
}

/// What is wrong with a document that did not load: each error on its own, placed at its line
/// where the error names a field written in the document.
struct Refused {
    source: Source,
    errors: Vec<String>,
}

impl Refused {
    /// One error naming them all (what every request then receives).
    fn joined(self) -> Error {
        let all = match self.errors.len() {
            1 => self.errors.concat(),
            n => format!("{n} errors: {}", self.errors.join("; ")),
        };
        Error::Config(format!("{}: {all}", self.source.name()))
    }
}

/// The server over the document `doc` from `source`, and its gateway, built but not in place
/// (the lockdown variable applied, as at the first load).
fn build(env: &Env, doc: &Document, source: Source) -> Result<(Server, Option<gateway::Setup>), Refused> {
    let text = doc.text.as_str();
    let refused = |errors| Refused { source, errors };
    let lockdown = mcp_sieve::catalog::Lockdown::var_enables(var(env, mcp_sieve::catalog::Lockdown::VAR).as_deref());
    let loaded = match lockdown {
        true => std::borrow::Cow::Owned(
            mcp_sieve::catalog::Lockdown::enable_in(text).map_err(|e| refused(vec![e.to_string()]))?,
        ),
        false => std::borrow::Cow::Borrowed(text),
    };
    // A prepared form, when this build reads it (with the lockdown variable set, its JSON is
    // loaded with the lockdown written in).
    let prepared = match (&doc.prepared, lockdown) {
        (Some((header, index)), false) => match Catalog::from_prepared(text, header, index) {
            // Not logged: a line at each isolate's start cost 4 ms of its first answer under
            // wrangler dev (a profile; docs/src/performance.md, "Cold start").
            Ok(catalog) => Some(catalog),
            Err(e) => {
                log::error(format_args!(
                    "{}: {e}; its JSON document is loaded instead",
                    source.name()
                ));
                None
            }
        },
        _ => None,
    };
    let catalog = match prepared {
        Some(catalog) => catalog,
        None => Catalog::from_json_str(&loaded).map_err(|e| refused(every_error(text, &loaded, e)))?,
    };
    let server = Server::new(catalog);
    let setup = gateway::configure(&server, env, &|name| var(env, name))
        .map_err(|e| refused(vec![placed(text, e.to_string())]))?;
    // A secret the embeddings request's headers name must be set, as an upstream's must.
    (server.catalog().meaning.settings)
        .resolved_headers(&|name| var(env, name))
        .map_err(|e| refused(vec![placed(text, e.to_string())]))?;
    Ok((server, setup))
}

/// Every error of a catalog document the loader refused (`first`; `loaded`: the text it was
/// given, `text` with the lockdown applied), so an operator fixes them in one go, each placed at
/// its line in `text` (only when it did not load: a valid one is never read twice).
fn every_error(text: &str, loaded: &str, first: Error) -> Vec<String> {
    let all = serde_json::from_str(loaded)
        .map(|doc| Catalog::problems(&doc, None))
        .unwrap_or_default();
    if all.len() < 2 {
        return vec![placed(text, first.to_string())];
    }
    all.iter().map(|e| placed(text, e.to_string())).collect()
}

/// `message` (a core error naming a field of the document `text`) with the line and column
/// where that field is written, when it is.
fn placed(text: &str, message: String) -> String {
    let bare = message.strip_prefix("invalid catalog: ").unwrap_or(&message);
    match locate::position(text, &locate::leading_path(bare)) {
        Some((line, column)) => format!("line {line}, column {column}: {message}"),
        None => message,
    }
}

/// The `config` key of KV, looked at again on requests (see [`check`]).
struct Watched {
    kv: KvStore,
    env: Env,
    /// The digest of the value last seen there, applied or refused (`None`: no value).
    seen: Option<u64>,
    checked_ms: i64,
    checking: bool,
}

thread_local! {
    static WATCHED: RefCell<Option<Watched>> = const { RefCell::new(None) };
}

/// A digest of the `config` value, to tell a changed one (not a defence: the value is the
/// operator's). foldhash, 16 bytes a round: SipHash over a 2.2 MB document was 2% of a fresh
/// isolate's first answer.
fn digest(value: &[u8]) -> u64 {
    let mut h = foldhash::quality::FixedState::with_seed(0).build_hasher();
    h.write(value);
    h.finish()
}

/// What tells the `config` value from another: a prepared form's tag (its first line's digest
/// of the rest, written by `mcp-sieve prepare`: nothing hashed here), else the [`digest`] of the
/// whole value (at 5,000 tools, 2.2 MB hashed every [`CHECK_MS`] was 3% of a busy isolate's time).
fn seen(value: &[u8]) -> u64 {
    match prepared::header(value) {
        Some(Ok(h)) if !h.tag.is_empty() => digest(format!("{}{}", prepared::MAGIC, h.tag).as_bytes()),
        _ => digest(value),
    }
}

/// Watches the `config` key of `kv`, whose value was just read (`seen`: its digest; `None`: it
/// had none).
fn watch(kv: KvStore, env: &Env, seen: Option<u64>) {
    WATCHED.set(Some(Watched {
        kv,
        env: env.clone(),
        seen,
        checked_ms: platform::now_ms(),
        checking: false,
    }));
}

/// The `MCP_SIEVE_KV` namespace, once a request has loaded the configuration with it bound (the
/// tools' search vectors are read from it: `meaning`).
pub fn kv() -> Option<KvStore> {
    WATCHED.with_borrow(|w| w.as_ref().map(|w| w.kv.clone()))
}

/// Whether the `config` key is due to be looked at again (the fast path leaves such a request
/// to the full one, which looks).
pub fn check_due() -> bool {
    WATCHED.with_borrow(|w| {
        w.as_ref()
            .is_some_and(|w| !w.checking && platform::now_ms() - w.checked_ms >= CHECK_MS)
    })
}

/// Ends a check when dropped (also when the request running it is dropped mid-read).
struct Checking;

impl Drop for Checking {
    fn drop(&mut self) {
        WATCHED.with_borrow_mut(|w| {
            if let Some(w) = w.as_mut() {
                w.checking = false;
            }
        });
    }
}

/// Reads the `config` key again when due (one read at a time, at most every [`CHECK_MS`]); a
/// changed value is built whole and then put in place; one with errors changes nothing.
async fn check() {
    drop(UNUSED.take());
    let due = WATCHED.with_borrow_mut(|w| {
        let w = w.as_mut().filter(|w| !w.checking)?;
        let now = platform::now_ms();
        if now - w.checked_ms < CHECK_MS {
            return None;
        }
        (w.checking, w.checked_ms) = (true, now);
        Some((w.kv.clone(), w.env.clone(), w.seen))
    });
    let Some((kv, env, seen)) = due else {
        return;
    };
    let _checking = Checking;
    let value = match kv_value(&kv).await {
        Ok(v) => v,
        Err(e) => return log::error(format_args!("reload: {e}; the running configuration stays")),
    };
    let now_seen = value.as_deref().map(self::seen);
    if now_seen == seen {
        return;
    }
    let (doc, source) = match value.map(kv_document) {
        Some(Ok(doc)) => (doc, Source::Kv),
        Some(Err(e)) => return log::error(format_args!("reload: {e}; the running configuration stays")),
        None => Document::embedded(),
    };
    WATCHED.with_borrow_mut(|w| w.as_mut().map(|w| w.seen = now_seen));
    let started = platform::now_ms();
    match build(&env, &doc, source) {
        Err(refused) => {
            for e in &refused.errors {
                log::error(format_args!("reload: {}: {e}", source.name()));
            }
            log::error(format_args!(
                "reload: {} not applied ({} error(s)); the running configuration stays",
                source.name(),
                refused.errors.len()
            ));
        }
        Ok((mut server, setup)) => {
            let Some(old) = loaded() else { return };
            let before = upstream_names(old.server.as_ref().ok());
            let after = upstream_names(Some(&server));
            if let Ok(s) = &old.server {
                // Cursors issued before the change are refused.
                server.version = s.version + 1;
            }
            // The transport's options are variables (a deploy changes them) and its session
            // secret stays (a random one too: sessions carry on); who may call is the catalog's.
            let transport = old.transport.clone().map(|mut cfg| {
                cfg.auth = server.catalog().auth.clone();
                cfg
            });
            let (kept, retired) = gateway::install(setup);
            LOADED.set(Some(Rc::new(Config {
                transport,
                server: Ok(server),
            })));
            log::info(format_args!(
                "reload: {} applied in {} ms ({} upstreams{}{}{}); bindings, variables and secrets change only with a deploy",
                source.name(),
                platform::now_ms() - started,
                after.len(),
                list(", started: ", after.iter().filter(|n| !before.contains(n))),
                list(", stopped: ", before.iter().filter(|n| !after.contains(n))),
                list(", lists kept: ", kept.iter()),
            ));
            retired.close().await;
        }
    }
}

fn upstream_names(server: Option<&Server>) -> Vec<String> {
    server.map_or_else(Vec::new, |s| {
        s.catalog().upstreams.iter().map(|u| u.name.clone()).collect()
    })
}

/// `prefix` and the names, or nothing when there are none.
fn list<'a>(prefix: &str, names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    match names.is_empty() {
        true => String::new(),
        false => format!("{prefix}{}", names.join(", ")),
    }
}

/// The configuration of this isolate, if a request has read it already.
pub fn loaded() -> Option<Loaded> {
    LOADED.with(|c| c.borrow().clone())
}

/// The configuration requests run on now, after looking at the KV key `config` again when due
/// (`None` before the first request read it).
pub async fn current() -> Option<Loaded> {
    if loaded().is_some() {
        check().await;
    }
    loaded()
}

/// The configuration of this isolate (read on first use).
pub async fn load(env: &Env) -> Loaded {
    if let Some(l) = current().await {
        return l;
    }
    DIAGNOSTICS.set(var(env, "MCP_SIEVE_DIAGNOSTICS").is_some_and(|v| matches!(v.trim(), "1" | "true")));
    ENV.set(Some(env.clone()));
    let loaded = Rc::new(read(env).await);
    LOADED.with(|c| c.borrow_mut().get_or_insert(loaded).clone())
}
