//! Per-principal upstream sign-ins (the Worker as an OAuth 2.1 client of its upstreams, one
//! person at a time, as Cloudflare's MCP portals do): a Durable Object class of its own,
//! `UpstreamTokens`, one object per principal (named by it), holding that principal's pending
//! sign-ins and tokens and nobody else's. A class of its own rather than a namespace of the
//! session objects: a principal's tokens outlive its sessions, no session's code or storage can
//! reach them, and one object per principal makes "two principals never see each other's
//! tokens" hold by construction (an object is asked only for its own principal's).
//!
//! The protocol is the core's (`mcp_sieve::upstream::oauth`: discovery, client identity,
//! PKCE S256, `resource`, the callback's checks, token bodies and answers); this file moves its
//! bytes: `begin` (discovery, registration, a pending sign-in with its PKCE verifier, kept
//! [`PENDING_MS`]), `finish` (the callback's code exchanged, the tokens sealed with AES-GCM,
//! `sealed`), `token` (the `Authorization` header for one upstream URL, refreshed here when due;
//! `None` with the reason when the principal must sign in). The gateway's own tokens for
//! `client_credentials` upstreams (no person) live in one more object of this class, named
//! [`GATEWAY`] (a name no principal has), asked only `gateway`: taken when first needed, again
//! when expired, refused (`renew`) or short of the scopes an upstream asks for (step-up).

use std::cell::Cell;

use futures_util::future::{select, Either};
use mcp_sieve::catalog::DEFAULT_SIGN_IN_MS;
use mcp_sieve::catalog::{Grant, OAuth, Upstream};
use mcp_sieve::upstream::oauth::{
    self, authorization_server_metadata_urls, choose_client, parse_challenge, parse_registration, parse_token_response,
    registration_request, resource_metadata_urls, select_scope, step_up_scope, token_request, AuthServer, Challenge,
    Client, Identity, ResourceMetadata, SignIn, TokenError, TokenGrant,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use worker::{
    durable_object, AbortController, AbortSignal, Delay, DurableObject, Env, Fetch, Headers, Method, Request,
    RequestInit, Response, Result, State,
};

use crate::oauth::sealed;
use crate::platform::now_ms;
use crate::telemetry::log;

/// The Durable Object namespace binding.
pub const BINDING: &str = "UPSTREAM_TOKENS";
/// The redirect URI's path.
pub const CALLBACK: &str = "/mcp-sieve/oauth/callback";
/// The name of the object that keeps the gateway's own tokens (`client_credentials`, no person):
/// the empty name, which no principal has — the front Worker asks a principal's object only for
/// a non-empty principal (`oauth::sign_in`), and this class refuses the gateway's operation to any other
/// object and every principal's operation to this one, so neither can read the other's tokens.
pub const GATEWAY: &str = "";
/// How long a sign-in may take between `start` and the callback.
pub const PENDING_MS: i64 = 10 * 60_000;
/// Largest answer read from an authorization server or a metadata URL.
const MAX_ANSWER: usize = 1 << 20;

/// Why an operation of a principal's object failed; its text is the `error` the front Worker
/// shows (a page, a call's error).
#[derive(Debug, thiserror::Error)]
pub enum TokensError {
    /// The operation is not this object's (another principal's, or the gateway's).
    #[error("{0} is not asked of this object")]
    NotHere(String),
    /// No such operation.
    #[error("no such operation {0}")]
    NoOperation(String),
    /// No upstream of that name in the catalog.
    #[error("no upstream named \"{0}\"")]
    NoUpstream(String),
    /// The upstream does not sign in per person.
    #[error("upstream \"{0}\" does not sign in per person (its document entry needs \"auth\": \"oauth\" and a url)")]
    NotPerPerson(String),
    /// The key that seals tokens is not set.
    #[error(
        "the Worker has no secret {var} to encrypt upstream tokens with (wrangler secret put {var})",
        var = sealed::KEY_VAR
    )]
    NoSecret,
    /// The front Worker sent no `auth` with `begin` or `gateway`.
    #[error("no upstream auth was given")]
    NoAuth,
    /// The callback's nonce names no pending sign-in (unknown, or used).
    #[error("this sign-in is unknown or was used already: start it again")]
    UnknownSignIn,
    /// The callback came after [`PENDING_MS`].
    #[error("this sign-in took longer than {} minutes: start it again", PENDING_MS / 60_000)]
    SignInExpired,
    /// The callback has no `code` (and no error).
    #[error("the callback carries no code")]
    NoCode,
    /// A token was asked for a URL its resource does not cover.
    #[error("another resource")]
    OtherResource,
    /// The protocol's refusal (discovery, the client, the callback).
    #[error(transparent)]
    Protocol(#[from] mcp_sieve::Error),
    /// The token endpoint's refusal or a malformed answer.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The gateway's `client_credentials` token was refused.
    #[error("the gateway's client_credentials token: {0}")]
    GatewayToken(#[source] TokenError),
    /// Sealing or opening a token.
    #[error("{0}")]
    Seal(sealed::SealError),
    /// The object's storage, or the runtime.
    #[error(transparent)]
    Worker(#[from] worker::Error),
    /// A kept record or a built body is not the JSON expected.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A request could not be made (its URL).
    #[error("cannot ask {url}: {source}")]
    Ask {
        /// The URL.
        url: String,
        /// The runtime's error.
        #[source]
        source: worker::Error,
    },
    /// A party could not be reached (its URL).
    #[error("cannot reach {url}: {source}")]
    Reach {
        /// The URL.
        url: String,
        /// The runtime's error.
        #[source]
        source: worker::Error,
    },
    /// A party did not answer within the sign-in's deadline.
    #[error(
        "{}",
        oauth::no_answer(.party, .url, u128::from(*.ms), Some("limits.signInTimeoutSeconds"))
    )]
    NoAnswer {
        /// Who (`the authorization server's token endpoint`).
        party: &'static str,
        /// The URL asked.
        url: String,
        /// The deadline, ms.
        ms: u64,
    },
    /// An answer's body could not be read.
    #[error("{url} answered {status} but its body could not be read: {source}")]
    Body {
        /// The URL.
        url: String,
        /// Its status.
        status: u16,
        /// The runtime's error.
        #[source]
        source: worker::Error,
    },
    /// An answer larger than [`MAX_ANSWER`].
    #[error("{url} answered more than {MAX_ANSWER} bytes")]
    TooLarge {
        /// The URL.
        url: String,
    },
    /// The revocation endpoint refused.
    #[error("its revocation endpoint answered HTTP {status}: {body}")]
    Revocation {
        /// Its status.
        status: u16,
        /// Its body's first 200 characters.
        body: String,
    },
    /// No Protected Resource Metadata at any URL tried.
    #[error(
        "no protected resource metadata for {url} (tried {}): it does not say where to sign in",
        .tried.join(", ")
    )]
    NoResourceMetadata {
        /// The upstream's URL.
        url: String,
        /// Each URL tried, with its status.
        tried: Vec<String>,
    },
    /// No authorization server metadata at any URL tried.
    #[error("no metadata for the authorization server {issuer} (tried {})", .tried.join(", "))]
    NoServerMetadata {
        /// The issuer.
        issuer: String,
        /// Each URL tried, with its status.
        tried: Vec<String>,
    },
}

