//! Where the upstreams' tokens are kept: the OS keychain when one works — the macOS Keychain,
//! the Windows Credential Manager, the Linux kernel's key retention service (keyutils: no D-Bus,
//! works on a headless machine; it lives in memory and does not survive a reboot) — else a file
//! only its owner may read (0600, in a 0700 folder). Chosen once per process: the keychain is
//! tried with a probe entry; `MCP_SIEVE_TOKEN_STORE=file` (or `keychain`) forces one.
//!
//! The crates are the `keyring` project's own (`keyring-core` and its platform stores; the
//! all-in-one `keyring` 4 crate would bring D-Bus's Secret Service on Linux, which a headless
//! machine does not have). One keychain entry holds the whole store's text, under the service
//! `mcp-sieve` and the file's path as the account, so two configurations never share tokens.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use keyring_core::CredentialStore;

use mcp_sieve::Error;

/// The keychain's service name.
const SERVICE: &str = "mcp-sieve";

/// Where tokens go in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The OS keychain (its name).
    Keychain(&'static str),
    /// The 0600 file (`forced`: by `MCP_SIEVE_TOKEN_STORE=file`, else no keychain works).
    File { forced: bool },
}

static BACKEND: OnceLock<Backend> = OnceLock::new();

/// The backend of this process (chosen on first use).
pub fn backend() -> Backend {
    *BACKEND.get_or_init(|| {
        let wanted = std::env::var("MCP_SIEVE_TOKEN_STORE").unwrap_or_default();
        if wanted.eq_ignore_ascii_case("file") {
            return Backend::File { forced: true };
        }
        match keychain() {
            Ok(name) => Backend::Keychain(name),
            Err(why) => {
                if wanted.eq_ignore_ascii_case("keychain") {
                    tracing::warn!(
                        "MCP_SIEVE_TOKEN_STORE=keychain, but no keychain works here ({why}): tokens go in the file"
                    );
                } else {
                    tracing::debug!("no OS keychain works here ({why}): tokens go in the file");
                }
                Backend::File { forced: false }
            }
        }
    })
}

/// Where tokens are kept, said to the user: the keychain, or the file at `path`.
pub fn describe(path: &Path) -> String {
    match backend() {
        Backend::Keychain(name) => format!("the OS keychain ({name})"),
        Backend::File { forced } => format!(
            "{} (a file only its owner reads; {})",
            path.display(),
            if forced {
                "MCP_SIEVE_TOKEN_STORE=file"
            } else {
                "no OS keychain works here"
            }
        ),
    }
}

/// Why no OS keychain is used (said in the log; tokens then go in the file).
#[derive(Debug, thiserror::Error)]
enum KeychainError {
    /// No session keyring could be had or made (Linux).
    #[cfg(target_os = "linux")]
    #[error("no session keyring: {0:?}")]
    SessionKeyring(linux_keyutils::KeyError),
    /// The platform's store or the probe entry failed.
    #[error(transparent)]
    Store(#[from] keyring_core::Error),
    /// The probe entry was written but read back other than written.
    #[error("a probe entry read back differently")]
    ProbeDiffers,
    /// No keychain crate for this OS.
    #[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
    #[error("no keychain is supported on this platform")]
    Unsupported,
}

/// Installs the platform's keychain as keyring-core's store and checks that an entry can be
/// written, read and deleted; its name.
fn keychain() -> Result<&'static str, KeychainError> {
    let (store, name) = platform_store()?;
    keyring_core::set_default_store(store);
    let probe = keyring_core::Entry::new(SERVICE, "probe")?;
    probe.set_password("probe")?;
    let read = probe.get_password()?;
    let _ = probe.delete_credential();
    if read != "probe" {
        return Err(KeychainError::ProbeDiffers);
    }
    Ok(name)
}

#[cfg(target_os = "linux")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), KeychainError> {
    // A process started outside a login session (a service, a container) has no session keyring
    // of its own; the store's reads and writes go through one, so it is made here. The tokens
    // themselves are linked into the user's persistent keyring, which the next process finds.
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    KeyRing::from_special_id(KeyRingIdentifier::Session, true).map_err(KeychainError::SessionKeyring)?;
    let s: Arc<CredentialStore> = linux_keyutils_keyring_store::Store::new()?;
    Ok((s, "the Linux kernel keyring, keyutils"))
}

