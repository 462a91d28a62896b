//! Every request to an upstream with `auth`, signed: a POST with its principal's token (asked of
//! the principal's object, the error saying where to sign in when there is none; a step-up
//! widens the scopes for the next sign-in) or the gateway's own `client_credentials` token, and
//! a request without a body (a GET stream, a DELETE) with the same token its POSTs carry.

use std::rc::Rc;

use mcp_sieve::catalog::{Limits, Transport};
use mcp_sieve::upstream::{self, HttpAnswer, Post};
use mcp_sieve::Error;
use worker::{AbortSignal, Fetcher, ObjectNamespace};

use super::drivers::{fetch, http_url, post, target};
use super::relaying::Relaying;
use super::{limits, position, SIGNING, STATE};
use crate::oauth::sign_in;
use crate::oauth::upstream_tokens;

/// How the requests to an upstream with `"auth": "oauth"` are authorized.
#[derive(Clone)]
pub(crate) enum Signer {
    /// Each principal signs in to upstream `.0` (authorization code): that principal's token.
    Person(String),
    /// The gateway's own token for upstream `.0` (client credentials, its `auth` with the
    /// secret resolved), the same for every principal.
    Machine(String, Rc<upstream_tokens::AuthAsk>),
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

/// How upstream `member`'s requests are authorized, and the tokens' namespace, when it has `auth`.
pub(crate) fn signing(member: usize) -> Option<(Signer, ObjectNamespace)> {
    SIGNING.with_borrow(|(signers, ns)| Some((signers.get(member)?.clone()?, ns.clone()?)))
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

/// How one upstream is reached and its requests are signed, taken from the gateway in place
/// ([`Reach::of`]) and kept by work that outlives the request that found the upstream: the same
/// upstream is reached with it after a reload, whatever number it has then, and a replaced
/// gateway's sessions are closed with it once that gateway is gone (`closing::Retired`).
#[derive(Clone)]
pub struct Reach {
    /// The upstream's name and how it is reached: what it is known by across a reload.
    name: String,
    transport: Transport,
    label: String,
    url: String,
    via: Option<Fetcher>,
    /// Its URL when it is reached over HTTP (the resource its tokens are for), else empty.
    resource: String,
    signing: Option<(Signer, ObjectNamespace)>,
    limits: Limits,
}

impl Reach {
    /// Upstream `member` of the gateway in place (`None`: no such upstream).
    pub(crate) fn of(member: usize) -> Option<Reach> {
        STATE.with(|s| Reach::at(&s.borrow().as_ref()?.1, member))
    }

    /// Upstream `member` of `g`, the gateway whose drivers are in place (the one in place, or
    /// the one a reload is replacing).
    pub(super) fn at(g: &upstream::Gateway, member: usize) -> Option<Reach> {
        let u = g.upstream_at(member)?;
        let (url, via) = target(member)?;
        Some(Reach {
            name: u.name.clone(),
            transport: u.transport.clone(),
            label: u.label(),
            url,
            via,
            resource: http_url(member).unwrap_or_default(),
            signing: signing(member),
            limits: limits(member),
        })
    }

    /// [`Reach::of`], or the error that there is no such upstream.
    pub(crate) fn found(member: usize) -> Result<Reach, Error> {
        Reach::of(member).ok_or_else(|| Error::Internal(format!("no upstream number {member}")))
    }

    /// Its number in the gateway in place now: `None` when a reload removed it or moved it
    /// elsewhere (another URL, another binding).
    pub(crate) fn now_at(&self) -> Option<usize> {
        position(&self.name, &self.transport)
    }

    /// Its name for what is said about it (`upstream "NAME"`).
    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// `e`, saying it came from this upstream when it has a name (`upstream::named`).
    pub(crate) fn named(&self, e: Error) -> Error {
        upstream::named_by(&self.name, &self.label, e)
    }

    /// Its budgets.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// One message on behalf of `principal`: to an upstream its callers sign in to, with that
    /// principal's token only (asked of its object, refreshed there when due), or not at all
    /// (the error says where to sign in); to a `client_credentials` upstream with the gateway's
    /// own token ([`Reach::machine`]); to any other, as it is. What the upstream sends meanwhile
    /// is carried out by `relaying`.
    pub(crate) async fn send_for(
        &self,
        mut p: Post,
        relaying: Option<&dyn Relaying>,
        principal: Option<&str>,
    ) -> Result<HttpAnswer, Error> {
        let (name, ns) = match &self.signing {
            None => return self.post(p, relaying).await.map(|(a, _)| a),
            Some((Signer::Machine(name, auth), ns)) => return self.machine(p, relaying, name, auth, ns).await,
            Some((Signer::Person(name), ns)) => (name, ns),
        };
        let header = sign_in::bearer(ns, principal, name, &self.resource, self.limits.sign_in_ms).await?;
        authorize(&mut p.headers, header);
        let (answer, www) = self.post(p, relaying).await?;
        if answer.status == 401 {
            return Err(sign_in::sign_in_error(name, "the upstream refused your token"));
        }
        // Step-up: the upstream wants more scopes than this principal's token has. The principal's
        // object keeps them (with those granted) for its next sign-in, which the error points to.
        if let Some(wanted) = wanted_scope(&answer, www.as_deref()) {
            let scope = sign_in::widen(ns, principal, name, &wanted).await?;
            return Err(sign_in::sign_in_error(
                name,
                &format!("it needs the scopes \"{scope}\""),
            ));
        }
        Ok(answer)
    }

    /// `p` over its driver within its limits, with the answer's `WWW-Authenticate` when it is a
    /// 401 or 403.
    async fn post(&self, p: Post, relaying: Option<&dyn Relaying>) -> Result<(HttpAnswer, Option<String>), Error> {
        post(&self.url, self.via.clone(), p, relaying, self.limits).await
    }

    /// `p` to this `client_credentials` upstream (`name`, `auth`) with the gateway's own token
    /// (the gateway's object in `ns` keeps it): one the upstream refuses (401) is asked for
    /// again, and one without the scopes it asks for (403 `insufficient_scope`) is asked for
    /// again with them — once; refused again, the error says so.
    async fn machine(
        &self,
        mut p: Post,
        relaying: Option<&dyn Relaying>,
        name: &str,
        auth: &upstream_tokens::AuthAsk,
        ns: &ObjectNamespace,
    ) -> Result<HttpAnswer, Error> {
        let (mut renew, mut wider) = (false, None);
        for again in [false, true] {
            let within = self.limits.sign_in_ms;
            let header =
                sign_in::gateway_bearer(ns, name, &self.resource, auth, renew, wider.as_deref(), within).await?;
            authorize(&mut p.headers, header);
            let (answer, www) = self.post(p.clone(), relaying).await?;
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

    /// Whether each principal signs in to it (its requests carry the principal's own token).
    pub(crate) fn per_principal(&self) -> bool {
        matches!(self.signing, Some((Signer::Person(_), _)))
    }

    /// The `Authorization` header of a request of `principal` (a session's `GET` stream or
    /// `DELETE`: the same token its POSTs carry), `None` when it takes none.
    async fn authorization(&self, principal: Option<&str>) -> Result<Option<String>, Error> {
        let (url, within) = (&self.resource, self.limits.sign_in_ms);
        match &self.signing {
            None => Ok(None),
            Some((Signer::Person(name), ns)) => sign_in::bearer(ns, principal, name, url, within).await.map(Some),
            Some((Signer::Machine(name, auth), ns)) => {
                sign_in::gateway_bearer(ns, name, url, auth, false, None, within)
                    .await
                    .map(Some)
            }
        }
    }

    /// A request without a body (`GET` of a standalone stream, `DELETE` of a session) with
    /// `headers` over [`fetch`](super::drivers::fetch), on behalf of `principal` (authorized as
    /// its POSTs are): its answer as it comes (a body still streaming), or why there is none.
    pub(crate) async fn bodiless(
        &self,
        method: &str,
        headers: &[(String, String)],
        signal: Option<&AbortSignal>,
        principal: Option<&str>,
    ) -> Result<web_sys::Response, Unanswered> {
        let mut headers = headers.to_vec();
        if let Some(h) = self.authorization(principal).await? {
            authorize(&mut headers, h);
        }
        Ok(fetch(&self.url, self.via.clone(), method, &headers, None, signal).await?)
    }
}
