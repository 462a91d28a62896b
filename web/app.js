// mcp-sieve demo page.
//
// At load: `McpClient.connect` (initialize, Mcp-Session-Id, notifications/initialized carrying
// the concern preferences stored for this server), then `client.load()` lists tools, groups,
// tags and concern declarations into a `Sieve`. Every click filters client-side with
// `sieve.list` and recounts `sieve.facets`; concern changes are also stored
// (`saveConcernPreferences`) and sent with `concerns/update`, and the server's own `tools/list`
// for the session is shown beside the page's count. Hidden tools are listed with why (hover, from
// `sieve.explain`), and the selection's export for a model API (`sieve.export`) is shown in its
// panel. `document.body.dataset.ready = "true"` marks the first rendered list (tests wait on it);
// a failure shows in `#error`.

// `mcp-sieve` is the npm package, mapped by index.html's import map to its browser entry (which
// fetches and instantiates the wasm when imported), as a host without a bundler imports it.
import { McpClient, filterTasks, loadConcernPreferences, saveConcernPreferences } from 'mcp-sieve';
import {
  $, el, fmt, renderConcerns, renderFacets, renderGroupTree, renderHidden, renderTags, renderTaskControls, renderTasks,
  renderTools,
} from './dom.js';

const CLIENT_INFO = { name: 'mcp-sieve-demo-page', version: '0.1.0' };
const params = new URLSearchParams(location.search);
const DEFAULT_URL = new URL(params.get('server') ?? '/mcp', location.href).href;

let state = null; // { client, sieve, total, url }
let serverCheck = 0; // newest server check, so a slow answer never overwrites a newer one

// ---------------------------------------------------------------- the filter the controls describe

const ticked = (selector) => [...document.querySelectorAll(selector)].filter((i) => i.checked).map((i) => i.value);

/** The concern configuration the controls describe: `{name: value}` for each ticked concern. */
function chosenConcerns() {
  const out = {};
  for (const box of document.querySelectorAll('input[data-concern-on]')) {
    if (!box.checked) continue;
    const name = box.dataset.concernOn;
    out[name] = document.querySelector(`select[data-concern="${CSS.escape(name)}"]`).value;
  }
  return out;
}

function currentFilter() {
  const filter = {};
  const groups = ticked('input[data-group]');
  const tags = ticked('input[data-tag]');
  const excludeTags = ticked('input[data-exclude-tag]');
  const search = $('search').value.trim();
  const concerns = chosenConcerns();
  if (groups.length) filter.groups = groups;
  if (tags.length) filter.tags = tags;
  if (excludeTags.length) filter.excludeTags = excludeTags;
  if (search) filter.namePatterns = [`*${search}*`];
  if (Object.keys(concerns).length) filter.concerns = concerns;
  return filter;
}

// ---------------------------------------------------------------- rendering

/** The view URL (`/mcp?groups=…`) a client that sends no filter uses for `filter`. */
function viewUrl(filter) {
  const url = new URL(state.url);
  const q = new URLSearchParams();
  if (filter.groups) q.set('groups', filter.groups.join(','));
  if (filter.tags) q.set('tags', filter.tags.join(','));
  if (filter.excludeTags) q.set('excludeTags', filter.excludeTags.join(','));
  if (filter.namePatterns) q.set('names', filter.namePatterns.join(','));
  for (const [k, v] of Object.entries(filter.concerns ?? {})) q.set(`concerns.${k}`, v);
  if ($('view-search').checked) q.set('mode', 'search');
  url.search = q.toString();
  return url.href;
}

/** The search-mode `tools/list` that `url` serves, as one 2026-07-28 stateless request. */
async function searchModeList(url) {
  const version = '2026-07-28';
  const message = {
    jsonrpc: '2.0', id: 1, method: 'tools/list',
    params: { _meta: {
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
      'io.modelcontextprotocol/clientCapabilities': {},
    } },
  };
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': version, 'Mcp-Method': 'tools/list' },
    body: JSON.stringify(message),
  });
  const answer = await response.json();
  if (!answer.result) throw new Error(`${url} answered tools/list with ${JSON.stringify(answer.error ?? answer)}`);
  return answer.result.tools;
}

