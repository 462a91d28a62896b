// E2E: the MCP Inspector CLI (@modelcontextprotocol/inspector-cli, the official debugging client)
// against the local Worker (wrangler dev) — or the native server with SIEVE_TARGET=native —
// over Streamable HTTP: tools/list, tools/call (success, a tool error, an unknown tool), plus
// resources/list and prompts/list. The CLI resolves its own package.json against the working
// directory, so it runs from its build folder (see TOOLCHAIN.md).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTarget } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI_DIR = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'inspector-cli', 'build');

let server;

before(async () => { server = await startTarget(); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

/** Runs `inspector-cli <url> --transport http ...args`; resolves { code, stdout, stderr }. */
function inspector(...args) {
  return new Promise((resolve) => {
    execFile(process.execPath, ['index.js', server.url, '--transport', 'http', ...args],
      { cwd: CLI_DIR, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

/** Runs the CLI and parses its JSON output, failing with its stderr when it did not succeed. */
async function inspectorJson(...args) {
  const r = await inspector(...args);
  assert.equal(r.code, 0, `inspector ${args.join(' ')} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

test('tools/list: first page of the demo catalog with a cursor', async () => {
  const res = await inspectorJson('--method', 'tools/list');
  assert.ok(Array.isArray(res.tools) && res.tools.length > 0, 'tools array');
  const names = res.tools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length, 'no duplicates');
  for (const t of res.tools) {
    assert.equal(typeof t.description, 'string', `${t.name} description`);
    assert.equal(t.inputSchema?.type, 'object', `${t.name} inputSchema`);
  }
  assert.ok(names.includes('echo'), 'echo listed');
  assert.equal(typeof res.nextCursor, 'string', 'more pages announced');
});

test('tools/call: add and echo do real work', async () => {
  const sum = await inspectorJson('--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=2', '--tool-arg', 'b=40');
  assert.equal(sum.content[0].text, '42');
  assert.equal(sum.structuredContent.sum, 42);
  const echo = await inspectorJson('--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'message=hello inspector');
  assert.equal(echo.content[0].text, 'hello inspector');
});

test('tools/call: bad arguments are a tool error the model can read', async () => {
  const res = await inspectorJson('--method', 'tools/call', '--tool-name', 'add', '--tool-arg', 'a=2');
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /params\.arguments\.b/);
});

test('tools/call: an unknown tool fails with -32602 naming it', async () => {
  const r = await inspector('--method', 'tools/call', '--tool-name', 'no_such_tool');
  assert.notEqual(r.code, 0, 'non-zero exit');
  assert.match(r.stdout + r.stderr, /-32602.*no_such_tool/);
});

test('resources/list and prompts/list', async () => {
  const res = await inspectorJson('--method', 'resources/list');
  assert.ok(res.resources.some((r) => r.uri === 'workspace://readme'), 'workspace://readme listed');
  const prompts = await inspectorJson('--method', 'prompts/list');
  assert.ok(prompts.prompts.some((p) => p.name === 'summarize_inbox'), 'summarize_inbox listed');
});
