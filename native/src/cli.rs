//! The command line (clap): `serve`, `stdio`, `check`, `tools`, `export`, `init`, `pin`, `connect`,
//! `disconnect`, `search-model`, with `--help` and
//! `--version`. A view chosen with flags becomes the query a URL would carry and goes through the
//! core's own view parser (`mcp_sieve::http::endpoint_view`), so flags and URLs mean the same.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use mcp_sieve::filter::EndpointView;
use mcp_sieve::Catalog;

use crate::error::ServerError;

const EXAMPLES: &str = "\
Examples:
  mcp-sieve serve --catalog catalog/default.json --port 8788
      MCP over Streamable HTTP at http://127.0.0.1:8788/mcp (views at /mcp/{view})
  mcp-sieve stdio --mcp-config ~/.cursor/mcp.json --search
      what a desktop client launches: your servers behind one, as find_tools and call_tool
  mcp-sieve stdio --catalog catalog/default.json --groups calendar,email --exclude-tags destructive
      the demo catalog's calendar and email tools over stdio, nothing destructive
  mcp-sieve check claude_desktop_config.json
      every error in a catalog document or an MCP client configuration, with its field
  mcp-sieve tools --mcp-config .vscode/mcp.json --view search
      the tools a view serves, as a table, and their tokens against the whole list
  mcp-sieve export --format openai --view search
      the demo catalog as OpenAI tool-search namespaces, echo loaded and the rest deferred
  mcp-sieve init --mcp-config .cursor/mcp.json > sieve.json
      a starter catalog document for your servers (a group each, a search view)
  mcp-sieve pin --catalog sieve.json
      pin the upstreams' tool definitions (mcp-sieve.lock.json beside it); \"pinning\": \"enforce\"
      then quarantines a tool that changes until `mcp-sieve pin --approve NAME`
  mcp-sieve stdio --catalog sieve.json --search
      find_tools ranks by meaning too: sentence-transformers/all-MiniLM-L6-v2 (about 90 MB) is
      fetched from the Hugging Face Hub on first use (`mcp-sieve search-model fetch` ahead of
      time), or \"search\": {\"model\": ID or folder, or false} in sieve.json, or --search-model;
      vectors made in the background and cached, lexical until they are ready
  mcp-sieve stdio --catalog sieve.json --code
      code mode: find_tools, describe_tools (TypeScript declarations) and run_code, a JavaScript
      program that calls the view's tools in a sandbox and returns only what it needs
  mcp-sieve login github --catalog sieve.json
      sign in to the upstream \"github\" (OAuth in the browser); serve and stdio then send its token
  mcp-sieve connect claude-desktop --search --dry-run
      what putting mcp-sieve in front of Claude Desktop's servers would change (a diff);
      without --dry-run it does it, and `mcp-sieve disconnect claude-desktop` undoes it";

