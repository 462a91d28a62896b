// E2E (native; issue 61 item 5): `mcp-sieve index --ai` encodes the document's tools with Workers
// AI's REST API — the model a Worker with an `[ai]` binding encodes its queries with
// (@cf/baai/bge-small-en-v1.5 unless search.ai names another), recorded as `search/model` so the
// Worker never mixes two models' vectors. Tested against a loopback stand-in of
// `POST /client/v4/accounts/{account}/ai/run/{model}` reached through CLOUDFLARE_API_BASE_URL
// (no Cloudflare account here): the batches, the token and the account sent, the vectors written;
// a missing variable, a refused token, an unknown account and an API that cannot be reached each
// named; a document whose search names another encoder refused. Needs target/debug/mcp-sieve.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'target/debug/mcp-sieve');
const CATALOG = path.join(ROOT, 'catalog/public-servers.json');
const BGE = '@cf/baai/bge-small-en-v1.5';
const DIM = 384;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sieve-index-ai-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A text's stand-in vector: 384 numbers from its sha256, not of unit length (the client normalizes). */
function vectorOf(text) {
  const out = [];
  for (let i = 0; out.length < DIM; i++) {
    const h = createHash('sha256').update(`${i}:${text}`).digest();
    for (let j = 0; j < h.length && out.length < DIM; j += 2) out.push((h.readUInt16LE(j) - 32768) / 1000);
  }
  return out;
}
const unit = (v) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

/**
 * The stand-in: Workers AI's REST API for one account and token, answering as Cloudflare does
 * (`{result: {shape, data}, success, errors, messages}`; 401 with code 10000 for another token,
 * 404 with code 7003 for another account). Keeps each request.
 */
async function standIn({ account = 'acc-1', token = 'tok-1' } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ url: req.url, auth: req.headers.authorization, type: req.headers['content-type'], body: JSON.parse(body || 'null') });
      const send = (status, o) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(o));
      };
      const m = /^\/client\/v4\/accounts\/([^/]+)\/ai\/run\/(@cf\/.+)$/.exec(req.url);
      if (req.headers.authorization !== `Bearer ${token}`) {
        return send(401, { success: false, errors: [{ code: 10000, message: 'Authentication error' }], messages: [], result: null });
      }
      if (req.method !== 'POST' || !m || m[1] !== account) {
        return send(404, { success: false, errors: [{ code: 7003, message: 'Could not route to /accounts/x/ai/run, perhaps your object identifier is invalid?' }], messages: [], result: null });
      }
      const text = JSON.parse(body).text;
      send(200, { result: { shape: [text.length, DIM], data: text.map(vectorOf), pooling: 'mean' }, success: true, errors: [], messages: [] });
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { requests, base: `http://127.0.0.1:${server.address().port}/client/v4`, close: () => new Promise((r) => server.close(r)) };
}

/** `mcp-sieve index --ai` on `doc` with `vars`: {code, stderr, entries}. */
async function index(doc, vars) {
  const file = path.join(tmp, `doc-${Math.random().toString(16).slice(2)}.json`);
  fs.writeFileSync(file, JSON.stringify(doc));
  const out = `${file}.kv.json`;
  const env = { ...process.env, HF_HUB_OFFLINE: '1', NO_PROXY: '127.0.0.1', ...vars };
  for (const k of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'CLOUDFLARE_ACCOUNT_ID', 'CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_API_BASE_URL']) {
    if (!(k in vars)) delete env[k];
  }
  try {
    const { stderr } = await run(BIN, ['index', '--catalog', file, '--ai', '--output', out], { env, timeout: 60_000 });
    return { code: 0, stderr, entries: JSON.parse(fs.readFileSync(out, 'utf8')) };
  } catch (e) {
    return { code: e.code, stderr: e.stderr ?? String(e) };
  }
}

const catalog = () => JSON.parse(fs.readFileSync(CATALOG, 'utf8'));

