//! `mcp-sieve index --ai` (issue 61 item 5): the tools' vectors from Workers AI's REST API
//! (`POST {base}/accounts/{account}/ai/run/{model}` with `{"text": [...]}`, answered
//! `{"result": {"shape", "data": [[...]]}, "success", "errors"}`), by the model a Worker with an
//! `[ai]` binding encodes its queries with (`hybrid::WORKERS_AI_MODEL` unless the document's
//! `search.ai` names another), so the tools' and the queries' vectors come from one model. The
//! account and token come from the variables wrangler reads, `CLOUDFLARE_ACCOUNT_ID` and
//! `CLOUDFLARE_API_TOKEN`; `CLOUDFLARE_API_BASE_URL` (wrangler's too) points it elsewhere, as the
//! tests do at a loopback stand-in. Neither the binding nor the real API is run here: both need a
//! Cloudflare account.

use serde_json::{json, Value};

/// The account's id.
pub const ACCOUNT: &str = "CLOUDFLARE_ACCOUNT_ID";
/// An API token with the Workers AI permission.
pub const TOKEN: &str = "CLOUDFLARE_API_TOKEN";
/// The API's base URL, when not Cloudflare's.
pub const BASE: &str = "CLOUDFLARE_API_BASE_URL";
/// Cloudflare's API.
const DEFAULT_BASE: &str = "https://api.cloudflare.com/client/v4";
/// Texts a request: Workers AI takes at most 100, and 50 rows of 384 numbers are about 400 KB of
/// JSON, within the client's 1 MB answer limit (`oauth::Http`), where 100 would be near it.
pub const BATCH: usize = 50;

/// Why Workers AI gave no vectors; each names the variable to look at.
#[derive(Debug, thiserror::Error)]
pub enum AiError {
    #[error(
        "index --ai needs {ACCOUNT}: your Cloudflare account's id (the dashboard's Workers AI page, \"Use REST API\")"
    )]
    NoAccount,
    #[error("index --ai needs {TOKEN}: a Cloudflare API token with the Workers AI permission")]
    NoToken,
    #[error("cannot reach Workers AI at {url} ({BASE} when set, else {DEFAULT_BASE}): {error}")]
    Unreachable { url: String, error: Box<mcp_sieve::Error> },
    #[error("Workers AI refused the token in {TOKEN} (HTTP {status}: {said}); it needs the Workers AI permission on the account in {ACCOUNT}")]
    Token { status: u16, said: String },
    #[error("Workers AI knows no account {account} or model {model} (HTTP {status}: {said}); check {ACCOUNT}")]
    NotFound {
        account: String,
        model: String,
        status: u16,
        said: String,
    },
    #[error("Workers AI answered HTTP {status} for {model}: {said}")]
    Status { status: u16, model: String, said: String },
    #[error("Workers AI's answer for {model}: {why}")]
    Answer { model: String, why: String },
}

/// Where to post and with what: from the environment.
pub struct Api {
    url: String,
    account: String,
    token: String,
    model: String,
}

impl Api {
    /// `model` at the account and with the token the environment names (`var` reads it).
    pub fn from_env(model: &str, var: &dyn Fn(&str) -> Option<String>) -> Result<Api, AiError> {
        let set = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let account = set(ACCOUNT).ok_or(AiError::NoAccount)?;
        let token = set(TOKEN).ok_or(AiError::NoToken)?;
        let base = set(BASE).unwrap_or_else(|| DEFAULT_BASE.to_string());
        let url = format!("{}/accounts/{account}/ai/run/{model}", base.trim_end_matches('/'));
        Ok(Api {
            url,
            account,
            token,
            model: model.to_string(),
        })
    }

    /// The unit vectors of `texts` (at most [`BATCH`]), in order.
    pub async fn embed(&self, http: &crate::oauth::Http, texts: &[&str]) -> Result<Vec<Vec<f32>>, AiError> {
        let headers = [
            ("content-type".to_string(), "application/json".to_string()),
            ("authorization".to_string(), format!("Bearer {}", self.token)),
        ];
        let answer = http
            .post(&self.url, &headers, json!({"text": texts}).to_string())
            .await
            .map_err(|error| AiError::Unreachable {
                url: self.url.clone(),
                error: Box::new(error),
            })?;
        self.read(answer.status, &answer.body, texts.len())
    }

