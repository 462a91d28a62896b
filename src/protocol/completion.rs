//! `completion/complete` for a prompt argument (`ref/prompt`) or a template variable
//! (`ref/resource`), from the `completions` lists of the catalog document.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::model::Kind;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{string_param, Call, Server};

/// Most completion values in one answer (the MCP limit).
const MAX_COMPLETIONS: usize = 100;

impl Server {
    /// `completion/complete` for a prompt argument (`ref/prompt`) or a template variable
    /// (`ref/resource`): the values of the argument's `completions` list in the catalog that start
    /// with `argument.value`.
    pub(crate) fn complete(&self, call: &Call, out: &mut Outcome) -> Result<String> {
        let p = call.params;
        let r = p
            .get("ref")
            .filter(|r| r.is_object())
            .ok_or_else(|| Error::params("params.ref is required (an object with type ref/prompt or ref/resource)"))?;
        let argument = p
            .get("argument")
            .filter(|a| a.is_object())
            .ok_or_else(|| Error::params("params.argument is required (an object with name and value)"))?;
        let arg_name = string_param(argument, "params.argument", "name")?;
        let prefix = string_param(argument, "params.argument", "value")?;
        let (kind, field) = match string_param(r, "params.ref", "type")? {
            "ref/prompt" => (Kind::Prompt, "name"),
            "ref/resource" => (Kind::ResourceTemplate, "uri"),
            other => {
                return Err(Error::params(format!(
                    "params.ref.type \"{other}\" is not a reference type; expected ref/prompt or ref/resource"
                )))
            }
        };
        let id = string_param(r, "params.ref", field)?;
        let section = self.catalog.section(kind);
        let what = if kind == Kind::Prompt {
            "prompt"
        } else {
            "resource template"
        };
        let unknown = || Error::params(format!("params.ref.{field}: Unknown {what}: \"{id}\""));
        let pos = section.find(id).ok_or_else(unknown)?;
        if !self.chain.allows(kind, section, pos, &call.ctx, &mut out.log) {
            return Err(unknown());
        }
        if let Some(forwarded) = self.forward("completion/complete", call, out) {
            return Ok(forwarded);
        }
        let item = &section.items[pos].json();
        let declared = match kind {
            Kind::Prompt => item
                .get("arguments")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|x| x["name"] == json!(arg_name)))
                .map(|a| a.get("completions").cloned().unwrap_or(json!([]))),
            _ => Some(
                item.get("completions")
                    .and_then(|c| c.get(arg_name))
                    .cloned()
                    .unwrap_or(json!([])),
            ),
        };
        let declared = declared.ok_or_else(|| {
            Error::params(format!(
                "params.argument.name: prompt \"{id}\" has no argument \"{arg_name}\""
            ))
        })?;
        let all: Vec<&str> = declared
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|v| v.starts_with(prefix))
            .collect();
        let values: Vec<&str> = all.iter().take(MAX_COMPLETIONS).copied().collect();
        Ok(
            json!({"completion": {"values": values, "total": all.len(), "hasMore": all.len() > values.len()}})
                .to_string(),
        )
    }
}
