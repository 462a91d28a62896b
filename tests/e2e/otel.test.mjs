// E2E (native): traces over OTLP/HTTP. A receiver built on the official `opentelemetry-proto`
// definitions (tests/python/otlp_receiver.py, protobuf decoding of ExportTraceServiceRequest)
// collects what two chained `mcp-sieve serve` export: a gateway whose upstream "chain" is
// another native mcp-sieve serving the default catalog. A tools/call sent with a client's W3C
// `traceparent` header is one trace: the gateway's SERVER span (named "tools/call chain_echo",
// MCP semantic-convention attributes) is the child of the client's span, its CLIENT span for the
// upstream exchange (mcp_sieve.upstream.name "chain", its era) the child of that, and the
// upstream server's SERVER span the child of the CLIENT span (the traceparent header passed on).
// Trace context in `params._meta.traceparent` (the MCP convention) is read too; a sampler of
// parentbased_traceidratio 0 still follows a sampled parent, and exports nothing of a root. A
// find_tools call in search mode has a `search` INTERNAL span under its request's. The
// gateway sends the collector the headers OTEL_EXPORTER_OTLP_HEADERS names. A third instance
// compresses its exports (OTEL_EXPORTER_OTLP_COMPRESSION=gzip) and is told by the collector that
// it kept all but one span (partial_success), which it says in its log; a fourth, asked for
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc, says that protocol is not built in and exports nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { startNative } from './harness.mjs';
import { stateless } from '../common/mcp-raw.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = mkdtempSync(path.join(tmpdir(), 'sieve-otel-'));
const SPANS = path.join(tmp, 'spans.jsonl');
let receiver, upstream, gateway, zipped, grpc;

/** Starts the receiver; resolves its port. */
function startReceiver() {
  return new Promise((resolve, reject) => {
    receiver = spawn(path.join(ROOT, '.venv', 'bin', 'python'), [path.join(ROOT, 'tests', 'python', 'otlp_receiver.py'), SPANS],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    receiver.stderr.on('data', (c) => { err += c; });
    receiver.stdout.on('data', (c) => {
      const m = /listening (\d+)/.exec(String(c));
      if (m) resolve(Number(m[1]));
    });
    receiver.on('exit', (code) => reject(new Error(`the OTLP receiver exited (${code}): ${err}`)));
  });
}

const otel = (port, service) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
  OTEL_SERVICE_NAME: service,
  OTEL_BSP_SCHEDULE_DELAY: '100',
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: '0',
});

