// `sieve.export(options)`, appended to the wasm-bindgen module (mcp_sieve.js) by
// scripts/package.mjs, so every entry of the package has it and the .wasm does not grow. A port of
// the core's src/export.rs, which the CLI (`mcp-sieve export`) uses: tests/e2e/export.test.mjs
// checks that both write the same JSON for the same catalog and views, and type-checks it
// against the providers' SDK types. Change both together.
Sieve.prototype.export = function exportFor(options) {
  const { format, filter, pinned, url = 'http://127.0.0.1:8788/mcp', name = 'mcp-sieve' } = options ?? {};
  if (format !== 'anthropic' && format !== 'openai') {
    const e = new Error(`options.format must be "anthropic" or "openai", got ${JSON.stringify(format)}`);
    e.code = -32602;
    throw e;
  }
  if (pinned !== undefined && !(Array.isArray(pinned) && pinned.every((p) => typeof p === 'string'))) {
    const e = new Error('options.pinned must be an array of tool names');
    e.code = -32602;
    throw e;
  }
  const tools = this.list(filter).items;
  const str = (v, k) => (v && typeof v[k] === 'string' ? v[k] : undefined);
  const deferred = (n) => pinned !== undefined && !pinned.includes(n);
  const ident = (s) => Array.from(s, (c) => (/^[A-Za-z0-9-]$/.test(c) ? c : '_')).slice(0, 64).join('') || '_';
  let anyDeferred = false;
  const out = [];
  if (format === 'anthropic') {
    const configs = {};
    for (const tool of tools) {
      const n = str(tool, 'name');
      if (n === undefined) continue;
      const defer = deferred(n);
      anyDeferred ||= defer;
      configs[n] = { enabled: true, defer_loading: defer };
    }
    out.push({ type: 'mcp_toolset', mcp_server_name: name, default_config: { enabled: false }, configs });
    if (anyDeferred) out.push({ type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' });
    return { betas: ['mcp-client-2025-11-20'], mcp_servers: [{ type: 'url', name, url }], tools: out };
  }
  const order = new Map();
  for (const tool of tools) {
    const g = Array.isArray(tool.groups) && typeof tool.groups[0] === 'string' ? tool.groups[0] : 'tools';
    if (!order.has(g)) order.set(g, []);
    order.get(g).push(tool);
  }
  const groups = this.groups();
  for (const [group, members] of order) {
    const declared = groups.find((g) => g.name === group);
    const description = str(declared, 'description') ?? str(declared, 'title') ?? `Tools in the group ${group}`;
    const parts = Math.ceil(members.length / 10);
    for (let i = 0; i < parts; i++) {
      const functions = members.slice(i * 10, i * 10 + 10).map((tool) => {
        const n = str(tool, 'name') ?? '';
        const defer = deferred(n);
        anyDeferred ||= defer;
        const f = { type: 'function', name: ident(n) };
        const d = str(tool, 'description') ?? str(tool, 'title');
        if (d !== undefined) f.description = d;
        f.parameters = 'inputSchema' in tool ? tool.inputSchema : { type: 'object' };
        f.defer_loading = defer;
        return f;
      });
      out.push(
        parts > 1
          ? { type: 'namespace', name: ident(`${group}_${i + 1}`), description: `${description} (part ${i + 1} of ${parts})`, tools: functions }
          : { type: 'namespace', name: ident(group), description, tools: functions },
      );
    }
  }
  if (anyDeferred) out.push({ type: 'tool_search' });
  return { tools: out };
};
