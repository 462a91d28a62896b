// E2E: reasons and audit (issue 27 item 2) against the Worker (wrangler dev) — or the native
// server with SIEVE_TARGET=native — with the official SDK v2 client (`client.request` with the
// custom method `sieve/explain`) in the legacy (2025-11-25) and pinned 2026-07-28 modes: a
// principal the document's `explain` admits hears why a tool is hidden (policy rule by id, view,
// concerns, the catalog itself); another principal is refused with -32601; a policy rule in
// `"mode": "audit"` hides nothing and its "would hide" line reaches the server's log. Over stdio
// (`mcp-sieve stdio`, run once, in the Worker run) the same core path answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ROOT, native, startWith, sleep } from '../security/helpers.mjs';
import { logText } from './harness.mjs';

let server;
before(async () => {
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.policy = {
    rules: [
      { id: 'no-destructive-for-bots', when: { principal: 'bot*' }, hide: { tags: ['destructive'] } },
      { id: 'try-no-echo', mode: 'audit', hide: { namePatterns: ['echo'] } },
    ],
  };
  doc.explain = { principals: ['alice', 'bot'] };
  server = await startWith(
    doc,
    { MCP_SIEVE_TOKENS: JSON.stringify({ alice: 'token-alice', bot: 'token-bot', eve: 'token-eve' }) },
    { logLevel: 'log' },
  );
}, { timeout: 120_000 });
after(async () => { await server?.stop(); });

