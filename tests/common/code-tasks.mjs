//! The three multi-step tasks of code mode (issue 62 item 4), written once for the benchmark
//! (bench/code-mode.mjs: what a model reads and writes per mode) and the test that an unmodified
//! client completes them through `run_code` (tests/e2e/code-mode-tasks.test.mjs, natively and in
//! the Worker): read twenty records and return the three that match; fetch a page and a summary of
//! it; create an item from another's fields — over the demo catalog (the embedded default,
//! catalog/default.json; no prefix) and over a gateway in front of
//! @modelcontextprotocol/server-everything (prefix `ev_`).
//!
//! Each task has the `query` and `names` a model would pass to find_tools and describe_tools, the
//! `steps(call)` it would make call by call (direct and search mode; `call(name, args)` resolves
//! to a tool's answer as a program sees it), the `program` it would send to `run_code` doing the
//! same, the number of tool `calls` that program makes, and `check(result)`, which throws an
//! assertion error naming what is wrong unless the result is the task's one right answer (the
//! same from every mode).
import assert from 'node:assert/strict';

/** The twenty records of the demo's task a. */
export const RECORDS = [
  'quarterly revenue grew in every region except the north',
  'ok',
  'the build failed twice on the arm runner before passing on the third attempt today',
  'lunch at noon',
  'customer asked for a refund of the duplicated march invoice',
  'meeting moved',
  'please review the pull request that splits the worker into folders before friday',
  'thanks',
  'the audit log shows three denied calls from the staging token overnight',
  'see above',
  'new hire starts monday and needs access to the billing and ci groups',
  'done',
  'latency p50 is stable but p99 doubled after the last deploy of the gateway service',
  'fyi',
  'the vendor contract renews in june unless we give ninety days notice in writing to legal',
  'noted',
  'two',
  'backup finished',
  'sure',
  'reminder',
];

