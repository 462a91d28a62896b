//! The OTLP span exporter of the native binary (issue 42; issue 59: `opentelemetry-otlp`'s, not
//! protobuf of our own): OTLP/HTTP with protobuf bodies, as that crate reads the standard
//! variables — the endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else
//! `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`), `…_HEADERS` (values percent-decoded),
//! `…_TIMEOUT`, `…_COMPRESSION` (`gzip`), retries with backoff, and a collector's
//! `partial_success` said in the log. `OTEL_EXPORTER_OTLP_PROTOCOL` may be `http/protobuf` (the
//! default); `grpc` and `http/json` are not built in and say so. The requests go through this
//! binary's own hyper client and rustls connector (`crate::http::tls`: the platform's roots,
//! proxies), plus `OTEL_EXPORTER_OTLP_CERTIFICATE` (a CA to trust) and
//! `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE` / `…_CLIENT_KEY` (mTLS), each also as `…_TRACES_…`,
//! which `opentelemetry-otlp` leaves to its client. The service's attributes come from
//! `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (values percent-decoded, as the
//! specification says and the SDK's detector does not).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};

/// Longest one request to the collector may take, unless `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` or
/// `OTEL_EXPORTER_OTLP_TIMEOUT` says otherwise (milliseconds), as `opentelemetry-otlp` reads them.
const EXPORT_DEADLINE: Duration = Duration::from_secs(10);

/// Why the exporter could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ExporterError {
    /// A variable names something this build cannot do, or a file it cannot use.
    #[error("{0}")]
    Setting(String),
    /// `opentelemetry-otlp` refused its configuration.
    #[error(transparent)]
    Build(#[from] opentelemetry_otlp::ExporterBuildError),
    /// The exporter's runtime could not start.
    #[error("cannot start the exporter's runtime: {0}")]
    Runtime(#[from] std::io::Error),
}

/// The first of `names` set (not blank).
fn var(names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|n| {
        std::env::var(n)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| (n.to_string(), v.trim().to_string()))
    })
}

/// The span exporter the environment describes, posting to `endpoint` (`…/v1/traces`).
pub fn exporter(endpoint: &str) -> Result<opentelemetry_otlp::SpanExporter, ExporterError> {
    if let Some((name, protocol)) = var(&["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]) {
        if !protocol.eq_ignore_ascii_case("http/protobuf") {
            return Err(ExporterError::Setting(format!(
                "{name}={protocol:?} is not built into mcp-sieve; expected \"http/protobuf\" (OTLP/HTTP, port 4318 by convention)"
            )));
        }
    }
    let deadline = var(&["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"])
        .and_then(|(_, ms)| ms.parse().ok())
        .map_or(EXPORT_DEADLINE, Duration::from_millis);
    let client = Client::new(connector()?, deadline)?;
    Ok(opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_http_client(client)
        .build()?)
}

/// The connector: the platform's roots (and the webpki ones), plus the CA and client certificate
/// the variables name.
fn connector() -> Result<crate::http::tls::Connector, ExporterError> {
    let ca = var(&[
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
    ]);
    let cert = var(&[
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    ]);
    let key = var(&["OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY"]);
    if ca.is_none() && cert.is_none() && key.is_none() {
        return Ok(crate::http::tls::Connector::plain());
    }
    let client = match (&cert, &key) {
        (Some((cn, c)), Some((kn, k))) => Some(((Path::new(c), cn.as_str()), (Path::new(k), kn.as_str()))),
        (None, None) => None,
        (Some((n, _)), None) | (None, Some((n, _))) => {
            return Err(ExporterError::Setting(format!(
                "{n} is set without its pair: a client certificate needs both OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY"
            )))
        }
    };
    let ca = ca.as_ref().map(|(n, f)| (Path::new(f), n.as_str()));
    let config = crate::http::tls::files_config(ca, client).map_err(|e| ExporterError::Setting(e.to_string()))?;
    Ok(crate::http::tls::Connector::new(config))
}

/// `opentelemetry-otlp`'s HTTP client: this binary's hyper client on a runtime of its own (the
/// SDK's batch processor exports from its own thread, outside the server's runtime, and the last
/// spans still go out after the server's runtime stopped).
struct Client {
    runtime: tokio::runtime::Runtime,
    client: hyper_util::client::legacy::Client<crate::http::tls::Connector, Full<Bytes>>,
    deadline: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("mcp-sieve OTLP client")
    }
}

impl Client {
    fn new(connector: crate::http::tls::Connector, deadline: Duration) -> Result<Self, ExporterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp-sieve-otlp")
            .enable_all()
            .build()?;
        let client = {
            let _in = runtime.enter();
            crate::http::tls::client(connector)
        };
        Ok(Client {
            runtime,
            client,
            deadline,
        })
    }
}

