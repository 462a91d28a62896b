// mcp-sieve demo page.
//
// At load: speak MCP (Streamable HTTP, 2025-11-25 era) to the same origin's `/mcp` — initialize,
// notifications/initialized, then tools/list, groups/list and tags/list, following `nextCursor` —
// and hand the three results to the wasm package (`Sieve.fromLists`). After that every change of
// the group/tag checkboxes is filtered client-side with `sieve.filterTools` (groups = ANY,
// tags = ALL); the server is not asked again. `document.body.dataset.ready = "true"` marks the
// first rendered list (tests wait on it); a failure shows in `#error`.

import init, { Sieve } from './pkg/mcp_sieve.js';

const PROTOCOL_VERSION = '2025-11-25';
const ENDPOINT = new URL('/mcp', location.href).href;
const CLIENT_INFO = { name: 'mcp-sieve-demo-page', version: '0.1.0' };

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- MCP over HTTP

/** A minimal Streamable HTTP client: one POST per message, session header after initialize. */
function mcpClient(endpoint) {
  let sessionId = null;
  let nextId = 1;

  async function post(message) {
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
    };
    if (sessionId) {
      headers['Mcp-Session-Id'] = sessionId;
      headers['MCP-Protocol-Version'] = PROTOCOL_VERSION;
    }
    const res = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(message) });
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      throw new Error(`${message.method}: HTTP ${res.status} ${res.statusText} ${text}`.trim());
    }
    return res;
  }

  async function request(method, params = {}) {
    const id = nextId++;
    const res = await post({ jsonrpc: '2.0', id, method, params });
    sessionId = sessionId ?? res.headers.get('Mcp-Session-Id');
    const reply = await readReply(res, id);
    if (reply.error) {
      const { code, message } = reply.error;
      throw new Error(`${method}: ${message} (JSON-RPC error ${code})`);
    }
    return reply.result;
  }

  const notify = (method, params = {}) => post({ jsonrpc: '2.0', method, params });

  return { request, notify };
}

/** The JSON-RPC response with `id`, from a JSON body or a text/event-stream body. */
async function readReply(res, id) {
  const type = res.headers.get('Content-Type') ?? '';
  const text = await res.text();
  if (!type.includes('text/event-stream')) return JSON.parse(text);
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart()).join('\n');
    if (!data) continue;
    const message = JSON.parse(data);
    if (message.id === id) return message;
  }
  throw new Error(`no response with id ${id} in the event stream`);
}

/** Every page of a paginated list method, concatenated into one `{[key]: [...]}` result. */
async function listAll(client, method, key) {
  const items = [];
  let cursor;
  do {
    const result = await client.request(method, cursor ? { cursor } : {});
    items.push(...(result[key] ?? []));
    cursor = result.nextCursor;
  } while (cursor);
  return { [key]: items };
}

async function loadLists(endpoint) {
  const client = mcpClient(endpoint);
  await client.request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: CLIENT_INFO,
  });
  await client.notify('notifications/initialized');
  const tools = await listAll(client, 'tools/list', 'tools');
  const groups = await listAll(client, 'groups/list', 'groups');
  const tags = await listAll(client, 'tags/list', 'tags');
  return { tools, groups, tags };
}

// ---------------------------------------------------------------- DOM helpers

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (value !== undefined) node[key] = value;
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

/** `<li><label><input type=checkbox> text</label> …</li>` with an optional description hint. */
function checkItem(value, dataKey, text, description) {
  const input = el('input', { type: 'checkbox', value, name: dataKey, dataset: { [dataKey]: value } });
  const label = el('label', { title: description ?? '' }, input, ' ', el('span', { textContent: text }));
  return el('li', {}, label);
}

// ---------------------------------------------------------------- controls

/** Groups as nested lists: children under their `parent`; unknown parents become roots. */
function renderGroupTree(groups) {
  const names = new Set(groups.map((g) => g.name));
  const children = new Map();
  for (const g of groups) {
    const parent = g.parent && names.has(g.parent) && g.parent !== g.name ? g.parent : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(g);
  }
  const seen = new Set();
  const branch = (parent) => {
    const kids = (children.get(parent) ?? []).filter((g) => !seen.has(g.name));
    if (kids.length === 0) return null;
    const ul = el('ul', { className: parent === null ? 'checklist tree' : 'checklist' });
    for (const g of kids) {
      seen.add(g.name);
      const li = checkItem(g.name, 'group', g.title || g.name, g.description);
      const sub = branch(g.name);
      if (sub) li.append(sub);
      ul.append(li);
    }
    return ul;
  };
  $('group-tree').replaceChildren(branch(null) ?? el('p', { className: 'hint', textContent: 'No groups.' }));
}