/** The text of a tool's answer (its content, or the content array a program sees). */
export const textOf = (r) => (Array.isArray(r) ? r : r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

/** What a demo tool with no backend answers (src/protocol/demo.rs `simulated`). */
const simulated = (name, args) => `[simulated] ${name} is part of the demo catalog and has no backend here; it was called with ${JSON.stringify(args)}`;

/** The tasks over the demo catalog (`prefix` '') or the gateway in front of server-everything. */
export function codeTasks(prefix) {
  const p = (n) => `${prefix}${n}`;
  if (!prefix) {
    const page = simulated('fetch_page', { url: 'https://example.com/report' });
    const message = simulated('read_message', { messageId: 'msg-42' });
    return [
      {
        id: 'a', label: 'read 20 records, return the 3 with the most words',
        query: 'count words in a text', names: ['text_stats'], calls: 20,
        async steps(call) {
          const stats = [];
          for (const text of RECORDS) stats.push({ text, words: (await call('text_stats', { text })).words });
          return stats.sort((x, y) => y.words - x.words).slice(0, 3).map((s) => s.text);
        },
        program: `const records = ${JSON.stringify(RECORDS)};
const stats = [];
for (const text of records) stats.push({ text, words: (await tools.text_stats({ text })).words });
return stats.sort((x, y) => y.words - x.words).slice(0, 3).map((s) => s.text);`,
        // 16 words, then the two of 15 in the records' order (a stable sort).
        check: (r) => assert.deepEqual(r, [RECORDS[14], RECORDS[2], RECORDS[12]], 'the three records with the most words'),
      },
      {
        id: 'b', label: 'fetch a page and a summary of it (fetch_page, text_stats)',
        query: 'fetch a web page and count its words', names: ['fetch_page', 'text_stats'], calls: 2,
        async steps(call) {
          const page = textOf(await call('fetch_page', { url: 'https://example.com/report' }));
          const s = await call('text_stats', { text: page });
          return { words: s.words, lead: page.slice(0, 60) };
        },
        program: `const page = (await tools.fetch_page({ url: 'https://example.com/report' })).filter((c) => c.type === 'text').map((c) => c.text).join('\\n');
const s = await tools.text_stats({ text: page });
return { words: s.words, lead: page.slice(0, 60) };`,
        check: (r) => assert.deepEqual(r, { words: page.split(/\s+/).length, lead: page.slice(0, 60) }, "the page's first 60 characters and its word count"),
      },
      {
        id: 'c', label: 'create an item from another\'s fields (read_message, draft_reply)',
        query: 'read an email and draft a reply', names: ['read_message', 'draft_reply'], calls: 2,
        async steps(call) {
          const m = textOf(await call('read_message', { messageId: 'msg-42' }));
          const d = await call('draft_reply', { messageId: 'msg-42', body: `Thanks, noted: ${m.slice(0, 40)}` });
          return textOf(d);
        },
        program: `const m = (await tools.read_message({ messageId: 'msg-42' })).filter((c) => c.type === 'text').map((c) => c.text).join('\\n');
const d = await tools.draft_reply({ messageId: 'msg-42', body: 'Thanks, noted: ' + m.slice(0, 40) });
return d.filter((c) => c.type === 'text').map((c) => c.text).join('\\n');`,
        // The draft made with the message's id and a body quoting the message read (its
        // arguments as JSON, in whatever order of keys the server writes them).
        check: (r) => {
          const lead = simulated('draft_reply', {}).slice(0, -2);
          assert.ok(typeof r === 'string' && r.startsWith(lead), `a draft: ${JSON.stringify(r)}`);
          assert.deepEqual(JSON.parse(r.slice(lead.length)), { messageId: 'msg-42', body: `Thanks, noted: ${message.slice(0, 40)}` }, 'the draft made from the message');
        },
      },
    ];
  }
  return [
    {
      id: 'a', label: 'read 20 resources, return the 3 whose number is a multiple of 6',
      query: 'get a resource by id', names: [p('get-resource-reference')], calls: 20,
      async steps(call) {
        const hits = [];
        for (let id = 1; id <= 20; id++) {
          const r = await call(p('get-resource-reference'), { resourceId: id });
          const res = r.find((c) => c.type === 'resource').resource;
          if (Number(res.text.match(/^Resource (\d+):/)[1]) % 6 === 0) hits.push(res.uri);
        }
        return hits;
      },
      program: `const hits = [];
for (let id = 1; id <= 20; id++) {
  const r = await tools['${p('get-resource-reference')}']({ resourceId: id });
  const res = r.find((c) => c.type === 'resource').resource;
  if (Number(res.text.match(/^Resource (\\d+):/)[1]) % 6 === 0) hits.push(res.uri);
}
return hits;`,
      check: (r) => assert.deepEqual(r, [6, 12, 18].map((n) => `demo://resource/dynamic/text/${n}`), 'resources 6, 12 and 18'),
    },
    {
      id: 'b', label: 'fetch a page of links and a summary (its first text resource)',
      query: 'list resource links and read a resource', names: [p('get-resource-links'), p('get-resource-reference')], calls: 2,
      async steps(call) {
        const links = (await call(p('get-resource-links'), { count: 10 })).filter((c) => c.type === 'resource_link');
        const first = links.find((l) => /text/.test(l.mimeType ?? ''));
        const id = Number(first.uri.match(/(\d+)$/)[1]);
        const r = await call(p('get-resource-reference'), { resourceId: id });
        return { links: links.length, first: r.find((c) => c.type === 'resource').resource.text.slice(0, 20) };
      },
      program: `const links = (await tools['${p('get-resource-links')}']({ count: 10 })).filter((c) => c.type === 'resource_link');
const first = links.find((l) => /text/.test(l.mimeType ?? ''));
const id = Number(first.uri.match(/(\\d+)$/)[1]);
const r = await tools['${p('get-resource-reference')}']({ resourceId: id });
return { links: links.length, first: r.find((c) => c.type === 'resource').resource.text.slice(0, 20) };`,
      check: (r) => assert.deepEqual(r, { links: 10, first: 'Resource 1: This is ' }, 'a page of ten links and the start of the first text resource'),
    },
    {
      id: 'c', label: 'create an item from another\'s fields (get-structured-content, echo)',
      query: 'weather for a city and echo a message', names: [p('get-structured-content'), p('echo')], calls: 2,
      async steps(call) {
        const w = await call(p('get-structured-content'), { location: 'Chicago' });
        const e = await call(p('echo'), { message: `Chicago: ${w.conditions}, ${w.temperature} C` });
        return textOf(e);
      },
      program: `const w = await tools['${p('get-structured-content')}']({ location: 'Chicago' });
const e = await tools['${p('echo')}']({ message: 'Chicago: ' + w.conditions + ', ' + w.temperature + ' C' });
return e.filter((c) => c.type === 'text').map((c) => c.text).join('\\n');`,
      check: (r) => assert.equal(r, 'Echo: Chicago: Light rain / drizzle, 36 C', "the message made from Chicago's weather"),
    },
  ];
}
