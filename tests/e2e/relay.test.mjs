// E2E (native server; all but the two stdio tests also against the Worker): what an upstream sends back mid-call
// reaches the client that made the call, and its answer goes back up.
// @modelcontextprotocol/server-everything (Streamable HTTP) behind the gateway, the official SDK
// v2 client (@modelcontextprotocol/client) in front, in a 2025-11-25 session: the upstream's
// sampling and elicitation requests arrive on the call's SSE stream, the client's answers are
// POSTed to its session and reach the upstream, whose result shows them; progress notifications
// reach the calling session only (two sessions whose calls use the same progress token each get
// their own); a client that did not declare a capability is refused at once (its call fails
// fast, never hangs) — these three also against the Worker, whose session's Durable Object
// relays. When a downstream session ends (DELETE, or found expired) its upstream session is
// closed with a DELETE (in the Worker also when its Durable Object's alarm deletes it idle, before
// any request finds it), and a stateless (2026-07-28) call's upstream session of its own (its
// client declared roots; the others share one, relay-stream.test.mjs) is closed once it has
// served: the upstream says so in its log and no longer knows the session. The same relay
// through a stdio upstream (server-everything as a child process of the gateway) and through the
// stdio downstream (`mcp-sieve stdio`, in both eras: a 2026-07-28 client gets input_required
// there too) — native only; log messages a small official-SDK upstream
// sends during a call reach that call's session only; a 2026-07-28 client is asked with
// input_required, also through search mode's call_tool (in the Worker the exchange waits in a Durable
// Object of its own), and only the same caller can answer under the question's key (raw fetch,
// two principals); an official-SDK upstream whose prompt samples and whose resource elicits asks
// the caller of prompts/get and resources/read the same way, in both eras (server-everything's
// prompts and resources ask nothing).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { startEverything, startWith, native, sleep, ROOT } from '../security/helpers.mjs';
import { officialUpstream } from '../fixtures/official-upstream.mjs';
import { stateless } from '../common/mcp-raw.mjs';

const NATIVE = native();
const nativeOnly = { skip: !NATIVE && 'native server only: stdio transports' };

let everything, server;

before(async () => {
  everything = await startEverything();
  // `/mcp/find`: search mode, whose call_tool relays as tools/call does.
  server = await startWith({ upstream: { url: everything.url }, views: { find: { mode: 'search' } } });
}, { timeout: 120_000 });

after(async () => {
  await server?.stop();
  await everything?.stop();
});

