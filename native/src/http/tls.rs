//! How the native server reaches HTTP upstreams (and JWKS endpoints): one connector for every
//! client it builds. `https://` goes over rustls (ring) trusting the webpki roots, the platform's
//! store (`rustls-native-certs`: on Linux the system bundle, or `SSL_CERT_FILE` / `SSL_CERT_DIR`
//! in its place, as OpenSSL reads them) and an upstream's own `caFile`; an upstream may show a
//! client certificate (`clientCert` + `clientKey`, mTLS). ALPN offers `h2` and `http/1.1`: a
//! server that picks h2 is spoken to over HTTP/2. Proxies come from the environment as curl
//! reads them (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, upper or lower case; loopback
//! is proxied too unless `NO_PROXY` names it): https through a CONNECT tunnel, http in absolute
//! form. A failure says what went wrong in words (the certificate's issuer is unknown, a name
//! mismatch, an expired certificate, a refused tunnel), never just `client error (Connect)`.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use mcp_sieve::catalog::{Transport, Upstream};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{CertificateError, ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Longest a TCP connect (to the server or the proxy) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a kept-alive connection waits in the pool before it is closed rather than reused.
/// Servers close idle connections themselves (Node's `http` and uvicorn after 5 s): a request
/// written as the server closes its connection fails with "connection closed before message
/// completed", and a POST cannot be sent again (the server may have acted on it). So the pool
/// gives connections up a second before those servers do (hyper-util keeps them 90 s).
const POOL_IDLE: Duration = Duration::from_secs(4);
/// Largest proxy answer head to a CONNECT.
const MAX_PROXY_HEAD: usize = 16 * 1024;

/// The proxy variables curl reads, each pair in the order it reads them.
const PROXY_VARS: [[&str; 2]; 3] = [
    ["HTTPS_PROXY", "https_proxy"],
    ["HTTP_PROXY", "http_proxy"],
    ["ALL_PROXY", "all_proxy"],
];

