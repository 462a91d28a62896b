//! The catalog a gateway serves over several upstreams: each upstream's items, namespaced (tools
//! and prompts get its `prefix`; resources keep their URIs), made members of the upstream's own
//! group, with the grouping metadata other servers publish read in (FastMCP tags, the grouping
//! extension's `_meta` groups, a chained mcp-sieve's `groups`/`tags`, annotations as tags when
//! asked), merged under the local document — whose overlay, groups, concerns and policy then
//! apply to all of them as to one catalog. No upstream may take another's name, URI space or
//! group: an item that would is left out and reported (`origins.refused`; the rules are in
//! [`super::space`]). Each tool carries its digest (`pin`) in `_meta`; with
//! `"pinning": "enforce"` one that matches no pin is left out (quarantined).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::pages::Lists;
use super::space::{shortened, shown, template_space, Claims, Space};
use crate::catalog::{Catalog, Origins, Overlay, Upstream};
use crate::error::{type_name, Error, Result};
use crate::model::{Kind, Primitive, META_GROUPS};
use crate::pin::{self, Mode, Pinning, Pins, Report};

/// One upstream's lists, as fetched.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// Its index in the local catalog's `upstreams`.
    pub index: usize,
    /// Its configuration.
    pub upstream: &'a Upstream,
    /// What it listed.
    pub lists: &'a Lists,
}

/// A string array at `v`, or nothing when it is anything else (an upstream's metadata is read
/// where it is well-formed and ignored where not: it must not take the others down).
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn add(to: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    for s in more {
        if !s.is_empty() && !to.contains(&s) {
            to.push(s);
        }
    }
}

/// Who decides which groups an imported item may name: the merge's [`Space`], the document's
/// group → parent, and the upstream's index.
struct Joining<'a, 'b> {
    space: &'a Space<'b>,
    parents: &'a HashMap<&'a str, &'a str>,
    index: usize,
}

/// One upstream item as the gateway lists it: prefixed, its own `aliases` dropped (only the
/// document may alias), its groups those it may join plus its upstream's own.
fn import(kind: Kind, item: &Value, up: &Upstream, joining: &Joining) -> Value {
    let Value::Object(o) = item else {
        return item.clone(); // the catalog names the bad item
    };
    let mut o = o.clone();
    o.remove("aliases");
    if matches!(kind, Kind::Tool | Kind::Prompt) && !up.prefix.is_empty() {
        if let Some(Value::String(name)) = o.get("name") {
            let named = format!("{}{name}", up.prefix);
            o.insert("name".into(), json!(named));
        }
    }
    let meta = match o.remove("_meta") {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    };
    let mut groups = strings(o.get("groups"));
    let mut tags = strings(o.get("tags"));
    if let Some(m) = &meta {
        add(&mut groups, strings(m.get(META_GROUPS)));
        add(&mut tags, strings(m.get("fastmcp").and_then(|f| f.get("tags"))));
        add(&mut tags, strings(m.get("_fastmcp").and_then(|f| f.get("tags"))));
    }
    groups.retain(|g| joining.space.may_join(g, joining.index, joining.parents));
    if !up.name.is_empty() {
        add(&mut groups, [up.name.clone()]);
    }
    if up.tags_from_annotations && kind == Kind::Tool {
        let hint = |k: &str| o.get("annotations").and_then(|a| a.get(k)) == Some(&json!(true));
        if hint("readOnlyHint") {
            add(&mut tags, ["read-only".to_string()]);
        }
        if hint("destructiveHint") {
            add(&mut tags, ["destructive".to_string()]);
        }
    }
    if let Some(mut m) = meta {
        m.insert(META_GROUPS.into(), json!(groups));
        o.insert("_meta".into(), Value::Object(m));
    }
    o.insert("groups".into(), json!(groups));
    o.insert("tags".into(), json!(tags));
    Value::Object(o)
}