    /// An answer's vectors, or what went wrong in the words of the variable to look at.
    fn read(&self, status: u16, body: &str, n: usize) -> Result<Vec<Vec<f32>>, AiError> {
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        if status != 200 || v["success"] == json!(false) {
            let said = said(&v, body);
            // Cloudflare's codes for a token it does not accept (10000: authentication error,
            // 9106/9109: missing or invalid token).
            let codes: Vec<i64> = v["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["code"].as_i64())
                .collect();
            return Err(match status {
                401 | 403 => AiError::Token { status, said },
                _ if codes.iter().any(|c| [10000, 9106, 9109].contains(c)) => AiError::Token { status, said },
                404 => AiError::NotFound {
                    account: self.account.clone(),
                    model: self.model.clone(),
                    status,
                    said,
                },
                _ => AiError::Status {
                    status,
                    model: self.model.clone(),
                    said,
                },
            });
        }
        let answer = |why: String| AiError::Answer {
            model: self.model.clone(),
            why,
        };
        let rows = v["result"]["data"]
            .as_array()
            .filter(|d| d.len() == n)
            .ok_or_else(|| answer(format!("no result.data array of {n} vectors")))?;
        let rows: Vec<Vec<f32>> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                mcp_sieve::search::hybrid::unit_vector(r)
                    .filter(|r| !r.is_empty())
                    .ok_or_else(|| answer(format!("result.data[{i}] is not an array of numbers")))
            })
            .collect::<Result<_, _>>()?;
        if rows.iter().any(|r| r.len() != rows[0].len()) {
            return Err(answer("the vectors are not all of one length".into()));
        }
        Ok(rows)
    }
}

/// The API's `errors[].message`s, else the start of the body.
fn said(v: &Value, body: &str) -> String {
    let messages: Vec<String> = v["errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| match (e["code"].as_i64(), e["message"].as_str()) {
            (Some(c), Some(m)) => format!("{c} {m}"),
            (None, Some(m)) => m.to_string(),
            _ => e.to_string(),
        })
        .collect();
    if messages.is_empty() {
        body.chars().take(200).collect()
    } else {
        messages.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Api {
        let env = |n: &str| match n {
            ACCOUNT => Some("acc1".to_string()),
            TOKEN => Some("tok".to_string()),
            _ => None,
        };
        Api::from_env("@cf/baai/bge-small-en-v1.5", &env).unwrap()
    }

    #[test]
    fn the_url_and_the_missing_variables_are_named() {
        assert_eq!(
            api().url,
            "https://api.cloudflare.com/client/v4/accounts/acc1/ai/run/@cf/baai/bge-small-en-v1.5"
        );
        let env = |set: &'static [(&'static str, &'static str)]| {
            move |n: &str| set.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string())
        };
        let a = Api::from_env(
            "@cf/m",
            &env(&[(ACCOUNT, "a"), (TOKEN, "t"), (BASE, "http://127.0.0.1:9/v4/")]),
        )
        .unwrap();
        assert_eq!(a.url, "http://127.0.0.1:9/v4/accounts/a/ai/run/@cf/m");
        let only = |set: &'static [&'static str]| move |n: &str| set.contains(&n).then(|| "x".to_string());
        let e = Api::from_env("@cf/m", &only(&[TOKEN])).err().unwrap().to_string();
        assert!(e.contains("needs CLOUDFLARE_ACCOUNT_ID"), "{e}");
        let e = Api::from_env("@cf/m", &only(&[ACCOUNT])).err().unwrap().to_string();
        assert!(e.contains("needs CLOUDFLARE_API_TOKEN"), "{e}");
    }

    #[test]
    fn answers_are_read_and_refusals_name_the_variable() {
        let ok = r#"{"result": {"shape": [2, 2], "data": [[3, 4], [0, 2]]}, "success": true, "errors": []}"#;
        assert_eq!(api().read(200, ok, 2).unwrap(), vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        let cases = [
            (401, r#"{"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}"#, "refused the token in CLOUDFLARE_API_TOKEN (HTTP 401: 10000 Authentication error)"),
            (400, r#"{"success": false, "errors": [{"code": 9109, "message": "Invalid access token"}]}"#, "CLOUDFLARE_API_TOKEN"),
            (404, "not here", "knows no account acc1 or model @cf/baai/bge-small-en-v1.5 (HTTP 404: not here); check CLOUDFLARE_ACCOUNT_ID"),
            (500, r#"{"success": false, "errors": [{"message": "boom"}]}"#, "HTTP 500 for @cf/baai/bge-small-en-v1.5: boom"),
            (200, r#"{"result": {"data": [[1]]}, "success": true}"#, "no result.data array of 2 vectors"),
            (200, r#"{"result": {"data": [[1], ["x"]]}, "success": true}"#, "result.data[1] is not an array of numbers"),
            (200, r#"{"result": {"data": [[1], [1, 2]]}, "success": true}"#, "not all of one length"),
        ];
        for (status, body, want) in cases {
            let e = api().read(status, body, 2).unwrap_err().to_string();
            assert!(e.contains(want), "{status} {body}: {e}");
        }
    }
}
