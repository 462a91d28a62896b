//! Where the catalog comes from: a catalog document, an MCP client configuration (every server
//! in it an upstream, see `mcp_config`), or both (the document's groups, tags, overlay, views,
//! policy and concerns on top of the configuration's servers); the built-in demo catalog when
//! neither is given. Warnings go to stderr; errors name the file, the line and column, and the
//! field — every error of a document that does not load, not only the first.

use std::path::Path;

use serde_json::{Map, Value};

use mcp_sieve::Catalog;

use crate::cli::Source;
use crate::config::mcp_config;
use crate::error::ServerError;
use crate::platform::expand_home;

/// The built-in demo catalog.
pub const DEFAULT_CATALOG: &str = mcp_sieve::catalog::DEMO_CATALOG;

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
        tracing::warn!("{}", w.show(&file));
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

/// A catalog document as read (composed from its sources), not yet loaded.
pub struct Document {
    /// Its text.
    pub text: String,
    /// The file it was read from and that file's own text, for placing errors; `None` for the
    /// built-in catalog.
    origin: Option<(String, String)>,
}

impl Document {
    /// The catalog `text` (this document's text, or one derived from it) loads into: parsed
    /// once; when it does not load, every error of it, each naming the file, the line and
    /// column, and the field.
    pub fn catalog(&self, text: &str) -> Result<Catalog, ServerError> {
        let mut catalog = Catalog::from_json_str(text).map_err(|first| {
            let (file, file_text) = self
                .origin
                .clone()
                .unwrap_or_else(|| ("the catalog document".into(), text.to_string()));
            let shown = match serde_json::from_str::<Value>(text) {
                Ok(doc) => problems(&doc, &file, &file_text, true),
                Err(_) => Vec::new(),
            };
            ServerError::Config(if shown.is_empty() {
                format!("{file}: {first}")
            } else {
                shown.join("\n")
            })
        })?;
        // A model named by `search.model` must be there (the error names the missing file).
        crate::search::meaning::check(&catalog)?;
        // A server lists it for as long as it runs: every page copied from one buffer.
        catalog.settle();
        Ok(catalog)
    }
}

/// Builds `server`'s search index on a thread of its own, so neither the catalog's load nor a
/// request pays for it (a search that comes before it is done waits for it).
pub fn index_in_background(server: &mcp_sieve::protocol::Server) {
    let job = server.search_job();
    let spawned = std::thread::Builder::new().name("search-index".into()).spawn(job);
    if let Err(e) = spawned {
        tracing::info!("the search index is built on the first search ({e})");
    }
    // The tools' sentence vectors, when the document names a model (`meaning`).
    crate::search::meaning::start(server);
}

/// The catalog document of `source`, read but not loaded ([`Document::catalog`] loads it).
pub fn document(source: &Source) -> Result<Document, ServerError> {
    let (text, origin) = compose(source)?;
    Ok(Document { text, origin })
}

/// Every error of the catalog document `doc`, as `file:line:column: message` lines, each placed
/// where its field is written in `text` (the file's own text) when it is there; with `secrets`,
/// a secret the environment lacks is one too.
pub fn problems(doc: &Value, file: &str, text: &str, secrets: bool) -> Vec<String> {
    let env = |name: &str| std::env::var(name).ok();
    Catalog::problems(doc, secrets.then_some(&env as mcp_sieve::catalog::Secrets))
        .into_iter()
        .map(|e| {
            let message = match e {
                mcp_sieve::Error::Catalog(m) => m,
                other => other.to_string(),
            };
            match mcp_sieve::catalog::locate::position(text, &mcp_sieve::catalog::locate::leading_path(&message)) {
                Some((line, column)) => format!("{file}:{line}:{column}: {message}"),
                None => format!("{file}: {message}"),
            }
        })
        .collect()
}

/// A JSON syntax error in `file`, at its line and column.
fn syntax(file: &Path, e: &serde_json::Error) -> ServerError {
    ServerError::Config(mcp_config::Problem::syntax(e).show(&file.display().to_string()))
}

/// The catalog document's text for `source`, and the file its fields are written in (with its
/// text), if one is.
fn compose(source: &Source) -> Result<(String, Option<(String, String)>), ServerError> {
    let Some(config) = &source.mcp_config else {
        return match &source.catalog {
            Some(path) => {
                let text = read(path)?;
                if let Err(e) = serde_json::from_str::<Value>(&text) {
                    return Err(syntax(path, &e));
                }
                Ok((text.clone(), Some((path.display().to_string(), text))))
            }
            None => Ok((DEFAULT_CATALOG.to_string(), None)),
        };
    };
    let servers = upstreams(config)?;
    let (doc, origin) = match &source.catalog {
        Some(path) => {
            let text = read(path)?;
            let doc = serde_json::from_str::<Value>(&text).map_err(|e| syntax(path, &e))?;
            (doc, (path.display().to_string(), text))
        }
        // The document is the configuration's servers alone: its errors are the configuration's.
        None => (
            Value::Object(Map::new()),
            (expand_home(config).display().to_string(), String::new()),
        ),
    };
    Ok((merge(doc, servers)?.to_string(), Some(origin)))
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
