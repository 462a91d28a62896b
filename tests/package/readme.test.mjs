// The JavaScript examples of the README and of the book (docs/src/**/*.md) run as tests, so the
// documentation never shows code that does not work. Every ```js block must follow a marker `<!-- readme-test: ENV... -->`: `node` runs it as a
// module in a fresh project with the packed tarball installed, `browser` runs it as a module in
// Chromium on a page of the running Worker (its import map resolves 'mcp-sieve' to the package's
// browser entry), `server` gives it a running Worker (the README's `http://127.0.0.1:8787` is that
// Worker's address). What it prints must be what its `// → ...` comments say, in order.
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { startWorker } from '../e2e/harness.mjs';
import { CHROMIUM_FLAGS, ROOT, cleanup, pack, project, sh } from './helpers.mjs';

/** README.md and every chapter of the book, by their path from the repository's root. */
async function documents() {
  const book = (await readdir(path.join(ROOT, 'docs', 'src'), { recursive: true }))
    .filter((f) => f.endsWith('.md')).sort().map((f) => path.join('docs', 'src', f));
  return Promise.all(['README.md', ...book].map(async (file) => [file, await readFile(path.join(ROOT, file), 'utf8')]));
}
const RUN_ADDRESS = 'http://127.0.0.1:8787';

/** The ```js blocks of one document with their markers and expected output lines. */
function examples(file, markdown) {
  const out = [];
  const re = /(?:<!-- readme-test: ([^>]*?) -->\s*\n)?```js\n([\s\S]*?)```/g;
  for (const m of markdown.matchAll(re)) {
    const line = markdown.slice(0, m.index).split('\n').length;
    const envs = (m[1] ?? '').split(/\s+/).filter(Boolean);
    const expected = [...m[2].matchAll(/\/\/ → (.*)$/gm)].map((e) => e[1].trim());
    out.push({ where: `${file}:${line}`, envs, code: m[2], expected });
  }
  return out;
}

const blocks = (await documents()).flatMap(([file, text]) => examples(file, text));
let tarball;
let node;
let worker;
let browser;

before(async () => {
  tarball = await pack();
  node = await project('readme-node', tarball);
  if (blocks.some((b) => b.envs.includes('server') || b.envs.includes('browser'))) worker = await startWorker();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_FLAGS });
});

after(async () => {
  await browser?.close();
  await worker?.stop();
  await cleanup();
});

test('every ```js block of the README and the book has a readme-test marker naming where it runs', () => {
  assert.ok(blocks.length >= 4, `the README and the book have their JavaScript examples (found ${blocks.length})`);
  for (const b of blocks) {
    assert.ok(b.envs.includes('node') || b.envs.includes('browser'), `${b.where} has a marker with node or browser`);
    assert.ok(b.expected.length > 0, `${b.where} shows what it prints (// → ...)`);
  }
});

const withServer = (code) => code.replaceAll(RUN_ADDRESS, worker.base);

for (const [n, b] of blocks.entries()) {
  if (b.envs.includes('node')) {
    test(`${b.where} runs in Node and prints what it says`, async () => {
      const file = `example-${n}.mjs`;
      await import('node:fs/promises').then((fs) => fs.writeFile(path.join(node, file), withServer(b.code)));
      const printed = (await sh('node', [file], { cwd: node })).trim().split('\n');
      assert.deepEqual(printed, b.expected);
    });
  }
  if (b.envs.includes('browser')) {
    test(`${b.where} runs in Chromium and prints what it says`, async () => {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        const printed = [];
        const errors = [];
        page.on('console', (m) => {
          if (m.location().url.endsWith('/readme-example.mjs')) printed.push(m.text());
          else if (m.type() === 'error') errors.push(m.text());
        });
        page.on('pageerror', (e) => errors.push(String(e)));
        // A page of the Worker's origin (so `/mcp` and `location` are the server's) that maps
        // 'mcp-sieve' to the built package's browser entry, as the demo page does.
        await page.route(`${worker.base}/readme-example.html`, (r) => r.fulfill({ contentType: 'text/html', body:
          `<!doctype html><meta charset="utf-8"><title>README example</title>
<script type="importmap">{ "imports": { "mcp-sieve": "/pkg/browser.js" } }</script>
<script type="module">import('./readme-example.mjs').then(() => { document.body.dataset.result = 'done'; },
  (e) => { document.body.dataset.error = String(e && e.stack || e); });</script><body></body>` }));
        await page.route(`${worker.base}/readme-example.mjs`, (r) => r.fulfill({ contentType: 'text/javascript', body: withServer(b.code) }));
        await page.goto(`${worker.base}/readme-example.html`);
        await page.waitForSelector('body[data-result], body[data-error]', { state: 'attached', timeout: 30_000 });
        const error = await page.evaluate(() => document.body.dataset.error ?? null);
        assert.equal(error, null, `the example threw; console: ${errors.join(' | ')}`);
        assert.deepEqual(printed, b.expected);
      } finally {
        await context.close();
      }
    });
  }
}
