//! `connect` and `disconnect` on each client's real format (tests/fixtures/clients/): servers
//! moved, every other key kept in its order, idempotent, undone byte for byte, the user's later
//! edits kept, clashes and broken files refused.

use serde_json::{json, Value};

use super::clients::Client;
use super::edit::{self, ENTRY};

const SERVERS: &str = "/home/me/.config/mcp-sieve/servers.json";

fn fixture(name: &str) -> &'static str {
    match name {
        "claude-desktop" => include_str!("../../../../tests/fixtures/clients/claude_desktop_config.json"),
        "claude-code" => include_str!("../../../../tests/fixtures/clients/claude.json"),
        "cursor" => include_str!("../../../../tests/fixtures/clients/cursor-mcp.json"),
        "vscode" => include_str!("../../../../tests/fixtures/clients/vscode-mcp.json"),
        "windsurf" => include_str!("../../../../tests/fixtures/clients/windsurf-mcp_config.json"),
        "zed" => include_str!("../../../../tests/fixtures/clients/zed-settings.json"),
        _ => include_str!("../../../../tests/fixtures/clients/zed-settings-comments.json"), // "zed-comments"
    }
}

const ALL: [Client; 6] = [
    Client::ClaudeDesktop,
    Client::ClaudeCode,
    Client::Cursor,
    Client::Vscode,
    Client::Windsurf,
    Client::Zed,
];

fn entry(c: Client) -> Value {
    c.entry(
        std::path::Path::new("/usr/local/bin/mcp-sieve"),
        &["stdio".into(), "--mcp-config".into(), SERVERS.into(), "--search".into()],
    )
}

