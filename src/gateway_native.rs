//! Gateway mode for the native server: the Worker's `worker/src/gateway.rs` with blocking I/O.
//! One MCP session with the upstream (plain `http://`, HTTP/1.1 over a `TcpStream`: no TLS here;
//! use the Worker for `https://` upstreams), its lists fetched at startup and again after
//! `refreshSeconds` or an announced list change, and the core's `Forward` effects performed
//! there. Every rule is in `mcp_sieve::gateway`.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use mcp_sieve::gateway::{self, client, Upstream};
use mcp_sieve::http;
use mcp_sieve::protocol::Server;
use serde_json::{json, Value};

/// Largest upstream answer read, bytes.
const MAX_ANSWER: u64 = 64 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the upstream is.
#[derive(Debug)]
struct Target {
    host: String,
    port: u16,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("upstream.url \"{url}\": the native server reaches http:// upstreams only; serve https:// ones with the Worker")
        })?;
        let (authority, path) = rest
            .split_once('/')
            .map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => {
                (h, p.parse().map_err(|_| format!("upstream.url \"{url}\": bad port"))?)
            }
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err(format!("upstream.url \"{url}\" has no host"));
        }
        Ok(Target {
            host: host.trim_start_matches('[').trim_end_matches(']').to_string(),
            port,
            path,
        })
    }
}

#[derive(Clone)]
struct Conn {
    session: Option<String>,
    version: String,
    initialize: Value,
}

struct Answer {
    status: u16,
    session: Option<String>,
    content_type: String,
    body: String,
}

#[derive(Default)]
struct State {
    conn: Option<Conn>,
    next_id: u64,
    server: Option<Arc<Server>>,
    fetched_ms: i64,
    stale: bool,
}

struct Gateway {
    upstream: Upstream,
    target: Target,
    state: Mutex<State>,
    /// Held while the lists are fetched, so only one thread refreshes.
    refreshing: Mutex<()>,
}

static GATEWAY: OnceLock<Gateway> = OnceLock::new();

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// An HTTP/1.1 answer read so far.
struct Parsed {
    status: u16,
    /// Lower-cased names.
    headers: Vec<(String, String)>,
    /// The body so far, de-chunked.
    body: Vec<u8>,
    /// Whether the whole body is here (by `Content-Length` or the last chunk).
    complete: bool,
}

impl Parsed {
    fn header(&self, name: &str) -> Option<String> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    }
}

/// Reads what has arrived of an HTTP/1.1 answer; `None` until the header is complete.
fn parse_http(raw: &[u8]) -> Result<Option<Parsed>, String> {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or("the upstream's answer has no HTTP status line")?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut p = Parsed {
        status,
        headers,
        body: Vec::new(),
        complete: false,
    };
    let mut rest = &raw[split + 4..];
    if p.header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = String::from_utf8_lossy(&rest[..eol]);
            let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| "the upstream sent a bad chunk size".to_string())?;
            if size == 0 {
                p.complete = true;
                break;
            }
            let Some(chunk) = rest.get(eol + 2..eol + 2 + size) else {
                break; // not all here yet
            };
            p.body.extend_from_slice(chunk);
            rest = rest.get(eol + 4 + size..).unwrap_or_default();
        }
    } else if let Some(n) = p.header("content-length").and_then(|n| n.parse::<usize>().ok()) {
        p.body = rest[..n.min(rest.len())].to_vec();
        p.complete = rest.len() >= n;
    } else {
        p.body = rest.to_vec();
    }
    Ok(Some(p))
}

/// Whether an SSE body already carries the response to `id` (the upstream may keep the stream
/// open after it; a client stops reading there).
fn has_response(p: &Parsed, id: &Value) -> bool {
    let ct = p.header("content-type").unwrap_or_default();
    if !ct.to_ascii_lowercase().starts_with("text/event-stream") {
        return false;
    }
    let text = String::from_utf8_lossy(&p.body).replace("\r\n", "\n");
    let whole = text.rfind("\n\n").map_or("", |end| &text[..end + 2]);
    client::parse_reply(&ct, whole, id).is_ok_and(|r| r.response.is_some())
}

