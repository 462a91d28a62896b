// Helpers for checking the npm package as a user gets it: `npm pack` pkg/ once, install the
// tarball into fresh temporary projects, serve a folder to Debian's Chromium and read what a
// page reports. Nothing here builds the package: run scripts/build.sh first.
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = path.join(ROOT, 'node_modules', '.bin');
const run = promisify(execFile);

/** Runs a command; resolves to its stdout, rejects with its output in the message. */
export async function sh(command, args, options = {}) {
  try {
    const { stdout } = await run(command, args, { maxBuffer: 64 << 20, ...options });
    return stdout;
  } catch (e) {
    throw new Error(`${command} ${args.join(' ')} failed (${e.code}):\n${e.stdout}\n${e.stderr}`);
  }
}

const temps = [];
/** A fresh temporary folder, removed by `cleanup()`. */
export async function tempDir(prefix) {
  const dir = await mkdtemp(path.join(os.tmpdir(), `mcp-sieve-${prefix}-`));
  temps.push(dir);
  return dir;
}

/** Removes the temporary folders. */
export async function cleanup() {
  await Promise.all(temps.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/** `npm pack` of pkg/ into a temporary folder; resolves to the tarball's path. */
export async function pack() {
  const dir = await tempDir('tarball');
  await sh('npm', ['pack', path.join(ROOT, 'pkg'), '--pack-destination', dir, '--silent']);
  const [file] = (await readdir(dir)).filter((f) => f.endsWith('.tgz'));
  if (!file) throw new Error(`npm pack wrote no tarball into ${dir}`);
  return path.join(dir, file);
}

/**
 * A fresh project with the tarball installed as a dependency (`npm install <tarball>`, as a user
 * installs a published package) and `files` ({relative path: text}) written into it.
 */
export async function project(name, tarball, files = {}) {
  const dir = await tempDir(name);
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  await sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: dir });
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  return dir;
}

const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json',
};

/** Serves `dir` on a free loopback port; resolves to { base, close }. */
export async function serve(dir) {
  const server = http.createServer(async (req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.join(dir, rel.endsWith('/') ? `${rel}index.html` : rel);
    const ok = file.startsWith(dir) && (await stat(file).then((s) => s.isFile(), () => false));
    if (!ok) { res.writeHead(404).end('not found'); return; }
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { base: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];

/**
 * Opens `url` in headless Chromium and waits for the page to set `document.body.dataset.result`
 * (JSON) or `dataset.error`; resolves to the parsed result, rejects with the page's errors.
 */
export async function pageResult(url, { timeout = 30_000 } = {}) {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(url);
    await page.waitForSelector('body[data-result], body[data-error]', { state: 'attached', timeout }).catch(() => {});
    const { result, error } = await page.evaluate(() => ({ ...document.body.dataset }));
    if (error || result === undefined) {
      throw new Error(`the page at ${url} reported ${error ?? 'nothing'}; errors: ${errors.join(' | ')}`);
    }
    return { result: JSON.parse(result), errors };
  } finally {
    await browser.close();
  }
}
