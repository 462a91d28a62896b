//! Gateway mode in the Worker: moves the bytes of the core's upstream conversations
//! (`mcp_sieve::upstream`) over `worker::Fetch` (an upstream's `url`) or a service binding
//! (`{"service": "BINDING"}`: another Worker, no network hop). This isolate keeps one conversation
//! with each upstream and the catalog served over them; every rule — sessions, ids, re-open,
//! paging, refresh (one in flight per upstream), merging, routing, forwarding, failure
//! isolation — is in the core. Secrets in an upstream's headers (`${NAME}`) are the Worker's
//! secrets and variables, resolved once per isolate ([`configure`]). The pins of `"pinning"` are
//! the `pins` key of the `MCP_SIEVE_KV` namespace (what `mcp-sieve pin --kv` prints), read again
//! before each refresh, so an approval reaches an isolate with its next refresh. An upstream with
//! `auth` gets, on every request (POSTs, its sessions' GET streams and DELETEs), the token of the
//! principal it is sent for, or the gateway's own for a `client_credentials` one ([`Signer`]).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{select, Either};
use futures_util::StreamExt;
use mcp_sieve::catalog::{Grant, Limits, Transport};
use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::protocol::{Forward, Server};
use mcp_sieve::upstream::{self, HttpAnswer, Job, Post, Serving};
use mcp_sieve::Error;
use wasm_bindgen::JsCast;
use worker::kv::KvStore;
use worker::{AbortController, AbortSignal, Delay, Env, Fetcher, ObjectNamespace, Request};

use crate::oauth::sign_in;
use crate::oauth::upstream_tokens;
use crate::platform::now_ms;
use crate::telemetry::log;

/// A future a [`Relaying`] hands back.
pub type LocalFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

/// What carries out the upstream's messages during a forwarded call (`relay::Relaying` for a
/// session's call that streams; [`Refusing`] for one whose client cannot be reached).
pub trait Relaying {
    /// Carries out what `msg`, sent by the upstream during the exchange, becomes; returns the
    /// answer to send the upstream (in the same session), if any.
    fn handle(&self, msg: serde_json::Value) -> LocalFuture<'_, Option<serde_json::Value>>;
    /// Whether `note` (a notification of the reply) was carried already.
    fn relays(&self, note: &serde_json::Value) -> bool;
    /// Whether a question went to the client during the exchange.
    fn asked(&self) -> bool;
    /// The answer completed with the exchange's outcome (`upstream::forwarded`, in its store).
    fn forwarded(
        &self,
        answer: http::Response,
        conv: &upstream::Conversation,
        reply: Result<upstream::Reply, Error>,
    ) -> http::Response;
}

/// The relay of a call whose client cannot be reached while it runs (stateless, or no SSE):
/// what the upstream asks is refused at once; its notifications go with the result.
pub struct Refusing(RefCell<upstream::Relay>);

impl Refusing {
    pub(crate) fn new(f: &mcp_sieve::protocol::Forward) -> Self {
        Refusing(RefCell::new(
            upstream::Relay::new(f, &crate::platform::fresh_id(), false).0,
        ))
    }
}

impl Relaying for Refusing {
    fn handle(&self, msg: serde_json::Value) -> LocalFuture<'_, Option<serde_json::Value>> {
        let step = self.0.borrow_mut().on_message(&msg);
        Box::pin(async move {
            match step {
                upstream::Relayed::Reply(m) => Some(m),
                _ => None,
            }
        })
    }
    fn relays(&self, _: &serde_json::Value) -> bool {
        false
    }
    fn asked(&self) -> bool {
        false // it refuses every question
    }
    fn forwarded(
        &self,
        answer: http::Response,
        conv: &upstream::Conversation,
        reply: Result<upstream::Reply, Error>,
    ) -> http::Response {
        upstream::forwarded(answer, conv, reply, &mut http::MemoryStore::default(), now_ms())
    }
}

/// How long a request waits for a refresh another request runs, before answering 502.
const MAX_REFRESH_WAIT_MS: i64 = 60_000;

/// How the bytes reach one upstream.
#[derive(Clone)]
enum Driver {
    Http(String),
    Service(String, Fetcher),
}

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

/// How the requests to an upstream with `"auth": "oauth"` are authorized.
#[derive(Clone)]
pub(crate) enum Signer {
    /// Each principal signs in to upstream `.0` (authorization code): that principal's token.
    Person(String),
    /// The gateway's own token for upstream `.0` (client credentials, its `auth` with the
    /// secret resolved), the same for every principal.
    Machine(String, Rc<upstream_tokens::AuthAsk>),
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

/// What opens the standalone stream of a session's upstream session once it is confirmed: upstream,
/// the headers of its `GET`, the downstream session it is read for (`standalone::open`, set by
/// the session's Durable Object; none in the front Worker, which serves no session's call).
pub type Opener = fn(usize, Vec<(String, String)>, String) -> LocalFuture<'static, ()>;

thread_local! {
    static OPENER: std::cell::Cell<Option<Opener>> = const { std::cell::Cell::new(None) };
}

/// Sets what opens the standalone streams of sessions' upstream sessions (see [`Opener`]).
pub fn set_opener(open: Opener) {
    OPENER.with(|o| o.set(Some(open)));
}

/// The KV binding and key of the pins.
const PINS_BINDING: &str = "MCP_SIEVE_KV";
const PINS_KEY: &str = "pins";

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
        pins: env.kv(PINS_BINDING).ok(),
        signing: (signing, tokens),
    }))
}

