//! `mcp-sieve pin`: fetches the upstreams' lists once (as `tools` does) and writes each tool's
//! digest (the core's `mcp_sieve::pin::digest`, shown in its `_meta`) to the lock file the
//! gateway checks with `"pinning"`; `--approve NAME` takes only those tools' definitions as they
//! are now; `--kv` prints the lock instead, for the Worker's KV. The file is replaced whole
//! (written beside it, then renamed), so a running server never reads half of it.

use std::path::Path;
use std::sync::Arc;

use mcp_sieve::pin::Pins;
use mcp_sieve::protocol::Server;

use crate::cli::PinArgs;
use crate::config::load::Document;
use crate::error::ServerError;
use crate::upstream::gateway::{lock_path, Gateway, Wait};

/// Pins the tools of the catalog document `doc` (its relative files in `folder`) as `args` say.
pub async fn run(doc: Document, folder: &Path, args: PinArgs) -> Result<(), ServerError> {
    let local = doc.catalog(&doc.text)?;
    if local.upstreams.is_empty() {
        return Err(ServerError::Usage(
            "pin: the document names no upstream; pins are for the tools of upstream servers".into(),
        ));
    }
    let path = args.lock.clone().unwrap_or_else(|| lock_path(&local.pinning, folder));
    let local = Arc::new(Server::new(local));
    let gateway = Gateway::new(local.clone(), folder, Wait::ForAll, None)?
        .ok_or_else(|| ServerError::Usage("pin: the document names no upstream".into()))?;
    let server = gateway.serving(&local).await;
    let status = gateway.status();
    for line in crate::progress::lines(&status) {
        eprintln!("{line}");
    }
    let server = server?;
    let report = server.catalog().pins.clone();
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => Pins::parse(&t).map_err(|e| ServerError::Usage(format!("{}: {e}", path.display())))?,
        Err(_) => Pins::default(),
    };
    let mut new = old.clone();
    if args.approve.is_empty() {
        // Every tool anew: an upstream that is not up now would lose its pins.
        let down: Vec<String> = status["upstreams"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|u| u["state"] != "up")
            .map(|u| {
                u["name"]
                    .as_str()
                    .filter(|n| !n.is_empty())
                    .unwrap_or("upstream")
                    .to_string()
            })
            .collect();
        if !down.is_empty() {
            return Err(ServerError::Usage(format!(
                "pin: not up now: {}; their tools cannot be pinned (their pins would be dropped): try again when they are, or approve single tools with --approve",
                down.join(", ")
            )));
        }
        new = Pins(report.digests.clone());
    } else {
        for name in &args.approve {
            match report.digests.get(name) {
                Some(d) => drop(new.0.insert(name.clone(), d.clone())),
                None => {
                    let unpinned: Vec<&String> = report.unpinned.keys().collect();
                    return Err(ServerError::Usage(format!(
                        "pin --approve: no upstream tool is named \"{name}\"; the tools not pinned now are: {}",
                        if unpinned.is_empty() {
                            "none".to_string()
                        } else {
                            unpinned.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                        }
                    )));
                }
            }
        }
    }
    let (mut added, mut changed) = (Vec::new(), Vec::new());
    for (name, d) in &new.0 {
        match old.0.get(name) {
            None => added.push(name.as_str()),
            Some(o) if o != d => changed.push(name.as_str()),
            _ => {}
        }
    }
    let removed = old.0.keys().filter(|k| !new.0.contains_key(*k)).count();
    let summary = format!(
        "{} tools pinned ({} new, {} changed, {removed} removed){}{}",
        new.0.len(),
        added.len(),
        changed.len(),
        list(" new: ", &added),
        list("; changed: ", &changed)
    );
    if args.kv {
        print!("{}", new.to_text());
        eprintln!("mcp-sieve: {summary}; put it in the Worker's KV: wrangler kv key put --binding MCP_SIEVE_KV pins \"$(mcp-sieve pin --kv ...)\"");
        return Ok(());
    }
    let tmp = path.with_extension("json.tmp");
    let io = |what: &str, e| ServerError::Io(format!("cannot {what} {}", path.display()), e);
    std::fs::write(&tmp, new.to_text()).map_err(|e| io("write", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io("replace", e))?;
    eprintln!("mcp-sieve: {summary} in {}", path.display());
    Ok(())
}

fn list(head: &str, names: &[&str]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("{head}{}", names.join(", "))
    }
}
