//! `mcp-sieve index` (issue 40 item 3): the document's tools' sentence vectors, computed with its
//! `search.model` through the same cache as `serve` (`meaning`), written as a `wrangler kv bulk
//! put` file for the Worker: `search/<digest>` → the vector (little-endian f32, as base64 text), keyed by
//! the tool's pin digest as the native cache is, and `search/model` → the model's identity. The
//! Worker never runs the model: it reads these and encodes only the query, through the document's
//! `search.embeddings` URL. Only the document's own tools are indexed (an upstream's are listed
//! by the Worker at run time; their vectors are not made here).

use std::path::Path;

use serde_json::json;

use crate::error::ServerError;
use crate::load::Document;

/// The KV key of a tool's vector (`digest`: hex, without `sha256:`).
pub fn key(digest: &str) -> String {
    format!("search/{digest}")
}

/// Writes the vectors of `doc`'s tools to `output` (stdout when `None`).
pub fn run(doc: &Document, output: Option<&Path>) -> Result<(), ServerError> {
    let catalog = doc.catalog(&doc.text)?;
    let dir = crate::meaning::model_dir(&catalog.meaning).ok_or_else(|| {
        ServerError::Usage("index needs the document's search.model (a sentence encoder's folder)".into())
    })?;
    let encoder = crate::meaning::encoder(&dir).map_err(ServerError::Config)?;
    let tools = crate::meaning::tool_fragments(&catalog);
    let mut cache = crate::meaning::Cache::open(&crate::meaning::cache_dir(&catalog.meaning), &encoder);
    let (vectors, made) =
        crate::meaning::vectors(&tools, &encoder, &mut cache, &|_, _| {}).map_err(ServerError::Config)?;
    let mut entries = vec![json!({"key": "search/model", "value": encoder.identity})];
    let mut seen = std::collections::HashSet::new();
    for (i, fragment) in tools.iter().enumerate() {
        let Some((_, hex)) = crate::meaning::with_digest(fragment) else {
            continue;
        };
        if !seen.insert(hex.clone()) {
            continue;
        }
        let bytes: Vec<u8> = vectors[i * encoder.dim..(i + 1) * encoder.dim]
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
        made.cached,
        made.encoded
    );
    Ok(())
}
