//! The BERT forward pass of mcp-sieve's sentence encoder (native/src/search/encoder.rs reads the
//! model's folder and tokenizes; this crate only computes), in plain Rust over the weights of a
//! `.safetensors` file's bytes (read here with the `safetensors` crate): embeddings, then each
//! layer's attention and feed-forward with their layer norms, for texts of any lengths laid end to
//! end (no padding, so no mask), giving candle-transformers' BERT's numbers (cosine 1.000000 over
//! the public tools). Written for the short texts a query is (issue 40): candle's BERT took 14 ms
//! for 23 tokens on one core, most of it in its matmul re-reading (5 tokens) or re-packing the
//! transposed weights on every call. Here each dense layer's weights are laid out once at load in
//! panels of 32 outputs, read once per block of 12 rows while the next panel is prefetched, and
//! multiplied with AVX-512F or AVX2+FMA code chosen at run time (plain code elsewhere), so the
//! binary stays portable.
//!
//! A crate of its own (issue 63) so that debug builds optimize this code alone (the workspace's
//! `[profile.dev.package.mcp-sieve-encoder]`): unoptimized, it encodes a catalog in minutes, and
//! optimizing the whole server for it made every debug build of the server several times slower.

#![deny(missing_docs)]

use std::collections::HashMap;

use safetensors::{Dtype, SafeTensors};

/// Why a checkpoint's tensors are not the BERT model its configuration describes, or why a text
/// cannot be run through it.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    /// The `.safetensors` bytes do not parse.
    #[error(transparent)]
    File(#[from] safetensors::SafeTensorError),
    /// A tensor the model needs is not there.
    #[error("has no fp32 or bf16 tensor {0}")]
    NoTensor(String),
    /// A tensor's shape is not the configuration's.
    #[error("{name} is {got:?}, expected {expected}")]
    Shape {
        /// The tensor's name.
        name: String,
        /// Its shape.
        got: Vec<usize>,
        /// The shape expected, as said.
        expected: String,
    },
    /// The token type embedding has no row.
    #[error("has no token type embedding")]
    NoTypeEmbedding,
    /// The configuration's sizes cannot be a model's.
    #[error("{0}")]
    Sizes(String),
    /// A text has more tokens than the model has positions.
    #[error("{tokens} tokens, more than the model's {max}")]
    TooLong {
        /// The text's tokens.
        tokens: usize,
        /// The model's positions.
        max: usize,
    },
    /// A token id past the model's vocabulary.
    #[error("token {id} is outside the model's {vocab} words")]
    Token {
        /// The token id.
        id: usize,
        /// The model's words.
        vocab: usize,
    },
}

/// A checkpoint's tensors by name.
pub type Tensors = HashMap<String, Stored>;

/// One tensor of a checkpoint: its shape and its numbers as fp32.
pub struct Stored {
    shape: Vec<usize>,
    data: Vec<f32>,
}

/// The floating-point tensors of a `.safetensors` file's bytes (fp32, or bf16 widened); tensors
/// of other types (a checkpoint's integer `position_ids`) are left out.
pub fn read_safetensors(bytes: &[u8]) -> Result<Tensors, WeightsError> {
    let file = SafeTensors::deserialize(bytes)?;
    let mut out = Tensors::new();
    for (name, view) in file.tensors() {
        let raw = view.data();
        let data: Vec<f32> = match view.dtype() {
            Dtype::F32 => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::BF16 => raw
                .chunks_exact(2)
                .map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16))
                .collect(),
            _ => continue,
        };
        out.insert(
            name,
            Stored {
                shape: view.shape().to_vec(),
                data,
            },
        );
    }
    Ok(out)
}

/// The named tensor (also under a `bert.` prefix).
fn find<'t>(tensors: &'t Tensors, name: &str) -> Result<&'t Stored, WeightsError> {
    tensors
        .get(name)
        .or_else(|| tensors.get(&format!("bert.{name}")))
        .ok_or_else(|| WeightsError::NoTensor(name.to_string()))
}

