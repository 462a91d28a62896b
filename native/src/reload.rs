//! Change without a restart: `serve` and `stdio` watch their catalog document and client
//! configuration (`--catalog`, `--mcp-config`) and pick up an edit. Every [`POLL`] each file's
//! modified time, length and content digest are read by path (an editor that saves by renaming
//! a new file over the old one is seen like any other write); on a change the whole
//! configuration is built anew — the document loaded, the view resolved, a gateway started over
//! the new upstreams and their lists fetched — and only then swapped in: sessions carry on with
//! the new lists (their streams' ticks send `list_changed`), each keeping its view; the old
//! gateway is retired (its stdio upstreams' processes stopped, its retries ended). An edit with
//! errors changes nothing: every error is logged with its file, line, column and field, and the
//! running configuration stays. What cannot change live (the port, `--host`, the `auth` block)
//! is named in the log. Every upstream is restarted by a reload, not only the changed ones.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use mcp_sieve::filter::EndpointView;
use mcp_sieve::protocol::Server;
use sha2::{Digest, Sha256};

use crate::cli::{Source, ViewArgs};
use crate::error::ServerError;
use crate::gateway::{Gateway, Wait};
use crate::outbox::Clients;

/// How often the files are looked at.
pub const POLL: Duration = Duration::from_millis(500);

/// What a server runs on: swapped whole by a reload.
#[derive(Clone)]
pub struct Live {
    pub server: Arc<Server>,
    pub gateway: Option<Gateway>,
    /// The view of `stdio` (its flags, resolved over this catalog); `None` for `serve`.
    pub view: Option<Arc<EndpointView>>,
}

/// A server whose configuration a reload replaces.
pub trait Holder: Send + Sync + 'static {
    /// Swaps in `live`, handing back what ran before.
    fn replace(&self, live: Live) -> Live;
}

/// The files a source is read from (none: the built-in catalog, nothing to watch).
pub fn files(source: &Source) -> Vec<PathBuf> {
    [&source.catalog, &source.mcp_config]
        .into_iter()
        .flatten()
        .map(|p| crate::platform::expand_home(p))
        .collect()
}

/// A file as last seen: modified time, length, digest of its content (`None`: it is missing).
type Stamp = Option<(SystemTime, u64, [u8; 32])>;

fn stamps(paths: &[PathBuf]) -> Vec<Stamp> {
    paths
        .iter()
        .map(|p| {
            let meta = std::fs::metadata(p).ok()?;
            let text = std::fs::read(p).ok()?;
            Some((
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                meta.len(),
                Sha256::digest(&text).into(),
            ))
        })
        .collect()
}

/// Builds what `source` describes now: the server, its view (`view`: stdio's flags; `None`:
/// serve's), and a gateway over its upstreams whose lists are fetched (the slow ones join later).
pub async fn build(source: &Source, view: Option<&ViewArgs>) -> Result<Live, ServerError> {
    let doc = crate::load::document(source)?;
    // `serve` (no view flags) applies the lockdown variable as at its start.
    let var = std::env::var(mcp_sieve::catalog::Lockdown::VAR).ok();
    let text = match view.is_none() && mcp_sieve::catalog::Lockdown::var_enables(var.as_deref()) {
        true => mcp_sieve::catalog::Lockdown::enable_in(&doc.text)?,
        false => doc.text.clone(),
    };
    let server = Arc::new(Server::new(doc.catalog(&text)?));
    crate::load::index_in_background(&server);
    let view = match view {
        Some(v) => v.resolve(server.catalog())?,
        None => None,
    };
    let gateway = Gateway::new(server.clone(), &crate::load::folder(source), Wait::Patient)?;
    if let Some(g) = &gateway {
        if let Err(e) = g.serving(&server).await {
            eprintln!("mcp-sieve: the upstreams are not reachable yet: {e}");
        }
        for line in crate::progress::lines(&g.status()) {
            eprintln!("{line}");
        }
        g.keep_retrying();
    }
    Ok(Live { server, gateway, view })
}

/// The names of the upstreams of `live`.
fn upstreams(live: &Live) -> Vec<String> {
    live.server.catalog().upstreams.iter().map(|u| u.name.clone()).collect()
}

/// Watches `source`'s files and reloads `holder` when they change, for the life of the process
/// (`view`: stdio's view flags, resolved anew); a new gateway's upstreams reach `clients` (see
/// `Gateway::attach`). `fixed` names what a reload cannot change (said with each reload).
pub fn spawn(
    holder: Arc<dyn Holder>,
    clients: Weak<dyn Clients>,
    (source, view): (Source, Option<ViewArgs>),
    fixed: &'static str,
) {
    let paths = files(&source);
    if paths.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let mut seen = stamps(&paths);
        loop {
            tokio::time::sleep(POLL).await;
            let now = stamps(&paths);
            if now == seen {
                continue;
            }
            seen = now;
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let started = std::time::Instant::now();
            match build(&source, view.as_ref()).await {
                Err(e) => {
                    for line in e.to_string().lines() {
                        eprintln!("mcp-sieve: reload: {line}");
                    }
                    eprintln!(
                        "mcp-sieve: reload: {} not applied; the running configuration stays",
                        names.join(" and ")
                    );
                }
                Ok(new) => {
                    if let Some(g) = &new.gateway {
                        g.attach(clients.clone());
                    }
                    let after = upstreams(&new);
                    let auth_changed = new.server.catalog().auth.is_some();
                    let old = holder.replace(new.clone());
                    let before = upstreams(&old);
                    let gone: Vec<&String> = before.iter().filter(|n| !after.contains(n)).collect();
                    let added: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
                    eprintln!(
                        "mcp-sieve: reload: {} applied in {} ms ({} upstreams{}{}); {fixed} take effect at the next start{}",
                        names.join(" and "),
                        started.elapsed().as_millis(),
                        after.len(),
                        list(", started: ", &added),
                        list(", stopped: ", &gone),
                        if auth_changed || old.server.catalog().auth.is_some() {
                            " (the auth block among them)"
                        } else {
                            ""
                        }
                    );
                    if let Some(g) = &old.gateway {
                        g.retire().await;
                    }
                }
            }
        }
    });
}

/// `prefix` and the names, or nothing when there are none.
fn list(prefix: &str, names: &[&String]) -> String {
    match names.is_empty() {
        true => String::new(),
        false => format!(
            "{prefix}{}",
            names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_over_the_file_is_a_change() {
        let dir = std::env::temp_dir().join(format!("sieve-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("servers.json");
        std::fs::write(&file, "{\"mcpServers\": {}}").unwrap();
        let first = stamps(std::slice::from_ref(&file));
        assert_eq!(first, stamps(std::slice::from_ref(&file)), "nothing changed");
        // A new file renamed over it, as editors save.
        let next = dir.join("servers.json.new");
        std::fs::write(&next, "{\"mcpServers\": {} }").unwrap();
        std::fs::rename(&next, &file).unwrap();
        assert_ne!(first, stamps(std::slice::from_ref(&file)));
        std::fs::remove_file(&file).unwrap();
        assert_eq!(stamps(std::slice::from_ref(&file)), vec![None]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
