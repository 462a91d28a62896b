//! `prompts/get`: the policy check, required arguments, and the prompt's `messages` template
//! with the arguments substituted.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::model::Kind;
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Call, Server};
use crate::protocol::template::substitute;

/// `prompts/get` messages from a catalog prompt's `messages` template, `{arg}` replaced by the
/// arguments the prompt declares (strings as they are, other values as JSON), in one pass;
/// `None` when the prompt has no template.
pub fn prompt_messages(json: &Map<String, Value>, args: &Map<String, Value>) -> Option<Result<Value>> {
    let messages = json.get("messages")?;
    let declared = |name: &str| {
        json.get("arguments")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|d| d["name"].as_str() == Some(name)))
    };
    let vars: Vec<(String, String)> = args
        .iter()
        .filter(|(k, _)| declared(k))
        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
        .collect();
    Some(substitute(messages, &vars).map(|messages| {
        let mut result = json!({ "messages": messages });
        if let Some(d) = json.get("description") {
            result["description"] = d.clone();
        }
        result
    }))
}

impl Server {
    pub(crate) fn get_prompt(&self, call: &Call, out: &mut Outcome) -> Result<String> {
        let pos = self.usable(Kind::Prompt, "name", call, &mut out.log)?;
        if let Some(forwarded) = self.forward("prompts/get", call, out) {
            return Ok(forwarded);
        }
        let prompt = &self.catalog.section(Kind::Prompt).items[pos];
        let json = prompt.json();
        let args = Self::arguments(call)?;
        for a in json.get("arguments").and_then(Value::as_array).into_iter().flatten() {
            if a["required"] == json!(true) {
                let n = a["name"].as_str().unwrap_or_default();
                if !args.contains_key(n) {
                    return Err(Error::params(format!(
                        "params.arguments.{n} is required by prompt \"{}\"",
                        prompt.name
                    )));
                }
            }
        }
        let desc = json.get("description").and_then(Value::as_str).unwrap_or(&prompt.name);
        if let Some(m) = prompt_messages(&json, &args) {
            return Ok(m?.to_string());
        }
        let text = format!("{desc}\nArguments: {}", Value::Object(args.into_owned()));
        Ok(
            json!({"description": desc, "messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
                .to_string(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    pub(crate) fn prompt_messages_substitute_arguments() {
        let p = json!({"arguments": [{"name": "a"}, {"name": "n"}],
            "messages": [{"role": "user", "content": {"type": "text", "text": "a='{a}' n={n} u={u}"}}]});
        let args = json!({"a": "x", "n": 3, "u": "undeclared"});
        let m = prompt_messages(p.as_object().unwrap(), args.as_object().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(m["messages"][0]["content"]["text"], "a='x' n=3 u={u}");
    }
}
