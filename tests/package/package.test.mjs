// The npm package checked like a published one: `npm pack` pkg/, install the tarball into fresh
// projects and use `import { Sieve } from 'mcp-sieve'` — from Node (ESM, no init call), from an
// esbuild browser bundle, a Vite build and a webpack build, all loaded in Chromium — then publint and
// arethetypeswrong on the tarball and tsc on tests/types/consumer.ts against the installed types.
import assert from 'node:assert/strict';
import { copyFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { BIN, ROOT, cleanup, pack, pageResult, project, serve, sh } from './helpers.mjs';

// The same few lines in every host: build from a catalog, filter, list; and a bad filter throws
// a real Error with the JSON-RPC code.
const USE = `
import init, { Sieve } from 'mcp-sieve';
export async function use() {
  await init(); // documented as optional: a no-op once the entry has initialised itself
  const sieve = Sieve.fromCatalog({
    groups: [{ name: 'code' }, { name: 'github', parent: 'code' }],
    tools: [
      { name: 'create_issue', inputSchema: { type: 'object' }, groups: ['github'], tags: ['write'] },
      { name: 'list_issues', inputSchema: { type: 'object' }, groups: ['github'], tags: ['read-only'] },
      { name: 'echo', inputSchema: { type: 'object' } },
    ],
  });
  const { items, count, total } = sieve.list({ groups: ['code'], tags: ['read-only'] });
  let code = null;
  try { sieve.filter({ groups: 'code' }); } catch (e) { code = e instanceof Error ? e.code : 'not an Error'; }
  return { names: items.map((t) => t.name), count, total, code };
}
`;
const EXPECTED = { names: ['list_issues'], count: 1, total: 3, code: -32602 };

const PAGE_MAIN = `
import { use } from './use.js';
use().then((r) => { document.body.dataset.result = JSON.stringify(r); },
  (e) => { document.body.dataset.error = String(e && e.stack || e); });
`;
const page = (script) => `<!doctype html><meta charset="utf-8"><title>host</title>
<body><script type="module" src="${script}"></script></body>`;

let tarball;
before(async () => { tarball = await pack(); });
after(cleanup);

test('package.json: conditional exports with types per entry, and the publishing fields', async () => {
  const pkg = JSON.parse(await readFile(path.join(ROOT, 'pkg', 'package.json'), 'utf8'));
  assert.equal(pkg.name, 'mcp-sieve');
  assert.equal(pkg.type, 'module');
  assert.deepEqual(pkg.exports['.'].node, { types: './node.d.ts', default: './node.js' });
  assert.deepEqual(pkg.exports['.'].default, { types: './browser.d.ts', default: './browser.js' });
  for (const field of ['files', 'sideEffects', 'repository', 'keywords', 'engines']) {
    assert.ok(pkg[field], `package.json has ${field}`);
  }
  assert.equal(pkg.engines.node, '>=20');
  const listed = (await sh('tar', ['-tzf', tarball])).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
  for (const f of ['node.js', 'node.d.ts', 'browser.js', 'browser.d.ts', 'mcp_sieve.js', 'mcp_sieve.d.ts', 'mcp_sieve_bg.wasm', 'README.md']) {
    assert.ok(listed.includes(f), `the tarball holds ${f} (it holds ${listed.join(', ')})`);
  }
});

test('Node (ESM): the installed tarball works without any init call', async () => {
  const dir = await project('node-host', tarball, {
    'main.js': "import { Sieve } from 'mcp-sieve';\n" +
      "const s = Sieve.fromCatalog({ tools: [{ name: 'a', inputSchema: {}, tags: ['x'] }, { name: 'b', inputSchema: {} }] });\n" +
      "console.log(JSON.stringify(s.list({ tags: ['x'] }).items.map((t) => t.name)));\n",
    'use.js': USE,
    'check.js': "import { use } from './use.js'; console.log(JSON.stringify(await use()));\n",
  });
  assert.equal((await sh('node', ['main.js'], { cwd: dir })).trim(), '["a"]');
  assert.deepEqual(JSON.parse(await sh('node', ['check.js'], { cwd: dir })), EXPECTED);
});

test('esbuild browser bundle in Chromium', async () => {
  const dir = await project('esbuild-host', tarball, {
    'src/use.js': USE, 'src/main.js': PAGE_MAIN, 'dist/index.html': page('./main.js'),
  });
  await sh(path.join(BIN, 'esbuild'), ['src/main.js', '--bundle', '--format=esm', '--platform=browser',
    '--target=es2022', '--outdir=dist'], { cwd: dir });
  // esbuild leaves `new URL('./mcp_sieve_bg.wasm', import.meta.url)` as it is: the wasm is
  // served beside the bundle, as the README says.
  await copyFile(path.join(dir, 'node_modules/mcp-sieve/mcp_sieve_bg.wasm'), path.join(dir, 'dist/mcp_sieve_bg.wasm'));
  const server = await serve(path.join(dir, 'dist'));
  try {
    const { result } = await pageResult(`${server.base}/`);
    assert.deepEqual(result, EXPECTED);
  } finally { await server.close(); }
});

test('Vite build in Chromium (the wasm emitted as an asset by Vite itself)', async () => {
  const dir = await project('vite-host', tarball, {
    'use.js': USE, 'main.js': PAGE_MAIN, 'index.html': page('./main.js'),
  });
  const { build } = await import('vite');
  await build({ root: dir, logLevel: 'error', configFile: false, build: { outDir: 'dist', target: 'es2022' } });
  const assets = (await sh('ls', ['dist/assets'], { cwd: dir })).split('\n');
  assert.ok(assets.some((f) => f.endsWith('.wasm')), `Vite emitted the wasm (dist/assets: ${assets.join(', ')})`);
  const server = await serve(path.join(dir, 'dist'));
  try {
    const { result } = await pageResult(`${server.base}/`);
    assert.deepEqual(result, EXPECTED);
  } finally { await server.close(); }
});

test('webpack 5 build in Chromium (the wasm emitted as an asset by webpack itself)', async () => {
  const dir = await project('webpack-host', tarball, {
    'use.js': USE, 'main.js': PAGE_MAIN, 'index.html': page('./dist/main.js'),
  });
  const { default: webpack } = await import('webpack');
  // The configuration a host writes for any ESM package with top-level await: nothing specific
  // to mcp-sieve (webpack 5 emits `new URL('…', import.meta.url)` assets by itself).
  const stats = await new Promise((resolve, reject) => {
    webpack({
      mode: 'production',
      context: dir,
      entry: './main.js',
      target: 'web',
      output: { path: path.join(dir, 'dist'), filename: 'main.js', module: true, publicPath: 'auto' },
      experiments: { outputModule: true, topLevelAwait: true },
    }, (err, st) => (err ? reject(err) : resolve(st)));
  });
  assert.ok(!stats.hasErrors(), stats.toString({ all: false, errors: true }));
  const emitted = (await sh('ls', ['dist'], { cwd: dir })).split('\n');
  assert.ok(emitted.some((f) => f.endsWith('.wasm')), `webpack emitted the wasm (dist: ${emitted.join(', ')})`);
  const server = await serve(dir);
  try {
    const { result } = await pageResult(`${server.base}/`);
    assert.deepEqual(result, EXPECTED);
  } finally { await server.close(); }
});

test('plain browser ESM without a bundler (an import map to the installed package) in Chromium', async () => {
  const dir = await project('esm-host', tarball, {
    'use.js': USE, 'main.js': PAGE_MAIN,
    'index.html': `<!doctype html><meta charset="utf-8"><title>host</title>
<script type="importmap">{ "imports": { "mcp-sieve": "./node_modules/mcp-sieve/browser.js" } }</script>
<body><script type="module" src="./main.js"></script></body>`,
  });
  const server = await serve(dir);
  try {
    const { result } = await pageResult(`${server.base}/`);
    assert.deepEqual(result, EXPECTED);
  } finally { await server.close(); }
});

test('publint reports no errors or warnings on the tarball', async () => {
  const { publint } = await import('publint');
  const { unpack } = await import('@publint/pack');
  const file = await readFile(tarball);
  const { files, rootDir } = await unpack(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength));
  const { messages } = await publint({ pack: { files }, pkgDir: rootDir, level: 'warning', strict: true });
  assert.deepEqual(messages.map((m) => `${m.type} ${m.code} ${JSON.stringify(m.args)}`), []);
});

