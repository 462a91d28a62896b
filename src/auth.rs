//! Identity for real deployments, without I/O: the catalog's `auth` block (an OAuth 2.1 resource
//! server per the MCP authorization spec, and Cloudflare Access), the Protected Resource Metadata
//! document (RFC 9728), JWT access tokens checked given a signature-verify callback (the shells
//! verify: native with pure-Rust crates, the Worker with WebCrypto), JWKS caching rules, and
//! claims turned into a principal and roles. Only with the `auth` feature (native and Worker).
//!
//! Nothing here logs or returns a token; refusals name what was wrong with a token, never its text.

mod config;
mod jwk;
mod jwt;
mod metadata;

use std::sync::Arc;

use serde_json::{Map, Value};

pub use config::{AccessConfig, AuthConfig, Issuer, DEFAULT_LEEWAY_SECONDS};
pub use jwk::{Alg, Jwk, KeyCache, KeySet, MAX_KEYS_AGE_MS, MIN_REFETCH_MS};
pub use jwt::{check, Token, VerifyFn};
pub use metadata::{metadata_path, WELL_KNOWN};

/// Who an authenticated request is: the principal (the configured claim), its roles (the configured
/// claims, e.g. `groups`, `roles`, `scope`) and the token's claims (for policy `when.claims`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    /// The principal (`sub`, `email`, ... as configured).
    pub principal: String,
    /// Roles (views' `"principals": ["role:admin"]`, policy `when.roles`).
    pub roles: Vec<String>,
    /// All claims of the token.
    pub claims: Arc<Map<String, Value>>,
}

/// Why a request is not let in.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    /// No credential at all: 401 with the metadata URL and no error code.
    Missing,
    /// A credential that is not valid (malformed, wrongly signed, expired, for another audience):
    /// 401 `error="invalid_token"`; the text says which check failed.
    Invalid(String),
    /// Valid, but without the scopes this resource needs: 403 `error="insufficient_scope"`.
    InsufficientScope(Vec<String>),
}

/// A refusal as HTTP: status, the `WWW-Authenticate` value and a message for the JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub struct Challenge {
    /// 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` header.
    pub www_authenticate: String,
    /// What went wrong, for the body.
    pub message: String,
}

/// Double quotes and backslashes escaped, for a quoted-string parameter.
fn quoted(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

impl Rejection {
    /// The HTTP refusal for a request to this resource; `metadata_url` is where its Protected
    /// Resource Metadata is (absent: Cloudflare Access only, no OAuth discovery).
    pub fn challenge(&self, metadata_url: Option<&str>, scopes: &[String]) -> Challenge {
        let mut params = Vec::new();
        if let Some(url) = metadata_url {
            params.push(format!("resource_metadata=\"{}\"", quoted(url)));
        }
        let (status, message) = match self {
            Rejection::Missing => (
                401,
                "authentication required: send Authorization: Bearer <access token>".to_string(),
            ),
            Rejection::Invalid(why) => {
                params.push("error=\"invalid_token\"".into());
                params.push(format!("error_description=\"{}\"", quoted(why)));
                (401, format!("the access token was refused: {why}"))
            }
            Rejection::InsufficientScope(need) => {
                params.push("error=\"insufficient_scope\"".into());
                (
                    403,
                    format!("the access token lacks the scope this server needs: {}", need.join(" ")),
                )
            }
        };
        let scope = match self {
            Rejection::InsufficientScope(need) => need.join(" "),
            _ => scopes.join(" "),
        };
        if !scope.is_empty() {
            params.push(format!("scope=\"{}\"", quoted(&scope)));
        }
        let www_authenticate = if params.is_empty() {
            "Bearer".to_string()
        } else {
            format!("Bearer {}", params.join(", "))
        };
        Challenge {
            status,
            www_authenticate,
            message,
        }
    }
}

/// Whether any of `globs` admits a caller: a glob `role:<g>` matches one of its roles, any other
/// glob matches its principal (so a principal named `role:admin` is not the role `admin`).
pub fn admits(
    globs: &[String],
    principal: Option<&str>,
    roles: &[String],
    matches: impl Fn(&str, &str) -> bool,
) -> bool {
    globs.iter().any(|g| match g.strip_prefix("role:") {
        Some(r) => roles.iter().any(|have| matches(r, have)),
        None => principal.is_some_and(|p| matches(g, p)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_carry_the_metadata_url_and_the_error() {
        let url = Some("https://h/.well-known/oauth-protected-resource/mcp");
        let c = Rejection::Missing.challenge(url, &["mcp".into()]);
        assert_eq!(c.status, 401);
        assert_eq!(
            c.www_authenticate,
            "Bearer resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\""
        );
        let c = Rejection::Invalid("expired \"x\"".into()).challenge(url, &[]);
        assert!(c.www_authenticate.contains("error=\"invalid_token\""));
        assert!(c.www_authenticate.contains("error_description=\"expired \\\"x\\\"\""));
        let c = Rejection::InsufficientScope(vec!["mcp:admin".into()]).challenge(url, &["mcp".into()]);
        assert_eq!(c.status, 403);
        assert!(c
            .www_authenticate
            .contains("error=\"insufficient_scope\", scope=\"mcp:admin\""));
        assert_eq!(Rejection::Missing.challenge(None, &[]).www_authenticate, "Bearer");
    }

    #[test]
    fn role_globs_match_roles_only() {
        let eq = |g: &str, s: &str| g == "*" || g == s;
        let roles = vec!["admin".to_string()];
        assert!(admits(&["role:admin".into()], Some("bob"), &roles, eq));
        assert!(!admits(&["role:admin".into()], Some("role:admin"), &[], eq));
        assert!(admits(&["alice".into()], Some("alice"), &[], eq));
        assert!(!admits(&["alice".into()], None, &roles, eq));
        assert!(admits(&["role:*".into()], None, &roles, eq));
    }
}
