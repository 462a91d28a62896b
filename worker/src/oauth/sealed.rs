//! Upstream tokens encrypted at rest: AES-256-GCM by the platform's WebCrypto (no crypto crate in
//! the wasm). The key is SHA-256 of the Worker secret [`KEY_VAR`]; each value gets a fresh 96-bit
//! IV, and its additional data names the principal and the upstream it belongs to, so a value
//! copied into another principal's record (or another upstream's) does not decrypt.

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// The Worker secret the key is derived from (`wrangler secret put MCP_SIEVE_TOKEN_KEY`).
pub const KEY_VAR: &str = "MCP_SIEVE_TOKEN_KEY";
/// Shortest secret accepted.
const MIN_SECRET: usize = 16;
/// The IV's length (AES-GCM's 96 bits).
const IV_BYTES: usize = 12;

/// Why sealing or opening failed (for the log; never contains the value).
#[derive(Debug)]
pub struct SealError(pub String);

impl std::fmt::Display for SealError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn crypto() -> Result<JsValue, JsValue> {
    Reflect::get(&js_sys::global(), &"crypto".into())
}

/// `crypto.subtle.<name>(...args)`, awaited.
async fn subtle(name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let subtle = Reflect::get(&crypto()?, &"subtle".into())?;
    let f: Function = Reflect::get(&subtle, &name.into())?.dyn_into()?;
    let p: Promise = f.apply(&subtle, &args.iter().collect::<Array>())?.dyn_into()?;
    JsFuture::from(p).await
}

/// `n` random bytes from `crypto.getRandomValues`.
pub fn random(n: usize) -> Result<Vec<u8>, SealError> {
    let buf = Uint8Array::new_with_length(n as u32);
    let c = crypto().map_err(|_| SealError("no crypto object".into()))?;
    let f: Function = Reflect::get(&c, &"getRandomValues".into())
        .and_then(|f| f.dyn_into())
        .map_err(|_| SealError("no crypto.getRandomValues".into()))?;
    f.call1(&c, &buf)
        .map_err(|_| SealError("crypto.getRandomValues failed".into()))?;
    Ok(buf.to_vec())
}

fn algorithm(iv: &[u8], aad: &str) -> Result<JsValue, JsValue> {
    let o = Object::new();
    Reflect::set(&o, &"name".into(), &"AES-GCM".into())?;
    Reflect::set(&o, &"iv".into(), &Uint8Array::from(iv).into())?;
    Reflect::set(&o, &"additionalData".into(), &Uint8Array::from(aad.as_bytes()).into())?;
    Ok(o.into())
}

/// The AES-GCM key of `secret` (its SHA-256).
async fn key(secret: &str) -> Result<JsValue, SealError> {
    if secret.len() < MIN_SECRET {
        return Err(SealError(format!(
            "{KEY_VAR} must be at least {MIN_SECRET} characters (e.g. `openssl rand -hex 32`)"
        )));
    }
    let fail = |what: &str| SealError(format!("WebCrypto could not {what}"));
    let digest = subtle(
        "digest",
        &["SHA-256".into(), Uint8Array::from(secret.as_bytes()).into()],
    )
    .await
    .map_err(|_| fail("hash the key"))?;
    let usages: Array = [JsValue::from("encrypt"), JsValue::from("decrypt")].iter().collect();
    subtle(
        "importKey",
        &["raw".into(), digest, "AES-GCM".into(), JsValue::FALSE, usages.into()],
    )
    .await
    .map_err(|_| fail("import the key"))
}

/// `plain` encrypted under `secret` for `aad`: the IV then the ciphertext (with its tag), as hex.
pub async fn seal(secret: &str, aad: &str, plain: &str) -> Result<String, SealError> {
    let k = key(secret).await?;
    let iv = random(IV_BYTES)?;
    let alg = algorithm(&iv, aad).map_err(|_| SealError("no AES-GCM parameters".into()))?;
    let out = subtle("encrypt", &[alg, k, Uint8Array::from(plain.as_bytes()).into()])
        .await
        .map_err(|_| SealError("WebCrypto could not encrypt".into()))?;
    let mut bytes = iv;
    bytes.extend(Uint8Array::new(&out).to_vec());
    Ok(hex(&bytes))
}

/// What [`seal`] sealed for `aad`; an error when the key, the value or `aad` differ.
pub async fn open(secret: &str, aad: &str, sealed: &str) -> Result<String, SealError> {
    let bytes = unhex(sealed).ok_or_else(|| SealError("a stored value is not hex".into()))?;
    if bytes.len() <= IV_BYTES {
        return Err(SealError("a stored value is too short".into()));
    }
    let k = key(secret).await?;
    let (iv, data) = bytes.split_at(IV_BYTES);
    let alg = algorithm(iv, aad).map_err(|_| SealError("no AES-GCM parameters".into()))?;
    let out = subtle("decrypt", &[alg, k, Uint8Array::from(data).into()])
        .await
        .map_err(|_| {
            SealError(format!(
                "a stored value does not decrypt (was {KEY_VAR} changed? then every principal signs in again)"
            ))
        })?;
    String::from_utf8(Uint8Array::new(&out).to_vec()).map_err(|_| SealError("a stored value is not text".into()))
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The bytes of lower- or upper-case hex `s`.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_odd_or_foreign_text() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(unhex("000fff"), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é0"), None);
    }
}
