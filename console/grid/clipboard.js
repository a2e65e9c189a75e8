// Copy and paste of cell ranges as TSV, the format spreadsheets put on the clipboard: cells
// separated by tabs, rows by newlines, a cell holding a tab, newline or quote wrapped in quotes
// with inner quotes doubled. A paste fills the range from the active cell in ONE bulk PATCH
// whose records each carry their version (`ifMatch`): if any changed meanwhile, nothing is
// written and the user is told. Bounded: at most MAX_ROWS x MAX_COLS cells.

import { api } from '../api.js';
import { toast } from '../ui.js';
import { cellOf, fromText, isReadOnly, toText } from './cells.js';
import { readRecord } from './editors.js';

export const MAX_ROWS = 500;
export const MAX_COLS = 50;
/** Clipboard text read at most (a paste's text beyond it is refused before parsing). */
const MAX_CHARS = 5_000_000;
/** Version reads in flight at once while preparing a paste. */
const PARALLEL_READS = 8;

function quote(text) {
  return /[\t\n\r"]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Rows of cell texts as TSV. */
export function formatTsv(rows) {
  return rows.map((row) => row.map(quote).join('\t')).join('\n');
}

/** TSV text as rows of cell texts (quoted cells may hold tabs and newlines); a final newline
 *  ends the last row. Stops after `maxRows` rows. */
export function parseTsv(text, maxRows = MAX_ROWS + 1) {
  const rows = [];
  let row = [];
  let cell = '';
  let i = 0;
  let quoted = false;
  const src = String(text).replace(/\r\n?/g, '\n');
  while (i < src.length && rows.length < maxRows) {
    const c = src[i];
    if (quoted) {
      if (c === '"' && src[i + 1] === '"') { cell += '"'; i += 2; continue; }
      if (c === '"') { quoted = false; i += 1; continue; }
      cell += c;
    } else if (c === '"' && cell === '') {
      quoted = true;
    } else if (c === '\t') {
      row.push(cell); cell = '';
    } else if (c === '\n') {
      row.push(cell); rows.push(row); row = []; cell = '';
    } else {
      cell += c;
    }
    i += 1;
  }
  if ((cell !== '' || row.length) && rows.length < maxRows) { row.push(cell); rows.push(row); }
  return rows;
}

/** The selected range's cells as TSV (rows not loaded yet are loaded first). */
export async function copyRange(grid) {
  const { top, bottom, left, right } = grid.table.range();
  const records = await grid.source.rows(top, Math.min(bottom, top + MAX_ROWS - 1));
  const columns = grid.table.columns.slice(left, right + 1);
  return formatTsv(records.map((record) => columns.map((column) => {
    if (column.id === '_recordId') return record.id;
    if (column.id === '_path') return record.path || '';
    return toText(column, cellOf(record, column.id));
  })));
}

/** The bulk PATCH body of pasting `rows` at the active cell, and how many cells were skipped
 *  (read-only, or text that does not fit the column's type). */
function planPaste(grid, rows, records, left) {
  const columns = grid.table.columns;
  let skipped = 0;
  const writes = [];
  records.forEach((record, r) => {
    const cells = [];
    rows[r].forEach((text, c) => {
      const column = columns[left + c];
      if (!column) return;
      const value = column.frozen || isReadOnly(column, record) ? undefined : fromText(column, text);
      if (value === undefined) skipped += 1;
      else cells.push({ columnId: column.id, value });
    });
    if (cells.length) writes.push({ record, cells });
  });
  return { writes, skipped };
}

/** Reads the version of each record (a few at a time). */
async function versions(viewId, records) {
  const out = new Map();
  let next = 0;
  const worker = async () => {
    while (next < records.length) {
      const record = records[next];
      next += 1;
      const fresh = await readRecord(viewId, record);
      out.set(record.id, fresh.etag ? fresh.etag.replace(/"/g, '') : undefined);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_READS }, worker));
  return out;
}

/** Pastes TSV `text` at the active cell (or fills the selected range with a single value). */
export async function pasteText(grid, text) {
  if (!grid.canWrite) {
    toast('This key may not write records.', 'error');
    return;
  }
  if (text.length > MAX_CHARS) {
    toast(`A paste may hold at most ${MAX_CHARS.toLocaleString()} characters.`, 'error');
    return;
  }
  let rows = parseTsv(text);
  if (rows.length > MAX_ROWS || rows.some((r) => r.length > MAX_COLS)) {
    toast(`A paste may cover at most ${MAX_ROWS} rows and ${MAX_COLS} columns.`, 'error');
    return;
  }
  const range = grid.table.range();
  if (rows.length === 1 && rows[0].length === 1 && (range.bottom > range.top || range.right > range.left)) {
    const width = range.right - range.left + 1;
    rows = Array.from({ length: Math.min(range.bottom - range.top + 1, MAX_ROWS) }, () => Array(width).fill(rows[0][0]));
  }
  const records = await grid.source.rows(range.top, range.top + rows.length - 1);
  const { writes, skipped } = planPaste(grid, rows, records, range.left);
  if (!writes.length) {
    toast('Nothing to paste here: these cells are read-only.', 'error');
    return;
  }
  const tags = await versions(grid.viewId, writes.map((w) => w.record));
  const body = writes.map((w) => ({ id: w.record.id, ...(w.record.path ? { path: w.record.path } : {}),
    ifMatch: tags.get(w.record.id), cells: w.cells }));
  try {
    const answer = await api.send('PATCH', `/v1/views/${encodeURIComponent(grid.viewId)}/records`, body);
    grid.source.update(Array.isArray(answer.body) ? answer.body : []);
    const cells = body.reduce((n, r) => n + r.cells.length, 0);
    toast(`Pasted ${cells} cells${skipped ? ` (${skipped} skipped: read-only or not of the column's type)` : ''}.`);
  } catch (err) {
    if (err.status === 412) {
      toast(`Nothing was pasted: a record changed meanwhile. ${err.message}`, 'error');
      grid.source.reset();
    } else {
      toast(err.message, 'error');
    }
  }
}

/** Wires the grid element's copy and paste events (Ctrl+C / Ctrl+V, menus). */
export function wireClipboard(grid) {
  const root = grid.table.root;
  root.addEventListener('copy', (event) => {
    event.preventDefault();
    const complete = copySync(grid, event);
    const { top, bottom } = grid.table.range();
    if (bottom - top + 1 > MAX_ROWS) toast(`Only the first ${MAX_ROWS} rows were copied.`);
    if (!complete) {
      // Rows of the range not loaded yet: loaded, then written with the async clipboard API.
      copyRange(grid).then((text) => {
        grid.lastCopy = text;
        if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
      });
    }
  });
  root.addEventListener('paste', (event) => {
    const text = event.clipboardData ? event.clipboardData.getData('text/plain') : '';
    event.preventDefault();
    if (text) pasteText(grid, text);
  });
}

/** Puts the loaded part of the range on the clipboard synchronously (the copy event's data
 *  must be set before the handler returns); whether that was the whole range. */
function copySync(grid, event) {
  if (!event.clipboardData) return false;
  const { top, bottom, left, right } = grid.table.range();
  const columns = grid.table.columns.slice(left, right + 1);
  const rows = [];
  for (let r = top; r <= Math.min(bottom, top + MAX_ROWS - 1); r += 1) {
    const record = grid.source.at(r);
    if (!record) break;
    rows.push(columns.map((column) => {
      if (column.id === '_recordId') return record.id;
      if (column.id === '_path') return record.path || '';
      return toText(column, cellOf(record, column.id));
    }));
  }
  const text = formatTsv(rows);
  event.clipboardData.setData('text/plain', text);
  grid.lastCopy = text;
  return rows.length === Math.min(bottom, top + MAX_ROWS - 1) - top + 1;
}
