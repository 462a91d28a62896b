//! The gateway as an OAuth 2.1 client of its upstreams — the shell's part: the HTTP requests
//! the core's decisions name (`mcp_sieve::upstream::oauth`: discovery, registration, tokens),
//! the browser and the loopback listener of `mcp-sieve login NAME`, and the token store. Each
//! upstream's tokens are kept under its name with the resource they were issued for, and sent
//! only to an upstream whose URL lies within that resource.
//!
//! The token store is one JSON text, kept in the OS keychain when one works, else in a file
//! readable only by its owner (see `token_store`): `$XDG_CONFIG_HOME/mcp-sieve/tokens.json`
//! (`~/.config/...`; `%APPDATA%\mcp-sieve\...` on Windows), whose path also names the keychain
//! entry. Tokens are never written to the document, the log, the status or an error.

pub(crate) mod sign_in;
pub(crate) mod token_store;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as HyperClient;
use mcp_sieve::catalog::{Grant, OAuth, Upstream};
use mcp_sieve::upstream::oauth::{
    self, authorization_server_metadata_urls, choose_client, needs_login_error, parse_challenge, parse_registration,
    parse_token_response, registration_request, resource_metadata_urls, select_scope, step_up_scope, token_request,
    AuthServer, Challenge, Client, Identity, ResourceMetadata, SignIn, Store, TokenGrant,
};
use mcp_sieve::Error;

use crate::http::tls::{client, Connector};
use crate::platform::now_ms;

/// Longest one request may take with [`Http::new`] (`mcp-sieve login`, the embeddings
/// endpoint); while serving, an upstream's sign-in requests take its
/// `limits.signInTimeoutSeconds` ([`Http::within`]).
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
/// Largest answer read from one.
const MAX_ANSWER: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// HTTP

/// The client for metadata, registration and token requests (platform trust store, proxies),
/// each request within its deadline.
#[derive(Clone)]
pub struct Http {
    client: HyperClient<Connector, Full<Bytes>>,
    deadline: Duration,
    /// The document's setting the deadline comes from, said when it passes.
    limit: Option<&'static str>,
}

/// An answer: status, `WWW-Authenticate`, body.
pub struct Answer {
    pub status: u16,
    pub www_authenticate: Option<String>,
    pub body: String,
}

impl Http {
    pub fn new() -> Http {
        Http {
            client: client(Connector::plain()),
            deadline: REQUEST_DEADLINE,
            limit: None,
        }
    }

    /// This client with each request's deadline `ms`, an upstream's
    /// `limits.signInTimeoutSeconds`: shorter than the call the requests run in, so that a party
    /// of the sign-in that does not answer is named rather than the upstream.
    pub fn within(&self, ms: u64) -> Http {
        Http {
            client: self.client.clone(),
            deadline: Duration::from_millis(ms),
            limit: Some("limits.signInTimeoutSeconds"),
        }
    }

    /// `req` to `party` (who answers it, for the error when it does not: "the authorization
    /// server's token endpoint"; empty: its URL), within the deadline.
    async fn send(&self, party: &str, req: hyper::Request<Full<Bytes>>) -> Result<Answer, Error> {
        let url = req.uri().to_string();
        let host = req.uri().host().unwrap_or_default().to_string();
        let work = async {
            let resp = self.client.request(req).await.map_err(|e| {
                Error::Upstream(format!("cannot reach {url}: {}", crate::http::tls::explain(&e, &host)))
            })?;
            let status = resp.status().as_u16();
            let www_authenticate = resp
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let body = Limited::new(resp.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| Error::Upstream(format!("{url} answered {status} but its body could not be read: {e}")))?
                .to_bytes();
            Ok(Answer {
                status,
                www_authenticate,
                body: String::from_utf8_lossy(&body).into_owned(),
            })
        };
        tokio::time::timeout(self.deadline, work).await.map_err(|_| {
            Error::Upstream(mcp_sieve::upstream::oauth::no_answer(
                party,
                &url,
                self.deadline.as_millis(),
                self.limit,
            ))
        })?
    }

    /// A GET of `url` from `party` ([`Http::send`]).
    pub async fn get_from(&self, party: &str, url: &str) -> Result<Answer, Error> {
        let req = hyper::Request::get(url)
            .header("accept", "application/json")
            .header("mcp-protocol-version", mcp_sieve::upstream::PROTOCOL_VERSION)
            .body(Full::new(Bytes::new()))
            .map_err(|e| Error::Upstream(format!("cannot ask {url}: {e}")))?;
        self.send(party, req).await
    }

