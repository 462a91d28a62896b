#!/usr/bin/env node
//! A stand-in for the workerd binary that wrangler dev (miniflare) runs, named by
//! `MINIFLARE_WORKERD_PATH`: it adds the V8 flags of `WORKERD_V8_FLAGS` (space-separated) to the
//! binary Cap'n Proto configuration miniflare writes on stdin (`Config.v8Flags`, pointer 2 of the
//! root struct, appended at the end of its one segment), then runs the real workerd
//! (`WORKERD_REAL`, default the `workerd` package's) with the same arguments and the control
//! descriptor 3, its stdout appended to `WORKERD_STDOUT` when set (V8's traces print there).
//! Used by bench/cold-trace.mjs; a tool, not a test.
import { openSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const flags = (process.env.WORKERD_V8_FLAGS ?? '').split(' ').filter(Boolean);
const config = readFileSync(0);
if (config.readUInt32LE(0) !== 0) throw new Error('workerd-v8-flags: a configuration of more than one segment');
const SEG = 8; // the segment's first byte: after the segment count and its one size
const words = config.readUInt32LE(4);
const root = config.readBigUInt64LE(SEG);
const start = 1 + Number(BigInt.asIntN(30, (root & 0xffffffffn) >> 2n));
const [dataWords, pointers] = [Number((root >> 32n) & 0xffffn), Number(root >> 48n)];
const at = start + dataWords + 2; // Config.v8Flags
if (pointers < 3 || config.readBigUInt64LE(SEG + 8 * at) !== 0n) throw new Error('workerd-v8-flags: no empty v8Flags in the configuration');
// Appended: a list of N pointers, then each flag's text (NUL-terminated), each padded to a word.
const texts = flags.map((f) => Buffer.from(`${f}\0`));
const sizes = texts.map((t) => Math.ceil(t.length / 8));
const extra = flags.length + sizes.reduce((a, b) => a + b, 0);
const out = Buffer.alloc(config.length + 8 * extra);
config.copy(out);
out.writeUInt32LE(words + extra, 4);
/** A list pointer at word `from` to word `to`: elements of size code `size` (6 pointers, 2 bytes). */
const list = (from, to, size, count) =>
  out.writeBigUInt64LE((BigInt(((to - from - 1) << 2) | 1) & 0xffffffffn) | (BigInt(size) << 32n) | (BigInt(count) << 35n), SEG + 8 * from);
if (flags.length) list(at, words, 6, flags.length);
let next = words + flags.length;
texts.forEach((t, i) => {
  list(words + i, next, 2, t.length);
  t.copy(out, SEG + 8 * next);
  next += sizes[i];
});
const real = process.env.WORKERD_REAL || createRequire(import.meta.url)('workerd').default;
const stdout = process.env.WORKERD_STDOUT ? openSync(process.env.WORKERD_STDOUT, 'a') : 'inherit';
const child = spawn(real, process.argv.slice(2), { stdio: ['pipe', stdout, 'inherit', 3] });
child.stdin.end(out);
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => process.exit(code ?? 1));
