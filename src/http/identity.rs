//! Who a request is, when the catalog has an `auth` block: a static token (`MCP_SIEVE_TOKENS`)
//! is known at once; a bearer JWT (the OAuth authorization server's) or a `Cf-Access-Jwt-Assertion`
//! (Cloudflare Access) is handed to the shell to verify; anything else is refused with 401 and the
//! Protected Resource Metadata URL. Also the metadata document's route (RFC 9728).

use std::sync::Arc;

use serde_json::Value;

use super::config::Config;
use super::exchange::{json_response, Response};
use super::security::{cors_headers, identify};
use crate::auth::{AuthConfig, Identity, Rejection};
use crate::error::Error;
use crate::protocol::jsonrpc;

/// The Cloudflare Access assertion header.
pub const ACCESS_HEADER: &str = "cf-access-jwt-assertion";

/// An authenticated caller.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Caller {
    /// Its principal (`None`: anonymous, no authentication configured or `MCP_SIEVE_TOKEN`).
    pub principal: Option<String>,
    /// The verified token behind it, with roles and claims.
    pub identity: Option<Arc<Identity>>,
}

impl Caller {
    /// The caller a verified token names.
    pub fn verified(identity: Identity) -> Caller {
        Caller {
            principal: Some(identity.principal.clone()),
            identity: Some(Arc::new(identity)),
        }
    }

    /// Its roles (none without a token).
    pub fn roles(&self) -> &[String] {
        self.identity.as_ref().map_or(&[], |i| &i.roles)
    }
}

/// Whose token the shell must verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Party {
    /// `auth.issuer`'s (`Authorization: Bearer`).
    OAuth,
    /// `auth.cloudflareAccess`'s (`Cf-Access-Jwt-Assertion`).
    Access,
}

/// What a shell does next to know who a request is.
#[derive(Debug, Clone, PartialEq)]
pub enum Who {
    /// Known now.
    Known(Caller),
    /// Verify this JWT with this party's keys ([`crate::auth::Token`]), then [`refused`] or
    /// [`Caller::verified`].
    Verify(String, Party),
    /// Refused now: answer this.
    Refused(Box<Response>),
}

fn bearer(authorization: Option<&str>) -> Option<&str> {
    authorization
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| !t.is_empty())
}

/// Who the request with these headers is (after [`super::gate`], which leaves token checks to
/// this when `cfg.auth` is set).
pub fn who(cfg: &Config, header: &dyn Fn(&str) -> Option<String>) -> Who {
    let authorization = header("authorization");
    let Some(auth) = cfg.auth.as_deref() else {
        return Who::Known(Caller {
            principal: identify(cfg, authorization.as_deref()).ok().flatten(),
            identity: None,
        });
    };
    if auth.access.is_some() {
        if let Some(assertion) = header(ACCESS_HEADER).filter(|a| !a.trim().is_empty()) {
            return Who::Verify(assertion.trim().to_string(), Party::Access);
        }
    }
    let token = bearer(authorization.as_deref());
    let statics = cfg.bearer_token.is_some() || !cfg.tokens.is_empty();
    if statics && token.is_some() {
        if let Ok(principal) = identify(cfg, authorization.as_deref()) {
            return Who::Known(Caller {
                principal,
                identity: None,
            });
        }
    }
    match token {
        Some(t) if auth.oauth.is_some() => Who::Verify(t.to_string(), Party::OAuth),
        Some(_) => Who::Refused(Box::new(refused(
            cfg,
            &Rejection::Invalid("it is not a token this server knows".into()),
            None,
        ))),
        None if auth.oauth.is_none() => Who::Refused(Box::new(refused(
            cfg,
            &Rejection::Invalid(
                "the Cf-Access-Jwt-Assertion header is missing (is the Access application in front?)".into(),
            ),
            None,
        ))),
        None => Who::Refused(Box::new(refused(cfg, &Rejection::Missing, None))),
    }
}