/// Puts `setup` in place as this isolate's gateway (`None`: no gateway, a catalog of its own).
/// The one in place before is dropped: its upstream sessions are left to expire at their
/// upstreams, its cached lists go, and a request that began on it and uses it after this finds
/// none ([`with`]) unless the new one fronts the same upstreams.
pub fn install(setup: Option<Setup>) {
    let (state, drivers, limits, pins, signing) = match setup {
        Some(s) => (Some((s.built_for, s.gateway)), s.drivers, s.limits, s.pins, s.signing),
        None => (None, Vec::new(), Vec::new(), None, (Vec::new(), None)),
    };
    SIGNING.with(|s| *s.borrow_mut() = signing);
    STATE.with(|s| *s.borrow_mut() = state);
    DRIVERS.with(|d| *d.borrow_mut() = drivers);
    LIMITS.with(|l| *l.borrow_mut() = limits);
    PINS.with(|p| *p.borrow_mut() = pins);
}

/// Reads the pins from KV and hands them to the core (which rebuilds at once when they
/// changed). No namespace or no key: no pins; a broken value keeps the pins read before.
async fn read_pins(local: &Server) {
    if local.catalog().pinning.mode == mcp_sieve::pin::Mode::Off {
        return;
    }
    let Some(kv) = PINS.with(|p| p.borrow().clone()) else {
        return;
    };
    let pins = match kv.get(PINS_KEY).text().await {
        Ok(Some(text)) => match mcp_sieve::pin::Pins::parse(&text) {
            Ok(p) => p,
            Err(e) => {
                log::error(format_args!(
                    "pinning: {PINS_BINDING} key \"{PINS_KEY}\": {e}; the pins read before stay"
                ));
                return;
            }
        },
        Ok(None) => mcp_sieve::pin::Pins::default(),
        Err(e) => {
            log::error(format_args!(
                "pinning: cannot read {PINS_BINDING} key \"{PINS_KEY}\": {e}"
            ));
            return;
        }
    };
    match with(local, |g| g.set_pins(local.catalog(), pins)) {
        Some(Ok(Some(r))) => r.log.iter().for_each(log::warn),
        Some(Err(e)) => log::error(format_args!("pinning: {e}")),
        _ => {}
    }
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

/// One message to upstream `member` over its driver, on behalf of nobody ([`send_for`]).
/// What the upstream sends meanwhile is carried out by `relaying` (else refused or dropped as
/// the core's relay says for a caller it cannot reach).
pub(crate) async fn send(member: usize, p: Post, relaying: Option<&dyn Relaying>) -> Result<HttpAnswer, Error> {
    send_for(member, p, relaying, None).await
}

/// [`send`], with the answer's `WWW-Authenticate` header when it is a 401 or 403.
async fn send_challenged(
    member: usize,
    p: Post,
    relaying: Option<&dyn Relaying>,
) -> Result<(HttpAnswer, Option<String>), Error> {
    match target(member) {
        Some((url, via)) => post(&url, via, p, relaying, limits(member)).await,
        None => Err(Error::Internal(format!("no upstream number {member}"))),
    }
}

/// One message to upstream `member` on behalf of `principal`: to an upstream its callers sign
/// in to, with that principal's token only (asked of its object, refreshed there when due), or
/// not at all (the error says where to sign in); to a `client_credentials` upstream with the
/// gateway's own token ([`machine`]); to any other, as it is.
pub(crate) async fn send_for(
    member: usize,
    mut p: Post,
    relaying: Option<&dyn Relaying>,
    principal: Option<&str>,
) -> Result<HttpAnswer, Error> {
    let (name, ns) = match signing(member) {
        None => return send_challenged(member, p, relaying).await.map(|(a, _)| a),
        Some((Signer::Machine(name, auth), ns)) => return machine(member, p, relaying, &name, &auth, &ns).await,
        Some((Signer::Person(name), ns)) => (name, ns),
    };
    let url = http_url(member).unwrap_or_default();
    let header = sign_in::bearer(&ns, principal, &name, &url, limits(member).sign_in_ms).await?;
    authorize(&mut p.headers, header);
    let (answer, www) = send_challenged(member, p, relaying).await?;
    if answer.status == 401 {
        return Err(sign_in::sign_in_error(&name, "the upstream refused your token"));
    }
    // Step-up: the upstream wants more scopes than this principal's token has. The principal's
    // object keeps them (with those granted) for its next sign-in, which the error points to.
    if let Some(wanted) = wanted_scope(&answer, www.as_deref()) {
        let scope = sign_in::widen(&ns, principal, &name, &wanted).await?;
        return Err(sign_in::sign_in_error(
            &name,
            &format!("it needs the scopes \"{scope}\""),
        ));
    }
    Ok(answer)
}

/// `headers` with `header` as their only `Authorization`.
fn authorize(headers: &mut Vec<(String, String)>, header: String) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
    headers.push(("Authorization".into(), header));
}

