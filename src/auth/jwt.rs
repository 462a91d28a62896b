//! JWT access tokens (RFC 7519, RFC 9068) without cryptography: the compact form split and
//! decoded, the header checked (RS256, ES256 or EdDSA only; `alg: none`, HMAC and `crit` refused;
//! `jku`, `x5u`, `jwk` and `x5c` never read, so keys never come from the token), and the claims
//! checked (`iss`, `aud`, `exp`, `nbf` with leeway, scopes) and mapped to an [`Identity`]. The
//! signature is checked by the shell's verifier between [`Token::parse`] and [`Token::accept`].

use std::sync::Arc;

use serde_json::{Map, Value};

use super::config::Issuer;
use super::jwk::{b64url, Alg, Jwk, KeySet};
use super::{Identity, Rejection};

/// Longest token considered (a JWT is a few KB at most).
const MAX_TOKEN: usize = 16 * 1024;

/// A decoded token whose signature is not checked yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The header's algorithm.
    pub alg: Alg,
    /// The header's `kid`, if any.
    pub kid: Option<String>,
    /// What was signed: `header.payload` as sent.
    pub signing_input: Vec<u8>,
    /// The signature bytes.
    pub signature: Vec<u8>,
    /// The claims.
    pub claims: Map<String, Value>,
}

fn invalid(why: &str) -> Rejection {
    Rejection::Invalid(why.to_string())
}

fn object(part: &str, what: &str) -> Result<Map<String, Value>, Rejection> {
    let bytes = b64url(part).ok_or_else(|| invalid(&format!("its {what} is not base64url")))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(o)) => Ok(o),
        _ => Err(invalid(&format!("its {what} is not a JSON object"))),
    }
}

/// `value` at a dot path (`realm_access.roles`); a claim whose name has a dot is found first.
fn claim<'a>(claims: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(path) {
        return Some(v);
    }
    let (first, rest) = path.split_once('.')?;
    match claims.get(first)? {
        Value::Object(o) => claim(o, rest),
        _ => None,
    }
}

/// Strings of a claim: an array's strings, or a string split on spaces (`scope`).
fn words(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => s.split_whitespace().map(String::from).collect(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(String::from).collect(),
        _ => Vec::new(),
    }
}

