//! The desktop clients `mcp-sieve connect` knows: where each keeps its MCP servers (per OS, user
//! or project file), under which key, and how it writes a stdio server entry.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

pub use crate::cli::Client;

/// The environment a path is found from (tests give their own).
pub struct Places {
    pub home: Option<PathBuf>,
    /// `%APPDATA%` on Windows.
    pub appdata: Option<PathBuf>,
    /// The project folder (`--project`): the current folder.
    pub cwd: PathBuf,
}

impl Places {
    /// This process's home, `%APPDATA%` and current folder.
    pub fn here() -> Places {
        Places {
            home: std::env::var_os("HOME")
                .or_else(|| std::env::var_os("USERPROFILE"))
                .map(PathBuf::from),
            appdata: std::env::var_os("APPDATA").map(PathBuf::from),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        }
    }
}

impl Client {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Zed => "zed",
        }
    }

    /// The key its servers are under.
    pub fn key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            Client::Zed => "context_servers",
            _ => "mcpServers",
        }
    }

    /// Whether its file may hold comments (JSON with comments).
    pub fn allows_comments(self) -> bool {
        matches!(self, Client::Vscode | Client::Zed)
    }

    /// Its configuration file on this OS (`project`: the project's file), or why there is none.
    pub fn path(self, project: bool, at: &Places) -> Result<PathBuf, PlaceError> {
        let (mac, windows) = (cfg!(target_os = "macos"), cfg!(windows));
        if project {
            return match self {
                Client::ClaudeCode => Ok(at.cwd.join(".mcp.json")),
                Client::Cursor => Ok(at.cwd.join(".cursor").join("mcp.json")),
                Client::Vscode => Ok(at.cwd.join(".vscode").join("mcp.json")),
                Client::Zed => Ok(at.cwd.join(".zed").join("settings.json")),
                Client::ClaudeDesktop | Client::Windsurf => Err(PlaceError::ProjectUnsupported(self.name())),
            };
        }
        let home = || at.home.clone().ok_or(PlaceError::HomeUnset);
        let appdata = || at.appdata.clone().ok_or(PlaceError::AppDataUnset);
        let config = |app: &[&str]| -> Result<PathBuf, PlaceError> {
            let base = if windows {
                appdata()?
            } else if mac {
                home()?.join("Library").join("Application Support")
            } else {
                home()?.join(".config")
            };
            Ok(app.iter().fold(base, |p, part| p.join(part)))
        };
        match self {
            Client::ClaudeDesktop => config(&["Claude", "claude_desktop_config.json"]),
            Client::ClaudeCode => Ok(home()?.join(".claude.json")),
            Client::Cursor => Ok(home()?.join(".cursor").join("mcp.json")),
            Client::Vscode => config(&["Code", "User", "mcp.json"]),
            Client::Windsurf => Ok(home()?.join(".codeium").join("windsurf").join("mcp_config.json")),
            Client::Zed if windows => Ok(appdata()?.join("Zed").join("settings.json")),
            Client::Zed => Ok(home()?.join(".config").join("zed").join("settings.json")),
        }
    }

    /// Its entry launching `command args` over stdio.
    pub fn entry(self, command: &Path, args: &[String]) -> Value {
        let command = command.display().to_string();
        match self {
            Client::Vscode | Client::ClaudeCode => json!({"type": "stdio", "command": command, "args": args}),
            _ => json!({"command": command, "args": args}),
        }
    }

    /// One of its server entries as mcp-sieve's servers file (`mcpServers`) holds it: Zed's
    /// older `{"command": {"path", "args", "env"}}` flattened and its `source`/`enabled`/`settings`
    /// dropped, Windsurf's `serverUrl` as `url`; every other entry as it is.
    pub fn portable(self, entry: &Value) -> Value {
        let Some(obj) = entry.as_object() else {
            return entry.clone();
        };
        match self {
            Client::Zed => {
                let mut out = Map::new();
                match obj.get("command") {
                    Some(Value::Object(c)) => {
                        for (from, to) in [("path", "command"), ("args", "args"), ("env", "env")] {
                            if let Some(v) = c.get(from) {
                                out.insert(to.into(), v.clone());
                            }
                        }
                    }
                    Some(c) => {
                        out.insert("command".into(), c.clone());
                    }
                    None => {}
                }
                for (k, v) in obj {
                    if !["command", "source", "enabled", "settings"].contains(&k.as_str()) {
                        out.insert(k.clone(), v.clone());
                    }
                }
                if obj.get("enabled") == Some(&Value::Bool(false)) {
                    out.insert("disabled".into(), Value::Bool(true));
                }
                Value::Object(out)
            }
            Client::Windsurf if obj.contains_key("serverUrl") && !obj.contains_key("url") => Value::Object(
                obj.iter()
                    .map(|(k, v)| (if k == "serverUrl" { "url".into() } else { k.clone() }, v.clone()))
                    .collect(),
            ),
            _ => entry.clone(),
        }
    }
}

