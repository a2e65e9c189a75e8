// What a cell shows and what it holds: the display of each column type (selection chips in
// their option's color, check marks, numbers, dates, file names with download links), the
// translation status and lock of a language cell, and conversions between values and the text
// of a TSV clipboard. Pure functions over the API's record and column shapes.

import { h } from '../ui.js';

/** The API's selection colors (grid/schema.rs SelectionColor) as CSS classes `opt-<color>`. */
const COLORS = new Set(['atlantis', 'crusta', 'lightCyan', 'burntSlena', 'brightRed', 'seaGreen',
  'shamRock', 'dodgerBlue', 'sun', 'midGrey', 'fuchsiaBlue', 'shipCove', 'funBlue', 'froly',
  'lightLavender']);

/** Column types whose cells are text (searched by the search box). */
export const TEXT_TYPES = new Set(['singleLine', 'multipleLines', 'richText', 'markdown', 'html',
  'language', 'json', 'yaml']);

/** The cell of `record` for column `columnId`, or an empty one. */
export function cellOf(record, columnId) {
  if (!record || !record.cells) return { columnId, value: null };
  return record.cells.find((c) => c.columnId === columnId) || { columnId, value: null };
}

/** Whether the cell refuses edits: a formula, a column the view does not let edit, a locked
 *  source cell, or a target whose source locks all languages. */
export function isReadOnly(column, record) {
  if (column.type === 'formula' || column.editable === false || column.frozen) return true;
  const cell = cellOf(record, column.id);
  if (cell.sourceStatus === 'locked' || cell.sourceStatus === 'lockAllLanguages') return true;
  if (column.dependsOn) {
    const source = cellOf(record, column.dependsOn);
    if (source.sourceStatus === 'lockAllLanguages') return true;
  }
  return false;
}

/** Whether the cell is locked by a status (shown with a lock). */
export function isLocked(column, record) {
  return column.type !== 'formula' && column.editable !== false && !column.frozen
    && isReadOnly(column, record);
}

/** CSS classes of a cell: its type, its dependency status (target cells), its machine-
 *  translation flag (`isMT`), its lock. */
export function cellClasses(column, record) {
  const classes = ['cell', `t-${column.type}`];
  const cell = cellOf(record, column.id);
  if (column.localizationType === 'targetLanguage' && cell.dependencyStatus) {
    classes.push(`st-${cell.dependencyStatus}`);
  }
  if (cell.isMT) classes.push('mt');
  if (isLocked(column, record)) classes.push('locked');
  if (column.type === 'formula' || column.editable === false) classes.push('readonly');
  return classes.join(' ');
}

/** A selection column's options as [{value, color}]. */
export function selectionOptions(column) {
  if (column.selection && Array.isArray(column.selection.options)) return column.selection.options;
  return (column.selectionOptions || []).map((value) => ({ value }));
}

function chip(value, options) {
  const option = options.find((o) => o.value === value);
  const color = option && COLORS.has(option.color) ? option.color : 'none';
  return h('span', { class: `chip opt-${color}` }, value);
}

function fileName(file) {
  if (typeof file === 'string') return file;
  return file.originalName || file.name || file.id || '';
}

/** The display of a cell's value. `download(file)` makes a files cell's links. */
export function renderValue(column, record, download) {
  const cell = cellOf(record, column.id);
  const value = cell.value;
  if (value === null || value === undefined || value === '') return '';
  switch (column.type) {
    case 'boolean':
      return h('span', { class: value ? 'check on' : 'check', 'aria-label': value ? 'yes' : 'no' },
        value ? '✔' : '✘');
    case 'singleSelection':
      return chip(String(value), selectionOptions(column));
    case 'multipleSelections':
      return (Array.isArray(value) ? value : [value]).map((v) => chip(String(v), selectionOptions(column)));
    case 'files':
      return (Array.isArray(value) ? value : [value]).map((f) => (download
        ? h('a', { href: '#', class: 'file', onclick: (e) => { e.preventDefault(); download(f); } }, fileName(f))
        : h('span', { class: 'file' }, fileName(f))));
    case 'reference':
      return toText(column, cell);
    case 'datetime':
      return String(value).replace('T', ' ').replace(/(\.\d+)?(Z|\+00:00)$/, '');
    default:
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
}

/** A cell's value as one line of clipboard text. Lists join with ", ". */
export function toText(column, cell) {
  const value = cell.value;
  if (value === null || value === undefined) return '';
  if (column.type === 'reference' && Array.isArray(cell.referencedIds)) return cell.referencedIds.join(', ');
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'object' ? fileName(v) : String(v))).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The value to write for clipboard `text` in `column`; `undefined` when the text does not fit
 *  the type (the cell is then skipped). */
export function fromText(column, text) {
  const trimmed = text.trim();
  switch (column.type) {
    case 'number': {
      if (trimmed === '') return null;
      const n = Number(trimmed.replace(/,/g, ''));
      return Number.isFinite(n) ? n : undefined;
    }
    case 'boolean': {
      const t = trimmed.toLowerCase();
      if (['true', 'yes', '1', '✔', 'x'].includes(t)) return true;
      if (['false', 'no', '0', '✘', ''].includes(t)) return false;
      return undefined;
    }
    case 'multipleSelections':
    case 'reference':
      return trimmed === '' ? [] : trimmed.split(/\s*[,;]\s*/).filter(Boolean);
    case 'datetime':
      return trimmed === '' ? null : trimmed;
    case 'files':
    case 'formula':
      return undefined;
    default:
      return text;
  }
}
