// E2E (the Worker): change without a restart. The catalog document is the MCP_SIEVE_KV key
// "config", written to the local KV while `wrangler dev` runs (as an operator runs
// `wrangler kv key put config`). The official SDK's client, connected before each change, gets
// notifications/tools/list_changed on its session's GET stream and lists the new tools: its own
// tools edited, then an upstream (server-everything) in their place; a stateless request (the
// fast path) sees them too. An edit with errors keeps the running tools, the Worker keeps
// serving, and the log names each error with its line and field. Removing the upstream brings
// the document's own tools back. An edit that leaves an upstream as it was keeps its lists (it is
// not asked again); a changed one is asked again, and the replaced gateway's session there is
// closed, as is a removed upstream's. The native servers' twin is reload.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { logText, startWorker } from './harness.mjs';
import { stateless } from '../common/mcp-raw.mjs';
import { ROOT, native, sleep, startEverything, until } from '../security/helpers.mjs';
import { officialUpstream } from '../fixtures/official-upstream.mjs';
import { z } from 'zod';

const tool = (name) => ({ name, description: `the ${name} tool`, inputSchema: { type: 'object' } });
const doc = (...names) => JSON.stringify({ tools: names.map(tool) }, null, 2);

let tmp;
before(() => { tmp = mkdtempSync(path.join(tmpdir(), 'sieve-worker-reload-')); });
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

/** Writes `text` as the key `key` of the Worker's local KV in `state`. */
function putKey(state, key, text) {
  const file = path.join(tmp, `${key}.json`);
  writeFileSync(file, text);
  execFileSync(path.join(ROOT, 'node_modules', '.bin', 'wrangler'),
    ['kv', 'key', 'put', key, '--path', file, '--binding', 'MCP_SIEVE_KV', '--local', '--cwd', 'worker', '--persist-to', state],
    { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true' }, stdio: 'ignore' });
}

/** Writes `text` as the key "config" (the catalog document). */
const putConfig = (state, text) => putKey(state, 'config', text);


test('the Worker picks up an edited catalog document in KV: list_changed, new tools, an upstream added and removed, a broken edit kept out', { skip: native() && 'the Worker (the native servers: reload.test.mjs)', timeout: 240_000 }, async () => {
  const state = path.join(tmp, 'state');
  putConfig(state, doc('alpha'));
  let upstream, worker;
  const client = new Client({ name: 'worker-reload-e2e', version: '1.0.0' });
  let changes = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changes += 1; });
  try {
    upstream = await startEverything();
    worker = await startWorker({ persistTo: state, logLevel: 'log' });
    await client.connect(new StreamableHTTPClientTransport(new URL(worker.url)));
    const names = async () => (await client.listTools()).tools.map((t) => t.name).sort();
    const statelessNames = async () => {
      const r = await stateless(worker.url, 'tools/list');
      assert.equal(r.status, 200, r.body);
      return r.response.result.tools.map((t) => t.name).sort();
    };
    assert.deepEqual(await names(), ['alpha']);
    assert.deepEqual(await statelessNames(), ['alpha']);
    await sleep(1_500); // the session's GET stream is open

    // The document's own tools edited.
    putConfig(state, doc('alpha', 'beta'));
    let saved = Date.now(); // the write is done (wrangler's CLI takes a second or two)
    await until('list_changed after adding beta', () => changes >= 1);
    console.log(`# the edit reached the client's stream in ${Date.now() - saved} ms (KV read again at most every 5 s)`);
    assert.deepEqual(await names(), ['alpha', 'beta'], 'the session lists the new tools');
    assert.deepEqual(await statelessNames(), ['alpha', 'beta'], 'and so does a stateless request');
    assert.match(logText(worker.output()), /reload: MCP_SIEVE_KV key "config" applied in \d+ ms \(0 upstreams\)/);

    // An edit with errors: every one logged with its line and field; nothing changes.
    const before = changes;
    putConfig(state, '{\n  "tools": [\n    {"name": 42, "inputSchema": {"type": "object"}}\n  ],\n  "views": {"v": {"mode": "grid"}}\n}\n');
    await until('the broken edit logged', () => /reload: MCP_SIEVE_KV key "config" not applied/.test(logText(worker.output())));
    const log = logText(worker.output());
    assert.match(log, /reload: MCP_SIEVE_KV key "config": line 3, column \d+: .*tools\[0\]\.name/, log);
    assert.match(log, /reload: MCP_SIEVE_KV key "config": line 5, column \d+: .*views\.v\.mode/, log);
    assert.match(log, /not applied \(2 error\(s\)\); the running configuration stays/);
    await sleep(1_500);
    assert.equal(changes, before, 'no list change');
    assert.deepEqual(await names(), ['alpha', 'beta'], 'the running tools stay');
    assert.deepEqual(await statelessNames(), ['alpha', 'beta']);

    // An upstream in place of the document's own tools: its gateway starts.
    putConfig(state, JSON.stringify({ upstreams: { ev: { url: upstream.url } } }));
    saved = Date.now();
    await until('list_changed after adding the upstream', () => changes > before);
    console.log(`# the upstream's tools reached the client's stream in ${Date.now() - saved} ms`);
    const gatewayed = await names();
    assert.ok(gatewayed.includes('ev_echo') && !gatewayed.includes('alpha'), gatewayed.join());
    assert.match((await client.callTool({ name: 'ev_echo', arguments: { message: 'through' } })).content[0].text, /through/);
    assert.deepEqual(await statelessNames(), gatewayed);
    assert.match(logText(worker.output()), /applied in \d+ ms \(1 upstreams, started: ev\)/);

    // The upstream removed: the document's own tools again.
    const gatewayChanges = changes;
    putConfig(state, doc('gamma'));
    await until('list_changed after removing the upstream', () => changes > gatewayChanges);
    assert.deepEqual(await names(), ['gamma']);
    assert.deepEqual(await statelessNames(), ['gamma']);
    assert.match(logText(worker.output()), /applied in \d+ ms \(0 upstreams, stopped: ev\)/);
  } finally {
    await client.close().catch(() => {});
    await worker?.stop();
    await upstream?.stop();
  }
});