/// Outputs per weight panel (two AVX-512 registers, four AVX2 ones).
const P: usize = 32;

/// A BERT encoder's weights and sizes.
pub struct Bert {
    words: Vec<f32>,
    positions: Vec<f32>,
    /// The token type 0 embedding (a sentence encoder's only type).
    type0: Vec<f32>,
    norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    vocab: usize,
    max_positions: usize,
}

/// One encoder layer.
struct Layer {
    /// Query, key and value in one product (outputs in that order).
    qkv: Dense,
    out: Dense,
    norm1: Norm,
    up: Dense,
    down: Dense,
    norm2: Norm,
}

/// A layer norm.
struct Norm {
    gain: Vec<f32>,
    bias: Vec<f32>,
    eps: f32,
}

/// The sizes [`Bert::load`] needs from `config.json`.
pub struct Sizes {
    /// The width of a token's vector (`hidden_size`).
    pub hidden: usize,
    /// The attention heads (`num_attention_heads`), dividing the width.
    pub heads: usize,
    /// The encoder layers (`num_hidden_layers`).
    pub layers: usize,
    /// The feed-forward's inner width (`intermediate_size`).
    pub intermediate: usize,
    /// The layer norms' epsilon (`layer_norm_eps`).
    pub eps: f32,
}

/// The named tensor of `tensors` (also under a `bert.` prefix) as fp32 numbers, checked against
/// `shape`.
fn take(tensors: &mut Tensors, name: &str, shape: &[usize]) -> Result<Vec<f32>, WeightsError> {
    let t = find(tensors, name)?;
    if t.shape != shape {
        return Err(WeightsError::Shape {
            name: name.to_string(),
            got: t.shape.clone(),
            expected: format!("{shape:?}"),
        });
    }
    // Moved out, not copied (each tensor is read once).
    let key = if tensors.contains_key(name) {
        name.to_string()
    } else {
        format!("bert.{name}")
    };
    Ok(tensors.remove(&key).map(|t| t.data).unwrap_or_default())
}

impl Norm {
    fn load(tensors: &mut Tensors, name: &str, width: usize, eps: f32) -> Result<Norm, WeightsError> {
        Ok(Norm {
            gain: take(tensors, &format!("{name}.weight"), &[width])?,
            bias: take(tensors, &format!("{name}.bias"), &[width])?,
            eps,
        })
    }

    /// Normalizes each row of `x` in place.
    fn apply(&self, x: &mut [f32]) {
        let width = self.gain.len();
        for row in x.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let scale = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gain).zip(&self.bias) {
                *v = (*v - mean) * scale * g + b;
            }
        }
    }
}

/// A dense layer `y = x W^T + b`, its `W` (outputs × inputs) kept as panels: for each run of
/// [`P`] outputs, inputs × P numbers (the last panel padded with zeros).
struct Dense {
    panels: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// `x` (rows × `inputs`) laid out per block of `R` rows as inputs × R (the last block padded
/// with zeros).
fn pack<const R: usize>(x: &[f32], inputs: usize) -> Vec<f32> {
    let rows = x.len() / inputs;
    let mut xb = vec![0f32; rows.div_ceil(R) * R * inputs];
    for (r, row) in x.chunks_exact(inputs).enumerate() {
        let block = &mut xb[r / R * R * inputs..];
        for (k, &v) in row.iter().enumerate() {
            block[k * R + r % R] = v;
        }
    }
    xb
}

impl Dense {
    /// Lays out the weights of `names` (each outputs × inputs, stacked in that order).
    fn load(tensors: &mut Tensors, names: &[&str], outputs: usize, inputs: usize) -> Result<Dense, WeightsError> {
        let mut w = Vec::new();
        let mut bias = Vec::new();
        for name in names {
            w.extend(take(tensors, &format!("{name}.weight"), &[outputs, inputs])?);
            bias.extend(take(tensors, &format!("{name}.bias"), &[outputs])?);
        }
        let outputs = bias.len();
        let mut panels = vec![0f32; outputs.div_ceil(P) * P * inputs];
        for (o, row) in w.chunks_exact(inputs).enumerate() {
            let panel = &mut panels[o / P * P * inputs..];
            for (k, &v) in row.iter().enumerate() {
                panel[k * P + o % P] = v;
            }
        }
        Ok(Dense {
            panels,
            bias,
            inputs,
            outputs,
        })
    }