/** An SDK v2 client in a 2025-11-25 session, with `capabilities`; what it was asked is in `asked`. */
async function connect(capabilities = { sampling: {}, elicitation: {} }, { url = server.url, mode = 'legacy', transport } = {}) {
  const client = new Client({ name: 'relay-e2e', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
  client.asked = [];
  if (capabilities.sampling) {
    client.setRequestHandler('sampling/createMessage', async (req) => {
      client.asked.push(req.params.messages[0].content.text);
      return { role: 'assistant', content: { type: 'text', text: 'four, said the model' }, model: 'relay-model', stopReason: 'endTurn' };
    });
  }
  if (capabilities.elicitation) {
    client.setRequestHandler('elicitation/create', async (req) => {
      client.asked.push(req.params.message);
      return { action: 'accept', content: { name: 'Ada Lovelace', check: true, email: 'ada@example.com' } };
    });
  }
  client.link = transport ?? new StreamableHTTPClientTransport(new URL(url));
  await client.connect(client.link);
  return client;
}

/** The upstream sessions server-everything opened while `f` ran. */
async function opened(f) {
  const before = new Set(everything.sessions());
  await f();
  const fresh = () => everything.sessions().filter((s) => !before.has(s));
  // Its log line may reach this process after the answer did (a pipe, a loaded machine): wait
  // for the first, then a moment for any second one.
  for (const deadline = Date.now() + 10_000; fresh().length === 0 && Date.now() < deadline;) await sleep(50);
  await sleep(300);
  return fresh();
}

/** Waits until server-everything was asked to end `sid`, then checks it no longer knows it. */
async function closedUpstream(sid) {
  const said = `Received session termination request for session ${sid}`;
  const deadline = Date.now() + 10_000;
  while (!everything.output().includes(said)) {
    assert.ok(Date.now() < deadline, `the upstream session ${sid} was not closed`);
    await sleep(50);
  }
  const r = await fetch(everything.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  assert.equal(r.status, 400, 'the upstream no longer knows the session');
}

/** Sampling and elicitation through `client`, whose upstream's tools are named `prefix` + theirs. */
async function askedAndAnswered(client, prefix = '') {
  const names = (await client.listTools()).tools.map((t) => t.name);
  assert.ok(names.includes(`${prefix}trigger-sampling-request`) && names.includes(`${prefix}trigger-elicitation-request`),
    `the gateway declares sampling and elicitation upstream, so the upstream offers its tools that ask: ${names}`);
  const sampled = await client.callTool({ name: `${prefix}trigger-sampling-request`, arguments: { prompt: 'two plus two?' } });
  assert.ok(!sampled.isError, JSON.stringify(sampled));
  assert.match(sampled.content[0].text, /four, said the model/, 'the upstream got the client\'s answer');
  const elicited = await client.callTool({ name: `${prefix}trigger-elicitation-request`, arguments: {} });
  const text = elicited.content.map((c) => c.text).join('\n');
  assert.match(text, /Ada Lovelace/, text);
  assert.deepEqual(client.asked, ['Resource trigger-sampling-request context: two plus two?', 'Please provide inputs for the following fields:']);
}

test('sampling and elicitation asked by the upstream mid-call reach the caller, and its answers go back', { timeout: 60_000 }, async () => {
  const client = await connect();
  try {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('trigger-sampling-request') && names.includes('trigger-elicitation-request'),
      `the gateway declares sampling and elicitation upstream, so the upstream offers its tools that ask: ${names}`);
    const sampled = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'two plus two?' } });
    assert.ok(!sampled.isError, JSON.stringify(sampled));
    assert.match(sampled.content[0].text, /four, said the model/, 'the upstream got the client\'s answer');
    assert.match(sampled.content[0].text, /relay-model/);
    const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    const text = elicited.content.map((c) => c.text).join('\n');
    assert.match(text, /Ada Lovelace/, text);
    assert.match(text, /ada@example.com/, text);
    assert.deepEqual(client.asked, ['Resource trigger-sampling-request context: two plus two?', 'Please provide inputs for the following fields:'],
      'each question reached the client once');
    // A plain call is answered as before.
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'still plain' } });
    assert.match(echo.content[0].text, /still plain/);
  } finally {
    await client.close().catch(() => {});
  }
});

test('progress reaches the calling session only, under its own token', { timeout: 60_000 }, async () => {
  const [a, b] = [await connect(), await connect()];
  try {
    const seen = { a: [], b: [] };
    // Both sessions' first calls use the same progress token (the SDK's request id).
    const call = (client, who) => client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
      { onprogress: (p) => seen[who].push(p.progress) },
    );
    const [ra, rb] = await Promise.all([call(a, 'a'), call(b, 'b')]);
    assert.match(ra.content[0].text, /Long running operation completed/);
    assert.match(rb.content[0].text, /Long running operation completed/);
    assert.deepEqual(seen, { a: [1, 2, 3], b: [1, 2, 3] }, 'each session heard its own call\'s progress, once');
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
  }
});

test('a client that did not declare sampling is not asked: the upstream is refused at once', { timeout: 30_000 }, async () => {
  const client = await connect({ elicitation: {} });
  try {
    const started = Date.now();
    const r = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello?' } }).catch((e) => e);
    const said = r instanceof Error ? r.message : JSON.stringify(r);
    assert.ok(r instanceof Error || r.isError, `the call fails: ${said}`);
    assert.match(said, /sampling capability/, said);
    assert.ok(Date.now() - started < 10_000, 'it fails fast');
    assert.deepEqual(client.asked, []);
  } finally {
    await client.close().catch(() => {});
  }
});

