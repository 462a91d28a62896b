//! Sentence encoders named the way the field names them (issue 61): `search.model` may be a
//! Hugging Face model id (`sentence-transformers/all-MiniLM-L6-v2`, at `search.revision`), fetched
//! on first use by the Hub's own Rust client (`hf-hub`) into the Hugging Face cache layout
//! (`models--owner--name/{blobs,snapshots,refs}` under `HF_HUB_CACHE`, else `$HF_HOME/hub`, else
//! `~/.cache/huggingface/hub`; `HF_ENDPOINT` and `HF_TOKEN` read by the client as
//! `huggingface_hub` reads them). Two things the client does not do are done here:
//! `HF_HUB_OFFLINE` (the cache only, never a request) and checking a fetched LFS file against
//! the sha256 the hub announced (its `X-Linked-Etag`, which names the blob); a file that does not
//! match is deleted and refused. A model already in the cache is used without any request, and
//! without the client: the cache's layout is read here, since the client's HTTP stack will not
//! start on a machine without CA certificates (a scratch or distroless image), where a cached
//! model must still work; a fetch there fails with [`HubError::Client`], naming the cause.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hf_hub::progress::{DownloadEvent, ProgressEvent, ProgressHandler};
use hf_hub::{HFClient, HFError};
use sha2::{Digest, Sha256};

/// The model search mode uses when the document and the flags name none.
pub const DEFAULT_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// About what fetching [`DEFAULT_MODEL`] downloads (its three files), for `init` and `connect`.
pub const DEFAULT_SIZE: &str = "about 90 MB";
/// The files a sentence encoder's folder needs (`crate::search::encoder`).
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// How often a progress line is written when stderr is not a terminal.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// What `search.model` (or `--search-model`) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelRef {
    /// A folder on this machine holding [`FILES`].
    Folder(PathBuf),
    /// A model on the Hugging Face Hub.
    Hub {
        /// `owner/name`.
        id: String,
        /// A branch, tag or commit (`main` when `None`).
        revision: Option<String>,
    },
}

impl ModelRef {
    /// Reads `name` as transformers does: an existing folder is a folder; else `owner/name`
    /// (letters, digits, `-`, `_`, `.`; one slash) is a model id; else a folder (whose missing
    /// files the startup check names).
    pub fn parse(name: &str, revision: Option<&str>) -> ModelRef {
        let path = crate::platform::expand_home(Path::new(name));
        if path.is_dir() || !is_model_id(name) {
            return ModelRef::Folder(path);
        }
        ModelRef::Hub {
            id: name.to_string(),
            revision: revision.map(str::to_string),
        }
    }

    /// How the log names it: the folder, or `id` (`id@revision`).
    pub fn label(&self) -> String {
        match self {
            ModelRef::Folder(p) => p.display().to_string(),
            ModelRef::Hub { id, revision: None } => id.clone(),
            ModelRef::Hub { id, revision: Some(r) } => format!("{id}@{r}"),
        }
    }
}

