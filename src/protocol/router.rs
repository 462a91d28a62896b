//! The method router: the only `match` on method names. One incoming message, the session (if
//! any) and the time go in; the response, session changes, notifications and effects come out.
//! Each method family lives in its own file beside this one.

use std::fmt::Write;

use serde_json::Value;

use crate::concern::Concerns;
use crate::error::{Error, Result};
use crate::model::Kind;
use crate::protocol::jsonrpc::{self, Incoming};
use crate::protocol::outcome::Outcome;
use crate::protocol::server::{Asked, Call, Env, Server};
use crate::protocol::{Session, EXT_CONCERNS, MODERN_VERSION};

/// 2026-07-28 results that carry `ttlMs` and `cacheScope` (the revision's cacheable results, and
/// this server's own lists).
const CACHEABLE: [&str; 10] = [
    "tools/list",
    "tools/catalog",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "groups/list",
    "tags/list",
    "concerns/list",
    "server/discover",
];

/// Whether a request's `_meta` carries the 2026-07-28 version.
fn is_modern(meta: &Value) -> bool {
    crate::json::member(meta, "io.modelcontextprotocol/protocolVersion").as_str() == Some(MODERN_VERSION)
}

impl Server {
    /// `ttlMs` and `cacheScope` of a 2026-07-28 list: the upstream's refresh period in gateway
    /// mode, else `options.listTtlSeconds` (default five minutes); private when the answer may
    /// depend on who asks or on anything outside the URL (a principal, concerns sent with the
    /// request, a view from `X-MCP-*` headers, policy rules about the caller).
    fn cache_fields(&self, asked: Asked, env: &Env) -> (i64, &'static str) {
        let refresh = self.catalog.upstreams.iter().map(|u| u.refresh_ms).min();
        let ttl = match (refresh, self.catalog.options.list_ttl_ms) {
            (_, Some(ttl)) => ttl,
            (Some(refresh), None) => refresh,
            (None, None) => crate::catalog::DEFAULT_LIST_TTL_MS,
        };
        let at = crate::json::member;
        let filter_concerns = match asked.filter {
            Some(f) => f.concerns.is_some(),
            None => !at(at(asked.value, "filter"), "concerns").is_null(),
        };
        let concerns =
            filter_concerns || !at(asked.value, "concerns").is_null() || !at(asked.meta, EXT_CONCERNS).is_null();
        // A view chosen by headers is not in the URL a shared cache keys on.
        let headers = env.view.as_ref().is_some_and(|v| v.from_headers());
        // Scoped groups: the lists depend on the client's declared capabilities.
        #[cfg(feature = "standards")]
        let headers = headers || self.has_scoped_groups();
        let private = env.principal.is_some() || concerns || headers || self.chain.per_caller();
        (ttl.max(0), if private { "private" } else { "public" })
    }

    /// The fields a result object starts with: none in a session; a 2026-07-28 result says
    /// whether it is complete, and a list how long and by whom it may be cached.
    fn result_fields(&self, method: &str, params: Asked, env: &Env, stateless: bool) -> String {
        let mut fields = String::new();
        if stateless {
            fields.reserve(80); // the longest of them, written once
            fields.push_str("\"resultType\":\"complete\"");
            if CACHEABLE.contains(&method) {
                let (ttl, scope) = self.cache_fields(params, env);
                // Written in place, the number without `core::fmt` (every stateless list has them).
                fields.push_str(",\"ttlMs\":");
                fields.push_str(itoa::Buffer::new().format(ttl));
                fields.push_str(",\"cacheScope\":\"");
                fields.push_str(scope);
                fields.push('"');
            }
        }
        fields
    }

