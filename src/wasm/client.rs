//! A small MCP client over `fetch` (Streamable HTTP, 2025-11-25 era): `initialize`, the
//! `Mcp-Session-Id` header, `notifications/initialized` with concerns, `concerns/update`, lists
//! with filters following `nextCursor`, and `tasks/list`. Works against the mcp-sieve Worker and
//! any Streamable HTTP MCP server.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::convert::{error_object, from_js, to_js};
use super::Sieve;
use crate::model::Kind;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_with(input: &str, init: &JsValue) -> js_sys::Promise;

    type Response;
    #[wasm_bindgen(method, getter)]
    fn status(this: &Response) -> u16;
    #[wasm_bindgen(method, getter)]
    fn headers(this: &Response) -> Headers;
    #[wasm_bindgen(method)]
    fn text(this: &Response) -> js_sys::Promise;

    type Headers;
    #[wasm_bindgen(method)]
    fn get(this: &Headers, name: &str) -> Option<String>;
}

/// The protocol version the client asks for.
const PROTOCOL_VERSION: &str = "2025-11-25";
const INTERNAL: i32 = -32603;

pub(crate) struct Inner {
    url: String,
    headers: Map<String, Value>,
    session: RefCell<Option<String>>,
    protocol: RefCell<String>,
    next_id: Cell<u64>,
    init: RefCell<Value>,
    /// The concerns this client configured on its session (to list the full catalog anyway).
    configured: RefCell<Map<String, Value>>,
}

/// One HTTP exchange: status, content type and body.
struct Reply {
    status: u16,
    content_type: String,
    body: String,
}