/// The scopes an upstream's `answer` (with its `WWW-Authenticate`, `www`) asks for when it is a
/// step-up (403 `insufficient_scope`, `upstream::oauth::step_up_scope`).
fn wanted_scope(answer: &HttpAnswer, www: Option<&str>) -> Option<String> {
    let challenge = (answer.status == 403).then(|| www.and_then(upstream::oauth::parse_challenge))??;
    upstream::oauth::step_up_scope(403, Some(&challenge), None)?;
    Some(challenge.scope.unwrap_or_default())
}

/// `p` to the `client_credentials` upstream `member` (`name`, `auth`) with the gateway's own
/// token (the gateway's object in `ns` keeps it): one the upstream refuses (401) is asked for
/// again, and one without the scopes it asks for (403 `insufficient_scope`) is asked for again
/// with them — once; refused again, the error says so.
async fn machine(
    member: usize,
    mut p: Post,
    relaying: Option<&dyn Relaying>,
    name: &str,
    auth: &upstream_tokens::AuthAsk,
    ns: &ObjectNamespace,
) -> Result<HttpAnswer, Error> {
    let url = http_url(member).unwrap_or_default();
    let (mut renew, mut wider) = (false, None);
    for again in [false, true] {
        let within = limits(member).sign_in_ms;
        let header = sign_in::gateway_bearer(ns, name, &url, auth, renew, wider.as_deref(), within).await?;
        authorize(&mut p.headers, header);
        let (answer, www) = send_challenged(member, p.clone(), relaying).await?;
        match (answer.status, wanted_scope(&answer, www.as_deref())) {
            (401, _) => renew = true,
            (403, Some(scope)) => wider = Some(scope),
            _ => return Ok(answer),
        }
        if again {
            return Err(Error::Upstream(format!(
                "it refused the gateway's client_credentials token (HTTP {})",
                answer.status
            )));
        }
    }
    Err(Error::Internal("no answer".into()))
}

/// The `Authorization` header of a request of `principal` to upstream `member` (a session's
/// `GET` stream or `DELETE` there: the same token its POSTs carry), `None` when it takes none.
async fn authorization(member: usize, principal: Option<&str>) -> Result<Option<String>, Error> {
    let url = http_url(member).unwrap_or_default();
    match signing(member) {
        None => Ok(None),
        Some((Signer::Person(name), ns)) => sign_in::bearer(&ns, principal, &name, &url, limits(member).sign_in_ms)
            .await
            .map(Some),
        Some((Signer::Machine(name, auth), ns)) => {
            sign_in::gateway_bearer(&ns, &name, &url, &auth, false, None, limits(member).sign_in_ms)
                .await
                .map(Some)
        }
    }
}

/// How upstream `member`'s requests are authorized, and the tokens' namespace, when it has `auth`.
pub(crate) fn signing(member: usize) -> Option<(Signer, ObjectNamespace)> {
    SIGNING.with_borrow(|(signers, ns)| Some((signers.get(member)?.clone()?, ns.clone()?)))
}

/// Where upstream `member` is reached: its URL, and the service binding that reaches it, if any
/// (whose requests go to its `/mcp`).
fn target(member: usize) -> Option<(String, Option<Fetcher>)> {
    DRIVERS.with(|d| match d.borrow().get(member)? {
        Driver::Http(url) => Some((url.clone(), None)),
        Driver::Service(b, f) => Some((format!("https://{b}.service/mcp"), Some(f.clone()))),
    })
}