test('a Worker reload keeps an unchanged upstream\'s lists, asks a changed one again and closes the sessions it replaced', { skip: native() && 'the Worker (the native servers: reload.test.mjs)', timeout: 180_000 }, async () => {
  const up = await officialUpstream('echoer', (s) => {
    s.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  });
  const state = path.join(tmp, 'state-kept');
  const write = (refreshSeconds, views = {}) => JSON.stringify({ upstreams: { up: { url: up.url, refreshSeconds } }, views, pinning: 'enforce' });
  putConfig(state, write(300));
  // Its tool pinned (what `mcp-sieve pin --kv` prints, in the key "pins"): under "enforce" an
  // unpinned tool is quarantined, so the lists a reload keeps must keep the pins read before.
  const docPath = path.join(tmp, 'kept.json');
  writeFileSync(docPath, write(300));
  // (Not spawnSync: the upstream answers from this process.)
  const pins = await promisify(execFile)(path.join(ROOT, 'target', 'debug', 'mcp-sieve'), ['pin', '--catalog', docPath, '--kv']);
  putKey(state, 'pins', pins.stdout);
  let worker;
  try {
    worker = await startWorker({ persistTo: state, logLevel: 'log' });
    const names = async (url = worker.url) => {
      const r = await stateless(url, 'tools/list');
      assert.equal(r.status, 200, r.body);
      return r.response.result.tools.map((t) => t.name);
    };
    const lists = () => up.asked.filter((m) => m.endsWith('/list')).length;
    const applied = () => logText(worker.output()).match(/reload: MCP_SIEVE_KV key "config" applied[^\n]*/g) ?? [];
    assert.deepEqual(await names(), ['up_echo']);
    // (`mcp-sieve pin` above had a session of its own there.)
    const [listed, opened, closed] = [lists(), up.opened.length, up.deleted.length];
    assert.ok(listed >= 1 && opened >= 1, up.asked.join());

    // A view added, the upstream as it was: its lists carry over (requests drive the reload:
    // the KV key is read again on a request, at most every 5 s).
    putConfig(state, write(300, { echoes: { filter: { groups: ['up'] } } }));
    await until('the reload applied', async () => (await names(), applied().length === 1), 30_000);
    assert.match(applied()[0], /\(1 upstreams, lists kept: up\)/);
    assert.deepEqual(await names(), ['up_echo'], 'still pinned');
    assert.deepEqual(await names(`${worker.url}/echoes`), ['up_echo'], 'the new view serves');
    assert.equal(lists(), listed, `the lists not asked again: ${up.asked.join()}`);
    assert.equal(up.opened.length, opened, `no session opened: ${up.opened.join()}`);
    assert.deepEqual(up.deleted.slice(closed), [], 'none closed');

    // The upstream changed (its refresh period): its lists are fetched anew, over a session of
    // the new gateway; the replaced one's is closed.
    const replaced = up.opened.at(-1);
    putConfig(state, write(600));
    await until('the second reload applied', async () => (await names(), applied().length === 2), 30_000);
    assert.doesNotMatch(applied()[1], /lists kept/);
    assert.deepEqual(await names(), ['up_echo']);
    assert.ok(lists() > listed, `asked again: ${up.asked.join()}`);
    await until('the replaced gateway\'s session closed', () => up.deleted.includes(replaced));
    assert.deepEqual(up.deleted.slice(closed), [replaced]);

    // The upstream removed: the session its lists came over is closed.
    const last = up.opened.at(-1);
    assert.notEqual(last, replaced);
    putConfig(state, doc('gamma'));
    await until('the third reload applied', async () => (await names(), applied().length === 3), 30_000);
    assert.deepEqual(await names(), ['gamma']);
    await until('the removed upstream\'s session closed', () => up.deleted.includes(last));
  } finally {
    await worker?.stop();
    await up.stop();
  }
});