/// Whether `s` is written as a Hub model id, `owner/name`.
pub fn is_model_id(s: &str) -> bool {
    let ok = |part: &str| {
        !part.is_empty()
            && !part.starts_with(['.', '-'])
            && part.len() <= 96
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    matches!(s.split_once('/'), Some((owner, name)) if ok(owner) && ok(name) && !s.contains(".."))
}

/// Why a model could not be had from the hub.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// `HF_HUB_OFFLINE` is set and the cache does not hold the model.
    #[error("{model} is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE is set; fetch it while online with `mcp-sieve search-model fetch {model}`")]
    Offline {
        /// The model's label.
        model: String,
        /// The cache folder looked in.
        cache: String,
    },
    /// The hub did not answer (refused, unresolvable, timed out, 5xx).
    #[error("cannot reach the model hub at {endpoint} for {model}: {reason}")]
    Unreachable {
        /// `HF_ENDPOINT` or huggingface.co.
        endpoint: String,
        /// The model's label.
        model: String,
        /// The client's error.
        reason: String,
    },
    /// The hub answered that the model, revision or file is not there, or not for us.
    #[error("the model hub at {endpoint} has no {model} (or refuses it): {reason}")]
    Missing {
        /// `HF_ENDPOINT` or huggingface.co.
        endpoint: String,
        /// The model's label.
        model: String,
        /// The client's error.
        reason: String,
    },
    /// A fetched file's bytes are not the ones the hub announced.
    #[error("{file} of {model} does not match the hub's hash (sha256 {got}, announced {expected}); it was deleted and is fetched again later")]
    Hash {
        /// The model's label.
        model: String,
        /// The file's name.
        file: String,
        /// The announced sha256.
        expected: String,
        /// The sha256 of the bytes received.
        got: String,
    },
    /// The Hugging Face client could not start (its HTTP stack found no CA certificates, say),
    /// and the model is not in the cache.
    #[error("cannot start the Hugging Face client to fetch {model}: {reason}; the model is not in the Hugging Face cache ({cache}) either (on a machine without CA certificates, point SSL_CERT_FILE or SSL_CERT_DIR at a CA bundle, or copy the cache from a machine that fetched it)")]
    Client {
        /// The model's label.
        model: String,
        /// The client's error and its causes.
        reason: String,
        /// The cache folder looked in.
        cache: String,
    },
    /// Anything else (the cache folder, a runtime).
    #[error("fetching {model}: {reason}")]
    Other {
        /// The model's label.
        model: String,
        /// What went wrong.
        reason: String,
    },
}

impl HubError {
    /// Whether trying again later may succeed (not for a model the hub does not have, or offline).
    pub fn retry(&self) -> bool {
        matches!(
            self,
            // Not `Client`: a machine without CA certificates does not grow them.
            HubError::Unreachable { .. } | HubError::Hash { .. } | HubError::Other { .. }
        )
    }
}

/// The snapshot folder of `id` at `main` when the cache holds all of [`FILES`], read from the
/// cache's layout without the client (for commands that run no runtime).
pub fn cached_now(id: &str) -> Option<PathBuf> {
    cached_in(&cache_folder(), id, None)
}

/// The snapshot folder of `id` at `revision` (`main` when `None`) in the cache at `cache` when it
/// holds all of [`FILES`], read from its layout as hf-hub reads it with `local_files_only`: a
/// 40-digit commit names its snapshot, any other revision the commit in `refs/<revision>`.
fn cached_in(cache: &Path, id: &str, revision: Option<&str>) -> Option<PathBuf> {
    let repo = cache.join(format!("models--{}", id.replace('/', "--")));
    let revision = revision.unwrap_or("main");
    let commit = if revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit()) {
        revision.to_string()
    } else {
        std::fs::read_to_string(repo.join("refs").join(revision))
            .ok()?
            .trim()
            .to_string()
    };
    if commit.is_empty() || commit.contains(['/', '\\']) || commit.starts_with('.') {
        return None;
    }
    let dir = repo.join("snapshots").join(commit);
    FILES.iter().all(|f| dir.join(f).is_file()).then_some(dir)
}

/// What search mode will fetch, for `init` and `connect` to say.
pub fn default_note() -> String {
    match cached_now(DEFAULT_MODEL) {
        Some(dir) => format!(
            "search mode ranks by meaning too, with {DEFAULT_MODEL}, already in the Hugging Face cache ({})",
            dir.display()
        ),
        None => format!(
            "search mode ranks by meaning too, with {DEFAULT_MODEL}: {DEFAULT_SIZE} fetched from the Hugging Face Hub on first use, into {} (search is lexical until it is there); `mcp-sieve search-model fetch` fetches it now, --search-model none or \"search\": {{\"model\": false}} does without",
            cache_folder().display()
        ),
    }
}