/// One request to `url` over `via` (a service binding) or the platform's fetch, its answer as it
/// comes (the platform's `Response`, no `worker::Response` around it: the per-call crossings are
/// what a forwarded call costs above a plain JS proxy). `signal` aborts it over HTTP; a service
/// binding's fetch takes none (a deadline drops it, and its body, dropped unread, is cancelled).
async fn fetch(
    url: &str,
    via: Option<Fetcher>,
    method: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    signal: Option<&AbortSignal>,
) -> worker::Result<web_sys::Response> {
    let h = web_sys::Headers::new()?;
    for (k, v) in headers {
        h.set(k, v)?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    init.set_headers(&h);
    if let Some(b) = body {
        init.set_body(&b.into());
    }
    match via {
        Some(fetcher) => {
            let req = web_sys::Request::new_with_str_and_init(url, &init)?;
            Ok(fetcher.fetch_request(Request::from(req)).await?.into())
        }
        None => {
            if let Some(s) = signal {
                init.set_signal(Some(s));
            }
            let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
            let sent = wasm_bindgen_futures::JsFuture::from(scope.fetch_with_str_and_init(url, &init));
            Ok(sent.await?.dyn_into()?)
        }
    }
}

/// Upstream `member`'s label (for what is said about it).
pub(crate) fn label(member: usize) -> String {
    STATE.with(|s| {
        s.borrow()
            .as_ref()
            .and_then(|(_, g)| g.upstream_at(member).map(|u| u.label()))
            .unwrap_or_default()
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

/// Passes `body`, a notification the client of `session` sent, on to its upstream sessions
/// when the core says so (a roots change; `upstream::Gateway::notifying`).
pub async fn pass_on(server: &Server, session: &mcp_sieve::protocol::Session, body: &[u8]) {
    let sends = with(server, |g| g.notifying(session, body)).unwrap_or_default();
    for (member, mut conv, mut exchange) in sends {
        let principal = session.principal.as_deref();
        if let Err(e) = upstream::drive(&mut conv, &mut exchange, |p| send_for(member, p, None, principal)).await {
            log::error(format_args!("a client's notification was not passed on: {e}"));
        }
    }
}

/// The URL of upstream `member` when it is reached over HTTP (not a service binding).
pub(crate) fn http_url(member: usize) -> Option<String> {
    DRIVERS.with(|d| match d.borrow().get(member) {
        Some(Driver::Http(url)) => Some(url.clone()),
        _ => None,
    })
}

/// Why a request without a body ([`bodiless`]) got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unanswered {
    /// It could not be authorized (the core's reason: a sign-in is needed, a token refused).
    #[error(transparent)]
    Authorization(#[from] Error),
    /// The platform's fetch or service binding failed.
    #[error("{0}")]
    Platform(#[from] worker::Error),
}

/// A request without a body (`GET` of a standalone stream, `DELETE` of a session) with `headers`
/// to upstream `member` over its driver ([`fetch`]), on behalf of `principal` (authorized as
/// its POSTs are, [`authorization`]): its answer as it comes (a body still streaming), or why
/// there is none; `None` when there is no such upstream.
pub(crate) async fn bodiless(
    member: usize,
    method: &str,
    headers: &[(String, String)],
    signal: Option<&AbortSignal>,
    principal: Option<&str>,
) -> Option<Result<web_sys::Response, Unanswered>> {
    let (url, via) = target(member)?;
    let mut headers = headers.to_vec();
    match authorization(member, principal).await {
        Ok(Some(h)) => authorize(&mut headers, h),
        Ok(None) => {}
        Err(e) => return Some(Err(e.into())),
    }
    Some(
        fetch(&url, via, method, &headers, None, signal)
            .await
            .map_err(Unanswered::from),
    )
}

/// Sends each HTTP `DELETE` of `closing` (an upstream and the headers naming its session), one
/// after the other, each within [`DEADLINE_MS`], on behalf of `principal` (whose sessions they
/// are); a failure is only logged (the upstream expires the session on its own then).
pub(crate) async fn close(closing: Vec<(usize, Vec<(String, String)>)>, principal: Option<&str>) {
    for (member, headers) in closing {
        let sent = bodiless(member, "DELETE", &headers, None, principal);
        let deadline = Delay::from(Duration::from_millis(DEADLINE_MS));
        match select(std::pin::pin!(sent), std::pin::pin!(deadline)).await {
            Either::Left((None | Some(Ok(_)), _)) => {}
            Either::Left((Some(Err(e)), _)) => log::error(format_args!("an upstream session was not closed: {e}")),
            Either::Right(_) => log::error("an upstream session was not closed in time"),
        }
    }
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
/// How long closing an upstream session (its DELETE) may take.
pub(crate) const DEADLINE_MS: u64 = 30_000;

/// One POST at the upstream within its `limits.callTimeoutSeconds` (then it is aborted; longer by
/// the client's time to answer when its questions are relayed), its answer read up to its
/// `limits.maxAnswerBytes`
/// (an SSE stream that stays open is read until it carries the response).
async fn post(
    url: &str,
    via: Option<Fetcher>,
    post: Post,
    relaying: Option<&dyn Relaying>,
    limits: Limits,
) -> Result<(HttpAnswer, Option<String>), Error> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = std::pin::pin!(post_once(url, via, post, &signal, relaying, limits.max_answer_bytes));
    let deadline = std::pin::pin!(Delay::from(Duration::from_millis(limits.call_ms)));
    let outcome = match select(exchange, deadline).await {
        Either::Left((answer, _)) => Some(answer),
        // A question went to the client: the upstream waits on its answer, so it gets that long too.
        Either::Right((_, exchange)) if relaying.is_some_and(|r| r.asked()) => {
            let more = std::pin::pin!(Delay::from(Duration::from_millis(
                mcp_sieve::protocol::ask::ANSWER_WAIT_MS as u64
            )));
            match select(exchange, more).await {
                Either::Left((answer, _)) => Some(answer),
                Either::Right(_) => None,
            }
        }
        Either::Right(_) => None,
    };
    match outcome {
        Some(Ok(answer)) => Ok(answer),
        Some(Err(e)) => {
            // Over the cap (or broken): stop the upstream's transfer rather than let it run on.
            controller.abort();
            Err(e)
        }
        None => {
            controller.abort();
            Err(late(&limits))
        }
    }
}

async fn post_once(
    url: &str,
    via: Option<Fetcher>,
    post: Post,
    signal: &AbortSignal,
    relaying: Option<&dyn Relaying>,
    max: usize,
) -> Result<(HttpAnswer, Option<String>), Error> {
    let unreachable = |e: worker::Error| Error::Upstream(format!("cannot reach {url}: {e}"));
    let resp = fetch(url, via.clone(), "POST", &post.headers, Some(&post.body), Some(signal))
        .await
        .map_err(unreachable)?;
    let www = matches!(resp.status(), 401 | 403)
        .then(|| resp.headers().get("www-authenticate").ok().flatten())
        .flatten();
    let answer = read_answer(url, via, &post, resp, signal, relaying, max).await?;
    Ok((answer, www))
}

/// Reads the upstream's answer `resp` to `post` (sent to `url`, over `via`) up to `max` bytes
/// (its `limits.maxAnswerBytes`): a JSON body of known length in one go, an SSE stream as it comes, carrying out what the
/// upstream sends meanwhile with `relaying` (an answer to its question goes back in the same
/// upstream session, aborted with `signal`).
pub(crate) async fn read_answer(
    url: &str,
    via: Option<Fetcher>,
    post: &Post,
    resp: web_sys::Response,
    signal: &AbortSignal,
    relaying: Option<&dyn Relaying>,
    max: usize,
) -> Result<HttpAnswer, Error> {
    let unreachable = |e: worker::Error| Error::Upstream(format!("cannot reach {url}: {e}"));
    let js = |e: wasm_bindgen::JsValue| unreachable(worker::Error::from(e));
    let h = resp.headers();
    let (session, content_type) = (
        h.get("mcp-session-id").ok().flatten(),
        h.get("content-type").ok().flatten().unwrap_or_default(),
    );
    let length = h
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|l| l.trim().parse::<usize>().ok());
    let status = resp.status();
    let mut reader = upstream::AnswerReader::new(&content_type, &post.body, max);
    match length {
        // A body of known length within the cap, not an SSE stream: read in one go (one crossing
        // and one copy, where a stream takes a promise per chunk).
        Some(n) if n <= max && !content_type.to_ascii_lowercase().starts_with("text/event-stream") => {
            let buffer = wasm_bindgen_futures::JsFuture::from(resp.array_buffer().map_err(js)?)
                .await
                .map_err(js)?;
            reader.push(&js_sys::Uint8Array::new(&buffer).to_vec())?;
        }
        _ => {
            let mut resp = worker::Response::from(resp);
            let mut stream = resp.stream().map_err(unreachable)?;
            while let Some(chunk) = stream.next().await {
                let done = reader.push(&chunk.map_err(unreachable)?)?;
                // What the upstream asks or tells the caller meanwhile goes to it now.
                if let Some(r) = relaying {
                    for msg in reader.take_events() {
                        let Some(answer) = r.handle(msg).await else {
                            continue;
                        };
                        // In the same upstream session; its reply (202) carries nothing.
                        let answered = upstream::answer_post(&post.headers, &answer);
                        if let Err(e) = Box::pin(post_once(url, via.clone(), answered, signal, None, max)).await {
                            log::error(format_args!(
                                "an answer to an upstream's request was not delivered: {e}"
                            ));
                        }
                    }
                }
                if done {
                    break;
                }
            }
        }
    }
    Ok(HttpAnswer {
        status,
        session,
        content_type,
        body: reader.body(),
    })
}

/// The gateway's server when its lists are cached and no refresh is due (`Gateway::ready`): what
/// the fast path answers from; `None` otherwise, and the full path ([`serving`]) runs.
pub fn ready(local: &Server) -> Option<Arc<Server>> {
    with(local, |g| match g.check_due(now_ms()) {
        true => None,
        false => g.ready(now_ms()),
    })
    .flatten()
}

/// [`ready`], for a request that uses an item: also `None` while an upstream that is down is due
/// for another try (the full path runs it, [`serving`]).
pub fn ready_to_forward(local: &Server) -> Option<Arc<Server>> {
    with(local, |g| match g.retry_due(now_ms()) || g.check_due(now_ms()) {
        true => None,
        false => g.ready(now_ms()),
    })
    .flatten()
}

/// Ends the refreshes of its upstreams as abandoned when dropped armed (see
/// `upstream::Gateway::abandoned`).
struct Abandon<'a>(Option<(&'a Server, Vec<usize>)>);

impl Abandon<'_> {
    /// The refreshes reached their end: nothing to release.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if let Some((local, members)) = self.0.take() {
            with(local, |g| g.abandoned(&members));
        }
    }
}

