//! Where the catalog comes from: a catalog document, an MCP client configuration (every server
//! in it an upstream, see `mcp_config`), or both (the document's groups, tags, overlay, views,
//! policy and concerns on top of the configuration's servers); the built-in demo catalog when
//! neither is given. Warnings go to stderr; errors name the file, the line and the field.

use std::path::Path;

use serde_json::{Map, Value};

use crate::cli::Source;
use crate::error::ServerError;
use crate::mcp_config;

/// The built-in demo catalog.
pub const DEFAULT_CATALOG: &str = include_str!("../../catalog/default.json");

/// `path` with a leading `~/` as the home folder (a desktop client passes arguments to the
/// program as written: no shell expands them).
pub fn expand_home(path: &Path) -> std::path::PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => Path::new(&home).join(rest),
        _ => path.to_path_buf(),
    }
}

/// The text of a file, or an error naming it.
pub fn read(path: &Path) -> Result<String, ServerError> {
    let path = expand_home(path);
    std::fs::read_to_string(&path).map_err(|e| ServerError::Io(format!("cannot read {}", path.display()), e))
}

/// What VS Code's `${workspaceFolder}` means for a configuration at `path`: the folder holding
/// its `.vscode` folder, else the file's own folder.
fn workspace(path: &Path) -> String {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = match dir.file_name() {
        Some(n) if n == ".vscode" => dir.parent().unwrap_or(dir),
        _ => dir,
    };
    std::fs::canonicalize(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// The upstreams of the client configuration at `path` (warnings printed to stderr).
pub fn upstreams(path: &Path) -> Result<Map<String, Value>, ServerError> {
    let path = &expand_home(path);
    let text = read(path)?;
    let file = path.display().to_string();
    let c = mcp_config::convert(&text, &|name| std::env::var(name).ok(), &workspace(path));
    for w in &c.warnings {
        eprintln!("mcp-sieve: warning: {}", w.show(&file));
    }
    if c.errors.is_empty() {
        Ok(c.upstreams)
    } else {
        Err(ServerError::Config(
            c.errors.iter().map(|p| p.show(&file)).collect::<Vec<_>>().join("\n"),
        ))
    }
}

/// The folder a document's relative files (the pin lock) are found in: the catalog document's,
/// else the client configuration's, else the current one.
pub fn folder(source: &Source) -> std::path::PathBuf {
    let file = source.catalog.as_ref().or(source.mcp_config.as_ref());
    match file.map(|f| expand_home(f)) {
        Some(f) => f
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf(),
        None => ".".into(),
    }
}

/// The catalog document's text for `source`.
pub fn document(source: &Source) -> Result<String, ServerError> {
    let Some(config) = &source.mcp_config else {
        return match &source.catalog {
            Some(path) => read(path),
            None => Ok(DEFAULT_CATALOG.to_string()),
        };
    };
    let servers = upstreams(config)?;
    let doc = match &source.catalog {
        Some(path) => {
            let text = read(path)?;
            serde_json::from_str::<Value>(&text)
                .map_err(|e| ServerError::Config(format!("{}:{}: not valid JSON: {e}", path.display(), e.line())))?
        }
        None => Value::Object(Map::new()),
    };
    Ok(merge(doc, servers)?.to_string())
}

/// The catalog document `doc` with `servers` (a client configuration's) among its `upstreams`;
/// where the document names the same upstream, its fields win (a prefix, a title).
pub fn merge(mut doc: Value, servers: Map<String, Value>) -> Result<Value, ServerError> {
    let Some(obj) = doc.as_object_mut() else {
        return Err(ServerError::Config("the catalog document must be a JSON object".into()));
    };
    let ups = obj.entry("upstreams").or_insert_with(|| Value::Object(Map::new()));
    let Some(ups) = ups.as_object_mut() else {
        return Err(ServerError::Config(
            "the catalog document's upstreams must be an object".into(),
        ));
    };
    for (name, up) in servers {
        match ups.get_mut(&name).and_then(Value::as_object_mut) {
            Some(mine) => {
                for (k, v) in up.as_object().into_iter().flatten() {
                    mine.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            None => {
                ups.insert(name, up);
            }
        }
    }
    Ok(doc)
}