/// Why a principal must sign in (again) before its request can carry a token.
#[derive(Debug, thiserror::Error)]
enum SignInNeeded {
    #[error("you have not signed in to it")]
    NotSignedIn,
    #[error("the kept token could not be read")]
    Unreadable,
    #[error("your token was issued for {resource}, not {url}")]
    OtherResource { resource: String, url: String },
    #[error("another resource")]
    NotForUrl,
    #[error("your token expired and there is no refresh token")]
    NoRefreshToken,
    #[error("the refresh token was refused: {0}")]
    RefreshRefused(#[source] TokenError),
}

/// An operation's result.
type Done<T> = std::result::Result<T, TokensError>;

/// A sign-in begun and not yet finished (kept under `pending:<nonce>`).
#[derive(Serialize, Deserialize)]
struct Pending {
    upstream: String,
    resource: String,
    server: AuthServer,
    client: Client,
    scope: Option<String>,
    verifier: String,
    redirect_uri: String,
    expires_ms: i64,
    /// Each request's deadline when it is finished ([`Ask::sign_in_ms`]).
    #[serde(default)]
    sign_in_ms: u64,
}

/// What the front Worker asks one principal's object (`POST /begin|/finish|/token`).
#[derive(Serialize, Deserialize, Default)]
pub struct Ask {
    /// The principal the object is named by.
    pub principal: String,
    /// The upstream's name (`begin`, `token`).
    #[serde(default)]
    pub upstream: String,
    /// The upstream's URL (`token`: the token is given only for it).
    #[serde(default)]
    pub url: String,
    /// This Worker's origin (`begin`, `finish`: the redirect URI's).
    #[serde(default)]
    pub origin: String,
    /// The callback's query (`finish`).
    #[serde(default)]
    pub query: String,
    /// The state's nonce (`finish`).
    #[serde(default)]
    pub nonce: String,
    /// The upstream's `auth` (`begin`), its `clientSecret` resolved.
    #[serde(default)]
    pub auth: Option<AuthAsk>,
    /// The scopes an upstream's `insufficient_scope` challenge asked for (`widen`, `gateway`).
    #[serde(default)]
    pub scope: Option<String>,
    /// The upstream refused the gateway's token it was sent: a new one is asked for (`gateway`).
    #[serde(default)]
    pub renew: bool,
    /// How long each request of this operation to the authorization server (or the upstream's
    /// metadata) may take, ms: the upstream's `limits.signInTimeoutSeconds` (0: its default).
    #[serde(default)]
    pub sign_in_ms: u64,
}

impl Ask {
    /// Each request's deadline ([`Ask::sign_in_ms`]).
    fn within(&self) -> Within {
        Within::ms(self.sign_in_ms)
    }
}

/// The deadline of each request of a sign-in, ms (the upstream's `limits.signInTimeoutSeconds`,
/// shorter than its calls' deadline): a party that does not answer is named by it rather than
/// leave the call waiting (a fetch in the Worker has no deadline of its own).
#[derive(Clone, Copy)]
struct Within(u64);

impl Within {
    fn ms(ms: u64) -> Within {
        Within(if ms == 0 { DEFAULT_SIGN_IN_MS } else { ms })
    }
}

/// An upstream's `auth` as the front Worker read it from the catalog (`begin`, `gateway`).
#[derive(Serialize, Deserialize, Default, Clone)]
pub struct AuthAsk {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    pub scopes: Vec<String>,
}

impl AuthAsk {
    /// `up`'s, with its secret `secret` (resolved by the caller).
    pub fn of(up: &Upstream, secret: Option<String>) -> AuthAsk {
        let a = up.auth.clone().unwrap_or_default();
        AuthAsk {
            client_id: a.client_id,
            client_secret: secret,
            client_metadata_url: a.client_metadata_url,
            scopes: a.scopes,
        }
    }
}

/// The `state` of a sign-in of `principal`: the principal (hex) and the nonce its object keeps.
pub fn state(principal: &str, nonce: &str) -> String {
    format!("{}.{nonce}", sealed::hex(principal.as_bytes()))
}

/// One principal's upstream sign-ins.
#[durable_object]
pub struct UpstreamTokens {
    state: State,
    env: Env,
    /// A refresh is running (one at a time: a rotated refresh token is spent once).
    refreshing: Cell<bool>,
}

impl DurableObject for UpstreamTokens {
    fn new(state: State, env: Env) -> Self {
        UpstreamTokens {
            state,
            env,
            refreshing: Cell::new(false),
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let path = req.path();
        let ask: Ask = req.json().await?;
        // The gateway's token only in the gateway's object, a principal's only in its own (by
        // the name it was reached by, where the runtime passes it on).
        let another = self.state.id().name().is_some_and(|name| name != ask.principal);
        if another || (path == "/gateway") != (ask.principal == GATEWAY) {
            return Response::from_json(&json!({ "error": TokensError::NotHere(path).to_string() }));
        }
        let answer = match path.as_str() {
            "/gateway" => self
                .gateway(&ask)
                .await
                .map(|(h, until)| json!({ "authorization": h, "freshUntilMs": until })),
            "/begin" => self.begin(&ask).await.map(|url| json!({ "authorize": url })),
            "/finish" => self.finish(&ask).await.map(|up| json!({ "upstream": up })),
            "/token" => self.token(&ask).await.map(|t| match t {
                Ok(h) => json!({ "authorization": h }),
                Err(why) => json!({ "signIn": why.to_string() }),
            }),
            "/widen" => self.widen(&ask).await.map(|scope| json!({ "scope": scope })),
            "/forget" => self
                .forget(&ask)
                .await
                .map(|revoked| json!({ "forgot": revoked.is_some(), "revoked": revoked })),
            _ => Err(TokensError::NoOperation(path)),
        };
        Response::from_json(&match answer {
            Ok(v) => v,
            Err(e) => json!({ "error": e.to_string() }),
        })
    }
}

/// The additional data a principal's token for `upstream` is sealed with.
fn aad(principal: &str, upstream: &str) -> String {
    format!("mcp-sieve upstream token\n{principal}\n{upstream}")
}

/// The additional data the gateway's own token for `upstream` is sealed with (not a principal's:
/// one cannot be opened as the other).
fn gateway_aad(upstream: &str) -> String {
    format!("mcp-sieve gateway token\n{upstream}")
}

/// The upstream named `name` of the Worker's catalog, if it signs in per principal.
pub fn signing_upstream<'a>(ups: &'a [Upstream], name: &str) -> Done<&'a Upstream> {
    let up = ups
        .iter()
        .find(|u| u.name == name)
        .ok_or_else(|| TokensError::NoUpstream(name.into()))?;
    match (&up.auth, up.url()) {
        (Some(a), Some(_)) if a.grant == Grant::AuthorizationCode => Ok(up),
        _ => Err(TokensError::NotPerPerson(name.into())),
    }
}