    /// `x` (rows × inputs) times the weights, plus the bias: rows × outputs.
    fn forward(&self, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        let mut y = vec![0f32; rows * self.outputs];
        let w = &self.panels;
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                unsafe { self.avx512(w, x, rows, &mut y) };
                return y;
            }
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                unsafe { self.avx2(w, x, rows, &mut y) };
                return y;
            }
        }
        let xb = pack::<4>(x, self.inputs);
        self.run::<4>(w, &xb, rows, &mut y, |xs, ws, _, acc| sums_plain::<4>(xs, ws, acc));
        y
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512(&self, w: &[f32], x: &[f32], rows: usize, y: &mut [f32]) {
        let xb = pack::<12>(x, self.inputs);
        self.run::<12>(w, &xb, rows, y, |xs, ws, next, acc| {
            // SAFETY: this closure runs inside a function built for AVX-512F.
            unsafe { sums_avx512(xs, ws, next, acc) }
        });
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(&self, w: &[f32], x: &[f32], rows: usize, y: &mut [f32]) {
        let xb = pack::<3>(x, self.inputs);
        self.run::<3>(w, &xb, rows, y, |xs, ws, next, acc| {
            // SAFETY: this closure runs inside a function built for AVX2 and FMA.
            unsafe { sums_avx2(xs, ws, next, acc) }
        });
    }

    /// The product, `R` rows at a time over `xb` (from [`pack`]): `sums` reads each panel of
    /// `panels` once per block of rows and gives the R × P sums (while asking the memory for the
    /// next panel, so that reading the weights and multiplying overlap).
    #[inline(always)]
    fn run<const R: usize>(
        &self,
        panels: &[f32],
        xb: &[f32],
        rows: usize,
        y: &mut [f32],
        sums: impl Fn(&[f32], &[f32], *const f32, &mut [[f32; P]; R]),
    ) {
        let per_panel = P * self.inputs;
        for (p, panel) in panels.chunks_exact(per_panel).enumerate() {
            let next = panels.as_ptr().wrapping_add((p + 1) * per_panel);
            let cols = P.min(self.outputs - p * P);
            let bias = &self.bias[p * P..p * P + cols];
            for (b, block) in xb.chunks_exact(R * self.inputs).enumerate() {
                let mut acc = [[0f32; P]; R];
                sums(block, panel, next, &mut acc);
                for (i, sums) in acc.iter().enumerate().take(rows - b * R) {
                    let out = &mut y[(b * R + i) * self.outputs + p * P..][..cols];
                    for ((o, s), c) in out.iter_mut().zip(sums).zip(bias) {
                        *o = s + c;
                    }
                }
            }
        }
    }
}

/// The R × P sums of a block of rows (`xs`, inputs × R) times a panel (`ws`, inputs × P), without
/// SIMD.
fn sums_plain<const R: usize>(xs: &[f32], ws: &[f32], acc: &mut [[f32; P]; R]) {
    for (x, w) in xs.chunks_exact(R).zip(ws.chunks_exact(P)) {
        for (a, &x) in acc.iter_mut().zip(x) {
            a.iter_mut().zip(w).for_each(|(a, w)| *a += x * w);
        }
    }
}

