//! How a serving process ends on a signal: SIGTERM (and, for `serve`, SIGINT) is taken instead
//! of ending the process, which then closes every upstream session it holds
//! ([`Gateway::close_every`], within [`GRACE`]) before it exits.

use std::time::Duration;

use crate::error::ServerError;
use crate::upstream::gateway::Gateway;
use mcp_sieve::protocol::Session;

/// Longest the upstream sessions' closing (and, over stdio, answers under way) may take at the end.
pub(crate) const GRACE: Duration = Duration::from_secs(5);

/// The signals taken (never any on a platform without them).
pub(crate) struct Terminated {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Terminated {
    /// Resolves when one of the signals arrives.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        {
            let int = async {
                match &mut self.int {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            };
            let got = tokio::select! {
                got = self.term.recv() => got,
                got = int => got,
            };
            if got.is_some() {
                return;
            }
        }
        std::future::pending::<()>().await
    }
}

/// Takes SIGTERM, and SIGINT too when `interrupt` (Ctrl-C).
pub(crate) fn terminated(interrupt: bool) -> Result<Terminated, ServerError> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).map_err(|e| ServerError::Io("cannot take SIGTERM".into(), e))?;
        let int = match interrupt {
            true => Some(signal(SignalKind::interrupt()).map_err(|e| ServerError::Io("cannot take SIGINT".into(), e))?),
            false => None,
        };
        Ok(Terminated { term, int })
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt;
        Ok(Terminated {})
    }
}

/// Closes every upstream session the process holds as it ends: those of the downstream sessions
/// `ended` and the gateway's own, within [`GRACE`].
pub(crate) async fn close(gateway: &Gateway, ended: &[Session]) {
    let _ = tokio::time::timeout(GRACE, gateway.close_every(ended)).await;
}