/// `HF_HUB_OFFLINE` as `huggingface_hub` reads it: `1`, `ON`, `YES` or `TRUE` (any case).
pub fn offline() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .is_ok_and(|v| ["1", "ON", "YES", "TRUE"].contains(&v.trim().to_ascii_uppercase().as_str()))
}

/// A client reading `HF_ENDPOINT`, `HF_TOKEN`, `HF_HOME` and `HF_HUB_CACHE`, or why it cannot
/// start (for a model the cache does not hold).
fn client(model: &str) -> Result<HFClient, HubError> {
    HFClient::builder()
        .user_agent(format!("mcp-sieve/{}; hf-hub/1", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| HubError::Client {
            model: model.to_string(),
            reason: with_causes(&e),
            cache: cache_folder().display().to_string(),
        })
}

/// An error's text followed by each cause's that it does not already say (reqwest's "builder
/// error" hides the TLS stack's "No CA certificates were loaded from the system" in its source).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !text.contains(&said) {
            text = format!("{text}: {said}");
        }
        cause = c.source();
    }
    text
}

/// The Hugging Face cache folder in use.
pub fn cache_folder() -> PathBuf {
    hf_hub::resolve_cache_dir()
}

/// The snapshot folder of `id` at `revision` when the cache holds all of [`FILES`] (no request,
/// no client).
pub fn cached(id: &str, revision: Option<&str>) -> Option<PathBuf> {
    cached_in(&cache_folder(), id, revision)
}

/// The folder of `id` at `revision`: from the cache when it holds every file (no request), else
/// fetched (each file checked, progress on stderr), else why not. With `HF_HUB_OFFLINE` only
/// the cache is read.
pub async fn fetch(id: &str, revision: Option<&str>) -> Result<PathBuf, HubError> {
    let label = match revision {
        Some(r) => format!("{id}@{r}"),
        None => id.to_string(),
    };
    if let Some(dir) = cached(id, revision) {
        return Ok(dir);
    }
    if offline() {
        return Err(HubError::Offline {
            model: label,
            cache: cache_folder().display().to_string(),
        });
    }
    let client = client(&label)?;
    let endpoint = client.endpoint().to_string();
    let (owner, name) = hf_hub::split_id(id);
    let repo = client.model(owner, name);
    let began = Instant::now();
    let bar = std::sync::Arc::new(Bar::new(&label));
    let mut dir = PathBuf::new();
    let mut bytes = 0u64;
    for file in FILES {
        let path = repo
            .download_file()
            .filename(file)
            .maybe_revision(revision.map(str::to_string))
            .progress(std::sync::Arc::clone(&bar))
            .send()
            .await
            .map_err(|e| classify(e, &endpoint, &label))?;
        bar.done();
        verify(&path, file, &label)?;
        bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
        dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    }
    tracing::info!(
        "fetched {label} ({:.1} MB, checked against the hub's hashes) from {endpoint} into {} in {:.1} s",
        bytes as f64 / 1e6,
        dir.display(),
        began.elapsed().as_secs_f64()
    );
    Ok(dir)
}

/// [`fetch`] from a thread that is not in a tokio runtime (the vectors' thread): on a runtime of
/// its own, current-thread.
pub fn fetch_blocking(id: &str, revision: Option<&str>) -> Result<PathBuf, HubError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HubError::Other {
            model: id.to_string(),
            reason: format!("cannot start a runtime: {e}"),
        })?;
    runtime.block_on(fetch(id, revision))
}

/// The client's error as ours: a hub that does not answer can be tried again, one that says
/// the model is not there cannot.
fn classify(e: HFError, endpoint: &str, model: &str) -> HubError {
    let (endpoint, model, reason) = (endpoint.to_string(), model.to_string(), e.to_string());
    match e {
        HFError::RepoNotFound { .. }
        | HFError::RevisionNotFound { .. }
        | HFError::EntryNotFound { .. }
        | HFError::AuthRequired { .. }
        | HFError::Forbidden { .. } => HubError::Missing {
            endpoint,
            model,
            reason,
        },
        HFError::Request { .. }
        | HFError::Http { .. }
        | HFError::RateLimited { .. }
        | HFError::MalformedResponse { .. } => HubError::Unreachable {
            endpoint,
            model,
            reason,
        },
        _ => HubError::Other { model, reason },
    }
}

