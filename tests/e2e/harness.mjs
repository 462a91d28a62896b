// E2E harness: runs the already-built Worker under `wrangler dev` (local workerd, offline) and
// offers a raw JSON-RPC helper. It never builds: run scripts/build.sh first.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const READY_TIMEOUT_MS = 90_000;
const POLL_MS = 200;
const LOG_TAIL = 64 * 1024;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Spawns `command args` in its own process group and waits until POST <base>/mcp answers.
 * Returns { url: '<base>/mcp', base, stop }.
 */
async function startProcess(command, args, port, what, extraEnv = {}) {
  const base = `http://127.0.0.1:${port}`;
  const url = `${base}/mcp`;
  const child = spawn(command, args, {
    cwd: ROOT,
    detached: true, // own process group, so stop() reaches workerd too
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: 'false',
      WRANGLER_SEND_ERROR_REPORTS: 'false',
      WRANGLER_HIDE_BANNER: 'true',
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
      ...extraEnv,
    },
  });
  let log = '';
  const keep = (chunk) => { log = (log + chunk).slice(-LOG_TAIL); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = null;
  const exitP = new Promise((resolve) => child.on('exit', (code, signal) => {
    exited = { code, signal };
    resolve();
  }));

  async function stop() {
    if (exited) return;
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
    const timer = setTimeout(() => {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    }, 5000);
    await exitP;
    clearTimeout(timer);
  }

  const deadline = Date.now() + READY_TIMEOUT_MS;
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' });
  for (;;) {
    if (exited) {
      throw new Error(`${what} exited early (${JSON.stringify(exited)}); last output:\n${log}`);
    }
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: ping,
        signal: AbortSignal.timeout(2000),
      });
      await res.arrayBuffer();
      // any HTTP status means it is serving; output() is the tail of its stdout and stderr
      return { url, base, stop, pid: child.pid, output: () => log };
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${what} not ready on ${url} after ${READY_TIMEOUT_MS / 1000}s; last output:\n${log}`);
    }
    await sleep(POLL_MS);
  }
}

/**
 * Starts `wrangler dev` for worker/ (the built Worker in local workerd).
 * Options: port, persistTo (directory for local state), extraArgs (array passed to wrangler),
 * logLevel ('warn' unless given; 'log' shows the Worker's console.log lines in output()).
 */
export async function startWorker({ port, persistTo, extraArgs = [], logLevel = 'warn' } = {}) {
  port ??= await freePort();
  const args = ['dev', '--cwd', 'worker', '--ip', '127.0.0.1', '--port', String(port),
    '--show-interactive-dev-session=false', '--log-level', logLevel];
  if (persistTo) args.push('--persist-to', persistTo);
  args.push(...extraArgs);
  return startProcess(path.join(ROOT, 'node_modules', '.bin', 'wrangler'), args, port, 'wrangler dev');
}

/**
 * Starts the native server (`target/debug/mcp-sieve serve`, built by scripts/build.sh); extraArgs
 * are passed to it, env adds environment variables (its MCP_SIEVE_* configuration).
 */
export async function startNative({ port, extraArgs = [], env = {} } = {}) {
  port ??= await freePort();
  const bin = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
  return startProcess(bin, ['serve', '--host', '127.0.0.1', '--port', String(port), ...extraArgs], port, 'mcp-sieve serve', env);
}

/** The server under test: the Worker, or the native server when SIEVE_TARGET=native. */
export const startTarget = (opts) => (process.env.SIEVE_TARGET === 'native' ? startNative(opts) : startWorker(opts));

/**
 * Raw JSON-RPC POST. `body` is an object (sent as JSON) or a string (sent as is).
 * Returns { status, headers, json }; json is null for an empty body. An SSE answer
 * (text/event-stream) yields the first `data:` message.
 */
export async function rpc(url, body, { sessionId, headers = {} } = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...(sessionId ? { 'Mcp-Session-Id': sessionId } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  if (text.trim() !== '') {
    if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      const data = text.split(/\r?\n/).find((l) => l.startsWith('data:'));
      json = data ? JSON.parse(data.slice(5)) : null;
    } else {
      json = JSON.parse(text);
    }
  }
  return { status: res.status, headers: res.headers, json };
}

/** Expects `promise` to reject with an McpError of `code` (and a message matching `re`). */
export async function rejectsWith(promise, code, re) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `expected McpError, got ${err}`);
    assert.equal(err.code, code);
    if (re) assert.match(err.message, re);
    return true;
  });
}
