//! Meaning in the Worker's `find_tools` (issue 40 item 3). No model runs here: the tools' vectors
//! come from KV (`search/<digest>`, base64 text written by `mcp-sieve index` with the document's model, keyed
//! by each tool's pin digest as the native cache is; used only when `search/model` names the
//! queries' model where Workers AI is involved, `model`) and the query's from the Workers AI
//! binding `AI` running `search.ai` (a model's name such as `@cf/baai/bge-small-en-v1.5`; that
//! one by default when the document names no encoder and the binding is there), else from the
//! document's `search.embeddings` URL (an OpenAI-compatible `/v1/embeddings`: OpenAI, Workers AI's
//! REST API, Ollama, vLLM, TEI, or `mcp-sieve serve` with the same model; sent `search.headers`,
//! their `${NAME}` from the Worker's secrets), waited for at most `search.deadlineMs`. The core's
//! encoder (`hybrid::Meaning::encode`) is synchronous, so before a `find_tools` call runs,
//! [`prepare`] fetches its query's vector and leaves it here for the core to take. Past the
//! deadline, on any failure, or while the tools' vectors are not in KV, the core ranks lexically
//! and says so, with the reason, in the answer's `_meta` (`dev.mcp-sieve/search`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::telemetry::log;
use futures_util::future::{join_all, select, Either};
use mcp_sieve::protocol::Server;
use mcp_sieve::search::hybrid::{self, Meaning};
use serde_json::{json, Value};
use wasm_bindgen::JsCast;
use worker::{AbortController, Delay};

/// How long a query's vector is waited for when the document gives no `search.deadlineMs`.
const DEADLINE_MS: u64 = 500;
/// Tool vectors read from KV at once.
const READS: usize = 50;
/// The longest embeddings answer read (a 3,072-number vector is about 65 KB of JSON).
const MAX_ANSWER: usize = 1 << 20;
/// The Workers AI binding `search.ai` runs on.
const AI_BINDING: &str = "AI";

