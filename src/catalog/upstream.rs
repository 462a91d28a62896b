//! The document's upstreams: `upstream` (one unnamed server, as before) and `upstreams` (named
//! ones: `{"github": {...}, "files": {...}}`) — how each is reached (Streamable HTTP `url`, a
//! stdio `command`, a Worker `service` binding), the headers sent to it (with `${NAME}` secret
//! references, resolved by the shell), its namespace `prefix`, its group's `title`, and how often
//! its lists are fetched again.

use serde_json::{Map, Value};

use crate::error::{type_name, Error, Result};

/// Default seconds between two refreshes of the upstream's lists.
pub const DEFAULT_REFRESH_SECONDS: u64 = 300;

/// An upstream's budgets (`limits` in its entry): what one upstream may cost the gateway, so a
/// hostile or broken one cannot take the others down with the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Items it may list per kind (tools, prompts, resources, templates): `maxItems`.
    pub max_items: usize,
    /// Bytes of all its list pages in one refresh: `maxListBytes`.
    pub max_list_bytes: usize,
    /// Bytes of one answer: `maxAnswerBytes`.
    pub max_answer_bytes: usize,
    /// Milliseconds one forwarded exchange may take, end to end: `callTimeoutSeconds`.
    pub call_ms: u64,
    /// Milliseconds one request of the gateway's sign-in to this upstream (its protected
    /// resource metadata, its authorization server's metadata, registration and token endpoints)
    /// may take: `signInTimeoutSeconds`. Shorter than [`Limits::call_ms`], since these requests
    /// run inside a call: a party of the sign-in that does not answer is named by its own
    /// deadline, not blamed on the upstream by the call's.
    pub sign_in_ms: u64,
}

/// The default of `signInTimeoutSeconds`, ms, when `callTimeoutSeconds` is at least twice it
/// (else half of `callTimeoutSeconds`).
pub const DEFAULT_SIGN_IN_MS: u64 = 10_000;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_items: 10_000,
            max_list_bytes: 32 << 20,
            max_answer_bytes: 16 << 20,
            call_ms: 30_000,
            sign_in_ms: DEFAULT_SIGN_IN_MS,
        }
    }
}

impl Limits {
    fn parse(v: Option<&Value>, path: &str) -> Result<Limits> {
        let mut l = Limits::default();
        let o = match v {
            None | Some(Value::Null) => return Ok(l),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(Error::Catalog(format!(
                "{path}.limits must be an object such as {{\"maxItems\": 10000, \"callTimeoutSeconds\": 30}}, got {}",
                type_name(other)
            )))
            }
        };
        const KEYS: [&str; 5] = [
            "maxItems",
            "maxListBytes",
            "maxAnswerBytes",
            "callTimeoutSeconds",
            "signInTimeoutSeconds",
        ];
        if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "{path}.limits has an unknown field \"{k}\"; expected {}",
                KEYS.join(", ")
            )));
        }
        let int = |k: &str, max: u64| -> Result<Option<u64>> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v.as_u64().filter(|n| (1..=max).contains(n)).map(Some).ok_or_else(|| {
                    Error::Catalog(format!("{path}.limits.{k} must be an integer from 1 to {max}, got {v}"))
                }),
            }
        };
        if let Some(n) = int("maxItems", 1_000_000)? {
            l.max_items = n as usize;
        }
        if let Some(n) = int("maxListBytes", 1 << 30)? {
            l.max_list_bytes = n as usize;
        }
        if let Some(n) = int("maxAnswerBytes", 1 << 30)? {
            l.max_answer_bytes = n as usize;
        }
        if let Some(n) = int("callTimeoutSeconds", 3_600)? {
            l.call_ms = n * 1000;
        }
        l.sign_in_ms = match int("signInTimeoutSeconds", 3_600)? {
            Some(n) if n * 1000 >= l.call_ms => {
                return Err(Error::Catalog(format!(
                    "{path}.limits.signInTimeoutSeconds ({n}) must be shorter than callTimeoutSeconds ({}): the sign-in's requests run inside a call",
                    l.call_ms / 1000
                )))
            }
            Some(n) => n * 1000,
            None => DEFAULT_SIGN_IN_MS.min(l.call_ms / 2),
        };
        Ok(l)
    }
}

/// How an https:// upstream is spoken to beyond the platform's trust store (`caFile`,
/// `clientCert`, `clientKey` in its entry): PEM file paths, as written (a relative one is
/// resolved by the shell against the document's folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tls {
    /// CA certificates trusted for this upstream besides the platform's: `caFile`.
    pub ca_file: Option<String>,
    /// The client certificate (chain) shown to it (mTLS): `clientCert`.
    pub client_cert: Option<String>,
    /// That certificate's private key: `clientKey`.
    pub client_key: Option<String>,
}

