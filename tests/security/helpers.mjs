// Scaffolding for issue 13's security tests (tests/security/, run alone with
// `node --test --test-concurrency=1 tests/security/`) and the upstream tests in tests/e2e/: a
// server under test started with a given catalog document and variables (the Worker under
// wrangler dev, or the native server with SIEVE_TARGET=native), real upstreams on free loopback
// ports, stopped by their PID (npm @modelcontextprotocol/server-everything in its Streamable HTTP
// mode; the FastMCP server tests/python/fastmcp_server.py in .venv), and small assertions.
import http from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { freePort, spawnServer, startNative, startWorker } from '../e2e/harness.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const native = () => process.env.SIEVE_TARGET === 'native';
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 100 ms until it returns something truthy (returned), failing with `what` after `ms`. */
export async function until(what, check, ms = 30_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await check();
    if (v) return v;
    await sleep(100);
  }
  assert.fail(`${what} within ${ms} ms`);
}

/**
 * Starts the server under test serving `doc` (an object or JSON text; null: the default catalog)
 * with `vars` (MCP_SIEVE_* settings: Worker variables, or the native server's environment).
 * Options: logLevel (Worker). Returns the harness handle; stop() also removes temp files.
 */
export async function startWith(doc, vars = {}, { logLevel } = {}) {
  const text = doc == null ? null : typeof doc === 'string' ? doc : JSON.stringify(doc);
  if (native()) {
    let tmp;
    const extraArgs = [];
    if (text != null) {
      tmp = mkdtempSync(path.join(tmpdir(), 'sieve-sec-'));
      writeFileSync(path.join(tmp, 'catalog.json'), text);
      extraArgs.push('--catalog', path.join(tmp, 'catalog.json'));
    }
    const s = await startNative({ extraArgs, env: vars });
    const stop = s.stop;
    return { ...s, stop: async () => { await stop(); if (tmp) rmSync(tmp, { recursive: true, force: true }); } };
  }
  const extraArgs = [];
  if (text != null) extraArgs.push('--var', `MCP_SIEVE_CONFIG:${text}`);
  for (const [k, v] of Object.entries(vars)) extraArgs.push('--var', `${k}:${v}`);
  return startWorker({ extraArgs, ...(logLevel ? { logLevel } : {}) });
}

/**
 * Starts @modelcontextprotocol/server-everything (`PORT=N mcp-server-everything streamableHttp`)
 * on a free loopback port. Returns { url, pid, output(), posts() (how many POSTs it received so
 * far), sessions() (upstream session ids it created), stop() }.
 */
export async function startEverything() {
  const port = await freePort();
  const bin = path.join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
  // Its whole output kept: posts() and sessions() count in all of it.
  const { pid, output, exited, stop } = spawnServer(bin, ['streamableHttp'], { env: { ...process.env, PORT: String(port) }, tail: Infinity });
  const deadline = Date.now() + 30_000;
  while (!output().includes(`listening on port ${port}`)) {
    if (exited()) throw new Error(`server-everything exited early (${JSON.stringify(exited())}):\n${output()}`);
    if (Date.now() > deadline) throw new Error(`server-everything did not start on ${port}:\n${output()}`);
    await sleep(100);
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    pid,
    output,
    posts: () => (output().match(/Received MCP POST request/g) ?? []).length,
    sessions: () => [...output().matchAll(/Session initialized with ID: (\S+)/g)].map((m) => m[1]),
    stop,
  };
}

/**
 * Awaits servers started at once (promises of objects with `stop()`); when one fails, stops
 * those that started (one left running keeps the test process alive) and throws its error.
 */
export async function startTogether(starts) {
  const started = await Promise.allSettled(starts);
  const failed = started.find((s) => s.status === 'rejected');
  if (!failed) return started.map((s) => s.value);
  await Promise.all(started.filter((s) => s.status === 'fulfilled').map((s) => s.value.stop()));
  throw failed.reason;
}

/** The `bin` file of an installed npm package (started with `node`, never `npx` at test time). */
export function binOf(pkg) {
  const dir = path.join(ROOT, 'node_modules', ...pkg.split('/'));
  const json = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const bin = typeof json.bin === 'string' ? json.bin : Object.values(json.bin)[0];
  return path.join(dir, bin);
}

/**
 * Starts the FastMCP 4 server tests/python/fastmcp_server.py (tagged tools, Streamable HTTP) with
 * .venv's Python on `port` (a free one unless given: a test restarts it where it was) and waits
 * until it answers. Returns { url, port, pid, output(), stop() }.
 */
