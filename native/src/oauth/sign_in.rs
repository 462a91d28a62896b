//! A person signing in to an upstream by authorization code + PKCE, in two halves: [`begin`]
//! (discovery, the client's identity, the loopback listener for the browser's redirect, the
//! authorization URL) and [`Pending::finish`] (the redirect awaited, the code exchanged, the
//! tokens stored). `mcp-sieve login NAME` runs both in a row; a running gateway begins one when
//! an upstream needs a sign-in and its client declared URL-mode elicitation, hands the client
//! the URL (`-32042`, or `elicitation/create` at startup under `stdio`) and finishes in the
//! background; then the upstream is listed again and the clients handed the URL hear
//! `notifications/elicitation/complete` (`Gateway::sign_in_url`).

use std::sync::Arc;
use std::time::Duration;

use mcp_sieve::catalog::{Grant, OAuth, Upstream};
use mcp_sieve::upstream::oauth::{
    self, choose_client, select_scope, step_up_scope, AuthServer, Challenge, Client, Identity, SignIn, TokenGrant,
};
use mcp_sieve::Error;

use crate::oauth::{discover, kept_in, load_store, probe, register, tokens, update_store, Asked, Auth, Http};

/// How long a sign-in waits for the browser to come back.
const LOGIN_WAIT: Duration = Duration::from_secs(600);

/// One sign-in under way: the browser is to open `url` and come back to `redirect_uri`.
pub struct Pending {
    /// The upstream's name.
    pub name: String,
    /// The authorization URL to open.
    pub url: String,
    /// Where the browser comes back (`http://127.0.0.1:PORT/callback`).
    pub redirect_uri: String,
    listener: tokio::net::TcpListener,
    state: String,
    verifier: String,
    server: AuthServer,
    client: Client,
    resource: String,
    scope: Option<String>,
    http: Http,
}

