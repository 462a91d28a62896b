// E2E test of the demo page (web/): the built Worker serves the page, the wasm package and /mcp
// from one origin; Debian's chromium (driven by playwright-core) loads the page, which filters the
// tool list client-side. The page's lists must equal what the server returns for the same filter
// and concerns; concern choices reach the server's session and survive a reload (localStorage);
// groups are picked in the tree; hidden tools say why; the export panel's JSON names the tools and
// a URL serving them; pinning state shows per tool when the page talks to a gateway with
// `pinning` (native, in front of server-everything); the tasks panel filters by SEP-1904. Screenshots go to
// target/screenshots/. Needs a build first (scripts/build.sh): worker/build/, pkg/, target/site/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startNative, startWorker } from './harness.mjs';
import { startEverything } from '../security/helpers.mjs';
import { call, initialize, stateless } from '../common/mcp-raw.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const SHOTS = path.join(ROOT, 'target', 'screenshots');
const SCREENSHOT = path.join(SHOTS, 'demo-calendar.png');
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

let worker;
let context;
let page;
let profileDir;
let sessionId;
const pageErrors = [];

/** A JSON-RPC request on the test's own session; fails on an HTTP or JSON-RPC error. */
async function request(method, params = {}) {
  const res = await call(worker.url, sessionId, method, params);
  assert.equal(res.status, 200, `${method}: HTTP ${res.status} ${res.body.slice(0, 300)}`);
  assert.ok(res.response && !res.response.error, `${method}: ${JSON.stringify(res.response?.error)}`);
  return res.response;
}

/** Opens the test's own session (initialize fails the test unless it issues a session id). */
async function openSession() {
  ({ sessionId } = await initialize(worker.url, { clientInfo: { name: 'mcp-sieve-page-test', version: '0.1.0' } }));
}