    /// A POST of `body` to `url`.
    pub async fn post(&self, url: &str, headers: &[(String, String)], body: String) -> Result<Answer, Error> {
        self.post_to("", url, headers, body).await
    }

    /// A POST of `body` to `url` at `party` ([`Http::send`]).
    pub async fn post_to(
        &self,
        party: &str,
        url: &str,
        headers: &[(String, String)],
        body: String,
    ) -> Result<Answer, Error> {
        let mut req = hyper::Request::post(url);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Error::Upstream(format!("cannot post to {url}: {e}")))?;
        self.send(party, req).await
    }
}

// ---------------------------------------------------------------------------------------------
// Discovery

/// What discovery found for one MCP server.
pub struct Discovered {
    pub resource: ResourceMetadata,
    pub server: AuthServer,
}

/// The challenge the MCP server at `url` answers an unauthenticated `initialize` with, if any.
pub async fn probe(http: &Http, url: &str) -> Result<Option<Challenge>, Error> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": mcp_sieve::upstream::PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "mcp-sieve", "version": env!("CARGO_PKG_VERSION")}}});
    let headers = [
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "application/json, text/event-stream".to_string()),
    ];
    let a = http.post_to("the upstream", url, &headers, body.to_string()).await?;
    Ok(match a.status {
        401 | 403 => a.www_authenticate.as_deref().and_then(parse_challenge),
        _ => None,
    })
}

/// The Protected Resource Metadata of the MCP server at `url` (from the challenge's URL, else
/// the well-known ones in order) and its first authorization server's metadata (RFC 8414, then
/// OpenID Connect Discovery).
pub async fn discover(http: &Http, url: &str, challenge: Option<&Challenge>) -> Result<Discovered, Error> {
    let mut resource = None;
    let mut tried = Vec::new();
    if let Some(why) = oauth::foreign_resource_metadata(url, challenge) {
        tracing::warn!("{why}");
    }
    for u in resource_metadata_urls(url, challenge)? {
        let a = http.get_from("the upstream's protected resource metadata", &u).await?;
        if a.status == 200 {
            resource = Some(ResourceMetadata::parse(&a.body, url)?);
            break;
        }
        tried.push(format!("{u} ({})", a.status));
    }
    let resource = resource.ok_or_else(|| {
        Error::Upstream(format!(
            "no protected resource metadata for {url} (tried {}): it does not say where to sign in",
            tried.join(", ")
        ))
    })?;
    let issuer = resource.authorization_servers[0].clone();
    let mut tried = Vec::new();
    for u in authorization_server_metadata_urls(&issuer)? {
        let a = http.get_from("the authorization server's metadata", &u).await?;
        if a.status == 200 {
            let server = AuthServer::parse(&a.body, &issuer)?;
            return Ok(Discovered { resource, server });
        }
        tried.push(format!("{u} ({})", a.status));
    }
    Err(Error::Upstream(format!(
        "no metadata for the authorization server {issuer} (tried {})",
        tried.join(", ")
    )))
}

/// A registered client at `endpoint` (RFC 7591).
pub(crate) async fn register(
    http: &Http,
    endpoint: &str,
    grant: Grant,
    redirect_uri: Option<&str>,
    scope: Option<&str>,
) -> Result<Client, Error> {
    let headers = [("content-type".to_string(), "application/json".to_string())];
    let body = registration_request(grant, redirect_uri, scope);
    let party = "the authorization server's registration endpoint";
    let a = http.post_to(party, endpoint, &headers, body).await?;
    parse_registration(a.status, &a.body)
}

/// The tokens of `grant` (its errors said by the core: [`oauth::TokenError`]).
pub(crate) async fn tokens(
    http: &Http,
    server: &AuthServer,
    client: &Client,
    grant: &TokenGrant<'_>,
    resource: &str,
) -> Result<Result<oauth::Tokens, oauth::TokenError>, Error> {
    let r = token_request(server, client, grant, resource);
    let party = "the authorization server's token endpoint";
    let a = http.post_to(party, &r.url, &r.headers, r.body).await?;
    Ok(parse_token_response(a.status, &a.body, now_ms()))
}

// ---------------------------------------------------------------------------------------------
// The token store

/// Where the tokens are kept.
pub fn store_path() -> PathBuf {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            if cfg!(windows) {
                std::env::var_os("APPDATA").map(PathBuf::from)
            } else {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config"))
            }
        })
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("mcp-sieve").join("tokens.json")
}