impl UpstreamTokens {
    fn secret(&self) -> Done<String> {
        self.env
            .secret(sealed::KEY_VAR)
            .or_else(|_| self.env.var(sealed::KEY_VAR))
            .map(|v| v.to_string())
            .map_err(|_| TokensError::NoSecret)
    }

    /// Discovery, the client identity and a pending sign-in: the authorization URL.
    async fn begin(&self, ask: &Ask) -> Done<String> {
        self.secret()?;
        let auth = ask.auth.as_ref().ok_or(TokensError::NoAuth)?;
        let url = ask.url.clone();
        let config = OAuth {
            client_id: auth.client_id.clone(),
            client_secret: None,
            client_metadata_url: auth.client_metadata_url.clone(),
            scopes: auth.scopes.clone(),
            grant: Grant::AuthorizationCode,
        };
        let within = ask.within();
        let challenge = probe(within, &url).await?;
        let (resource, server) = discover(within, &url, challenge.as_ref()).await?;
        // Before a client is registered: the server takes a person's sign-in.
        server.check_authorization_code()?;
        let redirect_uri = format!("{}{CALLBACK}", ask.origin);
        let mut scope = select_scope(&config.scopes, challenge.as_ref(), &resource);
        // Scopes a step-up asked for (`widen`), added to these.
        if let Some(wider) = self.wider(&ask.upstream).await {
            scope = stepped_up(scope.as_deref(), &wider);
        }
        let client = client_for(
            within,
            &config,
            auth.client_secret.clone(),
            &server,
            &ask.upstream,
            Some(&redirect_uri),
            scope.as_deref(),
        )
        .await?;
        let mut random = [0u8; oauth::SIGN_IN_RANDOM];
        random.copy_from_slice(&sealed::random(oauth::SIGN_IN_RANDOM).map_err(TokensError::Seal)?);
        let started = oauth::start_sign_in(
            &random,
            &oauth::SignInStart {
                server: &server,
                client: &client,
                redirect_uri: &redirect_uri,
                scope: scope.as_deref(),
                resource: &resource.resource,
            },
            |nonce| state(&ask.principal, nonce),
        )?;
        let pending = Pending {
            upstream: ask.upstream.clone(),
            resource: resource.resource,
            server,
            client,
            scope,
            verifier: started.verifier,
            redirect_uri,
            expires_ms: now_ms() + PENDING_MS,
            sign_in_ms: within.0,
        };
        let storage = self.state.storage();
        storage
            .put(&format!("pending:{}", started.nonce), serde_json::to_string(&pending)?)
            .await?;
        Ok(started.url)
    }

