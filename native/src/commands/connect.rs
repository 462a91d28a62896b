//! `mcp-sieve connect <client>` and `mcp-sieve disconnect <client>`: put mcp-sieve in front of a
//! desktop client's MCP servers and take it away again. `connect` moves the client's servers to
//! mcp-sieve's servers file and gives the client one `sieve` entry launching
//! `mcp-sieve stdio --mcp-config <servers file>`; it keeps the client's file as it was in
//! `<file>.mcp-sieve-backup` first. `disconnect` gives the client its file back (see
//! `edit::disconnect`). `--dry-run` prints the unified diff of both files and writes nothing.
//! Files are replaced by a rename (a client watching them never reads half a file), keeping
//! their permissions.

pub mod clients;
pub mod diff;
pub mod edit;

use std::path::{Path, PathBuf};

use crate::cli::{ConnectArgs, DisconnectArgs, Where};
use crate::error::ServerError;
use clients::{Client, Places};

/// The backup of a client's file.
pub fn backup_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".mcp-sieve-backup");
    PathBuf::from(name)
}

/// `path` made absolute (from the current folder), `~/` expanded.
fn absolute(path: &Path) -> PathBuf {
    let path = crate::platform::expand_home(path);
    std::path::absolute(&path).unwrap_or(path)
}

/// The client's file and the servers file these flags name.
fn files(client: Client, at: &Where) -> Result<(PathBuf, PathBuf), ServerError> {
    let places = Places::here();
    let file = match &at.config_path {
        Some(p) => absolute(p),
        None => client
            .path(at.project, &places)
            .map_err(|e| ServerError::Usage(e.to_string()))?,
    };
    let servers = match &at.servers {
        Some(p) => absolute(p),
        None => clients::default_servers(&places).map_err(|e| ServerError::Usage(e.to_string()))?,
    };
    Ok((file, servers))
}

/// A file's text, or empty when it does not exist.
fn read_or_empty(path: &Path) -> Result<String, ServerError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(ServerError::Io(format!("cannot read {}", path.display()), e)),
    }
}