impl Tls {
    fn parse(o: &Map<String, Value>, path: &str, transport: &Transport) -> Result<Tls> {
        let file = |k: &str| -> Result<Option<String>> {
            match opt_string(o, k, path)? {
                Some(f) if f.trim().is_empty() => Err(Error::Catalog(format!(
                    "{path}.{k} must name a PEM file, got an empty string"
                ))),
                f => Ok(f),
            }
        };
        let tls = Tls {
            ca_file: file("caFile")?,
            client_cert: file("clientCert")?,
            client_key: file("clientKey")?,
        };
        if tls == Tls::default() {
            return Ok(tls);
        }
        let https = matches!(transport, Transport::Http(u) if u.starts_with("https://"));
        if !https {
            let k = ["caFile", "clientCert", "clientKey"]
                .into_iter()
                .find(|k| o.get(*k).is_some_and(|v| !v.is_null()))
                .unwrap_or("caFile");
            return Err(Error::Catalog(format!(
                "{path}.{k} is only for an upstream reached at an https:// url"
            )));
        }
        match (&tls.client_cert, &tls.client_key) {
            (Some(_), None) => Err(Error::Catalog(format!(
                "{path}.clientCert needs clientKey too (the PEM file of the certificate's private key)"
            ))),
            (None, Some(_)) => Err(Error::Catalog(format!(
                "{path}.clientKey needs clientCert too (the PEM file of the client certificate)"
            ))),
            _ => Ok(tls),
        }
    }
}

/// How an upstream is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at this endpoint.
    Http(String),
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout (native server only).
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables added to ours (values may reference secrets, `${NAME}`).
        env: Vec<(String, String)>,
        /// Its working directory.
        cwd: Option<String>,
    },
    /// Another Cloudflare Worker reached through this service binding (Worker only).
    Service(String),
}

/// One upstream server a gateway fronts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Its name in `upstreams` (empty for the document's unnamed `upstream`): the group its items
    /// belong to, and what errors, the log and the status name.
    pub name: String,
    /// The group's title.
    pub title: Option<String>,
    /// Put before its tools' and prompts' names (default `<name>_`; none for the unnamed one).
    pub prefix: String,
    /// How it is reached.
    pub transport: Transport,
    /// Headers sent with every request, as written (`${NAME}` not yet resolved).
    pub headers: Vec<(String, String)>,
    /// Milliseconds after which the cached lists are fetched again.
    pub refresh_ms: i64,
    /// Whether a tool's `readOnlyHint` / `destructiveHint` become the tags `read-only` /
    /// `destructive`.
    pub tags_from_annotations: bool,
    /// Its budgets.
    pub limits: Limits,
    /// Its TLS settings (https:// only).
    pub tls: Tls,
    /// Whether a tool name longer than 64 characters after the prefix is listed shortened
    /// (`"longNames": "shorten"`) rather than refused (`"refuse"`, the default).
    pub shorten_long_names: bool,
    /// How the gateway signs in to it as an OAuth 2.1 client (`auth`; HTTP upstreams only).
    pub auth: Option<OAuth>,
}

/// Which OAuth grant the gateway uses for an upstream (`auth.grant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Grant {
    /// A person signs in once (`mcp-sieve login NAME`), the gateway refreshes: `authorization_code`.
    #[default]
    AuthorizationCode,
    /// The gateway gets its own token, no person involved: `client_credentials`.
    ClientCredentials,
}

/// An upstream's `auth`: `"oauth"`, or `{"type": "oauth", "clientId", "clientSecret", "scopes",
/// "grant", "clientMetadataUrl"}`. The tokens themselves are never in the document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuth {
    /// A client id registered with the upstream's authorization server beforehand: `clientId`.
    pub client_id: Option<String>,
    /// Its secret, as written (`${NAME}` references, resolved by the shell): `clientSecret`.
    pub client_secret: Option<String>,
    /// The https URL of this gateway's Client ID Metadata Document, used as its client id where
    /// the authorization server supports such documents: `clientMetadataUrl`.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for (none: the upstream's challenge, else its `scopes_supported`).
    pub scopes: Vec<String>,
    /// The grant: `grant`.
    pub grant: Grant,
}