/// Why a file's place cannot be told (the user names it with a flag instead).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// The client keeps no file in a project (its name).
    #[error("{0} has no project configuration file; leave out --project (or give --config-path FILE)")]
    ProjectUnsupported(&'static str),
    /// No home folder to find the client's file in.
    #[error("neither HOME nor USERPROFILE is set: give --config-path FILE")]
    HomeUnset,
    /// No `APPDATA` to find the client's file in (Windows).
    #[error("APPDATA is not set: give --config-path FILE")]
    AppDataUnset,
    /// No home folder (or `APPDATA`) for mcp-sieve's servers file.
    #[error("no home folder to keep the servers file in: give --servers FILE")]
    ServersFolderUnknown,
}

/// mcp-sieve's own servers file: `~/.config/mcp-sieve/servers.json` (`%APPDATA%\mcp-sieve` on Windows).
pub fn default_servers(at: &Places) -> Result<PathBuf, PlaceError> {
    let base = if cfg!(windows) {
        at.appdata.clone()
    } else {
        at.home.clone().map(|h| h.join(".config"))
    };
    base.map(|b| b.join("mcp-sieve").join("servers.json"))
        .ok_or(PlaceError::ServersFolderUnknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Places {
        Places {
            home: Some("/home/u".into()),
            appdata: Some("C:/Users/u/AppData/Roaming".into()),
            cwd: "/work/p".into(),
        }
    }

    #[test]
    fn each_client_has_its_file() {
        let p = |c: Client, project| c.path(project, &at()).unwrap();
        // Joined as the OS joins (`\` on Windows), so the test runs in the Windows lane too.
        let under = |base: &str, parts: &[&str]| parts.iter().fold(PathBuf::from(base), |p, s| p.join(s));
        assert_eq!(p(Client::ClaudeCode, false), under("/home/u", &[".claude.json"]));
        assert_eq!(p(Client::ClaudeCode, true), under("/work/p", &[".mcp.json"]));
        assert_eq!(p(Client::Cursor, false), under("/home/u", &[".cursor", "mcp.json"]));
        assert_eq!(p(Client::Vscode, true), under("/work/p", &[".vscode", "mcp.json"]));
        assert_eq!(
            p(Client::Windsurf, false),
            under("/home/u", &[".codeium", "windsurf", "mcp_config.json"])
        );
        let desktop = p(Client::ClaudeDesktop, false).display().to_string();
        let (vscode, zed) = (p(Client::Vscode, false), p(Client::Zed, false));
        if cfg!(windows) {
            let appdata = "C:/Users/u/AppData/Roaming";
            assert_eq!(desktop, format!("{appdata}\\Claude\\claude_desktop_config.json"));
            assert_eq!(vscode, under(appdata, &["Code", "User", "mcp.json"]));
            assert_eq!(zed, under(appdata, &["Zed", "settings.json"]));
        } else if cfg!(target_os = "macos") {
            assert_eq!(
                desktop,
                "/home/u/Library/Application Support/Claude/claude_desktop_config.json"
            );
            assert_eq!(
                vscode,
                under("/home/u/Library/Application Support", &["Code", "User", "mcp.json"])
            );
            assert_eq!(zed, under("/home/u/.config", &["zed", "settings.json"]));
        } else {
            assert_eq!(desktop, "/home/u/.config/Claude/claude_desktop_config.json");
            assert_eq!(vscode, under("/home/u/.config", &["Code", "User", "mcp.json"]));
            assert_eq!(zed, under("/home/u/.config", &["zed", "settings.json"]));
        }
        let e = Client::Windsurf.path(true, &at()).unwrap_err().to_string();
        assert_eq!(
            e,
            "windsurf has no project configuration file; leave out --project (or give --config-path FILE)"
        );
        let nowhere = Places {
            home: None,
            appdata: None,
            cwd: "/work/p".into(),
        };
        assert_eq!(Client::Cursor.path(false, &nowhere), Err(PlaceError::HomeUnset));
        assert_eq!(default_servers(&nowhere), Err(PlaceError::ServersFolderUnknown));
    }

    #[test]
    fn zed_and_windsurf_entries_become_portable() {
        let old = json!({"source": "custom", "command": {"path": "node", "args": ["a.js"], "env": {"K": "v"}}, "settings": {}});
        assert_eq!(
            Client::Zed.portable(&old),
            json!({"command": "node", "args": ["a.js"], "env": {"K": "v"}})
        );
        let new = json!({"source": "custom", "enabled": false, "command": "node", "args": []});
        assert_eq!(
            Client::Zed.portable(&new),
            json!({"command": "node", "args": [], "disabled": true})
        );
        assert_eq!(
            Client::Windsurf.portable(&json!({"serverUrl": "https://x/mcp"})),
            json!({"url": "https://x/mcp"})
        );
    }
}
