//! The tools' sentence vectors, made off the path of requests (issue 40): when the document has
//! `"search": {"model": …}` — a folder, or a Hugging Face model id fetched first (`crate::search::hub`,
//! issue 61) — a thread of its own encodes each tool whose definition it has
//! not seen before (its `mcp_sieve::pin::digest`), keeps every vector in a cache file per model
//! (so a restart or an upstream refresh encodes only what changed), and then fills the catalog's
//! slot (`mcp_sieve::search::hybrid`), from when on `find_tools` fuses words and meaning. Until
//! then, and if anything here fails (said in the log), search is lexical. Progress is in the log
//! and in the gateway's status (`search`). A document that names no model gets
//! [`crate::search::hub::DEFAULT_MODEL`] once the process serves search mode (`stdio --search`, a
//! request with `mode=search` or to a search view: [`searched`]); `"model": false` or
//! `--search-model none` keeps search lexical. A hub that cannot be reached is said once and
//! tried again later, with a growing delay.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use mcp_sieve::search::hybrid::{Meaning, Settings, Slot, VectorsError};

use crate::search::encoder::{encoded_text, Encoder, ModelError};
use crate::search::hub::{HubError, ModelRef, DEFAULT_MODEL};

/// Tools encoded in one batch (sorted by length, so a batch pads little).
const BATCH: usize = 32;
/// The version of the text a tool is encoded from (`encoded_text`); part of the cache file's name.
const TEXT_FORM: &str = "t2";
/// The first wait before fetching again from a hub that could not be reached; it doubles up to
/// [`LAST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(5);
/// The longest wait between two tries.
const LAST_RETRY: Duration = Duration::from_secs(15 * 60);

/// Encoders loaded by this process, by folder (a refresh reuses its catalog's).
static ENCODERS: Mutex<Vec<(PathBuf, Arc<Encoder>)>> = Mutex::new(Vec::new());
/// The latest catalog's slot and model (folder or id), for the status.
static LATEST: Mutex<Option<(String, Weak<Slot>)>> = Mutex::new(None);
/// `--search-model`: over every document's `search.model` (`none`: no model).
static OVERRIDE: OnceLock<String> = OnceLock::new();
/// Whether this process has served search mode (the default model is then wanted).
static SEARCHING: AtomicBool = AtomicBool::new(false);
/// Catalogs waiting for search mode before fetching the default model.
static PENDING: Mutex<Vec<Job>> = Mutex::new(Vec::new());
/// Models fetched from the hub by this process: label → folder.
static FETCHED: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
/// Models whose failure the log has said (said once per process).
static SAID: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// One fetch at a time (a refreshed catalog's thread waits for the first one's).
static FETCHING: Mutex<()> = Mutex::new(());

/// Sets `--search-model` (a model id, a folder, or `none`) for this process.
pub fn set_override(model: String) {
    let _ = OVERRIDE.set(model);
}

/// Which sentence encoder a catalog's search uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The one named by `search.model` or `--search-model`.
    Named(ModelRef),
    /// None named: [`DEFAULT_MODEL`], once the process serves search mode.
    Default,
}

impl Choice {
    /// The model this choice fetches or reads.
    pub fn model(&self) -> ModelRef {
        match self {
            Choice::Named(m) => m.clone(),
            Choice::Default => ModelRef::Hub {
                id: DEFAULT_MODEL.into(),
                revision: None,
            },
        }
    }
}

/// The choice of `settings` under this process's `--search-model` (`None`: lexical only).
pub fn choice(settings: &Settings) -> Option<Choice> {
    match OVERRIDE.get().map(String::as_str) {
        Some(m) if m.eq_ignore_ascii_case("none") => return None,
        Some(m) => return Some(Choice::Named(ModelRef::parse(m, None))),
        None => {}
    }
    if settings.no_model {
        return None;
    }
    match &settings.model {
        Some(m) => Some(Choice::Named(ModelRef::parse(m, settings.revision.as_deref()))),
        None => Some(Choice::Default),
    }
}

/// Says that this process serves search mode: the catalogs waiting for it start fetching the
/// default model (the first call only; cheap after).
pub fn searched() {
    if SEARCHING.swap(true, Ordering::AcqRel) {
        return;
    }
    let jobs = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|p| p.into_inner()));
    for job in jobs.into_iter().filter(|j| Arc::strong_count(&j.slot) > 1) {
        job.spawn();
    }
}

/// The vector cache file could not be written (the vectors are kept in memory only).
#[derive(Debug, thiserror::Error)]
#[error("cannot write the vector cache {}: {source}", .path.display())]
pub struct CacheError {
    /// The cache file.
    pub path: PathBuf,
    /// Why it could not be written.
    #[source]
    pub source: std::io::Error,
}