// Both targets: the Worker closes upstream sessions too.
test('ending a session closes its upstream session with DELETE', { timeout: 30_000 }, async () => {
  const client = await connect();
  const fresh = await opened(() => client.callTool({ name: 'echo', arguments: { message: 'open' } }));
  assert.equal(fresh.length, 1, `the session opened its own upstream session: ${fresh}`);
  assert.ok(!everything.output().includes(`termination request for session ${fresh[0]}`));
  await client.link.terminateSession();
  await closedUpstream(fresh[0]);
  await client.close().catch(() => {});
});

test('a stateless (2026-07-28) call\'s upstream session of its own (its client declared roots) is closed once it served', { timeout: 30_000 }, async () => {
  const client = await connect({ roots: {} }, { mode: { pin: '2026-07-28' } });
  try {
    const fresh = await opened(async () => {
      const r = await client.callTool({ name: 'echo', arguments: { message: 'once' } });
      assert.match(r.content[0].text, /once/);
    });
    assert.equal(fresh.length, 1, `${fresh}`);
    await closedUpstream(fresh[0]);
  } finally {
    await client.close().catch(() => {});
  }
});

test('a session that expires closes its upstream session too', { timeout: 30_000 }, async () => {
  const brief = await startWith({ upstream: { url: everything.url } }, { MCP_SIEVE_SESSION_IDLE_SECONDS: '1' }, { logLevel: 'log' });
  const client = await connect({}, { url: brief.url });
  try {
    const fresh = await opened(() => client.callTool({ name: 'echo', arguments: { message: 'open' } }));
    assert.equal(fresh.length, 1, `${fresh}`);
    await sleep(2_200);
    // The Worker's alarm deleted it idle, and closed it upstream, before any request found it.
    if (!NATIVE) {
      await closedUpstream(fresh[0]);
      assert.match(brief.output(), /alarm deleted an idle session/);
    }
    await assert.rejects(client.listTools(), 'the session expired');
    await closedUpstream(fresh[0]);
  } finally {
    await client.close().catch(() => {});
    await brief.stop();
  }
});