/// The `server` object when the document has none: the one upstream's, or one naming the
/// gateway with each upstream's instructions.
fn server(sources: &[Source]) -> Map<String, Value> {
    let mut server = Map::new();
    if let [one] = sources {
        let info = &one.lists.initialize["serverInfo"];
        for k in ["name", "version"] {
            if let Some(v) = info.get(k).filter(|v| v.is_string()) {
                server.insert(k.into(), v.clone());
            }
        }
        if let Some(i) = one.lists.initialize.get("instructions").filter(|v| v.is_string()) {
            server.insert("instructions".into(), i.clone());
        }
        return server;
    }
    server.insert("name".into(), json!("mcp-sieve"));
    server.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    let text: Vec<String> = sources
        .iter()
        .filter_map(|s| {
            let i = s.lists.initialize["instructions"].as_str()?;
            Some(format!(
                "{} (tools prefixed \"{}\"): {i}",
                s.upstream.name, s.upstream.prefix
            ))
        })
        .collect();
    if !text.is_empty() {
        server.insert("instructions".into(), json!(text.join("\n\n")));
    }
    server
}

/// Gives the tool `v` its digest (in `_meta`) and decides it against `pins`: `false` when it is
/// quarantined (left out).
fn pinned(v: &mut Value, report: &mut Report, pins: &Pins, upstream: usize) -> bool {
    let digest = pin::digest(v);
    let name = v["name"].as_str().unwrap_or_default().to_string();
    let change = report.decide(pins, &name, &digest, upstream).map(|u| u.change());
    if report.mode == Mode::Enforce && change.is_some() {
        return false;
    }
    if let Value::Object(o) = v {
        let meta = o.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(m) = meta {
            m.insert(pin::META_DIGEST.into(), json!(digest));
            if let Some(change) = change {
                m.insert(pin::META_UNPINNED.into(), json!(change));
            }
        }
    }
    true
}

/// The catalog a gateway serves: the local document (groups, tags, concerns, concernMapping,
/// overlay, policy, options, server) over the lists of every upstream in `sources` (those
/// currently up), with [`Origins`] saying where each item came from.
pub fn build_many(local: &Value, sources: &[Source]) -> Result<Catalog> {
    build_pinned(local, sources, &Pins::default())
}

/// [`build_many`] with the pins an operator approved: with the document's `"pinning":
/// "enforce"`, a tool new or changed since pinned is left out; `catalog.pins` reports them.
pub fn build_pinned(local: &Value, sources: &[Source], pins: &Pins) -> Result<Catalog> {
    build_claimed(local, sources, pins, &Claims::default())
}

