//! Search mode's server-only parts (feature `search-index`: the Worker and the native server):
//! `find_tools` ranked by the catalog's inverted index (`crate::search`), its compact form (name,
//! title, the description's first line, groups) and `describe_tools` (the full definitions of
//! named tools), so a model reads a short list first and the schemas of the one or two tools it
//! picks (search → details, as the official client guidance has it).

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::filter::{Bits, Section};
use crate::search::SearchIndex;

/// The tool that answers full definitions of named tools.
pub const DESCRIBE: &str = "describe_tools";
/// Most names one `describe_tools` call takes.
pub const MAX_NAMES: usize = 20;
/// Longest one-line description in the compact form, in characters.
const LINE: usize = 160;

/// `describe_tools`' definition.
pub(crate) fn describe_tools() -> Value {
    json!({
        "name": DESCRIBE,
        "title": "Describe tools",
        "description": "The full definitions (description, inputSchema) of tools that find_tools answered, by name.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {"type": "array", "items": {"type": "string", "maxLength": 256}, "minItems": 1, "maxItems": MAX_NAMES,
                          "description": "the tools' names, as find_tools gave them"}
            },
            "required": ["names"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    })
}

/// `find_tools`' `detail` argument: whether answers are compact (the default is full).
pub(crate) fn compact_asked(args: &Map<String, Value>, at: &str) -> Result<bool> {
    match args.get("detail") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(s)) if s == "full" => Ok(false),
        Some(Value::String(s)) if s == "compact" => Ok(true),
        Some(v) => Err(Error::params(format!(
            "{at}.detail must be \"compact\" or \"full\", got {v}"
        ))),
    }
}

/// The `detail` property of `find_tools`' inputSchema.
pub(crate) fn detail_property() -> Value {
    json!({"type": "string", "enum": ["compact", "full"], "default": "full",
           "description": "compact: name, title, one line and groups (then describe_tools for the chosen ones); full: whole definitions"})
}

/// The best `limit` visible tools for `query`, best first.
pub(crate) fn rank(index: &SearchIndex, query: &str, visible: &Bits, limit: usize) -> Vec<usize> {
    index
        .search(query, visible, limit)
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}

/// The best `limit` visible tools for `query`, best first: the lexical index fused with the
/// cosine of the query's sentence vector and the tools' (`crate::search::hybrid`) once a shell
/// has filled the catalog's vectors; the lexical index alone until then, without a model, or
/// when the query's encoding fails. With the document's `search` set, also what answered, for
/// the reply's `_meta` (`{"ranking": "hybrid"}`, or `"lexical"` with the reason).
pub(crate) fn rank_with_meaning(
    catalog: &crate::Catalog,
    query: &str,
    visible: &Bits,
    limit: usize,
) -> (Vec<usize>, Option<Value>) {
    use crate::search::hybrid::{self, Fusion, POOL};
    let slot = &catalog.meaning;
    let lexical_because = |why: String| {
        let note = slot
            .settings
            .wanted()
            .then(|| json!({"ranking": "lexical", "reason": why}));
        (rank(catalog.search_index(), query, visible, limit), note)
    };
    let Some(m) = slot.meaning() else {
        let (done, total) = slot.status();
        return lexical_because(format!("the tools' vectors are not ready ({done} of {total})"));
    };
    let q = match (m.encode)(query) {
        Ok(q) if q.len() == m.dim => q,
        Ok(q) => {
            return lexical_because(format!(
                "the query's vector has {} numbers, the tools' {}: not the same model",
                q.len(),
                m.dim
            ))
        }
        Err(why) => return lexical_because(why),
    };
    let lexical = catalog.search_index().search(query, visible, POOL);
    let by_cosine = hybrid::top_k(hybrid::cosines(&m.vectors, m.dim, &q, visible), POOL.max(limit));
    let cosine_of = |d: usize| {
        m.vectors
            .get(d * m.dim..(d + 1) * m.dim)
            .map_or(0.0, |v| hybrid::dot(v, &q))
    };
    let weight = slot.settings.weight.unwrap_or(hybrid::DEFAULT_WEIGHT);
    let ranked = hybrid::fuse(&lexical, &by_cosine, cosine_of, Fusion::Weighted(weight), limit)
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    (ranked, Some(json!({"ranking": "hybrid"})))
}

/// One tool's compact form, from its wire JSON: name, title, the description's first line
/// (cut at `LINE` characters), groups.
pub(crate) fn compact(fragment: &str) -> String {
    let Ok(Value::Object(t)) = serde_json::from_str::<Value>(fragment) else {
        return fragment.to_string();
    };
    let mut o = Map::new();
    for k in ["name", "title"] {
        if let Some(v) = t.get(k) {
            o.insert(k.into(), v.clone());
        }
    }
    if let Some(d) = t.get("description").and_then(Value::as_str) {
        let line = d.trim_start().lines().next().unwrap_or_default();
        let mut cut: String = line.chars().take(LINE).collect();
        if cut.len() < line.len() {
            cut.push('…');
        }
        o.insert("description".into(), Value::String(cut));
    }
    if let Some(g) = t.get("groups").filter(|g| g.as_array().is_some_and(|a| !a.is_empty())) {
        o.insert("groups".into(), g.clone());
    }
    Value::Object(o).to_string()
}

/// `describe_tools`: the definitions of the named tools the caller may see; names it may not
/// see, or that do not exist, are answered as unknown (the same for both). In code mode
/// (`typescript`) also their TypeScript declaration, which the text content then is.
pub(crate) fn describe(
    section: &Section,
    visible: &Bits,
    args: &Map<String, Value>,
    at: &str,
    typescript: bool,
) -> Result<String> {
    let names = match args.get("names") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_NAMES => a,
        Some(Value::Array(a)) => {
            return Err(Error::params(format!(
                "{at}.names must hold 1 to {MAX_NAMES} names, got {}",
                a.len()
            )))
        }
        _ => {
            return Err(Error::params(format!(
                "{at}.names is required (an array of tool names)"
            )))
        }
    };
    let mut list = String::from("[");
    let mut unknown = Vec::new();
    let mut found = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let name = n
            .as_str()
            .ok_or_else(|| Error::params(format!("{at}.names[{i}] must be a string, got {n}")))?;
        match section.find(name).filter(|&p| visible.get(p)) {
            Some(p) => {
                if list.len() > 1 {
                    list.push(',');
                }
                list.push_str(section.fragment(p));
                found.push(p);
            }
            None => unknown.push(name.to_string()),
        }
    }
    list.push(']');
    let declared = typescript.then(|| crate::protocol::code::declarations(found.iter().map(|p| section.fragment(*p))));
    let mut text = declared.clone().unwrap_or_else(|| list.clone());
    if !unknown.is_empty() {
        text.push_str(&format!(
            "\nUnknown tools: {}; search with find_tools.",
            unknown.join(", ")
        ));
    }
    let declared = declared.map_or_else(String::new, |d| {
        format!(",\"{}\":{}", crate::protocol::code::TYPESCRIPT, Value::String(d))
    });
    Ok(format!(
        "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"structuredContent\":{{\"tools\":{list},\"unknown\":{}{declared}}}}}",
        Value::String(text),
        json!(unknown)
    ))
}
