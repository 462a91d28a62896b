// E2E (native server): search mode over two upstreams at once, and the index following a refresh.
// The gateway fronts @modelcontextprotocol/server-everything over Streamable HTTP and a chained
// native mcp-sieve over stdio (`mcp-sieve stdio --catalog inner.json`, a child of the gateway).
// Through a `mode: search` view the official SDK v2 client's one `find_tools` finds tools of both
// under their namespaced names, `call_tool` reaches the right upstream (the inner server answers
// with its own tool name), and when the inner server's list changes — its catalog file rewritten
// (one tool removed, one added), the process killed, a call to it failing, and the gateway
// starting it again and fetching its lists — `find_tools` finds the new tool and no longer the
// removed one, while the other upstream's tools are still found. The stdio upstream needs the
// native server; against the Worker the file is skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startEverything, startWith, native, ROOT, sleep } from '../security/helpers.mjs';

const NATIVE = native();
const nativeOnly = { skip: !NATIVE && 'stdio upstreams run in the native server only' };

const tool = (name, description) => ({ name, description, inputSchema: { type: 'object', properties: { note: { type: 'string', description: 'anything' } } } });
const PLAN = tool('plan_trip', 'Plan a trip: flights, hotels and an itinerary for the dates given.');
const ARCHIVE = tool('archive_invoice', 'Move a paid invoice into the archive.');
const BOOK = tool('book_flight', 'Book a seat on an airline flight.');

let everything, server, tmp, inner;

before(async () => {
  if (!NATIVE) return;
  everything = await startEverything();
  tmp = mkdtempSync(path.join(tmpdir(), 'sieve-search-upstreams-'));
  inner = path.join(tmp, 'inner.json');
  writeFileSync(inner, JSON.stringify({ tools: [PLAN, ARCHIVE] }));
  const doc = {
    upstreams: {
      everything: { url: everything.url },
      inner: { command: path.join(ROOT, 'target', 'debug', 'mcp-sieve'), args: ['stdio', '--catalog', inner] },
    },
    views: { find: { mode: 'search' } },
  };
  server = await startWith(doc);
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  await everything?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const text = (r) => r.content.map((c) => c.text ?? '').join('\n');

async function find(client, query, limit = 5) {
  const r = await client.callTool({ name: 'find_tools', arguments: { query, limit } });
  assert.ok(!r.isError, text(r));
  return r.structuredContent.tools.map((t) => t.name);
}

async function innerPid() {
  const st = await (await fetch(`${server.base}/mcp-sieve/upstreams`)).json();
  const u = st.upstreams.find((x) => x.name === 'inner');
  assert.equal(u.transport, 'stdio', JSON.stringify(st));
  return u.state === 'up' ? u.pid : null;
}

test('one search covers both upstreams, call_tool routes by the namespaced name, and the index follows a refresh', { timeout: 120_000, ...nativeOnly }, async () => {
  const client = new Client({ name: 'sieve-search-upstreams-e2e', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/find`)));
  try {
    // Both upstreams in one index, names namespaced.
    assert.equal((await find(client, 'plan a trip with hotels'))[0], 'inner_plan_trip');
    assert.equal((await find(client, 'archive the paid invoice'))[0], 'inner_archive_invoice');
    assert.ok((await find(client, 'echo a message back')).includes('everything_echo'));
    const both = await find(client, 'echo a message, plan a trip', 10);
    assert.ok(both.includes('everything_echo') && both.includes('inner_plan_trip'), both.join(', '));
    assert.equal((await find(client, 'book a seat on a flight')).includes('inner_book_flight'), false);

    // call_tool reaches the upstream the name says, under the upstream's own name.
    const planned = await client.callTool({ name: 'call_tool', arguments: { name: 'inner_plan_trip', arguments: { note: 'Lisbon' } } });
    assert.match(text(planned), /\[simulated\] plan_trip /);
    const echoed = await client.callTool({ name: 'call_tool', arguments: { name: 'everything_echo', arguments: { message: 'routed' } } });
    assert.match(text(echoed), /routed/);
    assert.doesNotMatch(text(echoed), /simulated/);

    // The inner server's list changes: archive_invoice goes, book_flight comes.
    writeFileSync(inner, JSON.stringify({ tools: [PLAN, BOOK] }));
    const pid = await innerPid();
    assert.ok(pid > 0);
    process.kill(pid, 'SIGKILL');
    await sleep(200);
    // A call to it fails naming the upstream; the gateway takes it out and starts it again.
    const failed = await client
      .callTool({ name: 'call_tool', arguments: { name: 'inner_plan_trip', arguments: {} } })
      .then((r) => text(r), (e) => String(e));
    assert.match(failed, /upstream "inner"/);
    const deadline = Date.now() + 30_000;
    let found = [];
    while (Date.now() < deadline) {
      await sleep(500);
      // Requests drive the gateway: the restart (with backoff) and the refresh of its lists.
      found = await find(client, 'book a seat on a flight');
      if (found[0] === 'inner_book_flight') break;
    }
    const now = await innerPid();
    assert.ok(now > 0 && now !== pid, 'the inner server was restarted');
    assert.equal(found[0], 'inner_book_flight', `${found.join(', ')}\n${server.output()}`);
    assert.equal((await find(client, 'archive the paid invoice', 20)).includes('inner_archive_invoice'), false);
    await assert.rejects(
      client.callTool({ name: 'call_tool', arguments: { name: 'inner_archive_invoice', arguments: {} } }),
      /Unknown tool|unknown/i,
    );
    const booked = await client.callTool({ name: 'call_tool', arguments: { name: 'inner_book_flight', arguments: { note: 'LIS' } } });
    assert.match(text(booked), /\[simulated\] book_flight /);
    // The other upstream is still searched and reached.
    assert.ok((await find(client, 'echo a message back')).includes('everything_echo'));
    assert.match(text(await client.callTool({ name: 'call_tool', arguments: { name: 'everything_echo', arguments: { message: 'after' } } })), /after/);
  } finally {
    await client.close();
  }
});
