// Issue 23, item 2: answers only for questions asked, against the Worker (or the native server
// with SIEVE_TARGET=native) serving catalog/conformance.json (its test_sampling tool asks the
// client mid-call). 40 JSON-RPC responses of ~900 KB with ids nobody asked for are each 202 and
// kept nowhere: the server's memory (the native process's resident set; the Worker isolate's wasm
// memory, reported with MCP_SIEVE_DIAGNOSTICS) stays flat. A question really asked still gets its
// answer, and another session's answer to it is dropped.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { initialize, post, sessionHeaders } from '../common/mcp-raw.mjs';
import { native, startWith } from './helpers.mjs';

const CATALOG = readFileSync(new URL('../../catalog/conformance.json', import.meta.url), 'utf8');
const MB = 1024 * 1024;

let server;
before(async () => { server = await startWith(CATALOG, native() ? {} : { MCP_SIEVE_DIAGNOSTICS: '1' }); }, { timeout: 120_000 });
after(async () => { await server?.stop(); });

/** The server's memory after answer `r`: resident bytes of the native process, else the wasm memory of the isolate that answered. */
function memory(r) {
  if (native()) return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))[1]) * 1024;
  const m = Number(r.headers.get('x-sieve-wasm-memory'));
  assert.ok(m > 0, 'the Worker reports its wasm memory (MCP_SIEVE_DIAGNOSTICS)');
  return m;
}

const open = () => initialize(server.url, { capabilities: { sampling: {}, elicitation: {} } });

/** A JSON-RPC response of about 900 KB to request `id` (450,000 small numbers: costly once parsed). */
const bigAnswer = (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[${'1,'.repeat(449_999)}1]}}`;

test('23.2 forty ~900 KB responses nobody asked for are dropped: 202 each, memory stays flat', { timeout: 300_000 }, async () => {
  const { sessionId } = await open();
  const first = await post(server.url, bigAnswer('unasked-0'), { sessionId });
  assert.equal(first.status, 202, first.text.slice(0, 200));
  const before = memory(first);
  let peak = before;
  for (let i = 1; i <= 40; i++) {
    const r = await post(server.url, bigAnswer(`unasked-${i}`), { sessionId });
    assert.equal(r.status, 202, `response ${i}: ${r.status} ${r.text.slice(0, 200)}`);
    peak = Math.max(peak, memory(r));
  }
  const grown = (peak - before) / MB;
  console.log(`memory ${(before / MB).toFixed(1)} MB -> peak ${(peak / MB).toFixed(1)} MB over 40 unasked responses`);
  // Kept, each would hold ~14 MB parsed (560 MB for 40); dropped, one request's worth at most.
  assert.ok(grown < 64, `memory grew by ${grown.toFixed(1)} MB over 40 unasked responses`);
});

test('23.2 a question asked still gets its answer; another session\'s answer to it is dropped', { timeout: 120_000 }, async () => {
  const asker = await open();
  const other = await open();
  const stream = await callAsking(server.url, asker.sessionId);
  const question = await stream.next();
  assert.equal(question.method, 'sampling/createMessage', JSON.stringify(question));
  const answer = (text) => ({
    jsonrpc: '2.0', id: question.id,
    result: { role: 'assistant', content: { type: 'text', text }, model: 'test-model', stopReason: 'endTurn' },
  });
  const foreign = await post(server.url, answer('from another session'), { sessionId: other.sessionId });
  assert.equal(foreign.status, 202);
  const unasked = await post(server.url, bigAnswer('never-asked'), { sessionId: asker.sessionId });
  assert.equal(unasked.status, 202);
  const mine = await post(server.url, answer('four'), { sessionId: asker.sessionId });
  assert.equal(mine.status, 202);
  const result = await stream.next();
  assert.equal(result.id, 7, JSON.stringify(result));
  assert.equal(result.result?.content?.[0]?.text, 'LLM response: four', JSON.stringify(result));
});

/**
 * POSTs tools/call test_sampling (request id 7) in `sessionId` and reads its SSE stream: next()
 * resolves the next JSON-RPC message on it.
 */
function callAsking(url, sessionId) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'test_sampling', arguments: { prompt: 'two plus two?' } } });
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...sessionHeaders(sessionId) },
    }, (res) => {
      if (res.statusCode !== 200) { reject(new Error(`tools/call: HTTP ${res.statusCode}`)); return; }
      const messages = [];
      const waiting = [];
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
          if (data) messages.push(JSON.parse(data));
        }
        while (messages.length && waiting.length) waiting.shift()(messages.shift());
      });
      resolve({
        next: () => new Promise((done, fail) => {
          if (messages.length) return done(messages.shift());
          const timer = setTimeout(() => fail(new Error('no message on the stream within 30 s')), 30_000);
          waiting.push((m) => { clearTimeout(timer); done(m); });
        }),
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
