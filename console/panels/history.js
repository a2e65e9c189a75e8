// A record's history panel: GET /v1/views/<id>/records/<recordId>/histories (Enterprise),
// newest first, HISTORY_PAGE entries at a time with "Load older", optionally narrowed to one
// column (columnIds). Each entry shows when, who and the cells it wrote (value, dependency and
// source status). Values are shown as text, never as markup. It owns nothing but its list.

import { el, field, select, statusLine, action, panel, seg } from './common.js';

/** Entries fetched per page. */
export const HISTORY_PAGE = 20;

/** A cell value as text: strings as they are, lists joined, the rest as JSON. */
export function valueText(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(valueText).join(', ');
  return JSON.stringify(value);
}

function entryItem(entry, names) {
  const when = new Date(entry.lastModifiedTime);
  return el('li', { class: 'panel-history-entry' },
    el('div', { class: 'panel-meta' },
      el('time', { datetime: entry.lastModifiedTime },
        Number.isNaN(when.getTime()) ? entry.lastModifiedTime : when.toLocaleString()),
      ' by ', el('strong', {}, entry.lastModifiedBy || 'unknown'),
      entry.path ? ` in ${entry.path}` : ''),
    el('dl', { class: 'panel-cells' }, entry.cells.flatMap((c) => [
      el('dt', {}, names[c.columnId] || c.columnId),
      el('dd', { 'data-column-id': c.columnId }, valueText(c.value),
        c.dependencyStatus ? el('span', { class: `panel-badge status-${c.dependencyStatus}` }, c.dependencyStatus) : null,
        c.sourceStatus && c.sourceStatus !== 'unset' ? el('span', { class: 'panel-badge' }, c.sourceStatus) : null),
    ])));
}

/** The history path of `record` in the open view, with `page` and the column filter. */
function historyUrl(ctx, record, offset, columnId) {
  const params = new URLSearchParams({ page: JSON.stringify({ offset, limit: HISTORY_PAGE }) });
  if (record.path) params.set('path', record.path);
  if (columnId) params.set('columnIds', columnId);
  return `/v1/views/${seg(ctx.route.viewId)}/records/${seg(record.id)}/histories?${params}`;
}

/** Opens the history of `record` ({id, path}). */
export async function historyPanel(ctx, record) {
  const columns = ctx.columns || [];
  const names = Object.fromEntries(columns.map((c) => [c.id, c.name]));
  const status = statusLine();
  const list = el('ol', { class: 'panel-list panel-history', 'aria-label': `History of ${record.id}` });
  const only = select([['', 'all columns'], ...columns.map((c) => [c.id, c.name])], '');
  let offset = 0;
  let total = 0;
  const more = action('Load older', () => loadPage(), status);
  async function loadPage() {
    const answer = await ctx.api.send('GET', historyUrl(ctx, record, offset, only.value));
    total = Number(answer.headers && answer.headers.get ? answer.headers.get('x-total-count') : NaN);
    for (const entry of answer.body) list.append(entryItem(entry, names));
    offset += answer.body.length;
    const known = Number.isFinite(total);
    more.hidden = known ? offset >= total : answer.body.length < HISTORY_PAGE;
    status.show(offset ? `${offset}${known ? ` of ${total}` : ''} changes shown.` : 'No changes recorded.');
  }
  only.addEventListener('change', async () => {
    list.replaceChildren();
    offset = 0;
    try { await loadPage(); } catch (e) { status.fail(e); }
  });
  const body = el('div', { class: 'panel-history-body' },
    field('Changes of', only), list, more, status.node);
  try { await loadPage(); } catch (e) { status.fail(e); }
  await panel(`History of ${record.id}`, body);
}
