// Issue 13, items 4, 8 and 9 as hostile-input cases (tests/security/hostile-cases.json, the
// format of tests/e2e/hostile-cases.json): filter breadth (10,000 patterns, expression nodes,
// groups, tags, task ids) and oversized initialize fields are -32602 naming the field and a
// limit; forged well-formed session ids are 404. As each fix lands, its cases move to
// tests/e2e/hostile-cases.json (issue 13, item 12), which runs in the test command.
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { runCatalogue } from '../e2e/hostile-runner.mjs';

const CASES = JSON.parse(readFileSync(new URL('./hostile-cases.json', import.meta.url), 'utf8'));

test(`security hostile-input cases (${CASES.length})`, { timeout: 300_000 }, async (t) => {
  const passed = await runCatalogue(t, CASES);
  console.log(`security hostile-input cases: ${passed} of ${CASES.length} passed`);
});
