// E2E (native server; all but the stdio tests also against the Worker, whose session objects
// read their upstream sessions' GET streams): what upstreams send outside a call reaches the
// right session.
// @modelcontextprotocol/server-everything behind the gateway, official SDK v2 clients
// (@modelcontextprotocol/client) in front in 2025-11-25 sessions (each opens its session's GET
// stream, as the SDK does):
// - roots: a client that declares roots gets an upstream session declaring them; the upstream's
//   `roots/list` (sent on its session's GET stream) reaches that client on its own GET stream,
//   its answer goes back, and its `notifications/roots/list_changed` makes the upstream ask
//   again; a client without roots gets a session that declares none (the upstream does not
//   offer it `get-roots-list`); the same for a client of `mcp-sieve stdio` (asked on stdout);
// - log messages the upstream sends on its session's GET stream reach that session only, at or
//   above the level its client set; a session's `resources/subscribe` is made in its upstream
//   session, whose `resources/updated` reach it;
// - a stdio upstream's log messages reach the sessions that set a level, and the server's log;
// - 2026-07-28 (stateless) callers share one upstream session at a legacy-era upstream, opened
//   again when the upstream forgets it (this one also against the Worker).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { startEverything, startWith, native, sleep, until, ROOT } from '../security/helpers.mjs';

const skip = !native() && 'native server only: stdio transports';
let everything, server;

before(async () => {
  everything = await startEverything();
  server = await startWith({ upstream: { url: everything.url } });
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  await everything?.stop();
});

/** An SDK v2 client of `url` with `capabilities`; `roots` answers its roots/list (counted in `asked`). */
async function connect(url, capabilities = {}, { roots, mode = 'legacy' } = {}) {
  const client = new Client({ name: 'relay-stream-e2e', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  client.asked = 0;
  client.heard = [];
  if (roots) {
    client.setRequestHandler('roots/list', async () => {
      client.asked += 1;
      return { roots: roots() };
    });
  }
  client.setNotificationHandler('notifications/message', (n) => { client.heard.push(n.params); });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}


const text = (r) => r.content.map((c) => c.text).join('\n');

test('roots: the upstream asks the client that declared them, and hears when they change', { timeout: 60_000 }, async () => {
  let roots = [{ uri: 'file:///work/alpha', name: 'Alpha' }];
  const client = await connect(server.url, { roots: { listChanged: true } }, { roots: () => roots });
  const bare = await connect(server.url);
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('get-roots-list'), `the lists' session declares roots, so the tool is listed: ${names}`);
    const first = await client.callTool({ name: 'get-roots-list', arguments: {} });
    assert.match(text(first), /file:\/\/\/work\/alpha/, text(first));
    assert.ok(client.asked >= 1, 'the client was asked on its GET stream');
    // Its roots change: the upstream hears it, asks again and has the new ones (it keeps what
    // it was last answered; the tool shows them).
    roots = [{ uri: 'file:///work/beta', name: 'Beta' }];
    await client.sendRootsListChanged();
    let again;
    await until('the upstream has the new roots', async () => {
      again = await client.callTool({ name: 'get-roots-list', arguments: {} });
      return /file:\/\/\/work\/beta/.test(text(again));
    });
    // A client without roots: its upstream session declares none, so the upstream has no such tool for it.
    const r = await bare.callTool({ name: 'get-roots-list', arguments: {} }).catch((e) => e);
    const said = r instanceof Error ? r.message : JSON.stringify(r);
    assert.match(said, /not found|unknown/i, said);
    assert.equal(client.asked >= 2 && bare.asked, 0);
  } finally {
    await client.close().catch(() => {});
    await bare.close().catch(() => {});
  }
});

