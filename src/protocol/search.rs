//! Search mode (a view with `mode: "search"`): `tools/list` holds `find_tools` (a query → the
//! best matching tools' full definitions, ranked by the tool-relevance index over what the caller
//! may see) and `call_tool` (a tool by name, under the same view and policy), plus the view's
//! pinned tools. The list is fixed: searching never changes it, so it is valid in 2026-07-28.

use serde_json::{json, Map, Value};

use crate::error::{type_name, Error, Result};
use crate::filter::Filter;
use crate::json::{opt_str, req_str};
#[cfg(not(feature = "search-index"))]
use crate::middleware::tool_filter;
use crate::model::Kind;
use crate::protocol::outcome::Outcome;
#[cfg(feature = "search-index")]
use crate::protocol::search_index;
use crate::protocol::server::{Call, Env, Server};
use crate::protocol::Session;

/// The search tool's name.
pub const FIND: &str = "find_tools";
/// The tool that calls what `find_tools` found.
pub const CALL: &str = "call_tool";
/// The `x-mcp-header` of `call_tool`'s `name` (2026-07-28): clients send the inner tool's name
/// as the `Mcp-Param-Tool` header, where intermediaries can see it (`Mcp-Name` mirrors
/// `params.name`, which is `call_tool`), and the server checks it against the body.
pub const PARAM_HEADER: &str = "Tool";
/// The tools `find_tools` answers for `query` among `visible`, best first, at most `limit`: the
/// lexical index fused with sentence vectors once a shell has filled the catalog's
/// (`crate::search::hybrid`), else the lexical index alone. For shells and tests.
#[cfg(feature = "search-index")]
pub fn ranked(catalog: &crate::Catalog, query: &str, visible: &crate::filter::Bits, limit: usize) -> Vec<usize> {
    search_index::rank_with_meaning(catalog, query, visible, limit).0
}

/// The key of `find_tools`' `_meta` that says what ranked the answer when the document asks for
/// meaning (`search`): `{"ranking": "hybrid"}`, or `{"ranking": "lexical", "reason": …}`.
#[cfg(feature = "search-index")]
pub const META_RANKING: &str = "dev.mcp-sieve/search";

/// Most definitions one `find_tools` answers.
pub const MAX_LIMIT: u64 = 20;
/// Where the search tools' arguments are, in error messages.
const ARGS: &str = "params.arguments";
/// Longest query, in characters.
pub const MAX_QUERY: usize = 1000;

fn find_tools(count: usize) -> Value {
    #[allow(unused_mut)]
    let mut tool = json!({
        "name": FIND,
        "title": "Find tools",
        "description": format!(
            "Search this server's {count} tools by what you want to do. Answers the best matches' full \
             definitions (name, description, inputSchema); then call one with call_tool."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": MAX_QUERY, "description": "what you want to do, in a few words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 5, "description": "how many tools to answer"}
            },
            "required": ["query"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
    });
    #[cfg(feature = "search-index")]
    {
        tool["description"] = json!(format!(
            "Search this server's {count} tools by what you want to do. Answers the best matches' full \
             definitions (name, description, inputSchema), or with detail \"compact\" their name, title, \
             first line and groups (then describe_tools gives the chosen ones' definitions); then call \
             one with call_tool."
        ));
        tool["inputSchema"]["properties"]["detail"] = search_index::detail_property();
    }
    tool
}

fn call_tool() -> Value {
    json!({
        "name": CALL,
        "title": "Call a tool",
        "description": "Call a tool that find_tools answered, by its name, with arguments that follow its inputSchema.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name, as find_tools gave it",
                         "x-mcp-header": PARAM_HEADER},
                "arguments": {"type": "object", "description": "the tool's arguments"}
            },
            "required": ["name"],
            "additionalProperties": false
        }
    })
}

impl Server {
    /// Whether this call is made through a search-mode view.
    pub(crate) fn searching(call: &Call) -> bool {
        call.ctx.view.as_ref().is_some_and(|v| v.search)
    }

    /// Whether this call is made through a code-mode view (`protocol::code`).
    #[cfg(feature = "search-index")]
    fn coding(call: &Call) -> bool {
        call.ctx.view.as_ref().is_some_and(|v| v.code)
    }

