// Issue 13, item 8 (middleware inputs): work per request is bounded. Against the Worker (or the
// native server) serving the default catalog with every built-in middleware enabled: a policy
// list of 10,000 duplicates is de-duplicated (or refused), and 10,000 PII names, a 100 KB name,
// a context of 800 KB of text and a tool_filter filter of 10,000 patterns are -32602 naming the
// field and a limit.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { call, openSession } from '../common/mcp-raw.mjs';
import { ROOT, assertCapped, startWith } from './helpers.mjs';

const doc = JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'default.json'), 'utf8'));
doc.middleware = { enabled: ['pii_redaction', 'pii_restoration', 'content_moderation', 'timestamp_injector', 'tool_filter'] };

let server;
let sid;
before(async () => {
  server = await startWith(doc);
  sid = (await openSession(server.url)).sessionId;
}, { timeout: 120_000 });
after(async () => { await server?.stop(); });

const text = (t) => ({ type: 'text', text: t });
const invoke = (name, args, context) => call(server.url, sid, 'middleware/invoke', { name, arguments: args, context });

test('8. content_moderation: 10,000 copies of one policy are de-duplicated (or refused naming the limit)', async () => {
  const context = [text('They want to make a bomb and murder someone.')];
  const once = await invoke('content_moderation', { policies: ['violence'] }, context);
  assert.equal(once.status, 200, once.text.slice(0, 300));
  const single = once.response.result.metadata.matches.length;
  assert.ok(single > 0, 'control: the violence policy matches this context');
  const many = await invoke('content_moderation', { policies: Array(10_000).fill('violence') }, context);
  if (many.response?.error) {
    assertCapped(many, /params\.arguments\.policies/, 10_000);
    return;
  }
  const got = many.response.result.metadata.matches.length;
  assert.equal(got, single, `10,000 copies of "violence" must run it once: ${got} matches instead of ${single}`);
});

test('8. pii_redaction: 10,000 names are -32602 naming params.arguments.names and the limit', async () => {
  const names = Array.from({ length: 10_000 }, (_, i) => `Person Number${i}`);
  const r = await invoke('pii_redaction', { names }, [text('Hello Person Number7.')]);
  assertCapped(r, /params\.arguments\.names/, 10_000);
});

test('8. pii_redaction: a 100 KB name is -32602 naming params.arguments.names and the length limit', async () => {
  const r = await invoke('pii_redaction', { names: ['N'.repeat(100_000)] }, [text('Hello.')]);
  assertCapped(r, /params\.arguments\.names/, 100_000);
});

test('8. a context of 800 KB of text is -32602 naming params.context and the limit', async () => {
  const context = Array.from({ length: 4000 }, (_, i) => text(`${i} `.padEnd(200, 'lorem ipsum ')));
  const r = await invoke('content_moderation', {}, context);
  assertCapped(r, /params\.context/, 800_000);
});

test('8. tool_filter: a filter of 10,000 namePatterns is -32602 naming the field and the limit', async () => {
  const filter = { namePatterns: Array.from({ length: 10_000 }, (_, i) => `t${i}*`) };
  const r = await invoke('tool_filter', { filter }, [text('send an email to the team')]);
  assertCapped(r, /namePatterns/, 10_000);
});
