//! Views for clients that send no filter: the endpoint a client is given chooses what it sees —
//! a named view at `/mcp/{view}` (the document's `views`), a URL query
//! (`?groups=a,b&tags=x&excludeTags=y&names=git_*&concerns.security=high`) and the GitHub MCP
//! server's headers (`X-MCP-Toolsets`, `X-MCP-Tools`, `X-MCP-Readonly`), ANDed into one
//! [`EndpointView`] that the policy chain applies to every list and use. A malformed view is an
//! HTTP error naming the parameter, never a silent "everything".

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
    let mut view = EndpointView::default();
    let rest = path.strip_prefix(ENDPOINT).unwrap_or(path);
    let name = rest.trim_matches('/');
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
        view.search = named.mode == Mode::Search;
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
            "mode" if v == "list" => view.search = false,
            "mode" if v == "search" => view.search = true,
            "mode" => return Err(bad(format!("the URL parameter mode must be list or search, got \"{v}\""))),
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
    for (name, key) in [("x-mcp-toolsets", "groups"), ("x-mcp-tools", "namePatterns")] {
        if let Some(v) = header(name) {
            let label = if key == "groups" {
                "X-MCP-Toolsets"
            } else {
                "X-MCP-Tools"
            };
            let values = capped(&v, &format!("the {label} header"))?;
            let f = Filter::parse(&json!({ key: values }), &format!("the {name} header"))
                .map_err(|e| bad(e.to_string()))?;
            view.parts.push(ViewPart {
                filter: f,
                concerns: Default::default(),
                tools_only: true,
            });
        }
    }
    match header("x-mcp-readonly").as_deref().map(str::trim) {
        None | Some("false") => {}
        Some("true") => view.read_only = true,
        Some(other) => {
            return Err(bad(format!(
                "the X-MCP-Readonly header must be true or false, got \"{other}\""
            )))
        }
    }
    if view.parts.is_empty() && !view.read_only && !view.search {
        return Ok(None);
    }
    // `EndpointView::describe` reads this form back.
    view.label = format!(
        "{name}?{query}|{}|{}|{}",
        header("x-mcp-toolsets").unwrap_or_default(),
        header("x-mcp-tools").unwrap_or_default(),
        view.read_only
    );
    Ok(Some(Arc::new(view)))
}