    /// The callback: the pending sign-in of the state's nonce (used once, within its time), its
    /// code exchanged, the tokens sealed and kept. Returns the upstream's name.
    async fn finish(&self, ask: &Ask) -> Done<String> {
        let secret = self.secret()?;
        let storage = self.state.storage();
        let key = format!("pending:{}", ask.nonce);
        let kept: Option<String> = storage.get(&key).await.ok().flatten();
        let _ = storage.delete(&key).await;
        let p: Pending = kept
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or(TokensError::UnknownSignIn)?;
        if now_ms() > p.expires_ms {
            return Err(TokensError::SignInExpired);
        }
        let state = state(&ask.principal, &ask.nonce);
        let target = format!("{}?{}", oauth::CALLBACK_PATH, ask.query);
        let code = oauth::parse_callback(&target, &state, &p.server)?.ok_or(TokensError::NoCode)?;
        let grant = TokenGrant::AuthorizationCode {
            code: &code,
            verifier: &p.verifier,
            redirect_uri: &p.redirect_uri,
        };
        let r = token_request(&p.server, &p.client, &grant, &p.resource);
        let headers: Vec<(&str, &str)> = r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let at = Within::ms(p.sign_in_ms);
        let (status, _, body) = send(at, TOKEN_ENDPOINT, "POST", &r.url, &headers, Some(r.body)).await?;
        let tokens = parse_token_response(status, &body, now_ms())?;
        let sign_in = SignIn {
            resource: p.resource,
            server: p.server,
            client: p.client,
            scope: p.scope,
            tokens,
        };
        self.keep(&secret, &ask.principal, &p.upstream, &sign_in).await?;
        Ok(p.upstream)
    }