/// [`sums_plain`] in AVX-512 registers (2 per row of sums).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sums_avx512<const R: usize>(xs: &[f32], ws: &[f32], next: *const f32, acc: &mut [[f32; P]; R]) {
    use std::arch::x86_64::{_mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps};
    let mut lo = [_mm512_setzero_ps(); R];
    let mut hi = [_mm512_setzero_ps(); R];
    for (q, (x, w)) in xs.chunks_exact(R).zip(ws.chunks_exact(P)).enumerate() {
        prefetch(next.wrapping_add(q * P).cast());
        prefetch(next.wrapping_add(q * P + 16).cast());
        // SAFETY: `w` holds P = 32 numbers.
        let (w0, w1) = unsafe { (_mm512_loadu_ps(w.as_ptr()), _mm512_loadu_ps(w.as_ptr().add(16))) };
        for i in 0..R {
            let b = _mm512_set1_ps(x[i]);
            lo[i] = _mm512_fmadd_ps(b, w0, lo[i]);
            hi[i] = _mm512_fmadd_ps(b, w1, hi[i]);
        }
    }
    for i in 0..R {
        // SAFETY: each row of `acc` holds 32 numbers.
        unsafe {
            _mm512_storeu_ps(acc[i].as_mut_ptr(), lo[i]);
            _mm512_storeu_ps(acc[i].as_mut_ptr().add(16), hi[i]);
        }
    }
}

/// [`sums_plain`] in AVX2 registers (4 per row of sums).
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sums_avx2<const R: usize>(xs: &[f32], ws: &[f32], next: *const f32, acc: &mut [[f32; P]; R]) {
    use std::arch::x86_64::{
        __m256, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };
    let mut sums: [[__m256; 4]; R] = [[_mm256_setzero_ps(); 4]; R];
    for (q, (x, w)) in xs.chunks_exact(R).zip(ws.chunks_exact(P)).enumerate() {
        prefetch(next.wrapping_add(q * P).cast());
        prefetch(next.wrapping_add(q * P + 16).cast());
        // SAFETY: `w` holds P = 32 numbers.
        let w: [__m256; 4] = std::array::from_fn(|j| unsafe { _mm256_loadu_ps(w.as_ptr().add(8 * j)) });
        for i in 0..R {
            let b = _mm256_set1_ps(x[i]);
            for j in 0..4 {
                sums[i][j] = _mm256_fmadd_ps(b, w[j], sums[i][j]);
            }
        }
    }
    for (row, sums) in acc.iter_mut().zip(&sums) {
        for (part, s) in row.chunks_exact_mut(8).zip(sums) {
            // SAFETY: each part holds 8 numbers.
            unsafe { _mm256_storeu_ps(part.as_mut_ptr(), *s) };
        }
    }
}

/// Asks the memory for the line at `at` (any address: a prefetch never faults).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch(at: *const i8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: a prefetch reads nothing the program sees and never faults, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(at) };
}

/// erf(x) as a rational function (Eigen's float erf; within 1e-7 of the exact one).
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    for c in [
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ] {
        p = x2 * p + c;
    }
    let mut q = x2 * -1.456_607_2e-5 - 2.133_740_6e-4;
    for c in [-1.682_827e-3, -7.373_329e-3, -1.426_474e-2] {
        q = x2 * q + c;
    }
    x * p / q
}

