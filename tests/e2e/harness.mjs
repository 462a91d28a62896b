// E2E harness: runs the already-built Worker under `wrangler dev` (local workerd, offline) or the
// native server. It never builds: run scripts/build.sh first. Raw requests: ../common/mcp-raw.mjs.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import assert from 'node:assert/strict';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { post, statelessRequest } from '../common/mcp-raw.mjs';
import { freePort } from '../common/ports.mjs';

export { freePort };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const READY_TIMEOUT_MS = 90_000;
const POLL_MS = 200;
const LOG_TAIL = 64 * 1024;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));


/**
 * Runs `start(port)` on a free port; when another process took the port (or one of wrangler's own)
 * between freePort() and the bind — test files run in parallel — tries again on a new one.
 */
async function onFreePort(start, tries = 3) {
  for (let i = 1; ; i++) {
    try {
      return await start(await freePort());
    } catch (err) {
      if (i >= tries || !/Address already in use|EADDRINUSE/.test(String(err?.message))) throw err;
    }
  }
}

/**
 * Spawns `command args` (in ROOT, with `env`) in its own process group, so stop() reaches its
 * children too (workerd under wrangler dev), keeping the last `tail` characters of its stdout and
 * stderr. A process that cannot be spawned at all (no 'exit' follows) counts as exited at once.
 * Returns { pid, output(), exited() (null while it runs), stop() }.
 */
export function spawnServer(command, args, { env = process.env, tail = LOG_TAIL } = {}) {
  const child = spawn(command, args, { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env });
  let log = '';
  const keep = (chunk) => { log = (log + chunk).slice(-tail); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = null;
  const exitP = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      resolve();
    });
    child.on('error', (e) => {
      exited = { error: e.message };
      resolve();
    });
  });

  async function stop() {
    if (exited) return;
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
    const timer = setTimeout(() => {
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
    }, 5000);
    await exitP;
    clearTimeout(timer);
    // What is left of the group: a workerd whose wrangler dev exited first does not stop on
    // SIGTERM (benchmark runs left such processes behind, 120 MB each).
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* none left */ }
  }

  return { pid: child.pid, output: () => log, exited: () => exited, stop };
}

/**
 * Spawns `command args` (spawnServer) and waits until POST <base>/mcp answers.
 * Returns { url: '<base>/mcp', base, stop }.
 */
