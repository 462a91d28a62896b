//! The gateway as an OAuth 2.1 *client* of its upstreams, as the MCP authorization specification
//! (2025-11-25) describes a client — the protocol's decisions as pure functions, no I/O, no
//! clock (times are passed in), no randomness (random bytes are passed in). The shells move the
//! bytes: they fetch the URLs these functions name, post the bodies they build, open the browser
//! and keep the tokens.
//!
//! The flow: an upstream answers 401 with `WWW-Authenticate: Bearer resource_metadata=…`
//! ([`parse_challenge`]); its Protected Resource Metadata (RFC 9728) is read from that URL when it
//! is on the upstream's origin, else from the well-known URLs ([`resource_metadata_urls`],
//! [`ResourceMetadata::parse`]: it must name its `resource`); the
//! authorization server's metadata from RFC 8414's and OpenID Connect's well-known URLs
//! ([`authorization_server_metadata_urls`], [`AuthServer::parse`], which refuses a server without
//! PKCE S256); the client identity is chosen ([`choose_client`]: pre-registered, a Client ID
//! Metadata Document, else Dynamic Client Registration, [`registration_request`]); the user is
//! sent to [`authorize_url`] (PKCE S256 [`Pkce`], `state`, `resource` = the MCP server's
//! canonical URL, RFC 8707, and the scopes of [`select_scope`]); the redirect is checked
//! ([`parse_callback`]); tokens come from [`token_request`] bodies and [`parse_token_response`];
//! an access token is sent only to the resource it was issued for ([`resource_allows`]); a 403
//! `insufficient_scope` asks for more ([`step_up_scope`]).
//!
//! This token world is the upstreams' own: the gateway's callers' tokens (`crate::auth`) are
//! never sent upstream, and these are never accepted from callers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use url::{form_urlencoded, Host, Url};

use crate::base64::{encode, Alphabet};
use crate::catalog::{Grant, OAuth};
use crate::error::{Error, Result};

/// How long before its expiry an access token is refreshed, at most, ms (a tenth of its lifetime
/// when that is shorter).
pub const REFRESH_MARGIN_MS: i64 = 60_000;

/// The redirect path of the loopback listener (`http://127.0.0.1:PORT/callback`).
pub const CALLBACK_PATH: &str = "/callback";

/// The client name the gateway registers under.
pub const CLIENT_NAME: &str = "mcp-sieve";

fn err(m: impl Into<String>) -> Error {
    Error::Upstream(m.into())
}

// ---------------------------------------------------------------------------------------------
// URLs

/// Parses `s` as the WHATWG URL Standard does (the `url` crate): http or https, with a host, no
/// credentials; a fragment is dropped. Dot segments are resolved (`/mcp/../x`, `/mcp/%2e%2e/x`
/// are `/x`), the scheme and host lowercased, a default port dropped: every decision here is
/// made on this form, and [`request_url`] is what the shells send to.
pub fn parse_url(s: &str) -> Result<Url> {
    let bad = |why: &str| err(format!("\"{}\" is not a usable URL: {why}", shorten(s)));
    let mut u = Url::parse(s.trim()).map_err(|e| bad(&e.to_string()))?;
    if u.scheme() != "http" && u.scheme() != "https" {
        return Err(bad("it must be http or https"));
    }
    if u.host().is_none() {
        return Err(bad("no host"));
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad("credentials in a URL are not accepted"));
    }
    u.set_fragment(None);
    Ok(u)
}

/// What a shell says when `party` (e.g. "the authorization server's token endpoint") did not
/// answer a request to `url` within `ms` milliseconds, `limit` naming the setting that bounds it:
/// `… (127.0.0.1:8080) did not answer within 2 s (limits.signInTimeoutSeconds)`. Without a party
/// the URL itself is named.
pub fn no_answer(party: &str, url: &str, ms: u128, limit: Option<&str>) -> String {
    let within = if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    };
    let limit = limit.map(|l| format!(" ({l})")).unwrap_or_default();
    let who = match parse_url(url) {
        Ok(u) if !party.is_empty() => {
            let host = u.host_str().unwrap_or_default();
            match u.port() {
                Some(p) => format!("{party} ({host}:{p})"),
                None => format!("{party} ({host})"),
            }
        }
        _ => url.to_string(),
    };
    format!("{who} did not answer within {within}{limit}")
}

/// `scheme://host[:port]` of `u` (no default port).
fn origin(u: &Url) -> String {
    u.origin().ascii_serialization()
}

/// Whether `u`'s host is this machine: an IP literal in 127.0.0.0/8, `[::1]`, or exactly
/// `localhost` (the MCP specification and RFC 8252 section 7.3 name these three). A name is not
/// judged by its look (`127.probe.as.test` is whatever DNS or a proxy makes of it). Nor is
/// `localhost.`: the WHATWG parser keeps its dot, so it is another host than `localhost`, and an
/// absolute name is one a resolver or a proxy may send to DNS (RFC 6761 section 6.3 lets it, and
/// RFC 8252 section 8.3 prefers the IP literal because a name can be resolved elsewhere).
pub fn is_loopback(u: &Url) -> bool {
    match u.host() {
        Some(Host::Ipv4(a)) => a.is_loopback(),
        Some(Host::Ipv6(a)) => a == std::net::Ipv6Addr::LOCALHOST,
        Some(Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

fn shorten(s: &str) -> String {
    s.chars().take(200).collect()
}

/// The URL a request to `url` goes to: as [`parse_url`] normalises it (dot segments resolved),
/// the form [`resource_allows`] compares, so a token goes only where it was checked to go. One
/// that does not parse is kept as given (no token is given for it: [`resource_allows`] says no).
pub fn request_url(url: &str) -> String {
    parse_url(url).map_or_else(|_| url.to_string(), String::from)
}

/// The canonical URI of an MCP server at `url` (RFC 8707 section 2, as the MCP specification
/// asks): lowercase scheme and host, no default port, no fragment, dot segments resolved, no
/// trailing slash on an empty path.
pub fn canonical_resource(url: &str) -> Result<String> {
    let u = parse_url(url)?;
    let mut out = origin(&u);
    if u.path() != "/" {
        out.push_str(u.path());
    }
    if let Some(q) = u.query() {
        out.push('?');
        out.push_str(q);
    }
    Ok(out)
}

/// Whether a token issued for `resource` may be sent to the MCP server at `server_url`: the same
/// origin, and the server's path within the resource's (RFC 9728 section 7.3's check, as the
/// TypeScript SDK applies it), both as [`parse_url`] normalises them. Anything that does not parse
/// is no.
pub fn resource_allows(resource: &str, server_url: &str) -> bool {
    let (Ok(r), Ok(s)) = (parse_url(resource), parse_url(server_url)) else {
        return false;
    };
    if r.origin() != s.origin() {
        return false;
    }
    let dir = |p: &str| {
        if p.ends_with('/') {
            p.to_string()
        } else {
            format!("{p}/")
        }
    };
    dir(s.path()).starts_with(&dir(r.path()))
}

/// Checks that an authorization server endpoint (`what`) is https, or http on this machine only
/// (OAuth 2.1 §1.5; the MCP specification allows loopback).
pub fn check_endpoint(url: &str, what: &str) -> Result<Url> {
    let u = parse_url(url).map_err(|e| err(format!("{what}: {e}")))?;
    if u.scheme() != "https" && !is_loopback(&u) {
        return Err(err(format!(
            "{what} \"{}\" must be an https:// URL (plain http only on this machine: localhost, 127.0.0.1, [::1])",
            shorten(url)
        )));
    }
    Ok(u)
}

// ---------------------------------------------------------------------------------------------
// WWW-Authenticate

/// What a `Bearer` challenge in `WWW-Authenticate` says (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs (space-separated).
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

/// The `Bearer` challenge among the challenges of a `WWW-Authenticate` header value, if any
/// (scheme names are case-insensitive; parameters may be quoted, with `\` escapes).
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let b = header.as_bytes();
    let mut i = 0;
    let mut current: Option<String> = None;
    let mut bearer: Option<Challenge> = None;
    let token_char = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&c);
    while i < b.len() {
        while i < b.len() && (b[i] == b' ' || b[i] == b',' || b[i] == b'\t') {
            i += 1;
        }
        let start = i;
        while i < b.len() && token_char(b[i]) {
            i += 1;
        }
        if i == start {
            i += 1; // a character no grammar allows: skipped
            continue;
        }
        let word = &header[start..i];
        let mut j = i;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        if j < b.len() && b[j] == b'=' {
            // token68 (`Basic abc==`) or a parameter.
            j += 1;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            let value;
            if j < b.len() && b[j] == b'"' {
                let mut v = String::new();
                j += 1;
                let mut chars = header[j..].char_indices();
                let mut end = header.len();
                while let Some((k, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                v.push(n);
                            }
                        }
                        '"' => {
                            end = j + k + 1;
                            break;
                        }
                        c => v.push(c),
                    }
                }
                value = v;
                i = end;
            } else {
                let vs = j;
                while j < b.len() && b[j] != b',' && b[j] != b' ' {
                    j += 1;
                }
                value = header[vs..j].to_string();
                i = j;
            }
            if current.as_deref() == Some("bearer") {
                let c = bearer.get_or_insert_with(Challenge::default);
                let slot = match word.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut c.resource_metadata,
                    "scope" => &mut c.scope,
                    "error" => &mut c.error,
                    "error_description" => &mut c.error_description,
                    _ => continue,
                };
                if slot.is_none() {
                    *slot = Some(value);
                }
            }
        } else {
            current = Some(word.to_ascii_lowercase());
            if word.eq_ignore_ascii_case("bearer") && bearer.is_none() {
                bearer = Some(Challenge::default());
            }
        }
    }
    bearer
}

