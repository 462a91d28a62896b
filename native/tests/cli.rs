//! The binary as a user runs it: `mcp-sieve stdio` fed lines on stdin (garbage, both protocol
//! eras, views from flags, stdin closing), `check` on good and broken files, `tools`, `--help`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-sieve");

fn init(id: u32) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "1"}}})
    .to_string()
}

fn modern(id: u32, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Runs `mcp-sieve stdio ARGS`, writes `lines`, closes stdin and returns every message written
/// on stdout (and checks that stdout holds nothing else and the process ended by itself).
fn stdio(args: &[&str], lines: &[String]) -> Vec<Value> {
    let mut child = Command::new(BIN)
        .arg("stdio")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "stdin closed but the process goes on"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| {
            let l = l.unwrap();
            serde_json::from_str(&l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"))
        })
        .collect()
}

#[test]
fn a_garbage_line_is_a_parse_error_and_the_server_keeps_serving() {
    let out = stdio(
        &[],
        &[
            "this is not json".into(),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":5}".into(),
            init(1),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
        ],
    );
    assert_eq!(out[0]["error"]["code"], -32700);
    assert_eq!(out[1]["error"]["code"], -32600);
    assert_eq!(out[1]["id"], 7);
    assert_eq!(out[2]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        out[3]["result"]["tools"].as_array().unwrap().len(),
        50,
        "the first page"
    );
    assert!(out[3]["result"]["nextCursor"].is_string());
}

#[test]
fn a_view_from_flags_narrows_both_eras() {
    let flags = ["--groups", "calendar", "--exclude-tags", "destructive"];
    let out = stdio(
        &flags,
        &[
            init(1),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
        ],
    );
    let names: Vec<&str> = out[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(!names.contains(&"delete_event"));
    let out = stdio(
        &flags,
        &[
            modern(1, "server/discover", json!({})),
            modern(2, "tools/list", json!({})),
            modern(
                3,
                "tools/call",
                json!({"name": "delete_event", "arguments": {"eventId": "x"}}),
            ),
        ],
    );
    assert!(out[0]["result"]["supportedVersions"].is_array());
    assert_eq!(out[1]["result"]["resultType"], "complete");
    assert_eq!(out[1]["result"]["tools"].as_array().unwrap().len(), 5);
    assert!(
        out[2]["error"]["message"].as_str().unwrap().contains("Unknown tool"),
        "{}",
        out[2]
    );
}

#[test]
fn search_mode_from_a_flag() {
    let out = stdio(
        &["--search"],
        &[
            init(1),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "find_tools", "arguments": {"query": "delete a calendar event", "limit": 3}}})
            .to_string(),
        ],
    );
    let names: Vec<&str> = out[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["find_tools", "describe_tools", "call_tool"]);
    let found = &out[2]["result"]["structuredContent"]["tools"];
    assert!(
        found.as_array().unwrap().iter().any(|t| t["name"] == "delete_event"),
        "{found}"
    );
}

#[test]
fn a_bad_view_flag_is_a_clear_error() {
    let out = Command::new(BIN)
        .args(["stdio", "--view", "nope"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown view \"nope\"") && err.contains("email"), "{err}");
    assert!(out.stdout.is_empty(), "stdout is for protocol messages only");
}