/// One process changes the file at a time.
static STORE_LOCK: Mutex<()> = Mutex::new(());

/// An exclusive lock on the file `path` (created, with its folder), held until dropped: what
/// keeps gateways sharing a token store (two desktop clients' `mcp-sieve stdio`) from refreshing
/// one upstream at once, which would send a refresh token twice. The standard library's
/// [`std::fs::File::lock`]: `flock` on Unix, `LockFileEx` on Windows. `None` when the file cannot
/// be opened or locked (then nothing is locked).
fn lock_file(path: &std::path::Path) -> Option<std::fs::File> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .ok()?;
    loop {
        match file.lock() {
            Ok(()) => return Some(file),
            // A signal while waiting (std does not retry `flock` itself).
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// [`lock_file`] on `tokens.lock` beside the store, waited for off the async threads.
async fn lock_refresh() -> Option<std::fs::File> {
    let path = store_path().with_file_name("tokens.lock");
    tokio::task::spawn_blocking(move || lock_file(&path))
        .await
        .ok()
        .flatten()
}

/// The store's contents (none yet: empty).
pub fn load_store() -> Result<Store, Error> {
    load_store_at(&store_path())
}

/// [`load_store`] of the store at `path`.
fn load_store_at(path: &std::path::Path) -> Result<Store, Error> {
    match crate::oauth::token_store::read(path)? {
        Some(text) => Store::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display()))),
        None => Ok(Store::default()),
    }
}

/// Changes the store with `change` and keeps it (the keychain, else the 0600 file).
pub fn update_store(change: impl FnOnce(&mut Store)) -> Result<(), Error> {
    update_store_at(&store_path(), change)
}

/// [`update_store`] of the store at `path`, read, changed and written by one writer at a time:
/// one thread of this process (`STORE_LOCK`) and one process (`tokens.store.lock` beside it:
/// `login` while a gateway stores a refresh, two gateways storing two upstreams' refreshes),
/// so no writer's change is lost under another's, nor two keychain writes pick one generation
/// of pieces. Not the refresh lock (`tokens.lock`), which a refresh holds while it stores.
fn update_store_at(path: &std::path::Path, change: impl FnOnce(&mut Store)) -> Result<(), Error> {
    let _held = STORE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let _writer = lock_file(&path.with_file_name("tokens.store.lock"));
    let mut store = load_store_at(path)?;
    change(&mut store);
    crate::oauth::token_store::write(path, &store.to_text())
}

/// Where the tokens are kept, said to the user.
pub fn kept_in() -> String {
    crate::oauth::token_store::describe(&store_path())
}

// ---------------------------------------------------------------------------------------------
// While serving

/// One HTTP upstream's sign-in while the gateway serves.
pub struct Auth {
    name: String,
    url: String,
    config: OAuth,
    /// The resolved `clientSecret`.
    secret: Option<String>,
    /// Whether it signs in: its document says `auth`, or it answered 401 with a Bearer challenge
    /// (and has no static Authorization header).
    active: AtomicBool,
    /// Whether only a person signing in helps now (the status says `needs-login`).
    needs_login: AtomicBool,
    /// Each sign-in request's deadline, ms: its `limits.signInTimeoutSeconds`.
    sign_in_ms: u64,
    /// The refresh token the authorization server refused (RFC 6749 §5.2: `invalid_grant`, ...):
    /// never sent again, even when the store could not be cleared of it.
    refused_refresh: Mutex<Option<String>>,
    state: tokio::sync::Mutex<Option<SignIn>>,
    /// The header last used, for requests made without waiting (DELETE, GET streams).
    current: Mutex<Option<String>>,
    /// The sign-in a client was asked to open by URL-mode elicitation and that is still
    /// awaited (handed to every client asking meanwhile).
    pub(crate) asked: tokio::sync::Mutex<Option<Asked>>,
}

/// A sign-in handed to clients by URL-mode elicitation (`sign_in::asked_of_client`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked {
    /// Its elicitation id.
    pub id: String,
    /// The authorization URL.
    pub url: String,
    /// The downstream sessions it was handed to: told when it is done
    /// (`notifications/elicitation/complete`).
    pub sessions: Vec<String>,
}

/// What to do after an upstream refused a request made with [`Auth::bearer`]'s token.
pub enum Refused {
    /// Send it again (a new token was obtained, or the upstream turned out to need one).
    Retry,
    /// Give up with this error.
    Fail(Error),
}

