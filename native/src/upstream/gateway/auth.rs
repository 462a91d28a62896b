//! An upstream's OAuth token on the requests sent to it (`crate::oauth::Auth`): which upstreams
//! need a person to sign in, the header a request that does not wait for token work carries,
//! and a POST signed in — refreshed, retried once on 401, stepped up on 403.

use std::sync::Arc;

use mcp_sieve::upstream::{HttpAnswer, Post};
use mcp_sieve::Error;

use super::{method_of, Gateway};
use crate::relay::Relaying;

impl Gateway {
    /// The upstreams that need a person to sign in now (`needs-login`): member, name.
    pub(crate) fn needing_sign_in(&self) -> Vec<(usize, String)> {
        let needs = |a: &Option<Arc<crate::oauth::Auth>>| a.as_ref().is_some_and(|a| a.needs_login());
        let members = self.0.auth.iter().enumerate().filter(|(_, a)| needs(a));
        members.map(|(m, _)| (m, self.0.names[m].clone())).collect()
    }

    /// The `Authorization` header last sent to upstream `member` (its OAuth token), for
    /// requests that do not wait for token work (DELETE, GET streams).
    pub(crate) fn current_authorization(&self, member: usize) -> Option<String> {
        self.0.auth.get(member)?.as_ref()?.current()
    }

    /// `post` to `url` with the upstream's OAuth token when it signs in (`auth`): refreshed
    /// when it expires soon; on 401 refreshed (or, for an upstream without `auth` answering
    /// with a Bearer challenge, looked up) and sent once more; on 403 `insufficient_scope`
    /// stepped up (client_credentials) or the upstream needs a sign-in.
    pub(super) async fn post_signed_in(
        &self,
        auth: Option<&Arc<crate::oauth::Auth>>,
        url: &str,
        post: Post,
        mut relaying: Option<&mut Relaying<'_>>,
        max: usize,
    ) -> Result<HttpAnswer, Error> {
        let Some(auth) = auth else {
            return self.post_http(url, post, relaying, max).await;
        };
        let mut again = false;
        // What the upstream said when it refused (said with the sign-in's error).
        let mut refusal: Option<String> = None;
        let said = |refusal: &Option<String>, e: Error| match (refusal, e) {
            (Some(r), Error::Upstream(m)) => Error::Upstream(format!("{r}: {m}")),
            (_, e) => e,
        };
        loop {
            let bearer = match auth.bearer(&self.0.oauth_http, false).await {
                Ok(b) => b,
                Err(e) => return Err(said(&refusal, e)),
            };
            let mut p = post.clone();
            if let Some(b) = &bearer {
                p.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                p.headers.push(("Authorization".into(), b.clone()));
            }
            let (answer, www) = self.post_http_with(url, p, relaying.as_deref_mut(), max).await?;
            let refused = answer.status == 401 || (answer.status == 403 && bearer.is_some());
            if !refused {
                return Ok(answer);
            }
            let reason = if answer.status == 401 {
                "Unauthorized"
            } else {
                "Forbidden"
            };
            let error = www
                .as_deref()
                .and_then(mcp_sieve::upstream::oauth::parse_challenge)
                .and_then(|c| c.error)
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            refusal = Some(format!(
                "it refused {} with HTTP {} {reason}{error}",
                method_of(&post.body),
                answer.status
            ));
            if again {
                return Err(said(&refusal, auth.refused_again().await));
            }
            match auth
                .refused(&self.0.oauth_http, answer.status, www.as_deref(), bearer.as_deref())
                .await
            {
                // Once more after a refresh; a request sent without a token (the upstream just
                // turned out to want one) does not spend that: its stored token may be refused too.
                crate::oauth::Refused::Retry => again = bearer.is_some(),
                // Not an OAuth upstream (no Bearer challenge): its own answer, as before.
                crate::oauth::Refused::Fail(_) if !auth.active() => return Ok(answer),
                crate::oauth::Refused::Fail(e) if answer.status == 401 || auth.needs_login() => {
                    return Err(said(&refusal, e))
                }
                // A 403 that is no step-up: the upstream's own answer.
                crate::oauth::Refused::Fail(_) => return Ok(answer),
            }
        }
    }
}
