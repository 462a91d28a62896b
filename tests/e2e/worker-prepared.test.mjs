// E2E (the Worker): a catalog document put in KV in its prepared form (`mcp-sieve prepare`,
// docs/src/worker.md) serves what its JSON serves — every page of tools, resources, templates
// and prompts, byte for byte — and what it lists comes from the index (a tag renamed there is
// listed under its new name). A prepared
// form this build does not read (another version's, an index cut short) is logged with why and
// its JSON loaded instead; one whose first line is malformed is a configuration error that names
// it. Each case is a fresh `wrangler dev` over its own local KV. While it runs, a changed
// prepared form is picked up (the 5 s look compares its tag), and the same one put again is not
// rebuilt.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { logText, startWorker } from './harness.mjs';
import { stateless } from '../common/mcp-raw.mjs';
import { ROOT, native, until } from '../security/helpers.mjs';

const BIN = path.join(ROOT, 'target', 'debug', 'mcp-sieve');
const skip = (native() && 'the Worker only (the native server reads files)')
  || (!existsSync(BIN) && 'needs target/debug/mcp-sieve (cargo build -p mcp-sieve-server) for `prepare`');

// Membership in both places, a concern mapping, aliases, annotations, escapes, every kind, and
// pages of 2 so the cursors are compared too.
const DOC = JSON.stringify({
  groups: [{ name: 'files' }, { name: 'mail', parent: 'files' }],
  tags: [{ name: 'ro' }],
  concerns: [{ name: 'cost', values: ['low', 'high'] }],
  concernMapping: { send: { cost: 'high' } },
  options: { pageSize: 2 },
  tools: [
    { name: 'read', description: 'caf\u00e9 "q" \\ /', inputSchema: { type: 'object' }, groups: ['files'], tags: ['ro', 'ro'], annotations: { readOnlyHint: true } },
    { name: 'send', inputSchema: { type: 'object', properties: { n: { type: 'number', minimum: 1.50 } } }, _meta: { 'io.modelcontextprotocol/groups': ['mail'], concerns: { cost: 'low' } } },
    { name: 'move', aliases: ['rename'], inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
    { name: 'list', inputSchema: { type: 'object' }, tags: ['ro'] },
    { name: 'plain', inputSchema: { type: 'object' } },
  ],
  resources: [{ name: 'r', uri: 'file:///r', groups: ['files'], text: 'hello' }],
  resourceTemplates: [{ name: 't', uriTemplate: 'file:///{x}' }],
  prompts: [{ name: 'p', arguments: [{ name: 'a', required: true }] }],
}, null, 2);

let tmp;
before(() => { tmp = mkdtempSync(path.join(tmpdir(), 'sieve-worker-prepared-')); });
after(() => tmp && rmSync(tmp, { recursive: true, force: true }));

/** Writes `value` (text or bytes) as the key "config" of a fresh local KV; returns its folder. */
function putConfig(name, value) {
  const state = path.join(tmp, `state-${name}`);
  const file = path.join(tmp, `${name}.value`);
  writeFileSync(file, value);
  execFileSync(path.join(ROOT, 'node_modules', '.bin', 'wrangler'),
    ['kv', 'key', 'put', 'config', '--path', file, '--binding', 'MCP_SIEVE_KV', '--local', '--cwd', 'worker', '--persist-to', state],
    { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true' }, stdio: 'ignore' });
  return state;
}

/** The prepared form of DOC, as `mcp-sieve prepare` writes it. */
function prepared() {
  const json = path.join(tmp, 'doc.json');
  const out = path.join(tmp, 'doc.prepared');
  writeFileSync(json, DOC);
  execFileSync(BIN, ['prepare', json, '-o', out], { stdio: 'ignore' });
  return readFileSync(out);
}

/** The prepared form with its first line rewritten by `edit`. */
function withFirstLine(value, edit) {
  const eol = value.indexOf(0x0a);
  return Buffer.concat([Buffer.from(`${edit(value.subarray(0, eol).toString())}\n`), value.subarray(eol + 1)]);
}

const METHODS = ['tools/list', 'resources/list', 'resources/templates/list', 'prompts/list'];

/** Every page of every list, as answered (the results' JSON text), and a call by an alias. */
async function lists(url) {
  const pages = {};
  for (const method of METHODS) {
    pages[method] = [];
    let cursor;
    do {
      const r = await stateless(url, method, cursor ? { cursor } : {});
      assert.equal(r.status, 200, r.body);
      assert.ok(r.response.result, `${method}: ${r.body}`);
      pages[method].push(JSON.stringify(r.response.result));
      cursor = r.response.result.nextCursor;
    } while (cursor && pages[method].length < 10);
  }
  return pages;
}

/** Starts a Worker over a KV holding `value`, runs `f(worker)`, stops it. */
async function withWorker(name, value, f) {
  const worker = await startWorker({ persistTo: putConfig(name, value), logLevel: 'log' });
  try {
    return await f(worker);
  } finally {
    await worker.stop();
  }
}

test('a prepared form in KV serves what its JSON serves; one this build does not read is logged and its JSON served', { skip, timeout: 300_000 }, async () => {
  const value = prepared();
  assert.match(value.subarray(0, 200).toString(), /^mcp-sieve-prepared 2 json=\d+ index=\d+ version=\S+ tag=[0-9a-f]{32}\n/);
  const fromJson = await withWorker('json', DOC, async (w) => {
    const pages = await lists(w.url);
    assert.doesNotMatch(logText(w.output()), /prepared form/);
    return pages;
  });
  assert.equal(fromJson['tools/list'].length, 3, 'five tools in pages of two');
  assert.match(fromJson['tools/list'][0], /"groups":\["files"\]/);

  await withWorker('prepared', value, async (w) => {
    assert.deepEqual(await lists(w.url), fromJson);
    const log = logText(w.output());
    assert.doesNotMatch(log, /prepared form/, log);
  });

  // The index is what the Worker reads: the tag "ro" renamed in the index only (a string of two
  // bytes, its length first) is listed under its new name, which the JSON does not hold.
  const eol = value.indexOf(0x0a);
  const indexAt = eol + 1 + Number(/json=(\d+)/.exec(value.subarray(0, eol).toString())[1]);
  const renamed = Buffer.from(value);
  let renames = 0;
  for (let i = indexAt; i + 2 < renamed.length; i += 1) {
    if (renamed[i] === 2 && renamed[i + 1] === 0x72 && renamed[i + 2] === 0x6f) { renamed[i + 2] = 0x77; renames += 1; }
  }
  assert.equal(renames, 3, 'the tag "ro" in the index: the tools read and list (its two written once), and its bits');
  await withWorker('renamed', renamed, async (w) => {
    const tools = (await lists(w.url))['tools/list'].join('');
    assert.match(tools, /"tags":\["rw"\]/, tools);
    assert.doesNotMatch(tools, /"ro"/, tools);
  });

  const stale = withFirstLine(value, (line) => line.replace(/version=\S+/, 'version=0.0.1'));
  await withWorker('stale', stale, async (w) => {
    assert.deepEqual(await lists(w.url), fromJson);
    await until('the refusal logged', () => /loaded instead/.test(logText(w.output())));
    assert.match(logText(w.output()),
      /MCP_SIEVE_KV key "config": the prepared form is format 2 of mcp-sieve 0\.0\.1; this build reads format 2 of mcp-sieve \S+ \(run `mcp-sieve prepare` of this version again\); its JSON document is loaded instead/);
  });

  // The index cut short (its length in the first line made to agree).
  const index = Number(/index=(\d+)/.exec(value.subarray(0, eol).toString())[1]);
  const cut = withFirstLine(value.subarray(0, value.length - 5), (line) => line.replace(/index=\d+/, `index=${index - 5}`));
  await withWorker('cut', cut, async (w) => {
    assert.deepEqual(await lists(w.url), fromJson);
    await until('the refusal logged', () => /loaded instead/.test(logText(w.output())));
    assert.match(logText(w.output()), /MCP_SIEVE_KV key "config": the prepared form's index is corrupt: it ends early at byte \d+ of \d+; its JSON document is loaded instead/);
  });

  // A first line whose lengths do not agree with the value: the JSON cannot be found.
  const broken = withFirstLine(value, (line) => line.replace(/json=\d+/, 'json=12'));
  await withWorker('broken', broken, async (w) => {
    const r = await stateless(w.url, 'tools/list');
    assert.ok(r.response?.error, r.body);
    assert.match(r.response.error.message, /MCP_SIEVE_KV key "config": the prepared form's first line is malformed \(the lengths give \d+ bytes, the value has \d+\)/);
  });
});

test('a prepared form changed in KV is picked up by its tag; the same one put again is not rebuilt', { skip, timeout: 180_000 }, async () => {
  const state = putConfig('reload', prepared());
  const worker = await startWorker({ persistTo: state, logLevel: 'log' });
  try {
    const names = async () => {
      const r = await stateless(worker.url, 'tools/list', {}, {});
      assert.equal(r.status, 200, r.body);
      return r.response.result.tools.map((t) => t.name);
    };
    assert.deepEqual(await names(), ['read', 'send']);
    // The same value again: after two looks at the key (every 5 s), nothing was rebuilt.
    putConfig('reload', prepared());
    const deadline = Date.now() + 11_000;
    while (Date.now() < deadline) await names();
    assert.doesNotMatch(logText(worker.output()), /reload: .* applied/);
    // Another document, prepared: picked up.
    const other = JSON.parse(DOC);
    other.tools[0].name = 'reread';
    const json = path.join(tmp, 'other.json');
    const out = path.join(tmp, 'other.prepared');
    writeFileSync(json, JSON.stringify(other));
    execFileSync(BIN, ['prepare', json, '-o', out], { stdio: 'ignore' });
    putConfig('reload', readFileSync(out));
    await until('the changed prepared form applied', async () => (await names())[0] === 'reread');
    await until('the reload logged', () => /reload: MCP_SIEVE_KV key "config" applied in \d+ ms/.test(logText(worker.output())));
  } finally {
    await worker.stop();
  }
});
