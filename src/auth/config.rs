//! The catalog's `auth` block, parsed once into types; a bad field is a configuration error that
//! names it and says what was expected.

use serde_json::{Map, Value};

use super::jwk::{Alg, KeySet};
use crate::error::{type_name, Error, Result};

/// Clock skew allowed on `exp` and `nbf` unless `leewaySeconds` says otherwise.
pub const DEFAULT_LEEWAY_SECONDS: i64 = 60;
/// The largest `leewaySeconds` accepted.
const MAX_LEEWAY_SECONDS: i64 = 300;

/// One party whose tokens this server accepts (the OAuth authorization server, or a Cloudflare
/// Access team) and how its claims map to a principal and roles.
#[derive(Debug, Clone, PartialEq)]
pub struct Issuer {
    /// The exact `iss` its tokens carry.
    pub issuer: String,
    /// The `aud` a token must name (RFC 8707: this resource; for Access, the application's AUD tag).
    pub audience: String,
    /// Where its signing keys are published (JWKS), if not given statically.
    pub jwks_url: Option<String>,
    /// Keys given in the document (`keys`), used instead of fetching.
    pub keys: KeySet,
    /// Signature algorithms accepted (a subset of RS256, ES256, EdDSA).
    pub algorithms: Vec<Alg>,
    /// Scopes every token must carry.
    pub required_scopes: Vec<String>,
    /// The claim naming the principal (a dot path, e.g. `sub`, `email`).
    pub principal_claim: String,
    /// Claims whose values are roles (dot paths, e.g. `groups`, `realm_access.roles`).
    pub roles_claims: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds.
    pub leeway_seconds: i64,
}

/// `auth.cloudflareAccess`: the `Cf-Access-Jwt-Assertion` header, checked against the team's keys.
pub type AccessConfig = Issuer;

/// The `auth` block.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// This resource's canonical URI (the MCP endpoint, e.g. `https://mcp.example.com/mcp`).
    pub resource: Option<String>,
    /// The OAuth authorization server's tokens (`Authorization: Bearer`).
    pub oauth: Option<Issuer>,
    /// `authorization_servers` of the metadata (default: the issuer).
    pub authorization_servers: Vec<String>,
    /// `scopes_supported` of the metadata (default: the required scopes).
    pub scopes_supported: Vec<String>,
    /// `resource_name` of the metadata.
    pub resource_name: Option<String>,
    /// Cloudflare Access assertions.
    pub access: Option<AccessConfig>,
}

fn err(msg: String) -> Error {
    Error::Catalog(msg)
}

fn only(o: &Map<String, Value>, path: &str, known: &[&str]) -> Result<()> {
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(err(format!(
            "{path} has an unknown field \"{k}\"; expected one of: {}",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

fn string(o: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
        Some(v) => Err(err(format!(
            "{path}.{key} must be a non-empty string, got {}",
            type_name(v)
        ))),
    }
}

/// A string or an array of non-empty strings.
fn strings(o: &Map<String, Value>, key: &str, path: &str) -> Result<Option<Vec<String>>> {
    let bad = |v: &Value| {
        err(format!(
            "{path}.{key} must be a string or an array of non-empty strings, got {}",
            type_name(v)
        ))
    };
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(vec![s.trim().to_string()])),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
                v => Err(bad(v)),
            })
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(v) => Err(bad(v)),
    }
}

/// An `https://` URL (or `http://` to a loopback host, for local tests); `field` names it.
fn url(s: String, field: &str) -> Result<String> {
    let host = |rest: &str| rest.split(['/', '?', '#']).next().unwrap_or_default().to_string();
    let ok = match s.split_once("://") {
        Some(("https", rest)) => !host(rest).is_empty(),
        Some(("http", rest)) => {
            let h = host(rest);
            let name = h.rsplit_once(':').map_or(h.as_str(), |(n, _)| n);
            ["localhost", "127.0.0.1", "[::1]"].contains(&name)
        }
        _ => false,
    };
    if ok {
        Ok(s)
    } else {
        Err(err(format!(
            "{field} must be an https:// URL (http:// only for localhost), got \"{s}\""
        )))
    }
}