    /// Handles one message. `session` is the caller's session (None before `initialize`, or for
    /// stateless requests); `initialize` fills it.
    pub fn handle(&self, msg: Incoming, session: &mut Option<Session>, env: &Env) -> Outcome {
        let mut out = Outcome::default();
        match msg {
            Incoming::Response { id, reply } => {
                // Kept only as the answer to a question this session awaits; else dropped.
                if let Some(s) = session {
                    let (changed, answer) = crate::protocol::ask::answered(s, &id, env.now_ms);
                    out.session_changed |= changed;
                    if answer {
                        out.answered = Some((crate::protocol::ask::answer_key(&s.id, &id), reply));
                    }
                }
            }
            Incoming::Notification { method, params } => self.notify(&method, &params, session, &mut out),
            Incoming::Request {
                id,
                method,
                params,
                kept,
            } => {
                let stateless = session.as_ref().is_none_or(|s| s.task_holder) && method != "initialize";
                let params = Asked {
                    value: &params,
                    meta: kept.meta_or_in(&params),
                    known: kept.known(),
                    filter: kept.filter(),
                };
                let mut result = self.request(&id, &method, params, session, env, &mut out);
                if result.is_ok() {
                    if let Err(e) = self.bind_forward(session, env, &mut out) {
                        out.forward = None;
                        result = Err(e);
                    }
                }
                if out.retry_at.is_none() && out.forward.is_none() && out.watch.is_none() && out.ask.is_none() {
                    out.response = Some(match result {
                        Ok(whole) if out.enveloped => whole,
                        Ok(raw) if stateless && raw.starts_with('{') && !raw.starts_with("{\"resultType\"") => {
                            let fields = self.result_fields(&method, params, env, stateless);
                            jsonrpc::ok_raw_with(&id, raw, &fields)
                        }
                        Ok(raw) => jsonrpc::ok_raw(&id, raw),
                        Err(e) => {
                            out.error_code = Some(e.code());
                            jsonrpc::error(&id, &e)
                        }
                    });
                }
            }
        }
        out
    }
    pub(crate) fn request(
        &self,
        id: &Value,
        method: &str,
        asked: Asked,
        session: &mut Option<Session>,
        env: &Env,
        out: &mut Outcome,
    ) -> Result<String> {
        let params = asked.value;
        let stateless = session.as_ref().is_none_or(|s| s.task_holder);
        // A list writes its response whole after this head (its page is not moved).
        let head = match jsonrpc::LIST_METHODS.contains(&method) {
            true => {
                let fields = self.result_fields(method, asked, env, stateless);
                let mut head = String::with_capacity(40 + fields.len());
                head.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
                let _ = write!(head, "{id},\"result\":{{");
                if !fields.is_empty() {
                    head.push_str(&fields);
                    head.push(',');
                }
                head
            }
            false => String::new(),
        };
        if method == "initialize" && !is_modern(asked.meta) {
            return self.initialize(id, params, session, env, out);
        }
        // 2026-07-28 has neither initialize nor ping.
        if stateless && matches!(method, "initialize" | "ping") {
            return Err(Error::MethodNotFound(format!(
                "\"{method}\" is not part of protocol version {MODERN_VERSION}; use server/discover"
            )));
        }
        // A renamed tool's old name: answered by the tool it names now, and logged.
        #[cfg(feature = "standards")]
        let renamed;
        #[cfg(feature = "standards")]
        let params = match crate::json::member(params, "name").as_str() {
            Some(old) if method == "tools/call" => match self.renamed(old, &mut out.log) {
                Some(new) => {
                    let mut p = params.clone();
                    p["name"] = Value::String(new.clone());
                    renamed = p;
                    &renamed
                }
                None => params,
            },
            _ => params,
        };
        let call = Call {
            params,
            meta: asked.meta,
            kept_filter: asked.filter,
            stateless,
            ctx: self.context(method, id, asked.meta, asked.known, session.as_ref(), env),
            session_concerns: session.as_ref().map(|s| s.concerns.clone()).unwrap_or_default(),
            head: &head,
        };
        // 2026-07-28 has no initialize: the initial checks run on every stateless request,
        // before anything else.
        if stateless && !self.asks_why(method, &call.ctx) {
            self.chain.run_checks(&call.ctx).map_err(Error::InvalidRequest)?;
        }
        let log = &mut out.log;
        match method {
            "ping" => Ok("{}".into()),
            "server/discover" => Ok(self.discover(&call.ctx).to_string()),
            "tools/list" if Self::searching(&call) => self.search_list(&call, log),
            "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
                let kind = match method {
                    "tools/list" => Kind::Tool,
                    "resources/list" => Kind::Resource,
                    "resources/templates/list" => Kind::ResourceTemplate,
                    _ => Kind::Prompt,
                };
                out.enveloped = !head.is_empty();
                self.list(kind, &call, &mut out.log)
            }
            #[cfg(feature = "standards")]
            "groups/list" if crate::protocol::disclosure::declares_groups(&call.ctx) => self.list_bundles(&call),
            #[cfg(feature = "standards")]
            "groups/get" => self.get_bundle(&call, log),
            #[cfg(feature = "standards")]
            "tools/catalog" => self.tools_catalog(&call, log),
            #[cfg(feature = "standards")]
            "tools/describe" => self.tools_describe(&call, log),
            "groups/list" => {
                let keep = self.names_in_use(&call, |p| p.groups.iter().flat_map(|g| self.ancestors(g)).collect());
                let groups = self.catalog.groups.iter().filter(|g| keep(&g.name)).map(|g| &g.json);
                self.list_names("groups", groups.collect(), &call)
            }
            "tags/list" => {
                let keep = self.names_in_use(&call, |p| p.tags.clone());
                let tags = self.catalog.tags.iter().filter(|t| keep(&t.name)).map(|t| &t.json);
                self.list_names("tags", tags.collect(), &call)
            }
            "concerns/list" => {
                let mut r = self.catalog.concerns.list_json(&call.session_concerns);
                if let Some(w) = session.as_ref().map(|s| &s.concern_warnings).filter(|w| !w.is_empty()) {
                    r["warnings"] = serde_json::json!(w);
                }
                Ok(r.to_string())
            }
            "concerns/update" => self.update_concerns(&call, session, out),
            "tools/call" => match Self::searching(&call).then(|| self.search_call(&call, session, env, out)) {
                Some(Some(answer)) => answer,
                _ => self.call_tool(&call, session, env, out),
            },
            "prompts/get" => self.get_prompt(&call, out),
            "resources/read" => self.read_uri(&call, out),
            "resources/subscribe" | "resources/unsubscribe" => self.subscribe(method, &call, out),
            "logging/setLevel" => self.set_log_level(&call, session, out),
            "completion/complete" => self.complete(&call, out),
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" | "tasks/update" => {
                self.task_method(method, &call, session, env, out)
            }
            "subscriptions/listen" if stateless => {
                let (watch, ack) = crate::protocol::Watch::listen(self, id, params)?;
                out.watch = Some(watch);
                out.notifications.push(ack);
                Ok(String::new())
            }
            "middleware/list" | "middleware/invoke" => self.middleware(method, &call, env.now_ms, &mut out.log),
            #[cfg(feature = "explain")]
            crate::protocol::explain::METHOD => self.explain(&call, log),
            other => Err(Error::MethodNotFound(format!(
                "\"{other}\" is not a method of this server; see the capabilities in the initialize (or server/discover) result"
            ))),
        }
    }
    /// Whether this is `sieve/explain` from a caller the document lets ask: it runs even when
    /// the initial checks refuse the caller, and names the check that does.
    #[cfg(feature = "explain")]
    fn asks_why(&self, method: &str, ctx: &crate::filter::FilterContext) -> bool {
        method == crate::protocol::explain::METHOD && self.explain_admits(ctx)
    }

    #[cfg(not(feature = "explain"))]
    fn asks_why(&self, _method: &str, _ctx: &crate::filter::FilterContext) -> bool {
        false
    }

    /// A renamed tool's old name: the name the tool has now (`None` for any other name), the use
    /// logged as deprecated. For `tools/call` and search mode's `call_tool` alike.
    #[cfg(feature = "standards")]
    pub(crate) fn renamed(&self, old: &str, log: &mut Vec<String>) -> Option<&String> {
        let new = self.catalog.aliases.get(old)?;
        log.push(format!(
            "deprecated tool name \"{old}\" called: the tool is now \"{new}\" (the old name is an alias)"
        ));
        Some(new)
    }

    pub(crate) fn notify(&self, method: &str, params: &Value, session: &mut Option<Session>, out: &mut Outcome) {
        if method != "notifications/initialized" {
            return;
        }
        let Some(s) = session.as_mut() else { return };
        if s.initialized {
            return; // a repeated notifications/initialized changes nothing
        }
        s.initialized = true;
        out.session_changed = true;
        if let Some(raw) = params.get("concerns").filter(|v| !v.is_null()) {
            // No response is possible: valid entries apply, invalid ones are dropped and
            // reported by concerns/list (never the whole configuration: that would fail open).
            let (resolved, removed) = self.catalog.concerns.resolve_lenient(raw, "params.concerns");
            out.log.extend(resolved.warnings.iter().cloned());
            Concerns::merge(&mut s.concerns, &resolved, &removed);
            s.concern_warnings = resolved.warnings;
        }
    }
}