/// Why a catalog's vectors were not made (said in the log; search stays lexical).
#[derive(Debug, thiserror::Error)]
enum MakeError {
    /// The model could not be loaded or could not encode.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The catalog's slot refused the vectors.
    #[error(transparent)]
    Slot(#[from] VectorsError),
}

/// The encoder of `dir`, loaded once per process.
pub fn encoder(dir: &Path) -> Result<Arc<Encoder>, ModelError> {
    let mut loaded = ENCODERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, e)) = loaded.iter().find(|(d, _)| d == dir) {
        return Ok(Arc::clone(e));
    }
    let e = Arc::new(Encoder::load(dir)?);
    loaded.push((dir.to_path_buf(), Arc::clone(&e)));
    Ok(e)
}

/// The folder of the document's `search.model` when it is on this machine: a folder, or a model
/// this process has fetched (`None`: lexical, or not fetched yet).
pub fn model_dir(slot: &Slot) -> Option<PathBuf> {
    match choice(&slot.settings)? {
        Choice::Named(ModelRef::Folder(dir)) => Some(dir),
        Choice::Named(hub) => FETCHED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(label, _)| *label == hub.label())
            .map(|(_, dir)| dir.clone()),
        Choice::Default => None,
    }
}

/// The folder of the document's `search.model`, fetched from the hub when it is a model id
/// (`mcp-sieve index`); `None` when the document names none.
pub async fn fetched_dir(slot: &Slot) -> Result<Option<PathBuf>, HubError> {
    match choice(&slot.settings) {
        Some(Choice::Named(ModelRef::Folder(dir))) => Ok(Some(dir)),
        Some(Choice::Named(ModelRef::Hub { id, revision })) => {
            crate::search::hub::fetch(&id, revision.as_deref()).await.map(Some)
        }
        _ => Ok(None),
    }
}

/// Checks at startup that a model folder's files are there (an error names the missing one); a
/// model id is fetched later, in the background.
pub fn check(catalog: &mcp_sieve::Catalog) -> Result<(), ModelError> {
    match choice(&catalog.meaning.settings) {
        Some(Choice::Named(ModelRef::Folder(d))) => crate::search::encoder::check(&d),
        _ => Ok(()),
    }
}

/// The cache folder: the document's `search.cache`, else `$XDG_CACHE_HOME/mcp-sieve/vectors`,
/// else `~/.cache/mcp-sieve/vectors`.
pub fn cache_dir(slot: &Slot) -> PathBuf {
    if let Some(c) = &slot.settings.cache {
        return crate::platform::expand_home(Path::new(c));
    }
    match (std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(x), _) if !x.is_empty() => Path::new(&x).join("mcp-sieve/vectors"),
        (_, Some(h)) => Path::new(&h).join(".cache/mcp-sieve/vectors"),
        _ => PathBuf::from(".mcp-sieve-vectors"),
    }
}

/// Vectors kept on disk by tool digest, for one model and text form.
pub struct Cache {
    path: PathBuf,
    dim: usize,
    /// digest (hex) → vector.
    pub vectors: HashMap<String, Vec<f32>>,
}

impl Cache {
    /// The cache of `encoder` in `dir` (empty when its file is not there yet; a torn last record
    /// is skipped).
    pub fn open(dir: &Path, encoder: &Encoder) -> Cache {
        let path = dir.join(format!("{}-{TEXT_FORM}.vectors", encoder.identity));
        let dim = encoder.dim;
        let mut vectors = HashMap::new();
        if let Ok(bytes) = std::fs::read(&path) {
            for rec in bytes.chunks_exact(64 + 4 * dim) {
                let Ok(digest) = std::str::from_utf8(&rec[..64]) else {
                    continue;
                };
                let v = rec[64..]
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                vectors.insert(digest.to_string(), v);
            }
        }
        Cache { path, dim, vectors }
    }

    /// Appends `new` (digest, vector) to the file and to the map.
    pub fn add(&mut self, new: Vec<(String, Vec<f32>)>) -> Result<(), CacheError> {
        if new.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(new.len() * (64 + 4 * self.dim));
        for (d, v) in &new {
            if d.len() != 64 || v.len() != self.dim {
                continue;
            }
            bytes.extend_from_slice(d.as_bytes());
            v.iter().for_each(|x| bytes.extend_from_slice(&x.to_le_bytes()));
        }
        let write = || -> std::io::Result<()> {
            if let Some(parent) = self.path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
            f.write_all(&bytes)
        };
        let done = write().map_err(|source| CacheError {
            path: self.path.clone(),
            source,
        });
        self.vectors.extend(new);
        done
    }
}