test('through a stdio upstream: questions and progress reach the calling session', { ...nativeOnly, timeout: 60_000 }, async () => {
  const bin = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  const piped = await startWith({ upstreams: { ev: { command: process.execPath, args: [bin, 'stdio'] } } });
  const [a, b] = [await connect({ sampling: {}, elicitation: {} }, { url: piped.url }), await connect({}, { url: piped.url })];
  try {
    await askedAndAnswered(a, 'ev_');
    // Two sessions share the process; each hears only its own call's progress.
    const seen = { a: [], b: [] };
    const call = (client, who) => client.callTool(
      { name: 'ev_trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
      { onprogress: (p) => seen[who].push(p.progress) },
    );
    await Promise.all([call(a, 'a'), call(b, 'b')]);
    assert.deepEqual(seen, { a: [1, 2, 3], b: [1, 2, 3] });
    // A client without the capability is refused at once.
    const r = await b.callTool({ name: 'ev_trigger-sampling-request', arguments: { prompt: 'hi' } }).catch((e) => e);
    assert.match(r instanceof Error ? r.message : JSON.stringify(r), /sampling capability/);
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
    await piped.stop();
  }
});

test('through the stdio downstream (mcp-sieve stdio): questions go out on stdout, answers come back on stdin', { ...nativeOnly, timeout: 60_000 }, async () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-relay-'));
  const doc = path.join(tmp, 'doc.json');
  writeFileSync(doc, JSON.stringify({ upstream: { url: everything.url } }));
  const transport = new StdioClientTransport({ command: path.join(ROOT, 'target', 'debug', 'mcp-sieve'), args: ['stdio', '--catalog', doc], stderr: 'pipe' });
  const client = await connect(undefined, { transport });
  try {
    await askedAndAnswered(client);
  } finally {
    await client.close().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('through the stdio downstream, a 2026-07-28 client is asked with input_required, and the upstream exchange goes on with its answer', { ...nativeOnly, timeout: 60_000 }, async () => {
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-relay-'));
  const doc = path.join(tmp, 'doc.json');
  writeFileSync(doc, JSON.stringify({ upstream: { url: everything.url } }));
  const stdio = () => new StdioClientTransport({ command: path.join(ROOT, 'target', 'debug', 'mcp-sieve'), args: ['stdio', '--catalog', doc], stderr: 'pipe' });
  const client = await connect(undefined, { transport: stdio(), mode: { pin: '2026-07-28' } });
  try {
    await askedAndAnswered(client);
    // Without the capability: refused upstream at once.
    const bare = await connect({ elicitation: {} }, { transport: stdio(), mode: { pin: '2026-07-28' } });
    const r = await bare.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi' } }).catch((e) => e);
    assert.match(r instanceof Error ? r.message : JSON.stringify(r), /sampling capability/);
    await bare.close().catch(() => {});
  } finally {
    await client.close().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('a 2026-07-28 client is asked with input_required, and the upstream exchange goes on with its answer', { timeout: 60_000 }, async () => {
  const client = await connect(undefined, { mode: { pin: '2026-07-28' } });
  try {
    await askedAndAnswered(client);
    // Search mode's call_tool is asked the same way.
    const finder = await connect(undefined, { url: `${server.url}/find`, mode: { pin: '2026-07-28' } });
    const found = await finder.callTool({ name: 'call_tool', arguments: { name: 'trigger-sampling-request', arguments: { prompt: 'found?' } } });
    assert.match(found.content[0].text, /four, said the model/, JSON.stringify(found));
    assert.deepEqual(finder.asked, ['Resource trigger-sampling-request context: found?']);
    await finder.close().catch(() => {});
    // Without the capability: refused upstream at once.
    const bare = await connect({ elicitation: {} }, { mode: { pin: '2026-07-28' } });
    const r = await bare.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi' } }).catch((e) => e);
    assert.match(r instanceof Error ? r.message : JSON.stringify(r), /sampling capability/);
    await bare.close().catch(() => {});
  } finally {
    await client.close().catch(() => {});
  }
});

test('only the caller that was asked answers under the question\'s key: a forged key or another principal\'s call is refused', { timeout: 60_000 }, async () => {
  const tokens = { alice: 'token-alice', bob: 'token-bob' };
  const gw = await startWith({ upstream: { url: everything.url } }, { MCP_SIEVE_TOKENS: JSON.stringify(tokens) });
  const as = (who, extra = {}) => ({ capabilities: { sampling: {} }, headers: { Authorization: `Bearer ${tokens[who]}` }, ...extra });
  const args = { name: 'trigger-sampling-request', arguments: { prompt: 'who asks?' } };
  try {
    const first = (await stateless(gw.url, 'tools/call', args, as('alice'))).response;
    assert.equal(first?.result?.resultType, 'input_required', JSON.stringify(first));
    const [key] = Object.keys(first.result.inputRequests);
    assert.equal(first.result.inputRequests[key].method, 'sampling/createMessage');
    const answer = { role: 'assistant', content: { type: 'text', text: 'alice answers' }, model: 'm', stopReason: 'endTurn' };
    const refusedWith = async (who, k) => {
      const r = (await stateless(gw.url, 'tools/call', { ...args, inputResponses: { [k]: answer } }, as(who))).response;
      assert.equal(r?.error?.code, -32602, JSON.stringify(r));
      assert.match(r.error.message, /params\.inputResponses\.relay-.* answers no question awaiting this caller/, r.error.message);
    };
    await refusedWith('bob', key);
    await refusedWith('alice', key.replace(/[0-9a-f](?=[^-]*-\d+$)/, (c) => (c === '0' ? '1' : '0')));
    await refusedWith('alice', 'relay-forged-1');
    // The exchange still waits for alice, and goes on with her answer.
    const done = (await stateless(gw.url, 'tools/call', { ...args, inputResponses: { [key]: answer } }, as('alice'))).response;
    assert.match(JSON.stringify(done?.result), /alice answers/, JSON.stringify(done));
    // Answered once: the same key again is refused.
    await refusedWith('alice', key);
  } finally {
    await gw.stop();
  }
});

/** An official-SDK upstream whose `work` tool logs (on the call's own stream) while it runs. */
function loggingUpstream() {
  return officialUpstream('logging-upstream', (s) => {
    s.registerTool('work', { description: 'Works, saying so', inputSchema: { who: z.string() } }, async ({ who }, extra) => {
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'work', data: `working for ${who}` } });
      await sleep(200);
      return { content: [{ type: 'text', text: `done for ${who}` }] };
    });
  });
}

/** An official-SDK upstream whose prompt asks the client's model (sampling) and whose resource
 * asks its user (elicitation) while they are being read: questions during a request other than
 * `tools/call`, on the request's own stream. */
function askingUpstream() {
  return officialUpstream('asking-upstream', (s) => {
    s.registerPrompt('review', { description: 'A review, drafted by the client\'s model', argsSchema: { topic: z.string() } }, async ({ topic }, extra) => {
      const drafted = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: `Review ${topic}` } }], maxTokens: 50 } }, CreateMessageResultSchema);
      return { messages: [{ role: 'user', content: { type: 'text', text: `Review of ${topic}: ${drafted.content.text}` } }] };
    });
    s.registerResource('profile', 'profile://me', { description: 'Your profile, as you tell it' }, async (uri, extra) => {
      const told = await extra.sendRequest({ method: 'elicitation/create', params: { message: 'Who are you?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } }, ElicitResultSchema);
      return { contents: [{ uri: uri.href, text: `profile of ${told.content?.name} (${told.action})` }] };
    });
  });
}

