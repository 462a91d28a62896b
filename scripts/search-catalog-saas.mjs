#!/usr/bin/env node
//! Assembles `catalog/saas-servers.json`, the second search-mode test catalog: the tools that three
//! SaaS vendors' MCP servers publish, from their repositories as fetched on 2026-11-23:
//! Sentry (`getsentry/sentry-mcp`: `packages/mcp-core/src/toolDefinitions.json`, the generated
//! tools/list entries), Notion (`makenotion/notion-mcp-server`: the OpenAPI document its tools
//! are generated from, one tool `API-<operationId>` per operation) and Stripe
//! (`stripe/agent-toolkit`: the tool modules' method, title, prompt and zod parameters). Not run by
//! the tests: its output is committed. Rerun with the repositories fetched (the library's `fetch`):
//!   node scripts/search-catalog-saas.mjs /work/.mirror > catalog/saas-servers.json
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

// Sentry: the generated definitions are tools/list entries (less the server's own bookkeeping).
// Its two meta tools (search and execute other tools) are left out: they search tools themselves.
for (const t of JSON.parse(show("getsentry+sentry-mcp", "packages/mcp-core/src/toolDefinitions.json"))) {
  if (t.name === "search_sentry_tools" || t.name === "execute_sentry_tool") continue;
  const { title, ...annotations } = t.annotations ?? {};
  const tool = { name: t.name, description: t.description, inputSchema: t.inputSchema };
  if (title) tool.title = title;
  if (Object.keys(annotations).length) tool.annotations = annotations;
  add("sentry", tool);
}

// Notion: one tool per OpenAPI operation, as its server generates them: name `API-<operationId>`,
// description the summary (and the description when there is one), arguments the path/query
// parameters and the JSON body's top-level properties.
{
  const api = JSON.parse(show("makenotion+notion-mcp-server", "scripts/notion-openapi.json"));
  const deref = (x) => {
    while (x?.$ref) x = x.$ref.split("/").slice(1).reduce((o, k) => o[k], api);
    return x;
  };
  for (const [, ops] of Object.entries(api.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (!op?.operationId) continue;
      const properties = {};
      const required = [];
      for (const p of (op.parameters ?? []).map(deref)) {
        if (!p?.name || p.in === "header") continue;
        properties[p.name] = { type: p.schema?.type ?? "string", description: p.description ?? "" };
        if (p.required) required.push(p.name);
      }
      const body = deref(op.requestBody?.content?.["application/json"]?.schema);
      for (const [k, v] of Object.entries(body?.properties ?? {})) {
        const s = deref(v);
        properties[k] = { type: s?.type ?? "object", description: s?.description ?? v.description ?? "" };
      }
      required.push(...(body?.required ?? []));
      const description = [op.summary, op.description].filter(Boolean).join("\n");
      add("notion", {
        name: `API-${op.operationId}`,
        title: op.summary,
        description,
        inputSchema: required.length ? { type: "object", properties, required } : { type: "object", properties },
        annotations: { readOnlyHint: method === "get" },
      });
    }
  }
}

// Stripe: each module's `method`, its annotations' title, the prompt (template interpolations
// dropped) and the zod object's keys with their `.describe(...)` texts.
{
  const repo = "stripe+agent-toolkit";
  for (const f of files(repo, "tools/typescript/src/shared").filter((f) => /\/[a-z]+[A-Z]\w+\.ts$/.test(f))) {
    const src = show(repo, f);
    const method = src.match(/^\s+method: '([a-z_]+)'/m)?.[1];
    if (!method) continue;
    const title = src.match(/title: '([^']+)'/)?.[1];
    const fn = src.match(/description: (\w+)\(/)?.[1] ?? "Prompt";
    const head = `${fn} = \\([^)]*\\)(?:: string)? => `;
    const prompt = src.match(new RegExp(head + "`([\\s\\S]*?)`;")) ?? src.match(new RegExp(head + "\\{[\\s\\S]*?return `([\\s\\S]*?)`;"));
    const description = (prompt?.[1] ?? "")
      .replace(/\$\{[^}]*\}/g, "")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .join("\n");
    const from = src.indexOf("Parameters = ");
    const end = src.indexOf("\nexport", from);
    const params = src.slice(from, end < 0 ? undefined : end);
    const properties = {};
    const required = [];
    const indent = params.match(/z\.object\(\{\n( *)\w/)?.[1] ?? "    ";
    const key = new RegExp(`^${indent}(\\w+): z\\s*\\.(\\w+)\\(([\\s\\S]*?)(?=^${indent}\\w+: z|^ {0,${indent.length - 2}}\\}\\))`, "gm");
    for (const m of params.matchAll(key)) {
      const [, name, kind, rest] = m;
      const desc = [...rest.matchAll(/\.describe\(\s*(['`])([\s\S]*?)\1\s*\)/g)].pop()?.[2] ?? "";
      const type = { string: "string", number: "number", boolean: "boolean", array: "array", enum: "string", object: "object" }[kind] ?? "string";
      properties[name] = { type, description: desc.replace(/'\s*\+\s*'/g, "").replace(/\s+/g, " ") };
      if (!/\.optional\(\)/.test(rest)) required.push(name);
    }
    const ann = {};
    for (const h of ["destructiveHint", "idempotentHint", "openWorldHint", "readOnlyHint"]) {
      const v = src.match(new RegExp(`${h}: (true|false)`))?.[1];
      if (v) ann[h] = v === "true";
    }
    add("stripe", {
      name: method,
      title,
      description,
      inputSchema: required.length ? { type: "object", properties, required } : { type: "object", properties },
      annotations: ann,
    });
  }
}

const groups = [
  ["sentry", "Sentry", "Errors, issues, events, traces, releases, monitors and projects in Sentry"],
  ["notion", "Notion", "Notion pages, blocks, databases, comments and users"],
  ["stripe", "Stripe", "Stripe customers, products, prices, invoices, subscriptions, refunds and payments"],
].map(([name, title, description]) => ({ name, title, description }));
const used = new Set(tools.map((t) => t.groups[0]));
const doc = {
  server: {
    name: "saas-mcp-servers",
    version: "2026.11.23",
    instructions: "The tools that Sentry's, Notion's and Stripe's MCP servers publish, for measuring search mode: their calls answer simulated results.",
  },
  groups: groups.filter((g) => used.has(g.name)),
  tags: [
    { name: "read-only", description: "Does not change anything (readOnlyHint)" },
    { name: "destructive", description: "May delete or overwrite (destructiveHint)" },
  ],
  tools,
  views: { search: { description: "Every tool, behind find_tools and call_tool", mode: "search" } },
};
process.stdout.write(JSON.stringify(doc, null, 1) + "\n");
process.stderr.write(
  `${tools.length} tools: ` + [...used].map((g) => `${g} ${tools.filter((t) => t.groups[0] === g).length}`).join(", ") + "\n",
);