/// Runs refreshes (each over its upstream's driver, all at once) and hands them to the core.
async fn run(local: &Server, jobs: Vec<Job>, principal: Option<&str>) -> Result<Option<Arc<Server>>, Error> {
    // Dropped before the refreshes end: the next request refreshes. (A request the runtime stops
    // without dropping it is covered by the refresh's deadline, `upstream::REFRESH_DEADLINE_MS`.)
    let guard = Abandon(Some((local, jobs.iter().map(|j| j.member).collect())));
    let running = jobs.into_iter().map(|mut job| async move {
        let member = job.member;
        let lists = upstream::drive(&mut job.conv, &mut job.refresh, |p| {
            send_for(member, p, None, principal)
        })
        .await;
        (job, lists)
    });
    let (done, ()) = futures_util::future::join(futures_util::future::join_all(running), read_pins(local)).await;
    guard.disarm();
    // A refresh for a principal who has not signed in to an upstream says nothing about it:
    // lists that others fetched stay (only one never listed fails for a principal, its status
    // saying where to sign in). One run for nobody (a session's GET stream ticking, a relay)
    // fails for no one either: it stays due for a request of someone who signed in (before, a
    // ticking stream took every retry, and the upstream stayed down after a sign-in).
    let (unsigned, done): (Vec<_>, Vec<_>) = done.into_iter().partition(|(job, lists)| {
        needs_sign_in(lists) && (principal.is_none() || with(local, |g| g.has_lists(job.member)) == Some(true))
    });
    if !unsigned.is_empty() {
        let members: Vec<usize> = unsigned.iter().map(|(job, _)| job.member).collect();
        with(local, |g| g.abandoned(&members));
        if done.is_empty() {
            return Ok(with(local, |g| g.server()).flatten());
        }
    }
    let done = with(local, |g| g.refreshed(local.catalog(), done, now_ms()))
        .ok_or_else(|| Error::Internal("gateway mode without an upstream".into()))??;
    if let Some(e) = done.failure {
        log::error(format_args!("{e}; the other upstreams keep serving"));
    }
    for line in &done.log {
        log::warn(line);
    }
    Ok(Some(done.server))
}

