// E2E: change without a restart (native `mcp-sieve stdio` and `mcp-sieve serve`). The servers file given with
// --mcp-config is replaced by an atomic rename (as editors save) while the official SDK's client
// is connected: an upstream added starts, the client gets notifications/tools/list_changed and
// lists its tools; a broken edit keeps the running tools and the log names the file, line and
// field; an upstream removed stops (its child process is gone) and its tools leave the list; an
// unchanged upstream keeps its process through all of it, and one whose arguments changed is
// started anew with them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { binOf, ROOT, sleep, until } from '../security/helpers.mjs';
import { officialUpstream } from '../fixtures/official-upstream.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
let tmp;
before(() => { tmp = mkdtempSync(path.join(tmpdir(), 'sieve-reload-')); });
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

const files = (...more) => ({ command: process.execPath, args: [binOf('@modelcontextprotocol/server-filesystem'), tmp, ...more] });
const memory = () => ({
  command: process.execPath,
  args: [binOf('@modelcontextprotocol/server-memory')],
  env: { MEMORY_FILE_PATH: path.join(tmp, 'memory.jsonl') },
});

/** Replaces `file` with `text` the way editors save: a new file renamed over it. */
function save(file, text) {
  writeFileSync(`${file}.swp`, text);
  renameSync(`${file}.swp`, file);
}

/** The command lines of the processes whose parent is `pid` (`format`: ps's columns). */
function children(pid, format = 'args=') {
  try {
    return execFileSync('ps', ['-o', format, '--ppid', String(pid)], { encoding: 'utf8' });
  } catch {
    return ''; // no children
  }
}

/** The pid of the child of `pid` whose command line matches `pattern` (undefined: none). */
function childPid(pid, pattern) {
  const line = children(pid, 'pid=,args=').split('\n').find((l) => pattern.test(l));
  return line && Number(line.trim().split(/\s+/)[0]);
}


test('stdio picks up an edited servers file: added upstream starts, broken edit kept out, removed one stops, unchanged one keeps its process, changed one restarts', { timeout: 120_000 }, async () => {
  const config = path.join(tmp, 'servers.json');
  writeFileSync(config, JSON.stringify({ mcpServers: { files: files() } }, null, 2));
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--mcp-config', config], stderr: 'pipe' });
  let log = '';
  transport.stderr.on('data', (d) => { log += d; });
  const client = new Client({ name: 'reload-test', version: '1.0.0' });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes += 1; });
  await client.connect(transport);
  try {
    const names = async () => (await client.listTools()).tools.map((t) => t.name);
    const first = await names();
    assert.ok(first.includes('files_read_text_file'), first.join());
    assert.ok(!first.some((n) => n.startsWith('memory_')));
    const filesPid = childPid(transport.pid, /server-filesystem/);
    assert.ok(filesPid, children(transport.pid));

    // An upstream added: it starts, and the client hears of it; the other keeps its process.
    const saved = Date.now();
    save(config, JSON.stringify({ mcpServers: { files: files(), memory: memory() } }, null, 2));
    await until('list_changed after adding memory', () => changes >= 1);
    const heard = Date.now() - saved;
    const added = await names();
    assert.ok(added.includes('memory_read_graph') && added.includes('files_read_text_file'), added.join());
    assert.match(children(transport.pid), /server-memory/);
    console.log(`# reload reached the client in ${heard} ms`);
    await until('the reload logged', () => /applied in \d+ ms \(2 upstreams, started: memory, kept running: files\)/.test(log));
    assert.equal(childPid(transport.pid, /server-filesystem/), filesPid, 'the unchanged upstream kept its process');

    // A broken edit: the running tools stay; the log names file, line and field.
    const before = changes;
    save(config, '{\n  "mcpServers": {\n    "files": {"command": 42}\n  }\n}\n');
    await until('the broken edit logged', () => /not applied/.test(log));
    assert.match(log, new RegExp(`${config.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:\\d+: mcpServers\\.files\\.command`), log);
    await sleep(1500);
    assert.equal(changes, before, 'no list change');
    assert.deepEqual((await names()).sort(), added.sort());

    // An upstream removed: it stops, its tools leave.
    save(config, JSON.stringify({ mcpServers: { files: files() } }, null, 2));
    await until('list_changed after removing memory', () => changes > before);
    const left = await names();
    assert.ok(!left.some((n) => n.startsWith('memory_')), left.join());
    assert.ok(left.includes('files_read_text_file'));
    await until('the memory server process gone', () => !/server-memory/.test(children(transport.pid)));
    assert.match(log, /reload: .* applied in \d+ ms \(1 upstreams, stopped: memory, kept running: files\)/);
    assert.equal(childPid(transport.pid, /server-filesystem/), filesPid, 'still the first process');
    assert.ok((await client.callTool({ name: 'files_list_allowed_directories', arguments: {} })).content[0].text.includes(tmp));

    // Its arguments changed: it is started anew with them, the old process stopped.
    const more = path.join(tmp, 'more');
    mkdirSync(more);
    save(config, JSON.stringify({ mcpServers: { files: files(more) } }, null, 2));
    await until('the restart logged', () => /applied in \d+ ms \(1 upstreams, restarted: files\)/.test(log));
    await until('the first files process gone', () => !children(transport.pid, 'pid=').split('\n').some((p) => Number(p) === filesPid));
    const again = childPid(transport.pid, /server-filesystem/);
    assert.ok(again && again !== filesPid, children(transport.pid, 'pid=,args='));
    const dirs = (await client.callTool({ name: 'files_list_allowed_directories', arguments: {} })).content[0].text;
    assert.ok(dirs.includes(more), dirs);
  } finally {
    await client.close();
  }
});