function renderTags(tags) {
  const list = $('tag-list');
  list.replaceChildren(...tags.map((t) => checkItem(t.name, 'tag', t.name, t.description)));
  if (tags.length === 0) list.append(el('li', { className: 'hint', textContent: 'No tags.' }));
}

/** The filter the ticked boxes describe. */
function currentFilter() {
  const ticked = (key) => [...document.querySelectorAll(`input[data-${key}]:checked`)]
    .map((input) => input.value);
  const filter = {};
  const groups = ticked('group');
  const tags = ticked('tag');
  if (groups.length) filter.groups = groups;
  if (tags.length) filter.tags = tags;
  return filter;
}

// ---------------------------------------------------------------- results

const numberFormat = new Intl.NumberFormat('en-US');
const kb = (bytes) => `${(bytes / 1000).toFixed(1)} KB`;
const tokens = (n) => `~${numberFormat.format(n)}`;

function chips(tool) {
  const list = el('ul', { className: 'chips' });
  for (const g of tool.groups ?? []) list.append(el('li', { className: 'chip chip-group', textContent: g }));
  for (const t of tool.tags ?? []) list.append(el('li', { className: 'chip chip-tag', textContent: t }));
  return list.childElementCount ? list : null;
}

function toolItem(tool) {
  return el('li', { className: 'tool', dataset: { name: tool.name } },
    el('code', { className: 'tool-name', textContent: tool.name }),
    tool.description ? el('p', { className: 'tool-description', textContent: tool.description }) : null,
    chips(tool));
}

function renderTools(view, total) {
  $('tools').replaceChildren(...view.tools.map(toolItem));
  $('summary').textContent =
    `${numberFormat.format(view.tools.length)} of ${numberFormat.format(total.count)} tools · ` +
    `${kb(view.bytes)} of ${kb(total.bytes)} · ${tokens(view.tokens)} of ${tokens(total.tokens)} tokens`;
}

// ---------------------------------------------------------------- errors

function showError(context, error) {
  const box = $('error');
  const detail = error?.code !== undefined ? ` (code ${error.code})` : '';
  box.replaceChildren(el('strong', { textContent: `${context}: ` }),
    `${error?.message ?? error}${detail}`);
  box.hidden = false;
  document.body.dataset.error = 'true';
  if (document.body.dataset.ready !== 'true') markUnavailable();
  console.error(context, error);
}

/** Replaces the "Loading…" placeholders when the lists never arrived. */
function markUnavailable() {
  $('group-tree').replaceChildren(el('p', { className: 'hint', textContent: 'Unavailable.' }));
  $('tag-list').replaceChildren(el('li', { className: 'hint', textContent: 'Unavailable.' }));
  $('summary').textContent = 'Not connected.';
}

const clearError = () => { $('error').hidden = true; delete document.body.dataset.error; };

// ---------------------------------------------------------------- main

async function main() {
  let lists;
  try {
    lists = await loadLists(ENDPOINT);
  } catch (error) {
    return showError(`Could not load the lists from ${ENDPOINT}`, error);
  }
  await init();
  const sieve = Sieve.fromLists(lists.tools, lists.groups, lists.tags);
  const total = { ...sieve.filterTools({}), count: sieve.toolCount() };
  renderGroupTree(sieve.groups());
  renderTags(sieve.tags());

  const update = () => {
    try {
      renderTools(sieve.filterTools(currentFilter()), total);
      clearError();
    } catch (error) {
      showError('Filtering failed', error);
    }
  };
  const form = $('controls');
  form.addEventListener('change', update);
  form.addEventListener('reset', () => setTimeout(update)); // fields reset after the event
  update();
  document.body.dataset.ready = 'true';
}

main().catch((error) => showError('The demo failed to start', error));
