//! Which program a stdio server's `command` names, found as the OS finds it: the `which` crate
//! looks the name up in the process's `PATH`, and on Windows tries `PATHEXT`'s extensions, so an
//! entry `"command": "npx"` starts `npx.cmd` (what the official TypeScript SDK's `cross-spawn`
//! does). `std::process::Command` alone appends only `.exe`. A `.cmd`/`.bat` found this way is
//! started by the standard library through `cmd.exe /c` with its arguments escaped for `cmd`
//! (Rust 1.77 and later: an argument `cmd` would split at `&` or expand at `%` is quoted, or
//! refused with an error), so nothing here builds a command line.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The program to start for `command`, looked up in `path` (the child's `PATH`) from `cwd` (its
/// working folder); `command` as written when nothing matches (the start then fails with the
/// OS's own error, naming it).
pub fn program(command: &str, path: Option<&OsStr>, cwd: &Path) -> PathBuf {
    which::which_in(command, path, cwd).unwrap_or_else(|_| PathBuf::from(command))
}

/// The `PATH` a child started with `env` (its own variables, over the gateway's) searches: its
/// own when it sets one (any case on Windows, where names are case-insensitive), else ours.
pub fn child_path(env: &[(String, String)]) -> Option<OsString> {
    let is_path = |k: &str| {
        if cfg!(windows) {
            k.eq_ignore_ascii_case("PATH")
        } else {
            k == "PATH"
        }
    };
    match env.iter().rev().find(|(k, _)| is_path(k)) {
        Some((_, v)) => Some(v.into()),
        None => std::env::var_os("PATH"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with a space in its name, made fresh for one test.
    fn folder(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sieve resolve {tag} {}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A bare name is found in `PATH` as the OS finds it — `tool` is `tool.cmd` on Windows
    /// (PATHEXT; a `tool` without extension beside it, as npm installs, is not a program there) —
    /// and started with an argument holding `&` and spaces passed whole.
    #[test]
    fn a_bare_name_is_found_in_path_and_started() {
        let dir = folder("bare");
        #[cfg(windows)]
        let want = {
            std::fs::write(dir.join("tool"), "#!/bin/sh\necho not this one\n").unwrap();
            std::fs::write(dir.join("tool.cmd"), "@echo off\r\necho %1\r\n").unwrap();
            dir.join("tool.cmd")
        };
        #[cfg(unix)]
        let want = {
            use std::os::unix::fs::PermissionsExt;
            let t = dir.join("tool");
            std::fs::write(&t, "#!/bin/sh\necho \"\\\"$1\\\"\"\n").unwrap();
            std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o755)).unwrap();
            t
        };
        let cwd = std::env::current_dir().unwrap();
        let found = program("tool", Some(dir.as_os_str()), &cwd);
        assert_eq!(found, want);
        let out = std::process::Command::new(&found).arg("a & b c").output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "\"a & b c\"");
        // Not found: the name as written (the start fails with the OS's error).
        assert_eq!(
            program("no-such-tool", Some(dir.as_os_str()), &cwd),
            PathBuf::from("no-such-tool")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The child's own `PATH` wins over the gateway's.
    #[test]
    fn the_childs_own_path_is_searched() {
        let env = vec![
            ("A".to_string(), "1".to_string()),
            ("PATH".to_string(), "/own/bin".to_string()),
        ];
        assert_eq!(child_path(&env), Some(OsString::from("/own/bin")));
        assert_eq!(child_path(&[]), std::env::var_os("PATH"));
    }
}
