//! A stateless use of an upstream's item (`tools/call`, `prompts/get`, `resources/read`,
//! `completion/complete`) on the fast path, with the upstream's POST sent by `entry.mjs`: the
//! core's exchange waits here, under a number, between synchronous calls. [`start`] answers what
//! needs no upstream, or hands `entry.mjs` the POST to send ([`plan`]); `entry.mjs` sends it and
//! gives back a JSON answer read whole ([`sieve_fast_answer`]) or why there is none
//! ([`sieve_fast_failed`]), and gets the response or the next POST. An SSE answer (the upstream
//! may ask something mid-call, refused at once) goes on in Rust ([`sieve_fast_stream`]), as does
//! a forward this path does not take (a service binding, a `tasks/list` gathered from several
//! upstreams, an upstream session to close afterwards). Every rule is the full path's
//! (`gateway::finish`); what this path saves is its futures, timers and crossings.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use mcp_sieve::http;
use mcp_sieve::protocol::{Forward, Server};
use mcp_sieve::upstream::{self, HttpAnswer, Machine, Post, Step};
use mcp_sieve::Error;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::platform::now_ms;
use crate::serve::fast::splice;
use crate::serve::shell;
use crate::serve::watch;
use crate::telemetry::log;
use crate::upstream::gateway::{self, Refusing};

/// One exchange with an upstream, waiting for the answer to its last POST.
struct Waiting {
    /// The forward as sent (answers to questions unwrapped).
    forward: Forward,
    /// The upstream session the exchange began in, if any.
    began: Option<String>,
    /// The key of a `requestState` (the transport's session secret).
    secret: Option<http::Secret>,
    answer: http::Response,
    server: Arc<Server>,
    member: usize,
    /// How the upstream is reached, taken where `member` was found (a reload meanwhile may
    /// number the upstreams anew: the exchange's later POSTs still reach this one).
    reach: gateway::Reach,
    url: String,
    conv: upstream::Conversation,
    exchange: upstream::Exchange,
    post: Post,
    since_ms: i64,
}

thread_local! {
    static WAITING: RefCell<(u32, HashMap<u32, Waiting>)> = RefCell::new((0, HashMap::new()));
}

/// An exchange still waiting this long was dropped by its request (the
/// client went away): it is forgotten (twice its deadline, and a question's wait).
fn forget_ms(w: &Waiting) -> i64 {
    2 * w.reach.limits().call_ms as i64 + mcp_sieve::protocol::ask::ANSWER_WAIT_MS
}

/// Whether `method` is a use of an item that a gateway forwards.
pub fn is_use(method: &str) -> bool {
    matches!(
        method,
        "tools/call" | "prompts/get" | "resources/read" | "completion/complete"
    )
}

/// The method of `body` and whether, as a use, it may be relayed ([`may_relay`] of its
/// `params`), read as the core reads it but without building the document: the fields this
/// routing needs are read, everything else is skipped. A body this quick reading refuses (a
/// repeated field, `params` or `_meta` that is not an object, not JSON) is read in full by
/// `jsonrpc::peek`, so both readings agree.
pub fn peek(body: &[u8]) -> Option<(String, bool)> {
    quick(body).or_else(|| {
        let (method, params) = mcp_sieve::protocol::jsonrpc::peek(body)?;
        let relays = may_relay(&params);
        Some((method, relays))
    })
}

