//! Where the upstreams' tokens are kept: the OS keychain when one works — the macOS Keychain,
//! the Windows Credential Manager, the Linux kernel's key retention service (keyutils: no D-Bus,
//! works on a headless machine; it lives in memory and does not survive a reboot) — else a file
//! only its owner may read (0600, in a 0700 folder). Chosen once per process: the keychain is
//! tried with a probe entry; `MCP_SIEVE_TOKEN_STORE=file` (or `keychain`) forces one.
//!
//! The crates are the `keyring` project's own (`keyring-core` and its platform stores; the
//! all-in-one `keyring` 4 crate would bring D-Bus's Secret Service on Linux, which a headless
//! machine does not have). One keychain entry holds the whole store's text, under the service
//! `mcp-sieve` and the file's path as the account, so two configurations never share tokens;
//! a text longer than one entry holds (the Windows Credential Manager keeps 2,560 bytes a
//! credential, UTF-16: one JWT and its refresh token pass it) is kept in pieces, see [`PIECE`].

use std::path::Path;
use std::sync::{Arc, OnceLock};

use keyring_core::CredentialStore;

use mcp_sieve::Error;

/// The keychain's service name.
const SERVICE: &str = "mcp-sieve";

/// Longest text (UTF-8 bytes, so at most as many UTF-16 units) one keychain entry is given. The
/// Windows Credential Manager refuses a credential over 2,560 bytes (`CRED_MAX_CREDENTIAL_BLOB_SIZE`,
/// the password as UTF-16): found by `login` under Wine, whose store keeps the same limit.
/// keyutils' user keys hold 32,767 bytes. A longer text is cut into entries of this size (no
/// crate of the `keyring` project splits a secret; see ARCHITECTURE.md).
#[cfg(windows)]
const PIECE: usize = 1_200;
#[cfg(not(windows))]
const PIECE: usize = 30_000;
/// How the head entry of a store kept in pieces starts (a store's text is JSON, so never so):
/// `mcp-sieve pieces <generation> <count>`; piece `i` is the account `<path> piece <generation>.<i>`.
const PIECES: &str = "mcp-sieve pieces ";

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

/// Gives the calling thread a session keyring where it has none (Linux; elsewhere nothing). A
/// process started outside a login session (a service, a container, CI) has none, and the store's
/// reads and writes go through one. The kernel keeps it per thread: a thread gets its creator's
/// only when it is created, so one that began before another thread made it has none and is
/// refused (`AccessDenied`; the unit tests, each on its own thread, found it). The CLI calls this
/// before any thread starts (`commands::run`), so every thread shares one; each keychain use
/// calls it too. The tokens themselves are linked into the user's persistent keyring, which
/// every session finds.
pub fn join_session_keyring() {
    #[cfg(target_os = "linux")]
    {
        use linux_keyutils::{KeyRing, KeyRingIdentifier};
        let _ = KeyRing::from_special_id(KeyRingIdentifier::Session, true);
    }
}

#[cfg(target_os = "linux")]
fn platform_store() -> Result<(Arc<CredentialStore>, &'static str), KeychainError> {
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
    named(&path.display().to_string())
}

fn named(account: &str) -> Result<keyring_core::Entry, Error> {
    join_session_keyring();
    keyring_core::Entry::new(SERVICE, account)
        .map_err(|e| Error::Config(format!("the OS keychain refused an entry: {e}")))
}

/// The entry of piece `i` of generation `generation` of the store at `path`.
fn piece(path: &Path, generation: u64, i: usize) -> Result<keyring_core::Entry, Error> {
    named(&format!("{} piece {generation}.{i}", path.display()))
}

/// A head entry's generation and count of pieces (`None`: the head holds the text itself).
fn pieces_of(head: &str) -> Option<(u64, usize)> {
    let (generation, count) = head.strip_prefix(PIECES)?.split_once(' ')?;
    Some((generation.parse().ok()?, count.parse().ok()?))
}

