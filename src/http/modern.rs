//! The 2026-07-28 (stateless) request rules: the version travels in `_meta`, and the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must agree with the body.

use crate::error::Error;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::MODERN_VERSION;

/// A mirrored header's value: values outside visible ASCII arrive Base64-encoded
/// (`=?base64?…?=`); one that is not valid Base64 of UTF-8 text is `-32020` naming `header`.
fn decoded(header: &str, value: &str) -> Result<String, Error> {
    match value.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(b64) => crate::base64::decode(b64, crate::base64::Alphabet::Standard)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| {
                Error::HeaderMismatch(format!(
                    "the {header} header \"{value}\" is not valid =?base64?…?= text (Base64 of UTF-8)"
                ))
            }),
        None => Ok(value.to_string()),
    }
}

/// Search mode's `call_tool` in 2026-07-28: its `name` argument is marked `x-mcp-header: Tool`
/// (see `protocol::search::PARAM_HEADER`), so a client mirrors the inner tool's name into the
/// `Mcp-Param-Tool` header, and it must agree with `params.arguments.name` (`-32020` otherwise,
/// also when the body names a tool and the header is missing, as the revision requires).
pub(super) fn check_search_call(msg: &Incoming, searching: bool, param: Option<&str>) -> Result<(), Error> {
    let p = msg.params();
    if !searching || msg.method() != Some("tools/call") || p["name"].as_str() != Some(crate::protocol::search::CALL) {
        return Ok(());
    }
    const HEADER: &str = "Mcp-Param-Tool";
    match (p["arguments"]["name"].as_str(), param) {
        (None, None) => Ok(()),
        (Some(inner), None) => Err(Error::HeaderMismatch(format!(
            "the {HEADER} header is required for call_tool: it mirrors params.arguments.name (\"{inner}\"), \
             as call_tool's inputSchema marks it with x-mcp-header"
        ))),
        (inner, Some(v)) => {
            let named = decoded(HEADER, v)?;
            match inner {
                Some(inner) if inner == named => Ok(()),
                _ => Err(Error::HeaderMismatch(format!(
                    "the {HEADER} header \"{v}\" does not match params.arguments.name ({})",
                    inner.map_or("absent".to_string(), |i| format!("\"{i}\""))
                ))),
            }
        }
    }
}

/// The 2026-07-28 rules for a stateless request: the version travels in `_meta`, the
/// `MCP-Protocol-Version` and `Mcp-Method` headers must agree with the body (`-32020`), and the
/// version must be one this server speaks statelessly (`-32022`).
pub(super) fn check_modern(
    msg: &Incoming,
    header: Option<&str>,
    meta: Option<&str>,
    method: Option<&str>,
    name: Option<&str>,
) -> Result<(), Error> {
    let meta = meta.ok_or_else(|| {
        Error::HeaderMismatch("MCP-Protocol-Version is 2026-07-28 but params._meta[\"io.modelcontextprotocol/protocolVersion\"] is missing".into())
    })?;
    if let Some(hv) = header.filter(|hv| *hv != meta) {
        return Err(Error::HeaderMismatch(format!(
            "MCP-Protocol-Version header \"{hv}\" does not match params._meta protocolVersion \"{meta}\""
        )));
    }
    let body_method = msg.method().unwrap_or_default();
    match method {
        None => {
            return Err(Error::HeaderMismatch(format!(
                "the Mcp-Method header is required (here \"{body_method}\")"
            )))
        }
        Some(m) if m != body_method => {
            return Err(Error::HeaderMismatch(format!(
                "Mcp-Method header \"{m}\" does not match the body's method \"{body_method}\""
            )))
        }
        _ => {}
    }
    let mirrored = crate::protocol::jsonrpc::mirrored_param(body_method);
    // A body without the mirrored field is left to the method, which names what is missing.
    if let Some((field, want)) = mirrored.and_then(|f| Some((f, crate::json::member(msg.params(), f).as_str()?))) {
        match name {
            // A task's id is checked when sent, not required: clients written before the tasks
            // extension's HTTP binding poll without it.
            None if field == "taskId" => {}
            None => {
                return Err(Error::HeaderMismatch(format!(
                    "the Mcp-Name header is required for {body_method}"
                )))
            }
            Some(n) => {
                if decoded("Mcp-Name", n)? != want {
                    return Err(Error::HeaderMismatch(format!(
                        "Mcp-Name header \"{n}\" does not match params.{field} \"{want}\""
                    )));
                }
            }
        }
    }
    check_version_and_capabilities(msg, meta)
}

/// The 2026-07-28 checks that need no headers (stdio has none): the version must be the one
/// this server speaks statelessly (`-32022`), and a request must carry the client's capabilities.
pub(crate) fn check_version_and_capabilities(msg: &Incoming, version: &str) -> Result<(), Error> {
    if version != MODERN_VERSION {
        return Err(Error::UnsupportedVersion(version.into(), MODERN_VERSION.into()));
    }
    if matches!(msg, Incoming::Request { .. })
        && !crate::json::member(msg.meta(), "io.modelcontextprotocol/clientCapabilities").is_object()
    {
        return Err(Error::params(
            "params._meta[\"io.modelcontextprotocol/clientCapabilities\"] is required (an object) in protocol version 2026-07-28",
        ));
    }
    Ok(())
}
