// Serves the repository on 127.0.0.1 (a free port), opens bench/web/index.html in Debian's
// Chromium (playwright-core), waits for the result, prints it as a table and checks the targets:
// at most 0.5 ms per `filter` call, at least 3x the plain-JS version, wasm <= 150 KB gzipped.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };

const server = http.createServer(async (req, res) => {
  const file = path.join(ROOT, decodeURIComponent(new URL(req.url, 'http://x').pathname));
  if (!file.startsWith(ROOT)) { res.writeHead(403).end(); return; }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' }).end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
let failed = false;
try {
  const page = await browser.newPage();
  await page.goto(`${base}/bench/web/index.html`);
  await page.waitForFunction(() => window.benchResult || window.benchError, null, { timeout: 300_000 });
  const err = await page.evaluate(() => window.benchError);
  if (err) throw new Error(err);
  const r = await page.evaluate(() => window.benchResult);
  const wasm = await readFile(path.join(ROOT, 'pkg', 'mcp_sieve_bg.wasm'));
  // The size check of scripts/check-size.sh: GNU gzip -9 (Node's zlib at level 9 gives ~0.5% more).
  const gz = execFileSync('gzip', ['-9c', path.join(ROOT, 'pkg', 'mcp_sieve_bg.wasm')]).length;
  const gzNode = zlib.gzipSync(wasm, { level: 9 }).length;
  const us = (ms) => `${(ms * 1000).toFixed(1)} µs`;
  console.log(`| tools | Sieve.filter (wasm, incl. crossing) | plain JS | speed-up | Sieve.list (objects) | load |`);
  console.log(`|---:|---:|---:|---:|---:|---:|`);
  console.log(`| ${r.tools.toLocaleString('en-US')} | ${us(r.wasmFilterMs)} | ${us(r.plainJsMs)} | ${r.speedup.toFixed(1)}× | ${us(r.wasmListMs)} | ${r.loadMs.toFixed(0)} ms |`);
  console.log(`matching tools per filter: ${r.counts.join(', ')}`);
  for (const f of r.perFilter) console.log(`  ${f.filter}: wasm ${us(f.wasmMs)}, plain JS ${us(f.plainJsMs)}`);
  console.log(`package wasm: ${wasm.length} bytes, ${gz} bytes gzipped (gzip -9; Node zlib level 9: ${gzNode})`);
  const checks = [
    [r.wasmFilterMs <= 0.5, `filter ≤ 0.5 ms per call (${us(r.wasmFilterMs)})`],
    [r.speedup >= 3, `≥ 3× plain JS (${r.speedup.toFixed(1)}×)`],
    [gz <= 150_000, `wasm ≤ 150 KB gzipped (${gz} bytes)`],
  ];
  for (const [ok, what] of checks) console.log(`${ok ? 'met' : 'NOT MET'}: ${what}`);
  failed = checks.some(([ok]) => !ok);
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);