// ---------------------------------------------------------------------------------------------
// Discovery

/// Where to read the Protected Resource Metadata of the MCP server at `server_url`, in order: the
/// challenge's `resource_metadata` when given and on the server's own origin (scheme, host, port),
/// else the well-known URL with the endpoint's path (`/.well-known/oauth-protected-resource{path}`),
/// then the root one. A `resource_metadata` on another origin is not fetched (an upstream could
/// otherwise make the gateway ask any address it can reach, `http://127.0.0.1:<port>/internal`);
/// [`foreign_resource_metadata`] says why, for the log.
pub fn resource_metadata_urls(server_url: &str, challenge: Option<&Challenge>) -> Result<Vec<String>> {
    if let Some(url) = own_resource_metadata(server_url, challenge) {
        return Ok(vec![url]);
    }
    let u = parse_url(server_url)?;
    let mut urls = Vec::new();
    let path = u.path().trim_end_matches('/');
    if !path.is_empty() {
        urls.push(format!("{}/.well-known/oauth-protected-resource{path}", origin(&u)));
    }
    urls.push(format!("{}/.well-known/oauth-protected-resource", origin(&u)));
    Ok(urls)
}

/// The challenge's `resource_metadata`, as parsed, when it is on `server_url`'s origin.
fn own_resource_metadata(server_url: &str, challenge: Option<&Challenge>) -> Option<String> {
    let given = parse_url(challenge?.resource_metadata.as_deref()?).ok()?;
    (given.origin() == parse_url(server_url).ok()?.origin()).then(|| given.into())
}

/// Why the challenge's `resource_metadata` is not read (it is on another origin than the MCP
/// server at `server_url`, or is not a URL), for the shells' log; `None` when it is read or there
/// is none.
pub fn foreign_resource_metadata(server_url: &str, challenge: Option<&Challenge>) -> Option<String> {
    let given = challenge?.resource_metadata.as_deref()?;
    if own_resource_metadata(server_url, challenge).is_some() {
        return None;
    }
    Some(format!(
        "the WWW-Authenticate of {} names resource_metadata \"{}\", which is not on its origin (scheme, host and port): not fetched; its metadata is read from the well-known URLs on its own origin",
        shorten(server_url),
        shorten(given)
    ))
}

/// An MCP server's Protected Resource Metadata (RFC 9728), as far as a client needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The resource identifier the tokens are asked for (RFC 8707's `resource`): the document's
    /// `resource`, canonical.
    pub resource: String,
    /// Its authorization servers' issuer URLs (the first is used).
    pub authorization_servers: Vec<String>,
    /// `scopes_supported`, when given.
    pub scopes_supported: Option<Vec<String>>,
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
}

fn json_object(body: &str, what: &str) -> Result<serde_json::Map<String, Value>> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(err(format!("{what} is not a JSON object"))),
        Err(e) => Err(err(format!("{what} is not JSON: {e}"))),
    }
}

impl ResourceMetadata {
    /// Reads the document `body` for the MCP server at `server_url`: it must have a `resource`
    /// (RFC 9728 section 2), one that server's URL lies within ([`resource_allows`]; a document
    /// that names another server is refused), and it must name an authorization server.
    pub fn parse(body: &str, server_url: &str) -> Result<ResourceMetadata> {
        let o = json_object(body, "the upstream's protected resource metadata")?;
        let r = o.get("resource").and_then(Value::as_str).ok_or_else(|| {
            err("the upstream's protected resource metadata has no \"resource\" (RFC 9728 section 2 requires it: the URL of the server it describes): refused")
        })?;
        if !resource_allows(r, server_url) {
            return Err(err(format!(
                "the upstream's protected resource metadata is for \"{}\", not for {server_url}: refused (a token for it would be sent elsewhere)",
                shorten(r)
            )));
        }
        let resource = canonical_resource(r)?;
        let authorization_servers = strings(o.get("authorization_servers")).unwrap_or_default();
        if authorization_servers.is_empty() {
            return Err(err(
                "the upstream's protected resource metadata names no authorization_servers",
            ));
        }
        Ok(ResourceMetadata {
            resource,
            authorization_servers,
            scopes_supported: strings(o.get("scopes_supported")),
        })
    }
}

/// Where to read the metadata of the authorization server `issuer`, in the MCP specification's
/// order: RFC 8414 with the path inserted, OpenID Connect Discovery with the path inserted, then
/// appended; for an issuer without a path, RFC 8414's then OpenID Connect's.
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>> {
    let u = check_endpoint(issuer, "the authorization server")?;
    let origin = origin(&u);
    let path = u.path().trim_end_matches('/');
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// An authorization server's metadata (RFC 8414 / OpenID Connect Discovery), as a client needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthServer {
    /// Its issuer identifier.
    pub issuer: String,
    /// Where the user signs in (none: only grants without a user).
    pub authorization_endpoint: Option<String>,
    /// Where tokens are asked for.
    pub token_endpoint: String,
    /// Dynamic Client Registration (RFC 7591), when offered.
    pub registration_endpoint: Option<String>,
    /// `code_challenge_methods_supported`.
    pub code_challenge_methods: Vec<String>,
    /// `token_endpoint_auth_methods_supported`, when given.
    pub token_auth_methods: Option<Vec<String>>,
    /// `client_id_metadata_document_supported`.
    pub client_id_metadata_document_supported: bool,
    /// `scopes_supported`, when given.
    pub scopes_supported: Option<Vec<String>>,
    /// Token revocation (RFC 7009), when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// `authorization_response_iss_parameter_supported` (RFC 9207): its redirects carry `iss`, so
    /// one without it is refused ([`parse_callback`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub authorization_response_iss_parameter_supported: bool,
}

