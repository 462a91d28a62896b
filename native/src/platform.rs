//! The platform's clock and randomness, for every part of the server (a leaf: it imports no
//! other file of the server).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// 128 random bits from the OS, as hex; an error rather than a predictable id.
pub fn fresh_id() -> Result<String, getrandom::Error> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)?;
    let mut id = String::with_capacity(32);
    push_hex(&mut id, &b);
    Ok(id)
}

/// Writes `bytes` onto `out` as lowercase hex, two digits a byte.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
}

/// `path` with a leading `~/` (or `~\` on Windows) as the home folder (a desktop client passes
/// arguments to the program as written: no shell expands them). The home folder is the standard
/// library's: `HOME` on Unix, `USERPROFILE` on Windows (not `HOME`, which Git Bash or MSYS may
/// set to a Unix-style path) — fixed there in Rust 1.85, and what the `home` crate's own README
/// now tells programs to use instead of it.
pub fn expand_home(path: &std::path::Path) -> std::path::PathBuf {
    match (path.strip_prefix("~"), std::env::home_dir()) {
        (Ok(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fresh_id_is_128_random_bits_in_lowercase_hex() {
        let (a, b) = (super::fresh_id().unwrap(), super::fresh_id().unwrap());
        assert_eq!(a.len(), 32, "{a}");
        assert!(
            a.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
            "{a}"
        );
        assert_ne!(a, b);
    }

    /// `~` is the user's home folder as the platform names it: `USERPROFILE` on Windows (Wine
    /// passes `HOME` through from Linux too, which must not win), `HOME` elsewhere.
    #[test]
    fn the_home_folder_is_the_platforms() {
        let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        let home = std::path::PathBuf::from(std::env::var_os(var).expect("the home variable is set"));
        let p = super::expand_home(std::path::Path::new("~/servers.json"));
        assert_eq!(p, home.join("servers.json"));
        let q = std::path::Path::new("not~/x");
        assert_eq!(super::expand_home(q), q);
    }
}
