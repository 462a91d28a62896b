// A web host using the npm package as its README and docs/src/package.md show; `tsc --noEmit` must accept every line,
// and each `@ts-expect-error` proves a misuse is caught by the hand-written types.
import init, {
  Sieve, McpClient, filterTasks, saveConcernPreferences, loadConcernPreferences, clearConcernPreferences,
  type CatalogDocument, type Filter, type Selection, type ListResult, type Facets, type Task, type TaskQuery,
  type SieveError, type Kind, type ConcernConfig, type SearchResult, type Explanation,
} from 'mcp-sieve';

export async function host(doc: CatalogDocument): Promise<void> {
  await init();
  const sieve = Sieve.fromCatalog(doc);
  const filter: Filter = {
    groups: ['calendar'], tags: ['read-only'], excludeTags: ['destructive'], namePatterns: ['*_event'],
    concerns: { security: 'high', cost: 2 }, expr: { not: { any: [{ tag: 'beta' }, { group: 'admin' }] } },
  };
  const sel: Selection = sieve.filter(filter);
  const indices: Uint32Array = sel.indices;
  const n: number = sel.count + sel.total + sel.bytes + sel.tokens;
  const prompts: Selection = sieve.filter({}, 'prompts');
  const list: ListResult = sieve.list(filter, 'tools');
  const names: string[] = list.items.map((t: { name: string }) => t.name);
  const objects: unknown[] = sieve.items(indices);
  const facets: Facets = sieve.facets(filter);
  const counts: number[] = [
    ...facets.groups.map((g) => g.count),
    ...facets.tags.map((t) => t.require + t.exclude),
    ...facets.concerns.flatMap((c) => c.values.map((v) => v.count)),
  ];
  const { bytes, tokens } = Sieve.size(list.items);
  const id: number = sieve.addFilter((item, kind: Kind) => kind !== 'tools' || !item.name.startsWith('admin_'), { priority: 10, kinds: ['tools'] });
  const why: Explanation = sieve.explain('send_email', filter);
  const parts: string[] = why.reasons.map((r) => (r.code === 'filter' ? r.field : r.code));
  const hidden: boolean = !why.visible && why.cause !== 'catalog';
  sieve.removeFilter(id);
  const fromLists = Sieve.fromLists({ tools: [] }, { groups: [{ name: 'g', parent: 'h' }] }, undefined, [{ name: 'security', values: ['high', 'low'] }]);
  const resolved = fromLists.resolveConcerns({ security: 'high' });
  const eff: Record<string, string> = resolved.effective;

  const client: McpClient = await McpClient.connect('/mcp', { concerns: { security: 'high' }, headers: { Authorization: 'Bearer x' } });
  const session: string | undefined = client.sessionId;
  await client.updateConcerns({ security: null });
  const { tools } = await client.listAll('tools/list', { filter: { groups: ['email'] } });
  const live: Sieve = await client.load();
  const query: TaskQuery = { status: ['working'], orderBy: 'createdAt', order: 'asc', createdAfter: '2025-11-20T10:00:00Z' };
  const { tasks } = await client.listTasks(query);
  const ordered: Task[] = filterTasks(tasks, query);
  const other: Sieve = await Sieve.fromServer('https://example.com/mcp');

  const server = 'https://example.com/mcp';
  const prefs: ConcernConfig = loadConcernPreferences(server) ?? {};
  saveConcernPreferences(server, prefs);
  clearConcernPreferences(server);

  try {
    sieve.filter({ groups: ['x'] });
  } catch (e) {
    const err = e as SieveError;
    const code: number = err.code;
    console.log(err.message, code, err.data);
  }

  // @ts-expect-error groups is an array of strings
  sieve.filter({ groups: 'calendar' });
  // @ts-expect-error the filter language has no such field
  sieve.filter({ group: ['calendar'] });
  // @ts-expect-error not a kind of primitive
  sieve.filter({}, 'widgets');
  // @ts-expect-error not a task status
  filterTasks([], { status: ['sleeping'] });
  // @ts-expect-error the order is asc or desc
  filterTasks([], { order: 'up' });
  // @ts-expect-error an explanation's cause is one of four kinds
  const wrong: Explanation['cause'] = 'policy';
  // @ts-expect-error callbacks return a boolean
  sieve.addFilter(() => 'yes');
  const toolset = sieve.export({ format: 'anthropic', filter: { groups: ['email'] }, pinned: ['send_email'] });
  const endpoint: string = toolset.mcp_servers[0].url;
  const namespaces = sieve.export({ format: 'openai' }).tools.filter((t) => t.type === 'namespace');
  // @ts-expect-error an OpenAI export has no mcp_servers
  sieve.export({ format: 'openai' }).mcp_servers;
  // @ts-expect-error not a model API this package exports for
  sieve.export({ format: 'gemini' });
  console.log(endpoint, namespaces);
  // Search with the host's sentence vectors (dim numbers per tool, in names' order).
  sieve.setToolVectors(new Float32Array(2 * 384), 384, ['create_event', 'list_events']);
  const found: SearchResult = sieve.search('book a meeting', { k: 3, queryVector: new Float32Array(384) });
  const best: string | undefined = found.ranking === 'hybrid' ? found.tools[0]?.name : undefined;
  const byWords: number = sieve.search('book a meeting').tools.length;
  console.log(best, byWords);
  // @ts-expect-error k is a number
  sieve.search('x', { k: '3' });

  console.log(n, prompts, names, objects, counts, bytes, tokens, eff, session, tools, live, ordered, other, parts, hidden, wrong);
}
