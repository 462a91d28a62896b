// E2E (native server): four servers nobody here wrote behind one endpoint at once —
// @modelcontextprotocol/server-everything over Streamable HTTP (behind a small recording proxy,
// so the test sees the headers that reach it), @modelcontextprotocol/server-filesystem and
// @modelcontextprotocol/server-memory over stdio (child processes of the gateway), and a FastMCP 4
// server with tagged tools over Streamable HTTP (tests/python/fastmcp_server.py, in .venv). The
// official SDK v2 client and the official Python SDK client (`mcp`, tests/python/http_client.py)
// list, filter (FastMCP's tags, a view per upstream group, a view URL), search and call through
// them, in both protocol eras; a header's `${SECRET}` reaches the upstream while the client's own
// Authorization never does and the secret shows nowhere (log, errors, server/discover, status); a
// missing secret stops the server naming it; killing one stdio upstream mid-test takes only its
// tools out, and it comes back by itself, and killing the FastMCP server (by PID) takes its tools
// out until it is started again, while the others keep answering. The book's "Put it in front
// of your servers" document, exactly as printed, passes `mcp-sieve check` and serves with local
// stand-ins for its URLs and paths. Against the Worker (the tests/e2e/ folder runs whole against
// it): HTTP upstreams (FastMCP among them) with a secret header (a second copy of the same server
// stays out: its resource URIs collide), the FastMCP and Python client tests, the killed FastMCP
// server, the same credential checks, and a stdio upstream refused as a configuration error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { freePort } from './harness.mjs';
import { startEverything, startFastmcp, startTogether, startWith, binOf, native, recordingProxy, ROOT, sleep } from '../security/helpers.mjs';

const NATIVE = native();
const nativeOnly = { skip: !NATIVE && 'stdio upstreams run in the native server only' };

const SECRET = `sekrit-${process.pid}-${Date.now()}`;
const DOWNSTREAM_TOKEN = 'downstream-client-token';

let everything, fastmcp, proxy, server, tmp, doc, docPath;

