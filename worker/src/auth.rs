//! Token verification in the Worker: the core decides (`mcp_sieve::auth`: which key, which claims,
//! when to fetch keys); this file fetches the issuer's JWKS with `fetch` (cached per isolate) and
//! checks signatures with the platform's WebCrypto (`crypto.subtle.verify`): no crypto library in
//! the wasm. The front Worker verifies; a session's Durable Object receives the verified caller in
//! [`IDENTITY_HEADER`], which the front always sets itself (a client's value is replaced).
//! [`Caller`] (`caller.rs`) is what the front Worker knows of a request's caller before the core
//! answers it: the verified identity and the view it chose.

mod caller;

pub use caller::Caller;

use std::cell::RefCell;
use std::sync::Arc;

use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use mcp_sieve::auth::{Alg, AuthConfig, Identity, Issuer, Jwk, KeyCache, KeySet, Rejection, Token};
use mcp_sieve::http::{self, Party, Who};
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{AbortController, Delay, Fetch, Request, RequestInit};

use crate::platform::now_ms;
use crate::telemetry::log;

/// The header that carries the verified caller from the front Worker to a session's object.
pub const IDENTITY_HEADER: &str = "x-mcp-sieve-caller";
/// Longest a JWKS fetch may take.
const FETCH_DEADLINE_MS: u64 = 5_000;
/// Largest JWKS read.
const MAX_JWKS: usize = 256 * 1024;

thread_local! {
    /// This isolate's key sets: (OAuth, Access).
    static CACHE: RefCell<(KeyCache, KeyCache)> = RefCell::new(Default::default());
}

fn js(v: &Value) -> JsValue {
    js_sys::JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL)
}

/// `crypto.subtle.<name>(...args)`, awaited.
async fn subtle(name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &"crypto".into())?;
    let subtle = Reflect::get(&crypto, &"subtle".into())?;
    let f: Function = Reflect::get(&subtle, &name.into())?.dyn_into()?;
    let p: Promise = f.apply(&subtle, &args.iter().collect::<Array>())?.dyn_into()?;
    JsFuture::from(p).await
}

/// Whether `signature` over `input` verifies with `key`, by WebCrypto.
async fn signature_ok(key: &Jwk, input: &[u8], signature: &[u8]) -> bool {
    let (import, verify) = match key.alg {
        Alg::RS256 => (
            json!({"name": "RSASSA-PKCS1-v1_5", "hash": "SHA-256"}),
            json!({"name": "RSASSA-PKCS1-v1_5"}),
        ),
        Alg::ES256 => (
            json!({"name": "ECDSA", "namedCurve": "P-256"}),
            json!({"name": "ECDSA", "hash": "SHA-256"}),
        ),
        Alg::EdDSA => (json!({"name": "Ed25519"}), json!({"name": "Ed25519"})),
    };
    let usages: Array = [JsValue::from("verify")].iter().collect();
    let imported = subtle(
        "importKey",
        &["jwk".into(), js(&key.json), js(&import), JsValue::FALSE, usages.into()],
    )
    .await;
    let Ok(public) = imported else {
        log::error(format_args!("WebCrypto refused a published key ({:?})", key.alg));
        return false;
    };
    let sig = Uint8Array::from(signature);
    let data = Uint8Array::from(input);
    subtle("verify", &[js(&verify), public, sig.into(), data.into()])
        .await
        .is_ok_and(|ok| ok.as_bool() == Some(true))
}

/// Why an issuer's JWKS could not be read (for the log).
#[derive(Debug, thiserror::Error)]
#[error("cannot read the JWKS at {url}: {why}")]
struct JwksError {
    url: String,
    why: Unread,
}

/// What went wrong reading a JWKS.
#[derive(Debug, thiserror::Error)]
enum Unread {
    #[error("{0}")]
    Platform(#[from] worker::Error),
    #[error("HTTP {0}")]
    Status(u16),
    #[error("larger than {MAX_JWKS} bytes")]
    TooLarge,
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// The core's reason (`KeySet::parse`).
    #[error("{0}")]
    Keys(String),
    #[error("no answer within {FETCH_DEADLINE_MS} ms")]
    Late,
}

/// Fetches a JWKS; the error says why (for the log).
async fn fetch(url: &str) -> Result<KeySet, JwksError> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let get = async {
        let req = Request::new_with_init(url, &RequestInit::new())?;
        let mut res = Fetch::Request(req).send_with_signal(&signal).await?;
        if res.status_code() != 200 {
            return Err(Unread::Status(res.status_code()));
        }
        let body = res.bytes().await?;
        if body.len() > MAX_JWKS {
            return Err(Unread::TooLarge);
        }
        let doc: Value = serde_json::from_slice(&body)?;
        KeySet::parse(&doc).map_err(Unread::Keys)
    };
    let timeout = Delay::from(std::time::Duration::from_millis(FETCH_DEADLINE_MS));
    futures_util::pin_mut!(get);
    let why = match futures_util::future::select(get, timeout).await {
        futures_util::future::Either::Left((Ok(set), _)) => return Ok(set),
        futures_util::future::Either::Left((Err(why), _)) => why,
        futures_util::future::Either::Right(_) => {
            controller.abort();
            Unread::Late
        }
    };
    Err(JwksError {
        url: url.to_string(),
        why,
    })
}

