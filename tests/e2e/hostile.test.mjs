// Hostile-input catalogue against the real Worker (or the native server with SIEVE_TARGET=native):
// every case in hostile-cases.json names its expected HTTP status and JSON-RPC code, and after
// each case the server must still answer a normal request correctly. The runner and the special
// bodies are in hostile-runner.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { runCatalogue } from './hostile-runner.mjs';

const CASES = JSON.parse(readFileSync(new URL('./hostile-cases.json', import.meta.url), 'utf8'));

test(`hostile-input catalogue (${CASES.length} cases)`, { timeout: 300_000 }, async (t) => {
  assert.ok(CASES.length >= 50);
  const passed = await runCatalogue(t, CASES);
  console.log(`hostile-input catalogue: ${passed} of ${CASES.length} cases passed, server still serving after each`);
});