async function as(token, mode, path = '') {
  const client = new Client({ name: 'explain-e2e', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}${path}`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  }));
  return client;
}

/**
 * The answer's schema for the v2 client (a Standard Schema: a custom method needs one): an
 * object with `visible`, `callable` and `exists` booleans and a `reasons` array of `{code}`.
 */
const ANSWER = {
  '~standard': {
    version: 1,
    vendor: 'sieve-e2e',
    validate: (v) => {
      const ok = v && typeof v === 'object' && ['visible', 'callable', 'exists'].every((k) => typeof v[k] === 'boolean')
        && Array.isArray(v.reasons) && v.reasons.every((r) => typeof r.code === 'string');
      return ok ? { value: v } : { issues: [{ message: `not a sieve/explain answer: ${JSON.stringify(v)}` }] };
    },
  },
};
const explain = (client, params) => client.request({ method: 'sieve/explain', params }, ANSWER);
const codes = (answer) => answer.reasons.map((r) => r.code);

for (const [name, mode] of [['legacy', 'legacy'], ['pinned 2026-07-28', { pin: '2026-07-28' }]]) {
  test(`SDK v2 client, ${name}: sieve/explain names the rule, the view, the concern or the catalog`, { timeout: 90_000 }, async () => {
    const bot = await as('token-bot', mode);
    const eve = await as('token-eve', mode);
    const mail = await as('token-alice', mode, '/email');
    try {
      // Advertised to callers who may ask, and to no one else.
      const advertised = (c) => {
        const caps = c.getServerCapabilities() ?? {};
        return (caps.experimental ?? caps.extensions ?? {})['dev.mcp-sieve/explain'];
      };
      assert.deepEqual(advertised(bot), { method: 'sieve/explain' }, JSON.stringify(bot.getServerCapabilities()));
      assert.equal(advertised(eve), undefined);

      const hidden = await explain(bot, { name: 'delete_message' });
      assert.equal(hidden.visible, false);
      assert.equal(hidden.callable, false);
      assert.equal(hidden.cause, 'policy');
      assert.deepEqual(codes(hidden), ['policy:no-destructive-for-bots']);
      assert.deepEqual(hidden.reasons[0].rule.hide, { tags: ['destructive'] });
      // The list agrees.
      const listed = (await bot.listTools()).tools.map((t) => t.name);
      assert.ok(!listed.includes('delete_message'));

      const missing = await explain(bot, { name: 'no_such_tool' });
      assert.deepEqual([missing.exists, missing.cause, missing.reasons], [false, 'catalog', []]);

      // The audit rule: echo is listed and callable, explain reports what it would do.
      assert.ok(listed.includes('echo'), 'an audit rule hides nothing');
      const audited = await explain(bot, { name: 'echo' });
      assert.equal(audited.visible, true);
      assert.deepEqual(codes(audited), ['audit:try-no-echo']);
      await bot.callTool({ name: 'echo', arguments: { message: `audit ${name}` } });

      // Concerns sent with the question narrow the list (not the use).
      const concerned = await explain(bot, { name: 'send_email', concerns: { security: 'low' } });
      assert.deepEqual(codes(concerned), ['concern:security']);
      assert.deepEqual([concerned.visible, concerned.callable], [false, true]);

      // The view of the endpoint (/mcp/email) is a reason of its own.
      const outside = await explain(mail, { name: 'echo' });
      assert.equal(outside.cause, 'view');
      assert.deepEqual(outside.reasons[0], { code: 'view', view: { name: 'email' } });

      await assert.rejects(explain(eve, { name: 'echo' }), (err) => {
        // 2026-07-28 answers an unknown method with HTTP 404 too: the v2 client then reports
        // the HTTP error, whose body is the JSON-RPC error.
        const rpc = typeof err.code === 'number' ? err : JSON.parse(err.data?.text ?? '{}').error;
        if (typeof err.code !== 'number') assert.equal(err.data?.status, 404, String(err));
        assert.equal(rpc?.code, -32601, String(err));
        assert.match(rpc.message, /not available to this caller.*"eve"/);
        return true;
      });
    } finally {
      await bot.close(); await eve.close(); await mail.close();
    }
  });
}

test('the audit rule\'s "would hide" lines reach the server log, naming the rule and the tool', { timeout: 30_000 }, async () => {
  const deadline = Date.now() + 10_000;
  const want = /audit: policy rule "try-no-echo" \(mode audit\) would hide from tools\/call \(tools\): "echo"/;
  while (!want.test(logText(server.output())) && Date.now() < deadline) await sleep(200);
  assert.match(logText(server.output()), want);
  assert.match(logText(server.output()), /audit: policy rule "try-no-echo" \(mode audit\) would hide from tools\/list \(tools\): "echo"/);
});

test('over stdio (mcp-sieve stdio, SDK v2 stdio client): the same answers, audit lines on stderr', { skip: native() && 'run once, with the Worker run', timeout: 60_000 }, async () => {
  const doc = JSON.parse(readFileSync(new URL('../../catalog/default.json', import.meta.url), 'utf8'));
  doc.policy = { rules: [{ hide: { tags: ['destructive'] } }, { id: 'try-no-add', mode: 'audit', hide: { namePatterns: ['add'] } }] };
  doc.explain = true; // stdio has no principal: the person who launched it is the operator
  const dir = mkdtempSync(path.join(tmpdir(), 'sieve-explain-'));
  const file = path.join(dir, 'catalog.json');
  writeFileSync(file, JSON.stringify(doc));
  const transport = new StdioClientTransport({
    command: path.join(ROOT, 'target', 'debug', 'mcp-sieve'), args: ['stdio', '--catalog', file], stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (c) => { stderr += c; });
  const client = new Client({ name: 'explain-stdio', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
  await client.connect(transport);
  try {
    const hidden = await explain(client, { name: 'delete_file' });
    assert.deepEqual([hidden.visible, hidden.cause, codes(hidden)], [false, 'policy', ['policy:rule-0']]);
    const sum = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
    assert.ok(!sum.isError);
    assert.deepEqual(codes(await explain(client, { name: 'add' })), ['audit:try-no-add']);
    const deadline = Date.now() + 5000;
    while (!/try-no-add.*tools\/call/.test(stderr) && Date.now() < deadline) await sleep(100);
    assert.match(stderr, /audit: policy rule "try-no-add" \(mode audit\) would hide from tools\/call \(tools\): "add"/);
  } finally {
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