fn with_cache<R>(party: Party, f: impl FnOnce(&mut KeyCache) -> R) -> R {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        f(match party {
            Party::OAuth => &mut c.0,
            Party::Access => &mut c.1,
        })
    })
}

/// The keys of `issuer`, fetched first when the cache says so.
async fn keys(issuer: &Issuer, party: Party, unknown_kid: bool) -> KeySet {
    let Some(url) = &issuer.jwks_url else {
        return issuer.keys.clone();
    };
    // Another request of this isolate is fetching them: wait for its answer (a cold isolate has
    // no keys yet, and a token must not be judged by an empty set).
    let started = now_ms();
    while with_cache(party, |c| c.in_flight()) && now_ms() - started < FETCH_DEADLINE_MS as i64 {
        Delay::from(std::time::Duration::from_millis(20)).await;
    }
    let now = now_ms();
    if with_cache(party, |c| {
        let go = c.should_fetch(now, unknown_kid);
        if go {
            c.attempt(now);
        }
        go
    }) {
        match fetch(url).await {
            Ok(set) => with_cache(party, |c| c.store(set, now_ms())),
            Err(e) => {
                with_cache(party, |c| c.failed(now_ms()));
                log::error(&e);
            }
        }
    }
    with_cache(party, |c| c.keys.clone())
}

/// The token checked with `keys`: `Err(None)` when no key there fits it.
async fn check(token: &Token, issuer: &Issuer, keys: &KeySet) -> Result<Identity, Option<Rejection>> {
    let key = token.key(keys).ok_or(None)?;
    if !signature_ok(key, &token.signing_input, &token.signature).await {
        return Err(Some(Rejection::Invalid(
            "its signature does not verify with the issuer's key".into(),
        )));
    }
    token.clone().accept(issuer, now_ms()).map_err(Some)
}

/// Verifies `token` as `party`'s.
async fn verify(auth: &AuthConfig, token: &str, party: Party) -> Result<Identity, Rejection> {
    let issuer = match party {
        Party::OAuth => auth.oauth.as_ref(),
        Party::Access => auth.access.as_ref(),
    }
    .ok_or_else(|| Rejection::Invalid("no issuer is configured for it".into()))?;
    let t = Token::parse(token)?;
    match check(&t, issuer, &keys(issuer, party, false).await).await {
        Err(None) => {
            // A key we do not have: the issuer may have rotated; fetch again (rate-limited).
            let again = check(&t, issuer, &keys(issuer, party, true).await).await;
            again.map_err(|e| {
                e.unwrap_or_else(|| {
                    Rejection::Invalid("it is signed with a key (kid) the issuer does not publish".into())
                })
            })
        }
        other => other.map_err(|e| e.unwrap_or_else(|| Rejection::Invalid("unknown key".into()))),
    }
}

/// Who the request is (front Worker): a static token, a verified JWT, or the refusal to answer.
pub async fn authenticate(
    cfg: &http::Config,
    header: &dyn Fn(&str) -> Option<String>,
) -> Result<http::Caller, Box<http::Response>> {
    match http::who(cfg, header) {
        Who::Known(c) => Ok(c),
        Who::Refused(r) => Err(r),
        Who::Verify(token, party) => {
            let Some(auth) = cfg.auth.as_deref() else {
                return Err(Box::new(http::failed()));
            };
            verify(auth, &token, party)
                .await
                .map(http::Caller::verified)
                .map_err(|why| Box::new(http::refused(cfg, &why, header("origin").as_deref())))
        }
    }
}

/// The caller as [`IDENTITY_HEADER`]'s value.
pub fn encode(c: &http::Caller) -> String {
    let id = c.identity.as_deref();
    json!({
        "principal": c.principal,
        "roles": id.map(|i| i.roles.clone()),
        "claims": id.map(|i| Value::Object((*i.claims).clone())),
    })
    .to_string()
}

/// The caller the front Worker verified (in a session's object): from [`IDENTITY_HEADER`].
pub fn decode(value: Option<String>) -> http::Caller {
    let Some(v) = value.and_then(|v| serde_json::from_str::<Value>(&v).ok()) else {
        return http::Caller::default();
    };
    let principal = v["principal"].as_str().map(String::from);
    let identity = match (&principal, v["claims"].as_object()) {
        (Some(p), Some(claims)) => Some(Arc::new(Identity {
            principal: p.clone(),
            roles: v["roles"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
                .unwrap_or_default(),
            claims: Arc::new(claims.clone()),
        })),
        _ => None,
    };
    http::Caller { principal, identity }
}