/// What making a catalog's vectors took.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    /// Tools.
    pub tools: usize,
    /// Found in the cache.
    pub cached: usize,
    /// Encoded now.
    pub encoded: usize,
}

/// The wire JSON of `catalog`'s tools, in catalog order (what [`vectors`] takes).
pub fn tool_fragments(catalog: &mcp_sieve::Catalog) -> Vec<String> {
    catalog
        .section(mcp_sieve::model::Kind::Tool)
        .items
        .iter()
        .map(|p| p.fragment().to_string())
        .collect()
}

/// A tool's definition parsed from its wire JSON, and its pin digest in hex (the cache's and
/// the Worker's KV key); `None` when the fragment does not parse.
pub fn with_digest(fragment: &str) -> Option<(Value, String)> {
    let tool = serde_json::from_str::<Value>(fragment).ok()?;
    let digest = mcp_sieve::pin::digest(&tool);
    let hex = digest.strip_prefix("sha256:").unwrap_or(&digest).to_string();
    Some((tool, hex))
}

/// The vectors of `tools` (wire JSON, in catalog order): from `cache` where their digest is
/// there, else encoded (then added to it); `progress(done, total)` after each batch.
pub fn vectors(
    tools: &[String],
    encoder: &Encoder,
    cache: &mut Cache,
    progress: &dyn Fn(usize, usize),
) -> Result<(Vec<f32>, Made), ModelError> {
    let dim = encoder.dim;
    let mut out = vec![0f32; tools.len() * dim];
    let mut made = Made {
        tools: tools.len(),
        ..Made::default()
    };
    // (tool, digest, tokens) of those to encode; the same definition twice is encoded once.
    let mut todo: Vec<(usize, String, Vec<u32>)> = Vec::new();
    let mut waiting: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, fragment) in tools.iter().enumerate() {
        let Some((tool, hex)) = with_digest(fragment) else {
            continue;
        };
        if let Some(v) = cache.vectors.get(&hex) {
            out[i * dim..(i + 1) * dim].copy_from_slice(v);
            made.cached += 1;
            continue;
        }
        match waiting.get_mut(&hex) {
            Some(more) => more.push(i),
            None => {
                waiting.insert(hex.clone(), vec![i]);
                todo.push((i, hex, encoder.tokens(&encoded_text(&tool))?));
            }
        }
    }
    todo.sort_by_key(|t| t.2.len());
    let total = tools.len();
    let mut done = made.cached;
    progress(done, total);
    for batch in todo.chunks(BATCH) {
        let ids: Vec<Vec<u32>> = batch.iter().map(|t| t.2.clone()).collect();
        let vs = encoder.encode_tokens(&ids)?;
        let mut new = Vec::with_capacity(batch.len());
        for ((_, hex, _), v) in batch.iter().zip(vs) {
            for &i in &waiting[hex] {
                out[i * dim..(i + 1) * dim].copy_from_slice(&v);
                done += 1;
            }
            made.encoded += 1;
            new.push((hex.clone(), v));
        }
        if let Err(e) = cache.add(new) {
            eprintln!("mcp-sieve: warning: {e}; the vectors are kept in memory only");
        }
        progress(done, total);
    }
    Ok((out, made))
}

/// Starts making `server`'s tool vectors on a thread of its own when its document names a model,
/// or, for the default model, once the process serves search mode ([`searched`]); nothing when
/// search is lexical only. `find_tools` stays lexical until they are ready.
pub fn start(server: &mcp_sieve::protocol::Server) {
    let catalog = server.catalog();
    let slot = Arc::clone(&catalog.meaning);
    let Some(choice) = choice(&slot.settings) else { return };
    let job = Job {
        model: choice.model(),
        tools: tool_fragments(catalog),
        cache_dir: cache_dir(&slot),
        slot,
    };
    if choice == Choice::Default && !SEARCHING.load(Ordering::Acquire) {
        let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
        pending.retain(|j| Arc::strong_count(&j.slot) > 1);
        pending.push(job);
        drop(pending);
        // Search mode may have begun meanwhile.
        if SEARCHING.load(Ordering::Acquire) {
            let jobs = std::mem::take(&mut *PENDING.lock().unwrap_or_else(|p| p.into_inner()));
            jobs.into_iter().for_each(Job::spawn);
        }
        return;
    }
    job.spawn();
}