impl AuthServer {
    /// Reads the metadata `body` fetched for `issuer`: its `issuer` must be that one (RFC 8414
    /// §3.3), its endpoints https (or http on loopback).
    pub fn parse(body: &str, issuer: &str) -> Result<AuthServer> {
        let o = json_object(body, "the authorization server's metadata")?;
        let said = o.get("issuer").and_then(Value::as_str).unwrap_or_default();
        if said.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(err(format!(
                "the authorization server's metadata names the issuer \"{}\", not \"{issuer}\": refused (RFC 8414 §3.3)",
                shorten(said)
            )));
        }
        let endpoint = |k: &str| -> Result<Option<String>> {
            match o.get(k).and_then(Value::as_str) {
                // Kept as parsed: a request goes to the URL that was checked.
                Some(u) => Ok(Some(
                    check_endpoint(u, &format!("the authorization server's {k}"))?.to_string(),
                )),
                None => Ok(None),
            }
        };
        let token_endpoint = endpoint("token_endpoint")?
            .ok_or_else(|| err("the authorization server's metadata has no token_endpoint"))?;
        Ok(AuthServer {
            issuer: said.to_string(),
            authorization_endpoint: endpoint("authorization_endpoint")?,
            token_endpoint,
            registration_endpoint: endpoint("registration_endpoint")?,
            code_challenge_methods: strings(o.get("code_challenge_methods_supported")).unwrap_or_default(),
            token_auth_methods: strings(o.get("token_endpoint_auth_methods_supported")),
            client_id_metadata_document_supported: o
                .get("client_id_metadata_document_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            scopes_supported: strings(o.get("scopes_supported")),
            revocation_endpoint: endpoint("revocation_endpoint")?,
            authorization_response_iss_parameter_supported: o
                .get("authorization_response_iss_parameter_supported")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// The authorization-code flow may start: the server has an authorization endpoint and says
    /// it supports PKCE with S256 (the MCP specification: without `code_challenge_methods_supported`
    /// the client refuses to proceed).
    pub fn check_authorization_code(&self) -> Result<&str> {
        let endpoint = self.authorization_endpoint.as_deref().ok_or_else(|| {
            err(format!(
                "the authorization server {} has no authorization_endpoint: a person cannot sign in there",
                self.issuer
            ))
        })?;
        if !self.code_challenge_methods.iter().any(|m| m == "S256") {
            return Err(err(format!(
                "the authorization server {} does not list S256 in code_challenge_methods_supported: without PKCE the sign-in is refused",
                self.issuer
            )));
        }
        Ok(endpoint)
    }
}

// ---------------------------------------------------------------------------------------------
// Client identity

/// Who the gateway is at an authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    /// Its client id (a URL for a Client ID Metadata Document).
    pub client_id: String,
    /// Its secret (confidential clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How it authenticates at the token endpoint (`none`, `client_secret_basic`,
    /// `client_secret_post`), when registration said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_method: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

/// How the gateway gets a client identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// This one, as is (pre-registered, or a Client ID Metadata Document URL).
    Ready(Client),
    /// Registered first at this endpoint ([`registration_request`]).
    Register(String),
}

/// Chooses the client identity, in the MCP specification's order: the pre-registered `clientId`
/// (with `secret`, the resolved `clientSecret`) when the document gives one; else the Client ID
/// Metadata Document URL (`clientMetadataUrl`) when the server advertises
/// `client_id_metadata_document_supported`; else Dynamic Client Registration when it has a
/// `registration_endpoint`; else an error saying what to configure.
pub fn choose_client(config: &OAuth, secret: Option<String>, server: &AuthServer, name: &str) -> Result<Identity> {
    if let Some(id) = &config.client_id {
        return Ok(Identity::Ready(Client {
            client_id: id.clone(),
            client_secret: secret,
            auth_method: None,
        }));
    }
    if let (Some(url), true) = (
        &config.client_metadata_url,
        server.client_id_metadata_document_supported,
    ) {
        if config.grant == Grant::AuthorizationCode {
            return Ok(Identity::Ready(Client {
                client_id: url.clone(),
                client_secret: None,
                auth_method: Some("none".into()),
            }));
        }
    }
    if let Some(r) = &server.registration_endpoint {
        return Ok(Identity::Register(r.clone()));
    }
    Err(err(format!(
        "the authorization server {} offers neither dynamic client registration nor client ID metadata documents{}: register a client there and give it as upstreams.{name}.auth.clientId (and clientSecret)",
        server.issuer,
        if config.client_metadata_url.is_some() { " (it does not advertise client_id_metadata_document_supported)" } else { "" }
    )))
}

/// The body of a Dynamic Client Registration request (RFC 7591) for `grant`: a public client
/// with PKCE and the loopback `redirect_uri` for the authorization code, a confidential one for
/// client credentials.
pub fn registration_request(grant: Grant, redirect_uri: Option<&str>, scope: Option<&str>) -> String {
    let mut body = serde_json::json!({ "client_name": CLIENT_NAME });
    match grant {
        Grant::AuthorizationCode => {
            body["redirect_uris"] = serde_json::json!([redirect_uri.unwrap_or_default()]);
            body["grant_types"] = serde_json::json!(["authorization_code", "refresh_token"]);
            body["response_types"] = serde_json::json!(["code"]);
            body["token_endpoint_auth_method"] = "none".into();
            body["application_type"] = "native".into();
        }
        Grant::ClientCredentials => {
            body["grant_types"] = serde_json::json!(["client_credentials"]);
            body["response_types"] = serde_json::json!([]);
            body["redirect_uris"] = serde_json::json!([]);
            body["token_endpoint_auth_method"] = "client_secret_basic".into();
        }
    }
    if let Some(s) = scope {
        body["scope"] = s.into();
    }
    body.to_string()
}

/// The client a registration answered (`status`, `body`).
pub fn parse_registration(status: u16, body: &str) -> Result<Client> {
    if !(200..300).contains(&status) {
        return Err(err(format!(
            "dynamic client registration was refused (HTTP {status}){}",
            oauth_error(body).map(|e| format!(": {e}")).unwrap_or_default()
        )));
    }
    let o = json_object(body, "the registration's answer")?;
    let client_id = o
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| err("the registration's answer has no client_id"))?;
    Ok(Client {
        client_id: client_id.to_string(),
        client_secret: o.get("client_secret").and_then(Value::as_str).map(str::to_string),
        auth_method: o
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

// ---------------------------------------------------------------------------------------------
// Scopes

/// The scopes to ask for: the document's `scopes` when given (the operator's choice), else the
/// challenge's `scope` (authoritative for the request, the MCP specification says), else all of
/// the resource's `scopes_supported`, else none (no `scope` parameter).
pub fn select_scope(
    configured: &[String],
    challenge: Option<&Challenge>,
    resource: &ResourceMetadata,
) -> Option<String> {
    if !configured.is_empty() {
        return Some(configured.join(" "));
    }
    if let Some(s) = challenge
        .and_then(|c| c.scope.as_deref())
        .filter(|s| !s.trim().is_empty())
    {
        return Some(s.trim().to_string());
    }
    resource
        .scopes_supported
        .as_ref()
        .filter(|s| !s.is_empty())
        .map(|s| s.join(" "))
}

/// Step-up authorization: when an upstream answered `status` 403 with a Bearer challenge whose
/// `error` is `insufficient_scope`, the scopes to ask for now — the challenged ones added to
/// those granted, so none is lost. `None`: not a step-up.
pub fn step_up_scope(status: u16, challenge: Option<&Challenge>, granted: Option<&str>) -> Option<String> {
    let c = challenge?;
    if status != 403 || c.error.as_deref() != Some("insufficient_scope") {
        return None;
    }
    let mut all: Vec<&str> = granted.unwrap_or_default().split_whitespace().collect();
    for s in c.scope.as_deref().unwrap_or_default().split_whitespace() {
        if !all.contains(&s) {
            all.push(s);
        }
    }
    Some(all.join(" "))
}

// ---------------------------------------------------------------------------------------------
// Authorization code with PKCE

/// A PKCE pair (RFC 7636, S256).
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    /// The verifier, kept until the code is exchanged.
    pub verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent in the authorization request.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce").field("challenge", &self.challenge).finish()
    }
}

impl Pkce {
    /// The pair from 32 random bytes (a 43-character verifier).
    pub fn new(random: &[u8; 32]) -> Pkce {
        let verifier = encode(random, Alphabet::Url);
        Pkce {
            challenge: challenge_of(&verifier),
            verifier,
        }
    }
}

/// The S256 challenge of `verifier`.
pub fn challenge_of(verifier: &str) -> String {
    encode(&Sha256::digest(verifier.as_bytes()), Alphabet::Url)
}

/// A `state` value from 16 random bytes.
pub fn state_of(random: &[u8; 16]) -> String {
    encode(random, Alphabet::Url)
}

/// `s` encoded as a value of `application/x-www-form-urlencoded` (a form body, a query), by the
/// URL Standard's serializer (`form_urlencoded`: a space is `+`).
pub fn form_encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn form(pairs: &[(&str, Option<&str>)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if let Some(v) = v {
            out.append_pair(k, v);
        }
    }
    out.finish()
}

/// What an authorization request carries.
#[derive(Debug, Clone)]
pub struct Authorize<'a> {
    /// The authorization endpoint.
    pub endpoint: &'a str,
    /// The client.
    pub client_id: &'a str,
    /// The loopback redirect URI.
    pub redirect_uri: &'a str,
    /// The scopes ([`select_scope`]).
    pub scope: Option<&'a str>,
    /// The `state` ([`state_of`]).
    pub state: &'a str,
    /// The PKCE challenge.
    pub code_challenge: &'a str,
    /// The MCP server's canonical URL (RFC 8707).
    pub resource: &'a str,
}

/// The URL the user's browser is sent to.
pub fn authorize_url(a: &Authorize<'_>) -> String {
    let query = form(&[
        ("response_type", Some("code")),
        ("client_id", Some(a.client_id)),
        ("redirect_uri", Some(a.redirect_uri)),
        ("scope", a.scope),
        ("state", Some(a.state)),
        ("code_challenge", Some(a.code_challenge)),
        ("code_challenge_method", Some("S256")),
        ("resource", Some(a.resource)),
    ]);
    let sep = if a.endpoint.contains('?') { '&' } else { '?' };
    format!("{}{sep}{query}", a.endpoint)
}

/// Random bytes a sign-in begins with ([`start_sign_in`]): 32 for the PKCE verifier, 16 for the
/// `state`'s nonce.
pub const SIGN_IN_RANDOM: usize = 48;

/// What a sign-in by authorization code begins with, besides its random bytes: the discovered
/// authorization server, the chosen client, where the browser comes back, the scopes and the MCP
/// server's canonical URL.
#[derive(Debug, Clone, Copy)]
pub struct SignInStart<'a> {
    /// The authorization server ([`AuthServer::check_authorization_code`] must pass).
    pub server: &'a AuthServer,
    /// The client ([`choose_client`], or registered).
    pub client: &'a Client,
    /// The redirect URI (a loopback listener natively, the Worker's callback at the edge).
    pub redirect_uri: &'a str,
    /// The scopes ([`select_scope`], widened by a step-up).
    pub scope: Option<&'a str>,
    /// The MCP server's canonical URL (RFC 8707).
    pub resource: &'a str,
}

/// A sign-in begun: the URL the browser opens and what its caller keeps until the callback.
#[derive(Clone, PartialEq, Eq)]
pub struct SignInStarted {
    /// The authorization URL.
    pub url: String,
    /// The PKCE verifier, sent with the code ([`TokenGrant::AuthorizationCode`]).
    pub verifier: String,
    /// The nonce made of the random bytes ([`state_of`]).
    pub nonce: String,
    /// The `state` the URL carries (the nonce as the caller wrapped it), which the callback must
    /// carry back ([`parse_callback`]).
    pub state: String,
}

