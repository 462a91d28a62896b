//! Programmable filters written in JS: a callback adapted to the core's [`PrimitiveFilter`], so
//! the core's [`Chain`](crate::filter::Chain) runs them in priority order with AND, and logs and
//! ignores one that throws (the item stays visible), as the Quarkus reference specifies.

use wasm_bindgen::prelude::*;

use crate::filter::{FilterContext, PrimitiveFilter};
use crate::model::{Kind, Primitive};

/// A JS callback `(item, kind) => boolean` with a priority and the kinds it applies to.
pub(crate) struct JsFilter {
    pub(crate) id: u32,
    callback: js_sys::Function,
    priority: i32,
    kinds: Vec<Kind>,
}

// SAFETY: the chain requires `Send + Sync` for native servers. In the browser package this type
// only exists on wasm32 without threads: there is one thread, so nothing is ever shared across
// threads.
unsafe impl Send for JsFilter {}
// SAFETY: as above.
unsafe impl Sync for JsFilter {}

impl JsFilter {
    /// A filter calling `callback`; `kinds` empty means every kind.
    pub(crate) fn new(id: u32, callback: js_sys::Function, priority: i32, kinds: Vec<Kind>) -> Self {
        JsFilter {
            id,
            callback,
            priority,
            kinds,
        }
    }
}

impl PrimitiveFilter for JsFilter {
    fn priority(&self) -> i32 {
        self.priority
    }

    fn applies_to(&self, kind: Kind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }

    fn test(&self, item: &Primitive, _ctx: &FilterContext) -> Result<bool, String> {
        let value = js_sys::JSON::parse(item.fragment()).map_err(|e| describe(&e))?;
        let kind = JsValue::from_str(item.kind.key());
        self.callback
            .call2(&JsValue::NULL, &value, &kind)
            .map(|r| r.is_truthy())
            .map_err(|e| format!("filter #{} threw: {}", self.id, describe(&e)))
    }
}

/// A thrown JS value as text: an `Error`'s message, or its string form.
fn describe(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|err| String::from(err.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}
