//! Change without a restart: `serve` and `stdio` watch their catalog document and client
//! configuration (`--catalog`, `--mcp-config`) and pick up an edit. Every [`POLL`] each file's
//! times and length are read by path, and its content digest when they moved or the file had
//! been written less than 2 s before it was last read (an editor that saves by renaming a new
//! file over the old one is seen like any other write); on a change the whole
//! configuration is built anew — the document loaded, the view resolved, a gateway started over
//! the new upstreams and their lists fetched — and only then swapped in: sessions carry on with
//! the new lists (their streams' ticks send `list_changed`), each keeping its view; the old
//! gateway is retired (the processes the new one did not take over stopped, its retries ended)
//! and freed once the requests still on it end. An edit with
//! errors changes nothing: every error is logged with its file, line, column and field, and the
//! running configuration stays. What cannot change live (the port, `--host`, the `auth` block)
//! is named in the log. A stdio upstream whose command, arguments, environment and folder did not
//! change keeps its process (its state, its session, its calls in flight) under the new gateway;
//! a changed one is started anew, a removed one stopped. The log line names each kind. An
//! upstream of any transport that did not change keeps its lists and the session they were
//! fetched over (`upstream::Gateway::carry_over`): a reload asks only the changed ones.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use mcp_sieve::filter::EndpointView;
use mcp_sieve::protocol::Server;
use sha2::{Digest, Sha256};

use crate::cli::{Source, ViewArgs};
use crate::error::ServerError;
use crate::sessions::outbox::Clients;
use crate::upstream::gateway::{Gateway, Wait};

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
    /// The gateway it runs on now (what of it did not change carries on under the next).
    fn running(&self) -> Option<Gateway>;
}

/// The files a source is read from (none: the built-in catalog, nothing to watch).
pub fn files(source: &Source) -> Vec<PathBuf> {
    [&source.catalog, &source.mcp_config]
        .into_iter()
        .flatten()
        .map(|p| crate::platform::expand_home(p))
        .collect()
}

/// A file as last seen (`None`: it is missing). Two are the same when their modified time,
/// length and content digest are.
#[derive(Debug, Clone)]
struct Seen {
    modified: SystemTime,
    len: u64,
    digest: [u8; 32],
    /// Its status change time (Unix: every write or rename moves it, and nothing sets it back).
    changed: Option<SystemTime>,
    /// Read at least [`SETTLED`] after its times: any later write moves them.
    settled: bool,
}

impl PartialEq for Seen {
    fn eq(&self, other: &Self) -> bool {
        (self.modified, self.len, self.digest) == (other.modified, other.len, other.digest)
    }
}

type Stamp = Option<Seen>;

/// How long after a write a file's times are sure to move with the next one (the coarsest file
/// systems keep them to 2 s).
const SETTLED: Duration = Duration::from_secs(2);

/// The files as they are now; `before` (as last seen) is taken again without reading a file
/// whose times and length have not moved since it was read settled (a 2 MB catalog is not
/// digested every [`POLL`]).
fn stamps(paths: &[PathBuf], before: &[Stamp]) -> Vec<Stamp> {
    paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let meta = std::fs::metadata(p).ok()?;
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let (len, changed) = (meta.len(), changed(&meta));
            // Without a status change time (Windows keeps none that std reads) a file rewritten
            // with its old modified time and length looks the same: it is read and digested each
            // time (found by the Windows lane; a 2 MB catalog's digest is a few ms a poll).
            let same = |s: &&Seen| {
                changed.is_some() && s.settled && (s.modified, s.len, s.changed) == (modified, len, changed)
            };
            if let Some(s) = before.get(i).and_then(Option::as_ref).filter(same) {
                return Some(s.clone());
            }
            let text = std::fs::read(p).ok()?;
            let latest = changed.map_or(modified, |c| c.max(modified));
            Some(Seen {
                modified,
                len,
                digest: Sha256::digest(&text).into(),
                changed,
                settled: SystemTime::now().duration_since(latest).is_ok_and(|d| d >= SETTLED),
            })
        })
        .collect()
}

/// Whether `paths` changed since `seen`, which becomes what they are now even when they did not:
/// a file first seen unsettled (written less than [`SETTLED`] before) is recorded settled once
/// it is, and from then on not read and digested every [`POLL`].
fn changed_since(paths: &[PathBuf], seen: &mut Vec<Stamp>) -> bool {
    let now = stamps(paths, seen);
    let changed = now != *seen;
    *seen = now;
    changed
}