#[test]
fn check_prints_every_error_with_file_line_and_field() {
    let dir = std::env::temp_dir().join(format!("mcp-sieve-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("claude_desktop_config.json");
    std::fs::write(
        &bad,
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": 5},\n    \"b\": {\"url\": \"ftp://x\", \"autoApprove\": []}\n  }\n}\n",
    )
    .unwrap();
    let out = Command::new(BIN).arg("check").arg(&bad).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let file = bad.display();
    assert!(
        text.contains(&format!(
            "{file}:3:11: mcpServers.a.command: must be a string, got a number"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{file}:4:11: mcpServers.b.url: must be an http")),
        "{text}"
    );
    assert!(
        text.contains("warning:") && text.contains("mcpServers.b.autoApprove"),
        "{text}"
    );
    let good = dir.join("mcp.json");
    std::fs::write(
        &good,
        r#"{"servers": {"m": {"type": "stdio", "command": "node", "args": ["m.js"]}}}"#,
    )
    .unwrap();
    let out = Command::new(BIN).arg("check").arg(&good).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{\n \"tools\": [\n  {\"name\": }\n ]\n}").unwrap();
    let out = Command::new(BIN).arg("check").arg(&broken).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{}:3:12: not valid JSON: expected value", broken.display())),
        "{text}"
    );
    // A catalog document: every error, each with its line, column and field path.
    let doc = dir.join("sieve.json");
    std::fs::write(
        &doc,
        r#"{
  "groups": [{"name": "email"}, {"name": 5}],
  "upstreams": {
    "github": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${SIEVE_CLI_TEST_UNSET}"}}
  },
  "tools": [{"name": "a"}, {"name": "b", "tags": "x"}],
  "views": {
    "email": {"filter": {"groups": ["email", 7]}},
    "odd": {"mode": "grid"}
  }
}
"#,
    )
    .unwrap();
    let out = Command::new(BIN).arg("check").arg(&doc).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let file = doc.display();
    for want in [
        format!("{file}:2:34: groups[1].name must be a string"),
        format!("warning: {file}:4:62: upstreams.github.headers[\"Authorization\"] uses the secret ${{SIEVE_CLI_TEST_UNSET}}, which is not set"),
        format!("{file}:6:42: tools[1].tags must be an array of strings"),
        format!("{file}:8:26: views.email.filter.groups must be an array of strings; views.email.filter.groups[1] is a number"),
        format!("{file}:9:13: views.odd.mode must be"),
    ] {
        assert!(text.contains(&want), "{want}\nmissing from:\n{text}");
    }
    assert_eq!(text.lines().count(), 5, "{text}");
    // The same document given to a server: the same errors, and nothing served.
    let out = Command::new(BIN)
        .args(["stdio", "--catalog"])
        .arg(&doc)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{file}:9:13: views.odd.mode")) && err.contains(&format!("{file}:2:34: groups[1].name")),
        "{err}"
    );
    // A broken file given to a server names the file, line and column too: a catalog document,
    // a client configuration.
    for (flag, path, want) in [
        ("--catalog", &broken, ":3:12: not valid JSON"),
        ("--mcp-config", &bad, ":3:11: mcpServers.a.command: must be a string"),
    ] {
        let out = Command::new(BIN)
            .args(["stdio", flag])
            .arg(path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("{}{want}", path.display())), "{err}");
        assert!(out.stdout.is_empty());
    }
    let catalog = concat!(env!("CARGO_MANIFEST_DIR"), "/../catalog/default.json");
    let out = Command::new(BIN).args(["check", catalog]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("74 tools"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tools_prints_the_view_and_its_tokens() {
    let out = Command::new(BIN)
        .args(["tools", "--groups", "calendar"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(text.contains("delete_event") && text.contains("destructive"), "{text}");
    assert!(text.contains("6 of 74 tools: ~"), "{text}");
}

#[test]
fn tools_whose_reader_goes_away_ends_quietly() {
    // `mcp-sieve tools | head -1`: the reader closes the pipe after the first bytes.
    let mut child = Command::new(BIN)
        .arg("tools")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 4];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.status.success() || err.is_empty(), "{err}");
}

fn export(args: &[&str]) -> Value {
    let out = Command::new(BIN).arg("export").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn export_writes_an_anthropic_toolset_with_the_pinned_tools_loaded() {
    let a = export(&[
        "--format",
        "anthropic",
        "--view",
        "search",
        "--url",
        "https://sieve.example/",
    ]);
    assert_eq!(a["betas"], json!(["mcp-client-2025-11-20"]));
    assert_eq!(
        a["mcp_servers"],
        json!([{"type": "url", "name": "mcp-sieve", "url": "https://sieve.example/mcp/search?mode=list"}])
    );
    let set = &a["tools"][0];
    assert_eq!(
        (set["type"].as_str(), set["mcp_server_name"].as_str()),
        (Some("mcp_toolset"), Some("mcp-sieve"))
    );
    assert_eq!(set["default_config"], json!({"enabled": false}));
    let configs = set["configs"].as_object().unwrap();
    assert_eq!(configs.len(), 74, "every tool of the view, not find_tools/call_tool");
    assert_eq!(configs["echo"], json!({"enabled": true, "defer_loading": false}));
    assert_eq!(configs["delete_event"], json!({"enabled": true, "defer_loading": true}));
    assert_eq!(a["tools"][1]["type"], "tool_search_tool_bm25_20251119");
    // A list-mode view defers nothing and needs no search tool.
    let email = export(&["--format", "anthropic", "--view", "email"]);
    assert_eq!(email["mcp_servers"][0]["url"], "http://127.0.0.1:8788/mcp/email");
    assert_eq!(email["tools"].as_array().unwrap().len(), 1);
    let configs = email["tools"][0]["configs"].as_object().unwrap();
    assert!(configs.values().all(|c| c["defer_loading"] == false) && configs.contains_key("send_email"));
    assert!(!configs.contains_key("echo"));
}

#[test]
fn export_writes_openai_namespaces_of_at_most_ten_from_groups() {
    let dir = std::env::temp_dir().join(format!("sieve-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tools: Vec<Value> = (0..23)
        .map(|i| json!({"name": format!("big.t{i}"), "description": "d", "inputSchema": {"type": "object"}, "groups": ["big"]}))
        .chain([json!({"name": "solo", "inputSchema": {"type": "object"}, "groups": ["small"]})])
        .collect();
    let doc = json!({"groups": [{"name": "big", "description": "Many tools"}, {"name": "small"}], "tools": tools,
        "views": {"find": {"mode": "search", "pinned": ["big.t3", "solo"]}}});
    let file = dir.join("big.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let o = export(&[
        "--format",
        "openai",
        "--view",
        "find",
        "--catalog",
        file.to_str().unwrap(),
    ]);
    let list = o["tools"].as_array().unwrap();
    let shape: Vec<(&str, usize)> = list
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap_or("-"),
                n["tools"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [("big_1", 10), ("big_2", 10), ("big_3", 3), ("small", 1), ("-", 0)]
    );
    assert_eq!(list[1]["description"], "Many tools (part 2 of 3)");
    assert_eq!(list[3]["description"], "Tools in the group small");
    assert_eq!(list[4], json!({"type": "tool_search"}));
    let f = &list[0]["tools"][3];
    assert_eq!(
        (f["type"].as_str(), f["name"].as_str()),
        (Some("function"), Some("big_t3"))
    );
    assert_eq!(
        (f["defer_loading"].as_bool(), f["parameters"].clone()),
        (Some(false), json!({"type": "object"}))
    );
    assert_eq!(list[0]["tools"][4]["defer_loading"], true);
    assert_eq!(list[3]["tools"][0]["defer_loading"], false);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn help_and_version() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for sub in ["serve", "stdio", "check", "tools", "export", "init", "pin", "Examples:"] {
        assert!(text.contains(sub), "{sub} missing from --help");
    }
    // `pin` needs upstreams: the built-in catalog has none.
    let out = Command::new(BIN).arg("pin").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pin: the document names no upstream"));
    let out = Command::new(BIN).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("mcp-sieve "));
}

/// Issue 38, item 10: a variable of `--mcp-config` is expanded once. `WEB_TOKEN=pw-${OTHER}-end`
/// reaches the upstream as it is (never with OTHER's value in it), and a value holding `${1x}`
/// is sent as it is too, with no part of it in any message. The upstream is a TCP listener
/// here that records the headers of what reaches it and answers 500.
#[test]
fn mcp_config_variables_are_expanded_once() {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            record.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
            let _ = stream
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let dir = std::env::temp_dir().join(format!("mcp-sieve-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"Authorization": "Bearer ${WEB_TOKEN}", "X-Odd": "${ODD}"}}}})
        .to_string(),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["tools", "--mcp-config"])
        .arg(&config)
        .env("WEB_TOKEN", "pw-${OTHER}-end")
        .env("OTHER", "other-value-never-sent")
        .env("ODD", "s3cr3t-${1x}-tail")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for part in ["s3cr3t", "1x", "tail", "pw-", "other-value"] {
        assert!(
            !stderr.contains(part) && !stdout.contains(part),
            "a message shows \"{part}\":\n{stdout}{stderr}"
        );
    }
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty(), "the upstream was never reached:\n{stderr}");
    let head = seen[0].to_ascii_lowercase();
    assert!(head.contains("authorization: bearer pw-${other}-end\r\n"), "{head}");
    assert!(head.contains("x-odd: s3cr3t-${1x}-tail\r\n"), "{head}");
    assert!(!head.contains("other-value"), "{head}");
}