impl Gateway {
    /// POSTs `body`; reads the answer until it is complete, or, for a stream, until it carries
    /// the response to `id`.
    fn post(&self, conn: Option<&Conn>, body: &str, id: Option<&Value>) -> Result<Answer, String> {
        let t = &self.target;
        let fail = |e: std::io::Error| format!("cannot reach the upstream: {e}");
        let addr = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(fail)?
            .next()
            .ok_or("cannot resolve the upstream's host")?;
        let mut s = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT).map_err(fail)?;
        s.set_read_timeout(Some(READ_TIMEOUT)).map_err(fail)?;
        s.set_write_timeout(Some(READ_TIMEOUT)).map_err(fail)?;
        let mut req = format!(
            "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            t.path,
            t.host,
            t.port,
            body.len()
        );
        if let Some(c) = conn {
            if let Some(id) = &c.session {
                req.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
            }
            req.push_str(&format!("MCP-Protocol-Version: {}\r\n", c.version));
        }
        req.push_str("\r\n");
        req.push_str(body);
        s.write_all(req.as_bytes()).map_err(fail)?;
        let (mut raw, mut buf) = (Vec::new(), vec![0u8; 64 * 1024]);
        let p = loop {
            let n = s.read(&mut buf).map_err(fail)?;
            raw.extend_from_slice(&buf[..n]);
            if raw.len() as u64 > MAX_ANSWER {
                return Err(format!("the upstream's answer is larger than {MAX_ANSWER} bytes"));
            }
            match parse_http(&raw)? {
                Some(p) if n == 0 || p.complete || id.is_some_and(|id| has_response(&p, id)) => break p,
                None if n == 0 => return Err("the upstream closed the connection without an answer".into()),
                _ => {}
            }
        };
        Ok(Answer {
            status: p.status,
            session: p.header("mcp-session-id"),
            content_type: p.header("content-type").unwrap_or_default(),
            body: String::from_utf8_lossy(&p.body).into_owned(),
        })
    }

    fn connect(&self) -> Result<Conn, String> {
        let a = self.post(None, &client::initialize(), Some(&json!(0)))?;
        if a.status != 200 {
            return Err(format!("the upstream answered initialize with HTTP {}", a.status));
        }
        let reply = client::parse_reply(&a.content_type, &a.body, &json!(0)).map_err(|e| e.to_string())?;
        let initialize = reply.result("initialize").map_err(|e| e.to_string())?.clone();
        let conn = Conn {
            session: a.session,
            version: initialize["protocolVersion"]
                .as_str()
                .unwrap_or(client::PROTOCOL_VERSION)
                .to_string(),
            initialize,
        };
        self.post(Some(&conn), &client::initialized(), None)?;
        Ok(conn)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn conn(&self) -> Result<Conn, String> {
        if let Some(c) = self.state().conn.clone() {
            return Ok(c);
        }
        let c = self.connect()?;
        self.state().conn = Some(c.clone());
        Ok(c)
    }

    fn request(&self, method: &str, params: &Value) -> Result<client::Reply, String> {
        for attempt in 0..2 {
            let conn = self.conn()?;
            let id = {
                let mut s = self.state();
                s.next_id += 1;
                s.next_id
            };
            let a = self.post(Some(&conn), &client::request(id, method, params), Some(&json!(id)))?;
            if a.status == 404 && attempt == 0 && conn.session.is_some() {
                self.state().conn = None; // the upstream forgot our session: open a new one
                continue;
            }
            if !(200..300).contains(&a.status) {
                return Err(format!("the upstream answered {method} with HTTP {}", a.status));
            }
            let reply = client::parse_reply(&a.content_type, &a.body, &json!(id)).map_err(|e| e.to_string())?;
            if reply.list_changed() {
                self.state().stale = true;
            }
            return Ok(reply);
        }
        Err(format!("the upstream keeps refusing our session for {method}"))
    }

    fn refresh(&self, local: &Server) -> Result<Arc<Server>, String> {
        self.state().stale = false;
        let mut lists = client::Lists::new(self.conn()?.initialize);
        for kind in lists.kinds() {
            let mut cursor: Option<String> = None;
            loop {
                let params = cursor.as_ref().map_or(Value::Null, |c| json!({"cursor": c}));
                let reply = self.request(kind.list_method(), &params)?;
                cursor = lists.add_reply(kind, &reply).map_err(|e| e.to_string())?;
                if cursor.is_none() {
                    break;
                }
            }
        }
        let document = local
            .catalog()
            .document
            .clone()
            .ok_or("the local catalog document was not kept")?;
        let catalog = gateway::build(&document, &lists).map_err(|e| e.to_string())?;
        let previous = self.state().server.clone();
        let server = Arc::new(match previous {
            Some(p) => {
                let mut s = (*p).clone();
                s.replace_catalog(catalog);
                s
            }
            None => Server::new(catalog),
        });
        let mut s = self.state();
        s.server = Some(server.clone());
        s.fetched_ms = now_ms();
        Ok(server)
    }
}