test('index --ai writes the tools\' vectors from Workers AI\'s bge-small-en-v1.5, 50 texts a request, and records the model', async () => {
  const api = await standIn();
  try {
    const r = await index(catalog(), { CLOUDFLARE_ACCOUNT_ID: 'acc-1', CLOUDFLARE_API_TOKEN: 'tok-1', CLOUDFLARE_API_BASE_URL: api.base });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.entries[0], { key: 'search/model', value: BGE });
    const vectors = r.entries.slice(1);
    const sent = api.requests.flatMap((q) => q.body.text);
    assert.ok(vectors.length > 300, `${vectors.length} vectors`);
    assert.equal(sent.length, vectors.length, 'each distinct definition sent once');
    assert.equal(api.requests.length, Math.ceil(sent.length / 50));
    for (const q of api.requests) {
      assert.equal(q.url, `/client/v4/accounts/acc-1/ai/run/${BGE}`);
      assert.equal(q.auth, 'Bearer tok-1');
      assert.equal(q.type, 'application/json');
      assert.ok(q.body.text.length >= 1 && q.body.text.length <= 50);
    }
    // Every value is one stand-in answer, normalized (cosine 1 to f32 precision), as 384
    // little-endian f32.
    const expected = sent.map((t) => unit(vectorOf(t)));
    for (const e of vectors) {
      assert.match(e.key, /^search\/[0-9a-f]{64}$/);
      const bytes = Buffer.from(e.value, 'base64');
      assert.equal(bytes.length, DIM * 4);
      const row = Array.from({ length: DIM }, (_, i) => bytes.readFloatLE(i * 4));
      const best = Math.max(...expected.map((x) => x.reduce((s, v, i) => s + v * row[i], 0)));
      assert.ok(best > 0.99999 && Math.abs(Math.hypot(...row) - 1) < 1e-5, `${e.key}: not the stand-in's vector of a text sent (best cosine ${best})`);
    }
    assert.match(r.stderr, new RegExp(`${vectors.length} tool vectors \\(0 from the cache, ${sent.length} encoded\\)`));
  } finally {
    await api.close();
  }
});

test('index --ai uses the document\'s search.ai model and refuses a document that names another encoder', async () => {
  const api = await standIn();
  const vars = { CLOUDFLARE_ACCOUNT_ID: 'acc-1', CLOUDFLARE_API_TOKEN: 'tok-1', CLOUDFLARE_API_BASE_URL: api.base };
  try {
    const r = await index({ ...catalog(), search: { ai: '@cf/baai/bge-base-en-v1.5' } }, vars);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.entries[0], { key: 'search/model', value: '@cf/baai/bge-base-en-v1.5' });
    assert.ok(api.requests.every((q) => q.url.endsWith('/ai/run/@cf/baai/bge-base-en-v1.5')));
    const before = api.requests.length;
    for (const [search, named] of [
      [{ model: 'sentence-transformers/all-MiniLM-L6-v2' }, 'search.model (sentence-transformers/all-MiniLM-L6-v2)'],
      [{ model: false }, '"model": false'],
      [{ embeddings: 'https://e.example/v1/embeddings' }, 'search.embeddings (https://e.example/v1/embeddings)'],
    ]) {
      const bad = await index({ ...catalog(), search }, vars);
      assert.notEqual(bad.code, 0);
      assert.ok(bad.stderr.includes(`the document's ${named} means a Worker would not encode its queries with Workers AI`), bad.stderr);
      assert.match(bad.stderr, /set search\.ai/);
    }
    assert.equal(api.requests.length, before, 'nothing sent for a refused document');
  } finally {
    await api.close();
  }
});

test('index --ai names the variable to fix: a missing account or token, a refused token, an unknown account, an API not reached', async () => {
  const api = await standIn();
  try {
    const doc = catalog();
    let r = await index(doc, { CLOUDFLARE_API_TOKEN: 'tok-1', CLOUDFLARE_API_BASE_URL: api.base });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /index --ai needs CLOUDFLARE_ACCOUNT_ID/);
    r = await index(doc, { CLOUDFLARE_ACCOUNT_ID: 'acc-1', CLOUDFLARE_API_BASE_URL: api.base });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /index --ai needs CLOUDFLARE_API_TOKEN/);
    assert.equal(api.requests.length, 0);
    r = await index(doc, { CLOUDFLARE_ACCOUNT_ID: 'acc-1', CLOUDFLARE_API_TOKEN: 'wrong', CLOUDFLARE_API_BASE_URL: api.base });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Workers AI refused the token in CLOUDFLARE_API_TOKEN \(HTTP 401: 10000 Authentication error\)/);
    assert.ok(!r.stderr.includes('wrong'), 'the token is not printed');
    r = await index(doc, { CLOUDFLARE_ACCOUNT_ID: 'acc-2', CLOUDFLARE_API_TOKEN: 'tok-1', CLOUDFLARE_API_BASE_URL: api.base });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Workers AI knows no account acc-2 or model @cf\/baai\/bge-small-en-v1\.5 \(HTTP 404: 7003 .*\); check CLOUDFLARE_ACCOUNT_ID/);
    await api.close();
    r = await index(doc, { CLOUDFLARE_ACCOUNT_ID: 'acc-1', CLOUDFLARE_API_TOKEN: 'tok-1', CLOUDFLARE_API_BASE_URL: api.base });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(`cannot reach Workers AI at ${api.base}/accounts/acc-1/ai/run/${BGE} (CLOUDFLARE_API_BASE_URL when set`), r.stderr);
  } finally {
    await api.close().catch(() => {});
  }
});
