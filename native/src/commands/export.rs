//! `mcp-sieve export`: what a host passes to a model API for the tools a view serves (the core's
//! `mcp_sieve::export` shapes them). The tools are listed as `mcp-sieve tools` lists them, but in
//! list mode: a provider connecting to the printed URL must see the tools themselves, and does
//! the searching itself (tool search) where our search mode would have listed `find_tools`.

use mcp_sieve::export::{anthropic, openai, Target};
use serde_json::Value;

use crate::cli::{ExportArgs, Format, ViewArgs};
use crate::commands::tools::{list, serving};
use crate::config::load::Document;
use crate::error::ServerError;

/// Prints the export of the catalog document `doc` for `args`.
pub async fn run(doc: Document, folder: &std::path::Path, args: ExportArgs) -> Result<(), ServerError> {
    let server = serving(doc.catalog(&doc.text)?, folder).await?;
    let flags = &args.tools.view;
    let chosen = flags.resolve(server.catalog())?;
    let search = chosen.as_ref().is_some_and(|v| v.search);
    let pinned = chosen.as_ref().map(|v| v.pinned.clone()).unwrap_or_default();
    // The same view in list mode: the URL the provider connects to, and what it lists there.
    let (path, mut query) = ViewArgs {
        search: false,
        ..flags.clone()
    }
    .as_url();
    if search {
        query = [query.as_str(), "mode=list"]
            .into_iter()
            .filter(|q| !q.is_empty())
            .collect::<Vec<_>>()
            .join("&");
    }
    let view = mcp_sieve::http::endpoint_view(server.catalog(), &path, &query, &|_| None, None)
        .map_err(|_| ServerError::Usage(format!("bad view: {path}?{query}")))?;
    let tools = list(&server, view)?;
    let url = format!(
        "{}{path}{}{query}",
        args.url.trim_end_matches('/'),
        if query.is_empty() { "" } else { "?" }
    );
    let target = Target {
        name: &args.name,
        url: &url,
        pinned: search.then_some(pinned.as_slice()),
    };
    let out = match args.format {
        Format::Anthropic => anthropic(&tools, &target),
        Format::Openai => {
            let groups: Vec<Value> = server
                .catalog()
                .groups
                .iter()
                .map(|g| Value::Object(g.json.clone()))
                .collect();
            openai(&tools, &groups, &target)
        }
    };
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    Ok(())
}
