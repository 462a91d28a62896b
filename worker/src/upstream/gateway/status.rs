//! The operator's view of each upstream (`GET /mcp-sieve/upstreams`): the core's status after
//! the refresh a request would run, with how each upstream is signed in to.

use mcp_sieve::http;
use mcp_sieve::protocol::Server;
use mcp_sieve::upstream;

use super::auth::{signing, Signer};
use super::refresh::serving_for;
use super::with;
use crate::oauth::sign_in;
use crate::platform::now_ms;
use crate::telemetry::log;

/// `GET /mcp-sieve/upstreams`: each upstream's state as this isolate knows it, after the refresh
/// a request of `principal` would run now (an isolate that served nothing yet fetches the lists
/// first), with how it is signed in to (`auth`; where a principal signs in, `signIn`; an
/// upstream each principal signs in to that nobody signed in has listed yet is `needs-login`);
/// 404 when the Worker fronts no upstream.
pub async fn status(local: &Server, method: &str, principal: Option<&str>) -> http::Response {
    if method == "GET" {
        if let Err(e) = serving_for(local, principal).await {
            log::error(&e);
        }
    }
    let mut status = with(local, |g| g.status(now_ms()));
    if let Some(serde_json::Value::Array(ups)) = status.as_mut().and_then(|s| s.get_mut("upstreams")) {
        for (member, up) in ups.iter_mut().enumerate() {
            match signing(member) {
                Some((Signer::Person(name), _)) => {
                    up["auth"] = "oauth".into();
                    up["signIn"] = sign_in::start_url(&name).into();
                    // Nobody signed in has listed it yet (a refresh for nobody, or for someone
                    // who has not signed in either, leaves it due): a sign-in is what it needs.
                    if up["state"] == "starting" {
                        up["state"] = "needs-login".into();
                        up["error"] = sign_in::sign_in_error(&name, "nobody signed in has listed it yet")
                            .to_string()
                            .into();
                    }
                }
                Some((Signer::Machine(..), _)) => {
                    up["auth"] = "oauth".into();
                    up["grant"] = "client_credentials".into();
                }
                None => {}
            }
        }
    }
    upstream::status_response(status, method)
}
