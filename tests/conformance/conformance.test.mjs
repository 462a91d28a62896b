// The MCP conformance suite (@modelcontextprotocol/conformance, every active server scenario)
// against the real Worker under `wrangler dev`, serving the fixture profile
// catalog/conformance.json. A scenario fails this test when any of its checks fails and it is not
// listed in baseline.json; a baselined scenario that starts passing only warns (remove it from the
// baseline then). Needs the Worker built first (scripts/build.sh). Node 20 needs the globSync
// preload beside this file (see node20-globsync.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startWorker } from '../e2e/harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const CLI = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const PRELOAD = path.join(HERE, 'node20-globsync.mjs');
const BASELINE = JSON.parse(fs.readFileSync(path.join(HERE, 'baseline.json'), 'utf8'));
const RUN_TIMEOUT_MS = 240_000;

/** Runs the conformance CLI with `args`; resolves with its combined output (rejects on timeout). */
function conformance(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', PRELOAD, CLI, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`conformance ${args.join(' ')} timed out; output so far:\n${out.slice(-4000)}`));
    }, RUN_TIMEOUT_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

let worker;
let outDir;
const results = new Map(); // scenario → checks

before(async () => {
  const config = fs.readFileSync(path.join(ROOT, 'catalog', 'conformance.json'), 'utf8');
  worker = await startWorker({ extraArgs: ['--var', `MCP_SIEVE_CONFIG:${config}`] });
  outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sieve-conformance-'));
  const { out } = await conformance(['server', '--url', worker.url, '-o', outDir]);
  for (const dir of fs.readdirSync(outDir)) {
    const checks = JSON.parse(fs.readFileSync(path.join(outDir, dir, 'checks.json'), 'utf8'));
    const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
    results.set(name, checks);
  }
  if (results.size === 0) throw new Error(`the conformance run produced no results:\n${out.slice(-4000)}`);
}, { timeout: RUN_TIMEOUT_MS + 120_000 });

after(async () => {
  await worker?.stop();
  if (outDir) fs.rmSync(outDir, { recursive: true, force: true });
});

test('every active server scenario ran', async () => {
  const { out } = await conformance(['list', '--server']);
  const listed = [...out.matchAll(/^\s+- ([a-z0-9-]+) \[/gm)].map((m) => m[1]);
  assert.ok(listed.length >= 30, `conformance list --server: ${listed.length} scenarios`);
  // The run covers the active suite; the list also shows pending scenarios.
  assert.ok(results.size >= 28, `${results.size} scenarios ran`);
  for (const name of results.keys()) assert.ok(listed.includes(name), `${name} is a listed scenario`);
  for (const name of Object.keys(BASELINE)) {
    assert.ok(listed.includes(name), `baseline entry ${name} is a scenario of this suite version`);
  }
});

test('scenarios pass unless baselined', () => {
  const unexpected = [];
  const rows = [];
  for (const [name, checks] of [...results].sort()) {
    const failed = checks.filter((c) => c.status === 'FAILURE');
    const baselined = Object.hasOwn(BASELINE, name);
    if (failed.length === 0) {
      rows.push(`${name}: pass`);
      if (baselined) console.warn(`WARNING: ${name} now passes; remove it from tests/conformance/baseline.json`);
    } else if (baselined) {
      rows.push(`${name}: baselined (${BASELINE[name]})`);
    } else {
      rows.push(`${name}: FAIL`);
      unexpected.push(`${name}: ${failed.map((c) => `${c.id}: ${c.errorMessage ?? 'failed'}`).join('; ')}`);
    }
  }
  console.log(rows.join('\n'));
  assert.deepEqual(unexpected, [], 'scenarios that fail and are not in baseline.json');
});