fn parse(text: &str) -> serde_json::Map<String, Value> {
    serde_json::from_str::<Value>(text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

fn keys(text: &str) -> Vec<String> {
    parse(text).keys().cloned().collect()
}

#[test]
fn connect_moves_the_servers_and_keeps_everything_else() {
    for c in ALL {
        let text = fixture(c.name());
        let before = parse(text);
        let own: Vec<String> = before[c.key()].as_object().unwrap().keys().cloned().collect();
        let done = edit::connect(c, ("client.json", text), (SERVERS, ""), &entry(c), false).unwrap();
        let after = parse(&done.client);
        assert_eq!(keys(&done.client), keys(text), "{}: every key, in its order", c.name());
        for (k, v) in &before {
            if k != c.key() {
                assert_eq!(&after[k], v, "{}: {k} untouched", c.name());
            }
        }
        assert_eq!(after[c.key()], json!({ENTRY: entry(c)}), "{}", c.name());
        assert_eq!(done.moved, own, "{}", c.name());
        assert!(done.backup);
        let servers = parse(&done.servers);
        let held: Vec<&String> = servers["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(held, own.iter().collect::<Vec<_>>(), "{}", c.name());
        // What mcp-sieve stdio reads: the servers file converts with no error.
        let conv = crate::config::mcp_config::convert(&done.servers, &|_| Some("x".into()), "/w");
        assert!(
            conv.errors.is_empty() || c == Client::Vscode,
            "{}: {:?}",
            c.name(),
            conv.errors
        );
        // Indentation as the file's (VS Code's fixture is tab-indented).
        let indent = if c == Client::Vscode { "\n\t\"" } else { "\n  \"" };
        assert!(done.client.contains(indent), "{}:\n{}", c.name(), done.client);
        assert!(done.client.ends_with("}\n"));
    }
}

#[test]
fn vs_code_inputs_go_along_and_zed_entries_become_portable() {
    let c = Client::Vscode;
    let done = edit::connect(c, ("mcp.json", fixture("vscode")), (SERVERS, ""), &entry(c), false).unwrap();
    let servers = parse(&done.servers);
    assert_eq!(servers["inputs"][0]["id"], "perplexity-key");
    assert!(parse(&done.client)["inputs"].is_array(), "the client keeps its inputs");
    let conv = crate::config::mcp_config::convert(&done.servers, &|_| None, "/w");
    assert!(
        conv.errors.iter().all(|e| e.message.contains("input")),
        "only the prompt without default: {:?}",
        conv.errors
    );
    let z = Client::Zed;
    let done = edit::connect(z, ("settings.json", fixture("zed")), (SERVERS, ""), &entry(z), false).unwrap();
    assert_eq!(
        parse(&done.servers)["mcpServers"]["old-style"],
        json!({"command": "node", "args": ["/home/me/server.js"], "env": {"LOG": "1"}})
    );
}

#[test]
fn connecting_twice_changes_nothing_and_disconnect_restores_the_bytes() {
    for c in ALL {
        let text = fixture(c.name());
        let first = edit::connect(c, ("f", text), (SERVERS, ""), &entry(c), false).unwrap();
        let again = edit::connect(c, ("f", &first.client), (SERVERS, &first.servers), &entry(c), true).unwrap();
        assert_eq!(again.client, first.client, "{}", c.name());
        assert_eq!(again.servers, first.servers, "{}", c.name());
        assert!(!again.backup && again.moved.is_empty());
        let back = edit::disconnect(c, ("f", &first.client), text, (SERVERS, &first.servers)).unwrap();
        assert!(back.exact, "{}", c.name());
        assert_eq!(back.client.as_deref(), Some(text), "{}: byte for byte", c.name());
        assert_eq!(parse(&back.servers)["mcpServers"], json!({}), "{}", c.name());
    }
}

#[test]
fn disconnect_after_edits_keeps_them() {
    let c = Client::ClaudeDesktop;
    let text = fixture("claude-desktop");
    let done = edit::connect(c, ("f", text), (SERVERS, ""), &entry(c), false).unwrap();
    // The user changed a setting in the client, and a server's args in mcp-sieve's file.
    let client = done.client.replace("Alt+Space", "Ctrl+Space");
    let servers = done.servers.replace("/Users/me/Desktop", "/Users/me/Documents");
    let back = edit::disconnect(c, ("f", &client), text, (SERVERS, &servers)).unwrap();
    assert!(!back.exact);
    let doc = parse(back.client.as_deref().unwrap());
    assert_eq!(doc["globalShortcut"], "Ctrl+Space");
    assert_eq!(doc["mcpServers"]["filesystem"]["args"][2], "/Users/me/Documents");
    assert!(doc["mcpServers"].get(ENTRY).is_none());
    assert_eq!(
        doc["mcpServers"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["filesystem", "memory"]
    );
    // A server added in the client meanwhile under a moved name keeps the user's.
    let client = done
        .client
        .replace("\"sieve\"", "\"memory\": {\"command\": \"mine\"},\n    \"sieve\"");
    let back = edit::disconnect(c, ("f", &client), text, (SERVERS, &done.servers)).unwrap();
    assert_eq!(
        parse(back.client.as_deref().unwrap())["mcpServers"]["memory"]["command"],
        "mine"
    );
    assert!(back.notes.iter().any(|n| n.contains("\"memory\"")), "{:?}", back.notes);
    assert!(
        parse(&back.servers)["mcpServers"].get("memory").is_some(),
        "left where it was"
    );
}

#[test]
fn a_name_in_both_files_is_an_error_naming_both() {
    let c = Client::Cursor;
    let servers = r#"{"mcpServers": {"playwright": {"command": "other"}}}"#;
    let e = edit::connect(c, ("mcp.json", fixture("cursor")), (SERVERS, servers), &entry(c), false)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mcp.json (mcpServers.playwright)") && e.contains(&format!("{SERVERS} (mcpServers.playwright)")),
        "{e}"
    );
    // The same server in both (a connect that stopped half-way) is no clash.
    let same = r#"{"mcpServers": {"playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]}}}"#;
    assert!(edit::connect(c, ("mcp.json", fixture("cursor")), (SERVERS, same), &entry(c), false).is_ok());
    // Servers added after connect are not moved silently.
    let done = edit::connect(c, ("f", fixture("cursor")), (SERVERS, ""), &entry(c), false).unwrap();
    let added = done
        .client
        .replace("\"sieve\"", "\"new\": {\"command\": \"x\"},\n    \"sieve\"");
    let e = edit::connect(c, ("f", &added), (SERVERS, &done.servers), &entry(c), true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("added since: new") && e.contains("disconnect cursor"), "{e}");
}

#[test]
fn broken_files_are_refused_untouched() {
    let c = Client::ClaudeDesktop;
    let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n";
    let e = edit::connect(c, ("claude.json", broken), (SERVERS, ""), &entry(c), false)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("claude.json:3:"), "{e}");
    assert!(e.contains("left untouched"), "{e}");
    let z = Client::Zed;
    // JSON with comments, broken: refused at its line and column.
    let e = edit::connect(
        z,
        ("settings.json", "{\n  // x\n  \"a\": 1 \"b\": 2\n}\n"),
        (SERVERS, ""),
        &entry(z),
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("settings.json:3:"), "{e}");
    assert!(e.contains("left untouched"), "{e}");
    // `//` inside a string is no comment.
    assert!(edit::connect(z, ("s", fixture("zed")), (SERVERS, ""), &entry(z), false).is_ok());
    let e = edit::connect(c, ("f", r#"{"mcpServers": []}"#), (SERVERS, ""), &entry(c), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mcpServers must be an object"), "{e}");
}

#[test]
fn a_missing_client_file_is_created_and_removed_again() {
    let c = Client::Cursor;
    let done = edit::connect(c, ("f", ""), (SERVERS, ""), &entry(c), false).unwrap();
    assert_eq!(parse(&done.client)["mcpServers"][ENTRY], entry(c));
    let back = edit::disconnect(c, ("f", &done.client), "", (SERVERS, &done.servers)).unwrap();
    assert_eq!(back.client, None);
}

#[test]
fn the_backup_sits_beside_the_file() {
    assert_eq!(
        super::backup_of(std::path::Path::new("/a/mcp.json")),
        std::path::PathBuf::from("/a/mcp.json.mcp-sieve-backup")
    );
}

#[test]
fn a_read_only_file_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("sieve-ro-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ro, rw) = (dir.join("claude_desktop_config.json"), dir.join("servers.json"));
    std::fs::write(&ro, "{}\n").unwrap();
    std::fs::write(&rw, "{}\n").unwrap();
    let mut p = std::fs::metadata(&ro).unwrap().permissions();
    p.set_readonly(true);
    std::fs::set_permissions(&ro, p).unwrap();
    let missing = dir.join("absent.json");
    assert!(super::refuse_read_only(&[&rw, &missing]).is_ok());
    let e = super::refuse_read_only(&[&rw, &ro]).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{} is read-only", ro.display())), "{e}");
    assert!(e.ends_with("(nothing was changed)"), "{e}");
    let mut p = std::fs::metadata(&ro).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    std::fs::set_permissions(&ro, p).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A VS Code `mcp.json` as users write it: comments, trailing commas.
const VSCODE_COMMENTS: &str = "{\n\t// my servers\n\t\"servers\": {\n\t\t/* the folder */\n\t\t\"files\": {\"command\": \"npx\", \"args\": [\"-y\", \"server-filesystem\"]}, // mine\n\t\t\"fetch\": {\"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"],},\n\t},\n\t\"inputs\": [], // none yet\n}\n";

#[test]
fn a_vs_code_file_with_comments_is_edited_keeping_them() {
    let c = Client::Vscode;
    let text = VSCODE_COMMENTS;
    let done = edit::connect(c, ("mcp.json", text), (SERVERS, ""), &entry(c), false).unwrap();
    assert_eq!(done.moved, ["files", "fetch"]);
    for kept in [
        "\t// my servers\n",
        "/* the folder */",
        "\t\"inputs\": [], // none yet\n}\n",
    ] {
        assert!(done.client.contains(kept), "{kept:?} kept:\n{}", done.client);
    }
    let doc = edit::parse(Some(c), "mcp.json", &done.client).unwrap();
    assert_eq!(doc["servers"], json!({ENTRY: entry(c)}));
    assert_eq!(doc["inputs"], json!([]));
    let held = parse(&done.servers);
    assert_eq!(
        held["mcpServers"]["fetch"],
        json!({"command": "uvx", "args": ["mcp-server-fetch"]})
    );
    // Again: nothing changes. Undone: the bytes as they were.
    let again = edit::connect(c, ("mcp.json", &done.client), (SERVERS, &done.servers), &entry(c), true).unwrap();
    assert_eq!(again.client, done.client);
    let back = edit::disconnect(c, ("mcp.json", &done.client), text, (SERVERS, &done.servers)).unwrap();
    assert!(back.exact);
    assert_eq!(back.client.as_deref(), Some(text), "byte for byte");
    // A comment the user wrote since, and a setting: both kept, the servers put back.
    for (edited, note) in [
        (done.client.replacen("{\n", "{\n\t// written since\n", 1), "a comment"),
        (
            done.client.replacen("{\n", "{\n\t// written since\n\t\"x\": 1,\n", 1),
            "a setting",
        ),
    ] {
        let back = edit::disconnect(c, ("mcp.json", &edited), text, (SERVERS, &done.servers)).unwrap();
        assert!(!back.exact, "{note}");
        let t = back.client.unwrap();
        for kept in ["// written since", "// my servers", "// none yet"] {
            assert!(t.contains(kept), "{note}: {kept:?} kept:\n{t}");
        }
        let doc = edit::parse(Some(c), "mcp.json", &t).unwrap();
        let names: Vec<&String> = doc["servers"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["files", "fetch"], "{note}:\n{t}");
        assert_eq!(parse(&back.servers)["mcpServers"], json!({}), "{note}");
    }
}
