//! The one error type of the core; every variant knows its JSON-RPC code.

use serde_json::{json, Value};

/// JSON-RPC 2.0 error codes used by mcp-sieve (only the spec's codes).
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// MCP 2025-11-25: the resource does not exist (or is hidden from this client).
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
    /// MCP 2026-07-28: HTTP headers disagree with the body (or are missing or malformed).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// MCP 2026-07-28: the request's protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
    /// MCP 2026-07-28: the request needs a client capability its `clientCapabilities` lack.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// MCP 2025-11-25: the request cannot go on until the user completes a URL-mode
    /// elicitation (`data.elicitations`).
    pub const URL_ELICITATION_REQUIRED: i32 = -32042;
}

/// Everything that can go wrong in the core. Messages say what was wrong and what would be right.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The body is not JSON.
    #[error("parse error: {0}")]
    Parse(String),
    /// Valid JSON, but not a JSON-RPC request.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// No such method.
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// A parameter is wrong; the message names its path and what was expected.
    #[error("{message}")]
    InvalidParams {
        /// What was wrong, with the path of the field.
        message: String,
        /// Extra machine-readable detail (e.g. the valid values).
        data: Option<Value>,
    },
    /// The catalog document is invalid; names the bad field.
    #[error("invalid catalog: {0}")]
    Catalog(String),
    /// MCP 2026-07-28 header/body disagreement.
    #[error("header mismatch: {0}")]
    HeaderMismatch(String),
    /// MCP 2026-07-28: the request's protocol version is not one this server speaks.
    #[error("unsupported protocol version \"{0}\"; supported: {1}")]
    UnsupportedVersion(String, String),
    /// A bug or an unexpected state.
    #[error("internal error: {0}")]
    Internal(String),
    /// A transport variable (`MCP_SIEVE_*`) is invalid; names it.
    #[error("{0}")]
    Config(String),
    /// Another MCP server answered a request with this JSON-RPC error (passed on with its code).
    #[error("{message}")]
    Rpc {
        /// The server's error code.
        code: i32,
        /// Its message.
        message: String,
        /// Its data, if any.
        data: Option<Value>,
    },
    /// The upstream MCP server (gateway mode, the package's client) failed or answered badly.
    #[error("the upstream MCP server failed: {0}")]
    Upstream(String),
}

/// Result alias of the core.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Invalid params with only a message.
    pub fn params(message: impl Into<String>) -> Self {
        Error::InvalidParams {
            message: message.into(),
            data: None,
        }
    }

    /// Invalid params with structured data.
    pub fn params_with(message: impl Into<String>, data: Value) -> Self {
        Error::InvalidParams {
            message: message.into(),
            data: Some(data),
        }
    }

    /// Re-labels a parameter error found while loading the catalog document as a catalog error.
    pub fn in_catalog(self) -> Self {
        match self {
            Error::InvalidParams { message, .. } => Error::Catalog(message),
            other => other,
        }
    }

    /// The JSON-RPC code of this error.
    pub fn code(&self) -> i32 {
        match self {
            Error::Parse(_) => code::PARSE_ERROR,
            Error::InvalidRequest(_) => code::INVALID_REQUEST,
            Error::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            Error::InvalidParams { .. } | Error::Catalog(_) => code::INVALID_PARAMS,
            Error::Internal(_) | Error::Upstream(_) | Error::Config(_) => code::INTERNAL_ERROR,
            Error::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Error::UnsupportedVersion(..) => code::UNSUPPORTED_PROTOCOL_VERSION,
            Error::Rpc { code, .. } => *code,
        }
    }

    /// Extra data, if any.
    pub fn data(&self) -> Option<&Value> {
        match self {
            Error::InvalidParams { data, .. } | Error::Rpc { data, .. } => data.as_ref(),
            _ => None,
        }
    }

    /// The JSON-RPC `error` object.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code(), "message": self.to_string()});
        if let Some(d) = self.data() {
            v["data"] = d.clone();
        }
        if let Error::UnsupportedVersion(_, supported) = self {
            v["data"] = json!({"supported": supported.split(", ").collect::<Vec<_>>()});
        }
        v
    }
}

impl Error {
    /// The error a JSON-RPC `error` object (from another server) describes; `what` prefixes
    /// its message (the method it answered).
    pub fn from_rpc(what: &str, e: &Value) -> Self {
        Error::Rpc {
            code: e["code"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(code::INTERNAL_ERROR),
            message: format!(
                "{what}: {}",
                e["message"].as_str().unwrap_or("an error without a message")
            ),
            data: e.get("data").cloned(),
        }
    }
}

/// Describes a JSON value's type for error messages ("a string", "an object", ...).
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