/// Why a connection could not be made, in words (the host named; the upstream is named by
/// whoever reports it).
#[derive(Debug, Clone)]
pub struct ConnectError(String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

/// Why a TLS configuration could not be made from its files: each names the field (or variable)
/// and the file, with the reading's or rustls's error as source.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("{field}: cannot read {}: {source}", .path.display())]
    Read {
        /// The field that named the file.
        field: String,
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: io::Error,
    },
    /// A certificate file is not PEM.
    #[error("{field}: {} is not PEM certificates: {source}", .path.display())]
    NotPem {
        /// The field that named the file.
        field: String,
        /// The file.
        path: PathBuf,
        /// What the PEM reader found.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// A certificate file holds no certificate.
    #[error(
        "{field}: {} holds no certificate (expected PEM blocks \"-----BEGIN CERTIFICATE-----\")",
        .path.display()
    )]
    NoCertificate {
        /// The field that named the file.
        field: String,
        /// The file.
        path: PathBuf,
    },
    /// A `caFile` certificate rustls will not trust as a CA.
    #[error("{field}: {} holds a certificate rustls cannot use as a CA: {source}", .path.display())]
    NotCa {
        /// The field that named the file.
        field: String,
        /// The file.
        path: PathBuf,
        /// Why rustls refused it.
        #[source]
        source: rustls::Error,
    },
    /// A key file holds no private key.
    #[error(
        "{field}: {} holds no private key (expected PEM \"PRIVATE KEY\", \"RSA PRIVATE KEY\" or \"EC PRIVATE KEY\"): {source}",
        .path.display()
    )]
    NoKey {
        /// The field that named the file.
        field: String,
        /// The file.
        path: PathBuf,
        /// What the PEM reader found.
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    /// The crypto provider offers no TLS version (never with ring).
    #[error("no TLS version to offer: {0}")]
    NoVersion(#[source] rustls::Error),
    /// `clientKey` is a key, but not the certificate's.
    #[error("clientKey is not the private key of the certificate in clientCert")]
    KeyNotCertificates(#[source] rustls::Error),
    /// rustls refused the certificate and key together otherwise.
    #[error("clientKey does not go with clientCert: {0}")]
    KeyRefused(#[source] rustls::Error),
    /// An error without a field of its own, placed at the upstream (`upstreams.gh: …`).
    #[error("{at}: {source}")]
    At {
        /// `upstreams.<name>` or `upstream`.
        at: String,
        /// The error.
        #[source]
        source: Box<TlsError>,
    },
}

impl TlsError {
    /// The error placed at upstream `at` unless it names a field already.
    fn at(self, at: String) -> TlsError {
        match self {
            TlsError::NoVersion(_) | TlsError::KeyNotCertificates(_) | TlsError::KeyRefused(_) => TlsError::At {
                at,
                source: Box::new(self),
            },
            named => named,
        }
    }
}

/// Why a proxy variable's URL will not work.
#[derive(Debug, thiserror::Error)]
pub enum ProxyUrlError {
    /// It does not parse as a URI.
    #[error("not a proxy URL such as http://proxy.example:3128 ({0})")]
    Parse(#[from] hyper::http::uri::InvalidUri),
    /// It names no host.
    #[error("not a proxy URL such as http://proxy.example:3128 (no host)")]
    NoHost,
    /// Its scheme is not `http` (the scheme).
    #[error("a {0}:// proxy is not supported (only an http:// proxy, which tunnels https with CONNECT)")]
    Scheme(String),
}

/// A proxy variable that will not work (the value is not quoted: it may hold a password).
#[derive(Debug, thiserror::Error)]
#[error("{name}: {source}")]
pub struct ProxyError {
    /// The variable, as set (`HTTPS_PROXY` or `https_proxy`, …).
    pub name: &'static str,
    /// What is wrong with its value.
    #[source]
    pub source: ProxyUrlError,
}

/// Why the clients of the upstreams could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    /// An upstream's TLS files.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// An upstream's URL does not parse as a request URI.
    #[error("{at}.url: {source}")]
    Url {
        /// `upstreams.<name>` or `upstream`.
        at: String,
        /// Why it does not parse.
        #[source]
        source: hyper::http::uri::InvalidUri,
    },
    /// Two upstreams on one origin with different TLS files.
    #[error(
        "{at}: another upstream at {origin} has other caFile/clientCert/clientKey settings; upstreams on one origin share its connections: give them the same TLS settings"
    )]
    SharedOrigin {
        /// `upstreams.<name>`.
        at: String,
        /// The origin both are on.
        origin: String,
    },
    /// A proxy variable that does not parse (a connection would otherwise go around it).
    #[error(transparent)]
    Proxy(#[from] ProxyError),
}

/// The trust of every connection: the webpki roots and the platform's store, read once.
fn base_roots() -> &'static (RootCertStore, Vec<String>) {
    static ROOTS: OnceLock<(RootCertStore, Vec<String>)> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let native = rustls_native_certs::load_native_certs();
        let _ = roots.add_parsable_certificates(native.certs);
        let problems = native.errors.iter().map(|e| e.to_string()).collect();
        (roots, problems)
    })
}

/// What is wrong with the platform's trust store as read (an unreadable `SSL_CERT_FILE`): the
/// webpki roots still serve, so this is a warning.
pub fn store_problems() -> Vec<String> {
    base_roots()
        .1
        .iter()
        .map(|e| format!("the platform's trust store: {e} (check SSL_CERT_FILE and SSL_CERT_DIR)"))
        .collect()
}

fn config_with(
    roots: RootCertStore,
    client: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::NoVersion)?
        .with_root_certificates(roots);
    let mut config = match client {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => TlsError::KeyNotCertificates(e),
            e => TlsError::KeyRefused(e),
        })?,
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The configuration of connections without settings of their own.
fn default_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            // The ring provider offers the default versions: this cannot fail, kept total anyway.
            let config = config_with(base_roots().0.clone(), None).unwrap_or_else(|_| {
                ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_protocol_versions(rustls::DEFAULT_VERSIONS)
                    .map(|b| b.with_root_certificates(base_roots().0.clone()).with_no_client_auth())
                    .unwrap_or_else(|_| unreachable_config())
            });
            Arc::new(config)
        })
        .clone()
}

/// Never reached (the ring provider supports TLS 1.2 and 1.3); a config that trusts nothing.
fn unreachable_config() -> ClientConfig {
    ClientConfig::builder()
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth()
}

/// Where errors name upstream `up`'s fields: `upstreams.gh` or `upstream`.
fn field_path(up: &Upstream) -> String {
    if up.name.is_empty() {
        "upstream".into()
    } else {
        format!("upstreams.{}", up.name)
    }
}

