//! Views for clients that send no filter: the endpoint a client is given chooses what it sees —
//! a named view at `/mcp/{view}` (the document's `views`), a URL query
//! (`?groups=a,b&tags=x&excludeTags=y&names=git_*&concerns.security=high`), the GitHub MCP
//! server's URL forms (`/mcp/x/{toolset}`, `/mcp/readonly`, `/mcp/x/{toolset}/readonly`) and
//! headers (`X-MCP-Toolsets`, `X-MCP-Tools`, `X-MCP-Exclude-Tools`, `X-MCP-Readonly`,
//! `X-MCP-Lockdown`) with its precedence (read-only beats exclude, exclude beats include, the
//! operator's lockdown bounds them all), ANDed into one [`EndpointView`] that the policy chain
//! applies to every list and use. A malformed view is an HTTP error naming the parameter, never
//! a silent "everything".

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::exchange::{json_response, plain, Response};
use crate::catalog::{Catalog, Mode};
use crate::error::Error;
use crate::filter::check_len;
use crate::filter::{EndpointView, Filter, ViewPart};
use crate::protocol::jsonrpc;

/// The MCP endpoint's path.
pub const ENDPOINT: &str = "/mcp";

fn bad(message: String) -> Box<Response> {
    Box::new(json_response(
        400,
        jsonrpc::error(&Value::Null, &Error::params(message)),
    ))
}

/// Percent-decodes one query component (`+` is a space).
fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .ok_or_else(|| format!("\"{s}\" has a cut-off %-escape"))?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("\"{s}\" has a bad %-escape \"%{hex}\""))?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("\"{s}\" is not UTF-8 once decoded"))
}

/// The GitHub MCP server's reading of a boolean header: empty, `false`, `0`, `no`, `off`, `n`
/// and `f` (any case, trimmed) are false; anything else is true.
fn truthy(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    !["", "false", "0", "no", "off", "n", "f"].contains(&v.as_str())
}

fn list(v: &str) -> Vec<Value> {
    v.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| json!(x))
        .collect()
}

/// The comma-separated values of `v`; one longer than `MAX_STRING` is a 400 naming `field`.
fn capped(v: &str, field: &str) -> Result<Vec<Value>, Box<Response>> {
    let l = list(v);
    l.iter()
        .filter_map(Value::as_str)
        .try_for_each(|x| check_len(x, field))
        .map_err(|e| bad(e.to_string()))?;
    Ok(l)
}

/// The view of a request to `path` with `query` and these headers: `Ok(None)` for the plain
/// endpoint; an error response for an unknown view (404, listing the views) or a malformed one
/// (400 naming the parameter).
pub fn endpoint_view(
    catalog: &Catalog,
    path: &str,
    query: &str,
    header: &dyn Fn(&str) -> Option<String>,
    principal: Option<&str>,
) -> Result<Option<Arc<EndpointView>>, Box<Response>> {
    endpoint_view_for(catalog, path, query, header, principal, &[])
}

/// The headers that choose a view (GitHub's), in the order `endpoint_view_for` reads them.
const VIEW_HEADERS: [&str; 5] = [
    "x-mcp-toolsets",
    "x-mcp-tools",
    "x-mcp-exclude-tools",
    "x-mcp-readonly",
    "x-mcp-lockdown",
];