/// Gateway mode, when `local`'s document names an upstream: opens the session and fetches the
/// lists now, so a server that cannot reach its upstream does not start half working.
pub fn start(local: &Server) -> Result<(), String> {
    let Some(upstream) = Upstream::parse(Some(&local.catalog().upstream)).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let g = Gateway {
        target: Target::parse(&upstream.url)?,
        upstream,
        state: Mutex::new(State::default()),
        refreshing: Mutex::new(()),
    };
    let n = g
        .refresh(local)?
        .catalog()
        .section(mcp_sieve::model::Kind::Tool)
        .items
        .len();
    eprintln!("mcp-sieve: gateway mode, {n} upstream tools");
    GATEWAY.set(g).map_err(|_| "the gateway was started twice".to_string())
}

/// The server to run a request on: in gateway mode the one over the upstream's lists (fetched
/// again when due; the cached one keeps serving if that fails), else `None`.
pub fn serving(local: &Server) -> Option<Arc<Server>> {
    let g = GATEWAY.get()?;
    let (cached, fetched, stale) = {
        let s = g.state();
        (s.server.clone(), s.fetched_ms, s.stale)
    };
    if !stale && !g.upstream.stale(fetched, now_ms()) {
        return cached;
    }
    // One thread refreshes; the others serve the cached lists meanwhile.
    let Ok(_guard) = g.refreshing.try_lock() else {
        return cached;
    };
    match g.refresh(local) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("mcp-sieve: upstream refresh failed, serving the cached lists: {e}");
            cached
        }
    }
}

/// Performs `answer`'s `Forward` effect, if any, at the upstream and completes the answer.
pub fn finish(answer: http::Response) -> http::Response {
    let (Some(f), Some(g)) = (answer.forward.clone(), GATEWAY.get()) else {
        return answer;
    };
    match g.request(&f.method, &f.params) {
        Ok(client::Reply {
            response: Some(msg), ..
        }) => gateway::complete(answer, Ok(&msg)),
        Ok(_) => gateway::complete(answer, Err("its reply carried no response".into())),
        Err(e) => gateway::complete(answer, Err(e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_http_answers_plain_chunked_and_partial() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}xx";
        let p = parse_http(plain).unwrap().unwrap();
        assert_eq!((p.status, p.body.as_slice(), p.complete), (200, b"{}".as_slice(), true));
        assert_eq!(p.header("content-type").as_deref(), Some("application/json"));
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n";
        let p = parse_http(chunked).unwrap().unwrap();
        assert_eq!((p.body.as_slice(), p.complete), (b"hello world".as_slice(), true));
        let partial = parse_http(&chunked[..chunked.len() - 12]).unwrap().unwrap();
        assert_eq!(
            (partial.body.as_slice(), partial.complete),
            (b"hello".as_slice(), false)
        );
        assert!(parse_http(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err());
        assert!(parse_http(b"HTTP/1.1 200 OK\r\nConte").unwrap().is_none());
        let sse = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
                    2b\r\nevent: message\ndata: {\"id\":4,\"result\":{}}\n\n\r\n";
        let p = parse_http(sse).unwrap().unwrap();
        assert!(!p.complete && has_response(&p, &json!(4)) && !has_response(&p, &json!(5)));
    }

    #[test]
    fn reads_upstream_urls() {
        let t = Target::parse("http://127.0.0.1:8080/mcp").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("127.0.0.1", 8080, "/mcp"));
        let t = Target::parse("http://example.com").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("example.com", 80, "/"));
        assert!(Target::parse("https://example.com/mcp").unwrap_err().contains("Worker"));
    }
}