fn resolve(file: &str, folder: &Path) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        folder.join(p)
    }
}

fn read_certs(path: &Path, field: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let text = std::fs::read(path).map_err(|source| TlsError::Read {
        field: field.into(),
        path: path.into(),
        source,
    })?;
    let certs = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::NotPem {
            field: field.into(),
            path: path.into(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            field: field.into(),
            path: path.into(),
        });
    }
    Ok(certs)
}

/// The TLS configuration of upstream `up` (its `caFile`, `clientCert`, `clientKey`, relative to
/// `folder`, the document's folder); errors name the field and the file.
pub fn upstream_config(up: &Upstream, folder: &Path) -> Result<Arc<ClientConfig>, TlsError> {
    let tls = &up.tls;
    if tls.ca_file.is_none() && tls.client_cert.is_none() {
        return Ok(default_config());
    }
    let at = field_path(up);
    let (ca_field, cert_field, key_field) = (
        format!("{at}.caFile"),
        format!("{at}.clientCert"),
        format!("{at}.clientKey"),
    );
    let ca = tls.ca_file.as_ref().map(|f| resolve(f, folder));
    let client = match (&tls.client_cert, &tls.client_key) {
        (Some(c), Some(k)) => Some((resolve(c, folder), resolve(k, folder))),
        _ => None,
    };
    files_config(
        ca.as_deref().map(|f| (f, ca_field.as_str())),
        client
            .as_ref()
            .map(|(c, k)| ((c.as_path(), cert_field.as_str()), (k.as_path(), key_field.as_str()))),
    )
    .map_err(|e| e.at(at))
}

/// A file and the field (or variable) that named it, which its errors name.
pub type NamedFile<'a> = (&'a Path, &'a str);

/// A TLS configuration trusting the platform's and the webpki roots and the PEM certificates of
/// `ca`, showing the certificate chain and key of `client` (mTLS).
pub fn files_config(
    ca: Option<NamedFile<'_>>,
    client: Option<(NamedFile<'_>, NamedFile<'_>)>,
) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = base_roots().0.clone();
    if let Some((f, field)) = ca {
        for cert in read_certs(f, field)? {
            roots.add(cert).map_err(|source| TlsError::NotCa {
                field: field.into(),
                path: f.into(),
                source,
            })?;
        }
    }
    let client = match client {
        Some(((c, cert_field), (kpath, field))) => {
            let chain = read_certs(c, cert_field)?;
            let text = std::fs::read(kpath).map_err(|source| TlsError::Read {
                field: field.into(),
                path: kpath.into(),
                source,
            })?;
            let key = PrivateKeyDer::from_pem_slice(&text).map_err(|source| TlsError::NoKey {
                field: field.into(),
                path: kpath.into(),
                source,
            })?;
            Some((chain, key))
        }
        None => None,
    };
    config_with(roots, client).map(Arc::new)
}

/// What the proxy variables say that will not work (one that does not parse, a scheme this
/// connector does not speak). The values are not quoted: they may hold a password.
pub fn proxy_problems() -> Vec<ProxyError> {
    let mut out = Vec::new();
    if std::env::var_os("REQUEST_METHOD").is_some() {
        return out; // in a CGI environment the proxy variables are ignored (httpoxy), as curl does
    }
    for pair in PROXY_VARS {
        let Some((name, value)) = pair.iter().find_map(|n| std::env::var(n).ok().map(|v| (*n, v))) else {
            continue;
        };
        if value.trim().is_empty() {
            continue;
        }
        if let Err(source) = proxy_url(&value) {
            out.push(ProxyError { name, source });
        }
    }
    out
}

/// Checks one proxy URL as the connector will use it.
fn proxy_url(value: &str) -> Result<(), ProxyUrlError> {
    let uri: Uri = value.trim().parse()?;
    if uri.authority().is_none() {
        return Err(ProxyUrlError::NoHost);
    }
    match uri.scheme_str() {
        None | Some("http") => Ok(()),
        Some(s) => Err(ProxyUrlError::Scheme(s.into())),
    }
}

