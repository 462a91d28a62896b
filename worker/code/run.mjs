//! Code mode's runs in the Worker (issue 62), the gateway's side: worker/src/serve/code.rs hands
//! a checked `run_code` here (`globalThis.__sieve_run_code`, set by entry.mjs), and each program
//! runs in a Dynamic Worker loaded through the Worker Loader binding (`LOADER`) from
//! worker/code/sandbox.mjs (QuickJS in wasm) with no network (`globalOutbound: null`) and no
//! bindings. Its only way out is the `Bridge` passed to it, an RpcTarget living here: each
//! `tools.<name>(args)` becomes a `tools/call` of `call_tool` sent as the caller — the run_code
//! request's own URL and headers (session, token, view headers, protocol version) and `_meta` —
//! through the Worker's own request path (`serve`: the Rust `fetch`, gate, authentication, view,
//! rate limits, session object, audit), with the run's id in the environment it is served with
//! (`MCP_SIEVE_RUN`, which no request can set), so its audit record says `"via": "run_code"`.
//! Limits (the document's `code` block): wall time (the engine's interrupt handler, and a guard
//! here), the engine's memory and the tool calls (counted here too), answer bytes, runs at once
//! per caller (across isolates, in the owner's Durable Object: worker/code/runs.mjs) and in all
//! (per isolate); CPU time by the platform's `limits.cpuMs` in production. A run ends when its
//! client cancels it (`notifications/cancelled`, told by the owner's object from whichever
//! isolate received it) or when the run_code request's `signal` aborts (its client went away,
//! with the `enable_request_signal` compatibility flag, which wrangler.toml does not turn on:
//! docs/src/code-mode.md): no call of its program is made after that, its place is given back,
//! and the sandbox is told at its next call.
import { RpcTarget } from 'cloudflare:workers';
import SANDBOX from '../build/code/sandbox.txt';
import QUICKJS from '../build/code/quickjs.bin';
import * as runs from './runs.mjs';

/** The environment key carrying the run's id into the calls it makes (worker/src/serve/code.rs). */
export const RUN_KEY = 'MCP_SIEVE_RUN';
/** Most programs running in this isolate at once, whoever runs them (as natively, per process). */
const MAX_RUNS = 16;
/** Longer than the run's wall time the gateway waits for its Dynamic Worker before giving up. */
const GRACE_MS = 5_000;
/** A run's place is leased for its wall time, the grace and this (loading its Dynamic Worker). */
const LEASE_SLACK_MS = 5_000;
/** The tool through which a program's calls come back (protocol::search::CALL). */
const CALL = 'call_tool';
/** Largest call answer read, in bytes (as natively: one message past it is not read). */
const MAX_CALL_ANSWER = 16 * 1024 * 1024;
/** Most of one run's calls served at once (as natively: native/src/code.rs MAX_CALLS_AT_ONCE);
 * its further calls wait their turn, in the order made. */
const CALLS_AT_ONCE = 8;

/** Runs at once in this isolate, whoever runs them (by owner: worker/code/runs.mjs). */
let all = 0;

/** Why a run ended early: its client went away, or cancelled it (native/src/code.rs's wording). */
export const GONE = 'the run was cancelled: its client went away';
export const CANCELLED = 'the run was cancelled by its client (notifications/cancelled)';

/**
 * Runs one program. `ask`: `{program, limits, owner, session, request, url, headers: [[name,
 * value]…], meta}` (`request`: the run_code request's JSON-RPC id); `serve(request, env)` serves a
 * request as the Worker's front does; `ctx` the request's context, `signal` its request's (aborted
 * when its client goes away). Resolves JSON text: `{result}` (the returned value's JSON text) or
 * `{error}`, with `logs`, `calls` and `run` (its id), or an `{error}` saying the caller already
 * runs its most programs.
 */
