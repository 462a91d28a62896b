//! An OpenAI-compatible `POST /v1/embeddings` served by `mcp-sieve serve` when its document names a
//! sentence encoder (`"search": {"model": "<folder>"}`; issue 40 item 3): the same encoder that
//! made the tools' vectors (`mcp-sieve index`) encodes a Worker's queries, so both sides use one
//! model. Request `{"input": "text" | ["text", …], "model"?: …}`; answer
//! `{"object": "list", "data": [{"object": "embedding", "index", "embedding": [...]}], "model",
//! "usage"}`, unit vectors. Behind the same gate (Origin, token) as `/mcp`.

use std::path::PathBuf;

use serde_json::{json, Value};

/// Where it is served.
pub const PATH: &str = "/v1/embeddings";
/// Most texts one request encodes.
const MAX_INPUTS: usize = 64;
/// Longest text, in characters (the encoder reads at most 256 tokens of it anyway).
const MAX_CHARS: usize = 8_000;

/// The answer to a body sent to [`PATH`] by a server whose model folder is `model` (`None`: no
/// model configured, 404): (status, JSON body).
pub fn answer(model: Option<PathBuf>, method: &str, body: &[u8]) -> (u16, Value) {
    let error = |status: u16, message: String| {
        (
            status,
            json!({"error": {"message": message, "type": "invalid_request_error"}}),
        )
    };
    let Some(dir) = model else {
        return error(
            404,
            "no sentence encoder is configured (the document's search.model)".into(),
        );
    };
    if method != "POST" {
        return error(405, format!("{PATH} takes POST"));
    }
    let request: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return error(400, "the body must be a JSON object".into()),
        Err(e) => return error(400, format!("the body is not JSON: {e}")),
    };
    let texts: Vec<&str> = match request.get("input") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_INPUTS => {
            match a.iter().map(Value::as_str).collect::<Option<Vec<_>>>() {
                Some(t) => t,
                None => return error(400, "input must be a string or an array of strings".into()),
            }
        }
        Some(Value::Array(a)) => {
            return error(400, format!("input must hold 1 to {MAX_INPUTS} texts, got {}", a.len()))
        }
        _ => return error(400, "input is required (a string or an array of strings)".into()),
    };
    if let Some(i) = texts.iter().position(|t| t.chars().count() > MAX_CHARS) {
        return error(400, format!("input[{i}] is longer than {MAX_CHARS} characters"));
    }
    let encoder = match crate::search::meaning::encoder(&dir) {
        Ok(e) => e,
        Err(e) => return error(503, e.to_string()),
    };
    let vectors = match encoder.encode(&texts) {
        Ok(v) => v,
        Err(e) => return error(500, format!("the encoder failed: {e}")),
    };
    let tokens: usize = texts.iter().map(|t| encoder.tokens(t).map_or(0, |ids| ids.len())).sum();
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(index, embedding)| json!({"object": "embedding", "index": index, "embedding": embedding}))
        .collect();
    (
        200,
        json!({"object": "list", "data": data, "model": encoder.identity,
               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/models/all-minilm-l6-v2")
    }

    #[test]
    fn encodes_in_openais_shape_with_unit_vectors() {
        let (status, v) = answer(
            Some(model()),
            "POST",
            br#"{"input": ["find a file", "refund"], "model": "x"}"#,
        );
        assert_eq!(status, 200, "{v}");
        let data = v["data"].as_array().unwrap();
        assert_eq!(data.len(), 2);
        assert_eq!(data[1]["index"], 1);
        let e: Vec<f64> = data[0]["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(e.len(), 384);
        let norm: f64 = e.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "{norm}");
    }

    #[test]
    fn bad_requests_name_the_field() {
        let (s, v) = answer(Some(model()), "POST", br#"{"input": 3}"#);
        assert_eq!(s, 400);
        assert!(
            v["error"]["message"].as_str().unwrap().contains("input is required"),
            "{v}"
        );
        let (s, _) = answer(None, "POST", br#"{"input": "x"}"#);
        assert_eq!(s, 404);
        let (s, _) = answer(Some(model()), "GET", b"");
        assert_eq!(s, 405);
    }
}
