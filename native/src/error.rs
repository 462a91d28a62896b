//! The native shell's errors: bad arguments, I/O, configuration, the upstream.

/// Everything that stops the native server or one of its upstream exchanges.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Bad command line.
    #[error("{0}")]
    Usage(String),
    /// A file, socket or runtime failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// The catalog document or the transport configuration is invalid, or the core refused.
    #[error(transparent)]
    Core(#[from] mcp_sieve::Error),
    /// A configuration file is invalid: one line per problem, each naming the file, line and field.
    #[error("{0}")]
    Config(String),
    /// `check` found this many errors (already printed).
    #[error("{0} errors")]
    Check(usize),
    /// A sentence encoder's folder named by `search.model` is missing a file or holds bad data.
    #[error(transparent)]
    Model(#[from] crate::search::encoder::ModelError),
    /// The OS could not give random bytes for session and task ids.
    #[error("no secure random source for ids: {0}")]
    Random(#[from] getrandom::Error),
}

/// The error of an exchange (a `method` request) that outlived the upstream's deadline of
/// `call_ms` (the core adds the upstream's name).
pub(crate) fn late(method: &str, call_ms: u64) -> mcp_sieve::Error {
    let what = if method.is_empty() { "a request" } else { method };
    mcp_sieve::Error::Upstream(format!(
        "did not answer {what} within {} s (limits.callTimeoutSeconds)",
        call_ms.div_ceil(1000)
    ))
}
