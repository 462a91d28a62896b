//! `mcp-sieve index` (issue 40 item 3): the document's tools' sentence vectors, written as a
//! `wrangler kv bulk put` file for the Worker: `search/<digest>` → the vector (little-endian f32,
//! as base64 text), keyed by the tool's pin digest as the native cache is, and `search/model` →
//! the model's identity. When the document has `search.embeddings`, the tools are encoded there —
//! the endpoint that will encode the Worker's queries, so both sides use one model (with
//! `search.ai` or `search.model` as the model's name, `search.headers` sent with secrets from the
//! environment; for Workers AI, its REST API's OpenAI-compatible URL); otherwise with the
//! `search.model` folder through the same cache as `serve` (`meaning`). The Worker never runs the
//! model. With `--ai`, the tools are encoded by Workers AI's REST API (`workers_ai`) with the
//! model a Worker with an `[ai]` binding encodes its queries with, recorded as `search/model` so
//! the Worker never mixes two models' vectors. Only the document's own tools are indexed (an
//! upstream's are listed by the Worker at run time; their vectors are not made here).

mod workers_ai;

use std::path::Path;

use serde_json::json;

use crate::config::load::Document;
use crate::error::ServerError;

/// The KV key of a tool's vector (`digest`: hex, without `sha256:`).
pub fn key(digest: &str) -> String {
    format!("search/{digest}")
}

/// Writes the vectors of `doc`'s tools to `output` (stdout when `None`); `ai`: through Workers AI.
pub async fn run(doc: &Document, output: Option<&Path>, ai: bool) -> Result<(), ServerError> {
    let catalog = doc.catalog(&doc.text)?;
    let tools = crate::search::meaning::tool_fragments(&catalog);
    let settings = &catalog.meaning.settings;
    let (identity, dim, vectors, cached, encoded) = match &settings.embeddings {
        _ if ai => {
            let model = ai_model(settings)?;
            let (dim, vectors, encoded) = by_workers_ai(model, &tools).await?;
            (model.to_string(), dim, vectors, 0, encoded)
        }
        // The Worker encodes its queries there: the tools are encoded by the same model.
        Some(url) => {
            let (dim, vectors, encoded) = by_url(settings, url, &tools).await?;
            // A Workers AI model is recorded by its name, which the Worker checks its queries'
            // model against (`hybrid::same_model`).
            let identity = match (&settings.ai, settings.endpoint_model()) {
                (Some(ai), _) => ai.clone(),
                (None, Some(model)) => format!("{url} {model}"),
                (None, None) => url.clone(),
            };
            (identity, dim, vectors, 0, encoded)
        }
        None => {
            let dir = crate::search::meaning::fetched_dir(&catalog.meaning)
                .await
                .map_err(|e| ServerError::Config(e.to_string()))?
                .ok_or_else(|| {
                    ServerError::Usage(
                        "index needs the document's search.model (a Hugging Face model id or a sentence \
                         encoder's folder) or search.embeddings (an OpenAI-compatible /v1/embeddings URL)"
                            .into(),
                    )
                })?;
            let encoder = crate::search::meaning::encoder(&dir)?;
            let mut cache =
                crate::search::meaning::Cache::open(&crate::search::meaning::cache_dir(&catalog.meaning), &encoder);
            let (vectors, made) = crate::search::meaning::vectors(&tools, &encoder, &mut cache, &|_, _| {})?;
            (
                encoder.identity.clone(),
                encoder.dim,
                vectors,
                made.cached,
                made.encoded,
            )
        }
    };
    let mut entries = vec![json!({"key": "search/model", "value": identity})];
    let mut seen = std::collections::HashSet::new();
    for (i, fragment) in tools.iter().enumerate() {
        let Some((_, hex)) = crate::search::meaning::with_digest(fragment) else {
            continue;
        };
        if !seen.insert(hex.clone()) {
            continue;
        }
        let bytes: Vec<u8> = vectors[i * dim..(i + 1) * dim]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        // Base64 as the value's text (not `"base64": true`): `wrangler kv bulk put --local`
        // stored decoded binary values as lossy UTF-8, so the Worker decodes it itself.
        entries.push(json!({"key": key(&hex), "value": mcp_sieve::base64::encode(&bytes, mcp_sieve::base64::Alphabet::Standard)}));
    }
    let text = serde_json::to_string(&entries).unwrap_or_default();
    match output {
        Some(path) => std::fs::write(path, text).map_err(|e| ServerError::Io(path.display().to_string(), e))?,
        None => println!("{text}"),
    }
    eprintln!(
        "mcp-sieve: {} tool vectors ({} from the cache, {} encoded) for the Worker's KV; load them with \
         `wrangler kv bulk put --binding MCP_SIEVE_KV FILE`",
        entries.len() - 1,
        cached,
        encoded
    );
    Ok(())
}

