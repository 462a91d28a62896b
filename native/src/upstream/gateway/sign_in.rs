//! A client asked to sign in to an upstream that needs a person's sign-in: the URL-mode
//! elicitation (MCP 2025-11-25 `-32042`) in place of `mcp-sieve login NAME`, and the upstream
//! listed again once the sign-in is done.

use mcp_sieve::upstream;
use mcp_sieve::Error;

use super::Gateway;
use crate::platform::now_ms;

impl Gateway {
    /// The sign-in URL of upstream `member` for a client (of downstream `session`) that declared
    /// URL-mode elicitation, and its elicitation id (`sign_in::asked_of_client`). When the
    /// sign-in is done, the upstream is listed again at once (`list_changed` when that changed
    /// the lists), then each session handed it hears `notifications/elicitation/complete`.
    pub(crate) async fn sign_in_url(&self, member: usize, session: Option<&str>) -> Result<(String, String), Error> {
        let auth = self.0.auth.get(member).and_then(Option::as_ref);
        let auth = auth.ok_or_else(|| Error::Internal(format!("upstream number {member} does not sign in")))?;
        let me = self.clone();
        crate::oauth::sign_in::asked_of_client(auth, session, move |id, sessions| async move {
            me.state().due_now(member);
            let jobs = me.state().retries(now_ms());
            if !jobs.is_empty() {
                let _ = me.run(jobs).await;
            }
            let _ = me.serving(&me.0.local).await;
            if let Some(clients) = me.clients() {
                for s in &sessions {
                    clients.push(s, upstream::oauth::elicitation_complete(&id));
                }
            }
        })
        .await
    }

    /// `e`, the error of a request of downstream `session` that needed upstream `member`, or,
    /// when that upstream needs a person to sign in, the URL-mode elicitation of its sign-in
    /// (MCP 2025-11-25 `-32042`).
    pub(super) async fn sign_in_instead(&self, member: usize, session: Option<&str>, e: Error) -> Error {
        let Some(auth) = self.0.auth.get(member).and_then(Option::as_ref) else {
            return e;
        };
        if !auth.needs_login() {
            return e;
        }
        match self.sign_in_url(member, session).await {
            Ok((id, url)) => upstream::oauth::url_elicitation_required(auth.name(), &id, &url, "it needs your sign-in"),
            Err(why) => {
                tracing::warn!("upstream \"{}\": no sign-in URL for the client: {why}", auth.name());
                e
            }
        }
    }
}