/// One catalog's vectors to make.
struct Job {
    model: ModelRef,
    slot: Arc<Slot>,
    tools: Vec<String>,
    cache_dir: PathBuf,
}

impl Job {
    /// Makes the vectors on a thread of its own.
    fn spawn(self) {
        let spawned = std::thread::Builder::new()
            .name("search-vectors".into())
            .spawn(move || self.run());
        if let Err(e) = spawned {
            eprintln!("mcp-sieve: error: cannot start the search-vectors thread ({e}); find_tools stays lexical");
        }
    }

    fn run(self) {
        let Job {
            model,
            slot,
            tools,
            cache_dir,
        } = self;
        *LATEST.lock().unwrap_or_else(|p| p.into_inner()) = Some((model.label(), Arc::downgrade(&slot)));
        slot.progress(0, tools.len());
        let dir = match &model {
            ModelRef::Folder(dir) => dir.clone(),
            ModelRef::Hub { id, revision } => match from_hub(id, revision.as_deref(), &slot) {
                Some(dir) => dir,
                None => return,
            },
        };
        let began = Instant::now();
        let made = (|| -> Result<Made, MakeError> {
            let encoder = encoder(&dir)?;
            let mut cache = Cache::open(&cache_dir, &encoder);
            let last = Mutex::new(Instant::now());
            let report = |done: usize, total: usize| {
                slot.progress(done, total);
                let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
                if last.elapsed().as_secs() >= 5 {
                    *last = Instant::now();
                    eprintln!("mcp-sieve: search vectors: {done} of {total} tools");
                }
            };
            let (vectors, made) = vectors(&tools, &encoder, &mut cache, &report)?;
            let query = Arc::clone(&encoder);
            slot.fill(Meaning {
                dim: encoder.dim,
                vectors,
                encode: Arc::new(move |q: &str| {
                    query
                        .encode(&[q])
                        .map_err(|e| e.to_string())
                        .and_then(|mut v| v.pop().ok_or_else(|| "the encoder answered nothing".to_string()))
                }),
            })
            .map_err(MakeError::Slot)?;
            Ok(made)
        })();
        match made {
            Ok(m) => eprintln!(
                "mcp-sieve: search vectors ready for {} tools ({} from the cache, {} encoded) in {:.1} s; find_tools fuses words and meaning",
                m.tools,
                m.cached,
                m.encoded,
                began.elapsed().as_secs_f64()
            ),
            Err(e) => eprintln!("mcp-sieve: error: {e}; find_tools stays lexical"),
        }
    }
}

/// The folder of hub model `id` at `revision`: from the cache, else fetched, trying again with
/// a growing delay while the hub cannot be reached (said once per model and process); `None`
/// when it cannot be had (said) or `slot`'s catalog is gone meanwhile.
fn from_hub(id: &str, revision: Option<&str>, slot: &Arc<Slot>) -> Option<PathBuf> {
    let label = ModelRef::Hub {
        id: id.into(),
        revision: revision.map(str::to_string),
    }
    .label();
    let mut delay = FIRST_RETRY;
    loop {
        let got = {
            let _one = FETCHING.lock().unwrap_or_else(|p| p.into_inner());
            if Arc::strong_count(slot) == 1 {
                return None;
            }
            crate::search::hub::fetch_blocking(id, revision)
        };
        let first = |label: &str| {
            let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
            let first = !said.iter().any(|s| s == label);
            if first {
                said.push(label.to_string());
            }
            first
        };
        match got {
            Ok(dir) => {
                let mut fetched = FETCHED.lock().unwrap_or_else(|p| p.into_inner());
                if !fetched.iter().any(|(l, _)| *l == label) {
                    fetched.push((label.clone(), dir.clone()));
                }
                let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(i) = said.iter().position(|s| *s == label) {
                    said.remove(i);
                    tracing::info!("{label} was had after all; find_tools will fuse words and meaning");
                }
                return Some(dir);
            }
            Err(e) if !e.retry() => {
                if first(&label) {
                    tracing::warn!("{e}; find_tools stays lexical");
                }
                return None;
            }
            Err(e) => {
                if first(&label) {
                    tracing::warn!(
                        "{e}; find_tools stays lexical meanwhile, and the model is fetched again in {} s (then less often)",
                        delay.as_secs()
                    );
                } else {
                    tracing::debug!("{e}; trying again in {} s", delay.as_secs());
                }
            }
        }
        // Wait, but not for a catalog that was replaced meanwhile.
        let until = Instant::now() + delay;
        while Instant::now() < until {
            if Arc::strong_count(slot) == 1 {
                return None;
            }
            std::thread::sleep(Duration::from_millis(250).min(until - Instant::now()));
        }
        delay = (delay * 2).min(LAST_RETRY);
    }
}

