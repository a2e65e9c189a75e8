// Inline editing: one editor per column type laid over the cell (text, multi-line, markdown
// with a preview, number, datetime, single and multiple selection with the option colors,
// boolean, files with upload and download, reference ids with suggestions; formulas and locked
// cells are read-only), and the conditional write behind it: the record's version (ETag) is
// read when the editor opens and sent as If-Match, so a change made elsewhere meanwhile is
// reported (412) with the newer value instead of being overwritten.

import { api } from '../api.js';
import { h, dialog, toast, field } from '../ui.js';
import { cellOf, isReadOnly, selectionOptions, toText } from './cells.js';
import { markdownPreview } from './markdown.js';
import { referenceControl } from './reference.js';

const enc = encodeURIComponent;

/** The record as stored now, with its version: {record, etag}. The single-record read names
 *  files by id only, so when it holds files their details come from the listing. */
export async function readRecord(viewId, record) {
  const params = record.path ? { path: record.path } : undefined;
  const answer = await api.getFull(`/v1/views/${enc(viewId)}/records/${enc(record.id)}`, params);
  const fresh = answer.body;
  const lists = fresh.cells.some((c) => Array.isArray(c.value) && c.value.some((v) => typeof v === 'string'));
  if (lists) await nameFiles(viewId, fresh);
  return { record: fresh, etag: answer.headers.get('ETag') };
}

/** Replaces file ids in `record`'s cells by the listing's file details ({id, originalName}). */
async function nameFiles(viewId, record) {
  const query = { _recordId: { '=': record.id } };
  if (record.path) query._path = { '=': record.path };
  const [listed] = await api.get(`/v1/views/${enc(viewId)}/records`, { query, fetchFileOption: 'all' });
  if (!listed) return;
  for (const cell of record.cells) {
    const other = listed.cells.find((c) => c.columnId === cell.columnId);
    if (!other || !Array.isArray(cell.value) || !Array.isArray(other.value)) continue;
    const byId = new Map(other.value.filter((f) => f && f.id).map((f) => [f.id, f]));
    cell.value = cell.value.map((id) => byId.get(id) || id);
  }
}

/** Writes `cells` of `record` if it is still at `etag`; the record as written. On 412 asks
 *  the user (showing the newer values) whether to write anyway; null when nothing was written.
 *  `extra` adds fields to the body (`markUpdatedCellsWithMTFlag`). */
export async function writeCells(viewId, record, etag, cells, columns, extra = {}) {
  const query = record.path ? `?path=${enc(record.path)}` : '';
  const path = `/v1/views/${enc(viewId)}/records/${enc(record.id)}${query}`;
  try {
    const answer = await api.send('PATCH', path, { cells, ...extra }, etag ? { 'If-Match': etag } : {});
    return answer.body;
  } catch (err) {
    if (err.status !== 412) throw err;
    const fresh = await readRecord(viewId, record);
    const keep = await conflictDialog(fresh.record, cells, columns);
    if (!keep) return fresh.record;
    return writeCells(viewId, fresh.record, fresh.etag, cells, columns, extra);
  }
}

async function conflictDialog(fresh, cells, columns) {
  const rows = cells.map((c) => {
    const column = columns.find((col) => col.id === c.columnId) || { id: c.columnId, type: 'singleLine' };
    return h('tr', {}, h('th', { scope: 'row' }, column.name || c.columnId),
      h('td', { class: 'theirs' }, toText(column, cellOf(fresh, c.columnId))),
      h('td', { class: 'mine' }, toText(column, c)));
  });
  const body = h('div', {},
    h('p', {}, `Record “${fresh.id}” was changed by ${fresh.lastModifiedBy || 'someone'} since you started editing. Nothing was written.`),
    h('table', { class: 'conflict' }, h('thead', {}, h('tr', {}, h('th', {}, 'Column'),
      h('th', {}, 'Now saved'), h('th', {}, 'Your edit'))), h('tbody', {}, rows)));
  const choice = await dialog({ title: 'Edit conflict', body,
    actions: [{ label: 'Keep the saved value', primary: true }, { label: 'Write my edit' }] });
  return choice === 'Write my edit';
}