async function startProcess(command, args, port, what, extraEnv = {}) {
  const base = `http://127.0.0.1:${port}`;
  const url = `${base}/mcp`;
  const { pid, output, exited, stop } = spawnServer(command, args, {
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: 'false',
      WRANGLER_SEND_ERROR_REPORTS: 'false',
      WRANGLER_HIDE_BANNER: 'true',
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
      // Search mode fetches a sentence encoder from the Hugging Face Hub (issue 61); no test
      // reaches the real hub: the cache only, unless a test names a stand-in (HF_ENDPOINT).
      HF_HUB_OFFLINE: '1',
      ...extraEnv,
    },
  });

  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exited()) {
      throw new Error(`${what} exited early (${JSON.stringify(exited())}); last output:\n${output()}`);
    }
    try {
      const first = await post(url, { jsonrpc: '2.0', id: 0, method: 'ping' }, { timeoutMs: 2000 });
      // any HTTP status means it is serving; output() is the tail of its stdout and stderr; `first`
      // is the answer to that ping, the server's first request
      return { url, base, stop, pid, output, first };
    } catch { /* not up yet */ }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${what} not ready on ${url} after ${READY_TIMEOUT_MS / 1000}s; last output:\n${output()}`);
    }
    await sleep(POLL_MS);
  }
}

/** The session secret of the Workers this process starts (random per test run). */
const SESSION_SECRET = `e2e-${randomBytes(16).toString('hex')}`;

/**
 * Starts `wrangler dev` for worker/ (the built Worker in local workerd).
 * Options: port, persistTo (directory for local state), extraArgs (array passed to wrangler),
 * logLevel ('warn' unless given; 'log' shows the Worker's console.log lines in output()).
 */
export async function startWorker({ port, persistTo, extraArgs = [], logLevel = 'warn' } = {}) {
  if (port == null) return onFreePort((p) => startWorker({ port: p, persistTo, extraArgs, logLevel }));
  // One session secret for every Worker this test process starts: a session outlives a restart
  // (as with a secret set by `wrangler secret put`), unless a test sets its own.
  if (!extraArgs.some((a) => String(a).startsWith('MCP_SIEVE_SESSION_SECRET'))) {
    extraArgs = [...extraArgs, '--var', `MCP_SIEVE_SESSION_SECRET:${SESSION_SECRET}`];
  }
  const args = ['dev', '--cwd', 'worker', '--ip', '127.0.0.1', '--port', String(port),
    '--show-interactive-dev-session=false', '--log-level', logLevel];
  // Local state in a directory of its own (not worker/.wrangler, shared by every run), removed
  // when the Worker stops unless the test gave it.
  const own = persistTo ? null : mkdtempSync(path.join(tmpdir(), 'sieve-state-'));
  args.push('--persist-to', persistTo ?? own);
  args.push(...extraArgs);
  // No reload on configuration changes while a test runs.
  const started = await startProcess(path.join(ROOT, 'node_modules', '.bin', 'wrangler'), args, port, 'wrangler dev',
    { WRANGLER_CI_DISABLE_CONFIG_WATCHING: 'true' });
  if (!own) return started;
  return { ...started, stop: async () => { await started.stop(); rmSync(own, { recursive: true, force: true }); } };
}

/**
 * Starts the native server (`target/debug/mcp-sieve serve`, built by scripts/build.sh); extraArgs
 * are passed to it, env adds environment variables (its MCP_SIEVE_* configuration).
 */
export async function startNative({ port, extraArgs = [], env = {} } = {}) {
  if (port == null) return onFreePort((p) => startNative({ port: p, extraArgs, env }));
  const bin = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: cargo build -p mcp-sieve-server builds it`);
  return startProcess(bin, ['serve', '--host', '127.0.0.1', '--port', String(port), ...extraArgs], port, 'mcp-sieve serve', env);
}

/**
 * A server's output as text to match: each JSON log line of the Worker (`{"level":…,"message":…}`,
 * worker/src/telemetry/log.rs; wrangler dev colours a warning's and an error's) becomes its message; other
 * lines (the native server's) stay as they are.
 */
export function logText(output) {
  return output.split('\n').map((line) => {
    const l = line.replace(/\x1b\[[0-9;]*m/g, '');
    const at = l.indexOf('{"');
    if (at < 0) return l;
    try {
      const { message } = JSON.parse(l.slice(at));
      return typeof message === 'string' ? message : line;
    } catch { return line; }
  }).join('\n');
}

/** The server under test: the Worker, or the native server when SIEVE_TARGET=native. */
export const startTarget = (opts) => (process.env.SIEVE_TARGET === 'native' ? startNative(opts) : startWorker(opts));

/** Expects `promise` to reject with an McpError of `code` (and a message matching `re`). */
export async function rejectsWith(promise, code, re) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof McpError, `expected McpError, got ${err}`);
    assert.equal(err.code, code);
    if (re) assert.match(err.message, re);
    return true;
  });
}

/** Every tool an MCP SDK client lists, following `nextCursor`. */
export async function allTools(client) {
  const all = [];
  let cursor;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    all.push(...r.tools);
    cursor = r.nextCursor;
  } while (cursor);
  return all;
}

/** Every tool name an MCP SDK client lists, following `nextCursor`. */
export async function toolNames(client) {
  return (await allTools(client)).map((t) => t.name);
}

/**
 * A 2026-07-28 request the official SDK v2 client will not make for its caller (it refuses a
 * `resultType` other than "complete" or "input_required", such as the tasks extension's "task"),
 * sent over the SDK v2 client's own Streamable HTTP transport (which derives the version, method
 * and name headers from the `_meta` envelope). Resolves the JSON-RPC response, untouched.
 */
export async function sdkStateless(url, method, params = {}, { headers = {}, capabilities = {} } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const { message } = statelessRequest(method, params, { capabilities });
  const answer = new Promise((resolve, reject) => {
    transport.onmessage = (m) => { if (m.id === message.id) resolve(m); };
    transport.onerror = reject;
  });
  await transport.start();
  try {
    await transport.send(message);
    return await answer;
  } finally {
    await transport.close().catch(() => {});
  }
}