/// Writes `text` to `path` through a file beside it renamed over it (its permissions kept).
fn write(path: &Path, text: &str) -> Result<(), ServerError> {
    let io = |what: &str, e| ServerError::Io(format!("cannot {what} {}", path.display()), e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io("create the folder of", e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".mcp-sieve-tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| io("write", e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, path).map_err(|e| io("replace", e))
}

/// Refuses when any of `paths` exists and is read-only: a file the user made read-only is theirs
/// to keep as it is (a rename in a writable folder would replace it all the same), so nothing is
/// written and the message says what to do.
fn refuse_read_only(paths: &[&Path]) -> Result<(), ServerError> {
    for path in paths {
        if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
            return Err(ServerError::Config(format!(
                "{} is read-only: mcp-sieve does not replace a file you made read-only; make it writable (`chmod u+w`, or clear \"Read-only\" in its properties on Windows) and run this again (nothing was changed)",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The arguments of the client's `sieve` entry.
fn launch_args(servers: &Path, a: &ConnectArgs) -> Vec<String> {
    let mut args = vec![
        "stdio".to_string(),
        "--mcp-config".into(),
        servers.display().to_string(),
    ];
    if let Some(c) = &a.catalog {
        args.extend(["--catalog".into(), absolute(c).display().to_string()]);
    }
    if let Some(v) = &a.view {
        args.extend(["--view".into(), v.clone()]);
    }
    if a.code {
        args.push("--code".into());
    } else if a.search {
        args.push("--search".into());
    }
    args
}

/// Prints the diffs of the files that would change.
fn show(changes: &[(&Path, &str, Option<&str>)]) {
    for (path, old, new) in changes {
        let name = path.display().to_string();
        print!("{}", diff::unified(&name, &name, old, new.unwrap_or("")));
    }
}

/// `mcp-sieve connect`.
pub fn connect(a: &ConnectArgs) -> Result<(), ServerError> {
    let (file, servers) = files(a.client, &a.at)?;
    let text = read_or_empty(&file)?;
    let servers_text = read_or_empty(&servers)?;
    let backup = backup_of(&file);
    let exe =
        std::env::current_exe().map_err(|e| ServerError::Io("cannot tell where this mcp-sieve binary is".into(), e))?;
    let entry = a.client.entry(&exe, &launch_args(&servers, a));
    let (f, s) = (file.display().to_string(), servers.display().to_string());
    let done = edit::connect(a.client, (&f, &text), (&s, &servers_text), &entry, backup.exists())
        .map_err(|e| ServerError::Config(e.to_string()))?;
    if done.client == text && done.servers == servers_text {
        eprintln!("mcp-sieve: {f} is connected already: nothing to change");
        return Ok(());
    }
    if a.search || a.code {
        eprintln!("mcp-sieve: {}", crate::search::hub::default_note());
    }
    if a.at.dry_run {
        show(&[
            (&servers, &servers_text, Some(&done.servers)),
            (&file, &text, Some(&done.client)),
        ]);
        return Ok(());
    }
    let mut replaced = vec![file.as_path(), servers.as_path()];
    if done.backup {
        replaced.push(&backup);
    }
    refuse_read_only(&replaced)?;
    if done.backup {
        write(&backup, &text)?;
    }
    write(&servers, &done.servers)?;
    write(&file, &done.client)?;
    let moved = if done.moved.is_empty() {
        "no server".to_string()
    } else {
        done.moved.join(", ")
    };
    eprintln!(
        "mcp-sieve: {} now launches mcp-sieve ({f}, entry \"{}\"); moved to {s}: {moved}; backup: {}; restart the client, and `mcp-sieve disconnect {}` undoes it",
        a.client.name(),
        edit::ENTRY,
        backup.display(),
        a.client.name()
    );
    Ok(())
}

/// `mcp-sieve disconnect`.
pub fn disconnect(a: &DisconnectArgs) -> Result<(), ServerError> {
    let (file, servers) = files(a.client, &a.at)?;
    let backup = backup_of(&file);
    let text = read_or_empty(&file)?;
    let Ok(before) = std::fs::read_to_string(&backup) else {
        let connected = edit::parse(Some(a.client), &file.display().to_string(), &text)
            .map(|d| {
                d.get(a.client.key())
                    .and_then(|l| l.as_object())
                    .is_some_and(|l| l.values().any(edit::launches_sieve))
            })
            .unwrap_or(false);
        return match connected {
            false => {
                eprintln!("mcp-sieve: {} is not connected: nothing to change", file.display());
                Ok(())
            }
            true => Err(ServerError::Config(format!(
                "{} launches mcp-sieve but its backup {} is gone, so which servers were its own is unknown: move them back from {} by hand (nothing was changed)",
                file.display(),
                backup.display(),
                servers.display()
            ))),
        };
    };
    let servers_text = read_or_empty(&servers)?;
    let (f, s) = (file.display().to_string(), servers.display().to_string());
    let done = edit::disconnect(a.client, (&f, &text), &before, (&s, &servers_text))
        .map_err(|e| ServerError::Config(e.to_string()))?;
    for note in &done.notes {
        eprintln!("mcp-sieve: {note}");
    }
    if a.at.dry_run {
        show(&[
            (&file, &text, done.client.as_deref()),
            (&servers, &servers_text, Some(&done.servers)),
        ]);
        return Ok(());
    }
    refuse_read_only(&[&file, &servers])?;
    match &done.client {
        Some(t) => write(&file, t)?,
        None => std::fs::remove_file(&file).map_err(|e| ServerError::Io(format!("cannot remove {f}"), e))?,
    }
    if done.servers != servers_text {
        write(&servers, &done.servers)?;
    }
    std::fs::remove_file(&backup).map_err(|e| ServerError::Io(format!("cannot remove {}", backup.display()), e))?;
    eprintln!(
        "mcp-sieve: {} has its servers back ({f}, {}); restart the client",
        a.client.name(),
        if done.exact {
            "as it was before connect"
        } else {
            "with your edits since connect kept"
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests;
