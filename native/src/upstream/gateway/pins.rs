//! The pin lock file (`mcp-sieve pin`): where it is, and its pins handed to the core at start
//! and again whenever the file changes.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use mcp_sieve::pin::{Mode, Pins};
use mcp_sieve::Error;

use super::Gateway;

impl Gateway {
    /// Reads the lock file when it changed since last read (or `always`) and hands its pins to
    /// the core, which rebuilds the catalog at once when they differ. A missing file is no pins
    /// (said once when pinning is on); a broken one is an error at start and logged later.
    pub(super) fn read_pins(&self, always: bool) -> Result<(), Error> {
        let path = &self.0.lock;
        let seen = std::fs::metadata(path)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        {
            let mut last = self.0.lock_seen.lock().unwrap_or_else(|p| p.into_inner());
            if !always && *last == seen {
                return Ok(());
            }
            *last = seen;
        }
        let mode = self.0.local.catalog().pinning.mode;
        let pins = match std::fs::read_to_string(path) {
            Ok(text) => Pins::parse(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?,
            Err(_) => {
                if mode != Mode::Off {
                    tracing::warn!(
                        "pinning: no lock file at {} yet: every tool is unpinned (write it with `mcp-sieve pin`)",
                        path.display()
                    );
                }
                Pins::default()
            }
        };
        let changed = self.state().set_pins(self.0.local.catalog(), pins)?;
        if let Some(r) = changed {
            tracing::info!("pinning: read {}", path.display());
            for line in &r.log {
                tracing::info!("{line}");
            }
        }
        Ok(())
    }
}

/// The lock file of `pinning`: its `lock` (relative to `folder`, the document's), else
/// [`mcp_sieve::pin::DEFAULT_LOCK`] in `folder`.
pub fn lock_path(pinning: &mcp_sieve::pin::Pinning, folder: &Path) -> PathBuf {
    let name = pinning.lock.as_deref().unwrap_or(mcp_sieve::pin::DEFAULT_LOCK);
    folder.join(crate::platform::expand_home(Path::new(name)))
}