test('arethetypeswrong finds no problem in the tarball (ESM-only profile: node16 ESM and bundler)', async () => {
  // The package is ESM only (Node >= 20), so CommonJS resolution is out of scope (the profile);
  // the raw .wasm is exported for copying, not importing, so it has no types to check.
  await sh(path.join(BIN, 'attw'), [tarball, '--profile', 'esm-only', '--exclude-entrypoints', 'mcp_sieve_bg.wasm',
    'package.json', '--no-emoji', '--no-color']);
});

test('TypeScript: tests/types/consumer.ts type-checks against the installed package (bundler and nodenext)', async () => {
  const consumer = await readFile(path.join(ROOT, 'tests/types/consumer.ts'), 'utf8');
  for (const resolution of ['bundler', 'nodenext']) {
    const dir = await project(`types-${resolution}`, tarball, {
      'consumer.ts': consumer,
      'tsconfig.json': JSON.stringify({
        compilerOptions: {
          target: 'ES2022', module: resolution === 'bundler' ? 'ESNext' : 'NodeNext', moduleResolution: resolution,
          lib: ['ESNext', 'DOM'], strict: true, noEmit: true, skipLibCheck: false, types: [],
        },
        files: ['consumer.ts'],
      }),
    });
    await sh(path.join(BIN, 'tsc'), ['-p', '.'], { cwd: dir });
  }
});

test('the API reference is generated from the types (scripts/api-docs.sh → target/site/api)', async () => {
  const sieve = await readFile(path.join(ROOT, 'target/site/api/classes/Sieve.html'), 'utf8')
    .catch(() => assert.fail('target/site/api/classes/Sieve.html is missing: run scripts/build.sh'));
  for (const member of ['fromCatalog', 'filter', 'facets', 'addFilter']) {
    assert.match(sieve, new RegExp(`\\b${member}\\b`), `the reference documents Sieve.${member}`);
  }
  const index = await readFile(path.join(ROOT, 'target/site/api/index.html'), 'utf8');
  for (const name of ['McpClient', 'filterTasks', 'Filter', 'TaskQuery']) assert.match(index, new RegExp(`\\b${name}\\b`));
});