/// The status of the latest catalog's vectors (`None`: no model configured).
pub fn status() -> Option<Value> {
    let latest = LATEST.lock().unwrap_or_else(|p| p.into_inner());
    let (model, slot) = latest.as_ref()?;
    let slot = slot.upgrade()?;
    let (done, total) = slot.status();
    Some(json!({"model": model, "vectors": done, "tools": total, "ready": slot.meaning().is_some()}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_sieve::filter::Bits;
    use mcp_sieve::protocol::search::ranked;

    /// The model scripts/bootstrap.sh unpacks (the test fails, naming it, when it is not there).
    fn model() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/models/all-minilm-l6-v2")
    }

    /// The SaaS catalog's tools (Sentry, Notion, Stripe).
    fn saas() -> mcp_sieve::Catalog {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/saas-servers.json");
        mcp_sieve::Catalog::from_json_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn top(c: &mcp_sieve::Catalog, q: &str) -> String {
        let items = &c.section(mcp_sieve::model::Kind::Tool).items;
        let first = ranked(c, q, &Bits::full(items.len()), 5);
        first.first().map(|&d| items[d].name.clone()).unwrap_or_default()
    }

    /// The real model: a paraphrase the lexical index ranks wrong is ranked right once the
    /// vectors are in; a second start encodes nothing (every vector from the cache).
    #[test]
    fn the_real_model_finds_a_paraphrase_and_a_restart_encodes_nothing() {
        let dir = model();
        let enc = encoder(&dir).unwrap_or_else(|e| panic!("{e} (run scripts/bootstrap.sh)"));
        assert_eq!(enc.dim, 384);
        let cache_dir = std::env::temp_dir().join(format!("mcp-sieve-vectors-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&cache_dir);
        let catalog = saas();
        let tools = tool_fragments(&catalog);
        let calls = Mutex::new(0);
        let count = |_: usize, _: usize| *calls.lock().unwrap() += 1;
        let mut cache = Cache::open(&cache_dir, &enc);
        let (first, made) = vectors(&tools, &enc, &mut cache, &count).unwrap();
        let n = tools.len();
        assert_eq!((made.tools, made.cached, made.encoded), (n, 0, n));
        assert!(*calls.lock().unwrap() >= 2, "progress is reported");
        // The query a person would write, sharing no word with the tool's name or description.
        let query = "give this buyer their money back";
        let lexical = top(&catalog, query);
        assert_ne!(
            lexical, "create_refund",
            "the lexical index alone ranks it first already"
        );
        let q = Arc::clone(&enc);
        catalog
            .meaning
            .fill(Meaning {
                dim: enc.dim,
                vectors: first,
                encode: Arc::new(move |t: &str| {
                    q.encode(&[t])
                        .map_err(|e| e.to_string())
                        .and_then(|mut v| v.pop().ok_or_else(|| "the encoder answered nothing".to_string()))
                }),
            })
            .unwrap();
        assert_eq!(top(&catalog, query), "create_refund", "lexical alone said {lexical}");
        // A second start: a new cache read from the file, nothing encoded.
        let mut again = Cache::open(&cache_dir, &enc);
        assert_eq!(again.vectors.len(), n);
        let (same, made) = vectors(&tools, &enc, &mut again, &|_, _| {}).unwrap();
        assert_eq!((made.cached, made.encoded), (n, 0));
        assert_eq!(same, catalog.meaning.meaning().unwrap().vectors);
        // One tool changed: only it is encoded.
        let mut changed = tools.clone();
        changed[0] = changed[0].replacen("\"description\":\"", "\"description\":\"Changed. ", 1);
        assert_ne!(changed[0], tools[0]);
        let (_, made) = vectors(&changed, &enc, &mut again, &|_, _| {}).unwrap();
        assert_eq!((made.cached, made.encoded), (n - 1, 1));
        std::fs::remove_dir_all(&cache_dir).unwrap();
    }

    /// A document naming a model folder without its weights is refused, naming the file.
    #[test]
    fn a_missing_model_file_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("mcp-sieve-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), "{}").unwrap();
        std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
        let doc = json!({"tools": [{"name": "a"}], "search": {"model": dir.display().to_string()}});
        let catalog = mcp_sieve::Catalog::from_json_str(&doc.to_string()).unwrap();
        let e = check(&catalog).unwrap_err().to_string();
        assert!(
            e.contains(&dir.join("model.safetensors").display().to_string()) && e.contains("is missing"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