export async function startFastmcp(port) {
  port ??= await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const python = path.join(ROOT, '.venv', 'bin', 'python');
  if (!existsSync(python)) throw new Error(`${python} is missing: scripts/bootstrap.sh makes the Python environment`);
  const { pid, output, exited, stop } = spawnServer(python, [path.join(ROOT, 'tests', 'python', 'fastmcp_server.py'), String(port)], { tail: Infinity });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited()) throw new Error(`the FastMCP server exited early (${JSON.stringify(exited())}):\n${output()}`);
    try {
      await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":0,"method":"ping"}', signal: AbortSignal.timeout(2000) });
      return { url, port, pid, output, stop };
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the FastMCP server did not start on ${port}:\n${output()}`);
    }
    await sleep(100);
  }
}

/**
 * A proxy in front of the MCP endpoint `target` that records what reaches it: `seen` the headers
 * of every request, `bodies` each POST's body (parsed JSON, or the text), `statuses` the status
 * of each answer, `requests` each request's method, `Mcp-Session-Id` and body (`{ method,
 * session, body }`, once its body was read). Returns { url, seen, bodies, statuses, requests, stop }.
 */
export async function recordingProxy(target) {
  const seen = [];
  const bodies = [];
  const statuses = [];
  const requests = [];
  const port = await freePort();
  const srv = http.createServer((req, res) => {
    seen.push({ ...req.headers });
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body;
      if (req.method === 'POST') {
        try { body = JSON.parse(raw.toString('utf8')); } catch { body = raw.toString('utf8'); }
        bodies.push(body);
      }
      requests.push({ method: req.method, session: req.headers['mcp-session-id'], body });
      const t = new URL(target);
      const up = http.request({ host: t.hostname, port: t.port, path: t.pathname, method: req.method, headers: req.headers }, (r) => {
        statuses.push(r.statusCode);
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on('error', () => { res.writeHead(502); res.end(); });
      up.end(raw);
    });
  });
  await new Promise((r) => srv.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}/mcp`, seen, bodies, statuses, requests, stop: () => new Promise((r) => { srv.closeAllConnections?.(); srv.close(r); }) };
}

/**
 * server-everything behind a [`recordingProxy`], and a catalog (`catalog`, its path, in a
 * temporary folder named after `name`) whose one upstream `everything` is the proxy. Returns
 * { everything, proxy, catalog, stop }.
 */
export async function recordedEverything(name) {
  const everything = await startEverything();
  const proxy = await recordingProxy(everything.url);
  const tmp = mkdtempSync(path.join(tmpdir(), `sieve-${name}-`));
  const catalog = path.join(tmp, 'catalog.json');
  writeFileSync(catalog, JSON.stringify({ upstreams: { everything: { url: proxy.url } } }));
  const stop = async () => {
    await proxy.stop();
    await everything.stop();
    rmSync(tmp, { recursive: true, force: true });
  };
  return { everything, proxy, catalog, stop };
}

/** The numbers a message names ("10,000" and "10_000" read as 10000). */
export const numbersIn = (text) => [...text.matchAll(/\d[\d,_]*/g)].map((m) => Number(m[0].replace(/[,_]/g, '')));

/**
 * Asserts that `r` (a post() answer) is a JSON-RPC error `code` whose message matches `field`
 * and names a limit: a number greater than 0 and below `sent` (the size the request used).
 */
export function assertCapped(r, field, sent, code = -32602) {
  const err = r.response?.error ?? r.messages?.[0]?.error;
  assert.ok(err, `expected a JSON-RPC error naming ${field}; got HTTP ${r.status} ${r.text.slice(0, 300)}`);
  assert.equal(err.code, code, r.text.slice(0, 300));
  assert.match(err.message, field, r.text.slice(0, 300));
  assert.ok(numbersIn(err.message).some((n) => n > 0 && n < sent),
    `the message names the limit (a number below ${sent}): ${err.message.slice(0, 300)}`);
}

/** The first JSON-RPC message of an SSE or JSON body, or null. */
export function firstMessage(text) {
  const t = text.trim();
  if (t === '') return null;
  if (t.startsWith('{')) return JSON.parse(t);
  const data = t.split(/\r?\n/).filter((l) => l.startsWith('data:') && l.length > 6);
  return data.length ? JSON.parse(data[data.length - 1].slice(5)) : null;
}

/** A page cursor as this server writes them (src/protocol/cursor.rs), for any offset: a forgery. */
export function forgeCursor(method, binding, version, offsetHex) {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(`${method}\n${binding}`)) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  const raw = `1.${h.toString(16).padStart(16, '0')}.${version.toString(16)}.${offsetHex}`;
  return [...Buffer.from(raw)].map((b) => (b ^ 0x5a).toString(16).padStart(2, '0')).join('');
}
