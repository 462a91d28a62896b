// Issue 13, item 7: the body limit holds without Content-Length. Chunked POST bodies (node:http,
// Transfer-Encoding: chunked) larger than MCP_SIEVE_MAX_BODY are 413, read with a byte counter:
// a body that keeps coming is refused once it passes the limit, not after it ends. The server
// (the Worker, or the native server with SIEVE_TARGET=native) still serves normal requests
// afterwards.
// Issue 23, item 10: after a 5 MB chunked body is refused with 413, the very next request, on a
// new connection, is served the first time (no "worker restarted" 503, no reset connection).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { post } from '../common/mcp-raw.mjs';
import { startWith } from './helpers.mjs';

const LIMIT = 4096;
let server;
before(async () => { server = await startWith(null, { MCP_SIEVE_MAX_BODY: String(LIMIT) }); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

/**
 * Opens a chunked POST and writes `first` bytes of a JSON body, then (when `endless`) 1 KB every
 * 50 ms until the server answers or `giveUpMs` passes; to `url` (default: the test's server). Resolves { status, sent, elapsedMs }
 * (status null: no answer in time).
 */
function chunkedPost({ first, endless, giveUpMs = 8000, url: target = server.url }) {
  return new Promise((resolve, reject) => {
    const url = new URL(target);
    const started = Date.now();
    let sent = 0;
    let timer;
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      req.destroy();
      resolve({ ...v, sent, elapsedMs: Date.now() - started });
    };
    const req = http.request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Transfer-Encoding': 'chunked' },
    }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => finish({ status: res.statusCode, text }));
      res.on('error', () => finish({ status: res.statusCode, text }));
    });
    req.on('error', (e) => (done ? null : (sent > LIMIT ? finish({ status: null, error: String(e) }) : reject(e))));
    const write = (s) => { sent += Buffer.byteLength(s); req.write(s); };
    write('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"');
    write('x'.repeat(first));
    if (endless) {
      timer = setInterval(() => {
        if (Date.now() - started > giveUpMs) return finish({ status: null });
        write('x'.repeat(1024));
      }, 50);
    } else {
      write('"}}');
      req.end();
      setTimeout(() => finish({ status: null }), giveUpMs);
    }
  });
}

async function stillServing() {
  const initialize = () => post(server.url, { jsonrpc: '2.0', id: 2, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sec', version: '1' } } });
  let r = await initialize();
  if (r.status === 503 && r.text.startsWith('Your worker restarted mid-request')) {
    // wrangler dev's proxy (not the Worker) saw its local runtime reload and asks for the
    // request again; the Worker must then serve it.
    console.log('wrangler dev reloaded its runtime; the request is sent again');
    r = await initialize();
  }
  assert.equal(r.status, 200, `the server still serves: ${r.text.slice(0, 300)}`);
}

test('7. a chunked body (no Content-Length) over MCP_SIEVE_MAX_BODY is 413', async () => {
  const r = await chunkedPost({ first: LIMIT * 4 });
  assert.equal(r.status, 413, `HTTP ${r.status} ${r.text?.slice(0, 300)}`);
  await stillServing();
});

test('7. a chunked body that keeps coming is refused at the limit, not after it ends', { timeout: 30_000 }, async () => {
  const r = await chunkedPost({ first: LIMIT * 2, endless: true });
  assert.equal(r.status, 413,
    `the server must answer 413 while the body is still arriving (after ${r.sent} bytes, ${r.elapsedMs} ms: ${r.status === null ? 'no answer' : `HTTP ${r.status}`})`);
  await stillServing();
});

test('23.10 after a 5 MB chunked body is refused with 413, the next request on a new connection is served the first time', { timeout: 120_000 }, async () => {
  // The default limit (1 MiB): the refused body goes on for 4 MB past it.
  const plain = await startWith(null);
  try {
    for (let round = 1; round <= 3; round++) {
      const r = await chunkedPost({ first: 5 * 1024 * 1024, url: plain.url });
      assert.equal(r.status, 413, `round ${round}: HTTP ${r.status} ${r.text?.slice(0, 300) ?? r.error ?? ''}`);
      // A fresh agent: a new connection, as a client that was refused opens.
      const next = await post(plain.url, { jsonrpc: '2.0', id: 3, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sec', version: '1' } } },
      { agent: new http.Agent({ keepAlive: false }) });
      assert.equal(next.status, 200, `round ${round}: the next request must be served the first time: HTTP ${next.status} ${next.text.slice(0, 300)}`);
    }
  } finally {
    await plain.stop();
  }
});