    /// The scopes kept for `upstream` by step-ups, if any.
    async fn wider(&self, upstream: &str) -> Option<String> {
        self.state
            .storage()
            .get::<String>(&format!("wider:{upstream}"))
            .await
            .ok()
            .flatten()
    }

    /// Step-up: `ask.scope` (what the upstream's challenge asked for) joined to the scopes of
    /// the principal's token and to any kept before, kept for its next sign-in (`begin`).
    async fn widen(&self, ask: &Ask) -> Done<String> {
        let granted = match self.sign_in(ask).await {
            Ok(Some(s)) => s.tokens.scope.or(s.scope),
            _ => None,
        };
        let mut all = stepped_up(granted.as_deref(), ask.scope.as_deref().unwrap_or_default());
        if let Some(before) = self.wider(&ask.upstream).await {
            all = stepped_up(all.as_deref(), &before);
        }
        let all = all.unwrap_or_default();
        self.state
            .storage()
            .put(&format!("wider:{}", ask.upstream), all.clone())
            .await?;
        Ok(all)
    }

    /// Sign-out: deletes the principal's tokens for `ask.upstream` and the step-up scopes kept
    /// for it. `None`: nothing was kept; else what became of the revocation (`""`: done or not
    /// offered).
    async fn forget(&self, ask: &Ask) -> Done<Option<String>> {
        let storage = self.state.storage();
        let kept = self.sign_in(ask).await;
        let _ = storage.delete(&format!("wider:{}", ask.upstream)).await;
        let had = storage.delete(&format!("token:{}", ask.upstream)).await?;
        Ok(match kept {
            Ok(Some(s)) => Some(match revoke(ask.within(), &s).await {
                Ok(()) => String::new(),
                Err(e) => format!(" (the authorization server was not told: {e})"),
            }),
            _ if had => Some(String::new()),
            _ => None,
        })
    }

    /// The principal's kept sign-in to `ask.upstream`, opened (`None`: none kept).
    async fn sign_in(&self, ask: &Ask) -> Done<Option<SignIn>> {
        let secret = self.secret()?;
        let Some(sealed) = self
            .state
            .storage()
            .get::<String>(&format!("token:{}", ask.upstream))
            .await
            .ok()
            .flatten()
        else {
            return Ok(None);
        };
        let text = sealed::open(&secret, &aad(&ask.principal, &ask.upstream), &sealed)
            .await
            .map_err(TokensError::Seal)?;
        Ok(Some(serde_json::from_str(&text)?))
    }

    async fn keep(&self, secret: &str, principal: &str, upstream: &str, s: &SignIn) -> Done<()> {
        let text = serde_json::to_string(s)?;
        let sealed = sealed::seal(secret, &aad(principal, upstream), &text)
            .await
            .map_err(TokensError::Seal)?;
        Ok(self.state.storage().put(&format!("token:{upstream}"), sealed).await?)
    }

    /// Waits while another asker refreshes (one at a time: a rotated refresh token is spent once),
    /// then reads what it stored.
    async fn turn(&self) {
        let started = now_ms();
        while self.refreshing.get() && now_ms() - started < 30_000 {
            worker::Delay::from(std::time::Duration::from_millis(20)).await;
        }
    }

