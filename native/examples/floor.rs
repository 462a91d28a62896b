//! The native server's floor for the load benchmark (scripts/bench-native.sh): the same stack
//! as `mcp-sieve serve` (a multi-threaded tokio runtime, hyper 1's HTTP/1.1 server, one task a
//! connection, `TCP_NODELAY`) doing no MCP work — it reads each request's body and answers it
//! with a fixed page, the bytes of FILE (one of the server's own answers, so the bytes are the
//! same). What the server does above this is the work of MCP.
//! `cargo run --release -p mcp-sieve-server --example floor -- PORT FILE` (127.0.0.1 only).
//! `FLOOR_WORK_US=N` spins N µs of CPU on the runtime's thread before each answer: a server with
//! N µs of work of its own a request, for the share of the floor such a server reaches under the
//! same load (docs/src/performance.md).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(port), Some(file)) = (args.next(), args.next()) else {
        eprintln!("usage: floor PORT FILE");
        std::process::exit(2);
    };
    let port: u16 = port.parse().expect("PORT must be a port number");
    let page = Bytes::from(std::fs::read(&file).unwrap_or_else(|e| panic!("cannot read {file}: {e}")));
    let work = match std::env::var("FLOOR_WORK_US") {
        Ok(v) => Duration::from_micros(v.parse().expect("FLOOR_WORK_US must be a number of microseconds")),
        Err(_) => Duration::ZERO,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("cannot listen");
        eprintln!("floor at http://127.0.0.1:{port}/mcp ({} bytes a page)", page.len());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let page = page.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let page = page.clone();
                    async move {
                        let _ = req.into_body().collect().await;
                        if !work.is_zero() {
                            let started = Instant::now();
                            while started.elapsed() < work {
                                std::hint::spin_loop();
                            }
                        }
                        let answer = hyper::Response::builder()
                            .header("Content-Type", "application/json")
                            .body(Full::new(page))
                            .expect("a response");
                        Ok::<_, Infallible>(answer)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}