/// `text` cut into pieces of at most `size` bytes, on character boundaries.
fn cut(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(size.max(4));
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// The keychain's text of the store at `path` (`None`: none kept), its pieces put together.
fn keychain_read(path: &Path) -> Result<Option<String>, Error> {
    let fail = |e: keyring_core::Error| Error::Config(format!("cannot read the tokens from the OS keychain: {e}"));
    // A piece gone between the head's read and its own: another process wrote a new generation
    // and removed this one; read the new head.
    for _ in 0..3 {
        let head = match entry(path)?.get_password() {
            Ok(head) => head,
            Err(keyring_core::Error::NoEntry) => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
        let Some((generation, count)) = pieces_of(&head) else {
            return Ok(Some(head));
        };
        let mut text = String::new();
        for i in 0..count {
            match piece(path, generation, i)?.get_password() {
                Ok(p) => text.push_str(&p),
                Err(keyring_core::Error::NoEntry) => break,
                Err(e) => return Err(fail(e)),
            }
            if i + 1 == count {
                return Ok(Some(text));
            }
        }
    }
    Err(Error::Config(
        "cannot read the tokens from the OS keychain: its pieces kept changing while they were read".into(),
    ))
}

/// Keeps `text` as the keychain's store at `path`: in the head entry when it fits `size`, else in
/// pieces of a new generation written before the head that names them; the old ones are removed.
fn keychain_write(path: &Path, text: &str, size: usize) -> Result<(), Error> {
    let fail = |e: keyring_core::Error| Error::Config(format!("cannot keep the tokens in the OS keychain: {e}"));
    let head = entry(path)?;
    let before = match head.get_password() {
        Ok(h) => pieces_of(&h),
        Err(_) => None,
    };
    if text.len() <= size {
        head.set_password(text).map_err(fail)?;
    } else {
        let generation = before.map_or(1, |(g, _)| g.wrapping_add(1));
        let parts = cut(text, size);
        for (i, part) in parts.iter().enumerate() {
            piece(path, generation, i)?.set_password(part).map_err(fail)?;
        }
        head.set_password(&format!("{PIECES}{generation} {}", parts.len()))
            .map_err(fail)?;
    }
    if let Some((generation, count)) = before {
        remove_pieces(path, generation, count);
    }
    Ok(())
}

/// Removes the `count` pieces of `generation` of the store at `path` (one already gone is no error).
fn remove_pieces(path: &Path, generation: u64, count: usize) {
    for i in 0..count {
        let _ = piece(path, generation, i).map(|p| p.delete_credential());
    }
}

/// The store's text (`None`: nothing kept yet). In the keychain, a file left from before is read
/// when the keychain holds nothing (it moves there on the next write).
pub fn read(path: &Path) -> Result<Option<String>, Error> {
    if let Backend::Keychain(_) = backend() {
        if let Some(text) = keychain_read(path)? {
            return Ok(Some(text));
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
/// One the keychain refuses (a quota: keyutils gives a user who is not root 20,000 bytes and 200
/// keys) goes in the file, said in the log, and the keychain's copy is removed so the file is read.
pub fn write(path: &Path, text: &str) -> Result<(), Error> {
    match backend() {
        Backend::Keychain(_) => write_or_file(path, text, |p, t| keychain_write(p, t, PIECE)),
        Backend::File { .. } => write_file(path, text),
    }
}

fn write_or_file(
    path: &Path,
    text: &str,
    keychain: impl FnOnce(&Path, &str) -> Result<(), Error>,
) -> Result<(), Error> {
    match keychain(path, text) {
        Ok(()) => {
            if path.exists() {
                let _ = std::fs::remove_file(path);
            }
            Ok(())
        }
        Err(e) => {
            tracing::warn!(
                "{e}; they go in {} instead (a file only its owner reads)",
                path.display()
            );
            forget(path);
            write_file(path, text)
        }
    }
}

/// Removes the keychain's copy of the store at `path`, pieces and head.
pub(crate) fn forget(path: &Path) {
    let Ok(head) = entry(path) else {
        return;
    };
    if let Some((generation, count)) = head.get_password().ok().as_deref().and_then(pieces_of) {
        remove_pieces(path, generation, count);
    }
    let _ = head.delete_credential();
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
    fn a_text_is_cut_on_character_boundaries_into_pieces_no_longer_than_asked() {
        let text = "{\"t\":\"é€😀abc\"}".repeat(40);
        for size in [4, 5, 7, 100, 10_000] {
            let parts = cut(&text, size);
            assert!(parts.iter().all(|p| !p.is_empty() && p.len() <= size), "{size}");
            assert_eq!(parts.concat(), text);
        }
        assert!(cut("", 10).is_empty());
        assert_eq!(pieces_of("mcp-sieve pieces 7 3"), Some((7, 3)));
        assert_eq!(pieces_of("{\"upstreams\":{}}"), None);
    }

    /// The platform's keychain (keyutils on Linux, the Credential Manager under Wine), or `None`.
    fn keychain_here() -> Option<&'static str> {
        if std::env::var("MCP_SIEVE_TOKEN_STORE").is_ok_and(|v| v.eq_ignore_ascii_case("file")) {
            eprintln!("skipped: MCP_SIEVE_TOKEN_STORE=file");
            return None;
        }
        match backend() {
            Backend::Keychain(name) => Some(name),
            Backend::File { .. } => {
                eprintln!("skipped: no OS keychain works here ({:?})", keychain().err());
                None
            }
        }
    }

    #[test]
    fn a_store_longer_than_an_entry_is_kept_in_pieces_and_the_old_ones_removed() {
        let Some(name) = keychain_here() else {
            return;
        };
        let path = temp("pieces");
        let long = |n: u32| format!("{{\"upstreams\":{{\"a\":\"{}\"}}}}", format!("tök{n}-").repeat(300));
        keychain_write(&path, &long(1), 500).unwrap();
        assert_eq!(keychain_read(&path).unwrap(), Some(long(1)), "{name}");
        // A second long text: a new generation, the first's pieces gone.
        keychain_write(&path, &long(2), 500).unwrap();
        assert_eq!(keychain_read(&path).unwrap(), Some(long(2)));
        assert!(matches!(
            piece(&path, 1, 0).unwrap().get_password(),
            Err(keyring_core::Error::NoEntry)
        ));
        // A short one goes in the head itself, and the pieces go.
        keychain_write(&path, "{\"upstreams\":{}}", 500).unwrap();
        assert_eq!(keychain_read(&path).unwrap().as_deref(), Some("{\"upstreams\":{}}"));
        assert!(matches!(
            piece(&path, 2, 0).unwrap().get_password(),
            Err(keyring_core::Error::NoEntry)
        ));
        entry(&path).unwrap().delete_credential().unwrap();
        assert_eq!(keychain_read(&path).unwrap(), None);
    }

    #[test]
    fn a_store_the_keychain_refuses_goes_in_the_file_which_is_then_read() {
        let Some(name) = keychain_here() else {
            return;
        };
        let path = temp("refused");
        keychain_write(&path, "{\"upstreams\":{\"old\":1}}", PIECE).unwrap();
        let refused = |_: &Path, _: &str| Err(Error::Config("cannot keep the tokens in the OS keychain: quota".into()));
        write_or_file(&path, "{\"upstreams\":{\"new\":2}}", refused).unwrap();
        assert_eq!(
            keychain_read(&path).unwrap(),
            None,
            "{name} no longer holds the old copy"
        );
        assert_eq!(read(&path).unwrap().as_deref(), Some("{\"upstreams\":{\"new\":2}}"));
        // Taken back by the keychain on the next write it accepts.
        write(&path, "{\"upstreams\":{}}").unwrap();
        assert!(!path.exists());
        assert_eq!(read(&path).unwrap().as_deref(), Some("{\"upstreams\":{}}"));
        forget(&path);
        let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn the_keychain_keeps_the_store_and_takes_over_a_file() {
        let Some(name) = keychain_here() else {
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