test('the upstream\'s questions during prompts/get and resources/read reach the caller too, in both eras', { timeout: 60_000 }, async () => {
  const up = await askingUpstream();
  const gw = await startWith({ upstream: { url: up.url } });
  try {
    for (const mode of ['legacy', { pin: '2026-07-28' }]) {
      const client = await connect(undefined, { url: gw.url, mode });
      try {
        const prompt = await client.getPrompt({ name: 'review', arguments: { topic: 'the plan' } });
        assert.equal(prompt.messages[0].content.text, 'Review of the plan: four, said the model', JSON.stringify(prompt));
        const read = await client.readResource({ uri: 'profile://me' });
        assert.equal(read.contents[0].text, 'profile of Ada Lovelace (accept)', JSON.stringify(read));
        assert.deepEqual(client.asked, ['Review the plan', 'Who are you?'], JSON.stringify(mode));
      } finally {
        await client.close().catch(() => {});
      }
    }
  } finally {
    await gw.stop();
    await up.stop();
  }
});

test('log messages an upstream sends during a call reach that call\'s session only', { timeout: 60_000 }, async () => {
  const up = await loggingUpstream();
  const gw = await startWith({ upstream: { url: up.url } });
  const [a, b] = [await connect({}, { url: gw.url }), await connect({}, { url: gw.url })];
  try {
    const heard = { a: [], b: [] };
    a.setNotificationHandler('notifications/message', (n) => { heard.a.push(n.params.data); });
    b.setNotificationHandler('notifications/message', (n) => { heard.b.push(n.params.data); });
    const [ra, rb] = await Promise.all([
      a.callTool({ name: 'work', arguments: { who: 'a' } }),
      b.callTool({ name: 'work', arguments: { who: 'b' } }),
    ]);
    assert.equal(ra.content[0].text, 'done for a');
    assert.equal(rb.content[0].text, 'done for b');
    assert.deepEqual(heard, { a: ['working for a'], b: ['working for b'] });
  } finally {
    await a.close().catch(() => {});
    await b.close().catch(() => {});
    await gw.stop();
    await up.stop();
  }
});