/** The control editing `column`'s value `value`; `get()` reads the new value back. */
function control(column, value, initialText) {
  const text = initialText !== undefined ? initialText : (value ?? '');
  switch (column.type) {
    case 'number': {
      const input = h('input', { type: 'number', step: 'any', value: initialText ?? (value ?? '') });
      return { el: input, get: () => (input.value === '' ? null : Number(input.value)) };
    }
    case 'datetime': {
      const local = value ? String(value).slice(0, 16) : '';
      const input = h('input', { type: 'datetime-local', value: local, 'aria-label': `${column.name} (UTC)` });
      return { el: input, get: () => (input.value ? new Date(`${input.value}Z`).toISOString() : null) };
    }
    case 'singleSelection':
      return selectControl(column, value);
    case 'multipleSelections':
      return multiControl(column, value);
    case 'reference':
      return referenceControl(column, Array.isArray(value) ? value : (value ? [value] : []));
    case 'multipleLines': case 'richText': case 'html': case 'json': case 'yaml': case 'language':
      return { el: h('textarea', { rows: 4, value: String(text) }), get() { return this.el.value; } };
    case 'markdown':
      return markdownControl(String(text));
    default:
      return { el: h('input', { type: 'text', value: String(text) }), get() { return this.el.value; } };
  }
}

function selectControl(column, value) {
  const select = h('select', {}, h('option', { value: '' }, '(none)'),
    selectionOptions(column).map((o) => h('option', {
      value: o.value, selected: o.value === value, class: `opt-${o.color || 'none'}` }, o.value)));
  return { el: select, get: () => select.value || null };
}

function multiControl(column, value) {
  const chosen = new Set(Array.isArray(value) ? value : []);
  const boxes = selectionOptions(column).map((o) => h('label', { class: `chip opt-${o.color || 'none'}` },
    h('input', { type: 'checkbox', value: o.value, checked: chosen.has(o.value) }), o.value));
  const el = h('fieldset', { class: 'multi' }, h('legend', {}, column.name), boxes);
  return { el, get: () => [...el.querySelectorAll('input:checked')].map((i) => i.value) };
}

function markdownControl(text) {
  const area = h('textarea', { rows: 6, value: text, 'aria-label': 'Markdown' });
  const preview = h('div', { class: 'md-preview', 'aria-label': 'Preview' }, markdownPreview(text));
  area.addEventListener('input', () => preview.replaceChildren(markdownPreview(area.value)));
  return { el: h('div', { class: 'md-editor' }, area, preview), focusEl: area, get: () => area.value };
}

/** Opens the editor of cell (row, col) of `grid` (the view page's state). Boolean cells toggle
 *  at once, files open their dialog, read-only cells say why. */
export async function editCell(grid, row, col, initialText) {
  const column = grid.table.columns[col];
  const record = grid.source.at(row);
  if (!record || !column) return;
  if (column.frozen) return;
  if (!grid.canWrite || isReadOnly(column, record)) {
    toast(column.type === 'formula' ? 'Formula cells are computed; they cannot be edited.'
      : 'This cell is read-only (locked, or not editable with this key or view).');
    return;
  }
  const fresh = await readRecord(grid.viewId, record);
  grid.source.update([fresh.record]);
  if (isReadOnly(column, fresh.record)) {
    toast('This cell was locked meanwhile.');
    return;
  }
  const cell = cellOf(fresh.record, column.id);
  const value = column.type === 'reference' ? (cell.referencedIds || []) : cell.value;
  if (column.type === 'boolean') {
    await save(grid, fresh, column, !value);
    return;
  }
  if (column.type === 'files') {
    await filesDialog(grid, fresh, column);
    return;
  }
  overlayEditor(grid, row, col, fresh, column, control(column, value, initialText));
}

async function save(grid, fresh, column, value) {
  try {
    const written = await writeCells(grid.viewId, fresh.record, fresh.etag,
      [{ columnId: column.id, value }], grid.table.columns);
    if (written) grid.source.update([written]);
  } catch (err) {
    toast(err.message, 'error');
  }
}

/** The editor laid over the cell: Enter saves (Shift+Enter or Alt+Enter starts a new line in
 *  multi-line editors, as in spreadsheets), Esc cancels, Tab saves and moves right. */
