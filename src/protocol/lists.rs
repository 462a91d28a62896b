//! The list methods: the filter, the session's concerns and policy combined, then one page
//! assembled from pre-serialized fragments.

use serde_json::{json, Map, Value};

use crate::concern::ConcernConfig;
use crate::error::{Error, Result};
use crate::filter::{Bits, Filter};
use crate::model::Kind;
use crate::protocol::cursor;
use crate::protocol::server::{Call, Server};
use crate::protocol::{EXT, EXT_CONCERNS};

/// A page of `selected` from `all` as a result object, with `nextCursor` when more remain.
fn page_json(
    key: &str,
    fragments: &[String],
    selected: &[usize],
    offset: usize,
    size: usize,
    next: impl Fn(usize) -> String,
    warnings: &[String],
) -> String {
    let mut s = String::with_capacity(
        64 + selected
            .iter()
            .skip(offset)
            .take(size)
            .map(|&i| fragments[i].len() + 1)
            .sum::<usize>(),
    );
    s.push('{');
    write_field(
        &mut s,
        key,
        selected.iter().skip(offset).take(size).map(|&i| &*fragments[i]),
    );
    finish(
        &mut s,
        offset.saturating_add(size) < selected.len(),
        || next(offset + size),
        warnings,
    );
    s
}

/// Appends the list's field, `"<key>":[item,item,...]`, to `s`.
fn write_field<'a>(s: &mut String, key: &str, items: impl Iterator<Item = &'a str>) {
    s.push('"');
    s.push_str(key);
    s.push_str("\":[");
    for (n, item) in items.enumerate() {
        if n > 0 {
            s.push(',');
        }
        s.push_str(item);
    }
    s.push(']');
}

/// Ends a page: its `nextCursor` (`next`: one of [`cursor::encode`]'s, hex digits, so written
/// as they are) when `more` remain, and its warnings.
fn finish(s: &mut String, more: bool, next: impl Fn() -> String, warnings: &[String]) {
    if more {
        s.push_str(",\"nextCursor\":\"");
        s.push_str(&next());
        s.push('"');
    }
    if !warnings.is_empty() {
        s.push_str(",\"_meta\":");
        s.push_str(&json!({ format!("{EXT}/warnings"): warnings }).to_string());
    }
    s.push('}');
}

/// What a list's cursor is bound to: the filter's fields and the effective concerns, digested
/// (a cursor used with another filter or concerns is refused).
fn binding(filter: &Filter, concerns: &ConcernConfig) -> String {
    let mut b = cursor::Binding::default();
    for list in [
        &filter.groups,
        &filter.tags,
        &filter.exclude_tags,
        &filter.name_patterns,
    ] {
        b.list(list.iter());
    }
    b.list(filter.uri_patterns().iter());
    // The rare boolean tree as its JSON text.
    b.list(filter.expr.iter().map(|e| e.to_json().to_string()));
    b.list(concerns.keys());
    b.list(concerns.values());
    b.text()
}

impl Server {
    /// The effective concerns of a request: the session's (or none), overridden per key by
    /// `params.filter.concerns`, `params.concerns` and `_meta["dev.mcp-sieve/concerns"]`.
    pub(crate) fn request_concerns(
        &self,
        call: &Call,
        filter: &Filter,
        warnings: &mut Vec<String>,
    ) -> Result<ConcernConfig> {
        let concerns = &self.catalog.concerns;
        let mut configured = call.session_concerns.clone();
        let at = crate::json::member;
        let sources = [
            (Some(at(call.meta, EXT_CONCERNS)), None),
            (Some(at(call.params, "concerns")), Some("params.concerns")),
            (filter.concerns.as_ref(), Some("params.filter.concerns")),
        ];
        for (raw, path) in sources {
            if let Some(raw) = raw.filter(|v| !v.is_null()) {
                let path = path.map_or_else(|| format!("params._meta[\"{EXT_CONCERNS}\"]"), str::to_string);
                let (resolved, removed) = concerns.resolve(raw, &path)?;
                warnings.extend(resolved.warnings.iter().cloned());
                crate::concern::Concerns::merge(&mut configured, &resolved, &removed);
            }
        }
        Ok(concerns.effective(&configured))
    }

    /// The items of `kind` this call sees: view filter ∩ policy.
    pub(crate) fn selection(
        &self,
        kind: Kind,
        call: &Call,
        filter: &Filter,
        concerns: &ConcernConfig,
        log: &mut Vec<String>,
    ) -> Bits {
        let section = self.catalog.section(kind);
        let mut sel = section.select(filter, concerns);
        if !self.chain.is_empty() || call.ctx.view.is_some() {
            sel.and(&self.chain.visible(kind, section, &call.ctx, log));
        }
        sel
    }

