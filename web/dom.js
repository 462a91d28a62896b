// Small DOM helpers and the renderers of the demo page's controls (groups tree, tags with
// require/exclude, one control per concern, task status boxes) and lists. No framework.

export const $ = (id) => document.getElementById(id);

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'dataset') Object.assign(node.dataset, value);
    else if (value !== undefined) node[key] = value;
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

const count = (name) => el('span', { className: 'count', dataset: { count: name } });

/** `<li><label><input type=checkbox> text</label> (n)</li>` with an optional description. */
function checkItem(value, dataKey, text, description) {
  const input = el('input', { type: 'checkbox', value, name: dataKey, dataset: { [dataKey]: value } });
  const label = el('label', { title: description ?? '' }, input, ' ', el('span', { textContent: text }));
  return el('li', {}, label, count(`${dataKey}:${value}`));
}

/** Groups as nested lists: children under their `parent`; unknown parents become roots. */
export function renderGroupTree(groups) {
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
    const ul = el('ul', { className: parent === null ? 'checklist tree' : 'checklist', role: parent === null ? 'tree' : 'group' });
    for (const g of kids) {
      seen.add(g.name);
      const li = checkItem(g.name, 'group', g.title || g.name, g.description);
      li.setAttribute('role', 'treeitem');
      const sub = branch(g.name);
      if (sub) li.append(sub);
      ul.append(li);
    }
    return ul;
  };
  $('group-tree').replaceChildren(branch(null) ?? el('p', { className: 'hint', textContent: 'No groups.' }));
}

/** One row per tag: a "require" box and a "not" (exclude) box, each with its facet count. */
export function renderTags(tags) {
  const rows = tags.map((t) => {
    const require = el('input', { type: 'checkbox', value: t.name, dataset: { tag: t.name } });
    const exclude = el('input', { type: 'checkbox', value: t.name, dataset: { excludeTag: t.name } });
    exclude.setAttribute('aria-label', `exclude ${t.name}`);
    return el('li', { className: 'tag-row' },
      el('label', { title: t.description ?? '' }, require, ' ', el('span', { textContent: t.name }), count(`tag:${t.name}`)),
      el('label', { className: 'exclude' }, exclude, ' not', count(`exclude-tag:${t.name}`)));
  });
  $('tag-list').replaceChildren(...rows);
  if (tags.length === 0) $('tag-list').append(el('li', { className: 'hint', textContent: 'No tags.' }));
}

/** One control per declared concern: a box that applies it and a select preset to its default
 * (or to the stored preference). */
export function renderConcerns(decls, chosen) {
  const rows = decls.filter((d) => Array.isArray(d.values)).map((d) => {
    const id = `concern-${d.name}`;
    const on = el('input', { type: 'checkbox', id: `${id}-on`, checked: chosen[d.name] !== undefined, dataset: { concernOn: d.name } });
    const select = el('select', { id, dataset: { concern: d.name } },
      ...d.values.map((v) => el('option', { value: String(v), textContent: String(v) + (String(v) === String(d.default) ? ' (default)' : '') })));
    select.value = String(chosen[d.name] ?? d.default ?? d.values[0]);
    select.setAttribute('aria-label', `${d.name} value`);
    return el('p', { className: 'concern', title: d.description ?? '' },
      el('label', { htmlFor: `${id}-on` }, on, ` ${d.name}`), select);
  });
  $('concern-list').replaceChildren(...rows);
  if (rows.length === 0) $('concern-list').append(el('p', { className: 'hint', textContent: 'The server declares no concerns.' }));
}

/** Writes facet counts beside every option (and into the concern options' labels). */
export function renderFacets(f) {
  const put = (key, n) => {
    const node = document.querySelector(`[data-count="${CSS.escape(key)}"]`);
    if (node) node.textContent = String(n);
  };
  for (const g of f.groups) put(`group:${g.name}`, g.count);
  for (const t of f.tags) { put(`tag:${t.name}`, t.require); put(`exclude-tag:${t.name}`, t.exclude); }
  for (const c of f.concerns) {
    const select = document.querySelector(`select[data-concern="${CSS.escape(c.name)}"]`);
    if (!select) continue;
    for (const option of select.options) {
      const v = c.values.find((x) => x.value === option.value);
      const base = option.textContent.replace(/ · \d+ tools$/, '');
      option.textContent = v ? `${base} · ${v.count} tools` : base;
    }
  }
}

const numberFormat = new Intl.NumberFormat('en-US');
export const fmt = (n) => numberFormat.format(n);
const kb = (bytes) => `${(bytes / 1000).toFixed(1)} KB`;

function chips(tool) {
  const list = el('ul', { className: 'chips' });
  for (const g of tool.groups ?? []) list.append(el('li', { className: 'chip chip-group', textContent: g }));
  for (const t of tool.tags ?? []) list.append(el('li', { className: 'chip chip-tag', textContent: t }));
  // Pinning (gateway mode): the definition's digest, and whether it is unpinned ("warn" lists it).
  const digest = tool._meta?.['dev.mcp-sieve/digest'];
  const unpinned = tool._meta?.['dev.mcp-sieve/unpinned'];
  if (typeof digest === 'string') {
    list.append(el('li', {
      className: unpinned ? 'chip chip-unpinned' : 'chip chip-digest', title: `definition digest ${digest}`,
      textContent: unpinned ? `unpinned (${unpinned})` : `digest ${digest.replace(/^sha256:/, '').slice(0, 8)}`,
      dataset: { pinning: unpinned ? String(unpinned) : 'digest' },
    }));
  }
  return list.childElementCount ? list : null;
}

export function renderTools(view, total) {
  $('tools').replaceChildren(...view.items.map((tool) => el('li', { className: 'tool', dataset: { name: tool.name } },
    el('code', { className: 'tool-name', textContent: tool.name }),
    tool.description ? el('p', { className: 'tool-description', textContent: tool.description }) : null,
    chips(tool))));
  $('summary').textContent =
    `${fmt(view.count)} of ${fmt(total.count)} tools · ` +
    `${kb(view.bytes)} of ${kb(total.bytes)} · ~${fmt(view.tokens)} of ~${fmt(total.tokens)} tokens`;
}

/** The tools `view` leaves out, each with why (`title` for hover, `data-why` for tests). */
export function renderHidden(hidden) {
  $('hidden-tools').replaceChildren(...hidden.map(({ tool, why }) => el('li', {
    className: 'tool hidden-tool', title: `Hidden: ${why.join('; ')}`, dataset: { name: tool.name, why: why.join('; ') },
  }, el('code', { className: 'tool-name', textContent: tool.name }), el('p', { className: 'hint', textContent: why.join('; ') }))));
  $('hidden-summary').textContent = `Hidden tools (${fmt(hidden.length)})`;
}

export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

export function renderTaskControls() {
  $('task-status').replaceChildren(...TASK_STATUSES.map((s) => el('li', {},
    el('label', {}, el('input', { type: 'checkbox', value: s, dataset: { taskStatus: s } }), ` ${s.replace('_', ' ')}`))));
}

export function renderTasks(tasks, all) {
  $('task-list').replaceChildren(...tasks.map((t) => el('li', { dataset: { taskId: t.taskId, status: t.status } },
    el('code', { textContent: t.taskId.slice(0, 8) }), ` ${t.status} · created ${t.createdAt} · updated ${t.lastUpdatedAt}`)));
  $('task-summary').textContent = `${fmt(tasks.length)} of ${fmt(all)} tasks`;
}
