// E2E (native server): three servers nobody here wrote behind one endpoint at once —
// @modelcontextprotocol/server-everything over Streamable HTTP (behind a small recording proxy,
// so the test sees the headers that reach it), and @modelcontextprotocol/server-filesystem and
// @modelcontextprotocol/server-memory over stdio (child processes of the gateway). The official
// SDK v2 client lists, filters (a view per upstream group), searches and calls through them; a
// header's `${SECRET}` reaches the upstream while the client's own Authorization never does and
// the secret shows nowhere (log, errors, server/discover, status); a missing secret stops the
// server naming it; killing one stdio upstream mid-test takes only its tools out, and it comes
// back by itself while the others keep answering. Against the Worker (the tests/e2e/ folder runs
// whole against it): HTTP upstreams with a secret header (a second copy of the same server stays
// out: its resource URIs collide), the same credential checks, and a stdio upstream refused as a
// configuration error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startNative, freePort } from './harness.mjs';
import { startEverything, startWith, native, ROOT, sleep } from '../security/helpers.mjs';

const NATIVE = native();
const nativeOnly = { skip: !NATIVE && 'stdio upstreams run in the native server only' };

const SECRET = `sekrit-${process.pid}-${Date.now()}`;
const DOWNSTREAM_TOKEN = 'downstream-client-token';

/** The `bin` file a package names (started with `node`, never `npx` at test time). */
function binOf(pkg) {
  const dir = path.join(ROOT, 'node_modules', ...pkg.split('/'));
  const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const bin = typeof json.bin === 'string' ? json.bin : Object.values(json.bin)[0];
  return path.join(dir, bin);
}