function overlayEditor(grid, row, col, fresh, column, ctl) {
  const rect = grid.table.cellRect(row, col);
  const box = h('div', { class: 'cell-editor', role: 'dialog', 'aria-label': `Edit ${column.name}` }, ctl.el);
  if (rect) {
    box.style.left = `${rect.left + window.scrollX}px`;
    box.style.top = `${rect.top + window.scrollY}px`;
    box.style.minWidth = `${rect.width}px`;
  }
  document.body.append(box);
  const focus = ctl.focusEl || box.querySelector('input, textarea, select');
  if (focus) {
    focus.focus();
    if (focus.setSelectionRange && focus.type === 'text') focus.setSelectionRange(focus.value.length, focus.value.length);
  }
  let closed = false;
  const close = async (commit, move) => {
    if (closed) return;
    closed = true;
    box.remove();
    grid.table.root.focus({ preventScroll: true });
    if (commit) await save(grid, fresh, column, ctl.get());
    if (move) grid.table.moveTo(row + move.row, col + move.col);
  };
  box.addEventListener('keydown', (e) => {
    const area = e.target.tagName === 'TEXTAREA' ? e.target : null;
    if (e.key === 'Escape') { e.preventDefault(); close(false); }
    else if (e.key === 'Enter' && area && e.altKey) { e.preventDefault(); area.setRangeText('\n', area.selectionStart, area.selectionEnd, 'end'); }
    else if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); close(true, { row: 1, col: 0 }); }
    else if (e.key === 'Tab') { e.preventDefault(); close(true, { row: 0, col: e.shiftKey ? -1 : 1 }); }
  });
  box.addEventListener('focusout', (e) => {
    if (!box.contains(e.relatedTarget)) setTimeout(() => { if (!box.contains(document.activeElement)) close(true); }, 0);
  });
}

/** Downloads a file of the view with the key (a blob saved under its name). */
export async function downloadFile(viewId, file) {
  const id = typeof file === 'string' ? file : file.id;
  const response = await api.raw('GET', `/v1/views/${enc(viewId)}/files/${enc(id)}`);
  if (!response.ok) {
    toast(`Download failed (${response.status}).`, 'error');
    return;
  }
  const url = URL.createObjectURL(await response.blob());
  const link = h('a', { href: url, download: file.originalName || id, class: 'hidden' });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A files cell: its files (download, remove) and an upload. */
async function filesDialog(grid, fresh, column) {
  const files = cellOf(fresh.record, column.id).value || [];
  const input = h('input', { type: 'file', name: 'file', id: 'upload-file' });
  const list = h('ul', { class: 'files' }, (Array.isArray(files) ? files : [files]).map((f) => h('li', {},
    h('a', { href: '#', onclick: (e) => { e.preventDefault(); downloadFile(grid.viewId, f); } },
      f.originalName || f.id || f),
    h('button', { type: 'button', 'aria-label': `Remove ${f.originalName || f.id}`,
      onclick: (e) => removeFile(grid, fresh, column, f).then(() => e.target.closest('li').remove()) },
    'Remove'))));
  await dialog({
    title: `${column.name}: files of ${fresh.record.id}`,
    body: h('div', {}, list, field('Upload a file (at most 100 MiB)', input)),
    actions: [{ label: 'Upload', primary: true, run: () => uploadFile(grid, fresh.record, column, input) }],
  });
}

async function uploadFile(grid, record, column, input) {
  const file = input.files && input.files[0];
  if (!file) throw new Error('Choose a file first.');
  const form = new FormData();
  form.append('recordId', record.id);
  if (record.path) form.append('path', record.path);
  form.append('columnId', column.id);
  form.append('file', file, file.name);
  await api.send('POST', `/v1/views/${enc(grid.viewId)}/files`, form);
  const fresh = await readRecord(grid.viewId, record);
  grid.source.update([fresh.record]);
  toast(`Uploaded ${file.name}.`);
}

async function removeFile(grid, fresh, column, file) {
  const id = typeof file === 'string' ? file : file.id;
  const where = new URLSearchParams({ recordId: fresh.record.id, columnId: column.id });
  if (fresh.record.path) where.set('path', fresh.record.path);
  await api.send('DELETE', `/v1/views/${enc(grid.viewId)}/files?${where}`, { ids: [id] });
  const again = await readRecord(grid.viewId, fresh.record);
  grid.source.update([again.record]);
  toast('File removed.');
}