/// Runs checks of upstreams nobody heard from lately (`upstream::Gateway::checks`: a `ping`
/// each, at once, within [`upstream::CHECK_DEADLINE_MS`]) and hands them to the core: one that
/// did not answer leaves the lists (list_changed) and is retried with backoff.
async fn check(local: &Server, checks: Vec<upstream::Check>, principal: Option<&str>) {
    let running = checks.into_iter().map(|mut check| async move {
        let member = check.member;
        let ping = upstream::drive(&mut check.conv, &mut check.exchange, |p| {
            send_for(member, p, None, principal)
        });
        let late = Delay::from(Duration::from_millis(upstream::CHECK_DEADLINE_MS as u64));
        let reply = match select(Box::pin(ping), late).await {
            Either::Left((reply, _)) => reply,
            Either::Right(_) => Err(Error::Upstream(format!(
                "no answer within {} s",
                upstream::CHECK_DEADLINE_MS / 1000
            ))),
        };
        (check, reply)
    });
    // A check for a principal who has not signed in did not reach the upstream: not a failure
    // (it stays due, for the next request).
    let (unsigned, done): (Vec<_>, Vec<_>) = futures_util::future::join_all(running)
        .await
        .into_iter()
        .partition(|(_, reply)| needs_sign_in(reply));
    if !unsigned.is_empty() {
        let members: Vec<usize> = unsigned.iter().map(|(check, _)| check.member).collect();
        with(local, |g| g.abandoned(&members));
    }
    match with(local, |g| g.checked(local.catalog(), done, now_ms())) {
        Some(Ok(Some(r))) => {
            if let Some(e) = r.failure {
                log::error(format_args!("{e}; it left the lists, the other upstreams keep serving"));
            }
        }
        Some(Err(e)) => log::error(format_args!("the lists were not rebuilt after a check: {e}")),
        _ => {}
    }
}

/// Whether `r` failed only because its principal has not signed in to the upstream
/// ([`crate::oauth::sign_in::sign_in_error`]).
fn needs_sign_in<T>(r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::Rpc { code, .. }) if *code == mcp_sieve::error::code::URL_ELICITATION_REQUIRED)
}

/// The server to run requests on: `None` when `local` has no upstream; else the gateway's
/// server over the upstreams' lists (refreshed when due, one refresh per upstream at a time; a
/// stale one keeps serving while it runs). Upstreams that are down are tried again (with
/// backoff) along with a request.
pub async fn serving(local: &Server) -> Result<Option<Arc<Server>>, Error> {
    serving_for(local, None).await
}