/// Filtering for the Model Context Protocol: put mcp-sieve in front of your MCP servers (or a
/// catalog document) and clients see only the tools a view selects.
#[derive(Debug, Parser)]
#[command(name = "mcp-sieve", version, after_help = EXAMPLES)]
pub struct Cli {
    /// How log lines on stderr are written: `human` lines, or `json` (one object a line). Which
    /// are written: MCP_SIEVE_LOG, else RUST_LOG (`info` by default; e.g. `debug`,
    /// `warn,mcp_sieve::gateway=debug`). Traces: OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_*
    /// variables (serve and stdio).
    #[arg(long, value_enum, global = true, default_value = "human", value_name = "FORMAT")]
    pub log_format: LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP over Streamable HTTP at http://HOST:PORT/mcp (views at /mcp/{view}).
    Serve(ServeArgs),
    /// Serve MCP over stdio (newline-delimited JSON-RPC; logs on stderr): what a desktop client launches.
    Stdio(StdioArgs),
    /// Validate a catalog document or an MCP client configuration; prints every error with its field.
    Check {
        /// The file: a catalog document, or a Claude Desktop / Cursor / Claude Code / VS Code configuration.
        file: PathBuf,
    },
    /// Write a catalog document's prepared form for a Worker's KV: the document as given and an
    /// index of what the load makes of it, which the Worker loads without parsing the document's
    /// tools (a fresh isolate's first answer). Put it with `wrangler kv key put config --path
    /// OUTPUT --binding MCP_SIEVE_KV`, and prepare it again with each new version of mcp-sieve (a
    /// Worker of another version loads its JSON instead, and logs why).
    Prepare {
        /// The catalog document (JSON).
        file: PathBuf,
        /// Where to write the prepared form.
        #[arg(long, short, value_name = "FILE")]
        output: PathBuf,
    },
    /// Print the audit records (JSON lines, oldest first, rotated files included) of a tool, a
    /// principal, a time span: "who called delete_repo this week" is
    /// `mcp-sieve audit --tool delete_repo --since 7d`.
    Audit(AuditArgs),
    /// Print the tools a view serves, as a table (name, upstream, groups, tags, tokens), and the token total.
    Tools(StdioArgs),
    /// Print what a host passes to a model API for a view's tools: Anthropic's MCP connector
    /// (`mcp_servers` + an `mcp_toolset` with per-tool configs) or OpenAI's tool-search
    /// namespaces. A search-mode view's pinned tools are loaded, the rest deferred.
    Export(ExportArgs),
    /// Start the upstreams of an MCP client configuration once and print a starter catalog document.
    Init {
        /// The client configuration (mcpServers or servers).
        #[arg(long, value_name = "FILE")]
        mcp_config: PathBuf,
        /// Write the document here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Pin the upstreams' tool definitions: write each tool's digest to the lock file that
    /// `"pinning": "enforce"` (or `"warn"`) checks, or approve some tools as they are now.
    Pin(PinArgs),
    /// Sign in to an upstream that asks for OAuth (its `"auth": "oauth"`, or a 401 with a Bearer
    /// challenge): opens the authorization server's page in the browser (or prints its URL),
    /// takes the redirect on http://127.0.0.1:PORT/callback, and keeps the tokens for `serve`
    /// and `stdio` (refreshed by them) in the OS keychain (the macOS Keychain, the Windows
    /// Credential Manager, the Linux kernel keyring), else in $XDG_CONFIG_HOME/mcp-sieve/tokens.json
    /// (mode 0600); MCP_SIEVE_TOKEN_STORE=file or keychain chooses.
    Login(LoginArgs),
    /// Forget the tokens `login` kept for an upstream.
    Logout {
        /// The upstream's name (its key in `upstreams`, or in the client configuration).
        name: String,
    },
    /// Put mcp-sieve in front of a desktop client's MCP servers: they move to mcp-sieve's
    /// servers file, and the client gets one "sieve" entry launching `mcp-sieve stdio` over them
    /// (its file backed up first as FILE.mcp-sieve-backup; its other settings untouched).
    Connect(ConnectArgs),
    /// Compute the tools' sentence vectors with the document's `search.model` (the vector cache
    /// reused) and write them for a Worker's KV, keyed by each tool's digest as the native cache
    /// is: `search/<digest>` → 384 little-endian f32 as base64 text, and `search/model` → the model's
    /// identity. Load with `wrangler kv bulk put --binding MCP_SIEVE_KV FILE`; the Worker encodes
    /// queries through the document's `search.embeddings` URL (same model), or with `--ai`
    /// through its Workers AI binding.
    Index(IndexArgs),
    /// The sentence encoder of search by meaning: `fetch` puts a Hugging Face model into the
    /// Hugging Face cache ahead of time (for a machine that is offline later, or a container image).
    #[command(subcommand)]
    SearchModel(SearchModelCommand),
    /// Give a desktop client its MCP servers back (undoes `connect`): its file as before when
    /// nothing else changed, else the servers put back into the file as it is now.
    Disconnect(DisconnectArgs),
}

/// `search-model`'s subcommands.
#[derive(Debug, Subcommand)]
pub enum SearchModelCommand {
    /// Fetch a model (default: sentence-transformers/all-MiniLM-L6-v2, what search mode uses when
    /// nothing else is named) into the Hugging Face cache (HF_HUB_CACHE, else $HF_HOME/hub, else
    /// ~/.cache/huggingface/hub; from HF_ENDPOINT, with HF_TOKEN) and print its folder.
    Fetch {
        /// The model's Hugging Face id (`owner/name`).
        id: Option<String>,
        /// A branch, tag or commit (default: main).
        #[arg(long, value_name = "REV")]
        revision: Option<String>,
    },
}

/// Which client file and servers file `connect` and `disconnect` change.
#[derive(Debug, Args)]
pub struct Where {
    /// The client's configuration file (default: where the client keeps it on this OS).
    #[arg(long, value_name = "FILE")]
    pub config_path: Option<PathBuf>,
    /// The project's file instead of the user's (Claude Code .mcp.json, .cursor/mcp.json,
    /// .vscode/mcp.json, .zed/settings.json in the current folder).
    #[arg(long)]
    pub project: bool,
    /// mcp-sieve's servers file (default ~/.config/mcp-sieve/servers.json).
    #[arg(long, value_name = "FILE")]
    pub servers: Option<PathBuf>,
    /// Print the unified diff of what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `connect`'s flags.
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The client.
    #[arg(value_enum)]
    pub client: Client,
    #[command(flatten)]
    pub at: Where,
    /// The client sees find_tools and call_tool instead of every tool (`stdio --search`).
    #[arg(long)]
    pub search: bool,
    /// The client sees find_tools, describe_tools and run_code, which runs a program calling
    /// the tools (`stdio --code`).
    #[arg(long, conflicts_with = "search")]
    pub code: bool,
    /// A named view of the catalog document (`stdio --view NAME`).
    #[arg(long, value_name = "NAME")]
    pub view: Option<String>,
    /// A catalog document on top of the servers (`stdio --catalog FILE`).
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

/// `disconnect`'s flags.
#[derive(Debug, Args)]
pub struct DisconnectArgs {
    /// The client.
    #[arg(value_enum)]
    pub client: Client,
    #[command(flatten)]
    pub at: Where,
}

/// `login`'s flags.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The upstream's name (its key in `upstreams`, or in the client configuration).
    pub name: String,
    #[command(flatten)]
    pub source: Source,
    /// Do not try to open a browser: only print the URL to open.
    #[arg(long)]
    pub no_browser: bool,
}

/// `pin`'s flags.
#[derive(Debug, Args)]
pub struct PinArgs {
    #[command(flatten)]
    pub source: Source,
    /// Approve only these tools' definitions as they are now, keeping every other pin
    /// (repeat the flag, or separate names with commas). Without it, every tool is pinned anew.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub approve: Vec<String>,
    /// The lock file (default: the document's pinning.lock, else mcp-sieve.lock.json beside the document).
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Print the pins as JSON on stdout instead of writing the lock file: the value of the
    /// Worker's MCP_SIEVE_KV key "pins" (`wrangler kv key put --binding MCP_SIEVE_KV pins "$(mcp-sieve pin --kv ...)"`).
    #[arg(long)]
    pub kv: bool,
}

/// Where the catalog comes from.
#[derive(Debug, Args, Clone, Default)]
pub struct Source {
    /// A catalog document (default: the built-in demo catalog, unless --mcp-config is given).
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// An MCP client configuration (Claude Desktop, Cursor, Claude Code: mcpServers; VS Code:
    /// servers): every server in it becomes an upstream. With --catalog, the document adds its
    /// groups, tags, overlay, views, policy and concerns on top.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// The sentence encoder of search by meaning, over the document's search.model: a Hugging
    /// Face model id (fetched on first use), a folder, or `none` (search stays lexical). Search
    /// mode uses sentence-transformers/all-MiniLM-L6-v2 when neither names one.
    #[arg(long, value_name = "ID|FOLDER|none")]
    pub search_model: Option<String>,
}

/// `index`'s flags.
#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(flatten)]
    pub source: Source,
    /// Where the `wrangler kv bulk put` file goes (default: stdout).
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Encode the tools with Workers AI's REST API and the model a Worker with an `[ai]` binding
    /// encodes queries with (the document's search.ai, else @cf/baai/bge-small-en-v1.5), 50 a
    /// request: needs CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN (CLOUDFLARE_API_BASE_URL
    /// replaces https://api.cloudflare.com/client/v4).
    #[arg(long)]
    pub ai: bool,
}