test('through the stdio downstream (mcp-sieve stdio): the upstream\'s roots/list reaches the client on stdout', { skip, timeout: 30_000 }, async () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-relay-stream-'));
  const doc = path.join(tmp, 'doc.json');
  writeFileSync(doc, JSON.stringify({ upstream: { url: everything.url } }));
  const client = new Client({ name: 'relay-stream-e2e', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } });
  let roots = [{ uri: 'file:///work/gamma', name: 'Gamma' }];
  client.setRequestHandler('roots/list', async () => ({ roots }));
  await client.connect(new StdioClientTransport({ command: path.join(ROOT, 'target', 'debug', 'mcp-sieve'), args: ['stdio', '--catalog', doc], stderr: 'pipe' }));
  try {
    const r = await client.callTool({ name: 'get-roots-list', arguments: {} });
    assert.match(text(r), /file:\/\/\/work\/gamma/, text(r));
    roots = [{ uri: 'file:///work/delta', name: 'Delta' }];
    await client.sendRootsListChanged();
    await until('the upstream has the new roots', async () => /file:\/\/\/work\/delta/.test(text(await client.callTool({ name: 'get-roots-list', arguments: {} }))));
  } finally {
    await client.close().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('log messages on an upstream session\'s GET stream reach its session only, at its level', { timeout: 60_000 }, async () => {
  const [a, b] = [await connect(server.url), await connect(server.url)];
  try {
    await a.setLoggingLevel('debug');
    await b.setLoggingLevel('emergency');
    // server-everything logs at a random level at once, then every 5 s, on the session's GET stream.
    const on = await a.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    const sid = text(on).match(/session (\S+)/)?.[1];
    assert.ok(sid, text(on));
    await until('a log message reached the session', () => a.heard.length > 0);
    assert.ok(a.heard.every((m) => String(m.data).includes(sid)), JSON.stringify(a.heard));
    await b.callTool({ name: 'echo', arguments: { message: 'opens its upstream session' } });
    await sleep(300);
    assert.deepEqual(b.heard, [], 'nothing of the other session\'s');
    await a.callTool({ name: 'toggle-simulated-logging', arguments: {} });
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
  }
});

test('a session\'s subscription is made upstream, and its resources/updated reach it', { timeout: 30_000 }, async () => {
  const client = await connect(server.url);
  const updated = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => { updated.push(n.params.uri); });
  try {
    const { resources } = await client.listResources();
    const uri = resources[0]?.uri;
    assert.ok(uri, 'the upstream lists resources');
    await client.subscribeResource({ uri });
    // server-everything sends updates of the session's subscriptions at once, then every 5 s.
    await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
    await until('resources/updated reached the session', () => updated.length > 0);
    assert.deepEqual([...new Set(updated)], [uri]);
    await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
    await client.unsubscribeResource({ uri });
  } finally {
    await client.close().catch(() => {});
  }
});

test('a stdio upstream\'s log messages reach the sessions that set a level, and the server\'s log', { skip, timeout: 60_000 }, async () => {
  const bin = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  const piped = await startWith({ upstreams: { ev: { command: process.execPath, args: [bin, 'stdio'] } } });
  const [a, b] = [await connect(piped.url), await connect(piped.url)];
  try {
    await a.setLoggingLevel('debug');
    await a.callTool({ name: 'ev_toggle-simulated-logging', arguments: {} });
    await until('a log message reached the session that set a level', () => a.heard.length > 0);
    await until('the server logged it with the upstream\'s name', () => /\[ev\] log \w+: /.test(piped.output()));
    assert.deepEqual(b.heard, [], 'a session that set no level hears none');
    await a.callTool({ name: 'ev_toggle-simulated-logging', arguments: {} });
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
    await piped.stop();
  }
});

test('2026-07-28 callers share one upstream session at a legacy upstream', { timeout: 30_000 }, async () => {
  const [a, b] = [await connect(server.url, {}, { mode: { pin: '2026-07-28' } }), await connect(server.url, {}, { mode: { pin: '2026-07-28' } })];
  try {
    const before = everything.sessions().length;
    for (const [c, m] of [[a, 'one'], [b, 'two'], [a, 'three']]) {
      const r = await c.callTool({ name: 'echo', arguments: { message: m } });
      assert.match(text(r), new RegExp(m));
    }
    assert.equal(everything.sessions().length - before, 1, 'one upstream session served the three calls');
    // The upstream forgets it (ended behind the gateway's back; it then answers 400): the next
    // call opens another, which the calls after it share.
    const shared = everything.sessions().at(-1);
    const ended = await fetch(everything.url, { method: 'DELETE', headers: { 'mcp-session-id': shared, 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(ended.status, 200);
    for (const [c, m] of [[b, 'four'], [a, 'five']]) {
      const r = await c.callTool({ name: 'echo', arguments: { message: m } });
      assert.match(text(r), new RegExp(m));
    }
    assert.equal(everything.sessions().length - before, 2, 'one more session, shared again');
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
  }
});
