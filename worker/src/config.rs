//! The Worker's configuration, read once per isolate: the catalog document (the
//! `MCP_SIEVE_CONFIG` variable, else the `config` key of the `MCP_SIEVE_KV` namespace when bound,
//! else the embedded default) and the transport options (`http::Config::from_vars`). Validated
//! together; an invalid configuration is kept as its error, which every request then receives.
//! `MCP_SIEVE_DIAGNOSTICS` (for tests only) turns on the shell's diagnostics (`shell::respond`,
//! `shell::run`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use mcp_sieve::http;
use mcp_sieve::protocol::Server;
use mcp_sieve::{Catalog, Error};
use worker::Env;

use crate::platform;

/// The embedded default catalog.
const DEFAULT_CATALOG: &str = include_str!("../../catalog/default.json");
/// The KV binding that may hold the catalog document under the key `config`.
const KV_BINDING: &str = "MCP_SIEVE_KV";

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
}

/// Whether `MCP_SIEVE_DIAGNOSTICS` is set (read with the configuration). Tests only: it lets any
/// client crash its own request on purpose.
pub fn diagnostics() -> bool {
    DIAGNOSTICS.get()
}

/// A variable or secret, if set.
fn var(env: &Env, name: &str) -> Option<String> {
    env.secret(name).or_else(|_| env.var(name)).ok().map(|v| v.to_string())
}

async fn read(env: &Env) -> Config {
    let transport = http::Config::from_vars(&|name| var(env, name)).map(|mut cfg| {
        if cfg.session_secret.is_none() {
            // Without a configured secret, session ids are tagged with one of this isolate's:
            // sound for one isolate (`wrangler dev`); a deployment sets the secret so that every
            // isolate recognises every session.
            crate::log::warn("MCP_SIEVE_SESSION_SECRET is not set; using a random one for this isolate");
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

async fn read_catalog(env: &Env) -> Result<Server, Error> {
    let (text, source) = match var(env, "MCP_SIEVE_CONFIG").filter(|t| !t.trim().is_empty()) {
        Some(t) => (t, "MCP_SIEVE_CONFIG"),
        None => match env.kv(KV_BINDING) {
            Ok(kv) => match kv.get("config").text().await {
                Ok(Some(t)) => (t, "MCP_SIEVE_KV key \"config\""),
                Ok(None) => (DEFAULT_CATALOG.to_string(), "the embedded catalog"),
                Err(e) => return Err(Error::Config(format!("cannot read {KV_BINDING} key \"config\": {e}"))),
            },
            Err(_) => (DEFAULT_CATALOG.to_string(), "the embedded catalog"),
        },
    };
    let lockdown = mcp_sieve::catalog::Lockdown::var_enables(var(env, mcp_sieve::catalog::Lockdown::VAR).as_deref());
    let text = match lockdown {
        true => mcp_sieve::catalog::Lockdown::enable_in(&text).map_err(|e| Error::Config(format!("{source}: {e}")))?,
        false => text,
    };
    let catalog =
        Catalog::from_json_str(&text).map_err(|e| Error::Config(format!("{source}: {}", every_error(&text, e))))?;
    let server = Server::new(catalog);
    crate::gateway::configure(&server, env, &|name| var(env, name))
        .map_err(|e| Error::Config(format!("{source}: {e}")))?;
    Ok(server)
}

/// What is wrong with a catalog document the loader refused (`first`): every error of it, so an
/// operator fixes them in one go (only when it did not load: a valid one is never read twice).
fn every_error(text: &str, first: Error) -> String {
    let all = serde_json::from_str(text)
        .map(|doc| Catalog::problems(&doc, None))
        .unwrap_or_default();
    if all.len() < 2 {
        return first.to_string();
    }
    let all: Vec<String> = all.iter().map(Error::to_string).collect();
    format!("{} errors: {}", all.len(), all.join("; "))
}

/// The configuration of this isolate, if a request has read it already.
pub fn loaded() -> Option<Loaded> {
    LOADED.with(|c| c.borrow().clone())
}

/// The configuration of this isolate (read on first use).
pub async fn load(env: &Env) -> Loaded {
    if let Some(l) = loaded() {
        return l;
    }
    DIAGNOSTICS.set(var(env, "MCP_SIEVE_DIAGNOSTICS").is_some_and(|v| matches!(v.trim(), "1" | "true")));
    let loaded = Rc::new(read(env).await);
    LOADED.with(|c| c.borrow_mut().get_or_insert(loaded).clone())
}