/// `audit`'s flags.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The audit file (the document's `audit.file`); its rotated files (FILE.1, FILE.2, …) are read too.
    #[arg(long, value_name = "FILE", default_value = "audit.jsonl")]
    pub file: PathBuf,
    /// Only uses of this item: a tool's or prompt's name, or a resource's URI (globs: `delete_*`).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only uses by this principal (glob).
    #[arg(long, value_name = "P")]
    pub principal: Option<String>,
    /// Only records since then: a duration back from now (7d, 12h, 30m) or a date or time (2025-11-20).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
}

/// `serve`'s flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: Source,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on.
    #[arg(long, default_value_t = 8788)]
    pub port: u16,
    /// Prometheus metrics: `on` (at /metrics on this port, behind the same token as /mcp) or `off`.
    #[arg(long, value_name = "on|off", default_value = "on")]
    pub metrics: String,
    /// Serve /metrics on this port instead (same host, no token asked: keep it private).
    #[arg(long, value_name = "PORT")]
    pub metrics_port: Option<u16>,
}

impl ServeArgs {
    /// Where the metrics are served, from `--metrics` and `--metrics-port`.
    pub fn metrics_at(&self) -> Result<MetricsAt, crate::error::ServerError> {
        match (self.metrics.as_str(), self.metrics_port) {
            ("off", None) => Ok(MetricsAt::Off),
            ("off", Some(_)) => Err(crate::error::ServerError::Config(
                "--metrics off and --metrics-port contradict each other; give one".into(),
            )),
            ("on", Some(p)) => Ok(MetricsAt::Port(p)),
            ("on", None) => Ok(MetricsAt::Endpoint),
            (other, _) => Err(crate::error::ServerError::Config(format!(
                "--metrics \"{other}\" is not known; expected on (the default) or off"
            ))),
        }
    }
}

