//! A small MCP client over `fetch` (Streamable HTTP, 2025-11-25 era): `initialize`, the
//! `Mcp-Session-Id` header, `notifications/initialized` with concerns, `concerns/update`, lists
//! with filters following `nextCursor`, and `tasks/list`. Works against the mcp-sieve Worker and
//! any Streamable HTTP MCP server.

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::{json, Map, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{future_to_promise, JsFuture};

use super::convert::{error_object, from_js, js_error, to_js};
use super::sieve::Sieve;
use crate::model::Kind;
use crate::upstream::{ClientConfig, Conversation, HttpAnswer, Machine, Pages, Post, Step, PROTOCOL_VERSION};
use crate::Error;

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

const INTERNAL: i32 = -32603;

/// The state of one client: the conversation (session, ids, protocol version) and the concerns
/// it configured. The rules of the exchange are in `crate::upstream`; this file moves bytes.
pub(crate) struct Inner {
    url: String,
    conv: RefCell<Conversation>,
    /// The concerns this client configured on its session (to list the full catalog anyway).
    configured: RefCell<Map<String, Value>>,
}

impl Inner {
    async fn post(&self, post: Post, what: &str) -> Result<HttpAnswer, JsValue> {
        let headers: Map<String, Value> = post.headers.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        let init = to_js(&json!({"method": "POST", "headers": headers, "body": post.body}));
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
        let body = JsFuture::from(res.text())
            .await
            .map_err(network)?
            .as_string()
            .unwrap_or_default();
        Ok(HttpAnswer {
            status: res.status(),
            session: h.get("Mcp-Session-Id"),
            content_type: h.get("Content-Type").unwrap_or_default(),
            body,
        })
    }

    /// Runs `m` to its end; the conversation is borrowed only between the bytes.
    async fn drive<M: Machine>(&self, m: &mut M, what: &str) -> Result<M::Output, JsValue> {
        let failed = |e: Error| error_object(&format!("{what}: {e}"), e.code(), e.data());
        loop {
            let step = m.step(&mut self.conv.borrow_mut()).map_err(failed)?;
            let post = match step {
                Step::Done(out) => return Ok(out),
                Step::Send(post) => post,
            };
            let answer = self.post(post, what).await?;
            m.receive(&mut self.conv.borrow_mut(), answer).map_err(failed)?;
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, JsValue> {
        let mut ex = self.conv.borrow().request(method, params);
        let reply = self.drive(&mut ex, method).await?;
        reply.result(method).cloned().map_err(|e| js_error(&e))
    }

    async fn notify(&self, method: &str, params: Value) -> Result<(), JsValue> {
        let mut ex = self.conv.borrow().notify(method, params);
        self.drive(&mut ex, method).await.map(drop)
    }

    /// Every page of a list method, concatenated under its result key.
    async fn list_all(&self, method: &str, params: Value) -> Result<Value, JsValue> {
        let key = result_key(method);
        let mut pages = Pages::new(method, &key, params);
        let items = self.drive(&mut pages, method).await?;
        Ok(json!({ key: items }))
    }

    fn capabilities(&self) -> Value {
        self.conv
            .borrow()
            .initialize_result()
            .and_then(|i| i.get("capabilities"))
            .cloned()
            .unwrap_or(json!({}))
    }
}

/// The list key of a method's result: `tools/list` → `tools`, `resources/templates/list` →
/// `resourceTemplates`, `tasks/list` → `tasks`.
fn result_key(method: &str) -> String {
    Kind::ALL.into_iter().find(|k| k.list_method() == method).map_or_else(
        || method.split('/').next().unwrap_or(method).to_string(),
        |k| k.key().to_string(),
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
        // Each listed `_meta.concerns` is the mapping the server filters by: no probing needed.
        if let Some(decls) = caps.get("concerns").and_then(Value::as_array) {
            doc.insert("concerns".into(), Value::Array(decls.clone()));
        }
        Sieve::from_doc(Value::Object(doc))
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
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let concerns = options
            .get("concerns")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // The `gateway` feature adds fields the package does not set.
        #[allow(clippy::needless_update)]
        let config = ClientConfig {
            client_info: options
                .get("clientInfo")
                .cloned()
                .unwrap_or(json!({"name": "mcp-sieve-wasm", "version": env!("CARGO_PKG_VERSION")})),
            capabilities: options.get("capabilities").cloned().unwrap_or(json!({})),
            protocol_version: options["protocolVersion"]
                .as_str()
                .unwrap_or(PROTOCOL_VERSION)
                .to_string(),
            initialized: Some(if concerns.is_empty() {
                json!({})
            } else {
                json!({ "concerns": concerns })
            }),
            headers,
            ..ClientConfig::default()
        };
        let inner = Rc::new(Inner {
            url,
            conv: RefCell::new(Conversation::new(config)),
            configured: RefCell::new(concerns),
        });
        let mut open = inner.conv.borrow().open();
        let reply = inner.drive(&mut open, "initialize").await?;
        reply.result("initialize").map_err(|e| js_error(&e))?;
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

    /// `tasks/list` with a SEP-1904 query (every page); resolves to `{tasks}`. The criteria are
    /// sent only to a server that advertises the task filter (`capabilities.tasks.list.filter`);
    /// with any other the promise rejects (`-32602`) saying so: list without a query and apply
    /// it here with `filterTasks`.
    #[wasm_bindgen(js_name = listTasks, unchecked_return_type = "Promise<{ tasks: Task[] }>")]
    pub fn list_tasks(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "TaskQuery")] query: Option<JsValue>,
    ) -> js_sys::Promise {
        let criteria = query
            .as_ref()
            .is_some_and(|q| q.is_object() && js_sys::Object::keys(q.unchecked_ref::<js_sys::Object>()).length() > 0);
        if criteria && self.inner.capabilities()["tasks"]["list"].get("filter").is_none() {
            let e = Error::params(
                "this server does not advertise SEP-1904 task filtering (capabilities.tasks.list.filter): \
                 call listTasks() without a query and filter with filterTasks",
            );
            return js_sys::Promise::reject(&js_error(&e));
        }
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
        self.inner.conv.borrow().session_id().map(str::to_string)
    }

    /// The negotiated protocol version.
    #[wasm_bindgen(getter, js_name = protocolVersion)]
    pub fn protocol_version(&self) -> String {
        self.inner.conv.borrow().protocol_version().to_string()
    }

    /// The `initialize` result (`serverInfo`, `capabilities`, `instructions`).
    #[wasm_bindgen(getter, js_name = initializeResult, unchecked_return_type = "any")]
    pub fn initialize_result(&self) -> JsValue {
        to_js(self.inner.conv.borrow().initialize_result().unwrap_or(&Value::Null))
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

#[wasm_bindgen]
impl Sieve {
    /// Connects to an MCP server over Streamable HTTP and builds from everything it lists.
    ///
    /// @example
    /// ```js
    /// const sieve = await Sieve.fromServer('/mcp');
    /// ```
    #[wasm_bindgen(js_name = fromServer)]
    pub async fn from_server(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "ConnectOptions")] options: Option<JsValue>,
    ) -> Result<Sieve, JsValue> {
        let client = McpClient::connect(url, options).await?;
        McpClient::load_sieve(client.inner()).await
    }
}

/// `params` from JS as a JSON object (absent or null is `{}`).
fn params_object(params: Option<JsValue>) -> Result<Value, JsValue> {
    let params = from_js(params, "params")?;
    Ok(if params.is_null() { json!({}) } else { params })
}
