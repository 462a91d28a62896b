//! `mcp-sieve tools`: the tools a view serves, as a table (name, upstream, groups, tags, tokens),
//! and their token estimate against the whole list's — the same estimate as the demo page and
//! the npm package (about four bytes of JSON a token). The lists are asked of the core exactly
//! as a client would ask (a 2026-07-28 `tools/list`, every page), so what is printed is what a
//! client of `mcp-sieve stdio` with the same flags gets.

use std::sync::Arc;

use mcp_sieve::filter::EndpointView;
use mcp_sieve::http::MemoryStore;
use mcp_sieve::protocol::{Env, Server};
use mcp_sieve::stdio::Connection;
use mcp_sieve::Catalog;
use serde_json::{json, Value};

use crate::cli::ViewArgs;
use crate::config::load::Document;
use crate::error::ServerError;
use crate::platform::now_ms;
use crate::upstream::gateway::{Gateway, Wait};

/// Estimated tokens of `bytes` of JSON (the package's `estimate_tokens`).
pub fn tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// Every tool `server` lists through `view`, page after page.
pub fn list(server: &Server, view: Option<Arc<EndpointView>>) -> Result<Vec<Value>, ServerError> {
    let mut conn = Connection::default();
    let mut store = MemoryStore::default();
    let env = Env {
        now_ms: now_ms(),
        view,
        ..Env::default()
    };
    let (mut tools, mut cursor) = (Vec::new(), Value::Null);
    loop {
        let mut params = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": mcp_sieve::protocol::MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}
        }});
        if !cursor.is_null() {
            params["cursor"] = cursor;
        }
        let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}).to_string();
        let step = conn.receive(server, &line, &mut store, &env);
        let reply: Value = step
            .lines
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or(Value::Null);
        if let Some(e) = reply.get("error") {
            return Err(ServerError::Usage(format!("tools/list failed: {}", e["message"])));
        }
        let result = &reply["result"];
        tools.extend(result["tools"].as_array().into_iter().flatten().cloned());
        cursor = result.get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            return Ok(tools);
        }
    }
}

fn names(v: &Value) -> String {
    let list: Vec<&str> = v.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if list.is_empty() {
        "-".into()
    } else {
        list.join(",")
    }
}

/// The server of `catalog` (its relative files in `folder`): in gateway mode over its upstreams'
/// lists, fetched once now (with the progress on stderr).
pub async fn serving(catalog: Catalog, folder: &std::path::Path) -> Result<Arc<Server>, ServerError> {
    let local = Arc::new(Server::new(catalog));
    Ok(match Gateway::new(local.clone(), folder, Wait::ForAll, None)? {
        Some(g) => {
            let server = g.serving(&local).await;
            let status = g.status();
            for line in crate::progress::lines(&status) {
                eprintln!("{line}");
            }
            // A one-shot report over no upstream at all reports nothing: say why instead (a
            // server starts empty and fills in as upstreams come up).
            let ups = status["upstreams"].as_array().cloned().unwrap_or_default();
            if !ups.iter().any(|u| u["state"] == "up") {
                let why: Vec<String> = ups
                    .iter()
                    .filter_map(|u| u["error"].as_str().map(str::to_string))
                    .collect();
                return Err(mcp_sieve::Error::Upstream(format!(
                    "no upstream answered ({}); start them, or check their url or command",
                    why.join("; ")
                ))
                .into());
            }
            server?
        }
        None => local,
    })
}

/// Prints the table for the catalog document `doc` through the view of `flags`.
pub async fn run(doc: Document, folder: &std::path::Path, flags: ViewArgs) -> Result<(), ServerError> {
    let server = serving(doc.catalog(&doc.text)?, folder).await?;
    let view = flags.resolve(server.catalog())?;
    let all = list(&server, None)?;
    let shown = list(&server, view)?;
    let upstreams: Vec<String> = serde_json::from_str::<Value>(&doc.text)
        .ok()
        .and_then(|d| {
            d.get("upstreams")
                .and_then(Value::as_object)
                .map(|u| u.keys().cloned().collect())
        })
        .unwrap_or_default();
    let rows: Vec<[String; 5]> = shown
        .iter()
        .map(|t| {
            let groups = &t["groups"];
            let upstream = groups
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .find(|g| upstreams.iter().any(|u| u == g))
                .unwrap_or("-");
            [
                t["name"].as_str().unwrap_or("?").to_string(),
                upstream.to_string(),
                names(groups),
                names(&t["tags"]),
                tokens(t.to_string().len()).to_string(),
            ]
        })
        .collect();
    let head = ["NAME", "UPSTREAM", "GROUPS", "TAGS", "TOKENS"].map(String::from);
    let mut width = [0usize; 5];
    for r in std::iter::once(&head).chain(&rows) {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count()).min(48);
        }
    }
    for r in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = r
            .iter()
            .zip(width)
            .enumerate()
            .map(|(i, (c, w))| if i == 4 { format!("{c:>w$}") } else { format!("{c:<w$}") })
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    let (bytes, total) = (json!(shown).to_string().len(), json!(all).to_string().len());
    println!(
        "\n{} of {} tools: ~{} of ~{} tokens ({:.1}%) in every conversation",
        shown.len(),
        all.len(),
        tokens(bytes),
        tokens(total),
        100.0 * bytes as f64 / total.max(1) as f64
    );
    Ok(())
}
