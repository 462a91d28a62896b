//! Every error of a catalog document at once, for the people who write one (`mcp-sieve check`,
//! the Worker's message when its catalog does not load). The loader stops at the first error;
//! here each part is read on its own by the loader's own parsers — each group, tag, concern,
//! primitive, upstream, overlay entry, policy rule and view — so one bad part does not hide the
//! next, then the rules across parts run over the parts that read (unique names, group parents).
//! The messages are the loader's: each begins with the field's path (`views.email.filter.groups[1]`).
//! A document with no problem here loads; one the loader refuses has at least its error here.

use serde_json::{json, Map, Value};

use super::{array, unique, Catalog, Overlay, Upstream};
use crate::concern::ConcernDecl;
use crate::error::{Error, Result};
use crate::model::{Group, Kind, Primitive, Tag};

/// The errors found so far, each message once.
#[derive(Default)]
struct Found(Vec<Error>);

impl Found {
    fn add(&mut self, e: Error) {
        if !self.0.contains(&e) {
            self.0.push(e);
        }
    }

    /// The value of `r`, or `None` with its error kept.
    fn ok<T>(&mut self, r: Result<T>) -> Option<T> {
        r.map_err(|e| self.add(e)).ok()
    }

    /// Loads a document made of `parts` alone, keeping its error (with the path `from` it
    /// names written as `to`: an item checked alone is the first of its list).
    fn alone(&mut self, parts: Value, renamed: Option<(&str, &str)>) -> bool {
        match Catalog::load_owned(parts) {
            Ok(_) => true,
            Err(Error::Catalog(m)) => {
                let m = match renamed {
                    Some((from, to)) => m.replacen(from, to, 1),
                    None => m,
                };
                self.add(Error::Catalog(m));
                false
            }
            Err(e) => {
                self.add(e);
                false
            }
        }
    }
}

/// The entries of the object at `key` one by one, each loaded alone beside `context` (an object
/// that is not one is loaded whole, for the loader's message).
fn entries(found: &mut Found, doc: &Map<String, Value>, key: &str, context: &Value) {
    match doc.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            for (name, v) in o {
                let mut parts = context.clone();
                parts[key] = json!({ name: v });
                found.alone(parts, None);
            }
        }
        Some(v) => {
            found.alone(json!({ key: v }), None);
        }
    }
}

