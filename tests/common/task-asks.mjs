// What a client sees of server-everything's `simulate-research-query` with `ambiguous: true` run
// as a task behind the gateway (tests/e2e/task-asks*.test.mjs): its one question inline in
// tasks/get, and the finished task's result naming the answer given.
import assert from 'node:assert/strict';

/** The answer the tests give to the question: the snake, not the language. */
export const SNAKE = { action: 'accept', content: { interpretation: 'snake' } };

/** Asserts that `task` (a tasks/get result) waits for input with its one question inline; its key. */
export function theQuestion(task) {
  assert.equal(task.status, 'input_required', JSON.stringify(task));
  const keys = Object.keys(task.inputRequests ?? {});
  assert.equal(keys.length, 1, `one question inline: ${JSON.stringify(task)}`);
  const question = task.inputRequests[keys[0]];
  assert.equal(question.method, 'elicitation/create');
  assert.match(question.params.message, /"python" could have multiple interpretations/);
  return keys[0];
}

/**
 * Polls `get()` (a task: a tasks/get result) every 250 ms until `done(task)` holds or `ms` have
 * passed, each task seen checked by `each`: the last one (the caller asserts on it).
 */
export async function untilTask(get, done, { ms = 30_000, each = () => {} } = {}) {
  const deadline = Date.now() + ms;
  for (;;) {
    const task = await get();
    each(task);
    if (done(task) || Date.now() > deadline) return task;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Asserts that `task` (a tasks/get result) completed with a result that reflects [`SNAKE`]. */
export function answeredSnake(task) {
  assert.equal(task.status, 'completed', JSON.stringify(task).slice(0, 400));
  assert.match(task.result?.content?.[0]?.text ?? '', /Research Report: python \(snake\)/,
    `the result reflects the answer: ${JSON.stringify(task).slice(0, 400)}`);
}