/// [`peek`]'s quick reading; `None` for anything it does not read as the core would.
fn quick(body: &[u8]) -> Option<(String, bool)> {
    use serde::{Deserialize, Deserializer};
    use std::borrow::Cow;
    /// `true` for a field that is present, whatever its value (`null` too, as `Value::get`).
    fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| true)
    }
    /// `T` read from a JSON object only (a derived `Deserialize` also takes an array).
    struct Obj<T>(T);
    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit<T>(std::marker::PhantomData<T>);
            impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
                type Value = Obj<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                    T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Obj)
                }
            }
            d.deserialize_map(Visit(std::marker::PhantomData))
        }
    }
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        method: Cow<'a, str>,
        #[serde(default)]
        params: Option<Obj<Params>>,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(default, rename = "inputResponses", deserialize_with = "present")]
        input_responses: bool,
        #[serde(default, rename = "requestState", deserialize_with = "present")]
        request_state: bool,
        #[serde(default, deserialize_with = "present")]
        task: bool,
        #[serde(default, rename = "_meta")]
        meta: Option<Obj<Meta>>,
    }
    #[derive(Deserialize)]
    struct Meta {
        #[serde(default, rename = "io.modelcontextprotocol/clientCapabilities")]
        caps: Option<Obj<Caps>>,
    }
    #[derive(Deserialize)]
    struct Caps {
        #[serde(default, deserialize_with = "present")]
        sampling: bool,
        #[serde(default, deserialize_with = "present")]
        elicitation: bool,
        #[serde(default, deserialize_with = "present")]
        roots: bool,
        #[serde(default)]
        extensions: Option<Obj<Extensions>>,
    }
    #[derive(Deserialize)]
    struct Extensions {
        /// Declared only as an object (`protocol::declares_tasks`): `null` is none, another value
        /// leaves the body to `jsonrpc::peek`.
        #[serde(default, rename = "io.modelcontextprotocol/tasks")]
        tasks: Option<Obj<serde::de::IgnoredAny>>,
    }
    let Obj(head) = serde_json::from_slice::<Obj<Head>>(body).ok()?;
    // The uses during which an upstream may ask (`jsonrpc::peek` gives their `params`).
    let relays = mcp_sieve::protocol::jsonrpc::ASKING_METHODS.contains(&&*head.method)
        && head.params.is_some_and(|Obj(p)| {
            let caps = p.meta.and_then(|Obj(m)| m.caps);
            p.input_responses
                || p.request_state
                || p.task
                || caps.is_some_and(|Obj(c)| {
                    c.sampling || c.elicitation || c.roots || c.extensions.is_some_and(|Obj(e)| e.tasks.is_some())
                })
        });
    Some((head.method.into_owned(), relays))
}

