#!/usr/bin/env node
//! Assembles `catalog/public-servers.json`, the search-mode test catalog: the tool lists that
//! public MCP servers publish (the GitHub MCP server's tool snapshots; the READMEs and docs of
//! Playwright MCP, the reference servers, Supabase, Slack and Atlassian), as they were in the
//! snapshots fetched on 2026-11-22. Not run by the tests: its output is committed. Rerun with the
//! repositories fetched (the library's `fetch`) to refresh it:
//!   node scripts/search-catalog.mjs /work/.mirror > catalog/public-servers.json
import { execFileSync } from "node:child_process";

const mirror = process.argv[2] ?? "/work/.mirror";
const git = (repo, ...args) =>
  execFileSync("git", ["-C", `${mirror}/${repo}/repo`, ...args], { encoding: "utf8", maxBuffer: 1 << 26 });
const show = (repo, path) => git(repo, "show", `HEAD:${path}`);
const files = (repo, under) => git(repo, "ls-tree", "-r", "--name-only", "HEAD", under).split("\n").filter(Boolean);

const tools = [];
const add = (group, t) => {
  if (!t.name || !t.description || tools.some((x) => x.name === t.name)) return;
  const tags = [];
  if (t.annotations?.readOnlyHint === true) tags.push("read-only");
  if (t.annotations?.destructiveHint === true) tags.push("destructive");
  tools.push({ ...t, groups: [group], tags });
};
const schema = (params) => {
  const properties = {};
  const required = [];
  for (const p of params) {
    properties[p.name] = { type: p.type, description: p.description };
    if (p.required) required.push(p.name);
  }
  return required.length ? { type: "object", properties, required } : { type: "object", properties };
};
const jsonType = (t) => {
  const x = t.toLowerCase().replace(/`/g, "");
  if (x.startsWith("int")) return "integer";
  if (["string", "number", "boolean", "array", "object"].includes(x)) return x;
  if (x.startsWith("str")) return "string";
  if (x.startsWith("bool")) return "boolean";
  if (x.startsWith("list") || x.endsWith("[]")) return "array";
  if (x.startsWith("float")) return "number";
  return "string";
};

// The GitHub MCP server: its tool snapshots are the tools/list entries themselves.
for (const f of files("github+github-mcp-server", "pkg/github/__toolsnaps__")) {
  const t = JSON.parse(show("github+github-mcp-server", f));
  if (t.name.includes("_ff_") || t.name === "ui_get") continue; // feature-flag variants
  const { title, ...annotations } = t.annotations ?? {};
  add("github", { name: t.name, title, description: t.description, inputSchema: t.inputSchema, annotations });
}

// README tool lists: "- **name**", "1. `name`" or "### 1. name:" followed by indented lines.
function readme(repo, path, group, { from = /^#+ .*Tools/ } = {}) {
  const lines = show(repo, path).split("\n");
  const start = lines.findIndex((l) => from.test(l));
  let cur = null;
  const flush = () => {
    if (cur) {
      const { params, readOnly, ...t } = cur;
      t.inputSchema = schema(params);
      if (readOnly !== undefined) t.annotations = { readOnlyHint: readOnly };
      add(group, t);
    }
    cur = null;
  };
  for (const line of lines.slice(start + 1)) {
    const head =
      line.match(/^- \*\*([a-z_]+)\*\*\s*$/) ||
      line.match(/^\d+\. `([a-z_]+)`\s*$/) ||
      line.match(/^### \d+\. `?([a-z_]+)`?:?\s*$/);
    if (head) {
      flush();
      cur = { name: head[1], description: "", params: [] };
      continue;
    }
    if (/^##/.test(line)) {
      flush();
      if (/^## /.test(line)) break;
      continue;
    }
    if (!cur) continue;
    const text = line.trim().replace(/^- /, "");
    const param = text.match(/^`([A-Za-z_]+)` \(([^),]+)(?:, ([^)]*))?\):?\s*(.*)$/);
    if (param) {
      const [, name, type, extra = "", description] = param;
      cur.params.push({ name, type: jsonType(type), required: !/optional|default/.test(extra), description });
    } else if (/^Title: /.test(text)) cur.title = text.slice(7);
    else if (/^Description: /.test(text)) cur.description = text.slice(13);
    else if (/^Read-only: /.test(text)) cur.readOnly = text.includes("true");
    else if (text && !cur.description && !/^\*?\*?(Inputs?|Parameters|Returns)\b/.test(text)) cur.description = text;
  }
  flush();
}
readme("microsoft+playwright-mcp", "README.md", "browser", { from: /^### Tools/ });
readme("modelcontextprotocol+servers", "src/filesystem/README.md", "filesystem");
readme("modelcontextprotocol+servers", "src/git/README.md", "git");
readme("modelcontextprotocol+servers", "src/memory/README.md", "memory");
readme("korotovsky+slack-mcp-server", "README.md", "slack", { from: /^## Tools/ });

// Supabase: "- `name`: description" under "## Tools".
{
  const md = show("supabase-community+supabase-mcp", "README.md").split("\n");
  const start = md.findIndex((l) => l.startsWith("## Tools"));
  for (const line of md.slice(start + 1)) {
    if (/^## /.test(line)) break;
    const m = line.match(/^- `([a-z_]+)`: (.+)$/);
    if (m) add("supabase", { name: m[1], description: m[2], inputSchema: { type: "object", properties: {} } });
  }
}

// Atlassian: docs/tools/*.mdx ("### Title", a description, a parameter table); the tool's name
// is its prefix and the Python function carrying that title.
{
  const repo = "sooperset+mcp-atlassian";
  for (const product of ["jira", "confluence"]) {
    const py = show(repo, `src/mcp_atlassian/servers/${product}.py`);
    const names = new Map();
    for (const m of py.matchAll(/"title": "([^"]+)"[\s\S]*?async def ([a-z_]+)\(/g)) names.set(m[1], m[2]);
    for (const f of files(repo, "docs/tools").filter((f) => f.includes(`/${product}-`))) {
      for (const section of show(repo, f).split(/^### /m).slice(1)) {
        const [title, ...body] = section.split("\n");
        const fn = names.get(title.trim());
        if (!fn) continue;
        const description = body.find((l) => l.trim() && !l.startsWith("<") && !l.startsWith("|"))?.trim() ?? "";
        const params = [];
        for (const row of body.filter((l) => /^\| `/.test(l))) {
          const [, name, type, req, desc] = row.split("|").map((c) => c.trim());
          params.push({ name: name.replace(/`/g, ""), type: jsonType(type), required: req === "Yes", description: desc });
        }
        const write = section.includes("**write** tool");
        add(product, {
          name: `${product}_${fn}`,
          title: title.trim(),
          description,
          inputSchema: schema(params),
          annotations: { readOnlyHint: !write },
        });
      }
    }
  }
}

const groups = [
  ["github", "GitHub", "Repositories, issues, pull requests, actions, code security and notifications on GitHub"],
  ["browser", "Browser", "Drive a web browser with Playwright: navigate, click, type, take snapshots and screenshots"],
  ["filesystem", "Files", "Read, write, move and search files and directories on the local disk"],
  ["git", "Git", "Local git repositories: status, diffs, commits, branches and logs"],
  ["memory", "Memory", "A knowledge graph of entities, relations and observations kept between conversations"],
  ["slack", "Slack", "Slack channels, messages, threads, reactions and user groups"],
  ["supabase", "Supabase", "Supabase projects, Postgres databases, migrations, edge functions and branches"],
  ["jira", "Jira", "Jira issues, projects, boards, sprints, worklogs and service desks"],
  ["confluence", "Confluence", "Confluence pages, spaces, comments, labels and attachments"],
].map(([name, title, description]) => ({ name, title, description }));
const used = new Set(tools.map((t) => t.groups[0]));
const tags = [
  { name: "read-only", description: "Does not change anything (readOnlyHint)" },
  { name: "destructive", description: "May delete or overwrite (destructiveHint)" },
];
const doc = {
  server: {
    name: "public-mcp-servers",
    version: "2026.11.22",
    instructions: "The tools that public MCP servers publish (GitHub, Playwright, the reference servers, Slack, Supabase, Jira, Confluence), for measuring search mode: their calls answer simulated results.",
  },
  groups: groups.filter((g) => used.has(g.name)),
  tags,
  tools,
  views: {
    search: {
      description: "Every tool, behind find_tools and call_tool",
      mode: "search",
    },
  },
};
process.stdout.write(JSON.stringify(doc, null, 1) + "\n");
process.stderr.write(
  `${tools.length} tools: ` + [...used].map((g) => `${g} ${tools.filter((t) => t.groups[0] === g).length}`).join(", ") + "\n",
);
