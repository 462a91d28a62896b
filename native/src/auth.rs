//! Token verification for the native server: the core decides (`mcp_sieve::auth`: which key,
//! which claims, when to fetch keys); this file fetches the issuer's JWKS (https:// with the
//! upstreams' connector, `crate::http::tls`: rustls, the webpki roots and the platform's store,
//! proxies; http:// for loopback issuers, as the catalog allows) and checks
//! signatures with pure-Rust crates (RS256: `rsa`, ES256: `p256`, EdDSA: `ed25519-dalek`).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use mcp_sieve::auth::{self, Alg, AuthConfig, Identity, Issuer, Jwk, KeyCache, KeySet, Rejection};
use mcp_sieve::http::Party;

use crate::platform::now_ms;

/// Longest a JWKS fetch may take.
const FETCH_DEADLINE: Duration = Duration::from_secs(5);
/// Largest JWKS read.
const MAX_JWKS: usize = 256 * 1024;

/// Why a key set could not be fetched (logged; the keys had before stay in use).
#[derive(Debug, thiserror::Error)]
enum JwksError {
    /// `jwksUrl` is not a URL.
    #[error("bad JWKS URL {url}: {source}")]
    Url {
        /// The URL as written.
        url: String,
        /// Why it does not parse.
        #[source]
        source: hyper::http::uri::InvalidUri,
    },
    /// The issuer did not answer in time.
    #[error("no answer within {} s", FETCH_DEADLINE.as_secs())]
    Timeout,
    /// The answer could not be had or is not a key set.
    #[error("cannot read the JWKS at {url}: {reason}")]
    Read {
        /// The key set's URL.
        url: String,
        /// The connection's, the status's or the document's fault.
        reason: String,
    },
}

/// One party's keys: given, or fetched and cached.
struct Keys {
    issuer: Issuer,
    /// Held across a fetch: concurrent requests wait for the one fetch.
    cache: tokio::sync::Mutex<KeyCache>,
}

/// The verifier of this process.
pub struct Verifier {
    oauth: Option<Keys>,
    access: Option<Keys>,
    client: Client<crate::http::tls::Connector, Empty<Bytes>>,
}

/// Whether `signature` over `input` verifies with `key`.
pub fn signature_ok(key: &Jwk, input: &[u8], signature: &[u8]) -> bool {
    match key.alg {
        Alg::RS256 => {
            use rsa::pkcs1v15::{Signature, VerifyingKey};
            use rsa::signature::Verifier as _;
            let n = rsa::BigUint::from_bytes_be(&key.n_or_x);
            let e = rsa::BigUint::from_bytes_be(&key.e_or_y);
            let Ok(public) = rsa::RsaPublicKey::new(n, e) else {
                return false;
            };
            let Ok(sig) = Signature::try_from(signature) else {
                return false;
            };
            VerifyingKey::<sha2::Sha256>::new(public).verify(input, &sig).is_ok()
        }
        Alg::ES256 => {
            use p256::ecdsa::signature::Verifier as _;
            use p256::ecdsa::{Signature, VerifyingKey};
            let point = p256::EncodedPoint::from_affine_coordinates(
                key.n_or_x.as_slice().into(),
                key.e_or_y.as_slice().into(),
                false,
            );
            let (Ok(public), Ok(sig)) = (
                VerifyingKey::from_encoded_point(&point),
                Signature::from_slice(signature),
            ) else {
                return false;
            };
            public.verify(input, &sig).is_ok()
        }
        Alg::EdDSA => {
            let Ok(bytes) = <[u8; 32]>::try_from(key.n_or_x.as_slice()) else {
                return false;
            };
            let (Ok(public), Ok(sig)) = (
                ed25519_dalek::VerifyingKey::from_bytes(&bytes),
                ed25519_dalek::Signature::from_slice(signature),
            ) else {
                return false;
            };
            public.verify_strict(input, &sig).is_ok()
        }
    }
}

impl Verifier {
    /// The verifier for the catalog's `auth` block.
    pub fn new(auth: &AuthConfig) -> Verifier {
        let keys = |i: &Option<Issuer>| {
            i.clone().map(|issuer| Keys {
                issuer,
                cache: tokio::sync::Mutex::new(KeyCache::default()),
            })
        };
        Verifier {
            oauth: keys(&auth.oauth),
            access: keys(&auth.access),
            client: crate::http::tls::client(crate::http::tls::Connector::plain()),
        }
    }

    /// Fetches a JWKS; the error says why (for the log).
    async fn fetch(&self, url: &str) -> Result<KeySet, JwksError> {
        let uri: hyper::Uri = url.parse().map_err(|source| JwksError::Url {
            url: url.to_string(),
            source,
        })?;
        let get = async {
            let host = uri.host().unwrap_or_default().to_string();
            let res = self
                .client
                .get(uri)
                .await
                .map_err(|e| crate::http::tls::explain(&e, &host))?;
            if !res.status().is_success() {
                return Err(format!("HTTP {}", res.status()));
            }
            let body = Limited::new(res.into_body(), MAX_JWKS)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            let doc: serde_json::Value = serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))?;
            KeySet::parse(&doc)
        };
        tokio::time::timeout(FETCH_DEADLINE, get)
            .await
            .map_err(|_| JwksError::Timeout)?
            .map_err(|reason| JwksError::Read {
                url: url.to_string(),
                reason,
            })
    }

    /// The keys of `k`, fetched first when the cache says so.
    async fn keys(&self, k: &Keys, unknown_kid: bool) -> KeySet {
        let Some(url) = &k.issuer.jwks_url else {
            return k.issuer.keys.clone();
        };
        let mut cache = k.cache.lock().await;
        let now = now_ms();
        if cache.should_fetch(now, unknown_kid) {
            cache.attempt(now);
            match self.fetch(url).await {
                Ok(set) => cache.store(set, now_ms()),
                Err(e) => {
                    cache.failed(now_ms());
                    tracing::warn!("{e}");
                }
            }
        }
        cache.keys.clone()
    }

    /// Checks `token` as `party`'s: the caller it names, or why it is refused.
    pub async fn verify(&self, token: &str, party: Party) -> Result<Identity, Rejection> {
        let k = match party {
            Party::OAuth => self.oauth.as_ref(),
            Party::Access => self.access.as_ref(),
        }
        .ok_or_else(|| Rejection::Invalid("no issuer is configured for it".into()))?;
        let keys = self.keys(k, false).await;
        match auth::check(token, &k.issuer, &keys, now_ms(), &signature_ok) {
            Err(None) => {
                // A key we do not have: the issuer may have rotated; fetch again (rate-limited).
                let keys = self.keys(k, true).await;
                auth::check(token, &k.issuer, &keys, now_ms(), &signature_ok).map_err(|e| {
                    e.unwrap_or_else(|| {
                        Rejection::Invalid("it is signed with a key (kid) the issuer does not publish".into())
                    })
                })
            }
            other => other.map_err(|e| e.unwrap_or_else(|| Rejection::Invalid("unknown key".into()))),
        }
    }
}
