// Issue 13, item 3: placeholder substitution in one pass. Against the Worker (or the native
// server) serving catalog/conformance.json, as the conformance test starts it: prompts/get of
// test_prompt_with_arguments with arg1 = "{arg2}" x 200 and arg2 = 2,000 x "A" must not re-scan
// the inserted text (today: a 402 KB answer to a 3 KB request). The same for a URI template with
// two variables (the conformance document plus one template).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { openSession, call } from '../common/mcp-raw.mjs';
import { ROOT, startWith } from './helpers.mjs';

const doc = JSON.parse(readFileSync(path.join(ROOT, 'catalog', 'conformance.json'), 'utf8'));
doc.resourceTemplates.push({
  uriTemplate: 'test://pair/{first}/{second}', name: 'pair', mimeType: 'text/plain',
  text: 'first={first} second={second}',
});
const PROMPT = doc.prompts.find((p) => p.name === 'test_prompt_with_arguments');
const ARG1 = '{arg2}'.repeat(200);
const ARG2 = 'A'.repeat(2000);
// Slack for the JSON-RPC envelope, description and escaping.
const ENVELOPE = 1024;

let server;
before(async () => { server = await startWith(doc); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

const count = (text, part) => text.split(part).length - 1;

test('3. prompts/get substitutes in one pass: the answer is bounded and arg1 stays literal', async () => {
  const { sessionId } = await openSession(server.url);
  const r = await call(server.url, sessionId, 'prompts/get', {
    name: 'test_prompt_with_arguments', arguments: { arg1: ARG1, arg2: ARG2 },
  });
  assert.equal(r.status, 200);
  const bound = JSON.stringify(PROMPT).length + ARG1.length + ARG2.length + ENVELOPE;
  assert.ok(r.text.length <= bound,
    `the answer is ${r.text.length} bytes; at most the template + the arguments (${bound}) when inserted text is not re-scanned`);
  const text = r.response.result.messages[0].content.text;
  assert.equal(text, `Prompt with arguments: arg1='${ARG1}', arg2='${ARG2}'`);
  assert.equal(count(text, '{arg2}'), 200, "arg1's literal {arg2} stays literal");
});

test('3. URI templates substitute in one pass too', async () => {
  const { sessionId } = await openSession(server.url);
  const first = '{second}'.repeat(100);
  const second = 'B'.repeat(2000);
  const uri = `test://pair/${first}/${second}`;
  const r = await call(server.url, sessionId, 'resources/read', { uri });
  assert.equal(r.status, 200);
  assert.ok(r.response?.result, r.text.slice(0, 300));
  const bound = uri.length * 2 + first.length + second.length + ENVELOPE;
  assert.ok(r.text.length <= bound, `the answer is ${r.text.length} bytes; at most ${bound} without re-scanning`);
  assert.equal(r.response.result.contents[0].text, `first=${first} second=${second}`);
});
