//! What a list request carries beside its `params` rather than in them (servers' builds, feature
//! `large-catalogs`; empty otherwise): its `_meta` when a request of the same client on this
//! thread had the same text (what `client_meta` read from it then: a copy of it and its drop were
//! 4% of a stateless `tools/list`), and its `filter` when it is of the plain shape
//! (`Filter::read_plain`: no `Value` of it built). Each with its place among the members, to be
//! put back for any other message and for a shell that wants the params whole.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::filter::Filter;
use crate::protocol::client_meta::Known;

/// A list request's members kept beside its `params` (see the module). Empty for any other message.
#[derive(Debug, Clone, Default)]
pub struct Kept {
    /// The `_meta`: its place and what was read from it.
    pub(crate) meta: Option<(usize, Arc<Known>)>,
    /// The `filter`.
    pub(crate) filter: Option<Box<KeptFilter>>,
}

/// A plain `filter` read from its text.
#[derive(Debug, Clone)]
pub(crate) struct KeptFilter {
    /// Its place among the params' members.
    pub at: usize,
    pub filter: Filter,
    /// Its text, to put it back as a `Value`.
    pub text: Box<str>,
}

impl Kept {
    /// What was read from the `_meta`, when it is kept.
    pub(crate) fn known(&self) -> Option<&Arc<Known>> {
        self.meta.as_ref().map(|(_, k)| k)
    }

    /// The filter, when it is kept.
    pub(crate) fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref().map(|f| &f.filter)
    }

    /// The `_meta` of a request with `params`: this one's, or theirs.
    pub(crate) fn meta_or_in<'a>(&'a self, params: &'a Value) -> &'a Value {
        match &self.meta {
            Some((_, k)) => &k.meta,
            None => crate::json::member(params, "_meta"),
        }
    }

    /// How many members are kept: the place of a member read next is `members.len()` plus these.
    #[cfg(feature = "large-catalogs")]
    pub(crate) fn count(&self) -> usize {
        usize::from(self.meta.is_some()) + usize::from(self.filter.is_some())
    }

    /// Puts the kept `_meta` back among `members`, in its place.
    pub(crate) fn put_back_meta(&mut self, members: &mut Map<String, Value>) {
        if let Some((at, k)) = self.meta.take() {
            let at = at - usize::from(self.filter.as_ref().is_some_and(|f| f.at < at));
            members.shift_insert(at, "_meta".into(), Value::clone(&k.meta));
        }
    }

    /// Puts the kept `filter` back among `members`, in its place (its text read as a `Value`).
    pub(crate) fn put_back_filter(&mut self, members: &mut Map<String, Value>) {
        if let Some(f) = self.filter.take() {
            let at = f.at - usize::from(self.meta.as_ref().is_some_and(|(m, _)| *m < f.at));
            let value = serde_json::from_str(&f.text).unwrap_or(Value::Null); // read as JSON before
            members.shift_insert(at, "filter".into(), value);
        }
    }

    /// Puts every kept member back into `params`, each in its place.
    pub(crate) fn put_back(mut self, params: &mut Value) {
        if let Value::Object(members) = params {
            // The first place first: the later one's place counts it.
            match (&self.meta, &self.filter) {
                (Some((m, _)), Some(f)) if f.at < *m => {
                    self.put_back_filter(members);
                    self.put_back_meta(members);
                }
                _ => {
                    self.put_back_meta(members);
                    self.put_back_filter(members);
                }
            }
        }
    }
}