impl std::fmt::Debug for SignInStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignInStarted")
            .field("url", &self.url)
            .field("state", &self.state)
            .finish()
    }
}

/// Begins a sign-in by authorization code with PKCE S256: the verifier from the first 32 of
/// `random`, the nonce from the last 16, the `state` `wrap(nonce)` (the native server sends the
/// nonce as it is; the Worker puts the principal before it, so its callback finds the
/// principal's object), and the authorization URL carrying them. Fails when the server cannot
/// take a person's sign-in ([`AuthServer::check_authorization_code`]).
pub fn start_sign_in(
    random: &[u8; SIGN_IN_RANDOM],
    start: &SignInStart<'_>,
    wrap: impl FnOnce(&str) -> String,
) -> Result<SignInStarted> {
    let endpoint = start.server.check_authorization_code()?;
    let pkce = Pkce::new(&std::array::from_fn(|i| random[i]));
    let nonce = state_of(&std::array::from_fn(|i| random[32 + i]));
    let state = wrap(&nonce);
    let url = authorize_url(&Authorize {
        endpoint,
        client_id: &start.client.client_id,
        redirect_uri: start.redirect_uri,
        scope: start.scope,
        state: &state,
        code_challenge: &pkce.challenge,
        resource: start.resource,
    });
    Ok(SignInStarted {
        url,
        verifier: pkce.verifier,
        nonce,
        state,
    })
}

/// The query pairs of a request target (`/path?a=b`), decoded as `application/x-www-form-urlencoded`
/// (`form_urlencoded`: `+` is a space, a `%` not followed by two hex digits is kept as written).
pub fn query_pairs(target: &str) -> Vec<(String, String)> {
    let q = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let q = q.split('#').next().unwrap_or_default();
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

/// The authorization code of the redirect to the loopback listener (`target`: its path and
/// query), checked: its path is [`CALLBACK_PATH`], its `state` the one sent (anything else is
/// discarded, as the MCP specification asks), no `error`, and its `iss` (RFC 9207) the issuer of
/// `server` — required when `server` says it sends one, else checked when given. `Ok(None)`: not
/// the callback (a browser asking for `/favicon.ico`).
pub fn parse_callback(target: &str, state: &str, server: &AuthServer) -> Result<Option<String>> {
    let issuer = server.issuer.as_str();
    let path = target.split('?').next().unwrap_or_default();
    if path != CALLBACK_PATH {
        return Ok(None);
    }
    let q = query_pairs(target);
    let get = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if get("state") != Some(state) {
        return Err(err(
            "the sign-in's redirect carried another state than the one sent: discarded (it was not this sign-in)",
        ));
    }
    if let Some(e) = get("error") {
        return Err(err(format!(
            "the authorization server refused the sign-in: {e}{}",
            get("error_description").map(|d| format!(" ({d})")).unwrap_or_default()
        )));
    }
    match get("iss") {
        Some(iss) if iss.trim_end_matches('/') != issuer.trim_end_matches('/') => {
            return Err(err(format!(
                "the sign-in's redirect came from the issuer \"{}\", not {issuer}: discarded (RFC 9207)",
                shorten(iss)
            )));
        }
        // RFC 9207 section 2.4: a client that knows the server sends `iss` refuses a response
        // without it (it may come from another server, a mix-up attack).
        None if server.authorization_response_iss_parameter_supported => {
            return Err(err(format!(
                "the sign-in's redirect carried no iss, though the authorization server {issuer} says it sends one (authorization_response_iss_parameter_supported): discarded (RFC 9207)"
            )));
        }
        _ => {}
    }
    match get("code") {
        Some(c) if !c.is_empty() => Ok(Some(c.to_string())),
        _ => Err(err("the sign-in's redirect carried no code")),
    }
}

// ---------------------------------------------------------------------------------------------
// Token requests

/// What a token request asks for.
#[derive(Clone)]
pub enum TokenGrant<'a> {
    /// The code of the redirect, with the PKCE verifier and the same redirect URI.
    AuthorizationCode {
        /// The code.
        code: &'a str,
        /// The PKCE verifier.
        verifier: &'a str,
        /// The redirect URI of the authorization request.
        redirect_uri: &'a str,
    },
    /// A new access token for a refresh token.
    Refresh {
        /// The refresh token.
        refresh_token: &'a str,
        /// The scope to ask for again, if any.
        scope: Option<&'a str>,
    },
    /// The client's own token.
    ClientCredentials {
        /// The scopes.
        scope: Option<&'a str>,
    },
}

/// One POST to the token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The token endpoint.
    pub url: String,
    /// Headers (content type; `Authorization: Basic` for a client secret sent that way).
    pub headers: Vec<(String, String)>,
    /// The form body.
    pub body: String,
}

impl std::fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRequest")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The token request for `grant` at `server`'s token endpoint as `client`, with `resource` (RFC
/// 8707, always: the MCP specification asks it whether or not the server supports it). A client
/// with a secret authenticates with HTTP Basic unless it registered, or the server only offers,
/// `client_secret_post`; a public client sends its `client_id` in the body.
pub fn token_request(server: &AuthServer, client: &Client, grant: &TokenGrant<'_>, resource: &str) -> TokenRequest {
    let mut pairs: Vec<(&str, Option<&str>)> = match grant {
        TokenGrant::AuthorizationCode {
            code,
            verifier,
            redirect_uri,
        } => vec![
            ("grant_type", Some("authorization_code")),
            ("code", Some(code)),
            ("code_verifier", Some(verifier)),
            ("redirect_uri", Some(redirect_uri)),
        ],
        TokenGrant::Refresh { refresh_token, scope } => vec![
            ("grant_type", Some("refresh_token")),
            ("refresh_token", Some(refresh_token)),
            ("scope", *scope),
        ],
        TokenGrant::ClientCredentials { scope } => {
            vec![("grant_type", Some("client_credentials")), ("scope", *scope)]
        }
    };
    pairs.push(("resource", Some(resource)));
    let (headers, body) = authenticated(server, client, pairs);
    TokenRequest {
        url: server.token_endpoint.clone(),
        headers,
        body,
    }
}

/// The revocation request (RFC 7009) of `token` (a `refresh_token` or `access_token`, `hint`) at
/// `server`'s revocation endpoint as `client` (authenticated as for [`token_request`]); `None`
/// when the server offers no revocation.
pub fn revocation_request(server: &AuthServer, client: &Client, token: &str, hint: &str) -> Option<TokenRequest> {
    let url = server.revocation_endpoint.clone()?;
    let (headers, body) = authenticated(
        server,
        client,
        vec![("token", Some(token)), ("token_type_hint", Some(hint))],
    );
    Some(TokenRequest { url, headers, body })
}

/// The headers and form body of a request to `server` with `pairs`, as `client`: a client with a
/// secret authenticates with HTTP Basic unless it registered, or the server only offers,
/// `client_secret_post`; a public client sends its `client_id` in the body.
fn authenticated<'a>(
    server: &AuthServer,
    client: &'a Client,
    mut pairs: Vec<(&'a str, Option<&'a str>)>,
) -> (Vec<(String, String)>, String) {
    let mut headers = vec![
        (
            "Content-Type".to_string(),
            "application/x-www-form-urlencoded".to_string(),
        ),
        ("Accept".to_string(), "application/json".to_string()),
    ];
    match &client.client_secret {
        Some(secret) => {
            let post = client.auth_method.as_deref() == Some("client_secret_post")
                || (client.auth_method.is_none()
                    && server.token_auth_methods.as_ref().is_some_and(|m| {
                        !m.iter().any(|x| x == "client_secret_basic") && m.iter().any(|x| x == "client_secret_post")
                    }));
            if post {
                pairs.push(("client_id", Some(&client.client_id)));
                pairs.push(("client_secret", Some(secret)));
            } else {
                let basic = format!("{}:{}", form_encode(&client.client_id), form_encode(secret));
                headers.push((
                    "Authorization".to_string(),
                    format!("Basic {}", encode(basic.as_bytes(), Alphabet::Standard)),
                ));
            }
        }
        None => pairs.push(("client_id", Some(&client.client_id))),
    }
    (headers, form(&pairs))
}

/// Tokens the authorization server issued.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token was obtained, ms since the epoch.
    pub obtained_ms: i64,
    /// When it expires, ms since the epoch (`expires_in`), if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<i64>,
    /// The scopes granted (`scope`), if said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("expires_ms", &self.expires_ms)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Whether the access token should be refreshed at `now_ms`: it expired, or expires within
    /// [`REFRESH_MARGIN_MS`] (a tenth of its lifetime when that is shorter).
    pub fn expiring(&self, now_ms: i64) -> bool {
        self.refresh_at().is_some_and(|at| now_ms >= at)
    }

    /// From when the access token is [`Tokens::expiring`], ms since the epoch (`None`: it does
    /// not expire): a holder of a copy may use it until then without asking again.
    pub fn refresh_at(&self) -> Option<i64> {
        let exp = self.expires_ms?;
        Some(exp - REFRESH_MARGIN_MS.min((exp - self.obtained_ms).max(0) / 10))
    }
}