/// Texts sent to the embeddings URL in one request.
const BATCH: usize = 32;

/// The vectors of `tools` from the embeddings URL (`search.headers` sent, their secrets from the
/// environment): (dimensions, one unit row per tool in order, texts encoded). A tool whose JSON
/// does not parse gets a row of zeros; the same definition twice is sent once.
async fn by_url(
    settings: &mcp_sieve::search::hybrid::Settings,
    url: &str,
    tools: &[String],
) -> Result<(usize, Vec<f32>, usize), ServerError> {
    let headers = settings
        .resolved_headers(&|name| std::env::var(name).ok())
        .map_err(|e| ServerError::Config(e.to_string()))?;
    let mut sent = vec![("content-type".to_string(), "application/json".to_string())];
    sent.extend(headers);
    let model = settings.endpoint_model();
    let texts = distinct(tools);
    let http = crate::oauth::Http::new();
    let mut rows: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
    for batch in texts.chunks(BATCH) {
        let input: Vec<&str> = batch.iter().map(|t| t.0.as_str()).collect();
        let mut body = json!({"input": input});
        if let Some(m) = model {
            body["model"] = json!(m);
        }
        let answer = http.post(url, &sent, body.to_string()).await?;
        if answer.status != 200 {
            let cut: String = answer.body.chars().take(200).collect();
            return Err(ServerError::Config(format!(
                "the embeddings endpoint {url} answered HTTP {}: {cut}",
                answer.status
            )));
        }
        rows.extend(embeddings(&answer.body, batch.len()).map_err(|e| ServerError::Config(format!("{url}: {e}")))?);
    }
    let (dim, vectors) = spread(tools.len(), &texts, &rows);
    Ok((dim, vectors, rows.len()))
}

/// The Workers AI model `index --ai` encodes with: the one the Worker's queries are encoded by
/// with this document and an `[ai]` binding; an error when the document names another encoder.
fn ai_model(settings: &mcp_sieve::search::hybrid::Settings) -> Result<&str, ServerError> {
    settings.workers_ai(true).ok_or_else(|| {
        let named = match (&settings.model, &settings.embeddings) {
            (Some(m), _) => format!("search.model ({m})"),
            (None, Some(u)) => format!("search.embeddings ({u})"),
            (None, None) => "\"model\": false".to_string(),
        };
        ServerError::Usage(format!(
            "index --ai encodes the tools with Workers AI, but the document's {named} means a Worker \
             would not encode its queries with Workers AI; set search.ai to a Workers AI model, or \
             leave search without model and embeddings (the Worker then uses {})",
            mcp_sieve::search::hybrid::WORKERS_AI_MODEL
        ))
    })
}