impl OAuth {
    fn parse(v: &Value, path: &str) -> Result<OAuth> {
        let path = format!("{path}.auth");
        let o = match v {
            Value::String(s) if s == "oauth" => return Ok(OAuth::default()),
            Value::Object(o) => o,
            other => {
                return Err(Error::Catalog(format!(
                    "{path} must be \"oauth\" or an object such as {{\"type\": \"oauth\", \"scopes\": [\"read\"]}}, got {other}"
                )))
            }
        };
        const KEYS: [&str; 6] = [
            "type",
            "clientId",
            "clientSecret",
            "clientMetadataUrl",
            "scopes",
            "grant",
        ];
        if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "{path} has an unknown field \"{k}\"; expected {}",
                KEYS.join(", ")
            )));
        }
        match o.get("type") {
            Some(Value::String(t)) if t == "oauth" => {}
            other => {
                return Err(Error::Catalog(format!(
                    "{path}.type must be \"oauth\", got {}",
                    other.map_or("nothing".to_string(), |v| v.to_string())
                )))
            }
        }
        let grant = match o.get("grant") {
            None | Some(Value::Null) => Grant::AuthorizationCode,
            Some(Value::String(g)) if g == "authorization_code" => Grant::AuthorizationCode,
            Some(Value::String(g)) if g == "client_credentials" => Grant::ClientCredentials,
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "{path}.grant must be \"authorization_code\" or \"client_credentials\", got {other}"
                )))
            }
        };
        let scopes = crate::json::str_array(o.get("scopes"), &format!("{path}.scopes")).map_err(Error::in_catalog)?;
        if let Some(s) = scopes.iter().find(|s| s.is_empty() || s.contains(' ')) {
            return Err(Error::Catalog(format!(
                "{path}.scopes holds one scope per string, without spaces, got \"{s}\""
            )));
        }
        let client_secret = opt_string(o, "clientSecret", &path)?;
        if let Some(s) = &client_secret {
            crate::secret_refs::check(s, &format!("{path}.clientSecret"))?;
        }
        let client_metadata_url = opt_string(o, "clientMetadataUrl", &path)?;
        if let Some(u) = &client_metadata_url {
            let has_path = u
                .strip_prefix("https://")
                .and_then(|r| r.find('/'))
                .is_some_and(|i| i > 0);
            if !has_path {
                return Err(Error::Catalog(format!(
                    "{path}.clientMetadataUrl must be an https:// URL with a path (where the client metadata document is served), got \"{u}\""
                )));
            }
        }
        Ok(OAuth {
            client_id: opt_string(o, "clientId", &path)?.filter(|s| !s.is_empty()),
            client_secret,
            client_metadata_url,
            scopes,
            grant,
        })
    }
}

/// Headers the conversation itself sets: an upstream's `headers` may not replace them.
const RESERVED: [&str; 4] = ["content-type", "accept", "mcp-session-id", "mcp-protocol-version"];

const FIELDS: [&str; 17] = [
    "url",
    "command",
    "args",
    "env",
    "cwd",
    "service",
    "headers",
    "prefix",
    "title",
    "refreshSeconds",
    "tagsFromAnnotations",
    "limits",
    "caFile",
    "clientCert",
    "clientKey",
    "longNames",
    "auth",
];

fn opt_string(o: &Map<String, Value>, key: &str, path: &str) -> Result<Option<String>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(Error::Catalog(format!(
            "{path}.{key} must be a string, got {}",
            type_name(other)
        ))),
    }
}

