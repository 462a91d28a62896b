// The book's "Deploy for a team" (docs/src/identity.md; issue 28), checked offline: each `auth` block it shows is a
// valid catalog (`mcp-sieve check`), `wrangler deploy --dry-run` bundles the built Worker with such a
// catalog and lists its bindings without uploading, and the Worker's wasm is within its 1.5 MB gzipped budget.
// Needs scripts/build.sh (worker/build, target/site, target/debug/mcp-sieve).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHAPTER = readFileSync(path.join(ROOT, 'docs', 'src', 'identity.md'), 'utf8');
const start = CHAPTER.indexOf('## Deploy for a team');
const next = CHAPTER.indexOf('\n#', start + 1);
const section = CHAPTER.slice(start, next < 0 ? undefined : next);
const blocks = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]));
const base = () => JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));

/** The default catalog with a block's fields (its views added to the default ones). */
function catalogWith(block) {
  const doc = base();
  for (const [k, v] of Object.entries(block)) doc[k] = k === 'views' ? { ...doc.views, ...v } : v;
  return doc;
}

test('the book shows an OIDC and a Cloudflare Access block, each a valid catalog', () => {
  assert.equal(blocks.length, 2, 'two json blocks in "Deploy for a team"');
  assert.ok(blocks[0].auth.issuer && blocks[1].auth.cloudflareAccess);
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-deploy-'));
  try {
    for (const [i, block] of blocks.entries()) {
      const file = path.join(tmp, `catalog-${i}.json`);
      writeFileSync(file, JSON.stringify(catalogWith(block)));
      const r = spawnSync(path.join(ROOT, 'target', 'debug', 'mcp-sieve'), ['check', file], { encoding: 'utf8' });
      assert.equal(r.status, 0, `block ${i}: ${r.stdout}${r.stderr}`);
    }
    // And a broken one is refused, naming the field.
    const file = path.join(tmp, 'bad.json');
    writeFileSync(file, JSON.stringify(catalogWith({ auth: { issuer: 'https://login.example.com/' } })));
    const r = spawnSync(path.join(ROOT, 'target', 'debug', 'mcp-sieve'), ['check', file], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stdout + r.stderr, /auth\.resource is required/);
  } finally { rmSync(tmp, { recursive: true, force: true }); }
});

test('wrangler deploy --dry-run bundles the Worker with an auth catalog, offline', { timeout: 120_000 }, () => {
  const out = mkdtempSync(path.join(tmpdir(), 'sieve-dry-'));
  try {
    const text = execFileSync(path.join(ROOT, 'node_modules', '.bin', 'wrangler'),
      ['deploy', '--dry-run', '--outdir', out, '--var', `MCP_SIEVE_CONFIG:${JSON.stringify(catalogWith(blocks[0]))}`],
      { cwd: path.join(ROOT, 'worker'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_SEND_ERROR_REPORTS: 'false', CLOUDFLARE_API_TOKEN: '' } });
    assert.match(text, /--dry-run: exiting now/);
    assert.match(text, /env\.SESSIONS \(SessionObject\)\s+Durable Object/);
    assert.match(text, /env\.MCP_SIEVE_KV\s+KV Namespace/);
    const gz = Number(/Total Upload: [\d.]+ KiB \/ gzip: ([\d.]+) KiB/.exec(text)?.[1]);
    assert.ok(gz > 0 && gz <= 1536, `upload ${gz} KiB gzipped (budget 1.5 MB)`);
  } finally { rmSync(out, { recursive: true, force: true }); }
  const wasm = gzipSync(readFileSync(path.join(ROOT, 'worker', 'build', 'index_bg.wasm')), { level: 9 }).length;
  assert.ok(wasm <= 1_572_864, `the Worker's wasm is ${wasm} bytes gzipped (budget 1.5 MB)`);
});