impl Auth {
    /// The sign-in state of upstream `up` (an HTTP one without a static Authorization header):
    /// active from the start when its document says `auth`.
    pub fn new(up: &Upstream, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Arc<Auth>>, Error> {
        let Some(url) = up.url() else { return Ok(None) };
        if up.static_authorization() {
            return Ok(None);
        }
        Ok(Some(Arc::new(Auth {
            name: up.name.clone(),
            // As the requests go out (`gateway::Driver::Http`): what a token is checked against.
            url: oauth::request_url(url),
            config: up.auth.clone().unwrap_or_default(),
            secret: up.resolved_client_secret(env)?,
            active: AtomicBool::new(up.auth.is_some()),
            needs_login: AtomicBool::new(false),
            sign_in_ms: up.limits.sign_in_ms,
            refused_refresh: Mutex::new(None),
            state: tokio::sync::Mutex::new(None),
            current: Mutex::new(None),
            asked: tokio::sync::Mutex::new(None),
        })))
    }

    /// The upstream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it signs in.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Whether a person must sign in (`mcp-sieve login NAME`).
    pub fn needs_login(&self) -> bool {
        self.needs_login.load(Ordering::Relaxed)
    }

    /// The `Authorization` header last sent (no token work).
    pub fn current(&self) -> Option<String> {
        self.current.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_current(&self, h: Option<String>) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = h;
    }

    fn login_needed(&self, why: &str) -> Error {
        self.needs_login.store(true, Ordering::Relaxed);
        self.set_current(None);
        needs_login_error(&self.name, why)
    }

    /// The `Authorization` header for the next request: the token held, refreshed when it
    /// expires soon (or `force`d); the stored one (`mcp-sieve login`) when none is held; a new
    /// one without a user for `client_credentials`. `None`: it does not sign in.
    pub async fn bearer(&self, http: &Http, force: bool) -> Result<Option<String>, Error> {
        if !self.active() {
            return Ok(None);
        }
        let http = &http.within(self.sign_in_ms);
        let mut held = self.state.lock().await;
        if held.is_none() && self.config.grant == Grant::AuthorizationCode {
            let stored = load_store()?.upstreams.remove(&self.name);
            if let Some(s) = stored {
                if s.bearer_for(&self.url).is_none() {
                    return Err(self.login_needed(&format!(
                        "the stored token was issued for {}, not {}",
                        s.resource, self.url
                    )));
                }
                *held = Some(s);
            }
        }
        let now = now_ms();
        let mut due = held.as_ref().is_some_and(|s| force || s.tokens.expiring(now));
        // Held until the refreshed tokens are stored (dropped at the end).
        let mut _refreshing = None;
        if due && self.config.grant == Grant::AuthorizationCode {
            // Another gateway sharing the store (a second desktop client's) may be refreshing,
            // or have refreshed since this one read it, rotating the refresh token: wait for it
            // and take its tokens rather than send a spent refresh token, which an
            // authorization server may answer by revoking the whole grant (OAuth 2.1 section
            // 4.3.1), signing both out.
            _refreshing = lock_refresh().await;
            if let Some(newer) = held.as_ref().and_then(|s| self.newer_stored(s)) {
                due = newer.tokens.expiring(now);
                *held = Some(newer);
            }
        }
        if due {
            let s = held.as_ref().map(Clone::clone);
            if let Some(s) = s {
                match &s.tokens.refresh_token {
                    Some(rt) if self.refused_refresh.lock().unwrap_or_else(|p| p.into_inner()).as_ref() == Some(rt) => {
                        *held = None;
                        return Err(self.login_needed("its refresh token was refused"));
                    }
                    Some(rt) => {
                        let grant = TokenGrant::Refresh {
                            refresh_token: rt,
                            scope: None,
                        };
                        match tokens(http, &s.server, &s.client, &grant, &s.resource).await? {
                            Ok(t) => {
                                let next = SignIn {
                                    tokens: t.refreshed(&s.tokens),
                                    ..s
                                };
                                if self.config.grant == Grant::AuthorizationCode {
                                    let (name, kept) = (self.name.clone(), next.clone());
                                    if let Err(e) = update_store(|st| {
                                        st.upstreams.insert(name, kept);
                                    }) {
                                        tracing::warn!(
                                            "upstream \"{}\": the refreshed token was not stored: {e}",
                                            self.name
                                        );
                                    }
                                }
                                *held = Some(next);
                            }
                            Err(e) if e.needs_login() => {
                                *held = None;
                                if self.config.grant == Grant::AuthorizationCode {
                                    self.forget_refused(rt);
                                    return Err(self.login_needed(&format!("the refresh token was refused: {e}")));
                                }
                            }
                            Err(e) => return Err(Error::Upstream(e.to_string())),
                        }
                    }
                    None if self.config.grant == Grant::ClientCredentials => *held = None,
                    None => {
                        *held = None;
                        return Err(self.login_needed("the access token expired and there is no refresh token"));
                    }
                }
            }
        }
        if held.is_none() {
            match self.config.grant {
                Grant::AuthorizationCode => return Err(self.login_needed("no token is stored for it")),
                Grant::ClientCredentials => *held = Some(self.client_credentials(http, None).await?),
            }
        }
        let header = held.as_ref().and_then(|s| s.bearer_for(&self.url));
        if header.is_none() {
            return Err(self.login_needed("its token is for another resource"));
        }
        self.needs_login.store(false, Ordering::Relaxed);
        self.set_current(header.clone());
        Ok(header)
    }

    /// The authorization server refused the refresh token `rt` (`invalid_grant`: revoked,
    /// expired, spent; or the client is no longer known): only a new sign-in helps, so it is
    /// never sent again — the stored tokens are deleted (unless another sign-in replaced them
    /// meanwhile) and, should that fail, remembered as refused.
    fn forget_refused(&self, rt: &str) {
        *self.refused_refresh.lock().unwrap_or_else(|p| p.into_inner()) = Some(rt.to_string());
        let name = self.name.clone();
        let cleared = update_store(|st| {
            if st.upstreams.get(&name).and_then(|s| s.tokens.refresh_token.as_deref()) == Some(rt) {
                st.upstreams.remove(&name);
            }
        });
        if let Err(e) = cleared {
            tracing::warn!(
                "upstream \"{}\": its refused tokens were not deleted from {}: {e}",
                self.name,
                kept_in()
            );
        }
    }

    /// The stored sign-in of this upstream when it is not `held` (another process refreshed or
    /// signed in since), for this upstream's URL.
    fn newer_stored(&self, held: &SignIn) -> Option<SignIn> {
        let stored = load_store().ok()?.upstreams.remove(&self.name)?;
        (stored.tokens.access_token != held.tokens.access_token && stored.bearer_for(&self.url).is_some())
            .then_some(stored)
    }

    /// The gateway's own token (`client_credentials`), with `scope` (else the document's, the
    /// challenge's or the resource's).
    async fn client_credentials(&self, http: &Http, scope: Option<String>) -> Result<SignIn, Error> {
        let challenge = probe(http, &self.url).await?;
        let d = discover(http, &self.url, challenge.as_ref()).await?;
        let scope = scope.or_else(|| select_scope(&self.config.scopes, challenge.as_ref(), &d.resource));
        let client = match choose_client(&self.config, self.secret.clone(), &d.server, &self.name)? {
            Identity::Ready(c) => c,
            Identity::Register(endpoint) => {
                register(http, &endpoint, Grant::ClientCredentials, None, scope.as_deref()).await?
            }
        };
        let grant = TokenGrant::ClientCredentials {
            scope: scope.as_deref(),
        };
        let t = tokens(http, &d.server, &client, &grant, &d.resource.resource)
            .await?
            .map_err(|e| Error::Upstream(e.to_string()))?;
        Ok(SignIn {
            resource: d.resource.resource,
            server: d.server,
            client,
            scope,
            tokens: t,
        })
    }

    /// The upstream answered `status` (401 or 403) to a request sent with `sent`: whether to try
    /// once more (a refreshed or new token; an upstream that turned out to need one), or why not.
    pub async fn refused(&self, http: &Http, status: u16, www: Option<&str>, sent: Option<&str>) -> Refused {
        let http = &http.within(self.sign_in_ms);
        let challenge = www.and_then(parse_challenge);
        if !self.active() {
            // No `auth`, but it asks for a Bearer token: it is an OAuth upstream (see `Auth::new`).
            if status == 401 && challenge.is_some() {
                self.active.store(true, Ordering::Relaxed);
                tracing::info!(
                    "upstream \"{}\" asks for an OAuth sign-in; tokens are kept in {}",
                    self.name,
                    kept_in()
                );
                return Refused::Retry;
            }
            return Refused::Fail(Error::Upstream(format!("it answered HTTP {status}")));
        }
        if status == 403 {
            let granted = self.state.lock().await.as_ref().and_then(|s| s.tokens.scope.clone());
            let Some(more) = step_up_scope(status, challenge.as_ref(), granted.as_deref()) else {
                return Refused::Fail(Error::Upstream("it refused the request (HTTP 403)".into()));
            };
            return match self.config.grant {
                Grant::ClientCredentials => match self.client_credentials(http, Some(more.clone())).await {
                    Ok(s) => {
                        *self.state.lock().await = Some(s);
                        Refused::Retry
                    }
                    Err(e) => Refused::Fail(e),
                },
                Grant::AuthorizationCode => {
                    let name = self.name.clone();
                    let wider = more.clone();
                    let _ = update_store(|st| {
                        if let Some(s) = st.upstreams.get_mut(&name) {
                            s.scope = Some(wider);
                        }
                    });
                    Refused::Fail(self.login_needed(&format!("it needs the scopes \"{more}\"")))
                }
            };
        }
        // 401 with a token: refresh it (or get a new one) once.
        if sent.is_none() {
            return Refused::Fail(self.login_needed("the upstream asks for a token"));
        }
        match self.bearer(http, true).await {
            Ok(_) => Refused::Retry,
            Err(e) => Refused::Fail(e),
        }
    }

    /// The upstream's URL, its `auth` settings and its resolved client secret (a sign-in's).
    pub(crate) fn sign_in_parts(&self) -> (&str, &OAuth, Option<String>) {
        (&self.url, &self.config, self.secret.clone())
    }

    /// A person signed in (the tokens are in the store): the next request loads them.
    pub(crate) async fn signed_in(&self) {
        *self.state.lock().await = None;
        self.needs_login.store(false, Ordering::Relaxed);
    }

    /// The error after the upstream refused a fresh token too.
    pub async fn refused_again(&self) -> Error {
        *self.state.lock().await = None;
        match self.config.grant {
            Grant::AuthorizationCode => self.login_needed("the upstream refused its token"),
            Grant::ClientCredentials => {
                self.set_current(None);
                Error::Upstream("it refused the gateway's client_credentials token".into())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `mcp-sieve logout` (`login`: see `sign_in`)

/// `mcp-sieve logout NAME`: forgets the upstream's tokens.
pub fn logout(name: &str) -> Result<(), Error> {
    let mut had = false;
    update_store(|s| had = s.upstreams.remove(name).is_some())?;
    if had {
        eprintln!(
            "mcp-sieve: the tokens of upstream \"{name}\" were deleted from {}",
            kept_in()
        );
    } else {
        eprintln!("mcp-sieve: no tokens of upstream \"{name}\" were kept in {}", kept_in());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two holders of the refresh lock (as two processes would be: the lock conflicts between
    /// separate opens of the file) take turns: the second waits until the first is dropped. On
    /// every platform (the Windows lane runs it under Wine).
    #[test]
    fn the_refresh_lock_is_held_by_one_at_a_time() {
        let dir = std::env::temp_dir().join(format!("sieve-lock-{}", std::process::id()));
        let path = dir.join("mcp-sieve").join("tokens.lock");
        let first = lock_file(&path).expect("the lock file is created with its folder");
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        let waiter = std::thread::spawn(move || {
            let second = lock_file(&p);
            tx.send(()).unwrap();
            second.is_some()
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the second waits while the first holds it"
        );
        drop(first);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "then it gets it");
        assert!(waiter.join().unwrap());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A change of the store waits while another process writes it (its lock held here by a
    /// separate open of the lock file), then reads what that one wrote and changes it.
    #[test]
    fn a_store_change_waits_for_another_process_writing_the_store() {
        let dir = std::env::temp_dir().join(format!("sieve-store-lock-{}", std::process::id()));
        let path = dir.join("mcp-sieve").join("tokens.json");
        let other = lock_file(&path.with_file_name("tokens.store.lock")).expect("the lock file is created");
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        let writer = std::thread::spawn(move || {
            let done = update_store_at(&p, |_| {});
            tx.send(()).unwrap();
            done
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "the change waits while the other writer holds the store"
        );
        drop(other);
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "then it goes on");
        writer.join().unwrap().expect("the store is written");
        assert!(load_store_at(&path).is_ok());
        crate::oauth::token_store::forget(&path);
        let _ = std::fs::remove_dir_all(dir);
    }
}