test('after a reload moves an upstream to another place, what its stream asks is answered at that upstream, never at the one now in its old place; removed, its session there is closed', { skip: native() && 'the Worker (the native servers: reload.test.mjs)', timeout: 180_000 }, async () => {
  // "m", with a header of its own (an API key), holds the session's upstream session and its
  // GET stream; a reload adds "b", which comes before it (upstreams are in the order of their
  // names), so "m" is the second upstream. "b" records every request it gets.
  const servers = [];
  const a = await officialUpstream('a', (s) => {
    servers.push(s);
    s.registerTool('echo', { description: 'Says it back', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  });
  const seenByB = [];
  const b = http.createServer((req, res) => {
    seenByB.push({ method: req.method, headers: req.headers });
    req.resume();
    req.on('end', () => res.writeHead(500).end());
  });
  await new Promise((r) => b.listen(0, '127.0.0.1', r));
  const bUrl = `http://127.0.0.1:${b.address().port}/mcp`;
  const aEntry = { url: a.url, headers: { 'X-A-Key': 'a-secret' } };
  const state = path.join(tmp, 'state-moved');
  putConfig(state, JSON.stringify({ upstreams: { m: aEntry } }));
  let worker;
  const client = new Client({ name: 'worker-reload-moved', version: '1.0.0' });
  try {
    worker = await startWorker({ persistTo: state, logLevel: 'log' });
    await client.connect(new StreamableHTTPClientTransport(new URL(worker.url)));
    assert.equal((await client.callTool({ name: 'm_echo', arguments: { text: 'hi' } })).content[0].text, 'hi');
    await sleep(1_500); // the client's GET stream is open, and the upstream session's is read
    const mine = servers.at(-1);
    assert.ok(await mine.server.ping(), 'a ping on the upstream session\'s stream is answered');

    putConfig(state, JSON.stringify({ upstreams: { m: aEntry, b: { url: bUrl } } }));
    const applied = () => (logText(worker.output()).match(/reload: MCP_SIEVE_KV key "config" applied/g) ?? []).length;
    await until('the reload applied', async () => (await stateless(worker.url, 'tools/list'), applied() >= 1), 30_000);
    await sleep(6_000); // every isolate (the session's object's too) has read the key again

    const answered = await Promise.race([mine.server.ping().then(() => true), sleep(10_000).then(() => false)]);
    const leaked = seenByB.filter((r) => r.headers['x-a-key'] !== undefined || r.headers['mcp-session-id'] !== undefined);
    assert.deepEqual(leaked.map((r) => r.headers), [], '"m"\'s session and header never reach "b"');
    assert.ok(answered, 'a ping on the stream is answered at "m" after the reload');

    // "m" removed: the session's reading of its stream ends, and its session there is closed.
    const own = a.opened.at(-1);
    assert.ok(!a.deleted.includes(own));
    putConfig(state, JSON.stringify({ upstreams: { b: { url: bUrl } } }));
    await until('the second reload applied', async () => (await stateless(worker.url, 'tools/list'), applied() >= 2), 30_000);
    await until('the session\'s own session at "m" closed', () => a.deleted.includes(own), 15_000);
  } finally {
    await client.close().catch(() => {});
    await worker?.stop();
    await a.stop();
    b.closeAllConnections?.();
    await new Promise((r) => b.close(r));
  }
});

test('a call under way when a reload changes the upstreams gets its upstream\'s answer', { skip: native() && 'the Worker (the native servers: reload.test.mjs)', timeout: 180_000 }, async () => {
  const up = await officialUpstream('m', (s) => {
    s.registerTool('slow', { description: 'Answers after 12 s' }, async () => {
      await sleep(12_000);
      return { content: [{ type: 'text', text: 'done' }] };
    });
  });
  const state = path.join(tmp, 'state-under-way');
  putConfig(state, JSON.stringify({ upstreams: { m: { url: up.url } } }));
  let worker;
  const client = new Client({ name: 'worker-reload-under-way', version: '1.0.0' });
  try {
    worker = await startWorker({ persistTo: state, logLevel: 'log' });
    await client.connect(new StreamableHTTPClientTransport(new URL(worker.url)));
    const call = client.callTool({ name: 'm_slow', arguments: {} });
    await sleep(500);
    // Another upstream added (down: nothing listens there) while the call waits for its answer.
    putConfig(state, JSON.stringify({ upstreams: { m: { url: up.url }, b: { url: 'http://127.0.0.1:9/mcp' } } }));
    const applied = () => /reload: MCP_SIEVE_KV key "config" applied/.test(logText(worker.output()));
    // (The key is read again at most every 5 s: applied well before the answer.)
    const started = Date.now();
    await until('the reload applied', async () => (await stateless(worker.url, 'tools/list'), applied()), 30_000);
    assert.ok(Date.now() - started < 10_000, 'applied while the call waits');
    const result = await call;
    assert.equal(result.isError ?? false, false, JSON.stringify(result));
    assert.equal(result.content[0].text, 'done');
  } finally {
    await client.close().catch(() => {});
    await worker?.stop();
    await up.stop();
  }
});
