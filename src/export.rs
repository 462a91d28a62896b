//! Exports for model APIs: what a host passes to a provider's API for the tools a view lists.
//! Anthropic (Messages API, MCP connector): `mcp_servers` with the endpoint and an `mcp_toolset`
//! whose per-tool `configs` enable the view's tools and defer all but the pinned ones. OpenAI
//! (Responses API, tool search): `namespace` tools from the tools' groups, at most
//! [`NAMESPACE_MAX`] functions each (a bigger group is split), with `defer_loading`. Both add the
//! provider's tool-search tool when something is deferred. The npm package's `sieve.export`
//! (src/wasm/export.js) writes the same shapes; tests/e2e/export.test.mjs checks that both agree
//! and type-checks them against the providers' SDK types.

use serde_json::{json, Map, Value};

/// Most functions in one OpenAI namespace (OpenAI's advice: fewer than ten or about ten each).
pub const NAMESPACE_MAX: usize = 10;

/// The Anthropic beta the MCP connector's `mcp_toolset` needs.
pub const ANTHROPIC_BETA: &str = "mcp-client-2025-11-20";

/// What to export.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The MCP server's name in `mcp_servers` (Anthropic).
    pub name: &'a str,
    /// The endpoint the provider connects to (Anthropic).
    pub url: &'a str,
    /// `Some`: these tools loaded, every other deferred (tool search); `None`: nothing deferred.
    pub pinned: Option<&'a [String]>,
}

fn deferred(t: &Target, name: &str) -> bool {
    t.pinned.is_some_and(|p| !p.iter().any(|x| x == name))
}

fn str_of<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// `s` as a provider identifier: letters, digits, `_` and `-`, at most 64 characters.
pub fn identifier(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if out.is_empty() {
        "_".into()
    } else {
        out
    }
}

/// The Anthropic Messages API parameters (`betas`, `mcp_servers`, `tools`) for `tools` (as a
/// `tools/list` lists them) served at `t.url`.
pub fn anthropic(tools: &[Value], t: &Target) -> Value {
    let mut configs = Map::new();
    let mut any_deferred = false;
    for tool in tools {
        let Some(name) = str_of(tool, "name") else { continue };
        let defer = deferred(t, name);
        any_deferred |= defer;
        configs.insert(name.into(), json!({"enabled": true, "defer_loading": defer}));
    }
    let mut list = vec![json!({
        "type": "mcp_toolset",
        "mcp_server_name": t.name,
        "default_config": {"enabled": false},
        "configs": configs,
    })];
    if any_deferred {
        list.push(json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}));
    }
    json!({
        "betas": [ANTHROPIC_BETA],
        "mcp_servers": [{"type": "url", "name": t.name, "url": t.url}],
        "tools": list,
    })
}

/// The OpenAI Responses API `tools` for `tools`: a namespace per group (a tool in several
/// groups goes to its first; ungrouped tools to `tools`), described by `groups` (the catalog's
/// group objects: `description`, else `title`), split into parts of at most [`NAMESPACE_MAX`].
pub fn openai(tools: &[Value], groups: &[Value], t: &Target) -> Value {
    let mut order: Vec<(String, Vec<&Value>)> = Vec::new();
    for tool in tools {
        let group = tool
            .get("groups")
            .and_then(Value::as_array)
            .and_then(|g| g.first())
            .and_then(Value::as_str)
            .unwrap_or("tools");
        match order.iter_mut().find(|(g, _)| g == group) {
            Some((_, members)) => members.push(tool),
            None => order.push((group.to_string(), vec![tool])),
        }
    }
    let mut out = Vec::new();
    let mut any_deferred = false;
    for (group, members) in &order {
        let declared = groups.iter().find(|g| str_of(g, "name") == Some(group));
        let description = declared
            .and_then(|g| str_of(g, "description").or_else(|| str_of(g, "title")))
            .map_or_else(|| format!("Tools in the group {group}"), str::to_string);
        let parts = members.len().div_ceil(NAMESPACE_MAX);
        for (i, chunk) in members.chunks(NAMESPACE_MAX).enumerate() {
            let functions: Vec<Value> = chunk
                .iter()
                .map(|tool| {
                    let name = str_of(tool, "name").unwrap_or_default();
                    let defer = deferred(t, name);
                    any_deferred |= defer;
                    let mut f = json!({"type": "function", "name": identifier(name)});
                    if let Some(d) = str_of(tool, "description").or_else(|| str_of(tool, "title")) {
                        f["description"] = json!(d);
                    }
                    f["parameters"] = tool.get("inputSchema").cloned().unwrap_or(json!({"type": "object"}));
                    f["defer_loading"] = json!(defer);
                    f
                })
                .collect();
            let (name, description) = if parts > 1 {
                (
                    identifier(&format!("{group}_{}", i + 1)),
                    format!("{description} (part {} of {parts})", i + 1),
                )
            } else {
                (identifier(group), description.clone())
            };
            out.push(json!({"type": "namespace", "name": name, "description": description, "tools": functions}));
        }
    }
    if any_deferred {
        out.push(json!({"type": "tool_search"}));
    }
    json!({ "tools": out })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(n: usize, group: &str) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"name": format!("{group}.t{i}"), "description": "d", "inputSchema": {"type": "object"}, "groups": [group]}))
            .collect()
    }

    #[test]
    fn a_big_group_is_split_and_pinned_tools_are_loaded() {
        let list = tools(23, "big");
        let pinned = vec!["big.t0".to_string()];
        let t = Target {
            name: "s",
            url: "u",
            pinned: Some(&pinned),
        };
        let out = openai(&list, &[json!({"name": "big", "description": "Big"})], &t);
        let ns = out["tools"].as_array().unwrap();
        let sizes: Vec<usize> = ns[..3].iter().map(|n| n["tools"].as_array().unwrap().len()).collect();
        assert_eq!(sizes, [10, 10, 3]);
        assert_eq!(
            (ns[0]["name"].as_str(), ns[2]["name"].as_str()),
            (Some("big_1"), Some("big_3"))
        );
        assert_eq!(ns[1]["description"], "Big (part 2 of 3)");
        assert_eq!(ns[0]["tools"][0]["name"], "big_t0");
        assert_eq!(ns[0]["tools"][0]["defer_loading"], false);
        assert_eq!(ns[0]["tools"][1]["defer_loading"], true);
        assert_eq!(ns[3], json!({"type": "tool_search"}));
        let a = anthropic(&list, &t);
        assert_eq!(
            a["tools"][0]["configs"]["big.t0"],
            json!({"enabled": true, "defer_loading": false})
        );
        assert_eq!(a["tools"][0]["configs"]["big.t5"]["defer_loading"], true);
        assert_eq!(a["tools"][1]["type"], "tool_search_tool_bm25_20251119");
    }

    #[test]
    fn nothing_pinned_means_nothing_deferred_and_no_search_tool() {
        let t = Target {
            name: "s",
            url: "u",
            pinned: None,
        };
        let out = openai(&tools(3, "g"), &[], &t);
        assert_eq!(out["tools"].as_array().unwrap().len(), 1);
        assert_eq!(out["tools"][0]["description"], "Tools in the group g");
        assert_eq!(anthropic(&tools(3, "g"), &t)["tools"].as_array().unwrap().len(), 1);
    }
}
