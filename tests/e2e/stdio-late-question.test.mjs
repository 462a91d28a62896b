// E2E (native server only: stdio upstreams): a stdio upstream's question reaches only a client
// it can belong to (issue 58 item 7). One process serves every client of the gateway, and a pipe
// carries no related request: a question names its call by echoing the call's
// `_meta.progressToken` (or the related task), or it names none. An unnamed question goes to the
// one call in flight only when every call the process was sent since it started came from that
// call's principal; otherwise the upstream is answered -32603 and no client is asked.
// The upstream is tests/fixtures/late-asking-stdio-upstream.mjs (official SDK v1, stdio), the
// clients two official SDK v2 clients (`@modelcontextprotocol/client`, 2025-11-25 sessions over
// Streamable HTTP) holding alice's and bravo's tokens, each answering elicitation.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startWith, native, until, ROOT } from '../security/helpers.mjs';

const skip = !native() && 'native server only: stdio upstreams';
const UPSTREAM = path.join(ROOT, 'tests', 'fixtures', 'late-asking-stdio-upstream.mjs');
const PRINCIPALS = { alice: 'token-alice-58', bravo: 'token-bravo-58' };

const cleanup = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** A gateway in front of the upstream; `record()` reads the outcomes of its questions. */
async function gateway() {
  const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-58-late-'));
  cleanup.push(() => rmSync(tmp, { recursive: true, force: true }));
  const log = path.join(tmp, 'record.jsonl');
  const gw = await startWith(
    { upstreams: { jobs: { command: process.execPath, args: [UPSTREAM], env: { LATE_RECORD: log } } } },
    { MCP_SIEVE_TOKENS: JSON.stringify(PRINCIPALS) },
  );
  cleanup.push(() => gw.stop());
  const record = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
  /** The outcome of the question `asked`, once the upstream has one. */
  const outcome = (asked) => until(`the upstream got an outcome for "${asked}"`, () => record().find((r) => r.asked === asked), 15_000);
  return { url: gw.url, record, outcome };
}

/** `who`'s SDK client (declares elicitation; accepts every question, recording its message). */
async function clientOf(url, who) {
  const client = new Client({ name: who, version: '1.0.0' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'legacy' } });
  client.asked = [];
  client.setRequestHandler('elicitation/create', async (req) => {
    client.asked.push(req.params.message);
    return { action: 'accept', content: { ok: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${PRINCIPALS[who]}` } } }));
  cleanup.push(() => client.close().catch(() => {}));
  return client;
}

const textOf = (r) => r.content?.[0]?.text;
const call = (client, name, args, options) => client.callTool({ name: `jobs_${name}`, arguments: args }, options).then(textOf);

test("a late question of bravo's finished call is not put to alice, whose call is alone in flight; the upstream gets -32603", { skip, timeout: 60_000 }, async () => {
  const gw = await gateway();
  const [alice, bravo] = [await clientOf(gw.url, 'alice'), await clientOf(gw.url, 'bravo')];
  // bravo's call returns; its job asks 1.5 s later, while alice's call (sent after bravo's
  // returned, so alone on the pipe since it was sent) is in flight.
  assert.equal(await call(bravo, 'start', { owner: 'bravo', afterMs: 1500 }), 'job of bravo started');
  assert.equal(await call(alice, 'hold', { ms: 4000 }), 'held');
  const asked = 'the job of bravo needs its owner to confirm';
  const got = await gw.outcome(asked);
  assert.deepEqual(alice.asked, [], 'alice was asked a question of bravo\'s job');
  assert.deepEqual(bravo.asked, [], 'bravo has no call in flight to be asked on');
  assert.ok(got.refused && !got.answered, `the upstream got an error, not an answer: ${JSON.stringify(got)}`);
  assert.equal(got.refused.code, -32603);
  assert.match(got.refused.message, /no client call this question belongs to/);
});

test('once two principals used the process: a question that names its call reaches that call\'s client, one that names none reaches nobody', { skip, timeout: 60_000 }, async () => {
  const gw = await gateway();
  const [alice, bravo] = [await clientOf(gw.url, 'alice'), await clientOf(gw.url, 'bravo')];
  assert.equal(await call(bravo, 'hold', { ms: 10 }), 'held');
  // Named by its progress token: alice's question reaches alice, while bravo's call is in flight too.
  const [named, held] = await Promise.all([
    call(alice, 'confirm', { what: 'alice-named', named: true }, { onprogress: () => {} }),
    call(bravo, 'hold', { ms: 1500 }),
  ]);
  assert.equal(named, 'answered: accept {"ok":true}');
  assert.equal(held, 'held');
  assert.deepEqual(alice.asked, ['confirm alice-named']);
  assert.deepEqual(bravo.asked, []);
  // Named, bravo's own question, alone in flight: reaches bravo.
  assert.equal(await call(bravo, 'confirm', { what: 'bravo-named', named: true }, { onprogress: () => {} }), 'answered: accept {"ok":true}');
  assert.deepEqual(bravo.asked, ['confirm bravo-named']);
  // Unnamed, though asked during the one call in flight: it may be a late question of the other
  // principal's call, so it is refused.
  const plain = await call(alice, 'confirm', { what: 'alice-plain' });
  assert.match(plain, /^refused: -32603 .*no client call this question belongs to/);
  assert.deepEqual(alice.asked, ['confirm alice-named']);
  assert.equal((await gw.outcome('confirm alice-plain')).refused.code, -32603);
});

test('a process only one principal used: an unnamed question reaches the one call in flight', { skip, timeout: 60_000 }, async () => {
  const gw = await gateway();
  const alice = await clientOf(gw.url, 'alice');
  assert.equal(await call(alice, 'confirm', { what: 'alice-plain' }), 'answered: accept {"ok":true}');
  // Her own job's late question, during her next call: hers whichever call it concerns.
  assert.equal(await call(alice, 'start', { owner: 'alice', afterMs: 500 }), 'job of alice started');
  assert.equal(await call(alice, 'hold', { ms: 2500 }), 'held');
  const got = await gw.outcome('the job of alice needs its owner to confirm');
  assert.deepEqual(got.answered, { action: 'accept', content: { ok: true } });
  assert.deepEqual(alice.asked, ['confirm alice-plain', 'the job of alice needs its owner to confirm']);
});