/// Why a `find_tools` call ranks lexically: said in the log, and by the core in the answer's
/// `_meta`.
#[derive(Debug, thiserror::Error)]
enum Lexical {
    #[error("the query's vector was not fetched")]
    NotFetched,
    #[error("no MCP_SIEVE_KV binding to read the tools' vectors from")]
    NoKv,
    #[error("none of the {0} tools has a vector in KV (run `mcp-sieve index` and load its file)")]
    NoVectors(usize),
    /// The core refused the vectors read (`Slot::fill`).
    #[error(transparent)]
    Vectors(hybrid::VectorsError),
    #[error("the Worker's environment is not loaded")]
    NoEnv,
    #[error(
        "search.ai is set but the Worker has no Workers AI binding named {AI_BINDING} \
         (wrangler.toml: [ai] binding = \"{AI_BINDING}\")"
    )]
    NoAi,
    #[error("no search.embeddings URL")]
    NoUrl,
    #[error(transparent)]
    Headers(#[from] mcp_sieve::Error),
    #[error("{what} did not answer within {ms} ms (search.deadlineMs)")]
    Late { what: &'static str, ms: u64 },
    #[error("Workers AI could not run {model}: {error}")]
    Ai { model: String, error: worker::Error },
    #[error("Workers AI's answer has no /data/0 array of numbers")]
    AiAnswer,
    #[error("cannot reach the embeddings endpoint {url}: {error}")]
    Unreachable { url: String, error: String },
    #[error("search.headers[\"{0}\"] is not a valid header")]
    Header(String),
    #[error("the embeddings endpoint answered HTTP {status}: {text}")]
    Status { status: u16, text: String },
    #[error("the embeddings answer is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// The core's reason (`hybrid::embeddings`).
    #[error("the embeddings endpoint: {0}")]
    Answer(hybrid::VectorsError),
    #[error("the embeddings endpoint {0} answered more than {MAX_ANSWER} bytes")]
    TooLong(String),
    #[error("cannot read the embeddings endpoint {url}'s answer: {error}")]
    Unread { url: String, error: worker::Error },
}

thread_local! {
    /// Query → its vector (or why there is none), left by [`prepare`] for the core's encoder.
    static QUERIES: RefCell<HashMap<String, Result<Vec<f32>, Lexical>>> = RefCell::new(HashMap::new());
}

/// The core's query encoder here: the vector [`prepare`] fetched for `query` (the core's
/// encoder says why there is none in text).
fn take(query: &str) -> Result<Vec<f32>, String> {
    QUERIES
        .with_borrow_mut(|q| q.remove(query))
        .unwrap_or(Err(Lexical::NotFetched))
        .map_err(|e| e.to_string())
}

/// Before `body` runs on `server`: when it is a `find_tools` call and the document has
/// `search.ai` or `search.embeddings` (or names no encoder and the Worker has an `AI` binding:
/// `@cf/baai/bge-small-en-v1.5`), the tools' vectors are read from KV (once per catalog, when
/// made by the queries' model) and the query's fetched under the deadline, for the core to fuse.
pub async fn prepare(server: &Server, body: &[u8]) {
    let catalog = server.catalog();
    let settings = &catalog.meaning.settings;
    // search.ai, else Workers AI's default when the Worker has the binding and no model is named.
    let bound = crate::config::env().is_some_and(|env| env.ai(AI_BINDING).is_ok());
    let ai = settings.workers_ai(bound);
    if ai.is_none() && settings.embeddings.is_none() {
        return;
    }
    let Some(query) = find_query(body) else { return };
    let encoder = Encoder::of(settings, ai);
    if catalog.meaning.meaning().is_none() {
        // A query that cannot be encoded (search.ai without the binding) says so, before whose
        // vectors KV holds is asked.
        if encoder.is_ok() && !super::model::vectors_match(settings, ai).await {
            return;
        }
        if let Err(e) = load_vectors(catalog).await {
            log::warn(format_args!("search: {e}; find_tools stays lexical"));
            return;
        }
    }
    let deadline = settings.deadline_ms.unwrap_or(DEADLINE_MS);
    let vector = match encoder {
        Ok(encoder) => embed(&encoder, &query, deadline).await,
        Err(e) => Err(e),
    };
    if let Err(e) = &vector {
        log::warn(format_args!("search: {e}; this find_tools is lexical"));
    }
    QUERIES.with_borrow_mut(|q| q.insert(query, vector));
}

/// The query of a `tools/call` of `find_tools`.
fn find_query(body: &[u8]) -> Option<String> {
    let (method, params) = mcp_sieve::protocol::jsonrpc::peek(body)?;
    (method == "tools/call" && params.get("name")?.as_str()? == mcp_sieve::protocol::search::FIND)
        .then(|| params.get("arguments")?.get("query")?.as_str().map(str::to_string))
        .flatten()
}

/// Reads the catalog's tools' vectors from KV and fills its slot (a tool without one gets a row
/// of zeros: only its words rank it); an error when KV holds none of them.
async fn load_vectors(catalog: &mcp_sieve::Catalog) -> Result<(), Lexical> {
    let kv = crate::config::kv().ok_or(Lexical::NoKv)?;
    let tools = &catalog.section(mcp_sieve::model::Kind::Tool).items;
    let keys: Vec<String> = tools
        .iter()
        .map(|t| {
            let tool = serde_json::from_str::<Value>(t.fragment()).unwrap_or(Value::Null);
            let digest = mcp_sieve::pin::digest(&tool);
            format!("search/{}", digest.strip_prefix("sha256:").unwrap_or(&digest))
        })
        .collect();
    let mut rows: Vec<Option<Vec<f32>>> = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(READS) {
        let read = join_all(chunk.iter().map(|k| kv.get(k).text())).await;
        rows.extend(read.into_iter().map(|r| {
            let bytes = r
                .ok()
                .flatten()
                .and_then(|t| mcp_sieve::base64::decode(t.trim(), mcp_sieve::base64::Alphabet::Standard));
            bytes.filter(|b| !b.is_empty() && b.len() % 4 == 0).map(|b| {
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            })
        }));
    }
    let dim = rows
        .iter()
        .flatten()
        .map(Vec::len)
        .next()
        .ok_or(Lexical::NoVectors(tools.len()))?;
    let found = rows.iter().flatten().filter(|r| r.len() == dim).count();
    let mut vectors = vec![0f32; rows.len() * dim];
    for (i, row) in rows.iter().enumerate() {
        if let Some(r) = row.as_ref().filter(|r| r.len() == dim) {
            vectors[i * dim..(i + 1) * dim].copy_from_slice(r);
        }
    }
    catalog
        .meaning
        .fill(Meaning {
            dim,
            vectors,
            encode: Arc::new(take),
        })
        .map_err(Lexical::Vectors)?;
    log::info(format_args!(
        "search: {found} of {} tools' vectors read from KV",
        rows.len()
    ));
    Ok(())
}

/// Where a query's vector comes from.
enum Encoder {
    /// The Workers AI binding and the model it runs.
    Ai(worker::Ai, String),
    /// An OpenAI-compatible embeddings URL, the model named in the request, the headers sent.
    Url(String, Option<String>, Vec<(String, String)>),
}

impl Encoder {
    /// The binding when Workers AI's `ai` model is asked for and bound, else the URL with its
    /// headers' secrets.
    fn of(settings: &mcp_sieve::search::hybrid::Settings, ai: Option<&str>) -> Result<Encoder, Lexical> {
        let env = crate::config::env().ok_or(Lexical::NoEnv)?;
        if let Some(model) = ai {
            match env.ai(AI_BINDING) {
                Ok(ai) => return Ok(Encoder::Ai(ai, model.to_string())),
                Err(_) if settings.embeddings.is_none() => return Err(Lexical::NoAi),
                Err(_) => {}
            }
        }
        let url = settings.embeddings.clone().ok_or(Lexical::NoUrl)?;
        let headers = settings.resolved_headers(&|name| crate::config::var(&env, name))?;
        let model = settings.endpoint_model().map(str::to_string);
        Ok(Encoder::Url(url, model, headers))
    }
}

/// The vector of `text` from `encoder`, within `deadline_ms`.
async fn embed(encoder: &Encoder, text: &str, deadline_ms: u64) -> Result<Vec<f32>, Lexical> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let asked = std::pin::pin!(async {
        match encoder {
            Encoder::Ai(ai, model) => run(ai, model, text).await,
            Encoder::Url(url, model, headers) => post(url, model.as_deref(), headers, text, &signal).await,
        }
    });
    let late = std::pin::pin!(Delay::from(Duration::from_millis(deadline_ms)));
    match select(asked, late).await {
        Either::Left((answer, _)) => answer,
        Either::Right(_) => {
            controller.abort();
            let what = match encoder {
                Encoder::Ai(..) => "Workers AI",
                Encoder::Url(..) => "the embeddings endpoint",
            };
            Err(Lexical::Late { what, ms: deadline_ms })
        }
    }
}