/// Looks up a secret by name (the environment, a Worker's secrets).
pub type Secrets<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Catalog {
    /// Every error of the document `doc` (empty: it loads). `secret` looks up the secrets the
    /// upstreams reference (`None`: not checked, as where secrets are only known later).
    pub fn problems(doc: &Value, secret: Option<Secrets>) -> Vec<Error> {
        let mut found = Found::default();
        let Some(obj) = doc.as_object() else {
            return Catalog::load(doc).err().into_iter().collect();
        };
        // Top-level fields the loader does not know are loaded alone (an unknown one for the
        // loader's message, one a feature adds, such as `pinning`, for its own checks); then each
        // part, in the loader's order.
        for (k, v) in obj.iter().filter(|(k, _)| !super::KNOWN_FIELDS.contains(&k.as_str())) {
            found.alone(json!({ k: v }), None);
        }
        let alone = |found: &mut Found, key: &str| {
            if let Some(v) = obj.get(key) {
                found.alone(json!({ key: v }), None);
            }
        };
        alone(&mut found, "server");
        // Groups, tags and concerns, each item on its own; then the rules across them.
        let mut groups = Vec::new();
        let mut read = Vec::new();
        for (i, g) in found.ok(array(obj, "groups")).unwrap_or_default().iter().enumerate() {
            if let Some(parsed) = found.ok(Group::from_json(g, &format!("groups[{i}]"))) {
                read.push((i, parsed));
                groups.push(g.clone());
            }
        }
        let names: Vec<&str> = read.iter().map(|(_, g)| g.name.as_str()).collect();
        let mut sound = found.ok(unique(names.iter().copied(), "groups")).is_some();
        for (i, g) in &read {
            if let Some(p) = g.parent.as_deref().filter(|p| !names.contains(p)) {
                found.add(Error::Catalog(format!(
                    "groups[{i}].parent names \"{p}\", which is not a declared group"
                )));
                sound = false;
            }
        }
        if sound {
            // No cycle among the parents: the loader's own rule.
            found.alone(json!({ "groups": groups }), None);
        }
        let mut tags = Vec::new();
        for (i, t) in found.ok(array(obj, "tags")).unwrap_or_default().iter().enumerate() {
            if let Some(parsed) = found.ok(Tag::from_json(t, &format!("tags[{i}]"))) {
                tags.push(parsed.name);
            }
        }
        found.ok(unique(tags.iter().map(String::as_str), "tags"));
        let mut concerns = Vec::new();
        let mut concern_names = Vec::new();
        for (i, c) in found.ok(array(obj, "concerns")).unwrap_or_default().iter().enumerate() {
            if let Some(parsed) = found.ok(ConcernDecl::from_json(c, &format!("concerns[{i}]"))) {
                concern_names.push(parsed.name);
                concerns.push(c.clone());
            }
        }
        found.ok(unique(concern_names.iter().map(String::as_str), "concerns"));
        let context = json!({ "concerns": concerns });
        entries(&mut found, obj, "concernMapping", &json!({}));
        alone(&mut found, "options");
        alone(&mut found, "upstream");
        entries(&mut found, obj, "overlay", &json!({}));
        entries(&mut found, obj, "upstreams", &json!({}));
        // Secrets the upstreams reference, when they can be looked up here (each upstream that reads).
        if let Some(secret) = secret {
            let named = obj.get("upstreams").and_then(Value::as_object).into_iter().flatten();
            let ups =
                std::iter::once(Upstream::parse(obj.get("upstream")).ok().flatten()).chain(named.map(|(n, v)| {
                    Upstream::parse_all(None, Some(&json!({ n: v })))
                        .ok()
                        .and_then(|u| u.into_iter().next())
                }));
            for up in ups.flatten() {
                found.ok(up.resolved_headers(secret));
                found.ok(up.resolved_env(secret));
            }
        }
        // Primitives, each with the overlay and concern mapping it would load with.
        let overlay = Overlay::parse(obj.get("overlay")).unwrap_or_default();
        let mapping = obj.get("concernMapping").and_then(Value::as_object);
        for kind in Kind::ALL {
            let mut ids = Vec::new();
            for (i, item) in found.ok(array(obj, kind.key())).unwrap_or_default().iter().enumerate() {
                let item = overlay.apply(item).into_owned();
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                let m = mapping.and_then(|m| m.get(name)).and_then(Value::as_object);
                let path = format!("{}[{i}]", kind.key());
                if let Some(p) = found.ok(Primitive::from_json(kind, item, &path, m)) {
                    ids.push(p.id);
                }
            }
            found.ok(unique(ids.iter().map(String::as_str), kind.key()));
        }
        // Policy: each rule and check alone (beside the concerns that read), then the rest of it.
        match obj.get("policy") {
            Some(Value::Object(p)) => {
                let mut rest = p.clone();
                for list in ["rules", "initialChecks"] {
                    if let Some(Value::Array(items)) = rest.remove(list) {
                        for (i, item) in items.iter().enumerate() {
                            let mut parts = context.clone();
                            parts["policy"] = json!({ list: [item] });
                            let (from, to) = (format!("policy.{list}[0]"), format!("policy.{list}[{i}]"));
                            found.alone(parts, Some((&from, &to)));
                        }
                    } else if let Some(v) = p.get(list) {
                        rest.insert(list.into(), v.clone());
                    }
                }
                found.alone(json!({ "policy": rest }), None);
            }
            Some(v) => {
                found.alone(json!({ "policy": v }), None);
            }
            None => {}
        }
        alone(&mut found, "middleware");
        alone(&mut found, "auth");
        alone(&mut found, "explain");
        // Views, over the concerns that read.
        entries(&mut found, obj, "views", &json!({ "concerns": concerns }));
        // Whatever the loader still refuses (a rule across parts not run above) is said too.
        if found.0.is_empty() {
            if let Err(e) = Catalog::load(doc) {
                found.add(e);
            }
        }
        found.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(doc: Value) -> Vec<String> {
        Catalog::problems(&doc, Some(&|name: &str| (name == "SET").then(|| "x".to_string())))
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn every_error_is_reported_with_its_path() {
        let got = messages(json!({
            "server": {"name": "s"},
            "bogus": 1,
            "groups": [{"name": "a"}, {"name": 5}, {"name": "b", "parent": "nope"}],
            "tags": [{"name": "t"}, "u"],
            "concerns": [{"name": "security", "values": ["high", "low"], "default": "medium"}],
            "tools": [{"name": "ok"}, {"name": "x", "tags": "read-only"}, {"description": "no name"}, {"name": "ok"}],
            "upstreams": {
                "github": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
                "fine": {"url": "https://fine.example/mcp", "headers": {"X-Key": "${SET}"}},
                "files": {"command": ""}
            },
            "views": {
                "email": {"filter": {"groups": ["email", 7]}},
                "good": {"mode": "search"},
                "odd": {"mode": "grid"}
            },
            "policy": {"rules": [{"hide": {"tags": ["t"]}}, {"when": 1}]},
            "options": {"pageSize": 0}
        }));
        let want = [
            "unknown top-level field \"bogus\"",
            "options.pageSize",
            "groups[1].name",
            "tags[1]",
            "concerns[0].default",
            "groups[2].parent names \"nope\"",
            "upstreams.files.command must not be empty",
            "views.email.filter.groups[1]",
            "views.odd.mode",
            "upstreams.github.headers[\"Authorization\"] uses the secret ${GITHUB_TOKEN}, which is not set",
            "policy.rules[1]",
            "tools[1].tags",
            "tools[2]",
            "tools has the name \"ok\" twice",
        ];
        for w in want {
            assert!(got.iter().any(|m| m.contains(w)), "{w:?} missing from {got:#?}");
        }
        assert_eq!(got.len(), want.len(), "{got:#?}");
        // The loader's first error is among them.
        let first = Catalog::load(&json!({"groups": [{"name": 5}], "tools": [{"name": "a", "tags": 1}]}))
            .unwrap_err()
            .to_string();
        let all = messages(json!({"groups": [{"name": 5}], "tools": [{"name": "a", "tags": 1}]}));
        assert!(all.contains(&first) && all.len() == 2, "{all:?}");
    }

    #[test]
    fn a_document_with_no_problem_loads() {
        let default: Value = serde_json::from_str(include_str!("../../catalog/default.json")).unwrap();
        assert!(messages(default.clone()).is_empty());
        assert!(Catalog::load(&default).is_ok());
        assert_eq!(messages(json!([1])).len(), 1);
        // The loader's error comes first (the parts are read in its order).
        for broken in [
            json!({"tools": [{"name": "a"}, {"name": "b", "tags": "x"}], "views": {"v": 1}}),
            json!({"views": {"v": {"mode": 1}}, "groups": [{"name": "g", "parent": "h"}]}),
            json!({"policy": {"rules": [{"hide": 1}]}, "options": {"pageSize": -1}, "bogus": 1}),
            json!({"upstreams": {"a": {"url": "ftp://x"}}, "tools": [1]}),
        ] {
            let first = Catalog::load(&broken).unwrap_err().to_string();
            let all = messages(broken);
            assert_eq!(all[0], first, "{all:#?}");
            assert!(all.len() >= 2, "{all:#?}");
        }
        // A rule across parts only the loader runs is still reported.
        let cycle = json!({"groups": [{"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}]});
        assert!(messages(cycle)[0].contains("parent cycle"));
    }
}