/** Sorted names of every tool the server lists for `filter`, following nextCursor. */
async function serverToolNames(filter) {
  const names = [];
  let cursor;
  do {
    const params = { ...(filter ? { filter } : {}), ...(cursor ? { cursor } : {}) };
    const { result } = await request('tools/list', params);
    names.push(...result.tools.map((t) => t.name));
    cursor = result.nextCursor;
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

  // The view builder: the URL it shows gives a client that sends no filter exactly this list.
  const viewUrl = await page.locator('#view-url').getAttribute('data-url');
  assert.match(viewUrl, /\/mcp\?groups=calendar&tags=read-only$/);
  const viaView = [];
  let cursor;
  do {
    const r = await stateless(viewUrl, 'tools/list', cursor ? { cursor } : {});
    viaView.push(...r.response.result.tools.map((t) => t.name));
    cursor = r.response.result.nextCursor;
  } while (cursor);
  assert.deepEqual(viaView.sort(), readOnly, 'the view URL serves what the page shows');
  const config = JSON.parse(await page.locator('#view-config').textContent());
  assert.equal(config.mcpServers['mcp-sieve'].url, viewUrl, 'the client configuration to copy names the view URL');
  assert.match(await page.locator('#view-saves').textContent(), /saves ~[\d,]+ of ~[\d,]+ tokens/);

  // The search-mode toggle: the URL asks for search mode, which lists three tools and searches the rest.
  await page.locator('#view-builder summary').click(); // the user opens the view builder
  await page.locator('#view-search').check();
  const searchUrl = await page.locator('#view-url').getAttribute('data-url');
  assert.equal(searchUrl, `${viewUrl}&mode=search`);
  const listed = (await stateless(searchUrl, 'tools/list')).response.result.tools.map((t) => t.name);
  assert.deepEqual(listed, ['find_tools', 'describe_tools', 'call_tool']);
  const found = (await stateless(searchUrl, 'tools/call', { name: 'find_tools', arguments: { query: 'calendar events', limit: 20 } })).response.result;
  assert.ok(found.structuredContent.tools.length > 0 && found.structuredContent.tools.every((t) => readOnly.includes(t.name)),
    'find_tools searches only the view');
  await page.waitForFunction(() => document.querySelector('#view-saves').textContent.startsWith('Search mode'));
  assert.match(await page.locator('#view-saves').textContent(),
    new RegExp(`^Search mode: the client lists find_tools, describe_tools, call_tool \\(~[\\d,]+ tokens\\) and finds among ${readOnly.length} tools: saves ~[\\d,]+ of ~[\\d,]+ tokens`));
  assert.equal(JSON.parse(await page.locator('#view-config').textContent()).mcpServers['mcp-sieve'].url, searchUrl);

  await mkdir(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  assert.deepEqual(pageErrors, [], 'no page errors');
});

test('hidden tools say why on hover; the export panel writes the selection for Anthropic and OpenAI', async () => {
  await page.goto(`${worker.base}/`);
  await waitReady();
  await tick('input[data-group="calendar"]');
  await tick('input[data-exclude-tag="destructive"]');
  const shown = await pageToolNames();
  const why = async (name) => page.locator(`#hidden-tools li[data-name="${name}"]`).getAttribute('title');
  assert.match(await why('echo'), /^Hidden: groups: in none of calendar/);
  assert.match(await why('delete_event'), /^Hidden: excludeTags: has destructive$/);
  const hidden = await page.locator('#hidden-tools li[data-name]').count();
  assert.equal(hidden + shown.length, (await serverToolNames()).length, 'every tool is shown or hidden');

  await page.locator('#export summary').click();
  const exported = async () => JSON.parse(await page.locator('#export-json').textContent());
  const anthropic = await exported();
  assert.deepEqual(Object.keys(anthropic.tools[0].configs).sort(), shown);
  assert.ok(Object.values(anthropic.tools[0].configs).every((c) => c.enabled && !c.defer_loading));
  const url = anthropic.mcp_servers[0].url;
  assert.match(url, /\/mcp\?groups=calendar&excludeTags=destructive$/);
  const served = (await stateless(url, 'tools/list')).response.result.tools.map((t) => t.name).sort();
  assert.deepEqual(served, shown, 'the exported URL serves the exported tools');

  await page.locator('#export-format').selectOption('openai');
  await page.waitForSelector('#export-json[data-format="openai"]');
  const openai = await exported();
  assert.deepEqual(openai.tools.flatMap((n) => n.tools.map((f) => f.name)).sort(), shown);
  assert.deepEqual(openai.tools.map((n) => n.type), ['namespace']);

  await page.locator('#view-builder summary').click();
  await page.locator('#view-search').check();
  const searching = await exported();
  assert.deepEqual(searching.tools.at(-1), { type: 'tool_search' });
  assert.ok(searching.tools[0].tools.every((f) => f.defer_loading), 'search mode defers every tool');
  assert.deepEqual(pageErrors, [], 'no page errors');
});

async function waitReady() {
  await page.waitForSelector('body[data-ready="true"], #error:not([hidden])', { timeout: 30_000 });
  const error = await page.locator('#error:not([hidden])').count() ? await page.locator('#error').textContent() : null;
  assert.equal(error, null, `the page shows an error; console: ${pageErrors.join(' | ')}`);
}

/** The page's own session count from the server, once it reflects `concerns`. */
async function pageServerCount(concerns) {
  const want = JSON.stringify(concerns);
  await page.waitForFunction((w) => document.getElementById('server-check').dataset.concerns === w, want, { timeout: 15_000 });
  return Number(await page.locator('#server-check').getAttribute('data-server-count'));
}

test('choosing concerns filters like the server, reaches the session, and survives a reload', async () => {
  await page.goto(`${worker.base}/`);
  await page.evaluate(() => localStorage.clear());
  await page.reload();
  await waitReady();
  const all = await serverToolNames();
  // One control per declared concern, preset to the declared default and not yet applied.
  assert.equal(await page.locator('select[data-concern="security"]').inputValue(), 'medium');
  assert.equal(await page.locator('input[data-concern-on="security"]').isChecked(), false);
  assert.deepEqual(await pageToolNames(), all);

  await page.selectOption('select[data-concern="security"]', 'high');
  assert.equal(await page.locator('input[data-concern-on="security"]').isChecked(), true);
  const high = await serverToolNames({ concerns: { security: 'high' } });
  assert.ok(high.length > 0 && high.length < all.length, 'security=high narrows the list');
  assert.deepEqual(await pageToolNames(), high, 'security=high: page equals server');
  // A tool security=high leaves out says so (the package's explain), with the tool's own rating.
  const out = all.find((n) => !high.includes(n));
  assert.match(await page.locator(`#hidden-tools li[data-name="${out}"]`).getAttribute('title'),
    /^Hidden: concern: security=high hides it \(the tool's is (low|medium|unset)\)$/);
  // The page sent the choice to its own session (concerns/update): the server agrees.
  assert.equal(await pageServerCount({ security: 'high' }), high.length);

  // Keyboard: focus the cost box and tick it with the space bar.
  await page.focus('input[data-concern-on="cost"]');
  await page.keyboard.press('Space');
  const both = await serverToolNames({ concerns: { security: 'high', cost: 'moderate' } });
  assert.deepEqual(await pageToolNames(), both, 'security=high + cost=moderate: page equals server');
  assert.equal(await pageServerCount({ security: 'high', cost: 'moderate' }), both.length);
  // Facet counts beside the options agree with the server for one more option.
  const lowCost = (await serverToolNames({ concerns: { security: 'high', cost: 'minimal' } })).length;
  assert.match(await page.locator('select[data-concern="cost"] option[value="minimal"]').textContent(), new RegExp(` · ${lowCost} tools$`));

  await page.reload();
  await waitReady();
  assert.equal(await page.locator('select[data-concern="security"]').inputValue(), 'high', 'security kept after reload');
  assert.equal(await page.locator('input[data-concern-on="cost"]').isChecked(), true, 'cost kept after reload');
  assert.deepEqual(await pageToolNames(), both, 'after reload the page still equals the server');
  // A new session: the stored preferences went out in notifications/initialized.
  assert.equal(await pageServerCount({ security: 'high', cost: 'moderate' }), both.length);
  await page.screenshot({ path: path.join(SHOTS, 'demo-concerns.png'), fullPage: true });
  await page.evaluate(() => localStorage.clear());
  assert.deepEqual(pageErrors, [], 'no page errors');
});

test('picking a parent group in the tree includes its subgroups; search and tag exclusion narrow it', async () => {
  await page.goto(`${worker.base}/`);
  await waitReady();
  assert.equal(await page.locator('#group-tree li:has(input[data-group="code"]) input[data-group="github"]').count(), 1,
    'github is nested under code in the tree');
  const facet = Number(await page.locator('[data-count="group:code"]').textContent());
  await tick('input[data-group="code"]');
  const code = await serverToolNames({ groups: ['code'] });
  const github = await serverToolNames({ groups: ['github'] });
  assert.ok(github.every((n) => code.includes(n)) && github.length < code.length, 'code includes github');
  assert.deepEqual(await pageToolNames(), code, 'group code: page equals server');
  assert.equal(facet, code.length, 'the facet count beside "code" was the number of tools it leaves');

  await tick('input[data-exclude-tag="write"]');
  const noWrite = await serverToolNames({ groups: ['code'], excludeTags: ['write'] });
  assert.deepEqual(await pageToolNames(), noWrite, 'code without write: page equals server');

  await page.fill('#search', 'issue');
  const issues = await serverToolNames({ groups: ['code'], excludeTags: ['write'], namePatterns: ['*issue*'] });
  assert.ok(issues.length > 0, 'some code tools without write are about issues');
  assert.deepEqual(await pageToolNames(), issues, 'name search: page equals server');
  await page.screenshot({ path: path.join(SHOTS, 'demo-group-tree.png'), fullPage: true });
  assert.deepEqual(pageErrors, [], 'no page errors');
});

test('the tasks panel lists the session\'s tasks and filters them by SEP-1904', async () => {
  await page.goto(`${worker.base}/`);
  await waitReady();
  await page.click('#task-start');
  await page.waitForSelector('#task-list li[data-task-id]', { timeout: 15_000 });
  assert.match(await page.locator('#task-summary').textContent(), /^1 of 1 tasks$/);
  await page.locator('label:has(input[data-task-status="cancelled"])').click();
  assert.equal(await page.locator('#task-list li').count(), 0, 'no cancelled task');
  assert.match(await page.locator('#task-summary').textContent(), /^0 of 1 tasks$/);
  await page.locator('label:has(input[data-task-status="cancelled"])').click();
  await page.locator('label:has(input[data-task-status="working"])').click();
  await page.locator('label:has(input[data-task-status="completed"])').click();
  assert.equal(await page.locator('#task-list li').count(), 1, 'working or completed: the task');
  await page.screenshot({ path: path.join(SHOTS, 'demo-tasks.png'), fullPage: true });
  assert.deepEqual(pageErrors, [], 'no page errors');
});

test('pinning state: against a gateway with "pinning": "warn", each tool shows its digest or why it is unpinned', { timeout: 180_000 }, async () => {
  const upstream = await startEverything();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mcp-sieve-page-pin-'));
  let gateway;
  try {
    const doc = path.join(dir, 'catalog.json');
    await writeFile(doc, JSON.stringify({ upstreams: { ev: { url: upstream.url, prefix: 'ev_' } }, pinning: 'warn' }));
    // Pin one tool as it is now (mcp-sieve pin --approve): it shows its digest; the rest are new.
    await promisify(execFile)(path.join(ROOT, 'target', 'debug', 'mcp-sieve'), ['pin', '--catalog', doc, '--approve', 'ev_echo']);
    gateway = await startNative({ extraArgs: ['--catalog', doc] });
    await page.goto(`${worker.base}/?server=${encodeURIComponent(`${gateway.base}/mcp`)}`);
    await page.waitForSelector('body[data-ready="true"], #error:not([hidden])', { timeout: 30_000 });
    const chips = await page.locator('#tools li[data-name]').evaluateAll((lis) => Object.fromEntries(lis.map((li) => {
      const chip = li.querySelector('[data-pinning]');
      return [li.dataset.name, chip ? { state: chip.dataset.pinning, text: chip.textContent, title: chip.title } : null];
    })));
    const names = Object.keys(chips);
    assert.ok(names.length > 3 && names.every((n) => n.startsWith('ev_')), `the gateway's tools: ${names}`);
    assert.equal(chips.ev_echo?.state, 'digest', `the pinned tool shows its digest: ${JSON.stringify(chips.ev_echo)}`);
    assert.match(chips.ev_echo.title, /^definition digest sha256:[0-9a-f]{64}$/);
    const others = names.filter((n) => n !== 'ev_echo');
    for (const n of others) assert.equal(chips[n]?.state, 'new', `${n} is unpinned (new): ${JSON.stringify(chips[n])}`);
    assert.equal(chips[others[0]].text, 'unpinned (new)');
  } finally {
    await gateway?.stop();
    await upstream.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
