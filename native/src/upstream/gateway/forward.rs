//! A request's item used at its upstream: the core's `Forward` effect performed in the
//! session's own upstream session, what the upstream asks meanwhile relayed to the caller, one
//! deadline for the whole exchange, and `tasks/list` gathered from every upstream.

use std::time::Duration;

use mcp_sieve::http;
use mcp_sieve::upstream;
use mcp_sieve::Error;
use serde_json::Value;

use super::Gateway;
use crate::platform::now_ms;
use crate::relay::{Downstream, Relaying};
use crate::sessions::{WriteBack, MAX_RUNS};

impl Gateway {
    /// Performs the core's `Forward` effect of `answer` at the upstream that serves the item (in
    /// the session's own session there, remembered in `store`) and completes the answer with
    /// the upstream's reply, passed through; what the upstream asks or tells the caller
    /// meanwhile is relayed to `down` (see `relay`). A failure names the upstream.
    pub(crate) async fn finish(
        &self,
        answer: http::Response,
        sessions: &impl WriteBack,
        down: &dyn Downstream,
    ) -> http::Response {
        let Some(mut f) = answer.forward.clone() else {
            return answer;
        };
        let gather = self.state().gather(&f);
        if let Some(jobs) = gather {
            return self.finish_gather(answer, jobs, sessions).await;
        }
        let (relaying, params) = Relaying::new(&f, down);
        f.params = params;
        // A 2026-07-28 client's answers to an upstream's questions, back in the upstream's terms.
        if let Err(e) = upstream::unwrap_input(&mut f, &self.0.secret, now_ms()) {
            return http::complete(answer, Ok(&upstream::refusal(&Value::Null, &e)), &[]);
        }
        let forward = self.state().forward(&f);
        let (member, mut conv, exchange) = match forward {
            Ok(x) => x,
            Err(e) => return http::complete(answer, Err(&e), &[]),
        };
        let relaying = tokio::sync::Mutex::new(relaying);
        let began = conv.session_id().map(str::to_string);
        // A session's own upstream session: its standalone stream is read for it (`standalone`).
        let listener = f.session.clone().filter(|_| !f.stateless);
        // A 2026-07-28 upstream's questions go to the caller (`upstream::drive_rounds`).
        let send = |p| {
            let relaying = &relaying;
            let opens = listener.clone().zip(upstream::opens_stream(&p));
            async move {
                let answer = self.post(member, p, Some(&mut *relaying.lock().await)).await;
                if let (Some((session, headers)), Ok(a)) = (opens, &answer) {
                    if (200..300).contains(&a.status) {
                        self.open_stream(member, headers, session).await;
                    }
                }
                answer
            }
        };
        let ask = |q| {
            let relaying = &relaying;
            async move { relaying.lock().await.handle(q).await }
        };
        // A 2025-11-25 tasks/result waiting for a task at an upstream without one sleeps here.
        let wait = |ms| tokio::time::sleep(Duration::from_millis(ms));
        let signer = Some((&self.0.secret, now_ms()));
        // One deadline for the whole exchange, from its start (not per message, per frame or
        // per relayed question): the upstream's `limits.callTimeoutSeconds`. When it passes (or
        // the caller goes away: the task running this is dropped), the exchange is dropped, and
        // with it the upstream request.
        let call_ms = self.limits(member).call_ms;
        let rounds = upstream::drive_rounds(&f, &mut conv, exchange, send, ask, wait, signer);
        let reply = tokio::time::timeout(Duration::from_millis(call_ms), rounds)
            .await
            .unwrap_or_else(|_| Err(crate::error::late(&f.method, call_ms)));
        // Notifications the relay took as they came are not passed on again with the result.
        let relaying = relaying.into_inner();
        let reply = reply.map(|mut r| {
            r.notifications.retain(|n| !relaying.relay().relays(n));
            r
        });
        let reply = {
            let mut state = self.state();
            state.note_changes(member, &mut conv);
            if matches!(reply, Err(Error::Upstream(_))) {
                state.note_unreachable(member);
            }
            match (reply, state.upstream_at(member)) {
                (Err(e), Some(up)) => Err(upstream::named(up, e)),
                (r, _) => r,
            }
        };
        // An upstream that needs a person to sign in, for a client that declared URL-mode
        // elicitation: the sign-in URL (`-32042`) in place of `mcp-sieve login NAME`.
        let reply = match reply {
            Err(e) if f.url_elicitation => Err(self.sign_in_instead(member, f.session.as_deref(), e).await),
            r => r,
        };
        if f.session.is_none() {
            // A stateless request's upstream session: kept when shared, else closed now.
            let closing = self.state().stateless_done(member, &f, began.as_deref(), &conv.link());
            if let Some(headers) = closing {
                let me = self.clone();
                tokio::spawn(async move { me.close_all(vec![(member, headers)]).await });
            }
        }
        // The session's record of the forward is written like a request's (see `sessions`).
        sessions
            .write_back(|store| upstream::forwarded(answer.clone(), &conv, reply.clone(), store, now_ms()))
            .unwrap_or_else(|| {
                tracing::warn!("a forwarded answer was not recorded: its session changed under it {MAX_RUNS} times");
                http::failed()
            })
    }

    /// `tasks/list`: the whole list of each upstream running the session's tasks (one after
    /// another), merged, filtered and paged by the core (`upstream::gathered`).
    async fn finish_gather(
        &self,
        answer: http::Response,
        jobs: Vec<(usize, upstream::Conversation, upstream::TaskList)>,
        sessions: &impl WriteBack,
    ) -> http::Response {
        let mut done = Vec::new();
        for (member, mut conv, mut tasks) in jobs {
            let lists = upstream::drive(&mut conv, &mut tasks, |p| self.post(member, p, None)).await;
            self.state().note_changes(member, &mut conv);
            done.push((member, conv, lists));
        }
        let Some(server) = self.state().server() else {
            return http::complete(answer, Err(&Error::Upstream("no upstream answered yet".into())), &[]);
        };
        sessions
            .write_back(|store| upstream::gathered(&server, answer.clone(), done.clone(), store, now_ms()))
            .unwrap_or_else(|| {
                tracing::warn!("a task list was not recorded: its session changed under it {MAX_RUNS} times");
                http::failed()
            })
    }
}