/// The environment's proxies. `NO_PROXY=*` bypasses every host, IP addresses included, as in
/// curl (hyper-util's matcher applies `*` to names only).
fn env_matcher() -> Matcher {
    let no = ["NO_PROXY", "no_proxy"].iter().find_map(|n| std::env::var(n).ok());
    if no.is_some_and(|v| no_proxy_all(&v)) {
        return Matcher::builder().build();
    }
    Matcher::from_env()
}

/// Whether a `NO_PROXY` value bypasses every host.
fn no_proxy_all(value: &str) -> bool {
    value.split(',').any(|e| e.trim() == "*")
}

/// A connector: TCP (direct or through the environment's proxy), then TLS for `https://`.
#[derive(Clone)]
pub struct Connector {
    http: HttpConnector,
    tls: TlsConnector,
    proxy: Arc<Matcher>,
}

impl Connector {
    /// A connector with `config` and the environment's proxies.
    pub fn new(config: Arc<ClientConfig>) -> Connector {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        Connector {
            http,
            tls: TlsConnector::from(config),
            proxy: Arc::new(env_matcher()),
        }
    }

    /// The connector for connections without settings of their own.
    pub fn plain() -> Connector {
        Connector::new(default_config())
    }

    async fn connect(mut self, dst: Uri) -> Result<Stream, ConnectError> {
        let fail = |m: String| ConnectError(m);
        let https = match dst.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            other => {
                return Err(fail(format!(
                    "cannot speak {} (only http and https)",
                    other.unwrap_or("a URL without a scheme")
                )))
            }
        };
        let host = dst
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = dst.port_u16().unwrap_or(if https { 443 } else { 80 });
        let target = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let proxy = self.proxy.intercept(&dst);
        let tcp = match &proxy {
            None => self.tcp(dst.clone(), &target).await?,
            Some(p) => {
                let via = p.uri().clone();
                if via.scheme_str() != Some("http") {
                    return Err(fail(format!(
                        "the proxy for {target} is {}://: only an http:// proxy is supported",
                        via.scheme_str().unwrap_or("?")
                    )));
                }
                let named = via.authority().map(|a| a.to_string()).unwrap_or_default();
                let mut tcp = self.tcp(via, &format!("the proxy {named}")).await?;
                if !https {
                    // http through the proxy: hyper sends the request in absolute form.
                    return Ok(Stream::Plain {
                        io: TokioIo::new(tcp),
                        proxied: true,
                    });
                }
                tunnel(&mut tcp, &target, &named, p.basic_auth()).await?;
                tcp
            }
        };
        if !https {
            return Ok(Stream::Plain {
                io: TokioIo::new(tcp),
                proxied: false,
            });
        }
        let name = ServerName::try_from(host.clone()).map_err(|e| {
            fail(format!(
                "TLS with {host} failed: {host} is not a valid server name ({e})"
            ))
        })?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| fail(format!("TLS with {host} failed: {}", tls_reason(&e, &host))))?;
        Ok(Stream::Tls(Box::new(TokioIo::new(tls))))
    }

    async fn tcp(&mut self, to: Uri, named: &str) -> Result<TcpStream, ConnectError> {
        use tower_service::Service;
        let io = self
            .http
            .call(to)
            .await
            .map_err(|e| ConnectError(format!("cannot connect to {named}: {}", chain(&e))))?;
        Ok(io.into_inner())
    }
}