impl AuthConfig {
    /// Parses the `auth` block (`None`: absent or null).
    pub fn parse(v: Option<&Value>) -> Result<Option<AuthConfig>> {
        let o = match v {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(o)) => o,
            Some(v) => return Err(err(format!("auth must be an object, got {}", type_name(v)))),
        };
        only(
            o,
            "auth",
            &[
                "resource",
                "issuer",
                "audience",
                "jwksUrl",
                "keys",
                "algorithms",
                "authorizationServers",
                "requiredScopes",
                "scopesSupported",
                "principalClaim",
                "rolesClaims",
                "rolesClaim",
                "leewaySeconds",
                "resourceName",
                "cloudflareAccess",
            ],
        )?;
        let resource = string(o, "resource", "auth")?
            .map(|r| url(r, "auth.resource"))
            .transpose()?;
        let issuer = string(o, "issuer", "auth")?;
        let oauth = match (&issuer, &resource) {
            (None, _) => {
                for k in ["audience", "jwksUrl", "keys", "requiredScopes", "authorizationServers"] {
                    if o.get(k).is_some_and(|v| !v.is_null()) {
                        return Err(err(format!("auth.{k} needs auth.issuer (the authorization server's issuer URL)")));
                    }
                }
                None
            }
            (Some(_), None) => {
                return Err(err(
                    "auth.resource is required with auth.issuer: this MCP endpoint's URL, like \"https://mcp.example.com/mcp\" (tokens must name it as their audience)".into(),
                ))
            }
            (Some(iss), Some(res)) => Some(issuer_of(o, "auth", url(iss.clone(), "auth.issuer")?, res, "sub", &[])?),
        };
        let access = match o.get("cloudflareAccess") {
            None | Some(Value::Null) => None,
            Some(Value::Object(a)) => Some(access(a)?),
            Some(v) => {
                return Err(err(format!(
                    "auth.cloudflareAccess must be an object like {{\"teamDomain\": \"myteam.cloudflareaccess.com\", \"audience\": \"<application AUD tag>\"}}, got {}",
                    type_name(v)
                )))
            }
        };
        if oauth.is_none() && access.is_none() {
            return Err(err(
                "auth needs auth.issuer and auth.resource (an OAuth authorization server) or auth.cloudflareAccess"
                    .into(),
            ));
        }
        let required = oauth.as_ref().map(|i| i.required_scopes.clone()).unwrap_or_default();
        Ok(Some(AuthConfig {
            authorization_servers: match strings(o, "authorizationServers", "auth")? {
                Some(list) => list
                    .into_iter()
                    .map(|u| url(u, "auth.authorizationServers[]"))
                    .collect::<Result<_>>()?,
                None => issuer.into_iter().collect(),
            },
            scopes_supported: strings(o, "scopesSupported", "auth")?.unwrap_or(required),
            resource_name: string(o, "resourceName", "auth")?,
            resource,
            oauth,
            access,
        }))
    }
}

/// The issuer-specific fields of `o` (`path` names it in errors).
fn issuer_of(
    o: &Map<String, Value>,
    path: &str,
    issuer: String,
    default_audience: &str,
    default_principal: &str,
    default_roles: &[&str],
) -> Result<Issuer> {
    let keys = match o.get("keys") {
        None | Some(Value::Null) => None,
        Some(v) => Some(KeySet::parse(v).map_err(|e| err(format!("{path}.keys: {e}")))?),
    };
    let jwks_url = string(o, "jwksUrl", path)?
        .map(|u| url(u, &format!("{path}.jwksUrl")))
        .transpose()?;
    let keys = match (keys, &jwks_url) {
        (Some(_), Some(_)) => return Err(err(format!("{path} has both jwksUrl and keys; give one"))),
        (None, None) => {
            return Err(err(format!(
                "{path}.jwksUrl (the issuer's JWKS URL) or {path}.keys (a JWKS or an array of public JWKs) is required"
            )))
        }
        (Some(k), None) if k.keys.is_empty() => {
            return Err(err(format!(
                "{path}.keys holds no usable public key (RSA of 2048+ bits, EC P-256, OKP Ed25519)"
            )))
        }
        (k, _) => k.unwrap_or_default(),
    };
    let algorithms = match strings(o, "algorithms", path)? {
        None => vec![Alg::RS256, Alg::ES256, Alg::EdDSA],
        Some(names) => names
            .iter()
            .map(|n| {
                Alg::from_name(n).ok_or_else(|| {
                    err(format!(
                        "{path}.algorithms may name RS256, ES256 and EdDSA, got \"{n}\" (HMAC and none are never accepted)"
                    ))
                })
            })
            .collect::<Result<_>>()?,
    };
    let leeway_seconds = match o.get("leewaySeconds") {
        None | Some(Value::Null) => DEFAULT_LEEWAY_SECONDS,
        Some(v) => v
            .as_i64()
            .filter(|n| (0..=MAX_LEEWAY_SECONDS).contains(n))
            .ok_or_else(|| {
                err(format!(
                    "{path}.leewaySeconds must be a whole number from 0 to {MAX_LEEWAY_SECONDS}"
                ))
            })?,
    };
    let mut roles_claims = strings(o, "rolesClaims", path)?.unwrap_or_default();
    roles_claims.extend(strings(o, "rolesClaim", path)?.unwrap_or_default());
    if roles_claims.is_empty() {
        roles_claims = default_roles.iter().map(|s| s.to_string()).collect();
    }
    Ok(Issuer {
        issuer,
        audience: string(o, "audience", path)?.unwrap_or_else(|| default_audience.to_string()),
        jwks_url,
        keys,
        algorithms,
        required_scopes: strings(o, "requiredScopes", path)?.unwrap_or_default(),
        principal_claim: string(o, "principalClaim", path)?.unwrap_or_else(|| default_principal.to_string()),
        roles_claims,
        leeway_seconds,
    })
}