    /// The gateway's own `Authorization` header for `ask.upstream` at `ask.url`
    /// (`client_credentials`, used for every principal's requests): the kept token while it is
    /// fresh, else a new one, asked with the kept authorization server and client (the first
    /// time after discovery, and registration when the server offers no other way). `ask.renew`:
    /// the upstream refused the kept one; `ask.scope`: it asked for these scopes too (403
    /// `insufficient_scope`), joined to those asked before and kept for every token after.
    /// With the header, until when it may be used without asking again (none: until refused).
    async fn gateway(&self, ask: &Ask) -> Done<(String, Option<i64>)> {
        self.turn().await;
        let secret = self.secret()?;
        let auth = ask.auth.as_ref().ok_or(TokensError::NoAuth)?;
        let key = format!("machine:{}", ask.upstream);
        let storage = self.state.storage();
        let kept = match storage.get::<String>(&key).await.ok().flatten() {
            Some(sealed) => match sealed::open(&secret, &gateway_aad(&ask.upstream), &sealed).await {
                Ok(text) => serde_json::from_str::<SignIn>(&text).ok(),
                Err(e) => {
                    log::error(format_args!("upstream \"{}\": {e}", ask.upstream));
                    None
                }
            },
            None => None,
        };
        // One for another resource, or of another client than the document names, is not used.
        let kept = kept.filter(|s| {
            oauth::resource_allows(&s.resource, &ask.url)
                && auth.client_id.as_ref().is_none_or(|id| *id == s.client.client_id)
        });
        let bearer = |s: &SignIn| {
            let header = s.bearer_for(&ask.url).ok_or(TokensError::OtherResource);
            header.map(|h| (h, s.tokens.refresh_at()))
        };
        if let Some(s) = kept
            .as_ref()
            .filter(|s| !ask.renew && ask.scope.is_none() && !s.tokens.expiring(now_ms()))
        {
            return bearer(s);
        }
        self.refreshing.set(true);
        let got = self.gateway_token(auth, ask, kept).await;
        self.refreshing.set(false);
        let s = match got {
            Ok(s) => s,
            Err(e) => {
                // Asked afresh next time (discovery, the client): what was kept may be what failed.
                let _ = storage.delete(&key).await;
                return Err(e);
            }
        };
        let text = serde_json::to_string(&s)?;
        let sealed = sealed::seal(&secret, &gateway_aad(&ask.upstream), &text)
            .await
            .map_err(TokensError::Seal)?;
        storage.put(&key, sealed).await?;
        bearer(&s)
    }

    /// A new `client_credentials` token for `ask`, at the authorization server and as the client
    /// of `kept` when there is one, else of discovery.
    async fn gateway_token(&self, auth: &AuthAsk, ask: &Ask, kept: Option<SignIn>) -> Done<SignIn> {
        let (resource, server, mut client, scope) = match kept {
            Some(s) => (s.resource, s.server, s.client, s.scope),
            None => {
                let config = OAuth {
                    client_id: auth.client_id.clone(),
                    client_secret: None,
                    client_metadata_url: None,
                    scopes: auth.scopes.clone(),
                    grant: Grant::ClientCredentials,
                };
                let challenge = probe(ask.within(), &ask.url).await?;
                let (resource, server) = discover(ask.within(), &ask.url, challenge.as_ref()).await?;
                let scope = select_scope(&config.scopes, challenge.as_ref(), &resource);
                let client = client_for(
                    ask.within(),
                    &config,
                    auth.client_secret.clone(),
                    &server,
                    &ask.upstream,
                    None,
                    scope.as_deref(),
                )
                .await?;
                (resource.resource, server, client, scope)
            }
        };
        // The document's secret is the one to use (it may have been rotated since).
        if auth.client_id.is_some() {
            client.client_secret = auth.client_secret.clone();
        }
        let scope = match ask.scope.as_deref() {
            Some(more) => stepped_up(scope.as_deref(), more),
            None => scope,
        };
        let grant = TokenGrant::ClientCredentials {
            scope: scope.as_deref(),
        };
        let r = token_request(&server, &client, &grant, &resource);
        let headers: Vec<(&str, &str)> = r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let (status, _, body) = send(ask.within(), TOKEN_ENDPOINT, "POST", &r.url, &headers, Some(r.body)).await?;
        let tokens = parse_token_response(status, &body, now_ms()).map_err(TokensError::GatewayToken)?;
        Ok(SignIn {
            resource,
            server,
            client,
            scope,
            tokens,
        })
    }

