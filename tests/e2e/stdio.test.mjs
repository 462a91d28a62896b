// E2E: `mcp-sieve stdio` launched exactly as a desktop client launches it (a command and its
// arguments, MCP over the child's stdin/stdout), by the official TypeScript SDK's
// `StdioClientTransport` — v1 (`@modelcontextprotocol/sdk`, 2025-11-25) and v2
// (`@modelcontextprotocol/client/stdio`, in its legacy, auto and pinned 2026-07-28 modes): lists,
// views from flags, search mode, calls, a tool outside the view refused. Then what no SDK sends:
// a garbage line gets a JSON-RPC parse error and the server keeps serving; closing stdin ends
// the process. The official Python SDK's `stdio_client` does the same from .venv
// (scripts/bootstrap.sh). Needs target/debug/mcp-sieve (scripts/build.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = `${ROOT}target/debug/mcp-sieve`;
const CATALOG = `${ROOT}catalog/default.json`;
// Search mode's sentence encoder comes from the Hugging Face cache only: no test reaches the hub.
const OFFLINE = { ...process.env, HF_HUB_OFFLINE: '1' };

/** The SDK v1 client over `mcp-sieve stdio ARGS`, as a client configuration would launch it. */
async function v1(args) {
  const client = new ClientV1({ name: 'stdio-e2e', version: '1.0.0' });
  await client.connect(new StdioV1({ command: BIN, args: ['stdio', '--catalog', CATALOG, ...args], env: OFFLINE, stderr: 'pipe' }));
  return client;
}

async function v2(args, mode) {
  const client = new ClientV2({ name: 'stdio-e2e-v2', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StdioV2({ command: BIN, args: ['stdio', '--catalog', CATALOG, ...args], env: OFFLINE, stderr: 'pipe' }));
  return client;
}

const names = (r) => r.tools.map((t) => t.name).sort();

test('SDK v1 over stdio: a view from flags, calls inside it, a tool outside it refused', { timeout: 60_000 }, async () => {
  const client = await v1(['--groups', 'utilities,calendar', '--exclude-tags', 'destructive']);
  try {
    const listed = names(await client.listTools());
    assert.equal(listed.length, 10, listed.join());
    assert.ok(listed.includes('echo') && listed.includes('list_events') && !listed.includes('delete_event'));
    const echoed = await client.callTool({ name: 'echo', arguments: { message: 'over stdio' } });
    assert.match(echoed.content[0].text, /over stdio/);
    await assert.rejects(
      client.callTool({ name: 'send_email', arguments: { to: 'a@b.c', subject: 's', body: 'b' } }),
      /Unknown tool/,
    );
    const groups = await client.request({ method: 'groups/list', params: {} }, (await import('zod')).z.any());
    assert.deepEqual(groups.groups.map((g) => g.name).sort(), ['calendar', 'utilities']);
  } finally {
    await client.close();
  }
});

test('SDK v1 over stdio: --search lists find_tools, describe_tools and call_tool, which search and call inside the view', { timeout: 60_000 }, async () => {
  const client = await v1(['--search', '--groups', 'utilities']);
  try {
    assert.deepEqual(names(await client.listTools()), ['call_tool', 'describe_tools', 'find_tools']);
    const found = await client.callTool({ name: 'find_tools', arguments: { query: 'add two numbers', limit: 3 } });
    assert.equal(found.structuredContent.tools[0].name, 'add');
    const sum = await client.callTool({ name: 'call_tool', arguments: { name: 'add', arguments: { a: 2, b: 40 } } });
    assert.match(sum.content[0].text, /42/);
    const outside = await client.callTool({ name: 'call_tool', arguments: { name: 'list_events', arguments: {} } }).catch((e) => e);
    assert.match(String(outside.message ?? outside.content?.[0]?.text), /Unknown tool/);
  } finally {
    await client.close();
  }
});

for (const [mode, era] of [['legacy', '2025-11-25'], ['auto', '2026-07-28'], [{ pin: '2026-07-28' }, '2026-07-28']]) {
  test(`SDK v2 over stdio, ${JSON.stringify(mode)} mode: ${era}, a named view`, { timeout: 60_000 }, async () => {
    const client = await v2(['--view', 'email'], mode);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), era);
      const listed = names(await client.listTools());
      assert.equal(listed.length, 8, listed.join());
      assert.ok(listed.every((n) => !['echo', 'list_events'].includes(n)));
      const echo = await client.callTool({ name: 'echo', arguments: { text: 'x' } }).catch((e) => e);
      assert.match(String(echo.message ?? echo.content?.[0]?.text), /Unknown tool/);
    } finally {
      await client.close();
    }
  });
}