impl Token {
    /// Splits and decodes a compact JWS and checks its header.
    pub fn parse(token: &str) -> Result<Token, Rejection> {
        if token.len() > MAX_TOKEN {
            return Err(invalid("it is longer than 16 KB"));
        }
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(invalid("it is not a JWT (three base64url parts separated by dots)"));
        };
        let header = object(h, "header")?;
        let name = header.get("alg").and_then(Value::as_str).unwrap_or("");
        let alg = Alg::from_name(name).ok_or_else(|| {
            invalid(&format!(
                "its algorithm \"{name}\" is not accepted (RS256, ES256 and EdDSA are; none and HMAC never)"
            ))
        })?;
        if header.contains_key("crit") {
            return Err(invalid(
                "its header has critical extensions (crit), which this server does not understand",
            ));
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(k)) => Some(k.clone()),
            Some(_) => return Err(invalid("its kid is not a string")),
        };
        let claims = object(p, "payload")?;
        let signature = b64url(s).ok_or_else(|| invalid("its signature is not base64url"))?;
        Ok(Token {
            alg,
            kid,
            signing_input: token.as_bytes()[..h.len() + 1 + p.len()].to_vec(),
            signature,
            claims,
        })
    }

    /// The key that must have signed it, from `keys` (`None`: no such key: an unknown `kid`, or
    /// no `kid` and not exactly one key of its algorithm).
    pub fn key<'k>(&self, keys: &'k KeySet) -> Option<&'k Jwk> {
        keys.find(self.alg, self.kid.as_deref())
    }

    /// The claims checked against `issuer` at `now_ms` (after the signature was verified), and
    /// the caller they name.
    pub fn accept(self, issuer: &Issuer, now_ms: i64) -> Result<Identity, Rejection> {
        if !issuer.algorithms.contains(&self.alg) {
            return Err(invalid("its algorithm is not among auth.algorithms"));
        }
        let c = &self.claims;
        let now = now_ms.div_euclid(1000);
        let leeway = issuer.leeway_seconds;
        if c.get("iss").and_then(Value::as_str) != Some(issuer.issuer.as_str()) {
            return Err(invalid(&format!("its issuer (iss) is not \"{}\"", issuer.issuer)));
        }
        let audience_ok = match c.get("aud") {
            Some(Value::String(a)) => *a == issuer.audience,
            Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(issuer.audience.as_str())),
            _ => false,
        };
        if !audience_ok {
            return Err(invalid(&format!(
                "its audience (aud) does not name this resource, \"{}\"",
                issuer.audience
            )));
        }
        let time = |k: &str| -> Result<Option<i64>, Rejection> {
            match c.get(k) {
                None => Ok(None),
                Some(v) => v
                    .as_f64()
                    .filter(|n| n.is_finite())
                    .map(|n| Some(n as i64))
                    .ok_or_else(|| invalid(&format!("its {k} is not a number of seconds"))),
            }
        };
        match time("exp")? {
            None => return Err(invalid("it has no expiry (exp)")),
            Some(exp) if now > exp.saturating_add(leeway) => return Err(invalid("it has expired (exp)")),
            _ => {}
        }
        if time("nbf")?.is_some_and(|nbf| now.saturating_add(leeway) < nbf) {
            return Err(invalid("it is not valid yet (nbf)"));
        }
        let principal = match claim(c, &issuer.principal_claim) {
            Some(Value::String(p)) if !p.is_empty() => p.clone(),
            _ => {
                return Err(invalid(&format!(
                    "it has no principal claim \"{}\" (a non-empty string)",
                    issuer.principal_claim
                )))
            }
        };
        let mut scopes = words(c.get("scope"));
        scopes.extend(words(c.get("scp")));
        let missing: Vec<String> = issuer
            .required_scopes
            .iter()
            .filter(|s| !scopes.contains(s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Rejection::InsufficientScope(issuer.required_scopes.clone()));
        }
        let mut roles: Vec<String> = Vec::new();
        for name in &issuer.roles_claims {
            for r in words(claim(c, name)) {
                if !roles.contains(&r) {
                    roles.push(r);
                }
            }
        }
        Ok(Identity {
            principal,
            roles,
            claims: Arc::new(self.claims),
        })
    }
}

/// A synchronous signature check: `(key, signing input, signature) -> valid`.
pub type VerifyFn<'a> = &'a dyn Fn(&Jwk, &[u8], &[u8]) -> bool;

