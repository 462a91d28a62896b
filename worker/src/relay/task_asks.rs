//! A stateless 2026-07-28 client's task at a session-era upstream that waits for input, in the
//! Worker (the core's `upstream::task_asks` decides): the principal's holder object
//! (`tasks:@<principal>`), which runs that client's `tasks/get` and `tasks/update`, opens the
//! task's `tasks/result` and keeps the exchange running with `waitUntil` (as `relay` keeps a
//! stateless call's); its question is taken as a stateless call's is (`relay::Relaying`: at
//! most `ask::ANSWER_WAIT_MS` per question, `ask::MAX_ASKED` questions) and waits in the
//! object's [`Asking`], by principal and task, for the client's `tasks/update`; its `tasks/get`
//! shows the question meanwhile. The exchange is dropped when it ends.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use mcp_sieve::http::{self, SessionStore};
use mcp_sieve::upstream::{self, Update};
use serde_json::Value;
use worker::Delay;

use crate::config::Loaded;
use crate::platform::now_ms;
use crate::relay::{next, Out, Queue, Slot};
use crate::serve::ledger;
use crate::serve::shell;
use crate::upstream::gateway;

/// Longest a `tasks/get` waits for the question of the `tasks/result` it opened (the upstream
/// sends what it queued at once) or of one that goes on after an answer.
const QUESTION_WAIT_MS: i64 = 5_000;
/// How often that wait looks.
const LOOK_MS: u64 = 20;

/// One task's `tasks/result` exchange.
#[derive(Default)]
struct Parked {
    /// The question asked now: its key, the relay's `input_required` answer, where its answer goes.
    asked: Option<(String, String, Slot)>,
    /// The keys answered already (a repeated answer is acknowledged, not refused).
    answered: Vec<String>,
}

/// What a parked exchange shows: the question asked now (key, `input_required` text), if any,
/// and the keys answered already.
#[derive(Default)]
struct Seen {
    asked: Option<(String, String)>,
    answered: Vec<String>,
}

/// The exchanges of tasks waiting for input in one holder object, by `upstream::parked_name`.
#[derive(Clone, Default)]
pub struct Asking(Rc<RefCell<HashMap<String, Parked>>>);

impl Asking {
    /// What the exchange parked under `name` shows now; `None` when no exchange runs.
    fn seen(&self, name: &str) -> Option<Seen> {
        let all = self.0.borrow();
        let p = all.get(name)?;
        let asked = p.asked.as_ref().map(|(k, t, _)| (k.clone(), t.clone()));
        Some(Seen {
            asked,
            answered: p.answered.clone(),
        })
    }

    /// Keeps what the exchange reporting to `out` asks under `name`, until it ends.
    async fn pump(self, name: String, out: Queue) {
        loop {
            match next(&out).await {
                Out::InputRequired { key, text, answer } => {
                    if let Some(p) = self.0.borrow_mut().get_mut(&name) {
                        p.asked = Some((key, text, answer));
                    }
                }
                Out::Event(_) => {}
                Out::Done(_) => break,
            }
        }
        self.0.borrow_mut().remove(&name);
    }
}

/// Performs a stateless client's `tasks/get` or `tasks/update` (`answer`'s forward, parked
/// under `name`) in its holder object: an update of a question parked here answers it, a
/// `tasks/get` of a task whose upstream keeps its question on the `tasks/result` stream opens
/// that exchange (kept alive by `state`'s `waitUntil`) and shows the question. `store`: the
/// holder's (`stores` makes another for the exchange).
pub async fn respond(
    answer: http::Response,
    loaded: Loaded,
    name: String,
    asking: &Asking,
    state: &worker::State,
    store: &mut dyn SessionStore,
    stores: impl FnOnce() -> Box<dyn SessionStore>,
) -> worker::Result<worker::Response> {
    let server = match &loaded.server {
        Ok(local) => match gateway::serving(local).await {
            Ok(Some(s)) => s,
            Ok(None) => return shell::respond(answer),
            Err(e) => return shell::respond(upstream::unavailable(&e)),
        },
        Err(e) => return shell::respond(http::misconfigured(e)),
    };
    let Some(f) = answer.forward.clone() else {
        return shell::respond(answer);
    };
    let modern = gateway::with(&server, |g| g.speaks_modern(f.upstream)).unwrap_or(false);
    let Seen { asked, answered } = asking.seen(&name).unwrap_or_default();
    let key = asked.map(|(k, _)| k);
    let reply = match upstream::update(&f, modern, key.as_deref(), &answered) {
        Update::Forward => None,
        Update::Answer(response) => {
            if let Some(p) = asking.0.borrow_mut().get_mut(&name) {
                if let Some((k, _, slot)) = p.asked.take() {
                    *slot.borrow_mut() = Some(response);
                    p.answered.push(k);
                }
            }
            Some(upstream::acknowledgement())
        }
        Update::Acknowledge => Some(upstream::acknowledgement()),
        Update::Refused(e) => Some(upstream::refusal(&Value::Null, &e)),
    };
    if let Some(reply) = reply {
        return shell::respond(http::complete(answer, Ok(&reply), &[]));
    }
    let mut done = gateway::finish(answer, &server, store, None).await;
    // What the answer taught the server's task budget, told before it leaves (`ledger`).
    ledger::flush(&server).await;
    if upstream::waits_on_result(&f, modern, &done.body) {
        if let Some(text) = question(&f, &name, asking, state, loaded, store, stores).await {
            done.body = upstream::with_question(&done.body, &text);
        }
    }
    shell::respond(done)
}

/// The question of the exchange parked under `name` (its `input_required` text), opening the
/// `tasks/result` of `f`'s task when none runs; waits for it at most [`QUESTION_WAIT_MS`].
async fn question(
    f: &mcp_sieve::protocol::Forward,
    name: &str,
    asking: &Asking,
    state: &worker::State,
    loaded: Loaded,
    store: &mut dyn SessionStore,
    stores: impl FnOnce() -> Box<dyn SessionStore>,
) -> Option<String> {
    let runs = asking.0.borrow().contains_key(name);
    if !runs {
        let result = upstream::result_forward(f, store)?;
        asking.0.borrow_mut().insert(name.to_string(), Parked::default());
        let out: Queue = Rc::default();
        let opened = http::Response {
            forward: Some(result),
            ..Default::default()
        };
        let exchange = crate::relay::exchange(opened, loaded, stores(), out.clone(), crate::platform::fresh_id());
        let pump = asking.clone().pump(name.to_string(), out);
        state.wait_until(async move {
            futures_util::future::join(exchange, pump).await;
        });
    }
    let started = now_ms();
    loop {
        match asking.seen(name) {
            Some(Seen {
                asked: Some((_, text)), ..
            }) => return Some(text),
            Some(_) if now_ms() - started < QUESTION_WAIT_MS => Delay::from(Duration::from_millis(LOOK_MS)).await,
            _ => return None,
        }
    }
}