#[cfg(target_os = "macos")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), KeychainError> {
    let s: Arc<CredentialStore> = apple_native_keyring_store::keychain::Store::new()?;
    Ok((s, "the macOS Keychain"))
}

#[cfg(target_os = "windows")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), KeychainError> {
    let s: Arc<CredentialStore> = windows_native_keyring_store::Store::new()?;
    Ok((s, "the Windows Credential Manager"))
}

#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "windows")))]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), KeychainError> {
    Err(KeychainError::Unsupported)
}

/// The keychain entry of the store at `path`.
fn entry(path: &Path) -> Result<keyring_core::Entry, Error> {
    keyring_core::Entry::new(SERVICE, &path.display().to_string())
        .map_err(|e| Error::Config(format!("the OS keychain refused an entry: {e}")))
}

/// The store's text (`None`: nothing kept yet). In the keychain, a file left from before is read
/// when the keychain holds nothing (it moves there on the next write).
pub fn read(path: &Path) -> Result<Option<String>, Error> {
    if let Backend::Keychain(_) = backend() {
        match entry(path)?.get_password() {
            Ok(text) => return Ok(Some(text)),
            Err(keyring_core::Error::NoEntry) => {}
            Err(e) => {
                return Err(Error::Config(format!(
                    "cannot read the tokens from the OS keychain: {e}"
                )))
            }
        }
    }
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Config(format!(
            "cannot read the token store {}: {e}",
            path.display()
        ))),
    }
}

/// Keeps `text` as the store's (a file left from before is deleted once the keychain has it).
pub fn write(path: &Path, text: &str) -> Result<(), Error> {
    if let Backend::Keychain(_) = backend() {
        entry(path)?
            .set_password(text)
            .map_err(|e| Error::Config(format!("cannot keep the tokens in the OS keychain: {e}")))?;
        if path.exists() {
            let _ = std::fs::remove_file(path);
        }
        return Ok(());
    }
    write_file(path, text)
}

/// Writes `text` to `path`: 0600, in a 0700 folder, replaced whole.
fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    let fail = |e: std::io::Error| Error::Config(format!("cannot write the token store {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
    }
    let tmp = path.with_extension(format!("json.{}", std::process::id()));
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.mode(0o600);
    }
    {
        use std::io::Write;
        let mut f = open.open(&tmp).map_err(fail)?;
        f.write_all(text.as_bytes()).map_err(fail)?;
        f.sync_all().map_err(fail)?;
    }
    std::fs::rename(&tmp, path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("sieve-tokens-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("mcp-sieve").join("tokens.json")
    }

    #[test]
    fn the_file_is_its_owners_only_and_replaced_whole() {
        let path = temp("file");
        write_file(&path, "{\"upstreams\":{}}").unwrap();
        write_file(&path, "{\"upstreams\":{\"a\":1}}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"upstreams\":{\"a\":1}}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            let dir = path.parent().unwrap();
            assert_eq!(std::fs::metadata(dir).unwrap().permissions().mode() & 0o777, 0o700);
        }
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn the_keychain_keeps_the_store_and_takes_over_a_file() {
        if std::env::var("MCP_SIEVE_TOKEN_STORE").is_ok_and(|v| v.eq_ignore_ascii_case("file")) {
            eprintln!("skipped: MCP_SIEVE_TOKEN_STORE=file");
            return;
        }
        let Backend::Keychain(name) = backend() else {
            eprintln!("skipped: no OS keychain works here ({:?})", keychain().err());
            return;
        };
        let path = temp("keychain");
        write_file(&path, "{\"upstreams\":{\"old\":1}}").unwrap();
        // Nothing in the keychain yet: the file left from before is read.
        assert_eq!(
            read(&path).unwrap().as_deref(),
            Some("{\"upstreams\":{\"old\":1}}"),
            "{name}"
        );
        write(&path, "{\"upstreams\":{\"new\":2}}").unwrap();
        assert!(!path.exists(), "the file is gone once {name} has the tokens");
        assert_eq!(read(&path).unwrap().as_deref(), Some("{\"upstreams\":{\"new\":2}}"));
        entry(&path).unwrap().delete_credential().unwrap();
        assert_eq!(read(&path).unwrap(), None);
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }
}