impl Inner {
    async fn post(&self, message: &Value) -> Result<Reply, JsValue> {
        let mut headers = self.headers.clone();
        headers.insert("Content-Type".into(), json!("application/json"));
        headers.insert("Accept".into(), json!("application/json, text/event-stream"));
        if let Some(id) = self.session.borrow().as_ref() {
            headers.insert("Mcp-Session-Id".into(), json!(id));
            headers.insert("MCP-Protocol-Version".into(), json!(*self.protocol.borrow()));
        }
        let init = to_js(&json!({"method": "POST", "headers": headers, "body": message.to_string()}));
        let what = message["method"].as_str().unwrap_or("request").to_string();
        let network = |e: JsValue| {
            error_object(
                &format!("{what}: could not reach {}: {}", self.url, describe(&e)),
                INTERNAL,
                Some(&json!({"url": self.url})),
            )
        };
        let res: Response = JsFuture::from(fetch_with(&self.url, &init))
            .await
            .map_err(network)?
            .unchecked_into();
        let h = res.headers();
        if let Some(id) = h.get("Mcp-Session-Id") {
            *self.session.borrow_mut() = Some(id);
        }
        let body = JsFuture::from(res.text())
            .await
            .map_err(network)?
            .as_string()
            .unwrap_or_default();
        Ok(Reply {
            status: res.status(),
            content_type: h.get("Content-Type").unwrap_or_default(),
            body,
        })
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, JsValue> {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let reply = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let message = response_with_id(&reply, id);
        if let Some(err) = message.as_ref().and_then(|m| m.get("error")) {
            let code = err["code"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(INTERNAL);
            let text = err["message"].as_str().unwrap_or("error without a message");
            return Err(error_object(&format!("{method}: {text}"), code, err.get("data")));
        }
        match message {
            Some(m) if (200..300).contains(&reply.status) => Ok(m.get("result").cloned().unwrap_or(Value::Null)),
            _ => Err(http_error(method, &reply)),
        }
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), JsValue> {
        let reply = self
            .post(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await?;
        if (200..300).contains(&reply.status) {
            Ok(())
        } else {
            Err(http_error(method, &reply))
        }
    }

    /// Every page of a list method, concatenated under its result key.
    async fn list_all(&self, method: &str, params: Value) -> Result<Value, JsValue> {
        let key = result_key(method);
        let mut params = match params {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        let mut items = Vec::new();
        for _ in 0..10_000 {
            let result = self.request(method, Value::Object(params.clone())).await?;
            if let Some(Value::Array(a)) = result.get(&key) {
                items.extend(a.iter().cloned());
            }
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(c) => params.insert("cursor".into(), json!(c)),
                None => return Ok(json!({ key: items })),
            };
        }
        Err(error_object(
            &format!("{method}: more than 10000 pages; stopped"),
            INTERNAL,
            None,
        ))
    }

    fn capabilities(&self) -> Value {
        self.init.borrow().get("capabilities").cloned().unwrap_or(json!({}))
    }
}

/// A server may map tools to concern values internally (the catalog's `concernMapping`), which
/// the wire `_meta.concerns` does not show. The client learns the mapping the server filters by
/// through the protocol itself: one `tools/list` per declared value; a tool listed for exactly
/// one value of a concern is mapped to it, a tool listed for every value is agnostic. The result
/// is written into each tool's `_meta.concerns`, so the core filters as the server does.
async fn learn_concern_mapping(inner: &Inner, decls: &[Value], tools: &mut [Value]) -> Result<(), JsValue> {
    let clear: Map<String, Value> = inner
        .configured
        .borrow()
        .keys()
        .map(|k| (k.clone(), Value::Null))
        .collect();
    for decl in decls {
        let (Some(name), Some(values)) = (decl["name"].as_str(), decl["values"].as_array()) else {
            continue;
        };
        let mut seen: Vec<std::collections::HashSet<String>> = Vec::new();
        for v in values {
            let listed = inner
                .list_all(
                    "tools/list",
                    json!({"concerns": clear, "filter": {"concerns": {name: v}}}),
                )
                .await?;
            seen.push(
                listed["tools"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|t| t["name"].as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            );
        }
        for tool in tools.iter_mut() {
            let Some(tool_name) = tool["name"].as_str().map(str::to_string) else {
                continue;
            };
            let hits: Vec<usize> = (0..values.len()).filter(|&i| seen[i].contains(&tool_name)).collect();
            let Some(obj) = tool.as_object_mut() else { continue };
            match hits.as_slice() {
                [one] => {
                    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
                    if let Some(m) = meta.as_object_mut() {
                        let c = m.entry("concerns").or_insert_with(|| json!({}));
                        if let Some(c) = c.as_object_mut() {
                            c.insert(name.to_string(), values[*one].clone());
                        }
                    }
                }
                _ if hits.len() == values.len() => {
                    if let Some(c) = obj
                        .get_mut("_meta")
                        .and_then(|m| m.get_mut("concerns"))
                        .and_then(Value::as_object_mut)
                    {
                        c.remove(name);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The list key of a method's result: `tools/list` → `tools`, `resources/templates/list` →
/// `resourceTemplates`, `tasks/list` → `tasks`.
fn result_key(method: &str) -> String {
    Kind::ALL.into_iter().find(|k| k.list_method() == method).map_or_else(
        || method.split('/').next().unwrap_or(method).to_string(),
        |k| k.key().to_string(),
    )
}

/// The JSON-RPC message answering `id`, from a JSON body or a `text/event-stream` body.
fn response_with_id(reply: &Reply, id: u64) -> Option<Value> {
    if !reply.content_type.contains("text/event-stream") {
        return serde_json::from_str(&reply.body).ok();
    }
    let body = reply.body.replace("\r\n", "\n");
    body.split("\n\n").find_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim_start)
            .collect();
        let m: Value = serde_json::from_str(&data.join("\n")).ok()?;
        (m.get("id") == Some(&json!(id))).then_some(m)
    })
}

fn http_error(method: &str, reply: &Reply) -> JsValue {
    let body: String = reply.body.chars().take(500).collect();
    error_object(
        format!("{method}: HTTP {} {}", reply.status, body).trim_end(),
        INTERNAL,
        Some(&json!({"status": reply.status, "body": body})),
    )
}

fn describe(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|err| String::from(err.message()))
        .unwrap_or_else(|| format!("{e:?}"))
}

/// A connected MCP session over Streamable HTTP.
///
/// @example
/// ```js
/// const client = await McpClient.connect('/mcp', { concerns: { security: 'high' } });
/// const { tools } = await client.listAll('tools/list', { filter: { groups: ['email'] } });
/// await client.updateConcerns({ security: 'low' });
/// ```
#[wasm_bindgen]
pub struct McpClient {
    inner: Rc<Inner>,
}

impl McpClient {
    pub(crate) fn inner(&self) -> Rc<Inner> {
        self.inner.clone()
    }

    /// Lists everything the server offers (without this session's concerns) into a `Sieve`.
    pub(crate) async fn load_sieve(inner: Rc<Inner>) -> Result<Sieve, JsValue> {
        let caps = inner.capabilities();
        // Clear this session's concerns per request: the Sieve needs the full catalog.
        let params = {
            let configured = inner.configured.borrow();
            if configured.is_empty() {
                json!({})
            } else {
                json!({"concerns": configured.keys().map(|k| (k.clone(), Value::Null)).collect::<Map<_, _>>()})
            }
        };
        let mut doc = Map::new();
        let mut add = |key: &str, v: Value| {
            doc.insert(key.into(), v.get(key).cloned().unwrap_or(json!([])));
        };
        add("tools", inner.list_all("tools/list", params.clone()).await?);
        if caps.get("resources").is_some() {
            add("resources", inner.list_all("resources/list", params.clone()).await?);
            add(
                "resourceTemplates",
                inner.list_all("resources/templates/list", params.clone()).await?,
            );
        }
        if caps.get("prompts").is_some() {
            add("prompts", inner.list_all("prompts/list", params.clone()).await?);
        }
        if caps.get("filtering").is_some() {
            add("groups", inner.list_all("groups/list", json!({})).await?);
            add("tags", inner.list_all("tags/list", json!({})).await?);
        }
        if let Some(decls) = caps.get("concerns").and_then(Value::as_array) {
            if let Some(Value::Array(tools)) = doc.get_mut("tools") {
                learn_concern_mapping(&inner, decls, tools).await?;
            }
            doc.insert("concerns".into(), Value::Array(decls.clone()));
        }
        Sieve::from_doc(&Value::Object(doc))
    }
}

#[wasm_bindgen]
impl McpClient {
    /// Connects: `initialize`, then `notifications/initialized` carrying `options.concerns`
    /// (the concern proposal's Option A). Rejects with an `Error` (`code`, `data`) on failure.
    pub async fn connect(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "ConnectOptions")] options: Option<JsValue>,
    ) -> Result<McpClient, JsValue> {
        let options = from_js(options, "options")?;
        let headers = options
            .get("headers")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let protocol = options["protocolVersion"]
            .as_str()
            .unwrap_or(PROTOCOL_VERSION)
            .to_string();
        let inner = Rc::new(Inner {
            url,
            headers,
            session: RefCell::new(None),
            protocol: RefCell::new(protocol.clone()),
            next_id: Cell::new(1),
            init: RefCell::new(Value::Null),
            configured: RefCell::new(Map::new()),
        });
        let client_info = options
            .get("clientInfo")
            .cloned()
            .unwrap_or(json!({"name": "mcp-sieve-wasm", "version": env!("CARGO_PKG_VERSION")}));
        let result = inner
            .request(
                "initialize",
                json!({
                    "protocolVersion": protocol,
                    "capabilities": options.get("capabilities").cloned().unwrap_or(json!({})),
                    "clientInfo": client_info,
                }),
            )
            .await?;
        if let Some(v) = result["protocolVersion"].as_str() {
            *inner.protocol.borrow_mut() = v.to_string();
        }
        *inner.init.borrow_mut() = result;
        let concerns = options
            .get("concerns")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let params = if concerns.is_empty() {
            json!({})
        } else {
            json!({ "concerns": concerns })
        };
        inner.notify("notifications/initialized", params).await?;
        *inner.configured.borrow_mut() = concerns;
        Ok(McpClient { inner })
    }

    /// Sends a request; resolves to its `result`, rejects with an `Error` carrying the JSON-RPC
    /// `code` and `data`.
    #[wasm_bindgen(unchecked_return_type = "Promise<any>")]
    pub fn request(
        &self,
        method: String,
        #[wasm_bindgen(unchecked_optional_param_type = "object")] params: Option<JsValue>,
    ) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let params = params_object(params)?;
            inner.request(&method, params).await.map(|v| to_js(&v))
        })
    }

    /// Sends a notification.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn notify(
        &self,
        method: String,
        #[wasm_bindgen(unchecked_optional_param_type = "object")] params: Option<JsValue>,
    ) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let params = params_object(params)?;
            inner.notify(&method, params).await.map(|()| JsValue::UNDEFINED)
        })
    }

    /// Every page of a list method (`tools/list`, `prompts/list`, `groups/list`, `tasks/list`,
    /// ...) with `params` (e.g. `{filter}`), following `nextCursor`; resolves to `{<key>: [...]}`.
    #[wasm_bindgen(js_name = listAll, unchecked_return_type = "Promise<Record<string, any[]>>")]
    pub fn list_all(
        &self,
        method: String,
        #[wasm_bindgen(unchecked_optional_param_type = "object")] params: Option<JsValue>,
    ) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let params = from_js(params, "params")?;
            inner.list_all(&method, params).await.map(|v| to_js(&v))
        })
    }

    /// `concerns/update` (`null` removes a concern); resolves to its result.
    #[wasm_bindgen(js_name = updateConcerns, unchecked_return_type = "Promise<any>")]
    pub fn update_concerns(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ConcernConfig")] concerns: JsValue,
    ) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let concerns = from_js(concerns, "concerns")?;
            let result = inner
                .request("concerns/update", json!({ "concerns": concerns }))
                .await?;
            if let Value::Object(update) = concerns {
                let mut configured = inner.configured.borrow_mut();
                for (k, v) in update {
                    if v.is_null() {
                        configured.remove(&k);
                    } else {
                        configured.insert(k, v);
                    }
                }
            }
            Ok(to_js(&result))
        })
    }

    /// `tasks/list` with a SEP-1904 query (every page); resolves to `{tasks}`.
    #[wasm_bindgen(js_name = listTasks, unchecked_return_type = "Promise<{ tasks: Task[] }>")]
    pub fn list_tasks(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "TaskQuery")] query: Option<JsValue>,
    ) -> js_sys::Promise {
        self.list_all("tasks/list".into(), query)
    }

    /// Lists everything the server offers into a `Sieve` (tools, and resources, templates,
    /// prompts, groups, tags and concern declarations when the server declares them).
    #[wasm_bindgen(unchecked_return_type = "Promise<Sieve>")]
    pub fn load(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        future_to_promise(async move { Self::load_sieve(inner).await.map(JsValue::from) })
    }

    /// The endpoint URL.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.inner.url.clone()
    }

    /// The `Mcp-Session-Id` the server assigned, if any.
    #[wasm_bindgen(getter, js_name = sessionId)]
    pub fn session_id(&self) -> Option<String> {
        self.inner.session.borrow().clone()
    }

    /// The negotiated protocol version.
    #[wasm_bindgen(getter, js_name = protocolVersion)]
    pub fn protocol_version(&self) -> String {
        self.inner.protocol.borrow().clone()
    }

    /// The `initialize` result (`serverInfo`, `capabilities`, `instructions`).
    #[wasm_bindgen(getter, js_name = initializeResult, unchecked_return_type = "any")]
    pub fn initialize_result(&self) -> JsValue {
        to_js(&self.inner.init.borrow())
    }

    /// The concerns the server declares (`capabilities.concerns`), or `[]`.
    #[wasm_bindgen(getter, js_name = concernDeclarations, unchecked_return_type = "ConcernDeclaration[]")]
    pub fn concern_declarations(&self) -> JsValue {
        to_js(
            &self
                .inner
                .capabilities()
                .get("concerns")
                .cloned()
                .filter(Value::is_array)
                .unwrap_or(json!([])),
        )
    }

    /// The concerns this client configured on its session.
    #[wasm_bindgen(getter, unchecked_return_type = "ConcernConfig")]
    pub fn concerns(&self) -> JsValue {
        to_js(&Value::Object(self.inner.configured.borrow().clone()))
    }
}

/// `params` from JS as a JSON object (absent or null is `{}`).
fn params_object(params: Option<JsValue>) -> Result<Value, JsValue> {
    let params = from_js(params, "params")?;
    Ok(if params.is_null() { json!({}) } else { params })
}
