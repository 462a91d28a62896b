// The container image carries search mode's sentence encoder (issue 61 item 2), checked without a
// Docker engine (none on these machines): the Dockerfile is read, and what its `model` stage and
// final stage do is replayed with the static binary the image would hold.
// - The Dockerfile: the `model` stage fetches the server's default model
//   (sentence-transformers/all-MiniLM-L6-v2) with `/mcp-sieve search-model fetch` into the
//   HF_HOME that the final stage sets too; the final stage copies that cache and a vector-cache
//   folder owned by its user, and sets HF_HUB_OFFLINE=1 and XDG_CACHE_HOME.
// - The model stage, replayed: `search-model fetch` with the stage's HF_HOME (under a scratch root),
//   the loopback hub stand-in (tests/e2e/hub-stand-in.mjs) in place of huggingface.co.
// - The image, replayed: that root holding only /mcp-sieve and the copied folders, chowned as the
//   COPY lines say; the binary run in it with chroot as the image's USER, with only the image's
//   ENV, in a network namespace of its own (no interface but a loopback that is down: no hub,
//   no DNS), as `stdio --search`. find_tools must answer by words and meaning (the model read from
//   the image's cache) and the tools' vectors be written to the image's vector folder; a second
//   start reads them from there.
// Needs root (chroot, unshare --net) and a static binary; skipped, saying why, without them.
// Environment (from scripts/check-release.sh): SIEVE_STATIC_BIN, the static musl mcp-sieve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startHub } from '../e2e/hub-stand-in.mjs';

const root = path.resolve(import.meta.dirname, '../..');
const BIN = process.env.SIEVE_STATIC_BIN;
const MODEL_FOLDER = path.join(root, 'target/models/all-minilm-l6-v2');
const DEFAULT_MODEL = 'sentence-transformers/all-MiniLM-L6-v2';
const META = 'dev.mcp-sieve/search';
const run = promisify(execFile);

/** The Dockerfile as stages: { name, lines } with continuation lines joined. */
function stages() {
  const text = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const out = [];
  for (const line of text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const from = line.match(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i);
    if (from) out.push({ base: from[1], name: from[2] ?? null, lines: [] });
    else out.at(-1).lines.push(line);
  }
  return out;
}
/** KEY=value pairs of a stage's ENV lines. */
const envOf = (stage) => Object.fromEntries(stage.lines.filter((l) => /^ENV\s/.test(l))
  .flatMap((l) => [...l.slice(4).matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])));

const which = (name) => ['/usr/bin', '/usr/sbin', '/bin', '/sbin'].map((d) => path.join(d, name)).find((f) => fs.existsSync(f));
const [UNSHARE, CHROOT, ENV] = [which('unshare'), which('chroot'), which('env')];
const why = (() => {
  if (!UNSHARE || !CHROOT || !ENV) return 'no unshare, chroot or env here';
  if (!BIN) return 'SIEVE_STATIC_BIN is not set: run through scripts/check-release.sh';
  if (process.getuid?.() !== 0) return 'not root: chroot and a network namespace need it';
  if (!fs.existsSync(path.join(MODEL_FOLDER, 'model.safetensors'))) return `no ${MODEL_FOLDER} (scripts/bootstrap.sh)`;
  return null;
})();

test('the Dockerfile fetches the default model into the HF cache the final image reads, offline', () => {
  const all = stages();
  const model = all.find((s) => s.name === 'model');
  assert.ok(model, 'a stage named model');
  const last = all.at(-1);
  assert.equal(last.base, 'scratch');
  const arg = model.lines.find((l) => l.startsWith('ARG SEARCH_MODEL='));
  assert.equal(arg, `ARG SEARCH_MODEL=${DEFAULT_MODEL}`, 'the image carries what search mode uses by default');
  assert.ok(model.lines.some((l) => /^RUN .*\/mcp-sieve search-model fetch "\$SEARCH_MODEL"/.test(l)), model.lines.join('\n'));
  const env = envOf(last);
  assert.equal(envOf(model).HF_HOME, env.HF_HOME, 'fetched into the cache the image reads');
  assert.equal(env.HF_HUB_OFFLINE, '1');
  assert.ok(env.XDG_CACHE_HOME, 'a folder for the tools\' vectors');
  const user = last.lines.find((l) => l.startsWith('USER ')).slice(5);
  for (const dir of [env.HF_HOME, env.XDG_CACHE_HOME]) {
    assert.ok(last.lines.includes(`COPY --from=model --chown=${user} ${dir} ${dir}`), `${dir} copied, owned by ${user}`);
  }
});