/// [`build_pinned`] after `claims` (what each upstream held before; see [`super::space`]): an
/// item that would take another upstream's name, URI space or group is left out, and
/// `catalog.origins.refused` says which and why.
pub fn build_claimed(local: &Value, sources: &[Source], pins: &Pins, claims: &Claims) -> Result<Catalog> {
    let mut report = Report {
        mode: Pinning::parse(local.get("pinning"))?.mode,
        ..Report::default()
    };
    let mut doc = local
        .as_object()
        .cloned()
        .ok_or_else(|| Error::Catalog(format!("the document must be an object, got {}", type_name(local))))?;
    let upstreams = local_upstreams(local)?;
    let overlay = Overlay::parse(local.get("overlay"))?;
    let mut space = Space::new(&upstreams, claims, overlay.aliases());
    let declared = local
        .get("groups")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let parents: HashMap<&str, &str> = declared
        .iter()
        .filter_map(|g| Some((g["name"].as_str()?, g["parent"].as_str()?)))
        .collect();
    let mut origins = Origins::default();
    // First every item is admitted or refused (a tie found later refuses an earlier item too),
    // then the admitted ones are imported.
    let mut admitted: Vec<Vec<(&Source, &Value, String)>> = Vec::new();
    for kind in Kind::ALL {
        if doc
            .get(kind.key())
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            return Err(Error::Catalog(format!(
                "{} must be empty when upstream is set: a gateway serves the upstream's {}",
                kind.key(),
                kind.key()
            )));
        }
        let mut these = Vec::new();
        for s in sources {
            for item in s.lists.items(kind) {
                let Some(id) = item.get(kind.id_field()).and_then(Value::as_str) else {
                    let why = format!("an item of its {} has no string \"{}\"", kind.key(), kind.id_field());
                    origins.refused.push((s.index, why));
                    continue;
                };
                let mut id = match kind {
                    Kind::Tool | Kind::Prompt => format!("{}{id}", s.upstream.prefix),
                    _ => id.to_string(),
                };
                if let (Kind::Tool, true, Some(short)) = (kind, s.upstream.shorten_long_names, shortened(&id)) {
                    origins.shortened.push((
                        s.index,
                        format!("\"{}\" is listed as \"{short}\" (over 64 characters)", shown(&id)),
                    ));
                    id = short;
                }
                match space.admit(kind, &id, s.index) {
                    Ok(()) => these.push((s, item, id)),
                    Err(why) => origins.refused.push((s.index, why)),
                }
            }
        }
        admitted.push(these);
    }
    for (kind, these) in Kind::ALL.into_iter().zip(admitted) {
        let mut items = Vec::new();
        for (s, item, id) in these {
            if space.contested(kind, &id, s.index) {
                let what = kind.key();
                let why = format!(
                    "its {what} \"{}\" is also claimed by another upstream; neither serves it while both list it",
                    shown(&id)
                );
                origins.refused.push((s.index, why));
                continue;
            }
            let joining = Joining {
                space: &space,
                parents: &parents,
                index: s.index,
            };
            let mut v = import(kind, item, s.upstream, &joining);
            if let (Kind::Tool, Value::Object(o)) = (kind, &mut v) {
                o.insert("name".into(), json!(id)); // shortened, when it was too long
            }
            // An item the catalog would not load is refused alone, not the whole merge.
            if let Err(e) =
                Primitive::from_json(kind, v.clone(), &format!("its {} \"{}\"", kind.key(), shown(&id)), None)
            {
                origins.refused.push((s.index, e.to_string()));
                continue;
            }
            if kind == Kind::Tool && !pinned(&mut v, &mut report, pins, s.index) {
                continue;
            }
            // The document's rewrites, after the digest (pinning watches the upstream's own tool).
            let mut id = id;
            if kind == Kind::Tool {
                let rewrites = overlay.rewrites(&id);
                if let (false, Value::Object(o)) = (rewrites.is_empty(), &mut v) {
                    // The entries naming the old name give their groups, tags and aliases first.
                    if let Value::Object(with) = overlay.apply(&Value::Object(o.clone())).into_owned() {
                        *o = with;
                    }
                    let mut rules = Vec::new();
                    for r in rewrites {
                        r.apply(o);
                        rules.extend(r.arguments.iter().cloned());
                    }
                    id = o.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                    if !rules.is_empty() {
                        origins.arguments.insert(id.clone(), rules);
                    }
                }
            }
            let original = || item["name"].as_str().unwrap_or_default().to_string();
            match kind {
                Kind::Tool => drop(origins.tools.insert(id, (s.index, original()))),
                Kind::Prompt => drop(origins.prompts.insert(id, (s.index, original()))),
                Kind::Resource => drop(origins.resources.insert(id, s.index)),
                Kind::ResourceTemplate => origins.templates.push((template_space(&id).to_string(), s.index)),
            }
            items.push(v);
        }
        doc.insert(kind.key().into(), Value::Array(items));
    }
    // Each named upstream is a group of its own, unless the document declares that group itself.
    let mut groups = declared;
    for up in &upstreams {
        if up.name.is_empty() || groups.iter().any(|g| g["name"].as_str() == Some(up.name.as_str())) {
            continue;
        }
        let title = up.title.clone().unwrap_or_else(|| up.name.clone());
        groups.push(
            json!({"name": up.name, "title": title, "description": format!("Tools of the upstream \"{}\"", up.name)}),
        );
    }
    if !groups.is_empty() {
        doc.insert("groups".into(), Value::Array(groups));
    }
    if !doc.contains_key("server") {
        doc.insert("server".into(), Value::Object(server(sources)));
    }
    let whose = if sources.len() == 1 { "upstream's" } else { "upstreams'" };
    let mut catalog = Catalog::load_owned(Value::Object(doc)).map_err(|e| match e {
        Error::Catalog(m) => Error::Catalog(format!("with the {whose} lists: {m}")),
        other => other,
    })?;
    // Keep the local document, not the merged one: the next refresh starts from it again.
    catalog.document = Some(Arc::new(local.clone()));
    origins.down = (0..catalog.upstreams.len())
        .filter(|i| !sources.iter().any(|s| s.index == *i))
        .collect();
    catalog.origins = origins;
    catalog.pins = Arc::new(report);
    Ok(catalog)
}

fn local_upstreams(local: &Value) -> Result<Vec<Upstream>> {
    Upstream::parse_all(local.get("upstream"), local.get("upstreams"))
}