before(async () => {
  [everything, fastmcp] = await startTogether([startEverything(), startFastmcp()]);
  proxy = await recordingProxy(everything.url);
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-upstreams-'));
  writeFileSync(path.join(tmp, 'hello.txt'), 'hello from the filesystem server\n');
  doc = {
    upstreams: {
      everything: { url: proxy.url, title: 'Everything', headers: { 'X-Upstream-Key': 'Bearer ${UPSTREAM_TEST_SECRET}' } },
      files: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), tmp], title: 'Files', tagsFromAnnotations: true },
      memory: { command: process.execPath, args: [binOf('@modelcontextprotocol/server-memory')], env: { MEMORY_FILE_PATH: path.join(tmp, 'memory.jsonl') }, prefix: 'mem_' },
      notes: { url: fastmcp.url, title: 'Notes (FastMCP)' },
    },
    views: {
      files: { filter: { groups: ['files'] } },
      find: { mode: 'search' },
      read: { filter: { tags: ['read'] } },
    },
  };
  if (!NATIVE) {
    // The Worker: HTTP upstreams only. The same server a second time (under another prefix)
    // serves the same resource URIs: a collision of items, not of upstreams — the URIs both
    // claim at once are refused from both (a tie nobody wins), their tools serve.
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
  await fastmcp?.stop();
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
  test(`SDK v2 client (${mode}): four upstreams behind one endpoint, namespaced, filtered, called`, { timeout: 120_000, ...nativeOnly }, async () => {
    const client = await connect(server.url, mode);
    try {
      const all = await names(client);
      for (const n of ['everything_echo', 'files_list_directory', 'files_read_text_file', 'mem_create_entities', 'mem_read_graph', 'notes_list_notes']) {
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

const NOTES_READ = ['notes_list_notes', 'notes_read_note', 'notes_search_notes'];

test("a FastMCP server's tags: {\"tags\": [\"read\"]} lists exactly its read tools; filters across upstreams; calls and prompts route", { timeout: 60_000 }, async () => {
  const client = await connect(server.url, 'legacy');
  const list = async (filter) => (await client.request({ method: 'tools/list', params: { filter } })).tools.map((t) => t.name).sort();
  try {
    assert.deepEqual(await list({ tags: ['read'] }), NOTES_READ, '_meta.fastmcp.tags imported, names namespaced');
    assert.deepEqual(await list({ tags: ['write'], excludeTags: ['destructive'] }), ['notes_add_note']);
    assert.deepEqual(await list({ tags: ['read', 'search'] }), ['notes_search_notes'], 'tags are ALL');
    const tags = await client.request({ method: 'tags/list', params: {} }, z.object({ tags: z.array(z.any()) }).passthrough());
    for (const t of ['read', 'write', 'search', 'destructive']) assert.ok(tags.tags.some((x) => x.name === t), `tag ${t} listed`);
    // Across upstreams: two upstream groups at once (ANY), each tool from one of them.
    const other = NATIVE ? 'files' : 'everything';
    const two = await list({ groups: ['notes', other] });
    assert.ok(two.includes('notes_word_count') && two.includes(`${other}_${NATIVE ? 'list_directory' : 'echo'}`), two.join(', '));
    assert.ok(two.every((n) => n.startsWith('notes_') || n.startsWith(`${other}_`)), two.join(', '));
    // Calls reach FastMCP under the name it knows; its state is its own.
    await client.callTool({ name: 'notes_add_note', arguments: { title: 'gateway', text: 'written through mcp-sieve' } });
    assert.match(text(await client.callTool({ name: 'notes_read_note', arguments: { title: 'gateway' } })), /written through mcp-sieve/);
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    assert.ok(prompts.includes('notes_summarize_notes'), prompts.join(', '));
    const prompt = await client.getPrompt({ name: 'notes_summarize_notes', arguments: {} });
    assert.match(JSON.stringify(prompt.messages), /written through mcp-sieve/);
  } finally {
    await client.close();
  }
});

const execFileP = promisify(execFile);

// A program whose calls are made at once, through two upstreams, with one that fails.
const PYTHON_PROGRAM = `
  const echoed = await Promise.all(Array.from({ length: 12 }, (_, i) => tools.everything_echo({ message: 'p' + i })));
  const settled = await Promise.allSettled([tools.notes_word_count({ text: 'three words here' }), tools.nope({})]);
  const text = (r) => (Array.isArray(r) ? r : r.content ?? [r]).map((c) => c.text ?? JSON.stringify(c)).join(' ');
  return { echoed: echoed.map(text), settled: settled.map((s) => s.status), counted: text(settled[0].value ?? {}) };`;

test('the official Python SDK client (2025-11-25 and 2026-07-28): lists, a view URL, search mode, code mode and calls through every upstream', { timeout: 120_000 }, async () => {
  const spec = {
    modes: ['legacy', 'auto'],
    url: server.url,
    view: `${server.url}/read`,
    search: `${server.url}/find`,
    token: DOWNSTREAM_TOKEN,
    call: ['everything_echo', { message: 'from python' }],
    outside: 'everything_echo',
    query: 'search notes for a word',
    searchCall: ['notes_search_notes', { query: 'welcome' }],
    code: `${server.url}?mode=code`,
    program: PYTHON_PROGRAM,
  };
  // Not execFileSync: the recording proxy in front of server-everything runs in this process.
  const { stdout } = await execFileP(path.join(ROOT, '.venv', 'bin', 'python'), [path.join(ROOT, 'tests', 'python', 'http_client.py'), JSON.stringify(spec)], { timeout: 110_000 });
  const byMode = JSON.parse(stdout.trim().split('\n').pop());
  const want = ['everything_echo', ...NOTES_READ, 'notes_add_note', ...(NATIVE ? ['files_list_directory', 'mem_read_graph'] : [])];
  for (const [mode, version] of [['legacy', '2025-11-25'], ['auto', '2026-07-28']]) {
    const seen = byMode[mode];
    assert.equal(seen.protocolVersion, version, mode);
    for (const n of want) assert.ok(seen.listed.includes(n), `${mode}: ${n} listed: ${seen.listed.join(', ')}`);
    assert.match(seen.called, /from python/);
    assert.equal(seen.calledError, false);
    assert.deepEqual(seen.viewListed, NOTES_READ, `${mode}: the view URL /mcp/read lists the FastMCP tools tagged read`);
    assert.match(seen.outside, /Unknown tool/);
    assert.deepEqual(seen.searchListed, ['call_tool', 'describe_tools', 'find_tools']);
    assert.equal(seen.found[0], 'notes_search_notes', seen.found.join(', '));
    assert.equal(seen.searchCalledError, false, seen.searchCalled);
    assert.match(seen.searchCalled, /welcome/);
    assert.deepEqual(seen.codeListed, ['describe_tools', 'find_tools', 'run_code']);
    assert.equal(seen.ran.isError, false, JSON.stringify(seen.ran));
    const { echoed, settled, counted } = seen.ran.structured.result;
    assert.deepEqual(echoed.map((e) => e.match(/p\d+/)?.[0]), Array.from({ length: 12 }, (_, i) => `p${i}`), `${mode}: each call made at once gets its own answer: ${echoed}`);
    assert.deepEqual(settled, ['fulfilled', 'rejected'], `${mode}: a FastMCP call and an unknown tool`);
    assert.match(counted, /3/);
    assert.equal(seen.ran.meta['dev.mcp-sieve/run'].calls, 14);
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

test(`the book's "Put it in front of your servers" document (docs/src/gateway.md): mcp-sieve check on it as printed, then served with local stand-ins`, { timeout: 120_000, ...nativeOnly }, async () => {
  const chapter = readFileSync(path.join(ROOT, 'docs', 'src', 'gateway.md'), 'utf8');
  const printed = chapter.match(/```json\n([\s\S]*?)\n```/)[1];
  const file = path.join(tmp, 'readme-catalog.json');
  writeFileSync(file, printed);
  const checked = await execFileP(path.join(ROOT, 'target', 'debug', 'mcp-sieve'), ['check', file]);
  assert.match(checked.stdout, /a valid catalog document/);
  // Served: its URLs and paths replaced by local stand-ins (server-everything for GitHub, behind
  // a proxy that records the headers; the FastMCP server for "notes"), everything else as printed.
  const d = JSON.parse(printed);
  const standIn = await recordingProxy(everything.url);
  d.upstreams.github.url = standIn.url;
  assert.ok(readFileSync(path.join(ROOT, d.upstreams.files.args[0])), 'the printed server-filesystem path exists (relative to the working directory)');
  d.upstreams.files.args[1] = tmp;
  d.upstreams.memory.env.MEMORY_FILE_PATH = path.join(tmp, 'readme-memory.jsonl');
  d.upstreams.notes.url = fastmcp.url;
  const token = `ghp_standin${process.pid}`;
  const s = await startWith(d, { GITHUB_TOKEN: token });
  try {
    const client = await connect(s.url, 'legacy');
    try {
      const all = await names(client);
      for (const n of ['github_echo', 'files_list_directory', 'files_read_text_file', 'mem_read_graph', 'notes_list_notes', 'notes_add_note']) {
        assert.ok(all.includes(n), `${n} listed: ${all.join(', ')}`);
      }
      assert.ok(!all.includes('notes_delete_note'), 'the policy hides what is tagged destructive (a FastMCP tag)');
      assert.match(text(await client.callTool({ name: 'github_echo', arguments: { message: 'readme' } })), /readme/);
      assert.match(text(await client.callTool({ name: 'files_list_directory', arguments: { path: tmp } })), /hello\.txt/);
      assert.match(text(await client.callTool({ name: 'notes_list_notes', arguments: {} })), /welcome/);
    } finally {
      await client.close();
    }
    const github = standIn.seen.filter((h) => h.authorization);
    assert.ok(github.length > 0 && github.every((h) => h.authorization === `Bearer ${token}`), 'the GitHub token reaches its upstream, and only it');
    const view = async (name) => {
      const c = await connect(`${s.url}/${name}`, 'legacy');
      try { return await names(c); } finally { await c.close(); }
    };
    const ro = await view('readonly');
    assert.ok(ro.includes('files_read_text_file') && ro.every((n) => n.startsWith('files_') || n.startsWith('github_')), ro.join(', '));
    const code = await view('code');
    assert.ok(code.includes('github_echo') && code.includes('files_list_directory'), code.join(', '));
    assert.ok(code.every((n) => n.startsWith('github_') || n.startsWith('files_')), code.join(', '));
    assert.deepEqual((await view('search')).sort(), ['call_tool', 'describe_tools', 'find_tools']);
  } finally {
    await s.stop();
    await standIn.stop();
  }
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
    assert.deepEqual(before.upstreams.map((u) => u.state), ['up', 'up', 'up', 'up']);
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

test('a killed HTTP upstream (the FastMCP server, by PID) leaves the lists and comes back when it is started again; the others keep answering', { timeout: 120_000 }, async () => {
  const client = await connect(server.url, 'legacy');
  try {
    assert.ok((await names(client)).includes('notes_list_notes'));
    process.kill(fastmcp.pid, 'SIGKILL');
    await fastmcp.stop();
    // A call to it fails naming the upstream; its tools then leave the lists.
    await assert.rejects(client.callTool({ name: 'notes_list_notes', arguments: {} }), /upstream "notes"/);
    let gone = false;
    for (const deadline = Date.now() + 20_000; !gone && Date.now() < deadline; await sleep(250)) {
      gone = !(await names(client)).some((n) => n.startsWith('notes_'));
    }
    assert.ok(gone, `the FastMCP tools left the lists: ${(await names(client)).join(', ')}`);
    if (NATIVE) {
      const st = (await status()).upstreams.find((u) => u.name === 'notes');
      assert.equal(st.state, 'down', JSON.stringify(st));
      assert.ok(!('pid' in st) || st.pid == null, 'an HTTP upstream has no process');
    }
    // The others keep answering meanwhile.
    assert.match(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'still here' } })), /still here/);
    if (NATIVE) assert.match(text(await client.callTool({ name: 'mem_read_graph', arguments: {} })), /entities/);
    // Started again on its port: retried with backoff, it comes back by itself.
    fastmcp = await startFastmcp(fastmcp.port);
    let back = false;
    for (const deadline = Date.now() + 45_000; !back && Date.now() < deadline; await sleep(500)) {
      back = (await names(client)).includes('notes_list_notes');
    }
    assert.ok(back, `the FastMCP tools came back: ${(await names(client)).join(', ')}\n${server.output()}`);
    assert.match(text(await client.callTool({ name: 'notes_list_notes', arguments: {} })), /welcome/);
    if (NATIVE) assert.equal((await status()).upstreams.find((u) => u.name === 'notes').state, 'up');
  } finally {
    await client.close();
  }
});

test('Worker: upstreams whose URIs collide both serve their tools, the colliding URIs refused by name; a missing secret and a stdio upstream are configuration errors', { timeout: 120_000, skip: NATIVE && 'the Worker part' }, async () => {
  const client = await connect();
  try {
    const all = await names(client);
    assert.ok(all.includes('everything_echo') && all.includes('mirror_echo'), all.join(', '));
    assert.match(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'second' } })), /second/);
    assert.match(text(await client.callTool({ name: 'mirror_echo', arguments: { message: 'mirrored' } })), /mirrored/);
    const uris = (await client.listResources()).resources.map((r) => r.uri);
    assert.equal(new Set(uris).size, uris.length, `no URI is served twice: ${uris.join(', ')}`);
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
