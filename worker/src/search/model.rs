//! Whose vectors are in KV (issue 61 item 5): `mcp-sieve index` records the tools' model as
//! `search/model`, and a Worker whose queries are encoded by Workers AI (`search.ai`, or
//! `@cf/baai/bge-small-en-v1.5` by default with an `[ai]` binding) uses the tools' vectors only
//! when they were made by that model. bge-small-en-v1.5 and all-MiniLM-L6-v2 both give 384
//! numbers, in different spaces: mixed, the cosine would rank at random. The decision is the
//! core's (`hybrid::same_model`); a refusal is logged once per isolate, and `find_tools` stays
//! lexical.

use std::cell::RefCell;

use crate::telemetry::log;
use mcp_sieve::search::hybrid::{self, Settings};

/// The KV key of the tools' model.
const KEY: &str = "search/model";

thread_local! {
    /// The refusal said last (said again only when it changes).
    static SAID: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Whether KV's tools' vectors may be used with queries encoded by Workers AI's `ai` (else by
/// `settings`' embeddings endpoint); without KV, yes (the vectors' read says why not).
pub async fn vectors_match(settings: &Settings, ai: Option<&str>) -> bool {
    let Some(kv) = crate::config::kv() else {
        return true;
    };
    let made_by = kv.get(KEY).text().await.ok().flatten();
    let Err(mixed) = hybrid::same_model(made_by.as_deref().map(str::trim), ai, settings.endpoint_model()) else {
        return true;
    };
    let text = mixed.to_string();
    if SAID.with_borrow_mut(|said| said.replace(text.clone()).as_deref() != Some(text.as_str())) {
        log::warn(format_args!("search: {text}; find_tools stays lexical"));
    }
    false
}