    /// The `Authorization` header of `ask.principal` for `ask.upstream` at `ask.url`, refreshed
    /// first when it expires soon; `Err(why)` inside when the principal must sign in.
    async fn token(&self, ask: &Ask) -> Done<std::result::Result<String, SignInNeeded>> {
        self.turn().await;
        let secret = self.secret()?;
        let key = format!("token:{}", ask.upstream);
        let storage = self.state.storage();
        let Some(sealed) = storage.get::<String>(&key).await.ok().flatten() else {
            return Ok(Err(SignInNeeded::NotSignedIn));
        };
        let s: SignIn = match sealed::open(&secret, &aad(&ask.principal, &ask.upstream), &sealed).await {
            Ok(text) => serde_json::from_str(&text)?,
            Err(e) => {
                log::error(format_args!("upstream \"{}\": {e}", ask.upstream));
                let _ = storage.delete(&key).await;
                return Ok(Err(SignInNeeded::Unreadable));
            }
        };
        if !oauth::resource_allows(&s.resource, &ask.url) {
            return Ok(Err(SignInNeeded::OtherResource {
                resource: s.resource,
                url: ask.url.clone(),
            }));
        }
        if !s.tokens.expiring(now_ms()) {
            return Ok(s.bearer_for(&ask.url).ok_or(SignInNeeded::NotForUrl));
        }
        let Some(rt) = s.tokens.refresh_token.clone() else {
            let _ = storage.delete(&key).await;
            return Ok(Err(SignInNeeded::NoRefreshToken));
        };
        self.refreshing.set(true);
        let refreshed = async {
            let grant = TokenGrant::Refresh {
                refresh_token: &rt,
                scope: None,
            };
            let r = token_request(&s.server, &s.client, &grant, &s.resource);
            let headers: Vec<(&str, &str)> = r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let (status, _, body) = send(ask.within(), TOKEN_ENDPOINT, "POST", &r.url, &headers, Some(r.body)).await?;
            Ok::<_, TokensError>(parse_token_response(status, &body, now_ms()))
        }
        .await;
        let out = match refreshed {
            Ok(Ok(t)) => {
                let next = SignIn {
                    tokens: t.refreshed(&s.tokens),
                    ..s
                };
                let kept = self.keep(&secret, &ask.principal, &ask.upstream, &next).await;
                kept.map(|()| next.bearer_for(&ask.url).ok_or(SignInNeeded::NotForUrl))
            }
            Ok(Err(e)) if e.needs_login() => {
                let _ = storage.delete(&key).await;
                Ok(Err(SignInNeeded::RefreshRefused(e)))
            }
            Ok(Err(e)) => Err(e.into()),
            Err(e) => Err(e),
        };
        self.refreshing.set(false);
        out
    }
}

/// `scope` with the scopes `more` added (the core's step-up union, [`step_up_scope`]).
fn stepped_up(scope: Option<&str>, more: &str) -> Option<String> {
    let asked = Challenge {
        error: Some("insufficient_scope".into()),
        scope: Some(more.to_string()),
        ..Default::default()
    };
    step_up_scope(403, Some(&asked), scope)
}

/// The client identity at `server` for upstream `name` (`config`, its resolved `secret`): as the
/// document gives it, else registered (RFC 7591) for `config.grant` — a web application's
/// `redirect_uri` (this Worker's https origin, not a native app's loopback) for a person's
/// sign-in, none for the gateway's own token.
async fn client_for(
    within: Within,
    config: &OAuth,
    secret: Option<String>,
    server: &AuthServer,
    name: &str,
    redirect_uri: Option<&str>,
    scope: Option<&str>,
) -> Done<Client> {
    let endpoint = match choose_client(config, secret, server, name)? {
        Identity::Ready(c) => return Ok(c),
        Identity::Register(endpoint) => endpoint,
    };
    let mut body: Value = serde_json::from_str(&registration_request(config.grant, redirect_uri, scope))?;
    if config.grant == Grant::AuthorizationCode {
        body["application_type"] = "web".into();
    }
    let (status, _, text) = send(
        within,
        "the authorization server's registration endpoint",
        "POST",
        &endpoint,
        &[("content-type", "application/json")],
        Some(body.to_string()),
    )
    .await?;
    Ok(parse_registration(status, &text)?)
}

/// Tells the authorization server of `s` that its tokens are no longer wanted (RFC 7009), when
/// it offers revocation: the refresh token (which ends the grant), else the access token. A
/// server that cannot revoke a token of that type (`unsupported_token_type`, such as a JWT access
/// token) leaves it to expire.
async fn revoke(within: Within, s: &SignIn) -> Done<()> {
    let (token, hint) = match s.tokens.refresh_token.as_deref() {
        Some(rt) => (rt, "refresh_token"),
        None => (s.tokens.access_token.as_str(), "access_token"),
    };
    let Some(r) = oauth::revocation_request(&s.server, &s.client, token, hint) else {
        return Ok(());
    };
    let headers: Vec<(&str, &str)> = r.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let party = "the authorization server's revocation endpoint";
    let (status, _, body) = send(within, party, "POST", &r.url, &headers, Some(r.body)).await?;
    if status == 200 || (status == 400 && body.contains("unsupported_token_type")) {
        return Ok(());
    }
    Err(TokensError::Revocation {
        status,
        body: body.chars().take(200).collect(),
    })
}

