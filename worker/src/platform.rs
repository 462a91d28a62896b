//! The platform's clock and randomness, and a fetched answer's body read within a bound, for
//! every part of the Worker (a leaf: it imports no other file of the Worker).

pub mod heap;

use wasm_bindgen::JsCast;

/// Now, ms since the epoch (`Date.now()`: no `Date` object per reading).
pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

/// A random id from the platform's `crypto.randomUUID()`.
pub fn fresh_id() -> String {
    let global = js_sys::global();
    js_sys::Reflect::get(&global, &"crypto".into())
        .and_then(|c| {
            let f: js_sys::Function = js_sys::Reflect::get(&c, &"randomUUID".into())?.dyn_into()?;
            f.call0(&c)
        })
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| format!("{:x}", (js_sys::Math::random() * 1e16) as u64))
}

/// The body of `resp` (none: empty), read as it streams in and given up past `max` bytes
/// (`Ok(None)`): a server on the other end cannot fill the isolate's memory. `Err` is the
/// platform's, saying why it could not be read.
pub async fn read_capped(resp: &mut worker::Response, max: usize) -> worker::Result<Option<Vec<u8>>> {
    use futures_util::StreamExt;
    let mut body = match resp.body() {
        worker::ResponseBody::Empty => return Ok(Some(Vec::new())),
        worker::ResponseBody::Body(b) if b.len() > max => return Ok(None),
        worker::ResponseBody::Body(b) => return Ok(Some(b.clone())),
        worker::ResponseBody::Stream(_) => resp.stream()?,
    };
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        if bytes.len() + chunk.len() > max {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}