test('replayed: a container in search mode ranks by meaning from the image\'s cache with no network', { skip: why ?? false, timeout: 240_000 }, async () => {
  const all = stages();
  const model = all.find((s) => s.name === 'model');
  const last = all.at(-1);
  const env = envOf(last);
  const user = last.lines.find((l) => l.startsWith('USER ')).slice(5);
  const image = fs.mkdtempSync(path.join(os.tmpdir(), 'sieve-image-'));
  fs.chmodSync(image, 0o755);
  try {
    // The model stage: its HF_HOME under the scratch root, the stand-in as the hub.
    const hub = await startHub({ dir: MODEL_FOLDER });
    try {
      const stageHome = path.join(image, envOf(model).HF_HOME);
      fs.mkdirSync(path.join(stageHome, 'hub'), { recursive: true });
      const { stdout } = await run(BIN, ['search-model', 'fetch', DEFAULT_MODEL], {
        env: { PATH: process.env.PATH, HF_HOME: stageHome, HF_ENDPOINT: hub.endpoint },
        timeout: 120_000,
      });
      assert.ok(stdout.trim().startsWith(path.join(stageHome, 'hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/')), stdout);
    } finally {
      await hub.close();
    }
    // The final stage: the binary, the build stage's other files (the CA bundle: this machine's
    // Debian one stands in for the build image's), the copied folders owned as COPY --chown says.
    fs.mkdirSync(path.join(image, env.XDG_CACHE_HOME), { recursive: true });
    for (const line of last.lines.filter((l) => l.startsWith('COPY --from=build '))) {
      const [src, dst] = line.split(/\s+/).slice(2);
      fs.mkdirSync(path.dirname(path.join(image, dst)), { recursive: true });
      fs.copyFileSync(src === '/mcp-sieve' ? BIN : src, path.join(image, dst));
    }
    fs.chmodSync(path.join(image, 'mcp-sieve'), 0o755);
    for (const dir of [env.HF_HOME, env.XDG_CACHE_HOME]) await run('chown', ['-R', user, path.join(image, dir)]);
    // A document mounted as the Dockerfile's header shows (-v sieve.json:/sieve.json:ro): eight of
    // the SaaS catalog's tools (few, as the check's binary may be built without optimisation).
    const saas = JSON.parse(fs.readFileSync(path.join(root, 'catalog/saas-servers.json'), 'utf8'));
    const names = ['create_refund', 'create_customer', 'list_customers', 'search_issues', 'update_issue', 'get_issue_details', 'add_issue_note', 'search_issue_events'];
    const doc = { server: saas.server, groups: saas.groups, tools: saas.tools.filter((t) => names.includes(t.name)) };
    assert.equal(doc.tools.length, names.length);
    fs.writeFileSync(path.join(image, 'sieve.json'), JSON.stringify(doc));

    // The official SDK's stdio client launches the container's command. It passes on some of this
    // process's variables (HOME, LOGNAME, PATH, SHELL, TERM, USER): `env -i` leaves the binary
    // only the image's ENV and what Docker adds (PATH; HOME=/ for a user without a passwd entry).
    const imageEnv = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/', ...env };
    const start = () => {
      const transport = new StdioClientTransport({
        command: ENV,
        args: ['-i', ...Object.entries(imageEnv).map(([k, v]) => `${k}=${v}`), UNSHARE, '--net', CHROOT, `--userspec=${user}`, image, '/mcp-sieve', 'stdio', '--search', '--catalog', '/sieve.json'],
        stderr: 'pipe',
      });
      const client = new Client({ name: 'image-replay', version: '1' });
      let stderr = '';
      transport.stderr.on('data', (d) => { stderr += d; });
      return {
        stderr: () => stderr,
        open: () => client.connect(transport),
        /** find_tools until it answers by words and meaning; its answer. */
        async hybrid(query, ms) {
          const end = Date.now() + ms;
          for (;;) {
            const r = await client.callTool({ name: 'find_tools', arguments: { query, limit: 3 } });
            if (r._meta?.[META]?.ranking === 'hybrid') return r;
            assert.doesNotMatch(stderr, /not in the Hugging Face cache|find_tools stays lexical/, stderr);
            assert.ok(Date.now() < end, `still ${JSON.stringify(r._meta)} after ${ms} ms:\n${stderr}`);
            await new Promise((res) => setTimeout(res, 200));
          }
        },
        /** Closes stdin; the SDK waits for the exit (SIGTERM, then SIGKILL, after 2 s each). */
        stop: () => client.close(),
      };
    };

    const first = start();
    try {
      await first.open();
      const r = await first.hybrid('give this buyer their money back', 180_000);
      assert.equal(r.structuredContent.tools[0].name, 'create_refund');
      assert.match(first.stderr(), /search vectors ready for (\d+) tools \(0 from the cache, \1 encoded\)/);
      assert.doesNotMatch(first.stderr(), /fetching|cannot reach|not in the Hugging Face cache|warning/i, first.stderr());
    } finally {
      await first.stop();
    }
    const vectors = path.join(image, env.XDG_CACHE_HOME, 'mcp-sieve/vectors');
    const files = fs.readdirSync(vectors);
    assert.equal(files.length, 1, files.join());
    assert.equal(fs.statSync(path.join(vectors, files[0])).uid, Number(user.split(':')[0]), 'written by the image\'s user');

    const second = start();
    try {
      await second.open();
      await second.hybrid('give this buyer their money back', 60_000);
      assert.match(second.stderr(), /search vectors ready for (\d+) tools \(\1 from the cache, 0 encoded\)/);
    } finally {
      await second.stop();
    }
  } finally {
    fs.rmSync(image, { recursive: true, force: true });
  }
});
