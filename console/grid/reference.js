// The reference picker: record ids of the referenced grid typed as a comma-separated list, with
// suggestions read from that grid's default view as you type (records whose id contains the
// last word, shown with the referenced column's value). Suggestions are buttons, so the
// keyboard reaches them with Tab; choosing one completes the last id.

import { api } from '../api.js';
import { h } from '../ui.js';

const enc = encodeURIComponent;
const SUGGESTIONS = 10;

/** The default view of the grid (or branch) a reference column points at. */
async function targetView(reference) {
  const owner = reference.branchId
    ? await api.get(`/v1/branches/${enc(reference.branchId)}`)
    : await api.get(`/v1/grids/${enc(reference.gridId)}`);
  return owner.defaultAccessViewId;
}

/** The editor control of a reference cell holding `ids`. */
export function referenceControl(column, ids) {
  const input = h('input', { type: 'text', value: (ids || []).join(', '), 'aria-label': `${column.name}: record ids, comma-separated`,
    autocomplete: 'off' });
  const list = h('div', { class: 'suggestions', 'aria-label': 'Suggestions' });
  let view = null;
  let timer = null;
  let request = null;
  const words = () => input.value.split(',').map((w) => w.trim());
  const choose = (id) => {
    const all = words();
    all[all.length - 1] = id;
    input.value = `${all.filter(Boolean).join(', ')}`;
    list.replaceChildren();
    input.focus();
  };
  const suggest = async () => {
    const word = words().pop();
    if (!word || !column.reference) { list.replaceChildren(); return; }
    if (request) request.abort();
    request = new AbortController();
    try {
      view = view || await targetView(column.reference);
      const found = await api.get(`/v1/views/${enc(view)}/records`, {
        query: { _recordId: { contains: word } }, columnIds: column.reference.columnId,
        page: { offset: 0, limit: SUGGESTIONS } }, { signal: request.signal });
      list.replaceChildren(...found.map((r) => {
        const shown = (r.cells.find((c) => c.columnId === column.reference.columnId) || {}).value;
        return h('button', { type: 'button', class: 'suggestion', onclick: () => choose(r.id) },
          h('strong', {}, r.id), shown ? ` ${String(shown).slice(0, 60)}` : '');
      }));
    } catch (err) {
      if (err.name !== 'AbortError') list.replaceChildren(h('span', { class: 'hint' }, err.message));
    }
  };
  input.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(suggest, 200); });
  return {
    el: h('div', { class: 'reference-picker' }, input, list),
    focusEl: input,
    get: () => words().filter(Boolean),
  };
}