export async function runCode(ask, env, serve, { ctx, signal } = {}) {
  const { limits, owner } = ask;
  const busy = () => JSON.stringify({
    error: `too many programs at once: a caller may run ${limits.maxConcurrentRuns} (code.maxConcurrentRuns), this server ${MAX_RUNS}; wait for one to end`,
    logs: [],
    calls: 0,
  });
  if (all >= MAX_RUNS) return busy();
  all += 1;
  const run = crypto.randomUUID();
  const stop = new AbortController();
  let lease = null;
  let released = false;
  // The places are given back once, when the run ends or, at once, when its client goes away
  // (then this request's context may end before the run's promise settles).
  const release = () => {
    if (released) return;
    released = true;
    all -= 1;
    if (lease && !lease.busy) lease.end(ctx);
  };
  const gone = () => {
    stop.abort(GONE);
    release();
  };
  try {
    lease = await runs.take(env, {
      owner,
      run,
      session: ask.session ?? null,
      request: ask.request ?? null,
      most: limits.maxConcurrentRuns,
      // No run lasts longer: its wall time, the grace below, and the time to load its worker.
      ms: limits.timeoutSeconds * 1000 + GRACE_MS + LEASE_SLACK_MS,
    }, () => stop.abort(CANCELLED));
    if (lease?.busy) return busy();
    if (signal?.aborted) return JSON.stringify({ error: GONE, logs: [], calls: 0, run });
    signal?.addEventListener('abort', gone, { once: true });
    return await runIn(ask, env, serve, run, stop.signal);
  } finally {
    signal?.removeEventListener('abort', gone);
    release();
  }
}

async function runIn(ask, env, serve, run, stopped) {
  const { limits } = ask;
  const failed = (error, calls = 0) => JSON.stringify({ error, logs: [], calls, run });
  const loader = env.LOADER;
  if (!loader || typeof loader.load !== 'function') {
    return failed('this Worker has no Worker Loader binding LOADER (wrangler.toml: [[worker_loaders]] binding = "LOADER"), which code mode needs at the edge');
  }
  const deadline = Date.now() + limits.timeoutSeconds * 1000;
  const bridge = new Bridge(ask, Object.create(env, { [RUN_KEY]: { value: run } }), serve, run, deadline, stopped);
  let timer;
  let onStop;
  try {
    const worker = loader.load({
      compatibilityDate: '2025-09-01',
      mainModule: 'sandbox.js',
      modules: { 'sandbox.js': SANDBOX, 'quickjs.wasm': { wasm: QUICKJS } },
      env: {},
      globalOutbound: null,
      // Enforced by the platform in production (workerd has no CPU limits: the engine's
      // interrupt handler is what stops a loop locally).
      limits: { cpuMs: limits.timeoutSeconds * 1000 },
    });
    const guard = new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), deadline - Date.now() + GRACE_MS);
    });
    // Cancelled: answered at once; the Dynamic Worker is told at its next call (the bridge refuses
    // it), and a program that makes none ends at its wall time.
    const cancelled = new Promise((resolve) => {
      onStop = () => resolve(stopped.reason);
      if (stopped.aborted) onStop();
      else stopped.addEventListener('abort', onStop, { once: true });
    });
    const answer = await Promise.race([worker.getEntrypoint().run(ask.program, limits, bridge), guard, cancelled]);
    if (answer === null) return failed(`the program ran past its time limit of ${limits.timeoutSeconds} s (code.timeoutSeconds)`, bridge.calls);
    if (stopped.aborted) return failed(String(stopped.reason), bridge.calls);
    const ran = JSON.parse(answer);
    return JSON.stringify({ ...ran, run });
  } catch (e) {
    // The Dynamic Worker failed as a whole (the platform's CPU or memory limit, a host stack
    // overflow): the run's error, not the gateway's.
    return failed(`the program's sandbox failed: ${e?.message ?? e}`, bridge.calls);
  } finally {
    clearTimeout(timer);
    stopped.removeEventListener('abort', onStop);
    bridge.ended = true;
  }
}

/**
 * The program's way out, living in the gateway: each call is the caller's own `tools/call` of
 * `call_tool`, counted against the run's limits here whatever the sandbox counted.
 */
class Bridge extends RpcTarget {
  constructor(ask, env, serve, run, deadline, stopped) {
    super();
    this.stopped = stopped;
    this.ask = ask;
    this.env = env;
    this.serve = serve;
    this.run = run;
    this.deadline = deadline;
    this.calls = 0;
    this.ended = false;
    /** Calls being served, and those waiting their turn (each the resolver that starts it). */
    this.serving = 0;
    this.turns = [];
  }

