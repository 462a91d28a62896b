//! Code mode's engine at the edge (issue 62): the main module of the Dynamic Worker each
//! `run_code` program runs in (worker/code/run.mjs loads it through the Worker Loader binding with
//! no network: `globalOutbound: null`, no bindings). The program itself runs in QuickJS compiled
//! to wasm (quickjs-emscripten's release-sync variant; the same engine as the native server's
//! rquickjs), one runtime per program, with the native sandbox's limits: a memory limit, a stack
//! limit and an interrupt handler that stops it past its wall time — the one thing a Dynamic
//! Worker alone cannot give under `wrangler dev`, whose workerd enforces no CPU limit, so a
//! `while (true) {}` would hold the whole local runtime. The context has the language's
//! intrinsics only; two globals are added, frozen and not replaceable: `tools` (a proxy) and
//! `console` (collected within bounds). Each tool call goes out through the `bridge` the parent
//! hands to `run` (an RpcTarget of the gateway's: the program's only way out) as JSON text, so
//! nothing of the program's objects reaches the gateway.
//!
//! Bundled with its two packages into one module by worker/code/build.mjs
//! (worker/build/code/sandbox.txt); `./quickjs.wasm` is the engine, handed in as a wasm module.
import { WorkerEntrypoint } from 'cloudflare:workers';
import { newQuickJSWASMModuleFromVariant, newVariant } from 'quickjs-emscripten-core';
import RELEASE_SYNC from '@jitl/quickjs-wasmfile-release-sync';
import wasmModule from './quickjs.wasm';

/**
 * Stack the engine may use. Lower than the native 1 MB: QuickJS in wasm recurses on V8's own
 * stack too, which a 1 MB engine stack overflows first (a host RangeError instead of the
 * engine's "stack overflow" the program can catch).
 */
const STACK_BYTES = 256 * 1024;
/** Most lines `console.log` keeps, most bytes of all of them, longest line (as natively). */
const MAX_LOG_LINES = 1000;
const MAX_LOG_BYTES = 64 * 1024;
const MAX_LOG_LINE = 4096;
/** How the bridge's refusal of a cancelled run's call begins (worker/code/run.mjs GONE, CANCELLED). */
const CANCELLED = 'the run was cancelled';

/** Installs `tools` and `console` over the host functions, then removes those from the global
 * object (worker/code's twin of native/src/code/sandbox.rs PRELUDE; `call` answers a promise).
 * Strings cross as JSON text: the engine hands strings out as C strings, which end at a NUL. */
const PRELUDE = `(() => {
  'use strict';
  const call = globalThis.__sieve_call, log = globalThis.__sieve_log;
  delete globalThis.__sieve_call; delete globalThis.__sieve_log;
  const stringify = JSON.stringify, parse = JSON.parse, freeze = Object.freeze;
  const define = Object.defineProperty, String_ = String;
  const callTool = async (name, args) => {
    if (typeof name !== 'string') throw new TypeError('tools.call(name, args): name must be a string');
    const text = args === undefined ? '{}' : stringify(args);
    if (typeof text !== 'string') throw new TypeError('the arguments of ' + name + ' must be an object');
    return parse(await call(stringify(name), text));
  };
  const methods = freeze(Object.create(null));
  const tools = new Proxy(methods, {
    get(_, p) {
      if (p === 'call') return callTool;
      if (typeof p !== 'string' || p === 'then') return undefined;
      return (args) => callTool(p, args);
    },
    set() { return false; }, defineProperty() { return false; }, deleteProperty() { return false; },
    setPrototypeOf() { return false; },
  });
  const show = (v) => {
    if (typeof v === 'string') return v;
    try { const s = stringify(v); return s === undefined ? String_(v) : s; } catch (_) { return String_(v); }
  };
  const write = (...a) => { let line = ''; for (let i = 0; i < a.length; i++) line += (i ? ' ' : '') + show(a[i]); log(stringify(line)); };
  const console = freeze({ log: write, info: write, warn: write, error: write, debug: write });
  define(globalThis, 'tools', { value: tools, writable: false, configurable: false, enumerable: false });
  define(globalThis, 'console', { value: console, writable: false, configurable: false, enumerable: false });
})();`;

let engine;
/** The engine, instantiated once per isolate (a Dynamic Worker serves one program). */
const quickjs = () => (engine ??= newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmModule })));

/** `console` output within its bounds (as natively: a line cut at a character, then one line
 * saying the rest was left out). */
class Logs {
  lines = [];
  bytes = 0;
  cut = false;
  push(line) {
    if (this.cut) return;
    if (line.length > MAX_LOG_LINE) line = `${cutAt(line, MAX_LOG_LINE)}…`;
    const size = new TextEncoder().encode(line).length;
    if (this.lines.length >= MAX_LOG_LINES || this.bytes + size > MAX_LOG_BYTES) {
      this.cut = true;
      this.lines.push(`… more logs left out (at most ${MAX_LOG_LINES} lines, ${MAX_LOG_BYTES} bytes)`);
      return;
    }
    this.bytes += size;
    this.lines.push(line);
  }
}