/// The vectors of `tools` from Workers AI's `model` ([`workers_ai`]): (dimensions, one unit row
/// per tool in order, texts encoded), [`workers_ai::BATCH`] texts a request.
async fn by_workers_ai(model: &str, tools: &[String]) -> Result<(usize, Vec<f32>, usize), ServerError> {
    let api = workers_ai::Api::from_env(model, &|name| std::env::var(name).ok())
        .map_err(|e| ServerError::Config(e.to_string()))?;
    let texts = distinct(tools);
    let http = crate::oauth::Http::new();
    let mut rows: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
    for batch in texts.chunks(workers_ai::BATCH) {
        let input: Vec<&str> = batch.iter().map(|t| t.0.as_str()).collect();
        rows.extend(
            api.embed(&http, &input)
                .await
                .map_err(|e| ServerError::Config(e.to_string()))?,
        );
    }
    if rows.iter().any(|r| r.len() != rows[0].len()) {
        return Err(ServerError::Config(format!(
            "Workers AI's answers for {model} are not all of one length"
        )));
    }
    let (dim, vectors) = spread(tools.len(), &texts, &rows);
    Ok((dim, vectors, rows.len()))
}

/// Each distinct tool definition's text to encode, and the tools (by position) it stands for; a
/// tool whose JSON does not parse has none (its row stays zeros).
fn distinct(tools: &[String]) -> Vec<(String, Vec<usize>)> {
    let mut texts: Vec<(String, Vec<usize>)> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (i, fragment) in tools.iter().enumerate() {
        let Some((tool, hex)) = crate::search::meaning::with_digest(fragment) else {
            continue;
        };
        match at.get(&hex) {
            Some(&k) => texts[k].1.push(i),
            None => {
                at.insert(hex, texts.len());
                texts.push((crate::search::encoder::encoded_text(&tool), vec![i]));
            }
        }
    }
    texts
}

/// `n` tools' rows from the distinct texts' `rows`: (dimensions, the rows tool after tool).
fn spread(n: usize, texts: &[(String, Vec<usize>)], rows: &[Vec<f32>]) -> (usize, Vec<f32>) {
    let dim = rows.first().map_or(0, Vec::len);
    let mut vectors = vec![0f32; n * dim];
    for ((_, at), row) in texts.iter().zip(rows) {
        for &i in at {
            vectors[i * dim..(i + 1) * dim].copy_from_slice(row);
        }
    }
    (dim, vectors)
}

/// Why an embeddings endpoint's answer gave no vectors.
#[derive(Debug, thiserror::Error)]
enum AnswerError {
    #[error("the answer is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error(transparent)]
    Vectors(#[from] mcp_sieve::search::hybrid::VectorsError),
}

/// The `n` unit vectors of an embeddings answer's text (`hybrid::embeddings`).
fn embeddings(body: &str, n: usize) -> Result<Vec<Vec<f32>>, AnswerError> {
    let v: serde_json::Value = serde_json::from_str(body)?;
    Ok(mcp_sieve::search::hybrid::embeddings(&v, n)?)
}

#[cfg(test)]
mod tests {
    use super::embeddings;

    #[test]
    fn an_embeddings_answer_is_read_in_input_order_and_checked() {
        let body = r#"{"data": [{"index": 1, "embedding": [0, 2]}, {"index": 0, "embedding": [3, 4]}]}"#;
        assert_eq!(embeddings(body, 2).unwrap(), vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        for (body, want) in [
            (r#"{"data": []}"#, "no data array of 2"),
            (
                r#"{"data": [{"embedding": [1]}, {"embedding": ["x"]}]}"#,
                "data[1].embedding is not an array",
            ),
            (
                r#"{"data": [{"embedding": [1]}, {"embedding": [1, 2]}]}"#,
                "not all of one length",
            ),
            (
                r#"{"data": [{"index": 5, "embedding": [1]}, {"embedding": [1]}]}"#,
                "index 5 is out of range",
            ),
            ("nope", "not JSON"),
        ] {
            let e = embeddings(body, 2).unwrap_err().to_string();
            assert!(e.contains(want), "{body}: {e}");
        }
    }
}