    /// `tools/list` in search mode: the two search tools and the pinned tools the caller may see
    /// (the request's filter and concerns narrow the pinned ones), on one page.
    pub(crate) fn search_list(&self, call: &Call, log: &mut Vec<String>) -> Result<String> {
        if !call.params.get("cursor").is_none_or(Value::is_null) {
            return Err(Error::params(
                "params.cursor: this search-mode list is one page and issued no cursor".to_string(),
            ));
        }
        let filter = call.filter()?;
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &filter, &mut warnings)?;
        let visible = self.selection(Kind::Tool, call, &Filter::default(), &concerns, log);
        let shown = self.selection(Kind::Tool, call, &filter, &concerns, log);
        let section = self.catalog.section(Kind::Tool);
        let pinned = call.ctx.view.iter().flat_map(|v| &v.pinned);
        let mut s = format!("{{\"tools\":[{}", find_tools(visible.count()));
        #[cfg(feature = "search-index")]
        {
            s.push(',');
            s.push_str(&search_index::describe_tools().to_string());
        }
        s.push(',');
        // Code mode: programs call the tools (`call_tool` still routes their calls, unlisted).
        #[cfg(feature = "search-index")]
        let last = if Self::coding(call) {
            crate::protocol::code::run_code()
        } else {
            call_tool()
        };
        #[cfg(not(feature = "search-index"))]
        let last = call_tool();
        s.push_str(&last.to_string());
        for pos in pinned.filter_map(|name| section.find(name)).filter(|&p| shown.get(p)) {
            s.push(',');
            s.push_str(section.fragment(pos));
        }
        s.push(']');
        if !warnings.is_empty() {
            s.push_str(",\"_meta\":");
            s.push_str(&json!({ format!("{}/warnings", crate::protocol::EXT): warnings }).to_string());
        }
        s.push('}');
        Ok(s)
    }

    /// `tools/call` of `find_tools` or `call_tool` in search mode (`None`: another tool).
    pub(crate) fn search_call(
        &self,
        call: &Call,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Option<Result<String>> {
        let name = call.params.get("name").and_then(Value::as_str)?;
        #[cfg(feature = "search-index")]
        let describing = name == search_index::DESCRIBE;
        #[cfg(not(feature = "search-index"))]
        let describing = false;
        #[cfg(feature = "search-index")]
        if name == crate::protocol::code::RUN && Self::coding(call) {
            // The shell runs programs before the core sees them: one that does not, cannot.
            return Some(Err(Error::params(format!(
                "{} is not run by this server: {}",
                crate::protocol::code::RUN,
                crate::protocol::code::NOT_RUN_HERE
            ))));
        }
        if name != FIND && name != CALL && !describing {
            return None;
        }
        if call.params.get("task").is_some_and(|t| !t.is_null()) {
            return Some(Err(Error::MethodNotFound(format!(
                "tool \"{name}\" does not support task execution; call the tool it finds as a task"
            ))));
        }
        let args = match Self::arguments(call) {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        Some(if name == FIND {
            self.find(call, &args, &mut out.log)
        } else if describing {
            self.describe(call, &args, &mut out.log)
        } else {
            self.call_found(call, &args, session, env, out)
        })
    }

    fn find(&self, call: &Call, args: &Map<String, Value>, log: &mut Vec<String>) -> Result<String> {
        let query = opt_str(args, "query", ARGS)?
            .ok_or_else(|| Error::params(format!("{ARGS}.query is required (a string)")))?;
        if query.chars().count() > MAX_QUERY {
            return Err(Error::params(format!(
                "{ARGS}.query is longer than {MAX_QUERY} characters"
            )));
        }
        let limit = match args.get("limit") {
            None | Some(Value::Null) => 5,
            Some(v) => match v.as_u64().filter(|n| (1..=MAX_LIMIT).contains(n)) {
                Some(n) => n as usize,
                None => {
                    return Err(Error::params(format!(
                        "params.arguments.limit must be an integer from 1 to {MAX_LIMIT}, got {v}"
                    )))
                }
            },
        };
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &Filter::default(), &mut warnings)?;
        let visible = self.selection(Kind::Tool, &as_list(call), &Filter::default(), &concerns, log);
        let section = self.catalog.section(Kind::Tool);
        #[cfg(feature = "search-index")]
        let ((ranked, note), compact) = (
            search_index::rank_with_meaning(&self.catalog, &query, &visible, limit),
            search_index::compact_asked(args, ARGS)?,
        );
        #[cfg(not(feature = "search-index"))]
        let (ranked, compact) = {
            let candidates: Vec<usize> = visible.ones().collect();
            let ranked = tool_filter::rank(&section.items, &self.catalog.groups, &candidates, &query);
            (
                ranked.into_iter().take(limit).map(|r| r.0).collect::<Vec<usize>>(),
                false,
            )
        };
        let mut list = String::from("[");
        for (n, pos) in ranked.iter().enumerate() {
            if n > 0 {
                list.push(',');
            }
            let fragment = section.fragment(*pos);
            #[cfg(feature = "search-index")]
            if compact {
                list.push_str(&search_index::compact(fragment));
                continue;
            }
            let _ = compact;
            list.push_str(fragment);
        }
        list.push(']');
        let text = if ranked.is_empty() {
            format!("No tool matches \"{query}\"; try other words.")
        } else {
            list.clone()
        };
        // What ranked it, when the document asks for meaning (the package has no `search`).
        // Code mode: the full answers as a TypeScript declaration too, which the text then is.
        #[cfg(feature = "search-index")]
        let (text, typescript) = match Self::coding(call) && !compact && !ranked.is_empty() {
            true => {
                let ts = crate::protocol::code::declarations(ranked.iter().map(|p| section.fragment(*p)));
                (
                    ts.clone(),
                    format!(",\"{}\":{}", crate::protocol::code::TYPESCRIPT, Value::String(ts)),
                )
            }
            false => (text, String::new()),
        };
        #[cfg(feature = "search-index")]
        return Ok(format!(
            "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"structuredContent\":{{\"tools\":{list}{typescript}}}{}}}",
            Value::String(text),
            note.map_or_else(String::new, |n| format!(",\"_meta\":{{\"{META_RANKING}\":{n}}}"))
        ));
        #[cfg(not(feature = "search-index"))]
        Ok(format!(
            "{{\"content\":[{{\"type\":\"text\",\"text\":{}}}],\"structuredContent\":{{\"tools\":{list}}}}}",
            Value::String(text)
        ))
    }

    /// `describe_tools`: full definitions of named tools the caller may see.
    #[cfg(feature = "search-index")]
    fn describe(&self, call: &Call, args: &Map<String, Value>, log: &mut Vec<String>) -> Result<String> {
        let mut warnings = Vec::new();
        let concerns = self.request_concerns(call, &Filter::default(), &mut warnings)?;
        let visible = self.selection(Kind::Tool, &as_list(call), &Filter::default(), &concerns, log);
        search_index::describe(
            self.catalog.section(Kind::Tool),
            &visible,
            args,
            ARGS,
            Self::coding(call),
        )
    }

    #[cfg(not(feature = "search-index"))]
    fn describe(&self, _: &Call, _: &Map<String, Value>, _: &mut Vec<String>) -> Result<String> {
        Err(Error::params("describe_tools is not served here"))
    }

    fn call_found(
        &self,
        call: &Call,
        args: &Map<String, Value>,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        let name = req_str(args, "name", ARGS)?;
        #[cfg(feature = "standards")]
        let name = self.renamed(&name, &mut out.log).cloned().unwrap_or(name);
        #[cfg(feature = "search-index")]
        let reserved = name == search_index::DESCRIBE;
        #[cfg(not(feature = "search-index"))]
        let reserved = false;
        if name == FIND || name == CALL || reserved {
            return Err(Error::params(format!(
                "{ARGS}.name: call \"{name}\" directly, not through call_tool"
            )));
        }
        // Only what find_tools could answer: what policy shows in tools/list (then the call's
        // own checks, as a tools/call).
        let section = self.catalog.section(Kind::Tool);
        if let Some(pos) = section.find(&name) {
            if !self
                .chain
                .allows(Kind::Tool, section, pos, &as_list(call).ctx, &mut out.log)
            {
                return Err(Error::params(format!("Unknown tool: \"{name}\"")));
            }
        }
        let arguments = match args.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::Object(a)) => Value::Object(a.clone()),
            Some(v) => {
                return Err(Error::params(format!(
                    "params.arguments.arguments must be an object, got {}",
                    type_name(v)
                )))
            }
        };
        let mut params = call.params.as_object().cloned().unwrap_or_default();
        params.insert("name".into(), json!(name));
        params.insert("arguments".into(), arguments);
        let params = Value::Object(params);
        let inner = Call {
            params: &params,
            meta: call.meta,
            kept_filter: None,
            stateless: call.stateless,
            ctx: call.ctx.clone(),
            session_concerns: call.session_concerns.clone(),
            head: "",
        };
        #[cfg(feature = "gateway")]
        {
            let answer = self.call_tool(&inner, session, env, out);
            if let Some(f) = out.forward.as_mut() {
                // Its params are built here, not the client's.
                f.verbatim = false;
            }
            answer
        }
        #[cfg(not(feature = "gateway"))]
        self.call_tool(&inner, session, env, out)
    }
}

/// `call` as policy sees a `tools/list`: in search mode `find_tools` stands for the list, so a
/// rule that hides a tool from the list (`when.method`) hides it from the search and from
/// `call_tool`.
fn as_list<'a>(call: &Call<'a>) -> Call<'a> {
    let mut ctx = call.ctx.clone();
    ctx.method = "tools/list".into();
    Call {
        params: call.params,
        meta: call.meta,
        kept_filter: call.kept_filter,
        stateless: call.stateless,
        ctx,
        session_concerns: call.session_concerns.clone(),
        head: "",
    }
}
