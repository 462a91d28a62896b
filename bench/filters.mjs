//! The random `tools/list` filters of the load benchmark, and the filter semantics of
//! ARCHITECTURE.md ("The filter language", "Concerns") written plainly in JS (groups ANY with
//! transitive parents, tags ALL, excludeTags NONE, concerns: no mapping or an equal mapped
//! value), shared by the reference servers and the edge peers of the load benchmark (no
//! dependencies, so every bundle can import it).

/** A seeded generator (mulberry32), so every server sees the same filter sequence. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = (r, prefix, n, max) => {
  const out = new Set();
  const k = Math.floor(r() * (max + 1));
  for (let i = 0; i < k; i++) out.add(`${prefix}${Math.floor(r() * n)}`);
  return [...out];
};

/** `count` random filters over the synthetic catalog's 24 groups, 16 tags and 2 concerns. */
export function randomFilters(seed, count) {
  const r = rng(seed);
  const filters = [];
  for (let i = 0; i < count; i++) {
    const f = {};
    const groups = pick(r, 'g', 24, 3);
    if (groups.length) f.groups = groups;
    const tags = pick(r, 't', 16, 1);
    if (tags.length) f.tags = tags;
    if (r() < 0.5) f.excludeTags = pick(r, 't', 16, 1);
    if (r() < 0.3) f.concerns = { security: ['high', 'medium', 'low'][Math.floor(r() * 3)] };
    filters.push(f);
  }
  return filters;
}

/**
 * `count` random filters of the shape issue 63's outside run sent ("plain"): each one of four
 * kinds in turn at random — groups (ANY of 1–2), tags (ALL of 1–2), both, or none — with no
 * excludeTags and no concerns (the catalog's concern defaults apply to every request).
 */
export function plainFilters(seed, count) {
  const r = rng(seed);
  const some = (prefix, n) => {
    const out = new Set();
    const k = 1 + Math.floor(r() * 2);
    while (out.size < k) out.add(`${prefix}${Math.floor(r() * n)}`);
    return [...out];
  };
  const filters = [];
  for (let i = 0; i < count; i++) {
    const kind = Math.floor(r() * 4); // 0 groups, 1 tags, 2 both, 3 none
    const f = {};
    if (kind === 0 || kind === 2) f.groups = some('g', 24);
    if (kind === 1 || kind === 2) f.tags = some('t', 16);
    filters.push(f);
  }
  return filters;
}

/** Compiles a catalog document into a matcher: `select(filter)` → tools in catalog order. */
export function compile(doc) {
  const parent = new Map((doc.groups ?? []).filter((g) => g.parent).map((g) => [g.name, g.parent]));
  const expand = (groups) => {
    const out = new Set();
    for (let g of groups) {
      for (let hops = 0; g && !out.has(g) && hops < 64; hops++) { out.add(g); g = parent.get(g); }
    }
    return out;
  };
  const mapping = doc.concernMapping ?? {};
  const tools = doc.tools.map((t) => ({
    json: t,
    groups: expand([...(t.groups ?? []), ...(t._meta?.['io.modelcontextprotocol/groups'] ?? [])]),
    tags: new Set(t.tags ?? []),
    concerns: { ...(t._meta?.concerns ?? {}), ...(mapping[t.name] ?? {}) },
  }));
  const select = (filter = {}) => tools.filter((t) => {
    if (filter.groups?.length && !filter.groups.some((g) => t.groups.has(g))) return false;
    if (filter.tags?.some((g) => !t.tags.has(g))) return false;
    if (filter.excludeTags?.some((g) => t.tags.has(g))) return false;
    for (const [c, v] of Object.entries(filter.concerns ?? {})) {
      if (c in t.concerns && t.concerns[c] !== v) return false;
    }
    return true;
  });
  return { select, size: tools.length };
}

/**
 * The `tools/list` answer of the reference servers over catalog document `doc`: the tools that
 * match `params.filter`, one page of the document's page size (as mcp-sieve pages), from the
 * offset in `params.cursor`; `nextCursor` is the next offset while tools remain.
 */
export function lister(doc) {
  const catalog = compile(doc);
  const pageSize = doc.options?.pageSize ?? 50;
  return (params) => {
    const matched = catalog.select(params?.filter ?? {});
    const start = params?.cursor ? Number.parseInt(params.cursor, 10) : 0;
    const tools = matched.slice(start, start + pageSize).map((t) => t.json);
    const next = start + pageSize < matched.length ? String(start + pageSize) : undefined;
    return { tools, ...(next ? { nextCursor: next } : {}) };
  };
}
