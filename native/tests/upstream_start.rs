//! How the upstreams of an MCP client configuration start, seen as a user sees it: `stdio` and
//! `serve --mcp-config` report each upstream on stderr (name, transport, up with its tools or
//! down and why); one that writes garbage on stdout is down within seconds naming what it wrote;
//! one that never answers does not hold up the others' tools; a slow one joins later, announced
//! with `notifications/tools/list_changed`. The upstreams are small real programs: `mcp-sieve
//! stdio` itself under another name (a well-behaved MCP server), and `sh` one-liners for the
//! misbehaving ones.
//! Unix only: its upstreams are `sh` one-liners and a symlink of the binary.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-sieve");
const CATALOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../catalog/default.json");

/// A folder with `good-server` (this binary under another name: a configuration entry that
/// launches `mcp-sieve` itself is left out) and `servers.json` holding `servers`.
fn setup(name: &str, servers: Value) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("mcp-sieve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(BIN, dir.join("good-server")).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
    (dir, config)
}

/// The well-behaved upstream: the demo catalog's `groups` tools over stdio.
fn good(dir: &Path, groups: &str) -> Value {
    json!({"command": dir.join("good-server"), "args": ["stdio", "--catalog", CATALOG, "--groups", groups]})
}

fn sh(script: &str) -> Value {
    json!({"command": "sh", "args": ["-c", script]})
}

/// Lines of a child's stream, as they come.
fn lines(stream: impl std::io::Read + Send + 'static) -> (Receiver<String>, Arc<Mutex<String>>) {
    let (tx, rx) = channel();
    let all = Arc::new(Mutex::new(String::new()));
    let copy = all.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            copy.lock().unwrap().push_str(&format!("{line}\n"));
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (rx, all)
}

/// Waits for a line holding `needle` (starting with it, when it starts with `^`); panics after `within`.
fn wait_for(rx: &Receiver<String>, needle: &str, within: Duration, all: &Mutex<String>) -> String {
    let started = Instant::now();
    loop {
        let left = within.checked_sub(started.elapsed()).unwrap_or_else(|| {
            panic!(
                "no line with {needle:?} within {within:?}; so far:\n{}",
                all.lock().unwrap()
            )
        });
        match rx.recv_timeout(left) {
            Ok(line)
                if needle
                    .strip_prefix('^')
                    .map_or(line.contains(needle), |n| line.starts_with(n)) =>
            {
                return line
            }
            Ok(_) => {}
            Err(_) => panic!(
                "no line with {needle:?} within {within:?}; so far:\n{}",
                all.lock().unwrap()
            ),
        }
    }
}

struct Session {
    child: Child,
    stdin: ChildStdin,
    out: Receiver<String>,
    out_all: Arc<Mutex<String>>,
    err: Receiver<String>,
    err_all: Arc<Mutex<String>>,
}

impl Session {
    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
    }

    /// The next message with `id` (other messages are skipped).
    fn answer(&mut self, id: u32) -> Value {
        let line = wait_for(
            &self.out,
            &format!("\"id\":{id}"),
            Duration::from_secs(20),
            &self.out_all,
        );
        serde_json::from_str(&line).unwrap()
    }

    fn tools(&mut self, id: u32) -> Vec<String> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let reply = self.answer(id);
        reply["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{reply}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }
}

#[test]
fn stdio_reports_each_upstream_serves_what_is_ready_and_a_slow_one_joins_later() {
    let (dir, config) = setup("start-stdio", json!({}));
    let servers = json!({
        "good": good(&dir, "utilities"),
        "garbage": sh("while read line; do echo 'hello, I am not JSON'; done"),
        "silent": sh("cat > /dev/null"),
        "slow": {"command": "sh", "args": ["-c", "sleep 8; exec \"$0\" \"$@\"", dir.join("good-server"), "stdio", "--catalog", CATALOG, "--groups", "calendar"]},
        "broken": sh("exit 3"),
    });
    std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).unwrap();
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args(["stdio", "--mcp-config"])
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (out, out_all) = lines(child.stdout.take().unwrap());
    let (err, err_all) = lines(child.stderr.take().unwrap());
    let mut s = Session {
        stdin: child.stdin.take().unwrap(),
        child,
        out,
        out_all,
        err,
        err_all,
    };
    // Ready once the good one is up and the patience (5 s) is over: not at the 30 s deadline the
    // silent one would take, and the garbage one is down by then (2 s).
    wait_for(
        &s.err,
        "^mcp-sieve: serving MCP over stdio",
        Duration::from_secs(15),
        &s.err_all,
    );
    let ready = started.elapsed();
    assert!(ready < Duration::from_secs(12), "started in {ready:?}");
    let report = s.err_all.lock().unwrap().clone();
    assert!(report.contains("mcp-sieve: good (stdio): up, 5 tools"), "{report}");
    assert!(
        report.contains("mcp-sieve: garbage (stdio): down, its tools are left out: ")
            && report.contains("it writes what is not JSON-RPC on stdout (\"hello, I am not JSON\")"),
        "{report}"
    );
    assert!(
        report.contains("mcp-sieve: broken (stdio): down, its tools are left out: "),
        "{report}"
    );
    assert!(report.contains("mcp-sieve: silent (stdio): still starting"), "{report}");
    assert!(report.contains("mcp-sieve: slow (stdio): still starting"), "{report}");

    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "start-test", "version": "1"}}}));
    s.answer(1);
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = s.tools(2);
    assert_eq!(before.len(), 5, "{before:?}");
    assert!(before.iter().all(|n| n.starts_with("good_")), "{before:?}");
    // The slow one answers about 8 s after it started: its tools join, and the client is told.
    wait_for(
        &s.out,
        "notifications/tools/list_changed",
        Duration::from_secs(20),
        &s.out_all,
    );
    let after = s.tools(3);
    assert!(after.iter().any(|n| n.starts_with("slow_")), "{after:?}");
    assert!(after
        .iter()
        .all(|n| !n.starts_with("garbage_") && !n.starts_with("silent_")));
    wait_for(&s.err, "slow (stdio): up, 6 tools", Duration::from_secs(5), &s.err_all);
    drop(s.stdin);
    let t0 = Instant::now();
    while s.child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "stdin closed but the process goes on"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_with_a_client_configuration_reports_each_upstream_on_stderr() {
    let (dir, config) = setup("start-serve", json!({}));
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "good": good(&dir, "calendar"),
            "garbage": sh("while read line; do echo 'not json either'; done"),
            "broken": sh("exit 3"),
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
        }})
        .to_string(),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(BIN)
        .args(["serve", "--port", &port.to_string(), "--mcp-config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (err, all) = lines(child.stderr.take().unwrap());
    let started = Instant::now();
    let line = wait_for(&err, "^mcp-sieve: serving MCP at", Duration::from_secs(20), &all);
    assert!(line.contains(&format!("http://127.0.0.1:{port}/mcp")), "{line}");
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    let report = all.lock().unwrap().clone();
    let _ = child.kill();
    let _ = child.wait();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(report.contains("mcp-sieve: good (stdio): up, 6 tools"), "{report}");
    assert!(
        report.contains("mcp-sieve: garbage (stdio): down, its tools are left out: ")
            && report.contains("not JSON-RPC on stdout (\"not json either\")"),
        "{report}"
    );
    assert!(
        report.contains("mcp-sieve: broken (stdio): down, its tools are left out: "),
        "{report}"
    );
    assert!(
        report.contains("mcp-sieve: web (http): down, its tools are left out: ") && report.contains("127.0.0.1:9"),
        "{report}"
    );
}