/// `stdio`'s and `tools`' flags: a catalog and a view.
#[derive(Debug, Args, Clone, Default)]
pub struct StdioArgs {
    #[command(flatten)]
    pub source: Source,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// The model APIs `export` writes for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Format {
    /// Anthropic Messages API: `betas`, `mcp_servers`, `tools` (an `mcp_toolset`).
    Anthropic,
    /// OpenAI Responses API: `tools` (namespaces of functions, and `tool_search`).
    Openai,
}

/// `export`'s flags.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub tools: StdioArgs,
    /// Which API's shapes.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Where `mcp-sieve serve` (or the Worker) is reached; the view's path and query are added.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:8788")]
    pub url: String,
    /// The MCP server's name in `mcp_servers`.
    #[arg(long, value_name = "NAME", default_value = "mcp-sieve")]
    pub name: String,
}

/// A view chosen on the command line (a stdio client has no URL); the flags AND together.
#[derive(Debug, Args, Clone, Default)]
pub struct ViewArgs {
    /// A named view of the catalog document (its `views`).
    #[arg(long, value_name = "NAME")]
    pub view: Option<String>,
    /// Only tools in any of these groups (comma-separated).
    #[arg(long, value_name = "A,B")]
    pub groups: Option<String>,
    /// Only tools with all of these tags (comma-separated).
    #[arg(long, value_name = "A,B")]
    pub tags: Option<String>,
    /// No tools with any of these tags (comma-separated).
    #[arg(long, value_name = "A,B")]
    pub exclude_tags: Option<String>,
    /// Only tools whose names match these globs (comma-separated, `*` and `?`).
    #[arg(long, value_name = "GLOBS")]
    pub names: Option<String>,
    /// Search mode: list find_tools and call_tool instead of the tools themselves.
    #[arg(long)]
    pub search: bool,
    /// Code mode: list find_tools, describe_tools (with TypeScript declarations) and run_code,
    /// which runs a JavaScript program calling the tools of the view.
    #[arg(long, conflicts_with = "search")]
    pub code: bool,
}