/// Who answers a token request, said when it does not.
const TOKEN_ENDPOINT: &str = "the authorization server's token endpoint";

/// One request to `party` (who answers it, named when it does not: "the authorization server's
/// token endpoint"), all of it within `within`: (status, `WWW-Authenticate`, body up to
/// [`MAX_ANSWER`], read within it).
async fn send(
    within: Within,
    party: &'static str,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> Done<(u16, Option<String>, String)> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let exchange = std::pin::pin!(send_now(&signal, method, url, headers, body));
    let late = std::pin::pin!(Delay::from(std::time::Duration::from_millis(within.0)));
    match select(exchange, late).await {
        Either::Left((answer, _)) => answer,
        Either::Right(_) => {
            controller.abort();
            Err(TokensError::NoAnswer {
                party,
                url: url.into(),
                ms: within.0,
            })
        }
    }
}

/// [`send`], without its deadline (`signal` aborts it).
async fn send_now(
    signal: &AbortSignal,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> Done<(u16, Option<String>, String)> {
    let h = Headers::new();
    h.set("accept", "application/json")?;
    for (k, v) in headers {
        h.set(k, v)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::from(method.to_string())).with_headers(h);
    if let Some(b) = body {
        init.with_body(Some(b.into()));
    }
    let req = Request::new_with_init(url, &init).map_err(|source| TokensError::Ask {
        url: url.into(),
        source,
    })?;
    let mut res = Fetch::Request(req)
        .send_with_signal(signal)
        .await
        .map_err(|source| TokensError::Reach {
            url: url.into(),
            source,
        })?;
    let status = res.status_code();
    let www = res.headers().get("www-authenticate").ok().flatten();
    // Read as it streams in: an authorization server cannot fill the isolate's memory.
    let bytes = crate::platform::read_capped(&mut res, MAX_ANSWER)
        .await
        .map_err(|source| TokensError::Body {
            url: url.into(),
            status,
            source,
        })?
        .ok_or_else(|| TokensError::TooLarge { url: url.into() })?;
    Ok((status, www, String::from_utf8_lossy(&bytes).into_owned()))
}

/// The challenge the MCP server at `url` answers an unauthenticated `initialize` with, if any.
async fn probe(within: Within, url: &str) -> Done<Option<Challenge>> {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": mcp_sieve::upstream::PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "mcp-sieve", "version": env!("CARGO_PKG_VERSION")}}});
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    let (status, www, _) = send(within, "the upstream", "POST", url, &headers, Some(body.to_string())).await?;
    Ok(match status {
        401 | 403 => www.as_deref().and_then(parse_challenge),
        _ => None,
    })
}

/// The Protected Resource Metadata of the MCP server at `url` and its first authorization
/// server's metadata.
async fn discover(within: Within, url: &str, challenge: Option<&Challenge>) -> Done<(ResourceMetadata, AuthServer)> {
    let mut resource = None;
    let mut tried = Vec::new();
    if let Some(why) = oauth::foreign_resource_metadata(url, challenge) {
        log::warn(why);
    }
    for u in resource_metadata_urls(url, challenge)? {
        let party = "the upstream's protected resource metadata";
        let (status, _, body) = send(within, party, "GET", &u, &[], None).await?;
        if status == 200 {
            resource = Some(ResourceMetadata::parse(&body, url)?);
            break;
        }
        tried.push(format!("{u} ({status})"));
    }
    let Some(resource) = resource else {
        return Err(TokensError::NoResourceMetadata { url: url.into(), tried });
    };
    let issuer = resource.authorization_servers[0].clone();
    let mut tried = Vec::new();
    for u in authorization_server_metadata_urls(&issuer)? {
        let party = "the authorization server's metadata";
        let (status, _, body) = send(within, party, "GET", &u, &[], None).await?;
        if status == 200 {
            let server = AuthServer::parse(&body, &issuer)?;
            return Ok((resource, server));
        }
        tried.push(format!("{u} ({status})"));
    }
    Err(TokensError::NoServerMetadata { issuer, tried })
}