/** A proxy in front of `target` that records the headers of every request it forwards. */
async function recordingProxy(target) {
  const seen = [];
  const port = await freePort();
  const srv = http.createServer((req, res) => {
    seen.push({ ...req.headers });
    const t = new URL(target);
    const up = http.request({ host: t.hostname, port: t.port, path: t.pathname, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    up.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}/mcp`, seen, stop: () => new Promise((r) => srv.close(r)) };
}

let everything, proxy, server, tmp, doc, docPath;

before(async () => {
  everything = await startEverything();
  proxy = await recordingProxy(everything.url);
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-upstreams-'));
  writeFileSync(path.join(tmp, 'hello.txt'), 'hello from the filesystem server\n');
  doc = {
    upstreams: {
      everything: { url: proxy.url, title: 'Everything', headers: { 'X-Upstream-Key': 'Bearer ${UPSTREAM_TEST_SECRET}' } },
      files: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), tmp], title: 'Files', tagsFromAnnotations: true },
      memory: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-memory')], env: { MEMORY_FILE_PATH: path.join(tmp, 'memory.jsonl') }, prefix: 'mem_' },
    },
    views: {
      files: { filter: { groups: ['files'] } },
      find: { mode: 'search' },
    },
  };
  if (!NATIVE) {
    // The Worker: HTTP upstreams only. The same server a second time (under another prefix)
    // serves the same resource URIs: a collision, so it stays out while the first serves.
    delete doc.upstreams.files;
    delete doc.upstreams.memory;
    doc.upstreams.mirror = { url: everything.url, prefix: 'mirror_' };
    doc.views.files = { filter: { groups: ['everything'] } };
  }
  docPath = path.join(tmp, 'catalog.json');
  writeFileSync(docPath, JSON.stringify(doc));
  server = await startWith(doc, { UPSTREAM_TEST_SECRET: SECRET, MCP_SIEVE_TOKEN: DOWNSTREAM_TOKEN });
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  await proxy?.stop();
  await everything?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

async function connect(endpoint = server.url, mode = 'auto') {
  const client = new Client({ name: 'sieve-upstreams-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { Authorization: `Bearer ${DOWNSTREAM_TOKEN}` } },
  });
  await client.connect(transport);
  return client;
}

async function names(client) {
  const out = [];
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    out.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
  } while (cursor);
  return out;
}

async function status() {
  const r = await fetch(`${server.base}/mcp-sieve/upstreams`, { headers: { Authorization: `Bearer ${DOWNSTREAM_TOKEN}` } });
  assert.equal(r.status, 200);
  return r.json();
}

const text = (r) => r.content.map((c) => c.text ?? '').join('\n');

for (const mode of ['legacy', 'auto']) {
  test(`SDK v2 client (${mode}): three upstreams behind one endpoint, namespaced, filtered, called`, { timeout: 120_000, ...nativeOnly }, async () => {
    const client = await connect(server.url, mode);
    try {
      const all = await names(client);
      for (const n of ['everything_echo', 'files_list_directory', 'files_read_text_file', 'mem_create_entities', 'mem_read_graph']) {
        assert.ok(all.includes(n), `${n} is listed: ${all.join(', ')}`);
      }
      assert.ok(!all.includes('echo'), 'every upstream tool carries its prefix');
      // Groups: one per upstream, with its title.
      const groups = await client.request({ method: 'groups/list', params: {} }, z.object({ groups: z.array(z.any()) }).passthrough());
      const byName = Object.fromEntries(groups.groups.map((g) => [g.name, g]));
      assert.equal(byName.files?.title, 'Files');
      assert.equal(byName.everything?.title, 'Everything');
      assert.ok(byName.memory, 'an upstream without a title is a group by its name');
      // A filter across upstreams: read-only tools (the files server's annotations, as tags).
      const ro = await client.request({ method: 'tools/list', params: { filter: { tags: ['read-only'] } } });
      assert.ok(ro.tools.length > 0 && ro.tools.every((t) => t.name.startsWith('files_')), ro.tools.map((t) => t.name).join(', '));
      // Calls reach the right upstream with the name it knows.
      const echo = await client.callTool({ name: 'everything_echo', arguments: { message: 'via the gateway' } });
      assert.match(text(echo), /via the gateway/);
      const ls = await client.callTool({ name: 'files_list_directory', arguments: { path: tmp } });
      assert.match(text(ls), /hello\.txt/);
      const entity = `Gateway${mode}`;
      await client.callTool({ name: 'mem_create_entities', arguments: { entities: [{ name: entity, entityType: 'test', observations: ['made through mcp-sieve'] }] } });
      const graph = await client.callTool({ name: 'mem_read_graph', arguments: {} });
      assert.match(text(graph), new RegExp(entity));
    } finally {
      await client.close();
    }
  });
}

test('a view per upstream group, and search mode across all upstreams', { timeout: 60_000 }, async () => {
  const files = await connect(`${server.url}/files`);
  const prefix = NATIVE ? 'files_' : 'everything_';
  try {
    const only = await names(files);
    assert.ok(only.length > 0 && only.every((n) => n.startsWith(prefix)), only.join(', '));
    const outside = NATIVE ? 'everything_echo' : 'mirror_echo';
    await assert.rejects(files.callTool({ name: outside, arguments: { message: 'x' } }), /Unknown tool|unknown/i);
  } finally {
    await files.close();
  }
  const find = await connect(`${server.url}/find`);
  try {
    assert.deepEqual((await names(find)).sort(), ['call_tool', 'describe_tools', 'find_tools']);
    const found = await find.callTool({ name: 'find_tools', arguments: { query: NATIVE ? 'directory listing files' : 'echo message' } });
    assert.match(text(found), NATIVE ? /files_list_directory/ : /everything_echo/);
    const r = await find.callTool({ name: 'call_tool', arguments: { name: 'everything_echo', arguments: { message: 'searched' } } });
    assert.match(text(r), /searched/);
  } finally {
    await find.close();
  }
});

test('credentials: the secret reaches the upstream; the client token never does; the secret shows nowhere', { timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    await client.callTool({ name: 'everything_echo', arguments: { message: 'creds' } });
    const discover = await fetch(server.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${DOWNSTREAM_TOKEN}`, 'MCP-Protocol-Version': '2026-07-28' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }),
    });
    assert.ok(!(await discover.text()).includes(SECRET), 'server/discover never holds the secret');
  } finally {
    await client.close();
  }
  assert.ok(proxy.seen.length > 0);
  for (const h of proxy.seen) {
    assert.equal(h['x-upstream-key'], `Bearer ${SECRET}`, 'the header, its secret resolved, on every request');
    assert.equal(h.authorization, undefined, "the downstream client's Authorization is never forwarded");
  }
  if (NATIVE) assert.ok(!JSON.stringify(await status()).includes(SECRET), 'the status never holds the secret');
  assert.ok(!server.output().includes(SECRET), 'the log never holds the secret');
});

