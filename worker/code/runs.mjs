//! Code mode's runs at once, counted across the Worker's isolates (issue 62): one Durable Object
//! per owner (the principal, else the session; worker/src/serve/code.rs `owner`) holds that
//! owner's running programs as leases. It is the rate limits' class (`RATE_LIMITS`,
//! worker/src/operate/limiter.rs: one object per limited key), reached on paths under `/runs/`,
//! which entry.mjs's `RateLimiter` serves here; its objects for runs are named apart from its
//! buckets (`NAME_PREFIX`). Written in JS beside worker/code/run.mjs, which runs the programs,
//! so that the gateway's wasm does not grow for it.
//!
//! - `take`: a place for a run if the owner holds fewer than its limit, as a lease that ends when
//!   the run ends (`end`), when it is cancelled, or at its `until` (the run's wall time and the
//!   gateway's grace, so a run whose isolate died gives its place back when it could no longer
//!   be running). The answer is a stream kept open for the run: its first line says `granted` or
//!   `busy`, and a later `cancelled` line tells the isolate running it to stop it.
//! - `cancel`: the client's `notifications/cancelled` of the request (its session and JSON-RPC
//!   id) that runs a program, from whichever isolate received it: the lease ends and its stream
//!   says `cancelled`.
//!
//! The leases are kept in the object's storage too, so an object that is evicted or restarted
//! while runs go on still counts them (until their `until`); the streams are not, and a run whose
//! stream broke is then not told of a cancel (it still ends within its limits).

/** The Durable Object namespace binding (the rate limits'). */
export const BINDING = 'RATE_LIMITS';
/** Where in the object the runs are served (the rate limits' buckets are at `/`). */
const PATH = '/runs/';
const BASE = `https://runs.internal${PATH}`;
/** Object names of runs: no limit's id starts with a NUL (the buckets are `id\nkey`). */
const NAME_PREFIX = '\u0000run_code\n';
/** The storage key of the leases. */
const KEY = 'runs';

const encoder = new TextEncoder();

/** Whether `request` (to a `RateLimiter` object) is about runs. */
export function isRunsRequest(request) {
  return request.url.startsWith(BASE);
}

/** The object holding the runs of `owner`, or null without the binding. */
function objectOf(env, owner) {
  const ns = env?.[BINDING];
  if (!ns || typeof ns.idFromName !== 'function') return null;
  return ns.get(ns.idFromName(NAME_PREFIX + owner));
}

const post = (stub, what, body) => stub.fetch(BASE + what, { method: 'POST', body: JSON.stringify(body) });

/**
 * Takes a place among `owner`'s runs for run `run` (`session`: the run_code request's session or
 * null, `request`: its JSON-RPC id) when fewer than `most` run, for at most `ms`. Resolves
 * `{busy: true}`, or a lease `{end(ctx)}` that calls `onCancel()` when the run is cancelled from
 * any isolate; `null` when the count could not be asked (no binding, an object that failed: the
 * run is then counted by nothing, and the reason is logged).
 */
export async function take(env, { owner, run, session, request, most, ms }, onCancel) {
  const stub = objectOf(env, owner);
  if (!stub) {
    console.error(`code mode: runs at once are not counted: no Durable Object binding ${BINDING}`);
    return null;
  }
  let reader;
  try {
    const res = await post(stub, 'take', { run, session, request, most, ms });
    reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const lines = linesOf(reader);
    const first = await lines.next();
    if (first.value === 'busy') {
      reader.cancel().catch(() => {});
      return { busy: true };
    }
    if (first.value !== 'granted') throw new Error(`the object answered ${JSON.stringify(first.value ?? '')}`);
    // The rest of the stream, read while the run goes on: `cancelled`, or its end.
    (async () => {
      for (let line = await lines.next(); !line.done; line = await lines.next()) {
        if (line.value === 'cancelled') return onCancel();
      }
    })().catch(() => {});
    return {
      busy: false,
      end(ctx) {
        reader.cancel().catch(() => {});
        const ended = post(stub, 'end', { run }).then((r) => r.body?.cancel(), (e) => {
          console.error(`code mode: the end of run ${run} could not be told (its place is given back at its lease's end): ${e?.message ?? e}`);
        });
        ctx?.waitUntil?.(ended);
      },
    };
  } catch (e) {
    reader?.cancel().catch(() => {});
    console.error(`code mode: runs at once are not counted for this run: the count could not be asked: ${e?.message ?? e}`);
    return null;
  }
}