/// Begins the sign-in of upstream `name` at `url` (its `auth` settings `config`, its resolved
/// client secret): the scopes are the document's, the challenge's or the resource's, widened by
/// those a step-up asked for (kept in the store).
pub async fn begin(name: &str, url: &str, config: &OAuth, secret: Option<String>) -> Result<Pending, Error> {
    // Asked as the URL parser resolves it (dot segments), the URL its metadata is checked against.
    let url = &oauth::request_url(url);
    let http = Http::new();
    let challenge = probe(&http, url).await?;
    let d = discover(&http, url, challenge.as_ref()).await?;
    // Before a listener is opened or a client registered: the server takes a person's sign-in.
    d.server.check_authorization_code()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| Error::Upstream(format!("cannot listen on 127.0.0.1 for the sign-in's redirect: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::Upstream(format!("the sign-in listener has no port: {e}")))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}{}", oauth::CALLBACK_PATH);
    let mut scope = select_scope(&config.scopes, challenge.as_ref(), &d.resource);
    // Scopes a step-up asked for while serving (kept in the store).
    if let Some(wider) = load_store()
        .ok()
        .and_then(|s| s.upstreams.get(name).and_then(|s| s.scope.clone()))
    {
        scope = step_up_scope(
            403,
            Some(&Challenge {
                error: Some("insufficient_scope".into()),
                scope: Some(wider),
                ..Default::default()
            }),
            scope.as_deref(),
        );
    }
    let client = match choose_client(config, secret, &d.server, name)? {
        Identity::Ready(c) => c,
        Identity::Register(endpoint) => {
            register(
                &http,
                &endpoint,
                Grant::AuthorizationCode,
                Some(&redirect_uri),
                scope.as_deref(),
            )
            .await?
        }
    };
    let mut random = [0u8; oauth::SIGN_IN_RANDOM];
    getrandom::fill(&mut random).map_err(|e| Error::Internal(format!("no random bytes for PKCE: {e}")))?;
    let started = oauth::start_sign_in(
        &random,
        &oauth::SignInStart {
            server: &d.server,
            client: &client,
            redirect_uri: &redirect_uri,
            scope: scope.as_deref(),
            resource: &d.resource.resource,
        },
        str::to_string,
    )?;
    Ok(Pending {
        name: name.to_string(),
        url: started.url,
        redirect_uri,
        listener,
        state: started.state,
        verifier: started.verifier,
        server: d.server,
        client,
        resource: d.resource.resource,
        scope,
        http,
    })
}

impl Pending {
    /// The authorization server's issuer.
    pub fn issuer(&self) -> &str {
        &self.server.issuer
    }

    /// Waits up to `wait` for the browser's redirect, exchanges its code and stores the tokens;
    /// whether a refresh token came with them.
    pub async fn finish(self, wait: Duration) -> Result<bool, Error> {
        let name = self.name.clone();
        let code = tokio::time::timeout(wait, callback(self.listener, &self.state, &self.server))
            .await
            .map_err(|_| {
                Error::Upstream(format!(
                    "nobody signed in to upstream \"{name}\" within {} minutes",
                    wait.as_secs() / 60
                ))
            })??;
        let grant = TokenGrant::AuthorizationCode {
            code: &code,
            verifier: &self.verifier,
            redirect_uri: &self.redirect_uri,
        };
        let t = tokens(&self.http, &self.server, &self.client, &grant, &self.resource)
            .await?
            .map_err(|e| Error::Upstream(e.to_string()))?;
        let refresh = t.refresh_token.is_some();
        let sign_in = SignIn {
            resource: self.resource,
            server: self.server,
            client: self.client,
            scope: self.scope,
            tokens: t,
        };
        update_store(|s| {
            s.upstreams.insert(name, sign_in);
        })?;
        Ok(refresh)
    }
}

/// The sign-in URL of upstream `auth` for a client (of downstream `session`, if it has one)
/// that declared URL-mode elicitation, and its elicitation id: the one under way, else a new one
/// begun (the loopback listener of `mcp-sieve login`) and finished in the background, whose
/// tokens the next request uses. Once it is done, `then` is given its id and the sessions it
/// was handed to (they are told: `notifications/elicitation/complete`).
pub async fn asked_of_client<F>(
    auth: &Arc<Auth>,
    session: Option<&str>,
    then: impl FnOnce(String, Vec<String>) -> F + Send + 'static,
) -> Result<(String, String), Error>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut asked = auth.asked.lock().await;
    if let Some(a) = asked.as_mut() {
        if let Some(s) = session.filter(|s| !a.sessions.iter().any(|x| x == s)) {
            a.sessions.push(s.to_string());
        }
        return Ok((a.id.clone(), a.url.clone()));
    }
    let (url, config, secret) = auth.sign_in_parts();
    let pending = begin(auth.name(), url, config, secret).await?;
    let id = crate::platform::fresh_id().map_err(|e| Error::Internal(e.to_string()))?;
    let a = Asked {
        id: id.clone(),
        url: pending.url.clone(),
        sessions: session.map(str::to_string).into_iter().collect(),
    };
    let out = (id, a.url.clone());
    *asked = Some(a);
    tracing::info!(
        "upstream \"{}\" needs a sign-in: its client was asked to open the sign-in URL (URL-mode elicitation); waiting for the redirect to {}",
        auth.name(),
        pending.redirect_uri
    );
    let auth = Arc::clone(auth);
    tokio::spawn(async move {
        let done = pending.finish(LOGIN_WAIT).await;
        if done.is_ok() {
            auth.signed_in().await;
        }
        // Taken after `signed_in`: a client asking from now on gets a request that works.
        let asked = auth.asked.lock().await.take().unwrap_or_default();
        match done {
            Ok(_) => {
                tracing::info!(
                    "upstream \"{}\": signed in through the client's URL elicitation",
                    auth.name()
                );
                then(asked.id, asked.sessions).await;
            }
            Err(e) => tracing::warn!(
                "upstream \"{}\": the sign-in asked of the client failed: {e}",
                auth.name()
            ),
        }
    });
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// `mcp-sieve login`

/// The upstream named `name` among `ups`, or an error listing them.
fn named<'a>(ups: &'a [Upstream], name: &str) -> Result<&'a Upstream, Error> {
    ups.iter().find(|u| u.name == name).ok_or_else(|| {
        let names: Vec<&str> = ups.iter().map(|u| u.name.as_str()).filter(|n| !n.is_empty()).collect();
        Error::Config(format!(
            "no upstream named \"{name}\" in the catalog (its upstreams: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))
    })
}

/// Tries to open `url` in the user's browser: the `webbrowser` crate (`$BROWSER`, then the
/// desktop's opener on Unix, `open` on macOS, the registered `http` handler started directly on
/// Windows — never `cmd /C start`, which cut the URL at its first `&`).
fn open_browser(url: &str) -> bool {
    webbrowser::open(url).is_ok()
}

/// Serves the sign-in's loopback redirect on `listener` with hyper until a request brings the
/// code of `state` (or an error: a wrong `state`, an error from the authorization server), and
/// answers each request with a page; others (a favicon) get 404. The outcome is handed over once
/// its page is written (the connection is not kept alive).
async fn callback(listener: tokio::net::TcpListener, state: &str, server: &AuthServer) -> Result<String, Error> {
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioIo, TokioTimer};
    type Outcome = Result<Option<String>, Error>;
    let (done_tx, mut done) = tokio::sync::mpsc::channel::<Result<String, Error>>(1);
    let (state, server): (Arc<str>, Arc<AuthServer>) = (state.into(), Arc::new(server.clone()));
    loop {
        let sock = tokio::select! {
            Some(outcome) = done.recv() => return outcome,
            accepted = listener.accept() => match accepted {
                Ok((sock, _)) => sock,
                Err(e) => return Err(Error::Upstream(format!("the sign-in listener failed: {e}"))),
            },
        };
        let (state, server, done_tx) = (state.clone(), server.clone(), done_tx.clone());
        tokio::spawn(async move {
            let seen: Arc<std::sync::Mutex<Option<Outcome>>> = Arc::default();
            let slot = seen.clone();
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
                let outcome = match req.method() {
                    &hyper::Method::GET => oauth::parse_callback(target, &state, &server),
                    _ => Ok(None),
                };
                let answer = page(&outcome);
                if !matches!(outcome, Ok(None)) {
                    *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome);
                }
                async move { Ok::<_, std::convert::Infallible>(answer) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .keep_alive(false)
                .serve_connection(TokioIo::new(sock), service)
                .await;
            let outcome = seen.lock().unwrap_or_else(|p| p.into_inner()).take();
            match outcome {
                Some(Ok(Some(code))) => drop(done_tx.try_send(Ok(code))),
                Some(Err(e)) => drop(done_tx.try_send(Err(e))),
                _ => {}
            }
        });
    }
}