test('stdio with a catalog document: an edited tool list reaches the client', { timeout: 60_000 }, async () => {
  const doc = path.join(tmp, 'sieve.json');
  const tool = (name) => ({ name, description: `the ${name} tool`, inputSchema: { type: 'object' } });
  writeFileSync(doc, JSON.stringify({ tools: [tool('alpha')] }));
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', doc], stderr: 'pipe' });
  const client = new Client({ name: 'reload-test', version: '1.0.0' });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes += 1; });
  await client.connect(transport);
  try {
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['alpha']);
    save(doc, JSON.stringify({ tools: [tool('alpha'), tool('beta')] }));
    await until('list_changed', () => changes >= 1);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['alpha', 'beta']);
  } finally {
    await client.close();
  }
});

test('serve picks up an edited catalog document: a session gets list_changed on its stream, upstreams start and stop', { timeout: 120_000 }, async () => {
  const doc = path.join(tmp, 'served.json');
  const write = (upstreams, views = {}) => JSON.stringify({ upstreams, views }, null, 2);
  writeFileSync(doc, write({ files: files() }));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const server = spawn(BIN, ['serve', '--catalog', doc, '--port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => { log += d; });
  try {
    await until('serve listening', () => /serving MCP at/.test(log));
    const client = new Client({ name: 'reload-test', version: '1.0.0' });
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes += 1; });
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();
    const first = await names();
    assert.ok(first.includes('files_read_text_file') && !first.some((n) => n.startsWith('memory_')), first.join());
    await sleep(1500); // the session's GET stream is open

    // An upstream added: it starts, the session hears of it on its stream.
    const saved = Date.now();
    save(doc, write({ files: files(), memory: memory() }));
    await until('list_changed after the edit', () => changes >= 1);
    console.log(`# serve: reload reached the session in ${Date.now() - saved} ms`);
    await until('the memory tools listed', async () => (await names()).includes('memory_read_graph'));
    assert.ok((await names()).includes('files_read_text_file'));
    assert.match(children(server.pid), /server-memory/);

    // A broken edit: kept out, named with its line and field.
    const before = await names();
    save(doc, write({ files: files() }, { odd: { mode: 'grid' } }));
    await until('the broken edit logged', () => /not applied/.test(log));
    const line = write({ files: files() }, { odd: { mode: 'grid' } }).split('\n').findIndex((l) => l.includes('"mode"')) + 1;
    assert.match(log, new RegExp(`served\\.json:${line}:\\d+: views\\.odd\\.mode`), log);
    assert.deepEqual(await names(), before);

    // The upstream removed: its process is gone, its tools leave.
    const seen = changes;
    save(doc, write({ files: files() }));
    await until('list_changed after removing memory', () => changes > seen);
    assert.deepEqual(await names(), first);
    await until('the memory server process gone', () => !/server-memory/.test(children(server.pid)));
    assert.match(log, /take effect at the next start/);
    await client.close();
  } finally {
    server.kill('SIGTERM');
  }
});