  /** `fn` in its turn: at once while fewer than CALLS_AT_ONCE are served, else once one ends —
   * unless the run was cancelled or ended meanwhile. */
  async inTurn(fn) {
    if (this.serving < CALLS_AT_ONCE) this.serving += 1;
    else await new Promise((r) => this.turns.push(r)); // handed the place of the call that ended
    try {
      if (this.stopped.aborted) throw new Error(String(this.stopped.reason));
      if (this.ended) throw new Error('the run has ended');
      return await fn();
    } finally {
      const next = this.turns.shift();
      if (next) next();
      else this.serving -= 1;
    }
  }

  /** Calls tool `name` with `args` (JSON text of an object): the answer as JSON text, or throws
   * the error the program sees. */
  async call(name, args) {
    // A cancelled run makes no call (the sandbox stops its program on this message).
    if (this.stopped.aborted) throw new Error(String(this.stopped.reason));
    if (this.ended) throw new Error('the run has ended');
    if (typeof name !== 'string' || typeof args !== 'string') throw new TypeError('tools.call(name, args)');
    if (this.calls >= this.ask.limits.maxCalls) {
      throw new RangeError(`too many tool calls: a run may make ${this.ask.limits.maxCalls} (code.maxCalls)`);
    }
    this.calls += 1;
    const id = `run_code:${this.run}:${this.calls}`;
    const left = this.deadline - Date.now();
    if (left <= 0) throw new Error(`the run's time ran out while ${name} was called`);
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the run's time ran out while ${name} was called`)), left);
    });
    try {
      const message = await Promise.race([this.inTurn(() => this.send(id, name, JSON.parse(args))), late]);
      return JSON.stringify(resolved(message));
    } finally {
      clearTimeout(timer);
    }
  }

  /** The call as the caller's request through the Worker's front; its JSON-RPC answer. */
  async send(id, name, args) {
    const params = { name: CALL, arguments: { name, arguments: args } };
    if (this.ask.meta && typeof this.ask.meta === 'object') {
      // The run's progress is not the call's.
      const { progressToken: _, ...meta } = this.ask.meta;
      params._meta = meta;
    }
    const headers = new Headers(this.ask.headers);
    headers.delete('content-length');
    // A 2026-07-28 request mirrors its method and names into headers.
    if (headers.has('mcp-method')) headers.set('mcp-method', 'tools/call');
    if (headers.has('mcp-name')) {
      headers.set('mcp-name', CALL);
      headers.set('mcp-param-tool', name);
    }
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params });
    const response = await this.serve(new Request(this.ask.url, { method: 'POST', headers, body }), this.env);
    const type = response.headers.get('content-type') ?? '';
    if (/^text\/event-stream/i.test(type)) return answerInStream(response, id);
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`the call of ${name} was refused (HTTP ${response.status}): ${text.slice(0, 300)}`);
    }
  }
}

/** What a call's answer resolves to in the program: the tool's `structuredContent`, else its
 * `content`; a JSON-RPC error or a tool error throws its message (native/src/code.rs `resolved`). */
function resolved(message) {
  if (message?.error) {
    throw new Error(typeof message.error.message === 'string' ? message.error.message : JSON.stringify(message.error));
  }
  const result = message?.result;
  if (result === undefined) throw new Error(`the call got no result: ${JSON.stringify(message).slice(0, 300)}`);
  if (result?.isError === true) {
    const text = (Array.isArray(result.content) ? result.content : []).map((c) => c?.text).filter((t) => typeof t === 'string');
    throw new Error(text.length ? text.join('\n') : 'the tool failed');
  }
  return result?.structuredContent ?? result?.content ?? null;
}

/** The response with `id` in an SSE answer, read as it comes; a question the server asks on the
 * way (elicitation, sampling, roots) fails the call: a program's caller is not asked. */
async function answerInStream(response, id) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
        let msg;
        try { msg = JSON.parse(data); } catch { continue; }
        if (msg.method !== undefined && msg.id !== undefined) {
          throw new Error(`the tool asked a question mid-call (${typeof msg.method === 'string' ? msg.method : 'a request'}); questions are not passed on from run_code: call it directly`);
        }
        if (msg.id === id) return msg;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("the call's stream ended without its answer");
      buf += value.replace(/\r\n/g, '\n');
      if (buf.length > MAX_CALL_ANSWER) throw new Error("the call's answer is too large");
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