/// The page answering a request to the sign-in's redirect.
fn page(outcome: &Result<Option<String>, Error>) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    let (status, text) = match outcome {
        Ok(Some(_)) => (
            hyper::StatusCode::OK,
            "Signed in: mcp-sieve has its token. You can close this tab.".to_string(),
        ),
        Ok(None) => (hyper::StatusCode::NOT_FOUND, "Not found".to_string()),
        Err(e) => (hyper::StatusCode::BAD_REQUEST, format!("The sign-in failed: {e}")),
    };
    let text = text.replace('&', "&amp;").replace('<', "&lt;");
    let body = format!("<!doctype html><meta charset=utf-8><title>mcp-sieve</title><p>{text}</p>");
    let mut resp = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(body)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    resp
}

/// `mcp-sieve login NAME`: the authorization-code flow with PKCE for upstream `name` of `ups`,
/// its tokens stored. The authorization URL is printed on stderr (and opened in the browser
/// unless `no_browser`).
pub async fn login(ups: &[Upstream], name: &str, no_browser: bool) -> Result<(), Error> {
    let up = named(ups, name)?;
    let Some(url) = up.url() else {
        return Err(Error::Config(format!(
            "upstream \"{name}\" is not reached at a url: only HTTP upstreams sign in"
        )));
    };
    if up.static_authorization() {
        return Err(Error::Config(format!(
            "upstream \"{name}\" is sent a static Authorization header (upstreams.{name}.headers): remove it to sign in with OAuth"
        )));
    }
    let config = up.auth.clone().unwrap_or_default();
    if config.grant == Grant::ClientCredentials {
        return Err(Error::Config(format!(
            "upstream \"{name}\" uses the client_credentials grant: the gateway gets its token itself, nobody signs in"
        )));
    }
    let secret = up.resolved_client_secret(&|n| std::env::var(n).ok())?;
    let pending = crate::oauth::sign_in::begin(name, url, &config, secret).await?;
    let (authorize, redirect_uri) = (pending.url.clone(), pending.redirect_uri.clone());
    eprintln!("mcp-sieve: sign in to upstream \"{name}\" at {}:", pending.issuer());
    eprintln!("{authorize}");
    if no_browser || !open_browser(&authorize) {
        eprintln!("mcp-sieve: open that URL in a browser on this machine; waiting for its redirect to {redirect_uri}");
    } else {
        eprintln!("mcp-sieve: a browser was opened; waiting for its redirect to {redirect_uri}");
    }
    let refresh = pending
        .finish(LOGIN_WAIT)
        .await
        .map_err(|e| Error::Upstream(format!("{e}; run `mcp-sieve login {name}` again")))?;
    eprintln!(
        "mcp-sieve: signed in to upstream \"{name}\"{}; the token is kept in {}",
        if refresh { " (with a refresh token)" } else { "" },
        kept_in()
    );
    Ok(())
}
