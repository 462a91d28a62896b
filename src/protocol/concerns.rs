//! `concerns/list` and `concerns/update` (the concern proposal's Option B), with the
//! `list_changed` notifications a change of a session's concerns calls for.

use serde_json::json;

use crate::concern::{ConcernConfig, Concerns};
use crate::error::{Error, Result};
use crate::filter::{Bits, Filter};
use crate::model::Kind;
use crate::protocol::jsonrpc;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Call, Server};
use crate::protocol::{Session, EXT};

impl Server {
    /// Visible sets of every kind, to tell which lists a concern change altered.
    pub(crate) fn visible_sets(&self, call: &Call, concerns: &ConcernConfig, log: &mut Vec<String>) -> Vec<Bits> {
        let eff = self.catalog.concerns.effective(concerns);
        Kind::ALL
            .iter()
            .map(|k| self.selection(*k, call, &Filter::default(), &eff, log))
            .collect()
    }
    pub(crate) fn update_concerns(
        &self,
        call: &Call,
        session: &mut Option<Session>,
        out: &mut Outcome,
    ) -> Result<String> {
        let s = session
            .as_mut()
            .ok_or_else(|| Error::InvalidRequest("concerns/update needs a session; call initialize first".into()))?;
        let raw = call
            .params
            .get("concerns")
            .ok_or_else(|| Error::params("params.concerns is required (an object of concern: value)"))?;
        let (resolved, removed) = self.catalog.concerns.resolve(raw, "params.concerns")?;
        let before = self.visible_sets(call, &s.concerns, &mut out.log);
        Concerns::merge(&mut s.concerns, &resolved, &removed);
        let after = self.visible_sets(call, &s.concerns, &mut out.log);
        for (kind, (b, a)) in Kind::ALL.iter().zip(before.iter().zip(&after)) {
            if b != a {
                let m = match kind {
                    Kind::Tool => "notifications/tools/list_changed",
                    Kind::Prompt => "notifications/prompts/list_changed",
                    _ => "notifications/resources/list_changed",
                };
                let n = jsonrpc::notification(m, None);
                if !out.notifications.contains(&n) {
                    out.notifications.push(n);
                }
            }
        }
        out.session_changed = true;
        let mut result = json!({"configuration": self.catalog.concerns.effective(&s.concerns)});
        if !resolved.warnings.is_empty() {
            result["_meta"] = json!({ format!("{EXT}/warnings"): resolved.warnings });
        }
        Ok(result.to_string())
    }
}