/// Why a token request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// The server refused the grant (`error` of RFC 6749 §5.2): `invalid_grant` means the refresh
    /// token or code is no longer good (revoked, expired, used) — the user signs in again.
    Refused {
        /// The `error` code.
        error: String,
        /// Its description, if any.
        description: Option<String>,
    },
    /// The answer was not a token response.
    Malformed(String),
}

impl TokenError {
    /// Whether only a new sign-in helps (`invalid_grant`, `invalid_client`, `unauthorized_client`).
    pub fn needs_login(&self) -> bool {
        matches!(self, TokenError::Refused { error, .. } if ["invalid_grant", "invalid_client", "unauthorized_client"].contains(&error.as_str()))
    }
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenError::Refused { error, description } => {
                write!(f, "the authorization server refused the token request: {error}")?;
                if let Some(d) = description {
                    write!(f, " ({})", shorten(d))?;
                }
                Ok(())
            }
            TokenError::Malformed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TokenError {}

fn oauth_error(body: &str) -> Option<String> {
    let o = serde_json::from_str::<Value>(body).ok()?;
    let e = o.get("error")?.as_str()?;
    Some(match o.get("error_description").and_then(Value::as_str) {
        Some(d) => format!("{e} ({})", shorten(d)),
        None => e.to_string(),
    })
}

/// The tokens of a token endpoint's answer (`status`, `body`) received at `now_ms`. The token
/// type must be Bearer; a refresh that issues no new refresh token keeps the old one (the caller
/// merges with [`Tokens::refreshed`]).
pub fn parse_token_response(status: u16, body: &str, now_ms: i64) -> std::result::Result<Tokens, TokenError> {
    let o = serde_json::from_str::<Value>(body).ok();
    if !(200..300).contains(&status) {
        let error = o.as_ref().and_then(|o| o.get("error")).and_then(Value::as_str);
        return Err(match error {
            Some(e) => TokenError::Refused {
                error: e.to_string(),
                description: o
                    .as_ref()
                    .and_then(|o| o.get("error_description"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
            None => TokenError::Malformed(format!("the token endpoint answered HTTP {status}")),
        });
    }
    let o = o.ok_or_else(|| TokenError::Malformed("the token endpoint's answer is not JSON".into()))?;
    let access_token = o
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| TokenError::Malformed("the token endpoint's answer has no access_token".into()))?;
    let kind = o.get("token_type").and_then(Value::as_str).unwrap_or_default();
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(TokenError::Malformed(format!(
            "the token endpoint issued a \"{}\" token; only Bearer tokens are used",
            shorten(kind)
        )));
    }
    Ok(Tokens {
        access_token: access_token.to_string(),
        refresh_token: o.get("refresh_token").and_then(Value::as_str).map(str::to_string),
        obtained_ms: now_ms,
        expires_ms: o
            .get("expires_in")
            .and_then(Value::as_i64)
            .filter(|s| *s > 0)
            .map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
        scope: o.get("scope").and_then(Value::as_str).map(str::to_string),
    })
}

impl Tokens {
    /// These (a refresh's) with the refresh token and scope of `before` where they say none.
    pub fn refreshed(mut self, before: &Tokens) -> Tokens {
        if self.refresh_token.is_none() {
            self.refresh_token = before.refresh_token.clone();
        }
        if self.scope.is_none() {
            self.scope = before.scope.clone();
        }
        self
    }
}

// ---------------------------------------------------------------------------------------------
// What is kept per upstream

/// One upstream's sign-in, as kept in the token store: everything a refresh needs without
/// discovery, and the resource the tokens were issued for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignIn {
    /// The resource the tokens were issued for (RFC 8707): they are sent only to an upstream
    /// whose URL lies within it ([`resource_allows`]).
    pub resource: String,
    /// The authorization server.
    pub server: AuthServer,
    /// The client identity used there.
    pub client: Client,
    /// The scopes asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The tokens.
    pub tokens: Tokens,
}

impl SignIn {
    /// The `Authorization` header for the upstream at `server_url`: only when the tokens were
    /// issued for it (another upstream never gets them).
    pub fn bearer_for(&self, server_url: &str) -> Option<String> {
        resource_allows(&self.resource, server_url).then(|| format!("Bearer {}", self.tokens.access_token))
    }
}

/// The token store's contents: each upstream's sign-in by its name (a JSON file, or the values
/// a keychain holds).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Store {
    /// By upstream name.
    pub upstreams: BTreeMap<String, SignIn>,
}

impl Store {
    /// Reads a store file's text (empty: an empty store).
    pub fn parse(text: &str) -> Result<Store> {
        if text.trim().is_empty() {
            return Ok(Store::default());
        }
        serde_json::from_str(text).map_err(|e| {
            Error::Config(format!(
                "the token store is not readable ({e}); delete it and sign in again with `mcp-sieve login NAME`"
            ))
        })
    }

    /// Its text.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// The error of an upstream that needs a person to sign in (no token, or none that refreshes).
pub fn needs_login_error(name: &str, why: &str) -> Error {
    let who = if name.is_empty() {
        "NAME".to_string()
    } else {
        name.to_string()
    };
    Error::Upstream(format!("needs sign-in ({why}): run `mcp-sieve login {who}`"))
}

/// The answer to a request that needs upstream `name` while it needs a person to sign in, for a
/// client that declared URL-mode elicitation (MCP 2025-11-25): `-32042` with one URL-mode
/// elicitation, the sign-in page at `url` under `elicitation_id`. The request cannot go on until
/// the person signed in, so it is the error (which the client retries after), not an
/// `elicitation/create` request held open for minutes inside the call.
pub fn url_elicitation_required(name: &str, elicitation_id: &str, url: &str, why: &str) -> Error {
    let elicitation = url_elicitation(name, elicitation_id, url, why);
    Error::Rpc {
        code: crate::error::code::URL_ELICITATION_REQUIRED,
        message: elicitation["message"].as_str().unwrap_or_default().to_string(),
        data: Some(serde_json::json!({ "elicitations": [elicitation] })),
    }
}

/// The URL-mode elicitation (the params of an `elicitation/create`, an entry of `-32042`'s
/// `data.elicitations`) asking a person to sign in to upstream `name` at `url`.
pub fn url_elicitation(name: &str, elicitation_id: &str, url: &str, why: &str) -> Value {
    let who = if name.is_empty() { "the upstream" } else { name };
    serde_json::json!({
        "mode": "url",
        "elicitationId": elicitation_id,
        "url": url,
        "message": format!("Sign in to upstream \"{who}\" ({why}), then try again."),
    })
}

/// The `notifications/elicitation/complete` of the URL-mode elicitation `elicitation_id` (MCP
/// 2025-11-25): the out-of-band interaction it asked for (a sign-in) is done.
pub fn elicitation_complete(elicitation_id: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": { "elicitationId": elicitation_id },
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> AuthServer {
        AuthServer::parse(
            r#"{"issuer": "https://as.example/t1", "authorization_endpoint": "https://as.example/t1/auth",
                "token_endpoint": "https://as.example/t1/token", "registration_endpoint": "https://as.example/t1/reg",
                "code_challenge_methods_supported": ["S256"], "scopes_supported": ["a", "offline_access"]}"#,
            "https://as.example/t1",
        )
        .unwrap()
    }

