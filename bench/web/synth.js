// A synthetic catalog shaped like the core's `mcp_sieve::synth::catalog`: 24 groups (the second
// half nested under the first, some two levels deep), 16 tags, two concerns with defaults, about
// 60 % of tools mapped per concern, every 7th tool also in `concernMapping`.
import { rng } from '../filters.mjs';

const CONCERNS = [['security', ['high', 'medium', 'low']], ['cost', ['minimal', 'moderate', 'high']]];
const VERBS = ['get', 'list', 'create', 'update', 'delete', 'search', 'sync', 'export'];

export function synthCatalog(seed, n) {
  const r = rng(seed);
  const below = (k) => Math.floor(r() * k);
  const some = (k, max, prefix) => [...new Set(Array.from({ length: below(max + 1) }, () => `${prefix}${below(k)}`))];
  const concerns = () => Object.fromEntries(CONCERNS.filter(() => r() < 0.6).map(([c, v]) => [c, v[below(3)]]));
  const groups = Array.from({ length: 24 }, (_, g) => (g >= 12
    ? { name: `g${g}`, parent: `g${g % 3 === 0 ? g - 1 : g - 12}` } : { name: `g${g}` }));
  const tools = Array.from({ length: n }, (_, i) => {
    const name = `${VERBS[below(VERBS.length)]}_tool_${i}`;
    const t = {
      name,
      description: `${name}: a synthetic tool that does one thing well for benchmarks.`,
      inputSchema: { type: 'object', properties: { id: { type: 'string', description: 'The identifier of the item to work on.' }, limit: { type: 'integer', description: 'Largest number of results.', minimum: 1 } }, required: ['id'] },
    };
    if (r() < 0.5) t.annotations = { readOnlyHint: r() < 0.5, destructiveHint: r() < 0.3 };
    const g = some(24, 2, 'g');
    if (g.length) t.groups = g;
    const tags = some(16, 4, 't');
    if (tags.length) t.tags = tags;
    const c = concerns();
    if (Object.keys(c).length) t._meta = { concerns: c };
    return t;
  });
  const concernMapping = {};
  for (let i = 0; i < n; i += 7) {
    const c = concerns();
    if (Object.keys(c).length) concernMapping[tools[i].name] = c;
  }
  return {
    groups,
    tags: Array.from({ length: 16 }, (_, t) => ({ name: `t${t}` })),
    concerns: CONCERNS.map(([name, values]) => ({ name, values, default: values[1] })),
    concernMapping,
    tools,
  };
}