/// Checks the file at `path` (a snapshot's link to its blob, which the client names by the
/// hub's ETag) against that ETag when it is a sha256 (an LFS file: `X-Linked-Etag`); a file that
/// does not match is deleted with its link, so the next try fetches it again. Git-stored files
/// (a 40-digit git hash) are not checked here.
fn verify(path: &Path, file: &str, model: &str) -> Result<(), HubError> {
    let other = |reason: String| HubError::Other {
        model: model.to_string(),
        reason,
    };
    let Ok(target) = std::fs::read_link(path) else {
        // A copy, not a link (Windows without symlinks): the blob's name is not at hand.
        return Ok(());
    };
    let etag = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    if etag.len() != 64 || !etag.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    let blob = path.parent().map_or(target.clone(), |p| p.join(&target));
    let got = sha256_of(&blob).map_err(|e| other(format!("cannot read {}: {e}", blob.display())))?;
    if got.eq_ignore_ascii_case(&etag) {
        return Ok(());
    }
    let _ = std::fs::remove_file(&blob);
    let _ = std::fs::remove_file(path);
    Err(HubError::Hash {
        model: model.to_string(),
        file: file.to_string(),
        expected: etag,
        got,
    })
}

/// The sha256 of a file, in hex.
fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Download progress on stderr: a bar redrawn in place when stderr is a terminal, else a log
/// line when a file starts and every [`LINE_EVERY`].
struct Bar {
    model: String,
    tty: bool,
    /// (file, bytes, total, when last drawn or written).
    state: Mutex<(String, u64, u64, Option<Instant>)>,
}

impl Bar {
    fn new(model: &str) -> Bar {
        Bar {
            model: model.to_string(),
            tty: std::io::stderr().is_terminal(),
            state: Mutex::new((String::new(), 0, 0, None)),
        }
    }

    /// A file is finished: the bar's line is ended.
    fn done(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if self.tty && s.3.is_some() {
            self.draw(&s.0, s.2, s.2);
            eprintln!();
        }
        s.3 = None;
    }

    fn draw(&self, file: &str, done: u64, total: u64) {
        const WIDTH: u64 = 30;
        let filled = (done.saturating_mul(WIDTH)).checked_div(total).unwrap_or(0).min(WIDTH) as usize;
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\rmcp-sieve: fetching {} {file} [{}{}] {:.1} / {:.1} MB",
            self.model,
            "#".repeat(filled),
            " ".repeat(WIDTH as usize - filled),
            done as f64 / 1e6,
            total as f64 / 1e6
        );
        let _ = err.flush();
    }
}