/// The answer to a request whose credential was refused: 401 or 403 with `WWW-Authenticate`
/// (pointing at the Protected Resource Metadata) and a JSON-RPC error naming what failed.
/// `origin` gets CORS headers when allowed.
pub fn refused(cfg: &Config, why: &Rejection, origin: Option<&str>) -> Response {
    let auth = cfg.auth.as_deref();
    let url = auth.and_then(AuthConfig::metadata_url);
    let scopes = auth.map_or(&[][..], |a| &a.scopes_supported[..]);
    let c = why.challenge(url.as_deref(), scopes);
    let e = Error::InvalidRequest(c.message);
    let mut r = json_response(c.status, jsonrpc::error(&Value::Null, &e));
    r.headers.push(("WWW-Authenticate".into(), c.www_authenticate));
    r.headers.extend(cors_headers(cfg, origin));
    r
}

/// The Protected Resource Metadata document when `path` is where it is published (any method
/// but `OPTIONS` gets it; a preflight gets 204). Public, so any origin may read it.
pub fn metadata(cfg: &Config, method: &str, path: &str) -> Option<Response> {
    let auth = cfg.auth.as_deref()?;
    if !auth.serves_metadata_at(path) {
        return None;
    }
    let cors = [
        ("Access-Control-Allow-Origin".to_string(), "*".to_string()),
        (
            "Access-Control-Allow-Headers".to_string(),
            "MCP-Protocol-Version".to_string(),
        ),
    ];
    if method == "OPTIONS" {
        let mut r = Response {
            status: 204,
            ..Default::default()
        };
        r.headers.extend(cors);
        return Some(r);
    }
    let doc = auth.metadata()?;
    let mut r = json_response(200, doc.to_string());
    r.headers.push(("Cache-Control".into(), "public, max-age=300".into()));
    r.headers.extend(cors);
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(auth: Value, tokens: &[(&str, &str)]) -> Config {
        Config {
            auth: AuthConfig::parse(Some(&auth)).unwrap().map(Arc::new),
            tokens: tokens.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect(),
            ..Config::default()
        }
    }

    fn oauth() -> Value {
        json!({"resource": "https://h/mcp", "issuer": "https://i", "jwksUrl": "https://i/jwks", "requiredScopes": ["mcp"]})
    }

    fn who_with(c: &Config, headers: &[(&str, &str)]) -> Who {
        let headers: Vec<(String, String)> = headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        who(c, &|n: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn missing_token_gets_the_metadata_url() {
        let Who::Refused(r) = who_with(&cfg(oauth(), &[]), &[]) else {
            panic!()
        };
        assert_eq!(r.status, 401);
        let h = &r.headers.iter().find(|(k, _)| k == "WWW-Authenticate").unwrap().1;
        assert_eq!(
            h,
            "Bearer resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\""
        );
    }

    #[test]
    fn static_tokens_remain_and_jwts_go_to_the_shell() {
        let c = cfg(oauth(), &[("alice", "alice-token")]);
        assert_eq!(
            who_with(&c, &[("authorization", "Bearer alice-token")]),
            Who::Known(Caller {
                principal: Some("alice".into()),
                identity: None
            })
        );
        assert_eq!(
            who_with(&c, &[("authorization", "Bearer a.b.c")]),
            Who::Verify("a.b.c".into(), Party::OAuth)
        );
        let access = cfg(
            json!({"cloudflareAccess": {"teamDomain": "t.cloudflareaccess.com", "audience": "x"}}),
            &[],
        );
        assert_eq!(
            who_with(&access, &[("cf-access-jwt-assertion", "x.y.z")]),
            Who::Verify("x.y.z".into(), Party::Access)
        );
        let Who::Refused(r) = who_with(&access, &[("authorization", "Bearer x.y.z")]) else {
            panic!()
        };
        assert_eq!(r.status, 401);
        let Who::Refused(r) = who_with(&access, &[]) else {
            panic!()
        };
        assert!(r.body.contains("Cf-Access-Jwt-Assertion"));
    }

    #[test]
    fn metadata_is_served_at_both_paths() {
        let c = cfg(oauth(), &[]);
        let r = metadata(&c, "GET", "/.well-known/oauth-protected-resource/mcp").unwrap();
        assert_eq!(r.status, 200);
        let doc: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(doc["resource"], "https://h/mcp");
        assert!(metadata(&c, "GET", "/.well-known/oauth-protected-resource").is_some());
        assert!(metadata(&c, "GET", "/mcp").is_none());
        assert!(metadata(&Config::default(), "GET", "/.well-known/oauth-protected-resource").is_none());
        assert_eq!(
            metadata(&c, "OPTIONS", "/.well-known/oauth-protected-resource")
                .unwrap()
                .status,
            204
        );
    }
}