    /// `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`.
    pub(crate) fn list(&self, kind: Kind, call: &Call, log: &mut Vec<String>) -> Result<String> {
        let filter = call.filter()?;
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &filter, &mut warnings)?;
        #[cfg_attr(not(feature = "standards"), allow(unused_mut))]
        let mut sel = self.selection(kind, call, &filter, &concerns, log);
        #[cfg(feature = "standards")]
        self.hide_scoped(kind, &call.ctx, &mut sel);
        let binding = binding(&filter, &concerns);
        let method = kind.list_method();
        // Counted, and the page taken, on the selection itself: no list of every selected index.
        let total = sel.count();
        let offset = cursor::within(self.cursor_offset(call, method, &binding)?, total)?;
        let section = self.catalog.section(kind);
        let size = self.catalog.options.page_size;
        // The page's fragments, each asked for once (an item of a large catalog is seldom in the
        // cache: `fragment` was 4-5% of the native server's samples under
        // scripts/bench-native.sh's load, asked twice). Sized once too (the bits' iterator knows
        // no length, so a collect would grow it 4 times).
        let mut page = Vec::with_capacity(size.min(total - offset));
        page.extend(sel.ones().skip(offset).take(size).map(|i| section.fragment(i)));
        // Sized once (the response's head, the page's fragments, and room for the cursor).
        let fragments = page.iter().map(|f| f.len() + 1).sum::<usize>();
        let mut s = String::with_capacity(call.head.len() + fragments + 256);
        s.push_str(if call.head.is_empty() { "{" } else { call.head });
        write_field(&mut s, kind.key(), page.into_iter());
        let more = offset.saturating_add(size) < total;
        finish(
            &mut s,
            more,
            || cursor::encode(method, &binding, self.version, offset + size),
            &warnings,
        );
        if !call.head.is_empty() {
            s.push('}');
        }
        Ok(s)
    }

    fn cursor_offset(&self, call: &Call, method: &str, binding: &str) -> Result<usize> {
        match crate::json::member(call.params, "cursor") {
            Value::Null => Ok(0),
            Value::String(c) => cursor::decode(c, method, binding, self.version),
            other => Err(Error::params(format!(
                "params.cursor must be a string, got {}",
                crate::error::type_name(other)
            ))),
        }
    }

    /// `groups/list` and `tags/list`: the declared objects, paginated.
    /// The groups (with their ancestors) of a primitive.
    pub(crate) fn ancestors<'a>(&'a self, group: &'a str) -> Vec<String> {
        crate::filter::index::ancestors(group, &self.catalog.parents)
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// Which names (`names_of` each primitive: its groups or tags) `groups/list` and `tags/list`
    /// keep: under policy, a name all of whose items policy hides is left out (a name no item
    /// uses stays); without policy, every name.
    pub(crate) fn names_in_use(
        &self,
        call: &Call,
        names_of: impl Fn(&crate::model::Primitive) -> Vec<String>,
    ) -> impl Fn(&str) -> bool {
        let mut used = std::collections::HashSet::new();
        let mut shown = std::collections::HashSet::new();
        if !self.chain.is_empty() || call.ctx.view.is_some() {
            let mut log = Vec::new();
            for kind in Kind::ALL {
                let section = self.catalog.section(kind);
                let visible = self.chain.visible(kind, section, &call.ctx, &mut log);
                for (i, item) in section.items.iter().enumerate() {
                    let names = names_of(item);
                    if visible.get(i) {
                        shown.extend(names.iter().cloned());
                    }
                    used.extend(names);
                }
            }
        }
        move |name: &str| !used.contains(name) || shown.contains(name)
    }

    pub(crate) fn list_names(&self, key: &str, objects: Vec<&Map<String, Value>>, call: &Call) -> Result<String> {
        let method = format!("{key}/list");
        let offset = self.cursor_offset(call, &method, "")?;
        let fragments: Vec<String> = objects
            .iter()
            .map(|o| Value::Object((*o).clone()).to_string())
            .collect();
        let all: Vec<usize> = (0..fragments.len()).collect();
        let offset = cursor::within(offset, all.len())?;
        Ok(page_json(
            key,
            &fragments,
            &all,
            offset,
            self.catalog.options.page_size,
            |o| cursor::encode(&method, "", self.version, o),
            &[],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_concerns_meta_key_is_under_the_extension_prefix() {
        assert_eq!(EXT_CONCERNS, format!("{EXT}/concerns"));
    }

    #[test]
    fn the_binding_tells_filters_and_concerns_apart() {
        let filter = |v: Value| Filter::parse(&v, "filter").unwrap();
        let concerns = |pairs: &[(&str, &str)]| -> ConcernConfig {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let none = concerns(&[]);
        let base = binding(&filter(json!({"groups": ["a", "b"]})), &none);
        assert_eq!(base, binding(&filter(json!({"groups": ["a", "b"]})), &none));
        for other in [
            binding(&filter(json!({"groups": ["a"], "tags": ["b"]})), &none),
            binding(&filter(json!({"groups": ["ab"]})), &none),
            binding(&filter(json!({"groups": ["a", "b"], "excludeTags": ["c"]})), &none),
            binding(
                &filter(json!({"groups": ["a", "b"]})),
                &concerns(&[("security", "high")]),
            ),
            binding(&filter(json!({"groups": ["a", "b"], "expr": {"tag": "c"}})), &none),
        ] {
            assert_ne!(base, other);
        }
        assert_ne!(
            binding(&filter(json!({})), &concerns(&[("security", "high")])),
            binding(&filter(json!({})), &concerns(&[("security", "low")]))
        );
    }
}
