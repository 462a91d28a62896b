//! `mcp-sieve prepare FILE -o OUTPUT`: a catalog document's prepared form for a Worker's KV
//! (`mcp_sieve::catalog::prepared`: the document as given and an index of what the load makes of
//! it; docs/src/worker.md). A document that does not load, or a gateway's, is refused with why.

use std::path::Path;

use mcp_sieve::catalog::prepared;

use crate::error::ServerError;

/// Reads the document `file`, writes its prepared form to `output`, and says what it wrote.
pub(crate) fn run(file: &Path, output: &Path) -> Result<(), ServerError> {
    let text =
        std::fs::read_to_string(file).map_err(|e| ServerError::Io(format!("cannot read {}", file.display()), e))?;
    let value = prepared::prepare(&text).map_err(|e| ServerError::Config(format!("{}: {e}", file.display())))?;
    std::fs::write(output, &value).map_err(|e| ServerError::Io(format!("cannot write {}", output.display()), e))?;
    eprintln!(
        "mcp-sieve: wrote {} ({} bytes: the document's {} and an index of {}; format {} of mcp-sieve {}); put it in the Worker's KV: wrangler kv key put config --path {} --binding MCP_SIEVE_KV",
        output.display(),
        value.len(),
        text.len(),
        prepared::header(&value).and_then(Result::ok).map_or(0, |h| h.index.len()),
        prepared::FORMAT,
        prepared::VERSION,
        output.display()
    );
    Ok(())
}