/// The catalog a gateway with one upstream (the document's first) serves over its `lists`.
pub fn build(local: &Value, lists: &Lists) -> Result<Catalog> {
    let ups = local_upstreams(local)?;
    let up = ups.first().cloned().unwrap_or_else(|| Upstream {
        name: String::new(),
        title: None,
        prefix: String::new(),
        transport: crate::catalog::Transport::Http(String::new()),
        headers: Vec::new(),
        refresh_ms: 0,
        tags_from_annotations: false,
        limits: Default::default(),
        tls: Default::default(),
        shorten_long_names: false,
        auth: None,
    });
    build_many(
        local,
        &[Source {
            index: 0,
            upstream: &up,
            lists,
        }],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists(tools: Value) -> Lists {
        let mut l = Lists::new(json!({"capabilities": {"tools": {}}, "instructions": "hi"}));
        l.set(Kind::Tool, serde_json::from_value(tools).unwrap());
        l
    }

    #[test]
    fn items_are_namespaced_grouped_and_their_metadata_read() {
        let local = json!({"upstreams": {
            "fast": {"url": "http://a/mcp", "title": "FastMCP", "tagsFromAnnotations": true},
            "b": {"url": "http://b/mcp", "prefix": ""}
        }, "overlay": {"fast_*": {"tags": ["ours"]}}});
        let ups = local_upstreams(&local).unwrap();
        let a = lists(json!([
            {"name": "read", "annotations": {"readOnlyHint": true}, "_meta": {"fastmcp": {"tags": ["io"]}}},
            {"name": "drop", "annotations": {"destructiveHint": true}, "_meta": {"_fastmcp": {"tags": ["old"]}, META_GROUPS: ["admin"]}},
            {"name": "odd", "tags": 5, "groups": [1, "g"]}
        ]));
        let b = lists(json!([{"name": "read", "groups": ["chained"], "tags": ["t"]}]));
        let sources = [
            Source {
                index: 0,
                upstream: &ups[0],
                lists: &b,
            },
            Source {
                index: 1,
                upstream: &ups[1],
                lists: &a,
            },
        ];
        let c = build_many(&local, &sources).unwrap();
        let tools = &c.section(Kind::Tool).items;
        let got: Vec<(&str, Vec<String>, Vec<String>)> = tools
            .iter()
            .map(|t| (t.name.as_str(), t.groups.clone(), t.tags.clone()))
            .collect();
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(got[0], ("read", s(&["chained", "b"]), s(&["t"])));
        assert_eq!(got[1], ("fast_read", s(&["fast"]), s(&["io", "read-only", "ours"])));
        assert_eq!(
            got[2],
            ("fast_drop", s(&["admin", "fast"]), s(&["old", "destructive", "ours"]))
        );
        assert_eq!(got[3], ("fast_odd", s(&["g", "fast"]), s(&["ours"])));
        assert_eq!(c.origins.tools["fast_drop"], (1, "drop".to_string()));
        assert_eq!(c.origins.tools["read"], (0, "read".to_string()));
        let g = c.groups.iter().find(|g| g.name == "fast").unwrap();
        assert_eq!(g.json["title"], json!("FastMCP"));
        assert!(c.server["instructions"]
            .as_str()
            .unwrap()
            .contains("fast (tools prefixed \"fast_\"): hi"));
        // Same name after prefixing: an error naming both.
        let clash = lists(json!([{"name": "fast_read"}]));
        let sources = [
            Source {
                index: 0,
                upstream: &ups[0],
                lists: &clash,
            },
            Source {
                index: 1,
                upstream: &ups[1],
                lists: &a,
            },
        ];
        // Same name after prefixing: the name is in fast's namespace, so b's item is refused.
        let c = build_many(&local, &sources).unwrap();
        assert_eq!(c.origins.tools["fast_read"], (1, "read".to_string()));
        assert!(
            c.origins.refused[0]
                .1
                .contains("the tool \"fast_read\" is in upstream \"fast\"'s namespace"),
            "{:?}",
            c.origins.refused
        );
        // Same resource URI from two upstreams at once.
        let mut r1 = Lists::new(json!({}));
        r1.set(Kind::Resource, vec![json!({"name": "x", "uri": "file:///a"})]);
        let sources = [
            Source {
                index: 0,
                upstream: &ups[0],
                lists: &r1,
            },
            Source {
                index: 1,
                upstream: &ups[1],
                lists: &r1,
            },
        ];
        // A tie (neither held it before): neither serves it; both are reported.
        let c = build_many(&local, &sources).unwrap();
        assert!(c.origins.resources.is_empty());
        assert_eq!(c.origins.refused.len(), 2, "{:?}", c.origins.refused);
    }
}