test('a missing secret is a configuration error naming it, and the server does not start', { timeout: 30_000, ...nativeOnly }, async () => {
  const bin = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
  const port = await freePort();
  const env = { ...process.env };
  delete env.UPSTREAM_TEST_SECRET;
  const child = spawn(bin, ['serve', '--host', '127.0.0.1', '--port', String(port), '--catalog', docPath], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { out += c; });
  const code = await new Promise((r) => child.on('exit', r));
  assert.notEqual(code, 0, out);
  assert.match(out, /upstreams\.everything\.headers\["X-Upstream-Key"\] uses the secret \$\{UPSTREAM_TEST_SECRET\}, which is not set/);
});

test('a killed stdio upstream leaves the lists, its calls name it, it comes back; the others keep answering', { timeout: 120_000, ...nativeOnly }, async () => {
  // 2025-11-25: the client asks the server each time (a 2026-07-28 client keeps lists for their ttlMs).
  const client = await connect(server.url, 'legacy');
  try {
    const before = await status();
    const memory = before.upstreams.find((u) => u.name === 'memory');
    assert.equal(memory.state, 'up');
    assert.equal(memory.transport, 'stdio');
    assert.ok(memory.pid > 0, JSON.stringify(memory));
    assert.deepEqual(before.upstreams.map((u) => u.state), ['up', 'up', 'up']);
    process.kill(memory.pid, 'SIGKILL');
    await sleep(200);
    // A call to it fails naming the upstream and the cause.
    await assert.rejects(client.callTool({ name: 'mem_read_graph', arguments: {} }), /upstream "memory"/);
    // The others keep answering meanwhile.
    assert.match(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'still here' } })), /still here/);
    assert.match(text(await client.callTool({ name: 'files_list_directory', arguments: { path: tmp } })), /hello\.txt/);
    // It comes back by itself (restarted with backoff), its tools listed again.
    const deadline = Date.now() + 30_000;
    let back = false;
    while (!back && Date.now() < deadline) {
      await sleep(500);
      const now = await names(client);
      const st = (await status()).upstreams.find((u) => u.name === 'memory');
      back = now.includes('mem_read_graph') && st.state === 'up' && st.pid && st.pid !== memory.pid;
    }
    assert.ok(back, `memory came back: ${JSON.stringify((await status()).upstreams)}\n${server.output()}`);
    const graph = await client.callTool({ name: 'mem_read_graph', arguments: {} });
    assert.ok(!graph.isError, text(graph));
    assert.match(server.output(), /\[memory\] started/, 'the log names the upstream');
  } finally {
    await client.close();
  }
});

test('Worker: an upstream whose URIs collide stays out while the other serves; a missing secret and a stdio upstream are configuration errors', { timeout: 120_000, skip: NATIVE && 'the Worker part' }, async () => {
  const client = await connect();
  try {
    const all = await names(client);
    assert.ok(all.includes('everything_echo') && !all.some((n) => n.startsWith('mirror_')), all.join(', '));
    assert.match(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'second' } })), /second/);
  } finally {
    await client.close();
  }
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
  const ask = async (s) => (await fetch(s.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify(init) })).text();
  const missing = await startWith(doc, {});
  try {
    const body = await ask(missing);
    assert.match(body, /uses the secret \$\{UPSTREAM_TEST_SECRET\}, which is not set/);
  } finally {
    await missing.stop();
  }
  const stdio = await startWith({ upstreams: { files: { command: 'node', args: ['server.js'] } } }, {});
  try {
    assert.match(await ask(stdio), /upstreams\.files\.command \(\\"node\\"\): a stdio upstream runs only in the native server/);
  } finally {
    await stdio.stop();
  }
});
