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
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { native, startWith } from './helpers.mjs';

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

/**
 * The loopback TCP ports the processes of `pid`'s tree listen on (from /proc: each process's
 * socket inodes, matched against the listening entries of /proc/net/tcp and tcp6).
 */
function listeningPorts(pid) {
  const children = (p) => {
    try {
      return readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch { return []; }
  };
  const pids = [];
  for (const queue = [pid]; queue.length;) { const p = queue.shift(); pids.push(p); queue.push(...children(p)); }
  const inodes = new Set();
  for (const p of pids) {
    let fds = [];
    try { fds = readdirSync(`/proc/${p}/fd`); } catch { continue; }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${p}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch { /* closed meanwhile */ }
    }
  }
  const ports = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9])) ports.add(parseInt(f[1].split(':')[1], 16));
    }
  }
  return [...ports];
}

// The Worker's own part of item 10, without wrangler's ProxyWorker: straight to the workerd
// socket that serves the Worker, an endless chunked body (which the Worker must cut, unread, one
// second past the limit) is 413 and the next request on a new connection is served the first
// time. (Through the proxy, that next request can get its 503; see docs/src/security.md.)
test('23.10 straight to workerd (no wrangler proxy), the request after a cut-off endless body is served the first time', { skip: native() && 'the Worker only', timeout: 120_000 }, async () => {
  const init = { jsonrpc: '2.0', id: 4, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sec', version: '1' } } };
  const proxyPort = Number(new URL(server.url).port);
  let direct;
  for (const port of listeningPorts(server.pid).filter((p) => p !== proxyPort)) {
    const url = `http://127.0.0.1:${port}/mcp`;
    const r = await post(url, init, { agent: new http.Agent(), timeoutMs: 3000 }).catch(() => null);
    if (r?.status === 200 && r.response?.result?.serverInfo) { direct = url; break; }
  }
  assert.ok(direct, 'found the workerd socket that serves the Worker');
  for (let round = 1; round <= 3; round++) {
    const r = await chunkedPost({ first: LIMIT * 2, endless: true, url: direct });
    assert.equal(r.status, 413, `round ${round}: HTTP ${r.status} after ${r.sent} bytes`);
    const next = await post(direct, init, { agent: new http.Agent({ keepAlive: false }) });
    assert.equal(next.status, 200, `round ${round}: the next request is served the first time: HTTP ${next.status} ${next.text.slice(0, 200)}`);
  }
});