/// `auth.cloudflareAccess`: `teamDomain` (`myteam.cloudflareaccess.com`) and `audience` (the
/// application's AUD tag); keys from `https://<team>/cdn-cgi/access/certs` unless `keys`/`jwksUrl`.
fn access(a: &Map<String, Value>) -> Result<Issuer> {
    let path = "auth.cloudflareAccess";
    only(
        a,
        path,
        &[
            "teamDomain",
            "audience",
            "principalClaim",
            "rolesClaims",
            "rolesClaim",
            "leewaySeconds",
            "keys",
            "jwksUrl",
        ],
    )?;
    let team = string(a, "teamDomain", path)?.ok_or_else(|| {
        err(format!(
            "{path}.teamDomain is required, like \"myteam.cloudflareaccess.com\""
        ))
    })?;
    let team = team.trim_end_matches('/');
    let origin = url(
        if team.contains("://") {
            team.to_string()
        } else {
            format!("https://{team}")
        },
        &format!("{path}.teamDomain"),
    )?;
    let audience = string(a, "audience", path)?
        .ok_or_else(|| err(format!("{path}.audience is required: the Access application's AUD tag")))?;
    let mut with_keys = a.clone();
    if !a.contains_key("keys") && !a.contains_key("jwksUrl") {
        with_keys.insert(
            "jwksUrl".into(),
            Value::String(format!("{origin}/cdn-cgi/access/certs")),
        );
    }
    with_keys.insert("audience".into(), Value::String(audience.clone()));
    issuer_of(&with_keys, path, origin, &audience, "email", &["groups"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Option<AuthConfig>> {
        AuthConfig::parse(Some(&v))
    }

    #[test]
    fn a_generic_provider_block_parses_with_defaults() {
        let c = parse(json!({"resource": "https://mcp.example.com/mcp", "issuer": "https://login.example.com/",
            "jwksUrl": "https://login.example.com/jwks", "requiredScopes": ["mcp"], "rolesClaims": ["groups", "realm_access.roles"]}))
        .unwrap()
        .unwrap();
        let i = c.oauth.as_ref().unwrap();
        assert_eq!(i.audience, "https://mcp.example.com/mcp");
        assert_eq!(i.principal_claim, "sub");
        assert_eq!(i.leeway_seconds, DEFAULT_LEEWAY_SECONDS);
        assert_eq!(c.authorization_servers, vec!["https://login.example.com/".to_string()]);
        assert_eq!(c.scopes_supported, vec!["mcp".to_string()]);
        assert_eq!(
            c.metadata_url().unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn cloudflare_access_derives_issuer_and_keys() {
        let c = parse(json!({"cloudflareAccess": {"teamDomain": "acme.cloudflareaccess.com", "audience": "abc123"}}))
            .unwrap()
            .unwrap();
        let a = c.access.clone().unwrap();
        assert_eq!(a.issuer, "https://acme.cloudflareaccess.com");
        assert_eq!(
            a.jwks_url.as_deref(),
            Some("https://acme.cloudflareaccess.com/cdn-cgi/access/certs")
        );
        assert_eq!(a.audience, "abc123");
        assert_eq!(a.principal_claim, "email");
        assert_eq!(a.roles_claims, vec!["groups".to_string()]);
        assert!(c.metadata_url().is_none());
    }

    #[test]
    fn bad_blocks_name_the_field() {
        for (doc, needle) in [
            (json!([]), "auth must be an object"),
            (json!({"issuer": "https://i/"}), "auth.resource is required"),
            (
                json!({"resource": "https://r/mcp", "issuer": "https://i/"}),
                "auth.jwksUrl",
            ),
            (
                json!({"resource": "https://r/mcp", "issuer": "http://evil.example/", "jwksUrl": "https://i/j"}),
                "auth.issuer must be an https:// URL",
            ),
            (
                json!({"resource": "https://r/mcp", "issuer": "https://i/", "jwksUrl": "https://i/j", "algorithms": ["HS256"]}),
                "HMAC",
            ),
            (
                json!({"resource": "https://r/mcp", "issuer": "https://i/", "jwksUrl": "https://i/j", "leewaySeconds": 9999}),
                "leewaySeconds",
            ),
            (
                json!({"resource": "https://r/mcp", "issuer": "https://i/", "jwksUrl": "https://i/j", "principalClaim": 3}),
                "auth.principalClaim must be",
            ),
            (
                json!({"resource": "https://r/mcp", "issuer": "https://i/", "jwksUrl": "https://i/j", "scope": "x"}),
                "unknown field \"scope\"",
            ),
            (
                json!({"resource": "https://r/mcp", "issuer": "https://i/", "keys": {"keys": []}}),
                "no usable public key",
            ),
            (
                json!({"cloudflareAccess": {"teamDomain": "acme.cloudflareaccess.com"}}),
                "audience is required",
            ),
            (json!({}), "auth needs auth.issuer"),
        ] {
            let e = parse(doc.clone()).unwrap_err().to_string();
            assert!(e.contains(needle), "{doc}: {e}");
        }
        assert_eq!(AuthConfig::parse(None).unwrap(), None);
        assert!(parse(json!({"resource": "http://127.0.0.1:9/mcp", "issuer": "http://localhost:3000", "jwksUrl": "http://[::1]:3000/jwks"})).is_ok());
    }
}
