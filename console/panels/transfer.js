// Import and export of the open view.
// Import: pick a CSV, TSV or XLSX file; its first rows are shown (csv_preview.js,
// xlsx_preview.js) with a target per file column (a column of the view, the record id, the
// path or nothing), guessed as the server would; the import (POST /v1/views/<id>/import?type=,
// multipart `file` and `importRequest` with the columnMappings chosen) is a task followed to
// its end, then the grid reloads.
// Export: GET /v1/views/<id>/export?type=csv|xlsx&fileHeader=[&query=&sort=] (the grid's
// filter and sort, by default when it has any), downloaded as a file.

import { el, field, select, statusLine, action, panel, fill, followTask, seg } from './common.js';
import { readHead, guessTarget, importRequest, PREVIEW_ROWS } from './csv_preview.js';
import { readXlsxHead } from './xlsx_preview.js';

/** The import type of a file by its name, or null. */
export function fileType(name) {
  const ext = String(name).toLowerCase().split('.').pop();
  return { csv: 'csv', tsv: 'tsv', txt: 'tsv', xlsx: 'xlsx' }[ext] || null;
}

function targetChoices(columns) {
  return [['', '(ignore)'], ['_recordId', 'Record ID'], ['_path', 'Path'],
    ...columns.filter((c) => c.type !== 'formula').map((c) => [c.id, `${c.name} (${c.id})`])];
}

/** The preview table: a header row of target pickers, then the file's first rows. */
function mappingTable(rows, withHeader, columns) {
  const width = Math.max(0, ...rows.map((r) => r.length));
  const header = withHeader ? rows[0] || [] : [];
  const pickers = Array.from({ length: width }, (_, i) => select(targetChoices(columns),
    withHeader ? guessTarget(header[i], columns) : '',
    { 'aria-label': `Target of file column ${i + 1}${header[i] ? ` (${header[i]})` : ''}`, 'data-file-column': i }));
  const table = el('table', { class: 'panel-table', 'aria-label': 'Preview of the file' },
    el('thead', {}, el('tr', {}, pickers.map((p) => el('th', { scope: 'col' }, p)))),
    el('tbody', {}, rows.map((r, n) => el('tr', { class: n === 0 && withHeader ? 'panel-file-header' : '' },
      Array.from({ length: width }, (_, i) => el('td', {}, r[i] || ''))))));
  return { table, targets: () => pickers.map((p) => p.value) };
}

/** Opens the import dialog of the open view. */
export async function importDialog(ctx) {
  const status = statusLine();
  const columns = ctx.columns || [];
  const input = el('input', { type: 'file', accept: '.csv,.tsv,.txt,.xlsx', 'data-panel': 'import-file' });
  const headerBox = el('input', { type: 'checkbox', checked: true, id: 'import-with-header' });
  const out = el('div', { class: 'panel-preview' });
  let mapping = null;
  const showPreview = async () => {
    const file = input.files[0];
    mapping = null;
    if (!file) return fill(out);
    const type = fileType(file.name);
    if (!type) throw new Error('Pick a .csv, .tsv or .xlsx file.');
    const rows = type === 'xlsx'
      ? await readXlsxHead(file, PREVIEW_ROWS)
      : await readHead(file, type === 'csv' ? ',' : '\t');
    mapping = mappingTable(rows, headerBox.checked, columns);
    fill(out, mapping.table);
    status.show(`${file.name}: the first ${rows.length} rows. Choose where each file column goes.`);
    return null;
  };
  const preview = () => showPreview().catch((e) => status.fail(e));
  input.addEventListener('change', preview);
  out.addEventListener('change', () => status.show('Import when every file column goes where it should.'));
  headerBox.addEventListener('change', preview);
  const run = action('Import', () => runImport(ctx, input.files[0], mapping, headerBox.checked, status),
    status, { class: 'primary', 'data-panel': 'import-run' });
  const body = el('div', { class: 'panel-import' }, field('File (CSV, TSV or XLSX)', input),
    el('div', {}, headerBox, el('label', { for: headerBox.id }, 'The first row is a header')),
    out, run, status.node);
  await panel('Import', body);
}

async function runImport(ctx, file, mapping, withHeader, status) {
  if (!file) throw new Error('Pick a file first.');
  const type = fileType(file.name);
  const form = new FormData();
  form.append('file', file, file.name);
  if (!mapping) throw new Error('The file has no preview yet; pick it again.');
  form.append('importRequest', JSON.stringify(importRequest(mapping.targets(), withHeader)));
  status.show('Uploading…');
  const started = await ctx.api.send('POST', `/v1/views/${seg(ctx.route.viewId)}/import?type=${type}`, form);
  await followTask(ctx.api, started.body.id, (t) => status.show(`Importing… ${t.progress || 0}%`));
  status.show(`Imported ${file.name}.`);
  if (ctx.reload) await ctx.reload();
}

/** The file name of a download, from its Content-Disposition, or `fallback`. */
export function downloadName(disposition, fallback) {
  const star = /filename\*=UTF-8''([^;]+)/i.exec(disposition || '');
  if (star) { try { return decodeURIComponent(star[1]); } catch { /* the plain name then */ } }
  const plain = /filename="([^"]+)"/i.exec(disposition || '');
  return plain ? plain[1] : fallback;
}

/** Saves `blob` as `name` through a temporary object URL. */
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** Opens the export dialog of the open view. */
export async function exportDialog(ctx) {
  const status = statusLine();
  const type = select([['csv', 'CSV'], ['xlsx', 'XLSX']], 'csv', { 'data-panel': 'export-type' });
  const header = select([['columnName', 'column names'], ['columnId', 'column ids'], ['none', 'no header']], 'columnName');
  // The grid's filter, status filter and sort, when it has any (the export honours them).
  const listing = ctx.listing ? ctx.listing() : {};
  const narrowed = Boolean(listing.query || listing.sort);
  const only = el('input', { type: 'checkbox', checked: narrowed, disabled: !narrowed, 'data-panel': 'export-filtered' });
  const run = action('Download', async () => {
    const params = new URLSearchParams({ type: type.value, fileHeader: header.value });
    if (only.checked && listing.query) params.set('query', JSON.stringify(listing.query));
    if (only.checked && listing.sort) params.set('sort', JSON.stringify(listing.sort));
    const response = await ctx.api.raw('GET', `/v1/views/${seg(ctx.route.viewId)}/export?${params}`);
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      throw Object.assign(new Error(problem.message || `Export failed (${response.status}).`), { code: problem.code });
    }
    const name = downloadName(response.headers.get('content-disposition'), `export.${type.value}`);
    saveBlob(await response.blob(), name);
    status.show(`Downloaded ${name}.`);
  }, status, { class: 'primary', 'data-panel': 'export-run' });
  const body = el('div', { class: 'panel-export' }, field('File type', type), field('Header row', header),
    field('Only the records the grid shows (its filter and sort)', only), run, status.node);
  await panel('Export', body);
}