before(async () => {
  const port = await startReceiver();
  upstream = await startNative({ env: otel(port, 'sieve-upstream') });
  const doc = path.join(tmp, 'gateway.json');
  writeFileSync(doc, JSON.stringify({ upstreams: { chain: { url: upstream.url } } }));
  // The collector's credentials, as OTEL_EXPORTER_OTLP_HEADERS gives them (percent-encoded).
  const headers = { OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20otel-t0ken' };
  gateway = await startNative({ extraArgs: ['--catalog', doc], env: { ...otel(port, 'sieve-gateway'), ...headers } });
  zipped = await startNative({ env: { ...otel(port, 'sieve-partial'), OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' } });
  grpc = await startNative({ env: { ...otel(port, 'sieve-grpc'), OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } });
}, { timeout: 60_000 });

after(async () => {
  await gateway?.stop();
  await upstream?.stop();
  await zipped?.stop();
  await grpc?.stop();
  if (receiver && receiver.exitCode == null) process.kill(receiver.pid);
  rmSync(tmp, { recursive: true, force: true });
});

const spans = () => (existsSync(SPANS) ? readFileSync(SPANS, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

/** The spans of `traceId` once `done(spans)` holds (exports are batched every 100 ms). */
async function trace(traceId, done) {
  for (let i = 0; i < 100; i++) {
    const all = spans();
    const bad = all.find((s) => s.error);
    assert.equal(bad, undefined, `a body the receiver could not decode: ${JSON.stringify(bad)}`);
    const mine = all.filter((s) => s.traceId === traceId);
    if (done(mine)) return mine;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`trace ${traceId} did not arrive complete: ${JSON.stringify(spans(), null, 1)}\n${gateway.output()}`);
}

const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 };
const ids = () => ({ traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') });

test('one trace crosses two chained mcp-sieve: client span → gateway SERVER → CLIENT → upstream SERVER', async () => {
  const { traceId, spanId } = ids();
  const r = await stateless(gateway.url, 'tools/call', { name: 'chain_echo', arguments: { message: 'traced' } },
    { headers: { traceparent: `00-${traceId}-${spanId}-01` } });
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /traced/);
  // Each process exports on its own schedule: wait for all three spans (the gateway's request
  // span ends last, after the upstream's has been exported).
  const got = await trace(traceId, (s) => ['sieve-upstream', 'sieve-gateway'].every((service) => s.some((x) => x.service === service && x.kind === KIND.SERVER))
    && s.some((x) => x.service === 'sieve-gateway' && x.kind === KIND.CLIENT));
  const server = got.find((s) => s.service === 'sieve-gateway' && s.kind === KIND.SERVER);
  assert.ok(server, `the gateway's request span: ${JSON.stringify(got)}`);
  assert.equal(server.parentSpanId, spanId, 'the client\'s traceparent is the root\'s parent');
  assert.equal(server.name, 'tools/call chain_echo');
  assert.equal(server.attributes['mcp.method.name'], 'tools/call');
  assert.equal(server.attributes['gen_ai.tool.name'], 'chain_echo');
  assert.equal(server.attributes['mcp.protocol.version'], '2026-07-28');
  assert.equal(server.attributes['network.transport'], 'tcp');
  assert.ok(server.attributes['jsonrpc.request.id'] != null);
  assert.ok(server.contentType.startsWith('application/x-protobuf'), server.contentType);
  assert.equal(server.authorization, 'Bearer otel-t0ken', 'OTEL_EXPORTER_OTLP_HEADERS sent, percent-decoded');

  const client = got.find((s) => s.service === 'sieve-gateway' && s.kind === KIND.CLIENT && s.attributes['mcp.method.name'] === 'tools/call');
  assert.ok(client, `the gateway's upstream span: ${JSON.stringify(got)}`);
  assert.equal(client.parentSpanId, server.spanId, 'the upstream exchange is a child of the request');
  assert.equal(client.attributes['mcp_sieve.upstream.name'], 'chain');
  assert.equal(client.attributes['mcp_sieve.upstream.era'], 'stateless');
  assert.equal(client.attributes['gen_ai.tool.name'], 'echo', 'the upstream\'s own name for the tool');

  const up = got.find((s) => s.service === 'sieve-upstream' && s.kind === KIND.SERVER);
  assert.equal(up.parentSpanId, client.spanId, 'the upstream server\'s span is the child of the gateway\'s CLIENT span');
  assert.equal(up.name, 'tools/call echo');
  assert.equal(up.authorization, null, 'the upstream was given no collector headers');
});

test('trace context in params._meta.traceparent is read (the MCP convention)', async () => {
  const { traceId, spanId } = ids();
  const r = await stateless(gateway.url, 'tools/list', { _meta: { traceparent: `00-${traceId}-${spanId}-01` } });
  assert.equal(r.status, 200, r.body);
  const [server] = await trace(traceId, (s) => s.some((x) => x.kind === KIND.SERVER));
  assert.equal(server.parentSpanId, spanId);
  assert.equal(server.name, 'tools/list');
});

test('a search in search mode is a child span of its request', async () => {
  const { traceId, spanId } = ids();
  const r = await stateless(`${gateway.url}?mode=search`, 'tools/call', { name: 'find_tools', arguments: { query: 'echo a message' } },
    { headers: { traceparent: `00-${traceId}-${spanId}-01` } });
  assert.equal(r.status, 200, r.body);
  assert.match(r.body, /chain_echo/);
  const got = await trace(traceId, (s) => s.some((x) => x.kind === KIND.SERVER) && s.some((x) => x.kind === KIND.INTERNAL));
  const server = got.find((s) => s.kind === KIND.SERVER);
  const search = got.find((s) => s.kind === KIND.INTERNAL);
  assert.equal(server.name, 'tools/call find_tools');
  assert.equal(search.name, 'search');
  assert.equal(search.parentSpanId, server.spanId, 'the search is a child of the request');
  assert.equal(search.attributes['mcp_sieve.search.mode'], 'lexical');
});

test('a root request is not sampled with parentbased_traceidratio 0: nothing is exported', async () => {
  const before = spans().length;
  const r = await stateless(gateway.url, 'tools/call', { name: 'chain_echo', arguments: { message: 'unsampled' } });
  assert.equal(r.status, 200, r.body);
  // A sampled request after it, so the exporter has flushed what it had.
  const { traceId, spanId } = ids();
  await stateless(gateway.url, 'tools/list', {}, { headers: { traceparent: `00-${traceId}-${spanId}-01` } });
  await trace(traceId, (s) => s.length > 0);
  const news = spans().slice(before).filter((s) => s.traceId !== traceId);
  assert.deepEqual(news.filter((s) => s.kind === KIND.SERVER && s.service === 'sieve-gateway'), [], 'no root span was sampled');
});

test('gzip exports (OTEL_EXPORTER_OTLP_COMPRESSION) and a collector\'s partial_success said in the log', async () => {
  const { traceId, spanId } = ids();
  const r = await stateless(zipped.url, 'tools/list', {}, { headers: { traceparent: `00-${traceId}-${spanId}-01` } });
  assert.equal(r.status, 200, r.body);
  const [server] = await trace(traceId, (s) => s.some((x) => x.kind === KIND.SERVER));
  assert.equal(server.service, 'sieve-partial');
  assert.equal(server.contentEncoding, 'gzip');
  for (let i = 0; i < 50 && !/PartialSuccess/.test(zipped.output()); i++) await new Promise((res) => setTimeout(res, 100));
  assert.match(zipped.output(), /warning: .*PartialSuccess.*rejected_spans=1/, zipped.output());
  assert.match(zipped.output(), /the test collector keeps all but one/);
});

test('OTEL_EXPORTER_OTLP_PROTOCOL=grpc is said not built in, and nothing is exported', async () => {
  assert.match(grpc.output(), /traces are off: OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not built into mcp-sieve; expected "http\/protobuf"/, grpc.output());
  const { traceId, spanId } = ids();
  const r = await stateless(grpc.url, 'tools/list', {}, { headers: { traceparent: `00-${traceId}-${spanId}-01` } });
  assert.equal(r.status, 200, r.body);
  // The gateway's traced request after it: once it arrives, sieve-grpc's would have too.
  const other = ids();
  await stateless(gateway.url, 'tools/list', {}, { headers: { traceparent: `00-${other.traceId}-${other.spanId}-01` } });
  await trace(other.traceId, (s) => s.length > 0);
  assert.deepEqual(spans().filter((s) => s.service === 'sieve-grpc'), []);
});
