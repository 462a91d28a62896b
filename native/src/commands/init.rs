//! `mcp-sieve init --mcp-config FILE`: starts the configuration's upstreams once, reads their
//! tools, and writes a starter catalog document for the user to edit — an entry per upstream
//! (its group: a `title`; tags from its tools' annotations switched on; FastMCP and grouping
//! metadata are imported anyway), the tags found, and views: `search` (everything, found by
//! `find_tools`), `read-only`, and one per upstream. The document holds no command, URL or secret:
//! it is used beside the configuration (`--mcp-config FILE --catalog DOC`), which supplies them.

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::config::load;
use crate::error::ServerError;

/// The starter document for upstreams `names` whose tools are `tools` (as listed).
pub fn starter(names: &[String], tools: &[Value]) -> Value {
    let mut upstreams = Map::new();
    let mut views = Map::new();
    views.insert(
        "search".into(),
        json!({"description": "Every tool, found with find_tools and called with call_tool", "mode": "search"}),
    );
    views.insert(
        "read-only".into(),
        json!({"description": "Tools that only read (readOnlyHint)", "filter": {"tags": ["read-only"]}}),
    );
    for name in names {
        upstreams.insert(name.clone(), json!({"title": name, "tagsFromAnnotations": true}));
        if !views.contains_key(name) {
            views.insert(
                name.clone(),
                json!({"description": format!("The tools of {name}"), "filter": {"groups": [name]}}),
            );
        }
    }
    let mut tags: Vec<String> = tools
        .iter()
        .flat_map(|t| t["tags"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect();
    tags.sort();
    tags.dedup();
    json!({
        "upstreams": upstreams,
        "tags": tags.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
        "overlay": {},
        "views": views,
    })
}

/// Starts the upstreams of `config`, then prints (or writes to `output`) the starter document.
pub async fn run(config: &Path, output: Option<&Path>) -> Result<(), ServerError> {
    let servers = load::upstreams(config)?;
    let names: Vec<String> = servers.keys().cloned().collect();
    if names.is_empty() {
        return Err(ServerError::Config(format!("{}: no server to start", config.display())));
    }
    eprintln!("mcp-sieve: starting {} upstream(s): {}", names.len(), names.join(", "));
    let mut doc = load::merge(json!({}), servers.clone())?;
    for up in doc["upstreams"]
        .as_object_mut()
        .into_iter()
        .flat_map(|m| m.values_mut())
    {
        up["tagsFromAnnotations"] = json!(true);
    }
    let server = crate::commands::tools::serving(
        mcp_sieve::Catalog::from_json_str(&doc.to_string())?,
        std::path::Path::new("."),
    )
    .await?;
    let tools = crate::commands::tools::list(&server, None)?;
    for name in &names {
        let n = tools
            .iter()
            .filter(|t| t["groups"].as_array().is_some_and(|g| g.iter().any(|g| g == name)))
            .count();
        let state = if n == 0 { "no tools (see above for why)" } else { "up" };
        eprintln!("mcp-sieve:   {name}: {state}, {n} tools");
    }
    let starter = starter(&names, &tools);
    // The starter must load beside the configuration it was made from.
    mcp_sieve::Catalog::from_json_str(&load::merge(starter.clone(), servers)?.to_string()).map_err(|e| {
        ServerError::Config(format!(
            "the starter document does not load (a bug, please report it): {e}"
        ))
    })?;
    let text = serde_json::to_string_pretty(&starter).unwrap_or_default() + "\n";
    match output {
        Some(path) => {
            let path = crate::platform::expand_home(path);
            std::fs::write(&path, text).map_err(|e| ServerError::Io(format!("cannot write {}", path.display()), e))?;
            eprintln!(
                "mcp-sieve: wrote {}; use it with: mcp-sieve stdio --mcp-config {} --catalog {} --search",
                path.display(),
                config.display(),
                path.display()
            );
        }
        None => print!("{text}"),
    }
    // The starter's `search` view: say what it will fetch.
    eprintln!("mcp-sieve: {}", crate::search::hub::default_note());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starter_has_a_group_a_view_per_upstream_and_the_tags_found() {
        let tools = [
            json!({"name": "files_read", "groups": ["files"], "tags": ["read-only"]}),
            json!({"name": "memory_delete", "groups": ["memory"], "tags": ["destructive", "read-only"]}),
        ];
        let doc = starter(&["files".into(), "memory".into()], &tools);
        assert_eq!(
            doc["upstreams"]["files"],
            json!({"title": "files", "tagsFromAnnotations": true})
        );
        assert_eq!(doc["views"]["search"]["mode"], "search");
        assert_eq!(doc["views"]["memory"]["filter"]["groups"], json!(["memory"]));
        assert_eq!(doc["tags"], json!([{"name": "destructive"}, {"name": "read-only"}]));
    }
}