/// Percent-encodes a query value (letters, digits, `-._~,*` stay).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b',' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl ViewArgs {
    /// The path and query a URL would carry for this view.
    pub fn as_url(&self) -> (String, String) {
        let path = match &self.view {
            Some(name) => format!("{}/{name}", mcp_sieve::http::ENDPOINT),
            None => mcp_sieve::http::ENDPOINT.to_string(),
        };
        let mut query: Vec<String> = [
            ("groups", &self.groups),
            ("tags", &self.tags),
            ("excludeTags", &self.exclude_tags),
            ("names", &self.names),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", encode(v))))
        .collect();
        if self.code {
            query.push("mode=code".into());
        } else if self.search {
            query.push("mode=search".into());
        }
        (path, query.join("&"))
    }

    /// The view over `catalog`, parsed by the core as a URL's would be (`None`: everything).
    pub fn resolve(&self, catalog: &Catalog) -> Result<Option<Arc<EndpointView>>, ServerError> {
        let (path, query) = self.as_url();
        mcp_sieve::http::endpoint_view(catalog, &path, &query, &|_| None, None).map_err(|refusal| {
            // The refusal is a JSON-RPC error body (or plain text): its message says what is wrong.
            let message = serde_json::from_str::<serde_json::Value>(&refusal.body)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                .unwrap_or(refusal.body);
            let message = message
                .replace("the URL query", "the view flags")
                .replace("URL parameter", "flag");
            ServerError::Usage(format!("bad view: {message}"))
        })
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// `mcp-sieve: message key=value [request fields]`, for people.
    #[default]
    Human,
    /// One JSON object a line (timestamp, level, fields, the request span's fields under `span`).
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn serve_keeps_its_flags() {
        let cli = Cli::try_parse_from([
            "mcp-sieve",
            "serve",
            "--catalog",
            "c.json",
            "--host",
            "0.0.0.0",
            "--port",
            "9",
        ])
        .unwrap();
        let Command::Serve(a) = cli.command else { panic!() };
        assert_eq!(
            (a.source.catalog.unwrap(), a.host, a.port),
            ("c.json".into(), "0.0.0.0".into(), 9)
        );
        assert!(Cli::try_parse_from(["mcp-sieve", "serve", "--port", "x"]).is_err());
    }

    #[test]
    fn view_flags_become_a_url_query() {
        let cli = Cli::try_parse_from([
            "mcp-sieve",
            "stdio",
            "--view",
            "email",
            "--groups",
            "a,b",
            "--exclude-tags",
            "x y",
            "--names",
            "git_*",
            "--search",
        ])
        .unwrap();
        let Command::Stdio(a) = cli.command else { panic!() };
        assert_eq!(
            a.view.as_url(),
            (
                "/mcp/email".into(),
                "groups=a,b&excludeTags=x%20y&names=git_*&mode=search".into()
            )
        );
    }

    #[test]
    fn a_view_is_checked_by_the_core() {
        let catalog = Catalog::from_json_str(include_str!("../../catalog/default.json")).unwrap();
        let none = ViewArgs::default().resolve(&catalog).unwrap();
        assert!(none.is_none());
        let search = ViewArgs {
            search: true,
            groups: Some("calendar".into()),
            ..Default::default()
        };
        assert!(search.resolve(&catalog).unwrap().unwrap().search);
        let code = ViewArgs {
            code: true,
            ..Default::default()
        };
        let view = code.resolve(&catalog).unwrap().unwrap();
        assert!(view.code && view.search);
        let unknown = ViewArgs {
            view: Some("nope".into()),
            ..Default::default()
        };
        let e = unknown.resolve(&catalog).unwrap_err().to_string();
        assert!(e.contains("unknown view \"nope\""), "{e}");
    }
}

/// A desktop MCP client (`connect`/`disconnect`; where each keeps its servers: `connect::clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Desktop: claude_desktop_config.json, `mcpServers`.
    ClaudeDesktop,
    /// Claude Code: ~/.claude.json (user `mcpServers`), or .mcp.json with --project.
    ClaudeCode,
    /// Cursor: ~/.cursor/mcp.json, or .cursor/mcp.json with --project.
    Cursor,
    /// VS Code: the user folder's mcp.json (`servers`), or .vscode/mcp.json with --project.
    Vscode,
    /// Windsurf: ~/.codeium/windsurf/mcp_config.json, `mcpServers`.
    Windsurf,
    /// Zed: ~/.config/zed/settings.json (`context_servers`), or .zed/settings.json with --project.
    Zed,
}

/// Metrics: served with the MCP endpoint, on a port of their own, or not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsAt {
    /// At `/metrics` on the MCP port, behind its gate.
    #[default]
    Endpoint,
    /// At `/metrics` on this port (same host).
    Port(u16),
    /// Not kept.
    Off,
}