/// [`serving`] for a request of `principal`: the lists of an upstream its callers sign in to
/// are fetched with that principal's token (none: that upstream's refresh fails, saying where
/// to sign in, and the others serve).
pub async fn serving_for(local: &Server, principal: Option<&str>) -> Result<Option<Arc<Server>>, Error> {
    if !local.is_gateway() {
        return Ok(None);
    }
    let started = now_ms();
    if let Some(retries) = with(local, |g| g.retries(now_ms())).filter(|r| !r.is_empty()) {
        run(local, retries, principal).await?;
    }
    if let Some(checks) = with(local, |g| g.checks(now_ms())).filter(|c| !c.is_empty()) {
        check(local, checks, principal).await;
    }
    loop {
        let Some(serving) = with(local, |g| g.serving(now_ms())) else {
            return Ok(None);
        };
        match serving {
            Serving::Ready(s) => return Ok(Some(s)),
            Serving::Wait if now_ms() - started < MAX_REFRESH_WAIT_MS => Delay::from(Duration::from_millis(10)).await,
            Serving::Wait => return Err(Error::Upstream("its lists are still being fetched".into())),
            Serving::Refresh(jobs) => return run(local, jobs, principal).await,
        }
    }
}

/// Performs the core's `Forward` effect of `answer`, if any, at the upstream that serves the
/// item (in the session's own session there, remembered in `store`) and completes the answer
/// with the upstream's reply, passed through; a failure names the upstream.
/// `secret`: the key of the `requestState` a 2026-07-28 caller gets with an upstream's questions
/// (`upstream::wrap_input`; the transport's session secret).
pub async fn finish(
    answer: http::Response,
    server: &Server,
    store: &mut dyn SessionStore,
    secret: Option<&http::Secret>,
) -> http::Response {
    if let Some(ended) = &answer.ended {
        // The session ended (DELETE, or found expired): so do its upstream sessions.
        close_session(server, ended).await;
    }
    let Some(mut f) = answer.forward.clone() else {
        return answer;
    };
    if let Some(jobs) = with(server, |g| g.gather(&f)).flatten() {
        return finish_gather(answer, server, jobs, store, f.principal.as_deref()).await;
    }
    // A 2026-07-28 client's answers to an upstream's questions, back in the upstream's terms.
    if let Some(secret) = secret {
        if let Err(e) = upstream::unwrap_input(&mut f, secret, now_ms()) {
            return http::complete(answer, Ok(&upstream::refusal(&serde_json::Value::Null, &e)), &[]);
        }
    }
    let forward =
        with(server, |g| g.forward(&f)).unwrap_or_else(|| Err(Error::Internal("no upstream is configured".into())));
    let (member, mut conv, exchange) = match forward {
        Ok(x) => x,
        Err(e) => return http::complete(answer, Err(&e), &[]),
    };
    // Its client cannot be reached meanwhile: what the upstream asks is refused at once.
    let refusing = Refusing::new(&f);
    let began = conv.session_id().map(str::to_string);
    let reply = rounds(&f, member, &mut conv, exchange, &refusing, secret).await;
    let reply = noted(server, member, &mut conv, reply);
    if f.session.is_none() {
        close_stateless(server, member, &f, began.as_deref(), &conv).await;
    }
    upstream::forwarded(answer, &conv, reply, store, now_ms())
}

/// Drives `exchange` (forward `f` at upstream `member`) to its end, a 2026-07-28 upstream's
/// questions passed to the caller through `relaying` (`upstream::drive_rounds`).
async fn rounds(
    f: &mcp_sieve::protocol::Forward,
    member: usize,
    conv: &mut upstream::Conversation,
    exchange: upstream::Exchange,
    relaying: &dyn Relaying,
    secret: Option<&http::Secret>,
) -> Result<upstream::Reply, Error> {
    // A session's own upstream session: its standalone stream is read for it (`standalone`).
    let listener = f.session.clone().filter(|_| !f.stateless);
    let send = |p: Post| {
        let opens = listener.clone().zip(upstream::opens_stream(&p));
        async move {
            let answer = send_for(member, p, Some(relaying), f.principal.as_deref()).await;
            if let (Some((session, headers)), Ok(a)) = (opens, &answer) {
                if let (true, Some(open)) = ((200..300).contains(&a.status), OPENER.with(|o| o.get())) {
                    open(member, headers, session).await;
                }
            }
            answer
        }
    };
    // A 2025-11-25 tasks/result waiting for a task at an upstream without one sleeps here: in the
    // session's Durable Object, which serves its other requests meanwhile.
    let wait = |ms| Delay::from(Duration::from_millis(ms));
    let signer = secret.map(|s| (s, now_ms()));
    upstream::drive_rounds(f, conv, exchange, send, |q| relaying.handle(q), wait, signer).await
}

/// Whether the stateless call `f` is relayed (`upstream::Gateway::relays_stateless`).
pub fn relays_stateless(server: &Server, f: &mcp_sieve::protocol::Forward) -> bool {
    with(server, |g| g.relays_stateless(f)).unwrap_or(false)
}

/// Closes the upstream sessions of `ended`, a downstream session that ended.
pub async fn close_session(server: &Server, ended: &mcp_sieve::protocol::Session) {
    close(
        with(server, |g| g.closing(ended)).unwrap_or_default(),
        ended.principal.as_deref(),
    )
    .await;
}

