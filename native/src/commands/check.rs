//! `mcp-sieve check FILE`: validates a catalog document or an MCP client configuration and prints
//! every error with its file, line and column, and field (a catalog document's from
//! `Catalog::problems`; a secret the environment lacks is a warning: it may be set where the
//! document is served); the exit code is 1 when there are errors. What would stop an http upstream
//! from being reached is an error too: a `caFile`, `clientCert` or `clientKey` that cannot be read
//! or used, a proxy variable that does not parse (`crate::http::tls`).

use std::path::Path;

use serde_json::Value;

use crate::config::{load, mcp_config};
use crate::error::ServerError;

/// Checks `path`; `Err(ServerError::Check(n))` carries the number of errors (0: valid).
pub fn run(path: &Path) -> Result<(), ServerError> {
    let text = load::read(path)?;
    let file = path.display().to_string();
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            println!("{}", mcp_config::Problem::syntax(&e).show(&file));
            return Err(ServerError::Check(1));
        }
    };
    if mcp_config::is_client_config(&doc) {
        let c = mcp_config::convert(&text, &|name| std::env::var(name).ok(), ".");
        for w in &c.warnings {
            println!("warning: {}", w.show(&file));
        }
        for p in &c.errors {
            println!("{}", p.show(&file));
        }
        let reached = c.upstreams.values().any(|up| up.get("url").is_some());
        let tls = if reached {
            tls_problems(&[], Path::new("."))
        } else {
            Vec::new()
        };
        for p in &tls {
            println!("{file}: {p}");
        }
        return match c.errors.len() + tls.len() {
            0 => {
                let servers: Vec<String> = c
                    .upstreams
                    .iter()
                    .map(|(name, up)| format!("{name} ({})", if up.get("url").is_some() { "http" } else { "stdio" }))
                    .collect();
                println!(
                    "{file}: a valid MCP client configuration; {} server(s) become upstreams: {}",
                    servers.len(),
                    if servers.is_empty() {
                        "none".into()
                    } else {
                        servers.join(", ")
                    }
                );
                Err(ServerError::Check(0))
            }
            n => Err(ServerError::Check(n)),
        };
    }
    let problems = load::problems(&doc, &file, &text, false);
    for p in &problems {
        println!("{p}");
    }
    // A secret this environment lacks may be set where the document is served (a Worker secret).
    for p in load::problems(&doc, &file, &text, true) {
        if !problems.contains(&p) {
            println!("warning: {p}");
        }
    }
    if !problems.is_empty() {
        return Err(ServerError::Check(problems.len()));
    }
    let c = mcp_sieve::Catalog::from_json_str(&text)?;
    let reached = c.upstreams.iter().any(|u| u.url().is_some());
    if reached {
        let folder = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let tls = tls_problems(&c.upstreams, folder);
        for p in &tls {
            println!("{file}: {p}");
        }
        if !tls.is_empty() {
            return Err(ServerError::Check(tls.len()));
        }
    }
    println!(
        "{file}: a valid catalog document: {}, {}, {}, {}",
        counted(c.section(mcp_sieve::model::Kind::Tool).items.len(), "tool"),
        counted(c.groups.len(), "group"),
        counted(c.tags.len(), "tag"),
        counted(c.views.len(), "view")
    );
    Err(ServerError::Check(0))
}

/// `n` of `noun`, in the singular for one ("1 tool", "0 groups").
fn counted(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// What would stop the http upstreams `ups` from being reached (their TLS files, relative to
/// `folder`; the proxy variables), each an error; what the platform's trust store lacks is a
/// warning, printed here (the webpki roots still serve).
fn tls_problems(ups: &[mcp_sieve::catalog::Upstream], folder: &Path) -> Vec<String> {
    let mut out: Vec<String> = ups
        .iter()
        .filter(|u| u.url().is_some())
        .filter_map(|u| crate::http::tls::upstream_config(u, folder).err())
        .map(|e| e.to_string())
        .collect();
    out.extend(crate::http::tls::proxy_problems().iter().map(|e| e.to_string()));
    for w in crate::http::tls::store_problems() {
        println!("warning: {w}");
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_of_a_thing_is_singular_and_any_other_count_plural() {
        assert_eq!(super::counted(1, "tool"), "1 tool");
        assert_eq!(super::counted(0, "group"), "0 groups");
        assert_eq!(super::counted(74, "tool"), "74 tools");
    }
}
