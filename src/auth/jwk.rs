//! Signature algorithms and public signing keys (RFC 7517 JWKs), and the rules for caching an
//! issuer's JWKS: kept for [`MAX_KEYS_AGE_MS`], fetched again for a token whose `kid` is unknown at
//! most once per [`MIN_REFETCH_MS`] (so a stream of made-up `kid`s cannot make this server hammer
//! the issuer).

use serde_json::Value;

/// A signature algorithm this server accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// ECDSA on P-256 with SHA-256 (signature: r ‖ s, 64 bytes).
    ES256,
    /// Ed25519.
    EdDSA,
}

impl Alg {
    /// The algorithm a JOSE `alg` names, if accepted (`none`, `HS*` and others are not).
    pub fn from_name(name: &str) -> Option<Alg> {
        match name {
            "RS256" => Some(Alg::RS256),
            "ES256" => Some(Alg::ES256),
            "EdDSA" | "Ed25519" => Some(Alg::EdDSA),
            _ => None,
        }
    }
}

/// Base64url without padding (RFC 7515 §2); `None` for anything else.
pub(crate) fn b64url(s: &str) -> Option<Vec<u8>> {
    crate::base64::decode(s, crate::base64::Alphabet::Url)
}

/// How long a fetched key set is used before it is fetched again.
pub const MAX_KEYS_AGE_MS: i64 = 10 * 60 * 1000;
/// The least time between two fetches of a key set (an unknown `kid`, a failed fetch).
pub const MIN_REFETCH_MS: i64 = 30 * 1000;
/// Smallest RSA modulus accepted, in bytes (2048 bits).
const MIN_RSA_BYTES: usize = 256;

/// One public key, checked to be usable for exactly one algorithm.
#[derive(Debug, Clone, PartialEq)]
pub struct Jwk {
    /// Its `kid`, if any.
    pub kid: Option<String>,
    /// The one algorithm it verifies (from `kty`/`crv`, and `alg` when given).
    pub alg: Alg,
    /// RSA: the modulus, big-endian. EC: the x coordinate. OKP: the public key.
    pub n_or_x: Vec<u8>,
    /// RSA: the exponent, big-endian. EC: the y coordinate. OKP: empty.
    pub e_or_y: Vec<u8>,
    /// The JWK as published (public members only), for platforms that import JWKs (WebCrypto).
    pub json: Value,
}

impl Jwk {
    /// A public signing key from its JWK; `Err` says why it is not one (private members are
    /// refused outright: a published private key is a misconfiguration worth stopping for).
    pub fn parse(v: &Value) -> Result<Jwk, String> {
        let o = v.as_object().ok_or("a JWK must be an object")?;
        let field = |k: &str| o.get(k).and_then(Value::as_str);
        let bytes = |k: &str| -> Result<Vec<u8>, String> {
            field(k)
                .and_then(b64url)
                .filter(|b| !b.is_empty())
                .ok_or_else(|| format!("the JWK's \"{k}\" must be base64url"))
        };
        if o.contains_key("d") {
            return Err("a JWK with a private part (\"d\") must not be published; give the public key".into());
        }
        if field("use").is_some_and(|u| u != "sig") {
            return Err("the JWK is not for signatures (\"use\" is not \"sig\")".into());
        }
        let (alg, n_or_x, e_or_y) = match (field("kty"), field("crv")) {
            (Some("RSA"), _) => {
                let n = bytes("n")?;
                let n = n.iter().position(|b| *b != 0).map_or(Vec::new(), |i| n[i..].to_vec());
                if n.len() < MIN_RSA_BYTES {
                    return Err(format!(
                        "the RSA key has {} bits; at least 2048 are required",
                        n.len() * 8
                    ));
                }
                (Alg::RS256, n, bytes("e")?)
            }
            (Some("EC"), Some("P-256")) => {
                let (x, y) = (bytes("x")?, bytes("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err("a P-256 JWK's x and y must be 32 bytes each".into());
                }
                (Alg::ES256, x, y)
            }
            (Some("OKP"), Some("Ed25519")) => {
                let x = bytes("x")?;
                if x.len() != 32 {
                    return Err("an Ed25519 JWK's x must be 32 bytes".into());
                }
                (Alg::EdDSA, x, Vec::new())
            }
            (kty, crv) => {
                return Err(format!(
                    "unsupported key type {:?}/{:?}; expected RSA, EC P-256 or OKP Ed25519",
                    kty.unwrap_or("none"),
                    crv.unwrap_or("none")
                ))
            }
        };
        if let Some(a) = field("alg") {
            if Alg::from_name(a) != Some(alg) {
                return Err(format!("the JWK's alg \"{a}\" does not fit its key type"));
            }
        }
        let mut json = serde_json::Map::new();
        for k in ["kty", "crv", "n", "e", "x", "y", "kid"] {
            if let Some(v) = o.get(k) {
                json.insert(k.into(), v.clone());
            }
        }
        Ok(Jwk {
            kid: field("kid").map(String::from),
            alg,
            n_or_x,
            e_or_y,
            json: Value::Object(json),
        })
    }
}

/// A set of public keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeySet {
    /// The usable keys (others in the document are skipped).
    pub keys: Vec<Jwk>,
}

