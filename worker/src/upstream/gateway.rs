//! Gateway mode in the Worker: moves the bytes of the core's upstream conversations
//! (`mcp_sieve::upstream`) over `worker::Fetch` (an upstream's `url`) or a service binding
//! (`{"service": "BINDING"}`: another Worker, no network hop). This isolate keeps one conversation
//! with each upstream and the catalog served over them; every rule — sessions, ids, re-open,
//! paging, refresh (one in flight per upstream), merging, routing, forwarding, failure
//! isolation — is in the core. Secrets in an upstream's headers (`${NAME}`) are the Worker's
//! secrets and variables, resolved once per isolate ([`configure`]).
//!
//! This file is the isolate's gateway: built for a catalog ([`configure`]), put in place
//! ([`install`]), and reached ([`with`]). Its parts, one concern each, named as the native
//! server's `upstream/gateway/`: `relaying` (what carries out an upstream's messages during a
//! call), `drivers` (the bytes of a request over fetch or a service binding), `auth` (every
//! request signed for its principal, or with the gateway's own token), `pins` (the pins from
//! KV, read again before each refresh), `refresh` (refreshes, retries and checks: the server a
//! request runs on), `forward` (a request's item used at its upstream), `closing` (upstream
//! sessions ended) and `status` (the operator's view).

use std::cell::RefCell;
use std::rc::Rc;

use mcp_sieve::catalog::{Grant, Limits, Transport};
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream;
use mcp_sieve::Error;
use worker::kv::KvStore;
use worker::{Env, ObjectNamespace};

use crate::oauth::upstream_tokens;
use crate::telemetry::log;

mod auth;
mod closing;
mod drivers;
mod forward;
mod pins;
mod refresh;
mod relaying;
mod status;

pub use auth::Reach;
use auth::Signer;
pub(crate) use auth::{signing, Unanswered};
pub(crate) use closing::{close, close_at};
pub use closing::{close_session, Retired};
use drivers::Driver;
pub(crate) use drivers::{http_url, read_answer};
pub use forward::{finish, finish_relayed, pass_on, relays_stateless, set_opener};
pub(crate) use forward::{found, noted};
pub use refresh::{ready, ready_to_forward, serving, serving_for};
pub use relaying::{LocalFuture, Refusing, Relaying};
pub use status::status;

thread_local! {
    /// The gateway in place, and the server it was built for (see [`with`]; holding it keeps its
    /// catalog, whose address `with` recognises, alive).
    static STATE: RefCell<Option<(Server, upstream::Gateway)>> = const { RefCell::new(None) };
    static DRIVERS: RefCell<Vec<Driver>> = const { RefCell::new(Vec::new()) };
    /// Each upstream's budgets (its `limits`), in the catalog's order.
    static LIMITS: RefCell<Vec<Limits>> = const { RefCell::new(Vec::new()) };
    /// The KV namespace holding the pins (`pins`), when bound.
    static PINS: RefCell<Option<KvStore>> = const { RefCell::new(None) };
    /// How each upstream's requests are authorized, when they are (`oauth::sign_in`), and the
    /// namespace of the tokens' objects.
    static SIGNING: RefCell<(Vec<Option<Signer>>, Option<ObjectNamespace>)> = const { RefCell::new((Vec::new(), None)) };
}

/// A gateway built for one catalog's upstreams ([`configure`]), not yet in place ([`install`]):
/// a reload builds the new one whole before the old one is dropped.
pub struct Setup {
    built_for: Server,
    gateway: upstream::Gateway,
    drivers: Vec<Driver>,
    limits: Vec<Limits>,
    pins: Option<KvStore>,
    signing: (Vec<Option<Signer>>, Option<ObjectNamespace>),
}