/// The query's vector from Workers AI (`{text: [query]}` → `{shape, data: [[…]]}`).
async fn run(ai: &worker::Ai, model: &str, text: &str) -> Result<Vec<f32>, Lexical> {
    let answer: Value = ai
        .run(model, json!({"text": [text]}))
        .await
        .map_err(|error| Lexical::Ai {
            model: model.to_string(),
            error,
        })?;
    answer
        .pointer("/data/0")
        .and_then(hybrid::unit_vector)
        .ok_or(Lexical::AiAnswer)
}

async fn post(
    url: &str,
    model: Option<&str>,
    sent: &[(String, String)],
    text: &str,
    signal: &worker::AbortSignal,
) -> Result<Vec<f32>, Lexical> {
    let failed = |e: wasm_bindgen::JsValue| Lexical::Unreachable {
        url: url.to_string(),
        error: format!("{e:?}"),
    };
    let mut body = json!({"input": text});
    if let Some(m) = model {
        body["model"] = json!(m);
    }
    let headers = web_sys::Headers::new().map_err(failed)?;
    headers.set("content-type", "application/json").map_err(failed)?;
    for (k, v) in sent {
        headers.set(k, v).map_err(|_| Lexical::Header(k.clone()))?;
    }
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    init.set_body(&body.to_string().into());
    init.set_signal(Some(signal));
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let sent = wasm_bindgen_futures::JsFuture::from(scope.fetch_with_str_and_init(url, &init));
    let resp: web_sys::Response = sent.await.map_err(failed)?.dyn_into().map_err(failed)?;
    let (ok, status) = (resp.ok(), resp.status());
    let text = bounded_text(resp, url).await?;
    if !ok {
        let cut: String = text.chars().take(200).collect();
        return Err(Lexical::Status { status, text: cut });
    }
    let answer: Value = serde_json::from_str(&text)?;
    let mut rows = hybrid::embeddings(&answer, 1).map_err(Lexical::Answer)?;
    Ok(rows.remove(0))
}

/// The body of `resp` as text, refused past [`MAX_ANSWER`] bytes (read as it streams in: an
/// endpoint cannot fill the isolate's memory).
async fn bounded_text(resp: web_sys::Response, url: &str) -> Result<String, Lexical> {
    let mut resp = worker::Response::from(resp);
    match crate::platform::read_capped(&mut resp, MAX_ANSWER).await {
        Ok(Some(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok(None) => Err(Lexical::TooLong(url.to_string())),
        Err(error) => Err(Lexical::Unread {
            url: url.to_string(),
            error,
        }),
    }
}