impl KeySet {
    /// A JWKS document (`{"keys": [...]}`) or an array of JWKs. Keys of other kinds (encryption
    /// keys, unsupported curves) are skipped; a key with a private part is an error.
    pub fn parse(v: &Value) -> Result<KeySet, String> {
        let list = match v {
            Value::Array(a) => a,
            Value::Object(o) => o
                .get("keys")
                .and_then(Value::as_array)
                .ok_or("a JWKS must be an object with a \"keys\" array")?,
            _ => return Err("a JWKS must be an object with a \"keys\" array".into()),
        };
        let mut keys = Vec::new();
        for (i, k) in list.iter().enumerate() {
            match Jwk::parse(k) {
                Ok(k) => keys.push(k),
                Err(e) if e.contains("private") => return Err(format!("key {i}: {e}")),
                Err(_) => {}
            }
        }
        Ok(KeySet { keys })
    }

    /// The key for a token signed with `alg` under `kid`. A token without `kid` matches only
    /// when exactly one key of its algorithm exists.
    pub fn find(&self, alg: Alg, kid: Option<&str>) -> Option<&Jwk> {
        let mut fit = self.keys.iter().filter(|k| k.alg == alg);
        match kid {
            Some(kid) => fit.find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let one = fit.next();
                fit.next().is_none().then_some(one).flatten()
            }
        }
    }
}

/// An issuer's key set as fetched, and when: what a shell keeps between requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyCache {
    /// The keys last fetched.
    pub keys: KeySet,
    /// When they were fetched (ms since the epoch); `None`: never.
    pub fetched_ms: Option<i64>,
    /// When a fetch was last started (whether it succeeded or not).
    pub attempted_ms: Option<i64>,
    /// When the last fetch ended (succeeded or failed).
    pub settled_ms: Option<i64>,
}

impl KeyCache {
    /// Whether to fetch the key set now: never fetched, too old, or (`unknown_kid`) a token names a
    /// key not in it — in every case at most once per [`MIN_REFETCH_MS`].
    pub fn should_fetch(&self, now_ms: i64, unknown_kid: bool) -> bool {
        let rested = self
            .attempted_ms
            .is_none_or(|t| now_ms.saturating_sub(t) >= MIN_REFETCH_MS);
        let stale = self
            .fetched_ms
            .is_none_or(|t| now_ms.saturating_sub(t) >= MAX_KEYS_AGE_MS);
        rested && (stale || unknown_kid)
    }

    /// Records that a fetch starts now.
    pub fn attempt(&mut self, now_ms: i64) {
        self.attempted_ms = Some(now_ms);
    }

    /// Records a fetched key set.
    pub fn store(&mut self, keys: KeySet, now_ms: i64) {
        self.keys = keys;
        self.fetched_ms = Some(now_ms);
        self.settled_ms = Some(now_ms);
    }

    /// Records a fetch that failed (the keys held stay).
    pub fn failed(&mut self, now_ms: i64) {
        self.settled_ms = Some(now_ms);
    }

    /// Whether a fetch started and has not ended: a request that finds one waits for it rather
    /// than judging a token by the keys held (none, in a cold isolate).
    pub fn in_flight(&self) -> bool {
        self.attempted_ms.is_some_and(|a| self.settled_ms.is_none_or(|s| s < a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

    #[test]
    fn keys_are_checked_for_kind_and_size() {
        let ed = json!({"kty": "OKP", "crv": "Ed25519", "x": X, "kid": "a"});
        assert_eq!(Jwk::parse(&ed).unwrap().alg, Alg::EdDSA);
        let small_rsa = json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"});
        assert!(Jwk::parse(&small_rsa).unwrap_err().contains("2048"));
        let private = json!({"kty": "OKP", "crv": "Ed25519", "x": X, "d": X});
        assert!(KeySet::parse(&json!({"keys": [private]}))
            .unwrap_err()
            .contains("private"));
        let wrong_alg = json!({"kty": "OKP", "crv": "Ed25519", "x": X, "alg": "HS256"});
        assert!(Jwk::parse(&wrong_alg).is_err());
        let enc = json!({"kty": "OKP", "crv": "Ed25519", "x": X, "use": "enc"});
        assert_eq!(KeySet::parse(&json!({"keys": [enc, ed]})).unwrap().keys.len(), 1);
    }

    #[test]
    fn find_needs_the_kid_or_a_single_key() {
        let k = |kid: &str| json!({"kty": "OKP", "crv": "Ed25519", "x": X, "kid": kid});
        let set = KeySet::parse(&json!([k("a"), k("b")])).unwrap();
        assert_eq!(set.find(Alg::EdDSA, Some("b")).unwrap().kid.as_deref(), Some("b"));
        assert!(set.find(Alg::EdDSA, Some("c")).is_none());
        assert!(set.find(Alg::EdDSA, None).is_none(), "ambiguous without kid");
        assert!(set.find(Alg::ES256, Some("a")).is_none(), "algorithm must fit the key");
        let one = KeySet::parse(&json!([k("a")])).unwrap();
        assert!(one.find(Alg::EdDSA, None).is_some());
    }

    #[test]
    fn refetch_is_rate_limited() {
        let mut c = KeyCache::default();
        assert!(c.should_fetch(0, false));
        c.attempt(0);
        c.store(KeySet::default(), 0);
        assert!(!c.should_fetch(1_000, false));
        assert!(!c.should_fetch(1_000, true), "unknown kid within the interval");
        assert!(c.should_fetch(MIN_REFETCH_MS, true));
        assert!(!c.should_fetch(MIN_REFETCH_MS, false));
        assert!(c.should_fetch(MAX_KEYS_AGE_MS, false));
        let mut c = KeyCache::default();
        assert!(!c.in_flight());
        c.attempt(5);
        assert!(c.in_flight(), "started, not ended");
        c.failed(6);
        assert!(!c.in_flight());
        c.attempt(MIN_REFETCH_MS + 6);
        assert!(c.in_flight());
        c.store(KeySet::default(), MIN_REFETCH_MS + 7);
        assert!(!c.in_flight());
    }
}