impl Upstream {
    /// Reads `upstream` (absent or null: no gateway); errors name the bad field.
    pub fn parse(v: Option<&Value>) -> Result<Option<Upstream>> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Self::parse_one("", v, "upstream").map(Some),
        }
    }

    /// Reads the document's `upstream` and `upstreams` together (the unnamed one first, then the
    /// named ones in name order); errors name the bad field.
    pub fn parse_all(one: Option<&Value>, named: Option<&Value>) -> Result<Vec<Upstream>> {
        let mut all: Vec<Upstream> = Self::parse(one)?.into_iter().collect();
        match named {
            None | Some(Value::Null) => {}
            Some(Value::Object(o)) => {
                let mut names: Vec<&String> = o.keys().collect();
                names.sort();
                for name in names {
                    let ok = !name.is_empty()
                        && name.len() <= 64
                        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if !ok {
                        return Err(Error::Catalog(format!(
                            "upstreams[\"{name}\"]: an upstream's name must be 1 to 64 letters, digits, '_' or '-'"
                        )));
                    }
                    all.push(Self::parse_one(name, &o[name], &format!("upstreams.{name}"))?);
                }
            }
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "upstreams must be an object of name → upstream, such as {{\"github\": {{\"url\": \"https://example.com/mcp\"}}}}, got {}",
                    type_name(other)
                )))
            }
        }
        Ok(all)
    }

    fn parse_one(name: &str, v: &Value, path: &str) -> Result<Upstream> {
        let obj = match v {
            Value::Object(o) => o,
            other => {
                return Err(Error::Catalog(format!(
                    "{path} must be an object such as {{\"url\": \"https://example.com/mcp\", \"refreshSeconds\": 300}}, got {}",
                    type_name(other)
                )))
            }
        };
        if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(Error::Catalog(format!(
                "{path} has an unknown field \"{k}\"; expected {}",
                FIELDS.join(", ")
            )));
        }
        let given: Vec<&str> = ["url", "command", "service"]
            .into_iter()
            .filter(|k| obj.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        let transport = match given.as_slice() {
            ["url"] => match &obj["url"] {
                Value::String(s) if s.starts_with("http://") || s.starts_with("https://") => Transport::Http(s.clone()),
                Value::String(s) => {
                    return Err(Error::Catalog(format!(
                        "{path}.url must be an http:// or https:// URL, got \"{s}\""
                    )))
                }
                other => {
                    return Err(Error::Catalog(format!(
                        "{path}.url must be a string, got {}",
                        type_name(other)
                    )))
                }
            },
            ["command"] => {
                let command = opt_string(obj, "command", path)?.unwrap_or_default();
                if command.is_empty() {
                    return Err(Error::Catalog(format!("{path}.command must not be empty")));
                }
                let args = crate::json::str_array(obj.get("args"), &format!("{path}.args")).map_err(Error::in_catalog)?;
                Transport::Stdio {
                    command,
                    args,
                    env: crate::json::string_map(obj.get("env"), &format!("{path}.env"))?,
                    cwd: opt_string(obj, "cwd", path)?,
                }
            }
            ["service"] => match opt_string(obj, "service", path)? {
                Some(b) if !b.is_empty() => Transport::Service(b),
                _ => return Err(Error::Catalog(format!("{path}.service must name a service binding"))),
            },
            [] => {
                return Err(Error::Catalog(format!(
                    "{path}.url is required (the upstream's MCP endpoint), or command (a stdio server), or service (a Worker service binding)"
                )))
            }
            many => {
                return Err(Error::Catalog(format!(
                    "{path} must have exactly one of url, command, service; got {}",
                    many.join(" and ")
                )))
            }
        };
        for k in ["args", "env", "cwd"] {
            if obj.contains_key(k) && !matches!(transport, Transport::Stdio { .. }) {
                return Err(Error::Catalog(format!(
                    "{path}.{k} is only for a stdio upstream (command)"
                )));
            }
        }
        let headers = crate::secret_refs::headers(obj.get("headers"), &format!("{path}.headers"))?;
        for (k, _) in &headers {
            if RESERVED.contains(&k.to_ascii_lowercase().as_str()) {
                return Err(Error::Catalog(format!(
                    "{path}.headers[\"{k}\"]: the gateway sets this header itself"
                )));
            }
        }
        if !headers.is_empty() && matches!(transport, Transport::Stdio { .. }) {
            return Err(Error::Catalog(format!(
                "{path}.headers is for HTTP and service upstreams; give a stdio server its secrets in env"
            )));
        }
        if let Transport::Stdio { env, .. } = &transport {
            for (k, v) in env {
                crate::secret_refs::check(v, &format!("{path}.env[\"{k}\"]"))?;
            }
        }
        let prefix = match opt_string(obj, "prefix", path)? {
            Some(p) => p,
            None if name.is_empty() => String::new(),
            None => format!("{name}_"),
        };
        let secs = match obj.get("refreshSeconds") {
            None | Some(Value::Null) => DEFAULT_REFRESH_SECONDS,
            Some(v) => v.as_u64().filter(|n| (1..=86_400).contains(n)).ok_or_else(|| {
                Error::Catalog(format!(
                    "{path}.refreshSeconds must be an integer from 1 to 86400, got {v}"
                ))
            })?,
        };
        let tags_from_annotations = match obj.get("tagsFromAnnotations") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(Error::Catalog(format!(
                    "{path}.tagsFromAnnotations must be true or false, got {}",
                    type_name(other)
                )))
            }
        };
        let tls = Tls::parse(obj, path, &transport)?;
        let auth = match obj.get("auth") {
            None | Some(Value::Null) => None,
            Some(v) => Some(OAuth::parse(v, path)?),
        };
        if auth.is_some() {
            if !matches!(transport, Transport::Http(_)) {
                return Err(Error::Catalog(format!(
                    "{path}.auth is for an upstream reached at a url (OAuth is an HTTP sign-in)"
                )));
            }
            if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
                return Err(Error::Catalog(format!(
                    "{path}.auth and {path}.headers[\"Authorization\"] both say how to sign in: keep one"
                )));
            }
        }
        Ok(Upstream {
            auth,
            name: name.into(),
            title: opt_string(obj, "title", path)?,
            prefix,
            transport,
            headers,
            refresh_ms: secs as i64 * 1000,
            tags_from_annotations,
            limits: Limits::parse(obj.get("limits"), path)?,
            tls,
            shorten_long_names: match obj.get("longNames") {
                None | Some(Value::Null) => false,
                Some(Value::String(s)) if s == "refuse" => false,
                Some(Value::String(s)) if s == "shorten" => true,
                Some(other) => {
                    return Err(Error::Catalog(format!(
                        "{path}.longNames must be \"shorten\" or \"refuse\" (a tool name over 64 characters with its prefix), got {other}"
                    )))
                }
            },
        })
    }

    /// Its Streamable HTTP endpoint, if it is reached over HTTP.
    pub fn url(&self) -> Option<&str> {
        match &self.transport {
            Transport::Http(u) => Some(u),
            _ => None,
        }
    }

    /// How errors and the log name it: `upstream "github"`, or `the upstream`.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            "the upstream".into()
        } else {
            format!("upstream \"{}\"", self.name)
        }
    }

    /// Whether lists fetched at `fetched_ms` are due for a refresh at `now_ms`.
    pub fn stale(&self, fetched_ms: i64, now_ms: i64) -> bool {
        now_ms.saturating_sub(fetched_ms) >= self.refresh_ms
    }

    /// Its headers with every `${NAME}` replaced by the secret `secret(NAME)` gives (the
    /// environment, the Worker's secrets and variables). A missing secret is a configuration
    /// error naming it and where it is used — never a request with an empty token. Error messages
    /// never hold a secret's value.
    pub fn resolved_headers(&self, secret: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>> {
        self.headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.substitute(v, &format!("headers[\"{k}\"]"), secret)?)))
            .collect()
    }

    /// The names of the secrets its headers and `env` reference (`${NAME}`), each once.
    pub fn references(&self) -> Vec<String> {
        let env: &[(String, String)] = match &self.transport {
            Transport::Stdio { env, .. } => env,
            _ => &[],
        };
        let mut names = Vec::new();
        let secret = self
            .auth
            .as_ref()
            .and_then(|a| a.client_secret.clone())
            .map(|s| (String::new(), s));
        for (_, v) in self.headers.iter().chain(env).chain(secret.iter()) {
            let mut rest = v.as_str();
            while let Some(at) = rest.find("${") {
                let tail = &rest[at + 2..];
                let Some(end) = tail.find('}') else { break };
                if !names.iter().any(|n: &String| n == &tail[..end]) {
                    names.push(tail[..end].to_string());
                }
                rest = &tail[end + 1..];
            }
        }
        names
    }

    /// Its `auth.clientSecret` with its secret references resolved (see
    /// [`Upstream::resolved_headers`]).
    pub fn resolved_client_secret(&self, secret: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>> {
        match self.auth.as_ref().and_then(|a| a.client_secret.as_deref()) {
            Some(v) => self.substitute(v, "auth.clientSecret", secret).map(Some),
            None => Ok(None),
        }
    }

    /// Whether it is sent a static `Authorization` header (`headers`): then a Bearer challenge
    /// does not make it an OAuth upstream.
    pub fn static_authorization(&self) -> bool {
        self.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
    }

    /// A stdio upstream's `env` with its secret references resolved (see
    /// [`Upstream::resolved_headers`]).
    pub fn resolved_env(&self, secret: &dyn Fn(&str) -> Option<String>) -> Result<Vec<(String, String)>> {
        match &self.transport {
            Transport::Stdio { env, .. } => env
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.substitute(v, &format!("env[\"{k}\"]"), secret)?)))
                .collect(),
            _ => Ok(Vec::new()),
        }
    }

    fn substitute(&self, value: &str, field: &str, secret: &dyn Fn(&str) -> Option<String>) -> Result<String> {
        let whose = if self.name.is_empty() {
            "upstream".to_string()
        } else {
            format!("upstreams.{}", self.name)
        };
        crate::secret_refs::substitute(value, &format!("{whose}.{field}"), secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn auth_is_oauth_with_its_fields_checked_by_name() {
        let one = |v: Value| Upstream::parse(Some(&v));
        let u = one(json!({"url": "https://x/mcp", "auth": "oauth"})).unwrap().unwrap();
        assert_eq!(u.auth, Some(OAuth::default()));
        let u = one(json!({"url": "https://x/mcp", "auth": {"type": "oauth", "clientId": "id", "clientSecret": "${S}", "scopes": ["a", "b"], "grant": "client_credentials"}}))
            .unwrap()
            .unwrap();
        let a = u.auth.clone().unwrap();
        assert_eq!(
            (a.client_id.as_deref(), a.grant, a.scopes.len()),
            (Some("id"), Grant::ClientCredentials, 2)
        );
        assert_eq!(u.references(), vec!["S".to_string()]);
        assert_eq!(
            u.resolved_client_secret(&|_| Some("s3".into())).unwrap().as_deref(),
            Some("s3")
        );
        assert!(u
            .resolved_client_secret(&|_| None)
            .unwrap_err()
            .to_string()
            .contains("auth.clientSecret uses the secret ${S}"));
        assert_eq!(one(json!({"url": "https://x/mcp"})).unwrap().unwrap().auth, None);
        for (doc, want) in [
            (
                json!({"url": "https://x", "auth": "basic"}),
                "upstream.auth must be \"oauth\" or an object",
            ),
            (
                json!({"url": "https://x", "auth": {"type": "oauth", "scope": []}}),
                "upstream.auth has an unknown field \"scope\"",
            ),
            (
                json!({"url": "https://x", "auth": {"clientId": "a"}}),
                "upstream.auth.type must be \"oauth\"",
            ),
            (
                json!({"url": "https://x", "auth": {"type": "oauth", "grant": "password"}}),
                "upstream.auth.grant must be",
            ),
            (
                json!({"url": "https://x", "auth": {"type": "oauth", "scopes": ["a b"]}}),
                "upstream.auth.scopes holds one scope",
            ),
            (
                json!({"url": "https://x", "auth": {"type": "oauth", "scopes": "a"}}),
                "upstream.auth.scopes",
            ),
            (
                json!({"url": "https://x", "auth": {"type": "oauth", "clientSecret": "${1}"}}),
                "upstream.auth.clientSecret: a secret reference",
            ),
            (
                json!({"url": "https://x", "auth": {"type": "oauth", "clientMetadataUrl": "http://a/b"}}),
                "upstream.auth.clientMetadataUrl must be an https://",
            ),
            (
                json!({"command": "node", "auth": "oauth"}),
                "upstream.auth is for an upstream reached at a url",
            ),
            (
                json!({"url": "https://x", "auth": "oauth", "headers": {"authorization": "Bearer ${T}"}}),
                "keep one",
            ),
        ] {
            let e = one(doc.clone()).unwrap_err().to_string();
            assert!(e.contains(want), "{doc}: {e}");
        }
    }

    #[test]
    fn upstream_is_validated_with_field_names() {
        assert_eq!(Upstream::parse(None).unwrap(), None);
        let u = Upstream::parse(Some(&json!({"url": "http://127.0.0.1:9/mcp"})))
            .unwrap()
            .unwrap();
        assert_eq!(u.refresh_ms, 300_000);
        assert_eq!((u.prefix.as_str(), u.url()), ("", Some("http://127.0.0.1:9/mcp")));
        assert!(u.stale(0, 300_000) && !u.stale(1, 300_000));
        for (doc, want) in [
            (json!("x"), "upstream must be an object"),
            (json!({}), "upstream.url is required"),
            (json!({"url": 5}), "upstream.url must be a string"),
            (json!({"url": "ftp://x"}), "upstream.url must be an http"),
            (
                json!({"url": "http://x", "refreshSeconds": 0}),
                "upstream.refreshSeconds must be",
            ),
            (json!({"url": "http://x", "ttl": 1}), "unknown field \"ttl\""),
            (
                json!({"url": "http://x", "limits": 5}),
                "upstream.limits must be an object",
            ),
            (
                json!({"url": "http://x", "limits": {"maxItems": 0}}),
                "upstream.limits.maxItems must be an integer from 1",
            ),
            (
                json!({"url": "http://x", "limits": {"x": 1}}),
                "limits has an unknown field \"x\"",
            ),
            (
                json!({"url": "http://x", "command": "node"}),
                "exactly one of url, command, service; got url and command",
            ),
            (
                json!({"url": "http://x", "args": []}),
                "upstream.args is only for a stdio upstream",
            ),
            (
                json!({"url": "http://x", "headers": {"Accept": "x"}}),
                "sets this header itself",
            ),
            (json!({"url": "http://x", "headers": {"A": "${X"}}), "no closing"),
            (
                json!({"url": "http://x", "headers": {"A": "${1X}"}}),
                "must look like ${NAME}",
            ),
            (
                json!({"command": "node", "headers": {"A": "b"}}),
                "give a stdio server its secrets in env",
            ),
        ] {
            let e = Upstream::parse(Some(&doc)).unwrap_err().to_string();
            assert!(e.contains(want), "{e} should contain {want}");
        }
    }

    #[test]
    fn the_sign_in_deadline_is_shorter_than_the_call_deadline() {
        let limits =
            |l: Value| Upstream::parse(Some(&json!({"url": "http://x", "limits": l}))).map(|u| u.unwrap().limits);
        let d = limits(json!({})).unwrap();
        assert_eq!((d.call_ms, d.sign_in_ms), (30_000, 10_000));
        // Half of a short call deadline by default.
        assert_eq!(limits(json!({"callTimeoutSeconds": 4})).unwrap().sign_in_ms, 2_000);
        assert_eq!(limits(json!({"callTimeoutSeconds": 1})).unwrap().sign_in_ms, 500);
        assert_eq!(limits(json!({"signInTimeoutSeconds": 3})).unwrap().sign_in_ms, 3_000);
        let e = limits(json!({"callTimeoutSeconds": 5, "signInTimeoutSeconds": 5})).unwrap_err();
        assert!(
            e.to_string()
                .contains("upstream.limits.signInTimeoutSeconds (5) must be shorter than callTimeoutSeconds (5)"),
            "{e}"
        );
        assert!(limits(json!({"signInTimeoutSeconds": 0})).is_err());
    }

    #[test]
    fn named_upstreams_get_prefixes_and_secrets_resolve() {
        let all = Upstream::parse_all(
            Some(&json!({"url": "http://a/mcp"})),
            Some(&json!({
                "gh": {"url": "https://gh/mcp", "title": "GitHub", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
                "files": {"command": "npx", "args": ["x"], "env": {"K": "${K}"}, "prefix": "fs."}
            })),
        )
        .unwrap();
        let names: Vec<(&str, &str)> = all.iter().map(|u| (u.name.as_str(), u.prefix.as_str())).collect();
        assert_eq!(names, [("", ""), ("files", "fs."), ("gh", "gh_")]);
        let env = |n: &str| (n == "GH_TOKEN").then(|| "s3cret".to_string());
        assert_eq!(
            all[2].resolved_headers(&env).unwrap(),
            [("Authorization".to_string(), "Bearer s3cret".to_string())]
        );
        let e = all[1].resolved_env(&env).unwrap_err().to_string();
        assert!(
            e.contains("upstreams.files.env[\"K\"] uses the secret ${K}, which is not set"),
            "{e}"
        );
        let e = Upstream::parse_all(None, Some(&json!({"a b": {"url": "http://x"}}))).unwrap_err();
        assert!(e.to_string().contains("upstreams[\"a b\"]"));
    }

    #[test]
    fn tls_files_are_for_https_upstreams_and_a_key_goes_with_its_certificate() {
        let u = Upstream::parse(Some(&json!({
            "url": "https://api.example.com/mcp",
            "caFile": "ca.pem",
            "clientCert": "me.pem",
            "clientKey": "me.key"
        })))
        .unwrap()
        .unwrap();
        assert_eq!(u.tls.ca_file.as_deref(), Some("ca.pem"));
        assert_eq!(u.tls.client_cert.as_deref(), Some("me.pem"));
        assert_eq!(u.tls.client_key.as_deref(), Some("me.key"));
        let plain = Upstream::parse(Some(&json!({"url": "https://a.example/mcp"})))
            .unwrap()
            .unwrap();
        assert_eq!(plain.tls, Tls::default());
        for (doc, want) in [
            (
                json!({"url": "https://a.example/mcp", "caFile": 3}),
                "upstream.caFile must be a string, got a number",
            ),
            (
                json!({"url": "https://a.example/mcp", "caFile": " "}),
                "upstream.caFile must name a PEM file",
            ),
            (
                json!({"url": "http://a.example/mcp", "caFile": "ca.pem"}),
                "upstream.caFile is only for an upstream reached at an https:// url",
            ),
            (
                json!({"command": "srv", "clientCert": "c.pem", "clientKey": "k.pem"}),
                "upstream.clientCert is only for an upstream reached at an https:// url",
            ),
            (
                json!({"url": "https://a.example/mcp", "clientCert": "c.pem"}),
                "upstream.clientCert needs clientKey too",
            ),
            (
                json!({"url": "https://a.example/mcp", "clientKey": "k.pem"}),
                "upstream.clientKey needs clientCert too",
            ),
        ] {
            let e = Upstream::parse(Some(&doc)).unwrap_err().to_string();
            assert!(e.contains(want), "{doc}: {e}");
        }
        let e = Upstream::parse_all(
            None,
            Some(&json!({"gh": {"url": "https://a.example/mcp", "clientKey": false}})),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("upstreams.gh.clientKey must be a string, got a boolean"),
            "{e}"
        );
    }
}

#[cfg(feature = "gateway")]
/// Where each item of a gateway's merged lists came from, so a use reaches the right upstream
/// with the name that upstream knows (filled by `upstream::build`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    /// A tool's name as listed → (index of its upstream in `Catalog::upstreams`, its name there).
    pub tools: std::collections::HashMap<String, (usize, String)>,
    /// The same for prompts.
    pub prompts: std::collections::HashMap<String, (usize, String)>,
    /// A resource's URI → its upstream.
    pub resources: std::collections::HashMap<String, usize>,
    /// A resource template's text before its first `{` → its upstream (the longest match wins).
    pub templates: Vec<(String, usize)>,
    /// The upstreams (indices in `Catalog::upstreams`) whose items are not in the lists: down,
    /// or not fitting with the others (`sieve/explain` names them as `upstream-down:<name>`).
    pub down: Vec<usize>,
    /// Why each upstream of `down` is down (its last error, as the status shows it), filled by
    /// the gateway: a use of an item in its name space names it and why.
    pub why_down: Vec<(usize, String)>,
    /// The resource URIs and template spaces (`(template, key, upstream)`) the upstreams of
    /// `down` held when last up (`upstream::space::Claims`): a read of one names its upstream.
    pub down_uris: Vec<(bool, String, usize)>,
    /// The tool and prompt names the upstreams of `down` held when last up: a use of one names
    /// its upstream. An upstream of `down` found in neither this nor `down_uris` never listed
    /// (down since the start): what it serves is unknown, so its prefix's space names it.
    pub down_names: std::collections::HashMap<(crate::model::Kind, String), usize>,
    /// Items an upstream listed that were left out (index of the upstream, why): names that
    /// break the rules or belong to another upstream's space (`upstream::space`).
    pub refused: Vec<(usize, String)>,
    /// A rewritten tool's argument rules, by its listed name: a call's arguments are translated
    /// back with them before it leaves (`ArgRule::back`).
    pub arguments: std::collections::HashMap<String, Vec<super::ArgRule>>,
    /// Tool names over 64 characters listed shortened (index of the upstream, what became what).
    pub shortened: Vec<(usize, String)>,
}

#[cfg(feature = "gateway")]
impl Origins {
    /// The upstream serving `uri`: a listed resource, else the template with the longest literal
    /// start that `uri` begins with.
    pub fn resource(&self, uri: &str) -> Option<usize> {
        self.resources.get(uri).copied().or_else(|| {
            self.templates
                .iter()
                .filter(|(start, _)| uri.starts_with(start.as_str()))
                .max_by_key(|(start, _)| start.len())
                .map(|(_, i)| *i)
        })
    }

    /// The down upstream a tool or prompt `id` the lists lack is from: the one that held it when
    /// last up, else, of those down since the start, the one whose prefix is `id`'s longest start.
    pub fn down_holder(&self, kind: crate::model::Kind, id: &str, upstreams: &[Upstream]) -> Option<usize> {
        if let Some(&i) = self.down_names.get(&(kind, id.to_string())) {
            return Some(i);
        }
        self.never_listed()
            .filter_map(|i| Some((i, upstreams.get(i)?)))
            .filter(|(_, up)| id.starts_with(up.prefix.as_str()))
            .max_by_key(|(_, up)| up.prefix.len())
            .map(|(i, _)| i)
    }

    /// The down upstream that held resource `uri` when last up (the resource itself, or a
    /// template space that starts it; the longest wins).
    pub fn down_uri_holder(&self, uri: &str) -> Option<usize> {
        self.down_uris
            .iter()
            .filter(|(space, key, _)| {
                if *space {
                    uri.starts_with(key.as_str())
                } else {
                    uri == key
                }
            })
            .max_by_key(|(_, key, _)| key.len())
            .map(|&(_, _, i)| i)
    }

    /// The upstreams of `down` that never listed (what they serve is unknown): they hold no name
    /// and no URI.
    pub fn never_listed(&self) -> impl Iterator<Item = usize> + '_ {
        self.down
            .iter()
            .copied()
            .filter(|i| !self.down_names.values().any(|j| j == i) && !self.down_uris.iter().any(|(_, _, j)| j == i))
    }
}
