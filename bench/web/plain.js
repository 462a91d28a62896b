// The obvious plain-JavaScript implementation of the filter semantics the package implements
// in Rust (groups ANY with parents, tags ALL, excludeTags NONE, namePatterns globs, concerns:
// unmapped or equal; concernMapping wins over _meta.concerns), with the same preparation a host
// would do once (membership sets, serialized sizes), so only the per-call work is compared.

const GROUPS_META = 'io.modelcontextprotocol/groups';

export function prepare(doc) {
  const parents = new Map((doc.groups ?? []).filter((g) => g.parent).map((g) => [g.name, g.parent]));
  const ancestors = (g) => {
    const out = [g];
    for (let p = parents.get(g); p && !out.includes(p); p = parents.get(p)) out.push(p);
    return out;
  };
  const tools = doc.tools.map((t) => {
    const direct = [...(t.groups ?? []), ...(t._meta?.[GROUPS_META] ?? [])];
    return {
      name: t.name,
      groups: new Set(direct.flatMap(ancestors)),
      tags: new Set(t.tags ?? []),
      concerns: { ...(t._meta?.concerns ?? {}), ...(doc.concernMapping?.[t.name] ?? {}) },
      bytes: new TextEncoder().encode(JSON.stringify(t)).length,
    };
  });
  return { tools, decls: doc.concerns ?? [] };
}

const globRe = (p) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`);

function strings(v, path) {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${path} must be an array of strings`);
  return v;
}

/** `{indices, count, bytes, tokens}` of the tools `filter` keeps. */
export function plainFilter(prepared, filter) {
  const groups = strings(filter.groups, 'filter.groups');
  const tags = strings(filter.tags, 'filter.tags');
  const excludeTags = strings(filter.excludeTags, 'filter.excludeTags');
  const patterns = strings(filter.namePatterns, 'filter.namePatterns').map(globRe);
  const concerns = Object.entries(filter.concerns ?? {}).map(([k, v]) => {
    const decl = prepared.decls.find((d) => d.name === k);
    if (decl && !decl.values.map(String).includes(String(v))) throw new Error(`invalid value for concern ${k}`);
    return [k, String(v)];
  });
  const out = [];
  let bytes = 0;
  const tools = prepared.tools;
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i];
    if (groups.length && !groups.some((g) => t.groups.has(g))) continue;
    if (!tags.every((g) => t.tags.has(g))) continue;
    if (excludeTags.some((g) => t.tags.has(g))) continue;
    if (patterns.length && !patterns.some((re) => re.test(t.name))) continue;
    if (!concerns.every(([k, v]) => t.concerns[k] === undefined || String(t.concerns[k]) === v)) continue;
    out.push(i);
    bytes += t.bytes;
  }
  bytes += Math.max(out.length - 1, 0) + '{"tools":[]}'.length;
  return { indices: Uint32Array.from(out), count: out.length, bytes, tokens: Math.ceil(bytes / 4) };
}