for (const [name, mode] of [['legacy (the request on stdout, the answer on stdin)', 'legacy'], ['2026-07-28 (input_required)', { pin: '2026-07-28' }]]) {
  test(`over stdio, a tool asks the client mid-call: ${name}`, { timeout: 60_000 }, async () => {
    const client = new ClientV2(
      { name: 'stdio-ask', version: '1.0.0' },
      { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode } },
    );
    const asked = [];
    client.setRequestHandler('sampling/createMessage', async (req) => {
      asked.push(req.params.messages[0].content.text);
      return { role: 'assistant', content: { type: 'text', text: 'four' }, model: 'test-model', stopReason: 'endTurn' };
    });
    client.setRequestHandler('elicitation/create', async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
    });
    await client.connect(new StdioV2({ command: BIN, args: ['stdio', '--catalog', `${ROOT}catalog/conformance.json`], stderr: 'pipe' }));
    try {
      const sampled = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'two plus two?' } });
      assert.equal(sampled.content[0].text, 'LLM response: four');
      const elicited = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who are you?' } });
      assert.match(elicited.content[0].text, /^User response: action: accept, content: .*ada@example.com/);
      assert.deepEqual(asked, ['two plus two?', 'who are you?'], 'the client was asked each question once');
    } finally {
      await client.close().catch(() => {});
    }
  });
}

test("the official Python SDK's stdio_client (.venv, tests/python/stdio_client.py): a view from flags, a call, search", { timeout: 60_000 }, () => {
  const spec = {
    command: BIN,
    args: ['stdio', '--catalog', CATALOG, '--groups', 'utilities'],
    call: ['add', { a: 2, b: 40 }],
    outside: 'list_events',
    searchArgs: ['stdio', '--catalog', CATALOG, '--search'],
    query: 'send an email',
  };
  const out = execFileSync(`${ROOT}.venv/bin/python`, [`${ROOT}tests/python/stdio_client.py`, JSON.stringify(spec)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const seen = JSON.parse(out.trim().split('\n').pop());
  assert.equal(seen.protocolVersion, '2025-11-25');
  assert.deepEqual(seen.listed, ['add', 'current_time', 'echo', 'long_report', 'text_stats']);
  assert.equal(seen.called, '42');
  assert.match(seen.outside, /Unknown tool/);
  assert.deepEqual(seen.searchListed, ['call_tool', 'describe_tools', 'find_tools']);
  assert.equal(seen.found[0], 'send_email');
});

/** Starts `mcp-sieve stdio` with pipes; `next()` resolves the next stdout message. */
function raw(args = []) {
  const child = spawn(BIN, ['stdio', ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: OFFLINE });
  const queue = [];
  const waiting = [];
  let buf = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const msg = JSON.parse(line); // every stdout line is one JSON-RPC message
      if (waiting.length) waiting.shift()(msg);
      else queue.push(msg);
    }
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    stderr: () => stderr,
    send: (line) => child.stdin.write(`${line}\n`),
    next: () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => waiting.push(r))),
  };
}

test('a garbage line gets a JSON-RPC parse error and the server keeps serving; closing stdin ends it', { timeout: 30_000 }, async () => {
  const s = raw();
  s.send('{"jsonrpc": "2.0", "id": 1, "method": ');
  const parse = await s.next();
  assert.equal(parse.error.code, -32700);
  assert.equal(parse.id, null);
  s.send('"just a string"');
  assert.equal((await s.next()).error.code, -32600);
  s.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
  assert.equal((await s.next()).result.protocolVersion, '2025-11-25');
  s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  s.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 'still here' } } }));
  const echoed = await s.next();
  assert.equal(echoed.id, 3);
  assert.match(echoed.result.content[0].text, /still here/);
  const t0 = Date.now();
  s.child.stdin.end();
  assert.equal(await s.exited, 0);
  assert.ok(Date.now() - t0 < 5_000, `ended ${Date.now() - t0} ms after stdin closed`);
  assert.match(s.stderr(), /serving MCP over stdio/, 'logs go to stderr');
});

test('a line longer than the body limit is refused and the next one is served', { timeout: 30_000 }, async () => {
  const s = raw();
  s.child.stdin.write(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"${'a'.repeat(1_200_000)}"}}\n`);
  const refused = await s.next();
  assert.equal(refused.error.code, -32600);
  assert.match(refused.error.message, /longer than/);
  s.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }));
  assert.ok((await s.next()).result.supportedVersions.includes('2026-07-28'));
  s.child.stdin.end();
  assert.equal(await s.exited, 0);
});
