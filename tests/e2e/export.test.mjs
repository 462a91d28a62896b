// Exports for model APIs: `mcp-sieve export` (the core's src/export.rs) and the package's
// `sieve.export` (src/wasm/export.js) write the same JSON for the same catalog and views; that
// JSON type-checks (tsc, strict) against the providers' official SDK types — @anthropic-ai/sdk's
// beta `MessageCreateParamsNonStreaming` (betas, mcp_servers, tools with BetaMCPToolset) and
// openai's `ResponseCreateParamsNonStreaming` (tools with NamespaceTool and ToolSearchTool) — and
// the same check fails when a field is misspelt; the URL the Anthropic export names, served by the
// real native server, lists exactly the tools its toolset configures (official MCP SDK client).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startNative, toolNames } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const { Sieve } = await import(path.join(ROOT, 'pkg', 'node.js'));
const sieve = Sieve.fromCatalog(JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8')));
const cli = (args) => JSON.parse(execFileSync(BIN, ['export', ...args], { encoding: 'utf8' }));
const BASE = 'http://127.0.0.1:8788/mcp';

// The same selection asked of the CLI (a view or flags) and of the package (filter, pinned, url).
const CASES = [
  [['--view', 'search'], { pinned: ['echo'], url: `${BASE}/search?mode=list` }],
  [['--view', 'email'], { filter: { groups: ['email'] }, url: `${BASE}/email` }],
  [['--groups', 'calendar,files', '--exclude-tags', 'destructive'],
    { filter: { groups: ['calendar', 'files'], excludeTags: ['destructive'] }, url: `${BASE}?groups=calendar,files&excludeTags=destructive` }],
  [[], { url: BASE }],
];

test('the CLI and the package write the same exports', () => {
  for (const format of ['anthropic', 'openai']) {
    for (const [args, options] of CASES) {
      const fromCli = cli(['--format', format, ...args]);
      assert.deepEqual(sieve.export({ format, ...options }), fromCli, `${format} ${args.join(' ')}`);
    }
  }
  const search = sieve.export({ format: 'openai', pinned: ['echo'] });
  const fns = search.tools.flatMap((n) => n.tools ?? []);
  assert.equal(fns.length, 74);
  assert.deepEqual(fns.filter((f) => !f.defer_loading).map((f) => f.name), ['echo']);
  assert.ok(search.tools.every((n) => n.type === 'tool_search' || n.tools.length <= 10));
  assert.deepEqual(search.tools.at(-1), { type: 'tool_search' });
  assert.throws(() => sieve.export({ format: 'gemini' }), (e) => e.code === -32602 && /anthropic.*openai/.test(e.message));
});

// tsc on the exported JSON as object literals (`satisfies` keeps them fresh, so a misspelt or
// unknown field is an error, not a widened type).
const dir = path.join(ROOT, 'target', 'export-types');
after(() => rmSync(dir, { recursive: true, force: true }));

function typecheck(anthropic, openai) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', skipLibCheck: true, types: [] },
    files: ['check.ts'],
  }));
  writeFileSync(path.join(dir, 'check.ts'), `import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
type AnthropicPart = Pick<Anthropic.Beta.Messages.MessageCreateParamsNonStreaming, 'betas' | 'mcp_servers' | 'tools'>;
type OpenAIPart = Pick<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'tools'>;
${anthropic.map((a, i) => `export const anthropic${i} = ${a} satisfies AnthropicPart;`).join('\n')}
${openai.map((o, i) => `export const openai${i} = ${o} satisfies OpenAIPart;`).join('\n')}
`);
  return spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', dir], { encoding: 'utf8' });
}

test('the exports type-check against @anthropic-ai/sdk and openai, and a wrong field does not', { timeout: 300_000 }, () => {
  const anthropic = CASES.map(([args]) => JSON.stringify(cli(['--format', 'anthropic', ...args])));
  const openai = CASES.map(([args]) => JSON.stringify(cli(['--format', 'openai', ...args])));
  const ok = typecheck(anthropic, openai);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  // Two runs, each with one wrong field in an Anthropic and one in an OpenAI export: both errors must show.
  for (const [a, o, fields] of [
    [anthropic[0].replace('"defer_loading"', '"deferLoading"'), openai[0].replace('"type":"namespace"', '"type":"namespaces"'), ['deferLoading', 'namespaces']],
    [anthropic[1].replace('"mcp_server_name"', '"server_name"'), openai[1].replace('"defer_loading"', '"defer"'), ['server_name', '"defer"']],
  ]) {
    const r = typecheck([a], [o]);
    assert.notEqual(r.status, 0, `tsc accepted ${fields}`);
    for (const field of fields) assert.match(r.stdout, new RegExp(`error TS.*${field}`), r.stdout);
  }
});

test('the URL an Anthropic export names lists exactly the tools its toolset configures (native server)', { timeout: 60_000 }, async () => {
  const server = await startNative();
  try {
    for (const [args] of CASES.slice(0, 3)) {
      const out = cli(['--format', 'anthropic', '--url', server.url.replace(/\/mcp$/, ''), ...args]);
      const client = new Client({ name: 'export-e2e', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(out.mcp_servers[0].url)));
      try {
        assert.deepEqual(await toolNames(client), Object.keys(out.tools[0].configs), args.join(' '));
      } finally {
        await client.close();
      }
    }
  } finally {
    await server.stop();
  }
});
