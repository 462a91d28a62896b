//! The native server: the same core behind a small HTTP server, for running without workerd.
//!   mcp-sieve serve [--catalog FILE] [--host 127.0.0.1] [--port 8788]
//!   environment: MCP_SIEVE_ALLOWED_ORIGINS, MCP_SIEVE_TOKEN, MCP_SIEVE_CORS, MCP_SIEVE_MAX_BODY (as for the Worker)
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    if let Err(e) = native::run(std::env::args().skip(1).collect()) {
        eprintln!("mcp-sieve: {e}");
        std::process::exit(2);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod gateway_native;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use mcp_sieve::http::{self, MemoryStore};
    use mcp_sieve::protocol::{Env, Server};
    use mcp_sieve::Catalog;

    const USAGE: &str = "usage: mcp-sieve serve [--catalog FILE] [--host 127.0.0.1] [--port 8788]";
    const DEFAULT_CATALOG: &str = include_str!("../catalog/default.json");
    /// Longest a `tasks/result` waits in one request.
    const MAX_WAIT_MS: i64 = 30_000;

    fn now_ms() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// 128 random bits from the OS, as hex.
    fn fresh_id() -> String {
        let mut b = [0u8; 16];
        if std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut b))
            .is_err()
        {
            b[..8].copy_from_slice(&now_ms().to_le_bytes());
        }
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    pub fn run(args: Vec<String>) -> Result<(), String> {
        let mut it = args.into_iter();
        if it.next().as_deref() != Some("serve") {
            return Err(USAGE.into());
        }
        let (mut catalog, mut host, mut port) = (None, "127.0.0.1".to_string(), 8788u16);
        while let Some(a) = it.next() {
            let mut val = || it.next().ok_or_else(|| format!("{a} needs a value; {USAGE}"));
            match a.as_str() {
                "--catalog" => catalog = Some(val()?),
                "--host" => host = val()?,
                "--port" => {
                    port = val()?
                        .parse()
                        .map_err(|_| format!("--port must be a number; {USAGE}"))?
                }
                _ => return Err(USAGE.into()),
            }
        }
        let text = match &catalog {
            Some(path) => std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?,
            None => DEFAULT_CATALOG.to_string(),
        };
        let server = Arc::new(Server::new(Catalog::from_json_str(&text).map_err(|e| e.to_string())?));
        crate::gateway_native::start(&server)?;
        // Origin allow-list, bearer token, CORS and body limit: the Worker's variables, from the environment.
        let cfg = Arc::new(http::Config::from_vars(&|name| std::env::var(name).ok())?);
        let store = Arc::new(Mutex::new(MemoryStore::default()));
        let listener = tiny_http::Server::http((host.as_str(), port)).map_err(|e| format!("cannot listen: {e}"))?;
        eprintln!("mcp-sieve: serving MCP at http://{host}:{port}/mcp");
        for req in listener.incoming_requests() {
            let (server, store, cfg) = (server.clone(), store.clone(), cfg.clone());
            std::thread::spawn(move || serve(&server, &cfg, &store, req));
        }
        Ok(())
    }

    fn serve(server: &Server, cfg: &http::Config, store: &Mutex<MemoryStore>, mut req: tiny_http::Request) {
        if req.url().split('?').next() != Some("/mcp") {
            let _ =
                req.respond(tiny_http::Response::from_string("Not found: MCP is served at /mcp").with_status_code(404));
            return;
        }
        let mut body = Vec::new();
        let limit = cfg.limits.max_body as u64 + 1;
        let _ = req.as_reader().take(limit).read_to_end(&mut body);
        let headers: Vec<(String, String)> = req
            .headers()
            .iter()
            .map(|h| (h.field.as_str().as_str().to_string(), h.value.as_str().to_string()))
            .collect();
        let header = move |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let method = req.method().as_str().to_string();
        let (id, started) = (fresh_id(), now_ms());
        // Gateway mode: the catalog over the upstream's lists; calls are performed there.
        let gateway = crate::gateway_native::serving(server);
        let server = gateway.as_deref().unwrap_or(server);
        let answer = loop {
            let env = Env {
                now_ms: now_ms(),
                principal: None,
                fresh_id: id.clone(),
            };
            let request = http::Request {
                method: &method,
                header: &header,
                body: &body,
            };
            let answer = {
                let mut guard = store.lock().unwrap_or_else(|p| p.into_inner());
                http::serve(server, cfg, request, &mut *guard, &env)
            };
            match answer.retry_at {
                Some(at) if at - started <= MAX_WAIT_MS => {
                    std::thread::sleep(Duration::from_millis((at - env.now_ms).clamp(1, MAX_WAIT_MS) as u64))
                }
                _ => break crate::gateway_native::finish(answer),
            }
        };
        let mut resp = tiny_http::Response::from_data(answer.body.into_bytes())
            .with_status_code(if answer.status == 0 { 504 } else { answer.status });
        for (k, v) in &answer.headers {
            if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
                resp.add_header(h);
            }
        }
        let _ = req.respond(resp);
    }
}