/** `s` cut to at most `n` UTF-8 bytes, at a character. */
function cutAt(s, n) {
  const bytes = new TextEncoder().encode(s);
  if (bytes.length <= n) return s;
  let end = n;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** Why a run ended without an answer, worded as the native server's (native/src/code/sandbox.rs). */
const why = {
  timeout: (l) => `the program ran past its time limit of ${l.timeoutSeconds} s (code.timeoutSeconds)`,
  memory: (l) => `the program used more than its memory limit of ${l.memoryMb} MB (code.memoryMb)`,
  never: () => "the program's promise never settles: nothing is left to run (a promise nobody resolves?)",
  large: (n, l) => `the program's answer is ${n} bytes, more than ${l.maxAnswerBytes} (code.maxAnswerBytes)`,
};

/** A thrown value (dumped from the engine) as the run's error text. */
function thrown(e, limits) {
  // Out of memory while throwing, QuickJS throws null: read as the memory limit's.
  if (e === null) return why.memory(limits);
  if (typeof e === 'object' && typeof e.message === 'string') {
    const text = `${typeof e.name === 'string' ? e.name : 'Error'}: ${e.message}`;
    return /out of memory/.test(text) ? why.memory(limits) : text;
  }
  if (typeof e === 'string') return `the program threw ${e}`;
  return `the program threw a ${typeof e}`;
}

export default class Sandbox extends WorkerEntrypoint {
  /**
   * Runs `code` (the body of an async function) under `limits` (the document's code block:
   * timeoutSeconds, memoryMb, maxCalls, maxAnswerBytes), its calls made through `bridge.call(name,
   * argsJson)` (a promise of the answer's JSON text, or an error with the message the program
   * sees). Resolves `{result}` (the returned value as JSON text) or `{error}`, with `logs` and
   * `calls`, as JSON text.
   */
  async run(code, limits, bridge) {
    const QuickJS = await quickjs();
    const deadline = Date.now() + limits.timeoutSeconds * 1000;
    const logs = new Logs();
    let calls = 0;
    let pending = 0;
    let wake = () => {};
    let stopped = false;
    // Set when the bridge refuses a call because the run was cancelled (its client went away or
    // cancelled it): the program is stopped as at its wall time, whatever it catches.
    let cancelled = null;
    const rt = QuickJS.newRuntime();
    rt.setMemoryLimit(limits.memoryMb * 1024 * 1024);
    rt.setMaxStackSize(STACK_BYTES);
    rt.setInterruptHandler(() => (stopped ||= cancelled !== null || Date.now() > deadline));
    const ended = () => (cancelled !== null ? cancelled : why.timeout(limits));
    const vm = rt.newContext();
    const done = (o) => JSON.stringify({ ...o, logs: logs.lines, calls });
    try {
      const call = vm.newFunction('call', (n, a) => {
        const name = JSON.parse(vm.getString(n));
        if (calls >= limits.maxCalls) {
          return { error: vm.newError({ name: 'RangeError', message: `too many tool calls: a run may make ${limits.maxCalls} (code.maxCalls)` }) };
        }
        calls += 1;
        pending += 1;
        const answer = vm.newPromise();
        bridge.call(name, vm.getString(a)).then(
          (text) => {
            if (!vm.alive) return;
            const s = vm.newString(text);
            answer.resolve(s);
            s.dispose();
          },
          (e) => {
            const message = String(e?.message ?? e);
            if (message.startsWith(CANCELLED)) cancelled ??= message;
            if (!vm.alive) return;
            const err = vm.newError(message);
            answer.reject(err);
            err.dispose();
          },
        ).finally(() => {
          pending -= 1;
          if (answer.alive) answer.dispose();
          wake();
        });
        return answer.handle;
      });
      const log = vm.newFunction('log', (line) => { logs.push(JSON.parse(vm.getString(line))); });
      vm.setProp(vm.global, '__sieve_call', call);
      vm.setProp(vm.global, '__sieve_log', log);
      call.dispose();
      log.dispose();
      vm.unwrapResult(vm.evalCode(PRELUDE)).dispose();
      // The engine's own JSON.stringify, held before the program can replace the global's.
      const json = vm.getProp(vm.global, 'JSON');
      const stringify = vm.getProp(json, 'stringify');
      json.dispose();
      const evaluated = vm.evalCode(`(async () => {\n${code}\n})()`, 'program.js');
      if (evaluated.error) return done({ error: stopped ? ended() : thrown(dump(vm, evaluated.error), limits) });
      const promise = evaluated.value;
      for (;;) {
        const jobs = rt.executePendingJobs();
        if (jobs.error) jobs.error.dispose();
        if (stopped || cancelled !== null) return done({ error: ended() });
        const state = vm.getPromiseState(promise);
        if (state.type === 'rejected') return done({ error: thrown(dump(vm, state.error), limits) });
        if (state.type === 'fulfilled') {
          const text = vm.callFunction(stringify, vm.undefined, state.value);
          state.value.dispose();
          if (text.error) return done({ error: `the program returned a value that is not JSON (${thrown(dump(vm, text.error), limits)})` });
          const s = vm.typeof(text.value) === 'string' ? vm.getString(text.value) : 'null';
          text.value.dispose();
          const bytes = new TextEncoder().encode(s).length;
          if (bytes > limits.maxAnswerBytes) return done({ error: why.large(bytes, limits) });
          return done({ result: s });
        }
        if (pending === 0) return done({ error: why.never() });
        const left = deadline - Date.now();
        if (left <= 0) return done({ error: why.timeout(limits) });
        let timer;
        await new Promise((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, left);
        });
        clearTimeout(timer);
      }
    } catch (e) {
      // The engine itself failed (a host stack overflow from a deeply nested value, an abort).
      return done({ error: `the program's engine failed: ${e?.message ?? e}` });
    }
    // The engine is not disposed: the isolate is dropped with the run (one program per Dynamic
    // Worker), and freeing a heap near its limit took 0.7–2.5 s of the run's answer.
  }
}

/** A thrown handle's value (disposed): an Error as `{name, message, stack}`, `null` as null
 * (the out-of-memory case). */
function dump(vm, handle) {
  try {
    return vm.dump(handle);
  } catch {
    return 'an unreadable value';
  } finally {
    handle.dispose();
  }
}
