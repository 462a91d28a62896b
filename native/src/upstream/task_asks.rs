//! A stateless 2026-07-28 client's task at a session-era upstream that waits for input (the
//! core's `upstream::task_asks` decides): the task's `tasks/result` exchange runs on its own, its
//! question taken by `relay::Parking` as a stateless call's is (at most `ask::ANSWER_WAIT_MS`
//! per question, `ask::MAX_ASKED` questions), and waits in [`ParkedTasks`], by principal and
//! task, for the client's `tasks/update`; the client's `tasks/get` shows the question
//! meanwhile. Both entry points carry it out the same way ([`take_update`], [`show_question`]):
//! the HTTP server (`serve::relay`, its callers' principals) and `mcp-sieve stdio`
//! (`crate::stdio`, the process's one client). The exchange is dropped when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_sieve::http;
use mcp_sieve::protocol::Forward;
use mcp_sieve::upstream::{self, Update};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::relay::{self, Out, Parking};
use crate::sessions::WriteBack;
use crate::upstream::gateway::Gateway;

/// Longest a `tasks/get` waits for the question of the `tasks/result` it opened (the upstream
/// sends what it queued at once) or of one that goes on after an answer.
const QUESTION_WAIT: Duration = Duration::from_secs(5);
/// How often that wait looks.
const LOOK: Duration = Duration::from_millis(20);

/// The question a parked exchange asks now.
struct Asked {
    key: String,
    /// The relay's `input_required` answer carrying it (`upstream::input_required`).
    text: String,
    answer: oneshot::Sender<Option<Value>>,
}

/// One task's `tasks/result` exchange.
#[derive(Default)]
struct Parked {
    asked: Option<Asked>,
    /// The keys answered already (a repeated answer is acknowledged, not refused).
    answered: Vec<String>,
}

/// What a parked exchange shows: the question asked now (key, `input_required` text), if any,
/// and the keys answered already.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) asked: Option<(String, String)>,
    pub(crate) answered: Vec<String>,
}

/// The exchanges of tasks waiting for input, by `upstream::parked_name` (task and principal).
#[derive(Clone, Default)]
pub(crate) struct ParkedTasks(Arc<Mutex<HashMap<String, Parked>>>);

impl ParkedTasks {
    fn all(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the exchange parked under `name` shows now; `None` when no exchange is.
    pub(crate) fn state(&self, name: &str) -> Option<Seen> {
        let all = self.all();
        let p = all.get(name)?;
        let asked = p
            .asked
            .as_ref()
            .filter(|a| !a.answer.is_closed())
            .map(|a| (a.key.clone(), a.text.clone()));
        Some(Seen {
            asked,
            answered: p.answered.clone(),
        })
    }

    /// Hands `response` to the question `key` of the exchange parked under `name`.
    pub(crate) fn answer(&self, name: &str, key: &str, response: Value) {
        let mut all = self.all();
        let Some(p) = all.get_mut(name) else {
            return;
        };
        if p.asked.as_ref().is_some_and(|a| a.key == key) {
            if let Some(a) = p.asked.take() {
                let _ = a.answer.send(Some(response));
            }
            p.answered.push(key.to_string());
        }
    }

    /// Keeps what the exchange reporting to `rx` asks under `name`, until it ends.
    async fn pump(self, name: String, mut rx: mpsc::UnboundedReceiver<Out>) {
        while let Some(out) = rx.recv().await {
            match out {
                Out::InputRequired { key, text, answer } => {
                    if let Some(p) = self.all().get_mut(&name) {
                        p.asked = Some(Asked { key, text, answer });
                    }
                }
                Out::Event(_) => {}
                Out::Done(_) => break,
            }
        }
        self.all().remove(&name);
    }

    /// The question of the exchange under `name` (its `input_required` text), opening it with
    /// `open` when none runs; waits for it at most [`QUESTION_WAIT`].
    pub(crate) async fn question(
        &self,
        name: &str,
        open: impl FnOnce() -> Option<mpsc::UnboundedReceiver<Out>>,
    ) -> Option<String> {
        let opened = {
            let mut all = self.all();
            match all.contains_key(name) {
                true => None,
                false => {
                    all.insert(name.to_string(), Parked::default());
                    Some(())
                }
            }
        };
        if opened.is_some() {
            match open() {
                Some(rx) => {
                    tokio::spawn(self.clone().pump(name.to_string(), rx));
                }
                None => {
                    self.all().remove(name);
                    return None;
                }
            }
        }
        let started = tokio::time::Instant::now();
        loop {
            match self.state(name) {
                Some(Seen {
                    asked: Some((_, text)), ..
                }) => return Some(text),
                Some(_) if started.elapsed() < QUESTION_WAIT => tokio::time::sleep(LOOK).await,
                _ => return None,
            }
        }
    }
}

/// A shell that parks tasks' exchanges: its sessions (where the principal's task holder is) and
/// its [`ParkedTasks`].
pub(crate) trait Shell: Send + Sync + 'static {
    /// How its sessions are read and written back.
    type Sessions: WriteBack + Send + Sync;
    /// Its sessions.
    fn sessions(&self) -> &Self::Sessions;
    /// Its tasks' parked exchanges.
    fn asking(&self) -> &ParkedTasks;
}

/// A stateless client's `tasks/update` (`answer` forwards it) of a task whose exchange is parked
/// in `shell` (or of a task at a session-era upstream with none): answered here, or `None` to be
/// forwarded as any other.
pub(crate) fn take_update(gateway: &Gateway, shell: &impl Shell, answer: &http::Response) -> Option<http::Response> {
    let f = answer.forward.as_ref()?;
    let name = upstream::parked_name(f)?;
    let modern = gateway.state().speaks_modern(f.upstream);
    let Seen { asked, answered } = shell.asking().state(&name).unwrap_or_default();
    let key = asked.map(|(k, _)| k);
    let reply = match upstream::update(f, modern, key.as_deref(), &answered) {
        Update::Forward => return None,
        Update::Answer(response) => {
            shell
                .asking()
                .answer(&name, key.as_deref().unwrap_or_default(), response);
            upstream::acknowledgement()
        }
        Update::Acknowledge => upstream::acknowledgement(),
        Update::Refused(e) => upstream::refusal(&Value::Null, &e),
    };
    Some(http::complete(answer.clone(), Ok(&reply), &[]))
}

/// `done`, the answer to a stateless client's `tasks/get` (`f`), with the question of its task
/// inline when the session-era upstream keeps it on the task's `tasks/result` stream: that
/// exchange is opened (once per principal and task) and parked in `shell`.
pub(crate) async fn show_question<S: Shell>(
    gateway: &Gateway,
    shell: &Arc<S>,
    f: &Forward,
    mut done: http::Response,
) -> http::Response {
    let Some(name) = upstream::parked_name(f) else {
        return done;
    };
    let modern = gateway.state().speaks_modern(f.upstream);
    if !upstream::waits_on_result(f, modern, &done.body) {
        return done;
    }
    let open = || {
        let result = shell
            .sessions()
            .write_back(|store| upstream::result_forward(f, store))
            .flatten()?;
        let (g, me) = (gateway.clone(), shell.clone());
        Some(relay::spawn(move |out| async move {
            let opened = http::Response {
                forward: Some(result),
                ..Default::default()
            };
            g.finish(opened, me.sessions(), &Parking(out)).await
        }))
    };
    if let Some(text) = shell.asking().question(&name, open).await {
        done.body = upstream::with_question(&done.body, &text);
    }
    done
}