test('serve: an HTTP upstream a reload changed is listed in a new session, the old one closed; an unchanged one is not asked again; the client\'s session there carries on until the upstream is removed', { timeout: 60_000 }, async () => {
  // `grow` adds a tool to every session's server: each announces it on its own GET stream.
  const servers = [];
  const up = await officialUpstream('echoer', (s) => {
    servers.push(s);
    s.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
    s.registerTool('grow', { description: 'Adds a tool' }, async () => {
      for (const x of servers) x.registerTool('grown', { description: 'Added' }, async () => ({ content: [{ type: 'text', text: 'grown' }] }));
      return { content: [{ type: 'text', text: 'grew' }] };
    });
  });
  const doc = path.join(tmp, 'http.json');
  const write = (refreshSeconds, views = {}) => JSON.stringify({ upstreams: { up: { url: up.url, refreshSeconds } }, views });
  writeFileSync(doc, write(300));
  const port = 20000 + Math.floor(Math.random() * 20000);
  const server = spawn(BIN, ['serve', '--catalog', doc, '--port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (d) => { log += d; });
  const client = new Client({ name: 'reload-test', version: '1.0.0' });
  try {
    await until('serve listening', () => /serving MCP at/.test(log));
    await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
    const said = async (text) => (await client.callTool({ name: 'up_echo', arguments: { text } })).content[0].text;
    assert.equal(await said('before'), 'before');
    const lists = up.opened[0]; // the gateway's own: its lists are fetched over it, at the start
    const mine = up.opened.at(-1);
    assert.equal(up.opened.length, 2, up.opened.join());
    assert.deepEqual(up.deleted, []);

    save(doc, write(600));
    await until('the reload applied', () => /reload: .* applied/.test(log));
    await until('the old lists session closed', () => up.deleted.includes(lists));
    assert.deepEqual(up.deleted, [lists], 'only the old gateway\'s own session');
    // The client's upstream session carries on under the new gateway: no new one for its call.
    const opened = up.opened.length;
    assert.equal(await said('after'), 'after');
    assert.equal(up.opened.length, opened, up.opened.join());
    assert.ok(!up.deleted.includes(mine));

    // Another edit that leaves the upstream as it was: its lists and session are carried over.
    const asked = up.asked.length;
    save(doc, write(600, { echoes: { filter: { groups: ['up'] } } }));
    await until('the second reload applied', () => (log.match(/reload: .* applied/g) ?? []).length === 2);
    const viewed = new Client({ name: 'reload-view', version: '1.0.0' });
    await viewed.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/echoes`)));
    assert.deepEqual((await viewed.listTools()).tools.map((t) => t.name), ['up_echo', 'up_grow'], 'the new view serves');
    await viewed.close();
    assert.equal(await said('again'), 'again');
    assert.equal(up.opened.length, opened, `no session opened: ${up.opened.join()}`);
    assert.deepEqual(up.deleted, [lists], 'none closed');
    assert.deepEqual(up.asked.slice(asked).filter((m) => m.endsWith('/list')), [], 'the lists not asked again');

    // The client's upstream session's GET stream, opened before both reloads, is read for the
    // gateway serving now: the list change it announces is that gateway's to refresh.
    assert.equal((await client.callTool({ name: 'up_grow', arguments: {} })).content[0].text, 'grew');
    await until('the grown tool listed', async () => (await client.listTools()).tools.some((t) => t.name === 'up_grown'), 15_000);

    // The upstream removed: the client's own session there is closed too.
    assert.ok(!up.deleted.includes(mine));
    save(doc, JSON.stringify({ tools: [{ name: 'local', description: 'Stays', inputSchema: { type: 'object' } }] }));
    await until('the client\'s upstream session closed', () => up.deleted.includes(mine));
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['local']);
  } finally {
    await client.close().catch(() => {});
    server.kill('SIGTERM');
    await up.stop();
  }
});