/** The lines of a text stream's reader, as an async iterator. */
async function* linesOf(reader) {
  let buf = '';
  for (;;) {
    let end;
    while ((end = buf.indexOf('\n')) >= 0) {
      yield buf.slice(0, end);
      buf = buf.slice(end + 1);
    }
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
  }
}

/**
 * Cancels the run of `owner` that request `request` (a JSON-RPC id) of `session` (or null) runs,
 * wherever it runs: the client's `notifications/cancelled`. Resolves how many runs it ended.
 */
export async function cancel(env, { owner, session, request }) {
  const stub = objectOf(env, owner);
  if (!stub) return 0;
  const res = await post(stub, 'cancel', { session, request });
  const { cancelled } = await res.json();
  return cancelled;
}

/**
 * One owner's runs, in its object: the leases (also in storage) and, for the runs taken while
 * this object was up, the streams that tell them of a cancel.
 */
export class RunLedger {
  constructor(storage) {
    this.storage = storage;
    /** run id → {session, request (JSON text), until (ms)} */
    this.leases = null;
    /** The read of the leases from storage (`load`). */
    this.loading = null;
    /** run id → the writer of its stream */
    this.streams = new Map();
  }

  /** Serves a request about runs (`isRunsRequest`). */
  async serve(request) {
    const what = request.url.slice(BASE.length);
    let ask;
    try {
      ask = await request.json();
    } catch {
      return new Response('the body is not JSON', { status: 400 });
    }
    await this.load();
    this.expire(Date.now());
    switch (what) {
      case 'take': return this.take(ask);
      case 'end':
        this.end(ask.run, null);
        return new Response(null, { status: 204 });
      case 'cancel': {
        const request = JSON.stringify(ask.request ?? null);
        let cancelled = 0;
        for (const [run, lease] of this.leases) {
          if (lease.session === (ask.session ?? null) && lease.request === request) {
            this.end(run, 'cancelled');
            cancelled += 1;
          }
        }
        return Response.json({ cancelled });
      }
      default: return new Response(`no such runs request: ${what}`, { status: 404 });
    }
  }

  /**
   * Reads the leases from storage once: requests that arrive while the read is under way wait for
   * the same read (each making its own, the last to end would replace the leases the first took).
   */
  load() {
    this.loading ??= this.storage.get(KEY).then(
      (saved) => { this.leases = new Map(saved ?? []); },
      (e) => { this.loading = null; throw e; },
    );
    return this.loading;
  }

  /** A place for run `ask.run` if fewer than `ask.most` hold one: its stream. */
  take({ run, session, request, most, ms }) {
    if (typeof run !== 'string' || !Number.isInteger(most) || !Number.isFinite(ms)) {
      return new Response('take needs {run: string, most: integer, ms: number}', { status: 400 });
    }
    if (this.leases.size >= most) return new Response('busy\n');
    this.leases.set(run, { session: session ?? null, request: JSON.stringify(request ?? null), until: Date.now() + ms });
    this.save();
    const { readable, writable } = new TransformStream();
    const writer = writable.getWriter();
    this.streams.set(run, writer);
    writer.write(encoder.encode('granted\n')).catch(() => {});
    return new Response(readable, { headers: { 'content-type': 'text/plain' } });
  }

  /** Ends run `run`'s lease, its stream saying `line` first if given. */
  end(run, line) {
    if (this.leases.delete(run)) this.save();
    const writer = this.streams.get(run);
    if (!writer) return;
    this.streams.delete(run);
    if (line) writer.write(encoder.encode(`${line}\n`)).catch(() => {});
    writer.close().catch(() => {});
  }

  /** Ends the leases past their `until` (a run whose isolate went away without ending it). */
  expire(now) {
    for (const [run, lease] of this.leases) {
      if (lease.until < now) this.end(run, null);
    }
  }

  save() {
    this.storage.put(KEY, [...this.leases]).catch?.(() => {});
  }
}