    #[test]
    fn challenges_are_parsed_with_quotes_escapes_and_other_schemes() {
        let c = parse_challenge(
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", error_description="need \"write\"""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.error_description.as_deref(), Some("need \"write\""));
        assert_eq!(parse_challenge("bearer").unwrap(), Challenge::default());
        assert_eq!(
            parse_challenge("Bearer realm=mcp, scope=a").unwrap().scope.as_deref(),
            Some("a")
        );
        assert_eq!(parse_challenge("Basic realm=\"x\""), None);
        assert_eq!(
            parse_challenge("Basic abc==, Bearer scope=\"s\"")
                .unwrap()
                .scope
                .as_deref(),
            Some("s")
        );
        for junk in ["", "\"", "=,=", "Bearer scope=\"unterminated", "Bearer ===", "ü Bearer"] {
            let _ = parse_challenge(junk);
        }
    }

    #[test]
    fn resource_metadata_is_found_from_the_challenge_else_the_well_known_urls() {
        let c = Challenge {
            resource_metadata: Some("https://mcp.example.com/prm".into()),
            ..Default::default()
        };
        assert_eq!(
            resource_metadata_urls("https://mcp.example.com/public/mcp", Some(&c)).unwrap(),
            vec!["https://mcp.example.com/prm"]
        );
        assert_eq!(
            resource_metadata_urls("https://MCP.example.com:443/public/mcp", None).unwrap(),
            vec![
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls("http://127.0.0.1:8080/", None).unwrap(),
            vec!["http://127.0.0.1:8080/.well-known/oauth-protected-resource"]
        );
        let plain = Challenge {
            resource_metadata: Some("http://evil.example/prm".into()),
            ..Default::default()
        };
        assert_eq!(
            resource_metadata_urls("https://mcp.example.com/mcp", Some(&plain)).unwrap(),
            vec![
                "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ]
        );
        let why = foreign_resource_metadata("https://mcp.example.com/mcp", Some(&plain)).unwrap();
        assert!(
            why.contains("http://evil.example/prm") && why.contains("not on its origin"),
            "{why}"
        );
        assert_eq!(foreign_resource_metadata("https://mcp.example.com/mcp", Some(&c)), None);
        assert_eq!(foreign_resource_metadata("https://mcp.example.com/mcp", None), None);
    }

    #[test]
    fn protected_resource_metadata_must_be_for_this_server() {
        let m = ResourceMetadata::parse(
            r#"{"resource": "https://MCP.example.com/mcp", "authorization_servers": ["https://as.example"], "scopes_supported": ["a"]}"#,
            "https://mcp.example.com/mcp",
        )
        .unwrap();
        assert_eq!(m.resource, "https://mcp.example.com/mcp");
        assert_eq!(m.authorization_servers, vec!["https://as.example"]);
        let root = ResourceMetadata::parse(
            r#"{"resource": "https://mcp.example.com/", "authorization_servers": ["https://as.example"]}"#,
            "https://mcp.example.com/mcp",
        )
        .unwrap();
        assert_eq!(root.resource, "https://mcp.example.com");
        let e = ResourceMetadata::parse(
            r#"{"resource": "https://other.example/mcp", "authorization_servers": ["https://as.example"]}"#,
            "https://mcp.example.com/mcp",
        )
        .unwrap_err();
        assert!(e.to_string().contains("not for https://mcp.example.com/mcp"), "{e}");
        assert!(ResourceMetadata::parse(
            r#"{"resource": "https://mcp.example.com/mcp"}"#,
            "https://mcp.example.com/mcp"
        )
        .unwrap_err()
        .to_string()
        .contains("no authorization_servers"));
        assert!(ResourceMetadata::parse("[1]", "https://mcp.example.com/mcp").is_err());
    }

    #[test]
    fn authorization_server_metadata_urls_follow_the_spec_order() {
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/tenant1").unwrap(),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/").unwrap(),
            vec![
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert!(authorization_server_metadata_urls("http://auth.example.com").is_err());
        assert!(authorization_server_metadata_urls("http://127.0.0.1:9/").is_ok());
    }

    #[test]
    fn authorization_server_metadata_is_checked() {
        let s = server();
        assert_eq!(s.check_authorization_code().unwrap(), "https://as.example/t1/auth");
        let no_pkce = AuthServer::parse(
            r#"{"issuer": "https://as.example", "authorization_endpoint": "https://as.example/a", "token_endpoint": "https://as.example/t"}"#,
            "https://as.example",
        )
        .unwrap();
        assert!(no_pkce
            .check_authorization_code()
            .unwrap_err()
            .to_string()
            .contains("S256"));
        let plain = AuthServer::parse(
            r#"{"issuer": "https://as.example", "token_endpoint": "http://as.example/t"}"#,
            "https://as.example",
        );
        assert!(plain.unwrap_err().to_string().contains("token_endpoint"));
        let other = AuthServer::parse(
            r#"{"issuer": "https://evil.example", "token_endpoint": "https://as.example/t"}"#,
            "https://as.example",
        );
        assert!(other.unwrap_err().to_string().contains("RFC 8414"));
    }

    #[test]
    fn pkce_is_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let p = Pkce::new(&[7u8; 32]);
        assert_eq!(p.verifier.len(), 43);
        assert_eq!(p.challenge, challenge_of(&p.verifier));
        assert!(!format!("{p:?}").contains(&p.verifier));
    }

    #[test]
    fn the_authorize_url_carries_resource_scope_state_and_challenge() {
        let url = authorize_url(&Authorize {
            endpoint: "https://as.example/auth",
            client_id: "c 1",
            redirect_uri: "http://127.0.0.1:5000/callback",
            scope: Some("a b"),
            state: "st",
            code_challenge: "ch",
            resource: "https://mcp.example.com/mcp",
        });
        assert_eq!(
            url,
            "https://as.example/auth?response_type=code&client_id=c+1&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback&scope=a+b&state=st&code_challenge=ch&code_challenge_method=S256&resource=https%3A%2F%2Fmcp.example.com%2Fmcp"
        );
        let q = query_pairs(&url);
        assert!(q.contains(&("resource".into(), "https://mcp.example.com/mcp".into())));
    }

    #[test]
    fn a_sign_in_starts_with_the_random_bytes_split_and_the_state_wrapped() {
        let s = server();
        let client = Client {
            client_id: "c1".into(),
            client_secret: None,
            auth_method: None,
        };
        let mut random = [0u8; SIGN_IN_RANDOM];
        random.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        let start = SignInStart {
            server: &s,
            client: &client,
            redirect_uri: "https://w.example/mcp-sieve/oauth/callback",
            scope: Some("a offline_access"),
            resource: "https://mcp.example.com/mcp",
        };
        let plain = start_sign_in(&random, &start, str::to_string).unwrap();
        let pkce = Pkce::new(random[..32].try_into().unwrap());
        assert_eq!(plain.verifier, pkce.verifier);
        assert_eq!(plain.nonce, state_of(random[32..].try_into().unwrap()));
        assert_eq!(plain.state, plain.nonce);
        assert_eq!(
            plain.url,
            authorize_url(&Authorize {
                endpoint: "https://as.example/t1/auth",
                client_id: "c1",
                redirect_uri: "https://w.example/mcp-sieve/oauth/callback",
                scope: Some("a offline_access"),
                state: &plain.nonce,
                code_challenge: &pkce.challenge,
                resource: "https://mcp.example.com/mcp",
            })
        );
        // The Worker's state: the principal before the nonce; the callback checks it whole.
        let wrapped = start_sign_in(&random, &start, |n| format!("616c696365.{n}")).unwrap();
        assert_eq!(wrapped.state, format!("616c696365.{}", plain.nonce));
        assert_eq!((&wrapped.verifier, &wrapped.nonce), (&plain.verifier, &plain.nonce));
        let q = query_pairs(&wrapped.url);
        assert!(q.contains(&("state".into(), wrapped.state.clone())));
        assert!(q.contains(&("code_challenge".into(), challenge_of(&wrapped.verifier))));
        let target = format!("{CALLBACK_PATH}?code=k&state={}", wrapped.state);
        assert_eq!(
            parse_callback(&target, &wrapped.state, &s).unwrap().as_deref(),
            Some("k")
        );
        // Other bytes, another verifier and nonce; the verifier is not in the debug text.
        random[0] ^= 1;
        random[47] ^= 1;
        let other = start_sign_in(&random, &start, str::to_string).unwrap();
        assert!(other.verifier != plain.verifier && other.nonce != plain.nonce);
        assert!(!format!("{other:?}").contains(&other.verifier));
        // A server that takes no person's sign-in is refused before any URL is made.
        let no_pkce = AuthServer {
            code_challenge_methods: vec![],
            ..server()
        };
        let e = start_sign_in(
            &random,
            &SignInStart {
                server: &no_pkce,
                ..start
            },
            str::to_string,
        )
        .unwrap_err();
        assert!(e.to_string().contains("S256"), "{e}");
    }

    #[test]
    fn the_callback_is_checked_for_state_error_and_issuer() {
        let iss = &AuthServer {
            issuer: "https://as.example".into(),
            ..server()
        };
        assert_eq!(
            parse_callback("/callback?code=abc&state=s1", "s1", iss)
                .unwrap()
                .as_deref(),
            Some("abc")
        );
        assert_eq!(parse_callback("/favicon.ico", "s1", iss).unwrap(), None);
        assert!(parse_callback("/callback?code=abc&state=s2", "s1", iss)
            .unwrap_err()
            .to_string()
            .contains("state"));
        assert!(parse_callback("/callback?code=abc", "s1", iss).is_err());
        assert!(parse_callback("/callback?error=access_denied&state=s1", "s1", iss)
            .unwrap_err()
            .to_string()
            .contains("access_denied"));
        assert!(parse_callback("/callback?code=a&state=s1&iss=https%3A%2F%2Fevil", "s1", iss).is_err());
        assert!(parse_callback("/callback?code=a&state=s1&iss=https%3A%2F%2Fas.example", "s1", iss).is_ok());
        assert!(parse_callback("/callback?state=s1&code=%zz%", "s1", iss).is_ok());
    }

    /// Forms and queries are `application/x-www-form-urlencoded` as the URL Standard writes and
    /// reads them (`form_urlencoded`), the client's Basic credentials too (RFC 6749 section 2.3.1).
    #[test]
    fn forms_are_written_and_read_as_the_url_standard_does() {
        assert_eq!(form_encode("a b&c=d/é~"), "a+b%26c%3Dd%2F%C3%A9%7E");
        assert_eq!(
            query_pairs("/callback?a=x+y&b=%2B%26&&c&d=%zz#frag=1"),
            vec![
                ("a".to_string(), "x y".to_string()),
                ("b".to_string(), "+&".to_string()),
                ("c".to_string(), String::new()),
                ("d".to_string(), "%zz".to_string()),
            ]
        );
        let odd = Client {
            client_id: "my app".into(),
            client_secret: Some("s:1".into()),
            auth_method: None,
        };
        let r = token_request(
            &server(),
            &odd,
            &TokenGrant::ClientCredentials { scope: None },
            "https://r",
        );
        let basic = encode(b"my+app:s%3A1", Alphabet::Standard);
        assert!(r.headers.contains(&("Authorization".into(), format!("Basic {basic}"))));
    }

    /// Issue 58 item 3 (RFC 9207 section 2.4): a server that says its redirects carry `iss` has a
    /// redirect without one refused, never exchanged.
    #[test]
    fn a_redirect_without_iss_is_refused_when_the_server_says_it_sends_one() {
        let says = AuthServer::parse(
            r#"{"issuer": "https://as.example", "token_endpoint": "https://as.example/t",
                "authorization_response_iss_parameter_supported": true}"#,
            "https://as.example",
        )
        .unwrap();
        assert!(says.authorization_response_iss_parameter_supported);
        let e = parse_callback("/callback?code=a&state=s1", "s1", &says)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no iss") && e.contains("RFC 9207"), "{e}");
        assert_eq!(
            parse_callback("/callback?code=a&state=s1&iss=https%3A%2F%2Fas.example", "s1", &says)
                .unwrap()
                .as_deref(),
            Some("a")
        );
        assert!(parse_callback("/callback?code=a&state=s1&iss=https%3A%2F%2Fevil", "s1", &says).is_err());
        // Kept with the sign-in (the Worker's pending one, the token store) and read back.
        let text = serde_json::to_string(&says).unwrap();
        assert!(
            serde_json::from_str::<AuthServer>(&text)
                .unwrap()
                .authorization_response_iss_parameter_supported
        );
        assert!(!serde_json::to_string(&server()).unwrap().contains("iss_parameter"));
    }

    #[test]
    fn token_requests_carry_the_resource_and_the_client() {
        let s = server();
        let public = Client {
            client_id: "pub".into(),
            client_secret: None,
            auth_method: None,
        };
        let r = token_request(
            &s,
            &public,
            &TokenGrant::AuthorizationCode {
                code: "c",
                verifier: "v",
                redirect_uri: "http://127.0.0.1:1/callback",
            },
            "https://mcp.example.com/mcp",
        );
        assert_eq!(r.url, "https://as.example/t1/token");
        assert_eq!(r.body, "grant_type=authorization_code&code=c&code_verifier=v&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback&resource=https%3A%2F%2Fmcp.example.com%2Fmcp&client_id=pub");
        let secret = Client {
            client_id: "id".into(),
            client_secret: Some("s3".into()),
            auth_method: None,
        };
        let r = token_request(
            &s,
            &secret,
            &TokenGrant::ClientCredentials { scope: Some("a") },
            "https://r",
        );
        assert_eq!(r.body, "grant_type=client_credentials&scope=a&resource=https%3A%2F%2Fr");
        assert!(r.headers.contains(&("Authorization".into(), "Basic aWQ6czM=".into())));
        assert!(!format!("{r:?}").contains("aWQ6czM"));
        let post = Client {
            auth_method: Some("client_secret_post".into()),
            ..secret
        };
        let r = token_request(
            &s,
            &post,
            &TokenGrant::Refresh {
                refresh_token: "rt",
                scope: None,
            },
            "https://r",
        );
        assert_eq!(
            r.body,
            "grant_type=refresh_token&refresh_token=rt&resource=https%3A%2F%2Fr&client_id=id&client_secret=s3"
        );
    }

    #[test]
    fn revocation_requests_name_the_token_and_authenticate_the_client() {
        let public = Client {
            client_id: "pub".into(),
            client_secret: None,
            auth_method: None,
        };
        assert!(revocation_request(&server(), &public, "rt", "refresh_token").is_none());
        let s = AuthServer {
            revocation_endpoint: Some("https://as.example/t1/revoke".into()),
            ..server()
        };
        let r = revocation_request(&s, &public, "r t", "refresh_token").unwrap();
        assert_eq!(r.url, "https://as.example/t1/revoke");
        assert_eq!(r.body, "token=r+t&token_type_hint=refresh_token&client_id=pub");
        let secret = Client {
            client_id: "id".into(),
            client_secret: Some("s3".into()),
            auth_method: None,
        };
        let r = revocation_request(&s, &secret, "at", "access_token").unwrap();
        assert_eq!(r.body, "token=at&token_type_hint=access_token");
        assert!(r.headers.contains(&("Authorization".into(), "Basic aWQ6czM=".into())));
        let parsed = AuthServer::parse(
            r#"{"issuer": "https://as.example/t1", "token_endpoint": "https://as.example/t1/token",
                "revocation_endpoint": "https://as.example/t1/revoke"}"#,
            "https://as.example/t1",
        )
        .unwrap();
        assert_eq!(
            parsed.revocation_endpoint.as_deref(),
            Some("https://as.example/t1/revoke")
        );
    }

    #[test]
    fn token_responses_are_bearer_tokens_with_an_expiry() {
        let t = parse_token_response(
            200,
            r#"{"access_token": "at", "token_type": "bearer", "expires_in": 100, "refresh_token": "rt", "scope": "a"}"#,
            1_000,
        )
        .unwrap();
        assert_eq!((t.expires_ms, t.refresh_token.as_deref()), (Some(101_000), Some("rt")));
        assert!(!t.expiring(50_000) && t.expiring(91_000) && t.expiring(200_000));
        // A tenth of its 100 s life before its expiry; one without expires_in does not expire.
        assert_eq!(t.refresh_at(), Some(91_000));
        assert!(!format!("{t:?}").contains("at\"") && !format!("{t:?}").contains("rt"));
        let again = parse_token_response(200, r#"{"access_token": "at2", "token_type": "Bearer"}"#, 2_000)
            .unwrap()
            .refreshed(&t);
        assert_eq!(
            (again.refresh_token.as_deref(), again.scope.as_deref()),
            (Some("rt"), Some("a"))
        );
        assert_eq!((again.refresh_at(), again.expiring(i64::MAX)), (None, false));
        let revoked = parse_token_response(
            400,
            r#"{"error": "invalid_grant", "error_description": "grant request is invalid"}"#,
            0,
        )
        .unwrap_err();
        assert!(revoked.needs_login());
        assert!(revoked.to_string().contains("invalid_grant"));
        assert!(!parse_token_response(500, "oops", 0).unwrap_err().needs_login());
        assert!(parse_token_response(200, r#"{"access_token": "x", "token_type": "DPoP"}"#, 0).is_err());
        assert!(parse_token_response(200, r#"{"token_type": "Bearer"}"#, 0).is_err());
    }

    #[test]
    fn the_client_identity_follows_the_spec_order() {
        let s = server();
        let pre = OAuth {
            client_id: Some("pre".into()),
            ..Default::default()
        };
        assert!(
            matches!(choose_client(&pre, Some("x".into()), &s, "gh").unwrap(), Identity::Ready(c) if c.client_id == "pre" && c.client_secret.as_deref() == Some("x"))
        );
        let cimd = OAuth {
            client_metadata_url: Some("https://me.example/client.json".into()),
            ..Default::default()
        };
        assert_eq!(
            choose_client(&cimd, None, &s, "gh").unwrap(),
            Identity::Register("https://as.example/t1/reg".into())
        );
        let mut with_cimd = s.clone();
        with_cimd.client_id_metadata_document_supported = true;
        assert!(
            matches!(choose_client(&cimd, None, &with_cimd, "gh").unwrap(), Identity::Ready(c) if c.client_id == "https://me.example/client.json")
        );
        let mut bare = s.clone();
        bare.registration_endpoint = None;
        let e = choose_client(&OAuth::default(), None, &bare, "gh").unwrap_err();
        assert!(e.to_string().contains("upstreams.gh.auth.clientId"), "{e}");
        let body: Value = serde_json::from_str(&registration_request(
            Grant::AuthorizationCode,
            Some("http://127.0.0.1:9/callback"),
            Some("a"),
        ))
        .unwrap();
        assert_eq!(body["redirect_uris"][0], "http://127.0.0.1:9/callback");
        assert_eq!(body["token_endpoint_auth_method"], "none");
        assert_eq!(body["scope"], "a");
        let c = parse_registration(
            201,
            r#"{"client_id": "new", "client_secret": "s", "token_endpoint_auth_method": "client_secret_post"}"#,
        )
        .unwrap();
        assert_eq!(
            (c.client_id.as_str(), c.auth_method.as_deref()),
            ("new", Some("client_secret_post"))
        );
        assert!(parse_registration(400, r#"{"error": "invalid_redirect_uri"}"#)
            .unwrap_err()
            .to_string()
            .contains("invalid_redirect_uri"));
    }

    #[test]
    fn scopes_are_selected_and_stepped_up() {
        let m = ResourceMetadata {
            resource: "https://r".into(),
            authorization_servers: vec!["https://as".into()],
            scopes_supported: Some(vec!["a".into(), "b".into()]),
        };
        let c = Challenge {
            scope: Some("x".into()),
            ..Default::default()
        };
        assert_eq!(select_scope(&["d".into()], Some(&c), &m).as_deref(), Some("d"));
        assert_eq!(select_scope(&[], Some(&c), &m).as_deref(), Some("x"));
        assert_eq!(select_scope(&[], None, &m).as_deref(), Some("a b"));
        assert_eq!(
            select_scope(
                &[],
                None,
                &ResourceMetadata {
                    scopes_supported: None,
                    ..m
                }
            ),
            None
        );
        let more = Challenge {
            error: Some("insufficient_scope".into()),
            scope: Some("a write".into()),
            ..Default::default()
        };
        assert_eq!(
            step_up_scope(403, Some(&more), Some("a read")).as_deref(),
            Some("a read write")
        );
        assert_eq!(step_up_scope(401, Some(&more), None), None);
        assert_eq!(step_up_scope(403, Some(&c), None), None);
    }

    #[test]
    fn a_token_goes_only_to_the_resource_it_was_issued_for() {
        assert!(resource_allows(
            "https://mcp.example.com/mcp",
            "https://MCP.example.com:443/mcp"
        ));
        assert!(resource_allows(
            "https://mcp.example.com",
            "https://mcp.example.com/mcp"
        ));
        assert!(resource_allows("http://127.0.0.1:5/mcp", "http://127.0.0.1:5/mcp/"));
        assert!(!resource_allows("http://127.0.0.1:5/mcp", "http://127.0.0.1:6/mcp"));
        assert!(!resource_allows(
            "https://mcp.example.com/mcp",
            "https://mcp.example.com/mcpx"
        ));
        assert!(!resource_allows(
            "https://mcp.example.com/a",
            "https://mcp.example.com/b"
        ));
        assert!(!resource_allows("https://mcp.example.com", "http://mcp.example.com"));
        assert!(!resource_allows("nonsense", "https://mcp.example.com"));
        assert_eq!(
            canonical_resource("HTTPS://Mcp.Example.com:443/#x").unwrap(),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource("http://127.0.0.1:80/mcp").unwrap(),
            "http://127.0.0.1/mcp"
        );
        let sign_in = SignIn {
            resource: "http://127.0.0.1:5/mcp".into(),
            server: server(),
            client: Client {
                client_id: "c".into(),
                client_secret: None,
                auth_method: None,
            },
            scope: None,
            tokens: parse_token_response(200, r#"{"access_token": "at", "token_type": "Bearer"}"#, 0).unwrap(),
        };
        assert_eq!(
            sign_in.bearer_for("http://127.0.0.1:5/mcp").as_deref(),
            Some("Bearer at")
        );
        assert_eq!(sign_in.bearer_for("http://127.0.0.1:7/mcp"), None);
        let mut store = Store::default();
        store.upstreams.insert("a".into(), sign_in);
        assert_eq!(Store::parse(&store.to_text()).unwrap(), store);
        assert_eq!(Store::parse("").unwrap(), Store::default());
        assert!(Store::parse("{").unwrap_err().to_string().contains("mcp-sieve login"));
        let e = url_elicitation_required("gh", "e1", "https://as.example/auth?x=1", "no token");
        assert_eq!(e.code(), -32042);
        let d = &e.to_json()["data"]["elicitations"][0];
        assert_eq!(
            (d["mode"].as_str(), d["elicitationId"].as_str()),
            (Some("url"), Some("e1"))
        );
        assert_eq!(d["url"], "https://as.example/auth?x=1");
        assert!(d["message"].as_str().unwrap().contains("\"gh\""));
        assert!(needs_login_error("gh", "no token")
            .to_string()
            .contains("`mcp-sieve login gh`"));
    }

    #[test]
    fn urls_that_do_not_parse_are_errors_not_panics() {
        for bad in [
            "",
            "x",
            "ftp://a",
            "http://",
            "http://a:b/",
            "http://u@h/",
            "http://:80",
            "https://[::1",
        ] {
            let _ = parse_url(bad);
            let _ = canonical_resource(bad);
            let _ = resource_metadata_urls(bad, None);
        }
        assert!(parse_url("http://u@h/")
            .unwrap_err()
            .to_string()
            .contains("credentials"));
        assert!(is_loopback(&parse_url("http://[::1]:8080/x").unwrap()));
        assert_eq!(parse_url("http://[::1]:8080/x").unwrap().port(), Some(8080));
        assert_eq!(
            request_url("https://h.example/mcp/%2e%2e/mcpx#f"),
            "https://h.example/mcpx"
        );
        assert_eq!(request_url("HTTPS://H.example:443/a/./b"), "https://h.example/a/b");
        assert_eq!(request_url("not a url"), "not a url");
    }

    /// Issue 58 item 1: plain http only to an address of this machine, not to a name that looks
    /// like one (a proxy or DNS decides where a name goes).
    #[test]
    fn plain_http_goes_only_to_a_loopback_address_not_to_a_name_that_looks_like_one() {
        for ok in [
            "http://127.0.0.1:9/token",
            "http://127.1.2.3/token",
            "http://[::1]:8080/token",
            "http://localhost:5/token",
            "http://LOCALHOST/token",
        ] {
            assert!(check_endpoint(ok, "the token_endpoint").is_ok(), "{ok}");
        }
        for named in [
            "http://127.probe.as.test/token",
            "http://127.0.0.evil/token",
            "http://127.0.0.1.nip.io/token",
            "http://localhost./token",
            "http://localhost.evil.test/token",
            "http://mylocalhost/token",
        ] {
            let e = check_endpoint(named, "the token_endpoint").unwrap_err().to_string();
            assert!(e.contains("must be an https:// URL"), "{named}: {e}");
        }
        let e = AuthServer::parse(
            r#"{"issuer": "https://as.example", "token_endpoint": "http://127.probe.as.test/token"}"#,
            "https://as.example",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("token_endpoint") && e.contains("https://"), "{e}");
    }

    /// Issue 58 item 2: paths are compared as a URL parser resolves them; `..` (written or
    /// percent-encoded, or with backslashes) does not carry a token out of its resource.
    #[test]
    fn dot_segments_do_not_carry_a_token_out_of_its_resource() {
        let r = "https://host.example/mcp";
        for outside in [
            "https://host.example/mcp/../mcpx",
            "https://host.example/mcp/%2e%2e/mcpx",
            "https://host.example/mcp/%2E%2E/mcpx",
            "https://host.example/mcp/.%2e/mcpx",
            "https://host.example/mcp\\..\\mcpx",
            "https://host.example/mcp/sub/../../mcpx",
        ] {
            assert!(!resource_allows(r, outside), "{outside}");
        }
        for inside in [
            "https://host.example/mcp/sub/../x",
            "https://host.example/mcp/./x",
            "https://host.example/other/../mcp",
        ] {
            assert!(resource_allows(r, inside), "{inside}");
        }
    }

    /// Issue 58 item 4: Protected Resource Metadata names its resource (RFC 9728 section 2), and
    /// the challenge's `resource_metadata` is read only from the upstream's own origin.
    #[test]
    fn resource_metadata_names_its_resource_and_comes_from_the_upstreams_origin() {
        let e = ResourceMetadata::parse(
            r#"{"authorization_servers": ["https://as.example"]}"#,
            "https://mcp.example.com/mcp",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("resource"), "{e}");
        let well_known = vec![
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp".to_string(),
            "https://mcp.example.com/.well-known/oauth-protected-resource".to_string(),
        ];
        for foreign in [
            "https://other.example/prm",
            "https://mcp.example.com:8443/prm",
            "http://mcp.example.com/prm",
            "http://127.0.0.1:9/internal",
        ] {
            let c = Challenge {
                resource_metadata: Some(foreign.into()),
                ..Default::default()
            };
            assert_eq!(
                resource_metadata_urls("https://mcp.example.com/mcp", Some(&c)).unwrap(),
                well_known,
                "{foreign}"
            );
        }
        let own = Challenge {
            resource_metadata: Some("https://MCP.example.com:443/prm".into()),
            ..Default::default()
        };
        assert_eq!(
            resource_metadata_urls("https://mcp.example.com/mcp", Some(&own)).unwrap(),
            vec!["https://mcp.example.com/prm"]
        );
    }

    #[test]
    fn a_party_that_does_not_answer_is_named_with_its_host_and_the_limit() {
        assert_eq!(
            no_answer(
                "the token endpoint",
                "http://127.0.0.1:8080/token",
                2000,
                Some("limits.signInTimeoutSeconds")
            ),
            "the token endpoint (127.0.0.1:8080) did not answer within 2 s (limits.signInTimeoutSeconds)"
        );
        assert_eq!(
            no_answer("", "https://as.example/t", 1500, None),
            "https://as.example/t did not answer within 1500 ms"
        );
    }
}
