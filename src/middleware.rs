//! Context middleware (`middleware/list`, `middleware/invoke`): application-controlled
//! (context + arguments) → context functions. A registry of built-ins, the configuration that
//! enables them (off by default), argument validation against each `inputSchema`, and the
//! dispatch. No I/O and no clock: the caller passes the time and the visible tools in.

pub mod config;
pub mod content;
pub mod detect;
pub mod fold;
pub mod moderation;
pub mod pii_redaction;
pub mod pii_restoration;
#[cfg(feature = "testing")]
pub mod sample;
pub mod schema;
pub mod timestamp;
pub mod tool_filter;

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::filter::{Bits, Filter};

pub use config::Config;

/// The built-in middleware.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// Replaces PII with handles like `[EMAIL_1]`.
    PiiRedaction,
    /// Puts the values behind handles back.
    PiiRestoration,
    /// Flags policy violations by terms and patterns.
    ContentModeration,
    /// Prefixes the current time.
    TimestampInjector,
    /// Ranks the server's tools against the conversation.
    ToolFilter,
}

impl Builtin {
    /// Every built-in, in listing order.
    pub const ALL: [Builtin; 5] = [
        Builtin::PiiRedaction,
        Builtin::PiiRestoration,
        Builtin::ContentModeration,
        Builtin::TimestampInjector,
        Builtin::ToolFilter,
    ];

    /// The wire name (each built-in's file owns it).
    pub fn name(self) -> &'static str {
        match self {
            Builtin::PiiRedaction => pii_redaction::NAME,
            Builtin::PiiRestoration => pii_restoration::NAME,
            Builtin::ContentModeration => moderation::NAME,
            Builtin::TimestampInjector => timestamp::NAME,
            Builtin::ToolFilter => tool_filter::NAME,
        }
    }

    /// The built-in called `name`.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    fn description(self) -> &'static str {
        match self {
            Builtin::PiiRedaction => pii_redaction::DESCRIPTION,
            Builtin::PiiRestoration => pii_restoration::DESCRIPTION,
            Builtin::ContentModeration => moderation::DESCRIPTION,
            Builtin::TimestampInjector => timestamp::DESCRIPTION,
            Builtin::ToolFilter => tool_filter::DESCRIPTION,
        }
    }

    /// The JSON Schema of `arguments`.
    pub fn input_schema(self) -> Value {
        match self {
            Builtin::PiiRedaction => pii_redaction::schema(),
            Builtin::PiiRestoration => pii_restoration::schema(),
            Builtin::ContentModeration => moderation::schema(),
            Builtin::TimestampInjector => timestamp::schema(),
            Builtin::ToolFilter => tool_filter::schema(),
        }
    }

    /// The `MiddlewareDefinition` object.
    pub fn definition(self) -> Value {
        json!({"name": self.name(), "description": self.description(), "inputSchema": self.input_schema()})
    }
}

/// What an invocation may read besides its params: the time and the tools the caller sees.
pub struct Inputs<'a> {
    /// The tools (in catalog order) and groups, for `tool_filter`.
    pub tools: &'a [crate::model::Primitive],
    /// The catalog's groups.
    pub groups: &'a [crate::model::Group],
    /// Current time, ms since the epoch (given by the shell).
    pub now_ms: i64,
    /// The tools visible under a view filter (the caller adds its concerns and policy).
    pub visible_tools: &'a mut dyn FnMut(&Filter) -> Result<Bits>,
}

/// The `middleware/list` result for `config`.
pub fn list(config: &Config) -> Value {
    json!({"middleware": config.enabled.iter().map(|b| b.definition()).collect::<Vec<_>>()})
}

/// `middleware/invoke`: validates `params` (`name`, `arguments`, `context`) and runs the
/// middleware. Returns the `MiddlewareInvokeResult` (`content`, `metadata`).
pub fn invoke(config: &Config, params: &Value, inputs: &mut Inputs) -> Result<Value> {
    let p = params.as_object().ok_or_else(|| {
        Error::params(format!(
            "params must be an object with name, arguments and context, got {}",
            type_name(params)
        ))
    })?;
    let name = match p.get("name") {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => {
            return Err(Error::params(format!(
                "params.name must be a string, got {}",
                type_name(v)
            )))
        }
        None => return Err(Error::params("params.name is required (the middleware to invoke)")),
    };
    let builtin = Builtin::from_name(name)
        .filter(|b| config.enabled.contains(b))
        .ok_or_else(|| {
            let names: Vec<&str> = config.enabled.iter().map(|b| b.name()).collect();
            Error::params_with(
                format!("Unknown middleware: \"{name}\"; available: {}", names.join(", ")),
                json!({"available": names}),
            )
        })?;
    let empty = Map::new();
    let args = match p.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(v) => {
            return Err(Error::params(format!(
                "params.arguments must be an object, got {}",
                type_name(v)
            )))
        }
    };
    schema::validate(
        &builtin.input_schema(),
        &Value::Object(args.clone()),
        "params.arguments",
    )?;
    let context = content::parse(p.get("context"), "params.context")?;
    match builtin {
        Builtin::PiiRedaction => pii_redaction::invoke(config, args, context),
        Builtin::PiiRestoration => pii_restoration::invoke(args, context),
        Builtin::ContentModeration => moderation::invoke(&config.policies, args, context),
        Builtin::TimestampInjector => timestamp::invoke(args, context, inputs.now_ms),
        Builtin::ToolFilter => tool_filter::invoke(args, context, inputs),
    }
}