/// Opens a CONNECT tunnel to `target` through the proxy at the other end of `tcp`.
async fn tunnel(
    tcp: &mut TcpStream,
    target: &str,
    proxy: &str,
    auth: Option<&hyper::header::HeaderValue>,
) -> Result<(), ConnectError> {
    let fail = |why: String| ConnectError(format!("the proxy {proxy} did not open a tunnel to {target}: {why}"));
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n").into_bytes();
    if let Some(a) = auth {
        head.extend_from_slice(b"Proxy-Authorization: ");
        head.extend_from_slice(a.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    tcp.write_all(&head).await.map_err(|e| fail(e.to_string()))?;
    // Read the answer's head byte by byte: nothing of the tunnel's own bytes may be taken.
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n\r\n") {
        if got.len() >= MAX_PROXY_HEAD {
            return Err(fail(format!("its answer's head is longer than {MAX_PROXY_HEAD} bytes")));
        }
        let mut b = [0u8; 1];
        match tcp.read(&mut b).await {
            Ok(0) => return Err(fail("it closed the connection".into())),
            Ok(_) => got.push(b[0]),
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    let text = String::from_utf8_lossy(&got);
    let status_line = text.lines().next().unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    match code {
        c if c.starts_with('2') && c.len() == 3 => Ok(()),
        "407" => Err(fail(
            "HTTP 407, it wants credentials (put them in the proxy URL: http://user:password@proxy:port)".into(),
        )),
        _ => Err(fail(format!("it answered \"{}\"", status_line.trim()))),
    }
}

/// An error and its sources, joined with ": ".
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let s_text = s.to_string();
        if !out.contains(&s_text) {
            out.push_str(": ");
            out.push_str(&s_text);
        }
        next = s.source();
    }
    out
}

/// Why a TLS handshake failed, in words.
fn tls_reason(e: &io::Error, host: &str) -> String {
    let Some(inner) = e.get_ref() else {
        return match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                "the server closed the connection during the handshake (does it speak TLS on this port?)".into()
            }
            _ => e.to_string(),
        };
    };
    match inner.downcast_ref::<rustls::Error>() {
        Some(r) => rustls_reason(r, host),
        None => chain(inner),
    }
}

fn rustls_reason(e: &rustls::Error, host: &str) -> String {
    use rustls::AlertDescription as A;
    match e {
        rustls::Error::InvalidCertificate(c) => certificate_reason(c, host),
        rustls::Error::AlertReceived(A::CertificateRequired) | rustls::Error::AlertReceived(A::HandshakeFailure) => {
            "the server refused the handshake: it may require a client certificate (set clientCert and clientKey)"
                .into()
        }
        rustls::Error::AlertReceived(A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::AccessDenied) => {
            "the server refused our client certificate (check clientCert and clientKey, and that the server trusts their issuer)".into()
        }
        rustls::Error::AlertReceived(a) => format!("the server refused the handshake (alert {a:?})"),
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            "the server did not answer in TLS (is it plain http:// on this port?)".into()
        }
        rustls::Error::NoApplicationProtocol => "the server offers neither h2 nor http/1.1".into(),
        other => other.to_string(),
    }
}

fn certificate_reason(c: &CertificateError, host: &str) -> String {
    match c {
        CertificateError::UnknownIssuer => {
            "the certificate's issuer is unknown (add its CA with caFile or SSL_CERT_FILE)".into()
        }
        CertificateError::NotValidForName => format!("name mismatch: the certificate is not valid for {host}"),
        CertificateError::NotValidForNameContext { presented, .. } => {
            // Names come as `DnsName("a.example")` or `IpAddress(…)`: the quoted name is shown.
            let names: Vec<&str> = presented.iter().map(|n| n.split('"').nth(1).unwrap_or(n)).collect();
            let names = if names.is_empty() {
                "no names".to_string()
            } else {
                names.join(", ")
            };
            format!("name mismatch: the certificate is not valid for {host} (it is for {names})")
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the certificate has expired (or this machine's clock is wrong)".into()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the certificate is not valid yet (or this machine's clock is wrong)".into()
        }
        CertificateError::Revoked => "the certificate has been revoked".into(),
        CertificateError::BadSignature => "the certificate's signature does not verify".into(),
        CertificateError::BadEncoding => "the certificate is malformed".into(),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "the certificate is not for a TLS server".into()
        }
        other => format!("the certificate was refused: {other}"),
    }
}

/// What a hyper client error says, with the reason a connection failed when there is one: a
/// TLS error that comes after the handshake (TLS 1.3 servers refuse a missing client certificate
/// with the first read) is said in words too, naming `host`.
pub fn explain(e: &(dyn std::error::Error + 'static), host: &str) -> String {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = next {
        if let Some(c) = s.downcast_ref::<ConnectError>() {
            return c.0.clone();
        }
        let tls = s.downcast_ref::<rustls::Error>().or_else(|| {
            s.downcast_ref::<io::Error>()?
                .get_ref()?
                .downcast_ref::<rustls::Error>()
        });
        if let Some(t) = tls {
            return format!("TLS with {host} failed: {}", rustls_reason(t, host));
        }
        next = s.source();
    }
    chain(e)
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        Box::pin(self.clone().connect(dst))
    }
}