/// The whole check with a synchronous verifier (`verify(key, signing_input, signature)`): the
/// token decoded, its key found in `keys`, its signature and claims checked.
/// `Err(None)`: no key for it in `keys` (the shell may refetch the key set and try again).
pub fn check(
    token: &str,
    issuer: &Issuer,
    keys: &KeySet,
    now_ms: i64,
    verify: VerifyFn<'_>,
) -> Result<Identity, Option<Rejection>> {
    let t = Token::parse(token).map_err(Some)?;
    let key = t.key(keys).ok_or(None)?;
    if !verify(key, &t.signing_input, &t.signature) {
        return Err(Some(invalid("its signature does not verify with the issuer's key")));
    }
    t.accept(issuer, now_ms).map_err(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enc(v: &Value) -> String {
        crate::base64::encode(v.to_string().as_bytes(), crate::base64::Alphabet::Url)
    }

    fn token(header: Value, claims: Value) -> String {
        format!("{}.{}.c2ln", enc(&header), enc(&claims))
    }

    fn issuer() -> Issuer {
        let cfg = crate::auth::AuthConfig::parse(Some(&json!({"resource": "https://r/mcp", "issuer": "https://i",
            "keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kid": "k1"}],
            "requiredScopes": ["mcp"], "rolesClaims": ["groups", "realm_access.roles"]})))
        .unwrap()
        .unwrap();
        cfg.oauth.unwrap()
    }

    fn claims() -> Value {
        json!({"iss": "https://i", "aud": ["x", "https://r/mcp"], "exp": 2000, "nbf": 1000, "sub": "alice",
            "scope": "mcp openid", "groups": ["admin", "eng"], "realm_access": {"roles": ["ops"]}})
    }

    fn accept(claims: Value) -> Result<Identity, Rejection> {
        Token::parse(&token(json!({"alg": "EdDSA", "kid": "k1"}), claims))?.accept(&issuer(), 1_500_000)
    }

    #[test]
    fn headers_that_are_never_accepted() {
        for (h, why) in [
            (json!({"alg": "none"}), "\"none\" is not accepted"),
            (json!({"alg": "HS256"}), "\"HS256\" is not accepted"),
            (json!({"alg": "RS512"}), "\"RS512\" is not accepted"),
            (json!({}), "\"\" is not accepted"),
            (json!({"alg": "RS256", "crit": ["exp"]}), "critical"),
            (json!({"alg": "RS256", "kid": 5}), "kid is not a string"),
        ] {
            let e = Token::parse(&token(h.clone(), claims())).unwrap_err();
            assert!(matches!(&e, Rejection::Invalid(m) if m.contains(why)), "{h}: {e:?}");
        }
        for bad in ["", "a.b", "a.b.c.d", "e30.e30.***", &"a".repeat(20_000)] {
            assert!(Token::parse(bad).is_err(), "{bad}");
        }
        // Keys named by the token itself are ignored: only the kid selects, from our set.
        let t = Token::parse(&token(
            json!({"alg": "EdDSA", "kid": "evil", "jku": "https://evil/jwks", "jwk": {"kty": "OKP"}}),
            claims(),
        ))
        .unwrap();
        assert!(t.key(&issuer().keys).is_none());
    }

    #[test]
    fn claims_map_to_principal_and_roles() {
        let id = accept(claims()).unwrap();
        assert_eq!(id.principal, "alice");
        assert_eq!(id.roles, vec!["admin", "eng", "ops"]);
        assert_eq!(id.claims["scope"], "mcp openid");
    }

    #[test]
    fn each_claim_check_refuses() {
        let with = |k: &str, v: Value| {
            let mut c = claims();
            c[k] = v;
            c
        };
        let without = |k: &str| {
            let mut c = claims();
            c.as_object_mut().unwrap().remove(k);
            c
        };
        for (c, why) in [
            (with("iss", json!("https://other")), "issuer"),
            (with("aud", json!("https://other/mcp")), "audience"),
            (without("aud"), "audience"),
            (without("exp"), "no expiry"),
            (with("exp", json!(1400)), "expired"),
            (with("exp", json!("soon")), "not a number"),
            (with("nbf", json!(1600)), "not valid yet"),
            (with("sub", json!("")), "principal"),
            (without("sub"), "principal"),
        ] {
            let e = accept(c.clone()).unwrap_err();
            assert!(matches!(&e, Rejection::Invalid(m) if m.contains(why)), "{c}: {e:?}");
        }
        // Within the leeway (60 s): expired 30 s ago, valid in 30 s.
        assert!(accept(with("exp", json!(1470))).is_ok());
        assert!(accept(with("nbf", json!(1530))).is_ok());
        assert_eq!(
            accept(with("scope", json!("openid"))).unwrap_err(),
            Rejection::InsufficientScope(vec!["mcp".into()])
        );
        assert!(accept(with("scp", json!(["mcp"]))).is_ok());
    }

    #[test]
    fn check_reports_an_unknown_key_apart() {
        let i = issuer();
        let t = token(json!({"alg": "EdDSA", "kid": "k2"}), claims());
        assert_eq!(check(&t, &i, &i.keys, 1_500_000, &|_, _, _| true).unwrap_err(), None);
        let t = token(json!({"alg": "EdDSA", "kid": "k1"}), claims());
        assert!(check(&t, &i, &i.keys, 1_500_000, &|_, _, _| true).is_ok());
        let e = check(&t, &i, &i.keys, 1_500_000, &|_, _, _| false)
            .unwrap_err()
            .unwrap();
        assert!(matches!(e, Rejection::Invalid(m) if m.contains("signature")));
    }

    #[test]
    fn base64url_is_strict() {
        assert_eq!(b64url("aGVsbG8").unwrap(), b"hello");
        assert!(b64url("aGVsbG8=").is_none());
        assert!(b64url("a+b/").is_none());
        assert!(b64url("a").is_none());
    }
}