/// [`endpoint_view`] for a caller with roles (from a verified token): a view's
/// `"principals": ["role:admin"]` admits a caller holding the role `admin`.
pub fn endpoint_view_for(
    catalog: &Catalog,
    path: &str,
    query: &str,
    header: &dyn Fn(&str) -> Option<String>,
    principal: Option<&str>,
    roles: &[String],
) -> Result<Option<Arc<EndpointView>>, Box<Response>> {
    let rest = path.strip_prefix(ENDPOINT).unwrap_or(path);
    let path_name = rest.trim_matches('/');
    // The view headers, each looked up once.
    let [toolsets_h, tools_h, exclude_h, readonly_h, lockdown_h] = VIEW_HEADERS.map(header);
    #[cfg(feature = "standards")]
    let lockdown = &catalog.lockdown;
    #[cfg(not(feature = "standards"))]
    let lockdown = &crate::catalog::Lockdown::default();
    // The plain endpoint, asked plainly (most requests): no view.
    let by_headers = [&toolsets_h, &tools_h, &exclude_h, &readonly_h, &lockdown_h]
        .iter()
        .any(|h| h.is_some());
    if path_name.is_empty() && query.is_empty() && !by_headers && !lockdown.enabled {
        return Ok(None);
    }
    let mut view = EndpointView::default();
    let mut name = path_name;
    // GitHub's URL forms, where no named view has the name: `x/{toolset}`, `readonly`, and
    // `x/{toolset}/readonly`.
    let mut url_toolset = None;
    let mut url_readonly = false;
    if !name.is_empty() && !catalog.views.contains_key(name) {
        let (head, ro) = match name.strip_suffix("readonly") {
            Some(h) if h.is_empty() || h.ends_with('/') => (h.trim_end_matches('/'), true),
            _ => (name, false),
        };
        let toolset = head.strip_prefix("x/").filter(|t| !t.is_empty() && !t.contains('/'));
        if ro || toolset.is_some() {
            if let Some(t) = toolset {
                check_len(t, "the URL's /x/{toolset}").map_err(|e| bad(e.to_string()))?;
                url_toolset = Some(decode(t).map_err(bad)?);
            } else if !head.is_empty() {
                return Err(Box::new(plain(
                    404,
                    &format!("unknown view \"{head}\"; the GitHub forms are {ENDPOINT}/x/{{toolset}}, {ENDPOINT}/readonly and {ENDPOINT}/x/{{toolset}}/readonly"),
                )));
            }
            url_readonly = ro;
            name = "";
        }
    }
    if !name.is_empty() {
        let Some(named) = catalog.views.get(name) else {
            let known: Vec<&str> = catalog.views.keys().map(String::as_str).collect();
            let listed = if known.is_empty() {
                "none are configured".to_string()
            } else {
                known.join(", ")
            };
            return Err(Box::new(plain(
                404,
                &format!("unknown view \"{name}\" (views: {listed}); MCP is served at {ENDPOINT}"),
            )));
        };
        view.search = matches!(named.mode, Mode::Search | Mode::Code);
        view.code = named.mode == Mode::Code;
        view.pinned = named.pinned.clone();
        if let Some(globs) = &named.principals {
            #[cfg(feature = "auth")]
            let allowed = crate::auth::admits(globs, principal, roles, crate::filter::glob::matches);
            #[cfg(not(feature = "auth"))]
            let allowed = {
                let _ = roles;
                principal.is_some_and(|p| globs.iter().any(|g| crate::filter::glob::matches(g, p)))
            };
            if !allowed {
                return Err(Box::new(plain(
                    403,
                    &format!("view \"{name}\" is not open to this caller (its principals)"),
                )));
            }
        }
        view.parts.push(ViewPart {
            filter: named.filter.clone(),
            concerns: named.concerns.clone(),
            tools_only: false,
        });
    }
    let mut filter = Map::new();
    let mut concerns = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (decode(k).map_err(bad)?, decode(v).map_err(bad)?);
        match k.as_str() {
            "groups" | "tags" | "excludeTags" => {
                filter.insert(k.clone(), Value::Array(capped(&v, &format!("the URL parameter {k}"))?));
            }
            "names" => {
                filter.insert("namePatterns".into(), Value::Array(capped(&v, "the URL parameter names")?));
            }
            "mode" if v == "list" => (view.search, view.code) = (false, false),
            "mode" if v == "search" => (view.search, view.code) = (true, false),
            "mode" if v == "code" => (view.search, view.code) = (true, true),
            "mode" => return Err(bad(format!("the URL parameter mode must be list, search or code, got \"{v}\""))),
            other => match other.strip_prefix("concerns.") {
                Some(c) if !c.is_empty() => {
                    concerns.insert(c.to_string(), json!(v));
                }
                _ => {
                    return Err(bad(format!(
                        "unknown URL parameter \"{other}\"; expected groups, tags, excludeTags, names, concerns.<name> or mode"
                    )))
                }
            },
        }
    }
    if !filter.is_empty() || !concerns.is_empty() {
        let parsed = Filter::parse(&Value::Object(filter), "the URL query").map_err(|e| bad(e.to_string()))?;
        let (resolved, _) = catalog
            .concerns
            .resolve(&Value::Object(concerns), "the URL query concerns")
            .map_err(|e| bad(e.to_string()))?;
        if let Some(w) = resolved.warnings.first() {
            return Err(bad(w.clone()));
        }
        view.parts.push(ViewPart {
            filter: parsed,
            concerns: resolved.config,
            tools_only: false,
        });
    }
    // The GitHub MCP server's selection: the toolsets' tools together with the tools named,
    // less the excluded; read-only beats all three. The URL's toolset counts as X-MCP-Toolsets.
    let names = |value: Option<String>, label: &str| -> Result<Vec<String>, Box<Response>> {
        let values = value.map(|v| capped(&v, &format!("the {label} header"))).transpose()?;
        // A renamed tool's old name selects the tool it names now (as GitHub resolves aliases).
        #[cfg(feature = "standards")]
        let current = |n: &str| catalog.aliases.get(n).cloned().unwrap_or_else(|| n.to_string());
        #[cfg(not(feature = "standards"))]
        let current = str::to_string;
        Ok(values
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(current)
            .collect())
    };
    let mut toolsets = names(toolsets_h, "X-MCP-Toolsets")?;
    toolsets.extend(url_toolset);
    let tools = names(tools_h, "X-MCP-Tools")?;
    let exclude = names(exclude_h, "X-MCP-Exclude-Tools")?;
    let label = "the X-MCP-Toolsets, X-MCP-Tools and X-MCP-Exclude-Tools headers";
    if let Some(part) = ViewPart::github(&toolsets, &tools, &exclude, label).map_err(|e| bad(e.to_string()))? {
        view.parts.push(part);
    }
    view.read_only = url_readonly || readonly_h.is_some_and(|v| truthy(&v));
    // The operator's lockdown applies to every request when enabled; a request may turn it on
    // for itself, never off.
    let locked = lockdown.enabled || lockdown_h.is_some_and(|v| truthy(&v));
    if locked {
        let bound = ViewPart::github(&lockdown.toolsets, &lockdown.tools, &lockdown.exclude_tools, "lockdown")
            .map_err(|e| bad(e.to_string()))?;
        view.parts.extend(bound);
        view.read_only |= lockdown.read_only;
    }
    view.by_headers = by_headers;
    if view.parts.is_empty() && !view.read_only && !view.search {
        return Ok(None);
    }
    // `EndpointView::describe` reads this form back.
    // Read back by `EndpointView::describe`: keep the fields in its order.
    view.label = format!(
        "{path_name}?{query}|{}|{}|{}|{}|{locked}",
        toolsets.join(","),
        tools.join(","),
        exclude.join(","),
        view.read_only
    );
    Ok(Some(Arc::new(view)))
}