/// Builds a gateway for `server`'s upstreams (`None` when it names none): their headers'
/// secrets from `env`, their service bindings. A stdio upstream, a missing secret or a missing
/// binding is a configuration error naming it. Nothing is put in place ([`install`] does).
pub fn configure(server: &Server, env: &Env, var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Setup>, Error> {
    let ups = &server.catalog().upstreams;
    if ups.is_empty() {
        return Ok(None);
    }
    let mut drivers = Vec::new();
    for up in ups {
        let at = if up.name.is_empty() {
            "upstream".to_string()
        } else {
            format!("upstreams.{}", up.name)
        };
        drivers.push(match &up.transport {
            // Sent to as the URL parser resolves it: the URL a token is checked against.
            Transport::Http(url) => Driver::Http(upstream::oauth::request_url(url)),
            Transport::Service(b) => Driver::Service(
                b.clone(),
                env.service(b).map_err(|_| {
                    Error::Catalog(format!("{at}.service: this Worker has no service binding \"{b}\" (add it to [[services]] in wrangler.toml)"))
                })?,
            ),
            Transport::Stdio { command, .. } => {
                return Err(Error::Catalog(format!(
                    "{at}.command (\"{command}\"): a stdio upstream runs only in the native server; a Worker reaches an upstream by url or by service binding"
                )))
            }
        });
    }
    // Their questions mid-call are relayed to a session's client that made the call (`relay`).
    // Roots too, for clients that declare them: the Durable Object of a session reads its
    // upstream sessions' standalone streams, where servers ask for them (`standalone`).
    // Upstreams each caller signs in to (`"auth": "oauth"`): tokens per principal (`oauth::sign_in`),
    // and no upstream session shared by stateless callers there (`tokens_per_principal`);
    // those with `"grant": "client_credentials"`: the gateway's own token.
    let mut signing: Vec<Option<Signer>> = Vec::new();
    for u in ups {
        signing.push(match (&u.auth, u.url()) {
            (Some(a), Some(_)) if a.grant == Grant::ClientCredentials => {
                let secret = u.resolved_client_secret(var)?;
                let auth = upstream_tokens::AuthAsk::of(u, secret);
                Some(Signer::Machine(u.name.clone(), Rc::new(auth)))
            }
            (Some(_), Some(_)) => Some(Signer::Person(u.name.clone())),
            _ => None,
        });
    }
    let tokens = match signing.iter().any(Option::is_some) {
        true => Some(env.durable_object(upstream_tokens::BINDING).map_err(|_| {
            Error::Catalog(format!(
                "an upstream with \"auth\" needs the Durable Object binding {} (class UpstreamTokens) in wrangler.toml",
                upstream_tokens::BINDING
            ))
        })?),
        false => None,
    };
    let gateway = upstream::Gateway::with_secrets(ups, var)?
        .redacting(&upstream::Secrets::own(var))
        .relaying()
        .with_roots()
        .tokens_per_principal();
    Ok(Some(Setup {
        built_for: server.clone(),
        gateway,
        drivers,
        limits: ups.iter().map(|u| u.limits).collect(),
        pins: env.kv(pins::PINS_BINDING).ok(),
        signing: (signing, tokens),
    }))
}

/// Puts `setup` in place as this isolate's gateway (`None`: no gateway, a catalog of its own)
/// and returns the names of the upstreams whose lists it kept, and what the gateway it replaced
/// leaves to close. What that one fetched from an unchanged upstream that was up carries over
/// ([`carry_over`]), so a reload asks only the changed upstreams; its own sessions at the others
/// are to be closed ([`Retired::close`]); its downstream sessions' sessions at upstreams removed
/// are closed by the readers of their streams (`relay::standalone`), if any. A request that began
/// on it and uses it after this finds none
/// ([`with`]) unless the new one fronts the same upstreams.
pub fn install(setup: Option<Setup>) -> (Vec<String>, Retired) {
    let (mut state, drivers, limits, pins, signing) = match setup {
        Some(s) => (Some((s.built_for, s.gateway)), s.drivers, s.limits, s.pins, s.signing),
        None => (None, Vec::new(), Vec::new(), None, (Vec::new(), None)),
    };
    let old = STATE.with(|s| s.borrow_mut().take());
    let kept = match (state.as_mut(), &old) {
        (Some((built, g)), Some((_, old))) => carry_over(built, g, old),
        _ => Vec::new(),
    };
    // Taken while the drivers in place are the old gateway's.
    let retired = old.map_or_else(Retired::default, |(_, o)| {
        Retired::of(&o, state.as_ref().map(|(_, g)| g))
    });
    SIGNING.with(|s| *s.borrow_mut() = signing);
    STATE.with(|s| *s.borrow_mut() = state);
    DRIVERS.with(|d| *d.borrow_mut() = drivers);
    LIMITS.with(|l| *l.borrow_mut() = limits);
    PINS.with(|p| *p.borrow_mut() = pins);
    (kept, retired)
}

/// Lends `g`, built for `local`, what `old` holds of each unchanged upstream that was up (its
/// lists, the conversation they were fetched over, the session stateless callers share there:
/// `upstream::Gateway::carry_over`) and the pins `old` read last (the same KV key; the next
/// refresh reads it again), and builds its server over them at once. Returns the names of the
/// upstreams kept; on an error nothing is kept and the next request fetches every list, as at a
/// start.
fn carry_over(local: &Server, g: &mut upstream::Gateway, old: &upstream::Gateway) -> Vec<String> {
    let carried = g
        .set_pins(local.catalog(), old.pins().clone())
        .and_then(|_| g.carry_over(old, local.catalog(), crate::platform::now_ms()));
    match carried {
        Ok(Some(r)) => r.log.iter().for_each(log::warn),
        Ok(None) => return Vec::new(),
        Err(e) => {
            log::error(format_args!(
                "reload: the unchanged upstreams' lists were not kept: {e}"
            ));
            return Vec::new();
        }
    }
    (0..g.len())
        .filter(|&i| g.has_lists(i))
        .filter_map(|i| g.upstream_at(i).map(|u| u.name.clone()))
        .collect()
}

/// Runs `f` on this isolate's gateway state (`None` when not a gateway, or when `server` was
/// built for upstreams a reload has replaced since: `config`).
///
/// Called six to ten times a request, so the upstreams are compared only when the catalog
/// changed: `server` is known by its catalog's address when it is the server the gateway was
/// built for or the one it serves now (both alive, so an equal address is the same catalog);
/// otherwise (a request begun before a reload, a principal's own lists) its upstreams are
/// compared as before. Comparing five upstreams took ~1.8 µs (native, release, a loaded
/// 2-core machine), the address a few ns.
pub(crate) fn with<T>(server: &Server, f: impl FnOnce(&mut upstream::Gateway) -> T) -> Option<T> {
    if !server.is_gateway() {
        return None;
    }
    let catalog = server.catalog();
    STATE.with(|s| match s.borrow_mut().as_mut() {
        Some((built, g))
            if std::ptr::eq(built.catalog(), catalog)
                || g.server().is_some_and(|now| std::ptr::eq(now.catalog(), catalog))
                || built.catalog().upstreams == catalog.upstreams =>
        {
            Some(f(g))
        }
        _ => None,
    })
}

/// The number of the upstream named `name` and reached over `transport` in the gateway in place.
fn position(name: &str, transport: &Transport) -> Option<usize> {
    STATE.with(|s| {
        let s = s.borrow();
        let g = &s.as_ref()?.1;
        (0..g.len()).find(|&i| {
            g.upstream_at(i)
                .is_some_and(|u| u.name == name && &u.transport == transport)
        })
    })
}

/// Upstream `member` announced that its lists changed: they are fetched again.
pub(crate) fn note_announced(member: usize) {
    STATE.with(|s| {
        if let Some((_, g)) = s.borrow_mut().as_mut() {
            g.note_announced(member);
        }
    });
}

/// Upstream `member`'s budgets (the defaults when it has none).
pub(crate) fn limits(member: usize) -> Limits {
    LIMITS.with(|l| l.borrow().get(member).copied().unwrap_or_default())
}

/// The error of an exchange past its upstream's deadline.
pub(crate) fn late(limits: &Limits) -> Error {
    Error::Upstream(format!(
        "no answer within {} s (limits.callTimeoutSeconds)",
        limits.call_ms / 1000
    ))
}