/// Closes the upstream session a stateless request's exchange with upstream `member` ran in
/// (`began`: the one it began in) when it served that request alone; the one stateless callers
/// share is kept (`upstream::Gateway::stateless_done`).
async fn close_stateless(
    server: &Server,
    member: usize,
    f: &Forward,
    began: Option<&str>,
    conv: &upstream::Conversation,
) {
    let closing = with(server, |g| g.stateless_done(member, f, began, &conv.link())).flatten();
    close(
        closing.map(|h| (member, h)).into_iter().collect(),
        f.principal.as_deref(),
    )
    .await;
}

/// What the core learns from an exchange with upstream `member` (its list changes, that it is
/// unreachable), and its `reply` with a failure naming the upstream.
pub(crate) fn noted(
    server: &Server,
    member: usize,
    conv: &mut upstream::Conversation,
    reply: Result<upstream::Reply, Error>,
) -> Result<upstream::Reply, Error> {
    with(server, |g| {
        g.note_changes(member, conv);
        if matches!(reply, Err(Error::Upstream(_))) {
            g.note_unreachable(member);
        }
        match g.upstream_at(member) {
            Some(up) => reply.map_err(|e| upstream::named(up, e)),
            None => reply,
        }
    })
    .unwrap_or_else(|| Err(Error::Internal("no upstream is configured".into())))
}

/// [`finish`] for a session's call whose upstream's questions and notifications are relayed
/// to its client meanwhile (`relay`); `params`: the call's, with the relay's progress token.
pub async fn finish_relayed(
    answer: http::Response,
    server: &Server,
    params: serde_json::Value,
    relaying: &dyn Relaying,
) -> http::Response {
    let Some(mut f) = answer.forward.clone() else {
        return answer;
    };
    f.params = params;
    let forward =
        with(server, |g| g.forward(&f)).unwrap_or_else(|| Err(Error::Internal("no upstream is configured".into())));
    let (member, mut conv, exchange) = match forward {
        Ok(x) => x,
        Err(e) => return http::complete(answer, Err(&e), &[]),
    };
    let began = conv.session_id().map(str::to_string);
    let reply = rounds(&f, member, &mut conv, exchange, relaying, None).await;
    // Notifications the relay took as they came are not passed on again with the result.
    let reply = reply.map(|mut r| {
        r.notifications.retain(|n| !relaying.relays(n));
        r
    });
    let reply = noted(server, member, &mut conv, reply);
    if f.session.is_none() {
        close_stateless(server, member, &f, began.as_deref(), &conv).await;
    }
    relaying.forwarded(answer, &conv, reply)
}

/// `tasks/list`: the whole list of each upstream running the session's tasks (one after
/// another), merged, filtered and paged by the core (`upstream::gathered`).
async fn finish_gather(
    answer: http::Response,
    server: &Server,
    jobs: Vec<(usize, upstream::Conversation, upstream::TaskList)>,
    store: &mut dyn SessionStore,
    principal: Option<&str>,
) -> http::Response {
    let mut done = Vec::new();
    for (member, mut conv, mut tasks) in jobs {
        let lists = upstream::drive(&mut conv, &mut tasks, |p| send_for(member, p, None, principal)).await;
        with(server, |g| g.note_changes(member, &mut conv));
        done.push((member, conv, lists));
    }
    match with(server, |g| g.server()).flatten() {
        Some(s) => upstream::gathered(&s, answer, done, store, now_ms()),
        None => http::complete(answer, Err(&Error::Upstream("no upstream answered yet".into())), &[]),
    }
}

/// `GET /mcp-sieve/upstreams`: each upstream's state as this isolate knows it, after the refresh
/// a request of `principal` would run now (an isolate that served nothing yet fetches the lists
/// first), with how it is signed in to (`auth`; where a principal signs in, `signIn`; an
/// upstream each principal signs in to that nobody signed in has listed yet is `needs-login`);
/// 404 when the Worker fronts no upstream.
pub async fn status(local: &Server, method: &str, principal: Option<&str>) -> http::Response {
    if method == "GET" {
        if let Err(e) = serving_for(local, principal).await {
            log::error(&e);
        }
    }
    let mut status = with(local, |g| g.status(now_ms()));
    if let Some(serde_json::Value::Array(ups)) = status.as_mut().and_then(|s| s.get_mut("upstreams")) {
        for (member, up) in ups.iter_mut().enumerate() {
            match signing(member) {
                Some((Signer::Person(name), _)) => {
                    up["auth"] = "oauth".into();
                    up["signIn"] = sign_in::start_url(&name).into();
                    // Nobody signed in has listed it yet (a refresh for nobody, or for someone
                    // who has not signed in either, leaves it due): a sign-in is what it needs.
                    if up["state"] == "starting" {
                        up["state"] = "needs-login".into();
                        up["error"] = sign_in::sign_in_error(&name, "nobody signed in has listed it yet")
                            .to_string()
                            .into();
                    }
                }
                Some((Signer::Machine(..), _)) => {
                    up["auth"] = "oauth".into();
                    up["grant"] = "client_credentials".into();
                }
                None => {}
            }
        }
    }
    upstream::status_response(status, method)
}
