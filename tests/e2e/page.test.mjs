// E2E test of the demo page (web/): the built Worker serves the page, the wasm package and /mcp
// from one origin; Debian's chromium (driven by playwright-core) loads the page, which filters the
// tool list client-side. The page's lists must equal what the server returns for the same filter.
// Needs a build first (scripts/build.sh): worker/build/, pkg/ and target/site/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startWorker, rpc } from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCREENSHOT = path.join(ROOT, 'target', 'screenshots', 'demo-calendar.png');
const PROTOCOL_VERSION = '2025-11-25';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

let worker;
let context;
let page;
let profileDir;
let sessionId;
let nextId = 1;
const pageErrors = [];

/** A JSON-RPC request on the test's own session; fails on an HTTP or JSON-RPC error. */
async function request(method, params = {}) {
  const res = await rpc(worker.url, { jsonrpc: '2.0', id: nextId++, method, params },
    { sessionId, headers: sessionId ? { 'MCP-Protocol-Version': PROTOCOL_VERSION } : {} });
  assert.equal(res.status, 200, `${method}: HTTP ${res.status} ${JSON.stringify(res.json)}`);
  assert.ok(res.json && !res.json.error, `${method}: ${JSON.stringify(res.json?.error)}`);
  return res;
}

async function openSession() {
  const res = await request('initialize', {
    protocolVersion: PROTOCOL_VERSION, capabilities: {},
    clientInfo: { name: 'mcp-sieve-page-test', version: '0.1.0' },
  });
  sessionId = res.headers.get('mcp-session-id');
  assert.ok(sessionId, 'initialize answered without an Mcp-Session-Id header');
  const note = await rpc(worker.url, { jsonrpc: '2.0', method: 'notifications/initialized' },
    { sessionId, headers: { 'MCP-Protocol-Version': PROTOCOL_VERSION } });
  assert.equal(note.status, 202, `notifications/initialized: HTTP ${note.status}`);
}

/** Sorted names of every tool the server lists for `filter`, following nextCursor. */
async function serverToolNames(filter) {
  const names = [];
  let cursor;
  do {
    const params = { ...(filter ? { filter } : {}), ...(cursor ? { cursor } : {}) };
    const { json } = await request('tools/list', params);
    names.push(...json.result.tools.map((t) => t.name));
    cursor = json.result.nextCursor;
  } while (cursor);
  return names.sort();
}

const pageToolNames = async () =>
  (await page.locator('#tools li[data-name]').evaluateAll((lis) => lis.map((li) => li.dataset.name))).sort();

/** Clicks the label of a checkbox (as a user would) and checks it became ticked. */
async function tick(selector) {
  const box = page.locator(selector);
  assert.equal(await box.count(), 1, `exactly one checkbox ${selector}`);
  await page.locator(`label:has(${selector})`).click();
  assert.equal(await box.isChecked(), true, `${selector} is ticked after clicking its label`);
}

before(async () => {
  worker = await startWorker();
  await openSession();
  profileDir = await mkdtemp(path.join(os.tmpdir(), 'mcp-sieve-chromium-'));
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS,
  });
  page = context.pages()[0] ?? await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
});

after(async () => {
  await context?.close();
  await worker?.stop();
  if (profileDir) await rm(profileDir, { recursive: true, force: true });
});

test('the demo page lists every tool, then filters like the server does', async () => {
  await page.goto(`${worker.base}/`);
  await page.waitForSelector('body[data-ready="true"], #error:not([hidden])', { timeout: 30_000 });
  const error = await page.locator('#error:not([hidden])').count()
    ? await page.locator('#error').textContent() : null;
  assert.equal(error, null, `the page shows an error; console: ${pageErrors.join(' | ')}`);

  const all = await serverToolNames();
  assert.ok(all.length > 0, 'the server lists tools');
  assert.deepEqual(await pageToolNames(), all, 'unfiltered, the page shows the full tools list');
  assert.match(await page.locator('#summary').textContent(), new RegExp(`^${all.length} of ${all.length} tools`));

  await tick('input[data-group="calendar"]');
  const calendar = await serverToolNames({ groups: ['calendar'] });
  assert.ok(calendar.length > 0 && calendar.length < all.length, 'calendar narrows the list');
  assert.deepEqual(await pageToolNames(), calendar, 'group calendar: page equals server');

  await tick('input[data-tag="read-only"]');
  const readOnly = await serverToolNames({ groups: ['calendar'], tags: ['read-only'] });
  assert.ok(readOnly.length > 0 && readOnly.length < calendar.length, 'read-only narrows it further');
  assert.deepEqual(await pageToolNames(), readOnly, 'calendar + read-only: page equals server');
  assert.match(await page.locator('#summary').textContent(),
    new RegExp(`^${readOnly.length} of ${all.length} tools · [\\d.]+ KB of [\\d.]+ KB · ~[\\d,]+ of ~[\\d,]+ tokens$`));

  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  assert.deepEqual(pageErrors, [], 'no page errors');
});