/// Whether a use with these `params` (as `jsonrpc::peek` reads them) may be relayed: it brings
/// answers to an upstream's questions, or its client declares a capability an upstream may ask
/// for (`upstream::relays_stateless`); or it may run as a task (its client declares the tasks
/// extension: kept by the holder of its principal's tasks, `protocol::gateway_holder`). Such a call takes the full path, which runs
/// it in a Durable Object when it is relayed or makes a task.
pub fn may_relay(params: &serde_json::Value) -> bool {
    let caps = &params["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    params.get("inputResponses").is_some()
        || params.get("requestState").is_some()
        || params.get("task").is_some()
        || mcp_sieve::protocol::declares_tasks(params)
        || ["sampling", "elicitation", "roots"]
            .iter()
            .any(|c| caps.get(c).is_some())
}

/// The response to the core's `answer` on the gateway's `server`: at once when it forwards
/// nothing, else the first POST of its forward for `entry.mjs`, or a promise of the response
/// when this path does not take the forward (the full path's `gateway::finish` runs it).
pub fn start(answer: http::Response, server: Arc<Server>, loaded: crate::config::Loaded, body: &[u8]) -> JsValue {
    let Some(mut f) = answer.forward.clone() else {
        return done(watch::respond(answer, loaded));
    };
    let url = gateway::http_url(f.upstream);
    // An upstream each caller signs in to takes the full path (its token is asked for there).
    let simple =
        f.session.is_none() && f.gather.is_empty() && answer.ended.is_none() && gateway::signing(f.upstream).is_none();
    let (Some(url), true, false) = (url, simple, gateway::relays_stateless(&server, &f)) else {
        return full(answer, server, loaded);
    };
    let secret = secret(&loaded);
    // A 2026-07-28 client's answers to an upstream's questions, back in the upstream's terms.
    if let Some(secret) = &secret {
        if let Err(e) = upstream::unwrap_input(&mut f, secret, now_ms()) {
            let refused = upstream::refusal(&serde_json::Value::Null, &e);
            return done(shell::respond(http::complete(answer, Ok(&refused), &[])));
        }
    }
    let forward = gateway::with(&server, |g| g.forward_in(&f))
        .unwrap_or_else(|| Err(Error::Internal("no upstream is configured".into())));
    let (member, mut conv, answered, reach) = match gateway::found(forward) {
        Ok(x) => x,
        Err(e) => return done(shell::respond(http::complete(answer, Err(&e), &[]))),
    };
    // An upstream spoken to in sessions (one shared by stateless callers): the full path.
    if conv.era() != upstream::Era::Modern {
        return full(answer, server, loaded);
    }
    // The POST's body spliced from the client's text when it can be, else built by the exchange.
    let (exchange, post) = match answered {
        Some(answered) => (answered, None),
        None => match spliced_post(&f, &mut conv, body) {
            Some((exchange, post)) => (exchange, Some(post)),
            None => (conv.request(&f.method, f.params.clone()), None),
        },
    };
    let waiting = Waiting {
        began: conv.session_id().map(str::to_string),
        forward: f,
        secret,
        answer,
        server,
        member,
        reach,
        url,
        conv,
        exchange,
        post: Post {
            headers: Vec::new(),
            body: String::new(),
        },
        since_ms: now_ms(),
    };
    match post {
        Some(post) => send(waiting, post),
        None => next(waiting, Ok(())),
    }
}

/// The exchange of `f` at `conv` already sent, and its POST, whose body is spliced from the
/// client's request `body` (`splice::Request`); `None` (and `conv` untouched) when it cannot be.
fn spliced_post(f: &Forward, conv: &mut upstream::Conversation, body: &[u8]) -> Option<(upstream::Exchange, Post)> {
    // Answers to an upstream's questions, unwrapped into `f`, are not the client's text.
    if f.params.get("inputResponses").is_some() || f.params.get("requestState").is_some() {
        return None;
    }
    let request = splice::Request::of(f, std::str::from_utf8(body).ok()?)?;
    let mirrored = mcp_sieve::protocol::jsonrpc::mirrored_param(&f.method);
    let name = mirrored.and_then(|p| f.params.get(p)?.as_str());
    let sent = conv.sent_modern(&f.method, f.params.clone(), name)?;
    let body = request.write(f, &sent);
    Some((
        sent.exchange,
        Post {
            headers: sent.headers,
            body,
        },
    ))
}

/// A promise of the response the full path gives `answer` (`shell::run` after serving it).
fn full(answer: http::Response, server: Arc<Server>, loaded: crate::config::Loaded) -> JsValue {
    promise(async move {
        let mut store = http::MemoryStore::default();
        let secret = secret(&loaded);
        let answer = gateway::finish(answer, &server, &mut store, secret.as_ref()).await;
        done(watch::respond(answer, loaded))
    })
}

/// The key of a `requestState` (the transport's session secret).
fn secret(loaded: &crate::config::Loaded) -> Option<http::Secret> {
    loaded.transport.as_ref().ok().and_then(|c| c.session_secret.clone())
}

/// Goes on with `w` after its last step (`last`: how it went): the next POST, or the response.
fn next(mut w: Waiting, last: Result<(), Error>) -> JsValue {
    let step = last.and_then(|()| w.exchange.step(&mut w.conv));
    match step {
        Ok(Step::Send(post)) => send(w, post),
        Ok(Step::Done(reply)) => finish_now(w, Ok(reply)),
        Err(e) => finish_now(w, Err(e)),
    }
}

/// `w` sending `post`: its plan for `entry.mjs`, or a promise of the response when the full
/// path sends it.
fn send(mut w: Waiting, post: Post) -> JsValue {
    match post {
        post if post
            .headers
            .iter()
            .all(|(k, v)| !k.contains('\n') && !v.contains(['\n', '\r'])) =>
        {
            w.post = post;
            w.since_ms = now_ms();
            WAITING
                .with(|p| {
                    let (counter, map) = &mut *p.borrow_mut();
                    map.retain(|_, o| w.since_ms - o.since_ms < forget_ms(o));
                    *counter = counter.wrapping_add(1);
                    let text = plan(*counter, &w);
                    map.insert(*counter, w);
                    text
                })
                .into()
        }
        // A header this path cannot write on one line: the full path sends it (and refuses it).
        post => promise(async move {
            let refusing = Refusing::new(w.answer.forward.as_ref().expect("a forward"));
            let sent = w.reach.send_for(post, Some(&refusing), None).await;
            let reply = go_on(&mut w, sent, &refusing).await;
            finish(w, reply).await
        }),
    }
}

/// The POST of `w`, waiting as exchange `handle`, for `entry.mjs`, one string: the handle, its
/// URL, deadline (ms), answer cap (bytes), the number of headers, each header's name and value,
/// each on a line; then the body.
fn plan(handle: u32, w: &Waiting) -> String {
    use std::fmt::Write;
    let heads: usize = w.post.headers.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let mut s = String::with_capacity(w.url.len() + heads + w.post.body.len() + 48);
    let limits = w.reach.limits();
    let _ = write!(
        s,
        "{handle}\n{}\n{}\n{}\n{}\n",
        w.url,
        limits.call_ms,
        limits.max_answer_bytes,
        w.post.headers.len()
    );
    for (k, v) in &w.post.headers {
        s.push_str(k);
        s.push('\n');
        s.push_str(v);
        s.push('\n');
    }
    s.push_str(&w.post.body);
    s
}

/// The waiting exchange `handle`, taken.
fn take(handle: u32) -> Option<Waiting> {
    WAITING.with(|p| p.borrow_mut().1.remove(&handle))
}

/// The answer to exchange `handle`'s POST: HTTP `status`, the upstream's `Mcp-Session-Id`,
/// `content_type` (not an SSE stream) and the whole `body`. Returns the response (a JSON answer
/// of status 200 with no other header than its type as its body alone, a string starting with
/// `{`), or the next POST.
#[wasm_bindgen]
pub fn sieve_fast_answer(
    handle: u32,
    status: u16,
    session: Option<String>,
    content_type: String,
    body: &[u8],
) -> JsValue {
    let Some(mut w) = take(handle) else {
        return done(shell::respond(http::failed()));
    };
    let max = w.reach.limits().max_answer_bytes;
    if body.len() > max {
        return finish_now(
            w,
            Err(Error::Upstream(format!(
                "its answer is larger than {max} bytes (limits.maxAnswerBytes)"
            ))),
        );
    }
    if let Some(answer) = spliced(&w, status, &content_type, body) {
        // What the full path learns from such an answer: nothing but that the exchange is done.
        let _ = gateway::noted(
            &w.server,
            &w.reach,
            w.member,
            &mut w.conv,
            Ok(upstream::Reply::default()),
        );
        let answer = http::complete_json(w.answer, answer);
        if answer.status == 200 && answer.headers.len() == 1 && !crate::config::diagnostics() {
            // A plain JSON answer: `entry.mjs` builds its response (a string that starts with `{`;
            // a POST's plan starts with its number), which costs no crossing per header.
            return answer.body.into();
        }
        return done(shell::respond(answer));
    }
    let body = String::from_utf8(body.to_vec()).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let answer = HttpAnswer {
        status,
        session,
        content_type,
        body,
    };
    let received = w.exchange.receive(&mut w.conv, answer);
    next(w, received)
}

/// The client's answer spliced from the upstream's JSON answer (`splice::answer`) when it is
/// the one the full path gives: a 2xx answer to the exchange's request, in no upstream session
/// (so none is to be closed, and none was opened or forgotten).
fn spliced(w: &Waiting, status: u16, content_type: &str, body: &[u8]) -> Option<String> {
    let json = !content_type.to_ascii_lowercase().starts_with("text/event-stream");
    let sessionless = w.began.is_none() && w.conv.session_id().is_none();
    if !(200..300).contains(&status) || !json || !sessionless {
        return None;
    }
    let sent = w.exchange.request_in_flight()?;
    splice::answer(&w.forward, sent, std::str::from_utf8(body).ok()?)
}

/// Exchange `handle`'s POST failed with `error` (`timed_out`: its deadline passed).
#[wasm_bindgen]
pub fn sieve_fast_failed(handle: u32, error: JsValue, timed_out: bool) -> JsValue {
    let Some(w) = take(handle) else {
        return done(shell::respond(http::failed()));
    };
    let why = match timed_out {
        true => gateway::late(&w.reach.limits()),
        false => Error::Upstream(format!("cannot reach {}: {}", w.url, worker::Error::from(error))),
    };
    finish_now(w, Err(why))
}

/// Exchange `handle`'s POST was answered with `response`, an SSE stream or a body of unknown
/// length (aborted by `signal` at the deadline): read here as the full path reads it (what the
/// upstream asks meanwhile is refused), and the exchange goes on. A promise of the response.
#[wasm_bindgen]
pub fn sieve_fast_stream(handle: u32, response: web_sys::Response, signal: web_sys::AbortSignal) -> js_sys::Promise {
    let Some(mut w) = take(handle) else {
        return js_sys::Promise::resolve(&done(shell::respond(http::failed())));
    };
    let signal = worker::AbortSignal::from(signal);
    wasm_bindgen_futures::future_to_promise(async move {
        let refusing = Refusing::new(w.answer.forward.as_ref().expect("a forward"));
        let limits = w.reach.limits();
        let read = gateway::read_answer(
            &w.url,
            None,
            &w.post,
            response,
            &signal,
            Some(&refusing),
            limits.max_answer_bytes,
        )
        .await;
        let read = match read {
            Err(_) if signal.aborted() => Err(gateway::late(&limits)),
            r => r,
        };
        let reply = go_on(&mut w, read, &refusing).await;
        Ok(finish(w, reply).await)
    })
}

/// The rest of `w`'s exchange after the answer `last` to its POST, each further POST sent by
/// the full path's driver (what the upstream asks meanwhile is refused).
async fn go_on(
    w: &mut Waiting,
    last: Result<HttpAnswer, Error>,
    refusing: &Refusing,
) -> Result<upstream::Reply, Error> {
    last.and_then(|a| w.exchange.receive(&mut w.conv, a))?;
    let reach = &w.reach;
    upstream::drive(&mut w.conv, &mut w.exchange, |p| {
        reach.send_for(p, Some(refusing), None)
    })
    .await
}

/// `w` ended with `reply`: the response, or a promise of it when an upstream session is to be
/// closed first.
fn finish_now(w: Waiting, reply: Result<upstream::Reply, Error>) -> JsValue {
    let closing = closing(&w);
    match closing.is_empty() {
        true => completed(w, reply),
        false => promise(async move {
            gateway::close(closing, w.forward.principal.as_deref()).await;
            completed(w, reply)
        }),
    }
}

async fn finish(w: Waiting, reply: Result<upstream::Reply, Error>) -> JsValue {
    gateway::close(closing(&w), w.forward.principal.as_deref()).await;
    completed(w, reply)
}

/// The upstream session a stateless request's exchange ran in, to close when it served that
/// request alone (the full path's rule, `Gateway::stateless_done`).
fn closing(w: &Waiting) -> Vec<(usize, Vec<(String, String)>)> {
    let link = w.conv.link();
    let began = w.began.as_deref();
    let closing = gateway::with(&w.server, |g| g.stateless_done(w.member, &w.forward, began, &link));
    closing.flatten().map(|h| (w.member, h)).into_iter().collect()
}

/// The response of `w` completed with `reply` (what the upstream said, noted by the gateway); an
/// upstream's questions become the gateway's own for the 2026-07-28 caller (what
/// `upstream::drive_rounds` does for a stateless call).
fn completed(mut w: Waiting, reply: Result<upstream::Reply, Error>) -> JsValue {
    let reply = reply.map(|mut r| {
        if let (Some(msg), Some(secret), true) = (r.response.as_mut(), &w.secret, w.forward.stateless) {
            if upstream::needed(msg).is_some() {
                upstream::wrap_input(msg, &w.forward, secret, now_ms());
            }
        }
        r
    });
    let reply = gateway::noted(&w.server, &w.reach, w.member, &mut w.conv, reply);
    let mut store = http::MemoryStore::default();
    let answer = upstream::forwarded(w.answer, &w.conv, reply, &mut store, now_ms());
    done(shell::respond(answer))
}

/// A platform response as `entry.mjs` takes it (a failure to build one: the 500 of a failure),
/// marked as the fast path's with diagnostics on.
fn done(r: worker::Result<worker::Response>) -> JsValue {
    let r = r.or_else(|e| {
        log::error(format_args!("a response could not be built: {e}"));
        shell::respond(http::failed())
    });
    let Ok(r) = r else {
        return JsValue::UNDEFINED;
    };
    let r = web_sys::Response::from(r);
    if crate::config::diagnostics() {
        let _ = r.headers().set(shell::PATH_HEADER, "fast");
    }
    r.into()
}

/// A promise of the response `f` builds.
fn promise(f: impl std::future::Future<Output = JsValue> + 'static) -> JsValue {
    wasm_bindgen_futures::future_to_promise(async move { Ok(f.await) }).into()
}

#[cfg(test)]
mod tests {
    use super::{may_relay, peek, quick};

    /// The quick reading agrees with the full one (`jsonrpc::peek`, then `may_relay`).
    #[test]
    fn peek_reads_a_use_as_the_full_reading_does() {
        let full = |b: &[u8]| {
            let (m, p) = mcp_sieve::protocol::jsonrpc::peek(b)?;
            let r = may_relay(&p);
            Some((m, r))
        };
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities""#;
        let with_meta = |b: &str| b.replace("META", meta);
        let bodies: Vec<String> = vec![
            with_meta(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,{"b":"\u0041"}]},META:{}}}}"#,
            ),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"sampling":{}}}}}"#),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"roots":null}}}}"#),
            with_meta(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"elicitation":false}}}}"#,
            ),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:null}}}"#),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x",META:{"sampling":{}}}}}"#),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a:b",META:{"roots":{}}}}}"#),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{META:{"sampling":{}}}}}"#),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":null}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"s"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":1}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":"not an object"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":1,"requestState":2}}"#
                .into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#.into(),
            r#"["tools/call",{"requestState":1}]"#.into(),
            r#"{"method":"tools/call","params":{"_meta":[{"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}]}}"#.into(),
            r#"{"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":[{}]}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"requestState":1}}"#
                .into(),
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"filter":{}}}"#.into(),
            r#"{"method":5}"#.into(),
            r#"{"method":"ping"} x"#.into(),
            "not json".into(),
            // SEP-2663: a client declaring the tasks extension (an object) may be given a task.
            with_meta(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#,
            ),
            with_meta(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"extensions":{"io.modelcontextprotocol/tasks":null}}}}}"#,
            ),
            with_meta(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"extensions":{"io.modelcontextprotocol/tasks":true}}}}}"#,
            ),
            with_meta(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x",META:{"extensions":{"other":{}}}}}}"#),
        ];
        for b in &bodies {
            assert_eq!(peek(b.as_bytes()), full(b.as_bytes()), "{b}");
        }
        // The common call is read quickly, and a relaying one is seen.
        assert_eq!(quick(bodies[0].as_bytes()), Some(("tools/call".into(), false)));
        assert_eq!(quick(bodies[1].as_bytes()), Some(("tools/call".into(), true)));
        // A prompt or a resource read may be asked as a call is; a completion never is.
        assert_eq!(quick(bodies[5].as_bytes()), Some(("prompts/get".into(), true)));
        assert_eq!(quick(bodies[6].as_bytes()), Some(("resources/read".into(), true)));
        assert_eq!(quick(bodies[7].as_bytes()), Some(("completion/complete".into(), false)));
        // A client declaring the tasks extension is read quickly, and may be given a task.
        let declaring = bodies
            .iter()
            .find(|b| b.contains(r#""io.modelcontextprotocol/tasks":{}"#))
            .unwrap();
        assert_eq!(quick(declaring.as_bytes()), Some(("tools/call".into(), true)));
    }
}