function renderView(filter, view) {
  const url = viewUrl(filter);
  $('view-url').textContent = url;
  $('view-url').dataset.url = url;
  const saves = (tokens) => `saves ~${fmt(state.total.tokens - tokens)} of ~${fmt(state.total.tokens)} tokens in every conversation.`;
  $('view-saves').textContent = `${fmt(view.count)} of ${fmt(state.total.count)} tools: ${saves(view.tokens)}`;
  if ($('view-search').checked) {
    const shown = $('view-saves').textContent;
    searchModeList(url).then((tools) => {
      if ($('view-url').dataset.url !== url) return; // a newer selection
      // About four bytes a token, the estimate the package uses for tool definitions.
      const tokens = Math.ceil(JSON.stringify(tools).length / 4);
      $('view-saves').textContent = `Search mode: the client lists ${tools.map((t) => t.name).join(', ')} ` +
        `(~${fmt(tokens)} tokens) and finds among ${fmt(view.count)} tools: ${saves(tokens)}`;
    }).catch((e) => { $('view-saves').textContent = `${shown} (search mode: ${e.message})`; });
  }
  const config = { mcpServers: { 'mcp-sieve': { type: 'http', url } } };
  $('view-config').textContent = JSON.stringify(config, null, 2);
}

/** Why each tool outside `view` is hidden: the package's `explain`, each part of `filter` that leaves it out on its own. */
function hiddenWhy(filter, view) {
  const shown = new Set(view.items.map((t) => t.name));
  const hidden = state.sieve.list({}).items.filter((t) => !shown.has(t.name));
  return hidden.map((tool) => ({ tool, why: state.sieve.explain(tool.name, filter).reasons.map((r) => inWords(r, tool.tags ?? [])) }));
}

/** One of `explain`'s reasons in the page's words (`tags`: the tool's). */
function inWords(r, tags) {
  if (r.code.startsWith('concern:')) return `concern: ${r.code.slice('concern:'.length)}=${r.configured} hides it (the tool's is ${r.mapped ?? 'unset'})`;
  if (r.code !== 'filter') return `${r.code} leaves it out`;
  const part = r.filter[r.field];
  switch (r.field) {
    case 'groups': return `groups: in none of ${part.join(', ')}`;
    case 'tags': return `tags: lacks ${part.filter((t) => !tags.includes(t)).join(', ')}`;
    case 'excludeTags': return `excludeTags: has ${part.filter((t) => tags.includes(t)).join(', ')}`;
    case 'namePatterns': return `name: does not match ${part.join(', ')}`;
    default: return `${r.field}: leaves it out`;
  }
}

/** The chosen format's export of `filter` (search mode: everything deferred). */
function renderExport(filter) {
  const url = new URL(viewUrl(filter));
  // The provider must see the tools themselves (it searches them itself): the list-mode URL.
  url.searchParams.delete('mode');
  const format = $('export-format').value;
  const out = state.sieve.export({ format, filter, url: url.href, ...($('view-search').checked ? { pinned: [] } : {}) });
  $('export-json').textContent = JSON.stringify(out, null, 2);
  $('export-json').dataset.format = format;
}

function update() {
  if (!state) return;
  try {
    const filter = currentFilter();
    const view = state.sieve.list(filter);
    renderTools(view, state.total);
    renderHidden(hiddenWhy(filter, view));
    renderView(filter, view);
    renderExport(filter);
    renderFacets(state.sieve.facets(filter));
    clearError();
  } catch (error) {
    showError('Filtering failed', error);
  }
}

/** Asks the server for its tools/list under this session's concerns and shows the count. */
async function checkServer() {
  const mine = ++serverCheck;
  const { client } = state;
  const sent = client.concerns;
  const { tools } = await client.listAll('tools/list');
  if (mine !== serverCheck) return;
  const text = Object.entries(sent).map(([k, v]) => `${k}=${v}`).join(', ') || 'none';
  const box = $('server-check');
  box.dataset.serverCount = String(tools.length);
  box.dataset.concerns = JSON.stringify(sent);
  box.textContent = `Session concerns sent to the server: ${text} · the server lists ${fmt(tools.length)} tools for them.`;
}

/** Stores the concern choice for this server and sends what changed with concerns/update. */
async function concernsChanged() {
  const chosen = chosenConcerns();
  saveConcernPreferences(state.url, chosen);
  const sent = state.client.concerns;
  const update = {};
  for (const k of Object.keys(sent)) if (!(k in chosen)) update[k] = null;
  for (const [k, v] of Object.entries(chosen)) if (sent[k] !== v) update[k] = v;
  if (Object.keys(update).length) await state.client.updateConcerns(update);
  await checkServer();
}

// ---------------------------------------------------------------- tasks