/// BERT's GELU (the exact one, through erf), in place.
fn gelu(x: &mut [f32]) {
    for v in x {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

impl Bert {
    /// Reads the weights of `tensors` (a BERT checkpoint's names, with or without `bert.`).
    pub fn load(tensors: &mut Tensors, s: &Sizes) -> Result<Bert, WeightsError> {
        if s.hidden == 0 || s.intermediate == 0 {
            return Err(WeightsError::Sizes(format!(
                "sizes {} and {} are not a model's",
                s.hidden, s.intermediate
            )));
        }
        if s.heads == 0 || !s.hidden.is_multiple_of(s.heads) {
            return Err(WeightsError::Sizes(format!(
                "{} heads do not divide a width of {}",
                s.heads, s.hidden
            )));
        }
        let h = s.hidden;
        let words = take_rows(tensors, "embeddings.word_embeddings.weight", h)?;
        let positions = take_rows(tensors, "embeddings.position_embeddings.weight", h)?;
        let types = take_rows(tensors, "embeddings.token_type_embeddings.weight", h)?;
        let layers = (0..s.layers)
            .map(|i| {
                let at = |part: &str| format!("encoder.layer.{i}.{part}");
                let qkv = ["query", "key", "value"].map(|n| at(&format!("attention.self.{n}")));
                Ok(Layer {
                    qkv: Dense::load(tensors, &qkv.each_ref().map(String::as_str), h, h)?,
                    out: Dense::load(tensors, &[&at("attention.output.dense")], h, h)?,
                    norm1: Norm::load(tensors, &at("attention.output.LayerNorm"), h, s.eps)?,
                    up: Dense::load(tensors, &[&at("intermediate.dense")], s.intermediate, h)?,
                    down: Dense::load(tensors, &[&at("output.dense")], h, s.intermediate)?,
                    norm2: Norm::load(tensors, &at("output.LayerNorm"), h, s.eps)?,
                })
            })
            .collect::<Result<Vec<_>, WeightsError>>()?;
        Ok(Bert {
            vocab: words.len() / h,
            max_positions: positions.len() / h,
            type0: types.get(..h).ok_or(WeightsError::NoTypeEmbedding)?.to_vec(),
            words,
            positions,
            norm: Norm::load(tensors, "embeddings.LayerNorm", h, s.eps)?,
            layers,
            hidden: h,
            heads: s.heads,
        })
    }

    /// The last layer's output for each text's tokens (a `Vec` of tokens × width per text).
    pub fn forward(&self, texts: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, WeightsError> {
        let h = self.hidden;
        let total: usize = texts.iter().map(Vec::len).sum();
        let mut x = Vec::with_capacity(total * h);
        for ids in texts {
            if ids.len() > self.max_positions {
                return Err(WeightsError::TooLong {
                    tokens: ids.len(),
                    max: self.max_positions,
                });
            }
            for (t, &id) in ids.iter().enumerate() {
                let id = id as usize;
                let word = self
                    .words
                    .get(id * h..(id + 1) * h)
                    .ok_or(WeightsError::Token { id, vocab: self.vocab })?;
                let pos = &self.positions[t * h..(t + 1) * h];
                x.extend(word.iter().zip(pos).zip(&self.type0).map(|((w, p), t)| w + p + t));
            }
        }
        self.norm.apply(&mut x);
        for layer in &self.layers {
            let qkv = layer.qkv.forward(&x);
            let mut a = layer.out.forward(&self.attention(&qkv, texts));
            a.iter_mut().zip(&x).for_each(|(a, x)| *a += x);
            layer.norm1.apply(&mut a);
            let mut u = layer.up.forward(&a);
            gelu(&mut u);
            x = layer.down.forward(&u);
            x.iter_mut().zip(&a).for_each(|(x, a)| *x += a);
            layer.norm2.apply(&mut x);
        }
        let mut rest = x.as_slice();
        Ok(texts
            .iter()
            .map(|ids| {
                let (mine, after) = rest.split_at(ids.len() * h);
                rest = after;
                mine.to_vec()
            })
            .collect())
    }

    /// Self-attention of each text over its own tokens: `qkv` is tokens × (query, key, value).
    fn attention(&self, qkv: &[f32], texts: &[Vec<u32>]) -> Vec<f32> {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut ctx = vec![0f32; qkv.len() / 3];
        let mut start = 0;
        let mut scores = Vec::new();
        for ids in texts {
            let n = ids.len();
            let row = |t: usize| &qkv[(start + t) * 3 * h..(start + t + 1) * 3 * h];
            for head in 0..self.heads {
                let at = head * d;
                for i in 0..n {
                    let q = &row(i)[at..at + d];
                    scores.clear();
                    scores.extend((0..n).map(|j| {
                        let k = &row(j)[h + at..h + at + d];
                        q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale
                    }));
                    let top = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let mut sum = 0.0;
                    for s in &mut scores {
                        *s = (*s - top).exp();
                        sum += *s;
                    }
                    let out = &mut ctx[(start + i) * h + at..(start + i) * h + at + d];
                    for (j, s) in scores.iter().enumerate() {
                        let v = &row(j)[2 * h + at..2 * h + at + d];
                        let w = s / sum;
                        out.iter_mut().zip(v).for_each(|(o, v)| *o += w * v);
                    }
                }
            }
            start += n;
        }
        ctx
    }
}

/// A 2-D tensor of rows of `width` numbers.
fn take_rows(tensors: &mut Tensors, name: &str, width: usize) -> Result<Vec<f32>, WeightsError> {
    match find(tensors, name)?.shape[..] {
        [rows, w] if w == width => take(tensors, name, &[rows, width]),
        ref other => Err(WeightsError::Shape {
            name: name.to_string(),
            got: other.to_vec(),
            expected: format!("rows of {width}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense layer of numbers in [-1, 1) (a fixed linear congruential sequence).
    fn dense(outputs: usize, inputs: usize) -> Dense {
        let mut seed = 12345u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 8) as f32 / (1 << 23) as f32 - 1.0
        };
        let w: Vec<f32> = (0..outputs * inputs).map(|_| next()).collect();
        let b: Vec<f32> = (0..outputs).map(|_| next()).collect();
        let mut tensors = HashMap::from([
            (
                "d.weight".to_string(),
                Stored {
                    shape: vec![outputs, inputs],
                    data: w,
                },
            ),
            (
                "d.bias".to_string(),
                Stored {
                    shape: vec![outputs],
                    data: b,
                },
            ),
        ]);
        Dense::load(&mut tensors, &["d"], outputs, inputs).unwrap()
    }

    /// The product the plain way, from the panels.
    fn naive(d: &Dense, x: &[f32]) -> Vec<f32> {
        let rows = x.len() / d.inputs;
        let mut y = vec![0f32; rows * d.outputs];
        for r in 0..rows {
            for o in 0..d.outputs {
                let w = |k: usize| d.panels[o / P * P * d.inputs + k * P + o % P];
                y[r * d.outputs + o] = d.bias[o] + (0..d.inputs).map(|k| x[r * d.inputs + k] * w(k)).sum::<f32>();
            }
        }
        y
    }

    /// The product this CPU runs (AVX-512F, AVX2+FMA or plain) and each other one it can run agree
    /// with the plain sum to 1e-4, for row counts around the blocks (1 to 25 rows) and a panel
    /// padded with zeros (70 outputs).
    #[test]
    fn every_product_path_agrees_with_the_plain_sum() {
        let d = dense(70, 37);
        for rows in 1..=25 {
            let x: Vec<f32> = (0..rows * d.inputs)
                .map(|i| ((i * 7919) % 200) as f32 / 100.0 - 1.0)
                .collect();
            let want = naive(&d, &x);
            let mut runs = vec![("chosen", d.forward(&x))];
            let mut y = vec![0f32; want.len()];
            let xb = pack::<4>(&x, d.inputs);
            d.run::<4>(&d.panels, &xb, rows, &mut y, |xs, ws, _, acc| {
                sums_plain::<4>(xs, ws, acc)
            });
            runs.push(("plain", y));
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                let mut y = vec![0f32; want.len()];
                // SAFETY: the CPU has AVX2 and FMA (checked just above).
                unsafe { d.avx2(&d.panels, &x, rows, &mut y) };
                runs.push(("avx2", y));
            }
            for (name, got) in runs {
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!((g - w).abs() < 1e-4, "{name}, {rows} rows, number {i}: {g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn erf_is_within_1e_6_of_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
            (5.0, 1.0),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x}) = {}, not {want}", erf(x));
        }
    }
}
