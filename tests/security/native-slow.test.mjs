// Issue 13, item 10: the native server (target/debug/mcp-sieve, always, whatever SIEVE_TARGET
// says) is not stalled by slow clients. Raw TCP clients send half a request and stall; other
// clients must still be answered promptly. The transport gate (token, declared length) answers
// before the body is read, and a stalled connection is dropped after a bounded read time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startNative } from '../e2e/harness.mjs';
import { post } from '../common/mcp-raw.mjs';
import { sleep } from './helpers.mjs';

const TOKEN = 'slow-test-token-9c2e';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
/** A stalled connection must be dropped (or answered) within this many ms. */
const READ_BOUND_MS = 15_000;
/** A normal request must be answered within this many ms while others stall. */
const PROMPT_MS = 2_000;

let server;
let port;
const sockets = [];

before(async () => {
  server = await startNative({ env: { MCP_SIEVE_TOKEN: TOKEN, MCP_SIEVE_MAX_BODY: '65536' } });
  port = Number(new URL(server.url).port);
}, { timeout: 60_000 });
after(async () => {
  for (const s of sockets) s.destroy();
  await server?.stop();
});

/** Opens a raw connection, writes `text`, and keeps it open. Resolves { socket, answer(), closed() }. */
function rawClient(text) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(text);
      resolve({ socket, answer: () => data, closed: () => closed });
    });
    let data = '';
    let closed = false;
    socket.on('data', (c) => { data += c; });
    socket.on('close', () => { closed = true; });
    socket.on('error', () => { closed = true; });
    socket.on('connect', () => sockets.push(socket));
    socket.once('error', reject);
  });
}

const head = (extra = '') => 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
  + `Accept: application/json, text/event-stream\r\n${extra}`;

async function promptly(what) {
  const started = Date.now();
  const r = await Promise.race([
    post(server.url, { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fast', version: '1' } } }, { headers: AUTH }),
    sleep(PROMPT_MS * 5).then(() => null),
  ]);
  const ms = Date.now() - started;
  assert.ok(r, `${what}: a normal request got no answer in ${PROMPT_MS * 5} ms`);
  assert.equal(r.status, 200, r.text);
  assert.ok(ms <= PROMPT_MS, `${what}: a normal request took ${ms} ms (at most ${PROMPT_MS})`);
}

test('10. a client that sends half a body and stalls does not stall other clients', { timeout: 60_000 }, async () => {
  await rawClient(`${head(`Authorization: Bearer ${TOKEN}\r\n`)}Content-Length: 2000\r\n\r\n{"jsonrpc":"2.0","id":1,`);
  await rawClient(`${head(`Authorization: Bearer ${TOKEN}\r\n`)}Transfer-Encoding: chunked\r\n\r\n10\r\n{"jsonrpc":"2.0"`);
  await rawClient('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty');
  await sleep(300);
  for (let i = 0; i < 5; i++) await promptly(`request ${i + 1} with three stalled clients`);
});

test('10. many stalled clients (64) do not stall other clients', { timeout: 60_000 }, async () => {
  for (let i = 0; i < 64; i++) {
    await rawClient(`${head(`Authorization: Bearer ${TOKEN}\r\n`)}Content-Length: 5000\r\n\r\n{"jsonrpc":`);
  }
  await sleep(300);
  for (let i = 0; i < 5; i++) await promptly(`request ${i + 1} with 64 more stalled clients`);
});

test('10. the gate answers before the body is read: no token is 401 at once', { timeout: 30_000 }, async () => {
  const c = await rawClient(`${head()}Content-Length: 5000\r\n\r\n{"jsonrpc":`);
  for (let i = 0; i < 40 && !c.answer(); i++) await sleep(50);
  assert.match(c.answer(), /^HTTP\/1\.1 401/, `a request without the token is refused before its body arrives; got ${JSON.stringify(c.answer().slice(0, 80))}`);
});

test('10. the gate answers before the body is read: a declared length over the limit is 413 at once', { timeout: 30_000 }, async () => {
  const c = await rawClient(`${head(`Authorization: Bearer ${TOKEN}\r\n`)}Content-Length: 10000000\r\n\r\n{"jsonrpc":`);
  for (let i = 0; i < 40 && !c.answer(); i++) await sleep(50);
  assert.match(c.answer(), /^HTTP\/1\.1 413/, `a declared length over the limit is refused before the body; got ${JSON.stringify(c.answer().slice(0, 80))}`);
});

test('10. a stalled connection is dropped after a bounded read time', { timeout: READ_BOUND_MS + 15_000 }, async () => {
  const c = await rawClient(`${head(`Authorization: Bearer ${TOKEN}\r\n`)}Content-Length: 2000\r\n\r\n{"jsonrpc":`);
  const started = Date.now();
  while (!c.closed() && !c.answer() && Date.now() - started < READ_BOUND_MS) await sleep(100);
  assert.ok(c.closed() || /^HTTP\/1\.1 (408|400)/.test(c.answer()),
    `a client that stalls mid-body is answered (408) or dropped within ${READ_BOUND_MS} ms`);
});