/// The collector's answer read past this many bytes is refused (as `opentelemetry-http`'s own
/// clients do).
const MAX_ANSWER: usize = 4 * 1024 * 1024;

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (head, body) = request.into_parts();
        let request = hyper::Request::from_parts(head, Full::new(body));
        let client = self.client.clone();
        let deadline = self.deadline;
        let exchange = async move {
            let response = client.request(request).await?;
            let (head, body) = response.into_parts();
            let body = http_body_util::Limited::new(body, MAX_ANSWER)
                .collect()
                .await?
                .to_bytes();
            Ok::<_, HttpError>(Response::from_parts(head, body))
        };
        self.runtime
            .spawn(async move {
                tokio::time::timeout(deadline, exchange)
                    .await
                    .map_err(|_| HttpError::from(format!("no answer within {} ms", deadline.as_millis())))?
            })
            .await?
    }
}

/// The service's attributes: `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`, values percent-decoded), its
/// `service.name` replaced by `OTEL_SERVICE_NAME` when set (else `mcp-sieve`), then this
/// binary's version; the SDK's `telemetry.sdk.*` beside them.
pub fn resource() -> opentelemetry_sdk::Resource {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
    let attributes = attributes(var("OTEL_SERVICE_NAME"), var("OTEL_RESOURCE_ATTRIBUTES"));
    opentelemetry_sdk::Resource::builder_empty()
        .with_detector(Box::new(opentelemetry_sdk::resource::TelemetryResourceDetector))
        .with_attributes(attributes.into_iter().map(|(k, v)| opentelemetry::KeyValue::new(k, v)))
        .build()
}

/// See [`resource`].
fn attributes(service: Option<String>, attributes: Option<String>) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = Vec::new();
    let given = attributes.as_deref().map(pairs).unwrap_or_default();
    for (k, v) in given.into_iter().filter(|(k, _)| !k.is_empty()) {
        match all.iter_mut().find(|(key, _)| *key == k) {
            Some(slot) => slot.1 = v,
            None => all.push((k, v)),
        }
    }
    let named = all.iter().position(|(k, _)| k == "service.name");
    match (service, named) {
        (Some(s), Some(i)) => all[i].1 = s,
        (Some(s), None) => all.insert(0, ("service.name".into(), s)),
        (None, None) => all.insert(0, ("service.name".into(), crate::telemetry::SCOPE.into())),
        (None, Some(_)) => {}
    }
    if !all.iter().any(|(key, _)| key == "service.version") {
        all.push(("service.version".into(), env!("CARGO_PKG_VERSION").into()));
    }
    all
}

/// `k=v,k2=v2` as pairs (keys trimmed, values trimmed and percent-decoded); a part with no `=`
/// is left out.
fn pairs(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            Some((k.trim().to_string(), percent_decode(v.trim())))
        })
        .collect()
}

/// `a%20b` → `a b` (an invalid escape is kept as written; bytes that are not UTF-8 become U+FFFD).
fn percent_decode(v: &str) -> String {
    percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_is_named_as_the_sdk_names_it() {
        let named = |r: &[(String, String)]| r.iter().find(|(k, _)| k == "service.name").map(|(_, v)| v.clone());
        assert_eq!(named(&attributes(None, None)).as_deref(), Some("mcp-sieve"));
        let attrs = Some("service.name=from%20attrs, team = core,=nameless".to_string());
        let r = attributes(None, attrs.clone());
        assert_eq!(named(&r).as_deref(), Some("from attrs"));
        assert!(r.contains(&("team".into(), "core".into())));
        assert!(r.iter().all(|(k, _)| !k.is_empty()));
        // OTEL_SERVICE_NAME wins over the attribute.
        assert_eq!(named(&attributes(Some("svc".into()), attrs)).as_deref(), Some("svc"));
        assert!(r
            .iter()
            .any(|(k, v)| k == "service.version" && v == env!("CARGO_PKG_VERSION")));
        assert_eq!(percent_decode("a%2Cb%zz%4"), "a,b%zz%4");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }

    #[test]
    fn the_client_posts_through_its_own_runtime_from_a_thread_outside_any() {
        // The batch processor's thread: no runtime there.
        let client = Client::new(crate::http::tls::Connector::plain(), Duration::from_millis(500)).unwrap();
        let request = Request::post("http://127.0.0.1:9/v1/traces")
            .body(Bytes::new())
            .unwrap();
        let answer = poll_outside_any_runtime(client.send_bytes(request));
        assert!(answer.is_err(), "nothing listens on port 9");
    }

    /// Polls `f` to its end on this thread, with no reactor or timer (as the SDK's batch processor does).
    fn poll_outside_any_runtime<F: std::future::Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(f)
    }
}