impl ProgressHandler for Bar {
    fn on_progress(&self, event: &ProgressEvent) {
        let ProgressEvent::Download(DownloadEvent::Progress { files }) = event else {
            return;
        };
        let Some(f) = files.last() else { return };
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let first = s.3.is_none() || s.0 != f.filename;
        *s = (f.filename.clone(), f.bytes_completed, f.total_bytes, s.3);
        let due = s.3.is_none_or(|t| {
            t.elapsed()
                >= if self.tty {
                    Duration::from_millis(100)
                } else {
                    LINE_EVERY
                }
        });
        if !(first || due) {
            return;
        }
        s.3 = Some(Instant::now());
        if self.tty {
            self.draw(&f.filename, f.bytes_completed, f.total_bytes);
        } else if first {
            tracing::info!(
                "fetching {} from the model hub: {} ({:.1} MB)",
                self.model,
                f.filename,
                f.total_bytes as f64 / 1e6
            );
        } else {
            tracing::info!(
                "fetching {}: {} {:.1} of {:.1} MB",
                self.model,
                f.filename,
                f.bytes_completed as f64 / 1e6,
                f.total_bytes as f64 / 1e6
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_as_transformers_reads_them() {
        assert_eq!(
            ModelRef::parse("sentence-transformers/all-MiniLM-L6-v2", Some("main")),
            ModelRef::Hub {
                id: "sentence-transformers/all-MiniLM-L6-v2".into(),
                revision: Some("main".into())
            }
        );
        for folder in [
            "target/models/all-minilm-l6-v2",
            "./m/x",
            "/abs/x",
            "~/m",
            "models",
            "a/../b",
            "a/b c",
        ] {
            assert!(matches!(ModelRef::parse(folder, None), ModelRef::Folder(_)), "{folder}");
        }
    }

    /// The cache is read from its layout, without the client (which will not start on a machine
    /// without CA certificates): `refs/main`, another ref, a commit named outright; a file
    /// missing is not cached.
    #[test]
    fn the_cache_is_read_from_its_layout() {
        let cache = std::env::temp_dir().join(format!("hubcache-{}", std::process::id()));
        let repo = cache.join("models--o--n");
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let snap = repo.join("snapshots").join(commit);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();
        std::fs::write(repo.join("refs/v1"), commit).unwrap();
        for f in &FILES[..2] {
            std::fs::write(snap.join(f), "{}").unwrap();
        }
        assert_eq!(cached_in(&cache, "o/n", None), None, "model.safetensors is missing");
        std::fs::write(snap.join(FILES[2]), "x").unwrap();
        for revision in [None, Some("main"), Some("v1"), Some(commit)] {
            assert_eq!(cached_in(&cache, "o/n", revision), Some(snap.clone()), "{revision:?}");
        }
        assert_eq!(cached_in(&cache, "o/n", Some("v2")), None);
        assert_eq!(cached_in(&cache, "o/other", None), None);
        let _ = std::fs::remove_dir_all(cache);
    }

    #[test]
    fn a_client_that_cannot_start_is_named_with_its_cause() {
        #[derive(Debug, thiserror::Error)]
        #[error("builder error")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::other("No CA certificates were loaded from the system"));
        assert_eq!(
            with_causes(&e),
            "builder error: No CA certificates were loaded from the system"
        );
        let e = HubError::Client {
            model: "o/n".into(),
            reason: with_causes(&e),
            cache: "/c".into(),
        };
        assert!(!e.retry());
        assert!(
            e.to_string()
                .starts_with("cannot start the Hugging Face client to fetch o/n: builder error: No CA"),
            "{e}"
        );
    }

    #[cfg(unix)] // a symlink as the HF cache makes it on Unix (the Windows lane builds the tests too)
    #[test]
    fn a_file_that_is_not_the_announced_blob_is_deleted_and_refused() {
        let dir = std::env::temp_dir().join(format!("hubverify-{}", std::process::id()));
        let blobs = dir.join("blobs");
        let snap = dir.join("snapshots/c0ffee");
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::create_dir_all(&snap).unwrap();
        // The sha256 of "good".
        let good = "770e607624d689265ca6c44884d0807d9b054d23c473c106c72be9de08b7376c";
        std::fs::write(blobs.join(good), b"good").unwrap();
        let link = snap.join("model.safetensors");
        std::os::unix::fs::symlink(format!("../../blobs/{good}"), &link).unwrap();
        assert!(verify(&link, "model.safetensors", "o/n").is_ok());
        std::fs::write(blobs.join(good), b"evil").unwrap();
        let e = verify(&link, "model.safetensors", "o/n").unwrap_err();
        assert!(matches!(e, HubError::Hash { .. }) && e.retry(), "{e}");
        assert!(e.to_string().contains("does not match the hub's hash"), "{e}");
        assert!(!blobs.join(good).exists() && std::fs::symlink_metadata(&link).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