/// A connection: plain TCP (maybe to a proxy) or TLS.
pub enum Stream {
    Plain { io: TokioIo<TcpStream>, proxied: bool },
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Stream::Plain { proxied, .. } => Connected::new().proxy(*proxied),
            Stream::Tls(io) => {
                let h2 = io.inner().get_ref().1.alpn_protocol() == Some(b"h2");
                if h2 {
                    Connected::new().negotiated_h2()
                } else {
                    Connected::new()
                }
            }
        }
    }
}

impl Read for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { io, .. } => Pin::new(io).poll_read(cx, buf),
            Stream::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain { io, .. } => Pin::new(io).poll_write(cx, buf),
            Stream::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { io, .. } => Pin::new(io).poll_flush(cx),
            Stream::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain { io, .. } => Pin::new(io).poll_shutdown(cx),
            Stream::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain { io, .. } => Pin::new(io).poll_write_vectored(cx, bufs),
            Stream::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain { io, .. } => io.is_write_vectored(),
            Stream::Tls(io) => io.is_write_vectored(),
        }
    }
}

/// A hyper client over [`Connector`] (HTTP/1.1, or HTTP/2 when the server picks h2); it reuses
/// a connection idle for at most [`POOL_IDLE`].
pub fn client<B>(connector: Connector) -> Client<Connector, B>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    pooled(connector, POOL_IDLE)
}

fn pooled<B>(connector: Connector, idle: Duration) -> Client<Connector, B>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(idle)
        .pool_timer(TokioTimer::new())
        .build(connector)
}

/// The upstreams' HTTP clients: each https:// upstream with its own TLS settings gets its own
/// (so one upstream's client certificate is never shown to another); the rest share one.
pub struct HttpClients<B> {
    own: Arc<Vec<(String, Client<Connector, B>)>>,
    shared: Client<Connector, B>,
    proxy: Arc<Matcher>,
}

impl<B> Clone for HttpClients<B> {
    fn clone(&self) -> Self {
        HttpClients {
            own: self.own.clone(),
            shared: self.shared.clone(),
            proxy: self.proxy.clone(),
        }
    }
}

/// A request an upstream's client could not complete, in words.
#[derive(Debug)]
pub struct RequestError(String);

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RequestError {}

/// The key a URL's client is found by: its scheme and authority.
fn origin(uri: &Uri) -> String {
    format!(
        "{}://{}",
        uri.scheme_str().unwrap_or_default(),
        uri.authority()
            .map(|a| a.as_str().to_ascii_lowercase())
            .unwrap_or_default()
    )
}

