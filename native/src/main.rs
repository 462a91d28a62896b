//! The native server binary: the core behind hyper on tokio, for running without workerd.
//!   mcp-sieve serve [--catalog FILE] [--host 127.0.0.1] [--port 8788]
//!   environment: MCP_SIEVE_ALLOWED_ORIGINS, MCP_SIEVE_TOKEN, MCP_SIEVE_CORS, MCP_SIEVE_MAX_BODY (as for the Worker)
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod error;
mod gateway;
mod serve;
mod watch;

use error::ServerError;

const USAGE: &str = "usage: mcp-sieve serve [--catalog FILE] [--host 127.0.0.1] [--port 8788]";

/// What `serve` was asked for.
struct Args {
    catalog: Option<String>,
    host: String,
    port: u16,
}

fn parse(args: Vec<String>) -> Result<Args, ServerError> {
    let mut it = args.into_iter();
    if it.next().as_deref() != Some("serve") {
        return Err(ServerError::Usage(USAGE.into()));
    }
    let mut out = Args {
        catalog: None,
        host: "127.0.0.1".into(),
        port: 8788,
    };
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .ok_or_else(|| ServerError::Usage(format!("{a} needs a value; {USAGE}")))
        };
        match a.as_str() {
            "--catalog" => out.catalog = Some(val()?),
            "--host" => out.host = val()?,
            "--port" => {
                out.port = val()?
                    .parse()
                    .map_err(|_| ServerError::Usage(format!("--port must be a number from 1 to 65535; {USAGE}")))?
            }
            _ => return Err(ServerError::Usage(format!("unknown argument \"{a}\"; {USAGE}"))),
        }
    }
    Ok(out)
}

fn main() {
    let result = parse(std::env::args().skip(1).collect()).and_then(|args| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| ServerError::Io("cannot start the runtime".into(), e))?
            .block_on(serve::run(args.catalog, &args.host, args.port))
    });
    if let Err(e) = result {
        eprintln!("mcp-sieve: {e}");
        std::process::exit(2);
    }
}