/// The status change time of a file, where the platform keeps one.
fn changed(meta: &std::fs::Metadata) -> Option<SystemTime> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (secs, nanos) = (
            u64::try_from(meta.ctime()).ok()?,
            u32::try_from(meta.ctime_nsec()).ok()?,
        );
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Builds what `source` describes now: the server, its view (`view`: stdio's flags; `None`:
/// serve's), and a gateway over its upstreams whose lists are fetched (the slow ones join later),
/// taking over what of `running` did not change (stdio processes, lists, sessions).
pub async fn build(source: &Source, view: Option<&ViewArgs>, running: Option<&Gateway>) -> Result<Live, ServerError> {
    let doc = crate::config::load::document(source)?;
    // `serve` (no view flags) applies the lockdown variable as at its start.
    let var = std::env::var(mcp_sieve::catalog::Lockdown::VAR).ok();
    let text = match view.is_none() && mcp_sieve::catalog::Lockdown::var_enables(var.as_deref()) {
        true => mcp_sieve::catalog::Lockdown::enable_in(&doc.text)?,
        false => doc.text.clone(),
    };
    let server = Arc::new(Server::new(doc.catalog(&text)?));
    crate::config::load::index_in_background(&server);
    let view = match view {
        Some(v) => v.resolve(server.catalog())?,
        None => None,
    };
    let gateway = Gateway::new(
        server.clone(),
        &crate::config::load::folder(source),
        Wait::Patient,
        running,
    )?;
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
        let mut seen = stamps(&paths, &[]);
        loop {
            tokio::time::sleep(POLL).await;
            if !changed_since(&paths, &mut seen) {
                continue;
            }
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let started = std::time::Instant::now();
            let running = holder.running();
            match build(&source, view.as_ref(), running.as_ref()).await {
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
                    let kept = old
                        .gateway
                        .as_ref()
                        .map(|g| g.kept_by(new.gateway.as_ref()))
                        .unwrap_or_default();
                    let kept: Vec<&String> = kept.iter().collect();
                    // Stdio upstreams of both whose process changed, so was started anew.
                    let processes = new.gateway.as_ref().map(Gateway::processes).unwrap_or_default();
                    let restarted: Vec<&String> = processes
                        .iter()
                        .filter(|n| before.contains(n) && !kept.contains(n))
                        .collect();
                    eprintln!(
                        "mcp-sieve: reload: {} applied in {} ms ({} upstreams{}{}{}{}); {fixed} take effect at the next start{}",
                        names.join(" and "),
                        started.elapsed().as_millis(),
                        after.len(),
                        list(", started: ", &added),
                        list(", stopped: ", &gone),
                        list(", restarted: ", &restarted),
                        list(", kept running: ", &kept),
                        if auth_changed || old.server.catalog().auth.is_some() {
                            " (the auth block among them)"
                        } else {
                            ""
                        }
                    );
                    if let Some(g) = &old.gateway {
                        g.retire(new.gateway.as_ref()).await;
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

    /// `text` written to `name` in a fresh folder of its own; the folder and the file.
    fn scratch(test: &str, name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("sieve-reload-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    /// `file` rewritten with `text`, then given the modified time `at`.
    fn rewrite_at(file: &PathBuf, text: &str, at: SystemTime) {
        std::fs::write(file, text).unwrap();
        let f = std::fs::File::options().write(true).open(file).unwrap();
        f.set_modified(at).unwrap();
    }

    #[test]
    fn a_rename_over_the_file_is_a_change() {
        let (dir, file) = scratch("rename", "servers.json", "{\"mcpServers\": {}}");
        let first = stamps(std::slice::from_ref(&file), &[]);
        assert_eq!(first, stamps(std::slice::from_ref(&file), &first), "nothing changed");
        // A new file renamed over it, as editors save.
        let next = dir.join("servers.json.new");
        std::fs::write(&next, "{\"mcpServers\": {} }").unwrap();
        std::fs::rename(&next, &file).unwrap();
        assert_ne!(first, stamps(std::slice::from_ref(&file), &first));
        std::fs::remove_file(&file).unwrap();
        assert_eq!(stamps(std::slice::from_ref(&file), &first), vec![None]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_first_seen_unsettled_is_kept_settled_once_it_is() {
        let (dir, file) = scratch("unsettled", "catalog.json", "{\"tools\": []}");
        let paths = std::slice::from_ref(&file);
        let mut seen = stamps(paths, &[]);
        assert!(seen[0].as_ref().is_some_and(|s| !s.settled), "written just now");
        std::thread::sleep(SETTLED + Duration::from_millis(100));
        assert!(!changed_since(paths, &mut seen), "nothing changed");
        // Recorded settled: the next polls take it as it was, without reading it again.
        assert!(seen[0].as_ref().is_some_and(|s| s.settled));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_settled_file_rewritten_with_its_old_time_and_length_is_a_change() {
        let (dir, file) = scratch("settled", "catalog.json", "");
        let old = SystemTime::now() - Duration::from_secs(60);
        rewrite_at(&file, "{\"tools\": [1]}", old);
        let first = stamps(std::slice::from_ref(&file), &[]);
        // Unix: its status changed just now. Windows keeps no status change time (std reads
        // none): the old modified time makes it settled, and it is read at every poll instead.
        assert_eq!(
            first[0].as_ref().map(|s| s.settled),
            Some(!cfg!(unix)),
            "settled by its status change time where there is one"
        );
        // Read again once its times are old enough: settled, and taken as it was.
        let mut settled = first.clone();
        settled[0].as_mut().unwrap().settled = true;
        assert_eq!(stamps(std::slice::from_ref(&file), &settled), first);
        // The same length and modified time, other bytes: the status change time tells (Unix),
        // the digest of a file read at every poll (Windows).
        rewrite_at(&file, "{\"tools\": [2]}", old);
        let now = stamps(std::slice::from_ref(&file), &settled);
        assert_ne!(now, settled);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