impl<B> HttpClients<B>
where
    B: hyper::body::Body + Send + 'static + Unpin,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// The clients of `ups` (their `caFile`, `clientCert`, `clientKey` relative to `folder`).
    /// Errors name the field and the file; a proxy variable that does not parse is an error too
    /// (a connection would otherwise go around the proxy the user set).
    pub fn new(ups: &[Upstream], folder: &Path) -> Result<HttpClients<B>, ClientsError> {
        type Files = [Option<PathBuf>; 3];
        let mut own: Vec<(String, Client<Connector, B>, Files)> = Vec::new();
        let mut any_http = false;
        for up in ups {
            let Transport::Http(url) = &up.transport else { continue };
            any_http = true;
            let config = upstream_config(up, folder)?;
            if Arc::ptr_eq(&config, &default_config()) {
                continue;
            }
            // The origin as requests go out (`oauth::request_url`: `:443` dropped, dot segments).
            let key = mcp_sieve::upstream::oauth::request_url(url)
                .parse::<Uri>()
                .map(|u| origin(&u))
                .map_err(|source| ClientsError::Url {
                    at: field_path(up),
                    source,
                })?;
            let t = &up.tls;
            let files: Files =
                [&t.ca_file, &t.client_cert, &t.client_key].map(|f| f.as_ref().map(|f| resolve(f, folder)));
            if let Some((_, _, f)) = own.iter().find(|(k, _, _)| *k == key) {
                if *f != files {
                    return Err(ClientsError::SharedOrigin {
                        at: field_path(up),
                        origin: key,
                    });
                }
                continue;
            }
            own.push((key, client(Connector::new(config)), files));
        }
        if any_http {
            if let Some(p) = proxy_problems().into_iter().next() {
                return Err(p.into());
            }
            for w in store_problems() {
                tracing::warn!("{w}");
            }
        }
        let shared = Connector::plain();
        Ok(HttpClients {
            proxy: shared.proxy.clone(),
            own: Arc::new(own.into_iter().map(|(k, c, _)| (k, c)).collect()),
            shared: client(shared),
        })
    }

    /// Sends `req` with the client of its URL's origin.
    pub async fn request(&self, mut req: hyper::Request<B>) -> Result<hyper::Response<Incoming>, RequestError> {
        let key = origin(req.uri());
        let client = self
            .own
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, c)| c)
            .unwrap_or(&self.shared);
        // Plain http through a proxy: the proxy's credentials go with each request.
        if req.uri().scheme_str() == Some("http") {
            if let Some(auth) = self.proxy.intercept(req.uri()).and_then(|p| p.basic_auth().cloned()) {
                req.headers_mut().insert(hyper::header::PROXY_AUTHORIZATION, auth);
            }
        }
        let host = req.uri().host().unwrap_or_default().to_string();
        client.request(req).await.map_err(|e| RequestError(explain(&e, &host)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls_are_checked_as_curl_would_use_them() {
        assert!(proxy_url("http://proxy.example:3128").is_ok());
        assert!(proxy_url("proxy.example:3128").is_ok());
        assert!(proxy_url("http://user:pw@proxy.example:3128").is_ok());
        let says = |v: &str| proxy_url(v).unwrap_err().to_string();
        assert!(says("http://exa mple").starts_with("not a proxy URL such as http://proxy.example:3128 ("));
        assert_eq!(
            says("socks5://127.0.0.1:1080"),
            "a socks5:// proxy is not supported (only an http:// proxy, which tunnels https with CONNECT)"
        );
        assert!(says("https://proxy.example").contains("https:// proxy is not supported"));
    }

    #[test]
    fn no_proxy_star_bypasses_everything() {
        assert!(no_proxy_all("*") && no_proxy_all("example.com, *"));
        assert!(!no_proxy_all("*.example.com") && !no_proxy_all(""));
    }

    #[test]
    fn certificate_errors_are_said_in_words() {
        let says = |c: CertificateError| certificate_reason(&c, "api.example.com");
        assert!(says(CertificateError::UnknownIssuer).contains("issuer is unknown"));
        assert_eq!(
            says(CertificateError::NotValidForName),
            "name mismatch: the certificate is not valid for api.example.com"
        );
        let other = CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("api.example.com").unwrap(),
            presented: vec!["DnsName(\"other.example\")".into()],
        };
        assert_eq!(
            says(other),
            "name mismatch: the certificate is not valid for api.example.com (it is for other.example)"
        );
        assert!(says(CertificateError::Expired).contains("expired"));
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::Expired),
        );
        assert!(tls_reason(&e, "h").contains("has expired"));
    }

    /// A server that answers one request on a connection, then reads the next and closes the
    /// connection unanswered: the moment a server closes an idle connection as a request arrives.
    async fn closes_after_one() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut io, _)) = listener.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = io.read(&mut buf).await;
                    let _ = io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
                    let _ = io.read(&mut buf).await;
                });
            }
        });
        (url, accepted)
    }

    #[tokio::test]
    async fn a_connection_idle_past_the_pool_timeout_is_not_reused() {
        let bare = || Connector {
            proxy: Arc::new(Matcher::builder().build()),
            ..Connector::plain()
        };
        let get = |c: &Client<Connector, http_body_util::Empty<bytes::Bytes>>, url: &str| c.get(url.parse().unwrap());
        // Reused after its server began to close it: the second request is lost.
        let (url, accepted) = closes_after_one().await;
        let kept = pooled(bare(), Duration::from_secs(3600));
        assert!(get(&kept, &url).await.is_ok());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let lost = get(&kept, &url).await.unwrap_err();
        assert!(lost.to_string().contains("SendRequest"), "{lost}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
        // Given up after `idle`: the second request goes on a new connection and is answered.
        let (url, accepted) = closes_after_one().await;
        let fresh = pooled(bare(), Duration::from_millis(100));
        assert!(get(&fresh, &url).await.is_ok());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(get(&fresh, &url).await.is_ok());
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
        assert!(POOL_IDLE < Duration::from_secs(5), "below Node's and uvicorn's 5 s");
    }
}