function taskQuery() {
  const query = { orderBy: $('task-order-by').value, order: $('task-order').value };
  const status = ticked('input[data-task-status]');
  if (status.length) query.status = status;
  const after = $('task-created-after').value;
  if (after) query.createdAfter = new Date(after).toISOString();
  return query;
}

async function refreshTasks() {
  if (!state) return;
  if (!state.client.initializeResult?.capabilities?.tasks?.list) {
    $('task-summary').textContent = 'This server does not list tasks.';
    return;
  }
  try {
    const { tasks } = await state.client.listTasks();
    state.tasks = tasks;
    renderTasks(filterTasks(tasks, taskQuery()), tasks.length);
  } catch (error) {
    showError('Listing tasks failed', error);
  }
}

function filterShownTasks() {
  if (!state?.tasks) return;
  try {
    renderTasks(filterTasks(state.tasks, taskQuery()), state.tasks.length);
  } catch (error) {
    showError('Task filter', error);
  }
}

async function startTask() {
  try {
    await state.client.request('tools/call', { name: 'long_report', arguments: { seconds: 2 }, task: { ttl: 60000 } });
  } catch (error) {
    showError('Starting a task failed', error);
  }
  await refreshTasks();
}

// ---------------------------------------------------------------- errors

function showError(context, error) {
  const box = $('error');
  const detail = error?.code !== undefined ? ` (code ${error.code})` : '';
  box.replaceChildren(el('strong', { textContent: `${context}: ` }), `${error?.message ?? error}${detail}`);
  box.hidden = false;
  document.body.dataset.error = 'true';
  if (document.body.dataset.ready !== 'true') markUnavailable();
  console.error(context, error);
}

function markUnavailable() {
  $('group-tree').replaceChildren(el('p', { className: 'hint', textContent: 'Unavailable.' }));
  $('tag-list').replaceChildren(el('li', { className: 'hint', textContent: 'Unavailable.' }));
  $('concern-list').replaceChildren(el('p', { className: 'hint', textContent: 'Unavailable.' }));
  $('summary').textContent = 'Not connected.';
}

const clearError = () => { $('error').hidden = true; delete document.body.dataset.error; };

// ---------------------------------------------------------------- connect

async function connect(url) {
  $('server-status').textContent = `Connecting to ${url}…`;
  const stored = loadConcernPreferences(url) ?? {};
  const client = await McpClient.connect(url, { clientInfo: CLIENT_INFO, concerns: stored });
  const sieve = await client.load();
  const total = { ...sieve.filter({}), count: sieve.toolCount() };
  // Keep only stored preferences the server still declares with a valid value.
  let chosen = {};
  try {
    chosen = sieve.resolveConcerns(stored).concerns;
  } catch {
    chosen = {};
  }
  state?.sieve.free();
  state = { client, sieve, total, url, tasks: null };
  renderGroupTree(sieve.groups());
  renderTags(sieve.tags());
  renderConcerns(sieve.concerns(), chosen);
  $('server-status').textContent = `Connected · session ${client.sessionId ?? '(none)'} · protocol ${client.protocolVersion}`;
  update();
  await checkServer();
}

async function main() {
  $('server-url').value = DEFAULT_URL;
  renderTaskControls();
  try {
    await connect(DEFAULT_URL);
  } catch (error) {
    return showError(`Could not load the lists from ${DEFAULT_URL}`, error);
  }
  const form = $('controls');
  form.addEventListener('change', (event) => {
    const t = event.target;
    if (t.matches('select[data-concern]')) {
      document.querySelector(`input[data-concern-on="${CSS.escape(t.dataset.concern)}"]`).checked = true;
    }
    update();
    if (t.matches('[data-concern], [data-concern-on]')) concernsChanged().catch((e) => showError('concerns/update failed', e));
  });
  $('search').addEventListener('input', update);
  $('view-search').addEventListener('change', update);
  $('export-format').addEventListener('change', update);
  form.addEventListener('reset', () => setTimeout(() => {
    update();
    concernsChanged().catch((e) => showError('concerns/update failed', e));
  }));
  $('server-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const url = new URL($('server-url').value, location.href).href;
    connect(url).catch((e) => showError(`Could not connect to ${url}`, e));
  });
  $('task-controls').addEventListener('change', filterShownTasks);
  $('task-refresh').addEventListener('click', refreshTasks);
  $('task-start').addEventListener('click', startTask);
  await refreshTasks();
  document.body.dataset.ready = 'true';
}

main().catch((error) => showError('The demo failed to start', error));
