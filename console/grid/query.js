// The grid's query state and its builders: filter conditions and sort keys edited in dialogs,
// the translation-status filter and the search box, turned into the record listing's `query`
// and `sort` (src/grid/query/mod.rs: one operator per field, conditions ANDed, sort keys in
// order), and kept in the URL hash (with the first visible row) so a link opens the same place.

import { h, dialog, field } from '../ui.js';
import { TEXT_TYPES } from './cells.js';

const ALL_OPS = ['=', '!=', 'in', 'notIn', 'isEmpty', 'isNotEmpty'];
const ORDER_OPS = ['<', '<=', '>', '>=', 'between', 'notBetween'];
const TEXT_OPS = ['contains', 'notContains', 'startsWith', 'notStartsWith', 'endsWith', 'notEndsWith', 'regexp', 'notRegexp'];
const NO_VALUE = new Set(['isEmpty', 'isNotEmpty']);
export const STATUSES = ['outOfDate', 'upToDate', 'unset'];

/** The fields a filter may name: the record id, path, who/when, and the view's columns. */
export function filterFields(columns) {
  return [
    { id: '_recordId', name: 'Record ID', type: 'singleLine' },
    { id: '_path', name: 'Path', type: 'path' },
    { id: '_lastModifiedBy', name: 'Last modified by', type: 'singleLine' },
    { id: '_lastModifiedTime', name: 'Last modified time', type: 'datetime' },
    ...columns.filter((c) => !c.frozen),
  ];
}

/** The operators the query language takes on a field of `type`. */
export function operatorsFor(type) {
  if (type === 'number' || type === 'datetime') return [...ALL_OPS, ...ORDER_OPS];
  if (type === 'path') return [...ALL_OPS, ...TEXT_OPS.filter((o) => !o.includes('egexp'))];
  if (TEXT_TYPES.has(type) || ['formula', 'files', 'reference'].includes(type)) return [...ALL_OPS, ...TEXT_OPS];
  return ALL_OPS;
}

/** A condition's value as the API takes it. */
function operand(op, text) {
  if (NO_VALUE.has(op)) return null;
  if (op === 'in' || op === 'notIn' || op === 'between' || op === 'notBetween') {
    return String(text).split(',').map((t) => t.trim());
  }
  return text;
}

/** The listing's `query` and `sort` objects for `state` (null when empty). */
export function toListing(state) {
  const query = {};
  for (const f of state.filters) query[f.field] = { [f.op]: operand(f.op, f.value) };
  if (state.status && state.status.column && state.status.value) {
    query[`${state.status.column}._dependencyStatus`] = { '=': state.status.value };
  }
  const sort = {};
  for (const s of state.sort) sort[s.field] = s.dir;
  return {
    query: Object.keys(query).length ? query : undefined,
    sort: Object.keys(sort).length ? sort : undefined,
  };
}

function parseJson(text, fallback) {
  try {
    const value = JSON.parse(text);
    return Array.isArray(value) ? value.slice(0, 50) : fallback;
  } catch {
    return fallback;
  }
}

/** The state a route's parameters hold (bad parts ignored). */
export function stateFromParams(params) {
  const [column, value] = (params.get('status') || '').split(':');
  return {
    filters: parseJson(params.get('filters') || '[]', []).filter((f) => f && f.field && f.op),
    sort: parseJson(params.get('sort') || '[]', []).filter((s) => s && s.field && (s.dir === 'asc' || s.dir === 'desc')),
    status: column && STATUSES.includes(value) ? { column, value } : null,
    search: (params.get('search') || '').slice(0, 200),
    row: Math.max(0, Number.parseInt(params.get('row') || '0', 10) || 0),
  };
}

/** Writes `state` into the URL hash without a new history entry or a route change. */
export function saveToUrl(viewId, state) {
  const params = new URLSearchParams();
  if (state.filters.length) params.set('filters', JSON.stringify(state.filters));
  if (state.sort.length) params.set('sort', JSON.stringify(state.sort));
  if (state.status) params.set('status', `${state.status.column}:${state.status.value}`);
  if (state.search) params.set('search', state.search);
  if (state.row) params.set('row', String(state.row));
  const text = params.toString();
  const hash = `#/views/${encodeURIComponent(viewId)}${text ? `?${text}` : ''}`;
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

function select(label, options, value) {
  return h('select', { 'aria-label': label }, options.map((o) => h('option', {
    value: o.value, selected: o.value === value }, o.label)));
}

/** One editable filter row. */
function filterRow(fields, filter, onRemove) {
  const fieldSel = select('Column', fields.map((f) => ({ value: f.id, label: f.name })), filter.field);
  const opSel = h('select', { 'aria-label': 'Operator' });
  const value = h('input', { type: 'text', 'aria-label': 'Value', value: filter.value ?? '',
    placeholder: 'value (lists: a, b)' });
  const fillOps = () => {
    const type = (fields.find((f) => f.id === fieldSel.value) || {}).type;
    opSel.replaceChildren(...operatorsFor(type).map((op) => h('option', { value: op, selected: op === filter.op }, op)));
    value.disabled = NO_VALUE.has(opSel.value);
  };
  fieldSel.addEventListener('change', fillOps);
  opSel.addEventListener('change', () => { value.disabled = NO_VALUE.has(opSel.value); });
  fillOps();
  const row = h('div', { class: 'builder-row' }, fieldSel, opSel, value,
    h('button', { type: 'button', 'aria-label': 'Remove condition', onclick: () => { row.remove(); onRemove(); } }, '✕'));
  row.read = () => ({ field: fieldSel.value, op: opSel.value, value: NO_VALUE.has(opSel.value) ? null : value.value });
  return row;
}

/** The filter builder; resolves with the new conditions or null. */
export async function editFilters(columns, filters) {
  const fields = filterFields(columns);
  const rows = h('div', { class: 'builder' });
  const add = (f) => rows.append(filterRow(fields, f, () => {}));
  filters.forEach(add);
  let result = null;
  const body = h('div', {}, h('p', { class: 'hint' }, 'Records matching every condition are shown.'), rows,
    h('button', { type: 'button', id: 'add-condition', onclick: () => add({ field: fields[0].id, op: '=' }) }, 'Add condition'));
  const done = await dialog({ title: 'Filter records', body, wide: true, actions: [{
    label: 'Apply', primary: true,
    run: () => {
      result = [...rows.children].map((r) => r.read());
      const seen = new Set();
      for (const f of result) {
        if (seen.has(f.field)) throw new Error('One condition per column: the query language takes one operator per field.');
        seen.add(f.field);
      }
    },
  }] });
  return done ? result : null;
}

/** The sort builder; resolves with the new sort keys or null. */
export async function editSort(columns, sort) {
  const fields = filterFields(columns).filter((f) => f.type !== 'path');
  const rows = h('div', { class: 'builder' });
  const add = (s) => {
    const fieldSel = select('Sort column', fields.map((f) => ({ value: f.id, label: f.name })), s.field);
    const dirSel = select('Direction', [{ value: 'asc', label: 'ascending' }, { value: 'desc', label: 'descending' }], s.dir);
    const row = h('div', { class: 'builder-row' }, fieldSel, dirSel,
      h('button', { type: 'button', 'aria-label': 'Remove sort key', onclick: () => row.remove() }, '✕'));
    row.read = () => ({ field: fieldSel.value, dir: dirSel.value });
    rows.append(row);
  };
  sort.forEach(add);
  let result = null;
  const body = h('div', {}, h('p', { class: 'hint' }, 'Keys apply in order.'), rows,
    h('button', { type: 'button', onclick: () => add({ field: fields[0].id, dir: 'asc' }) }, 'Add sort key'));
  const done = await dialog({ title: 'Sort records', body, actions: [{
    label: 'Apply', primary: true,
    run: () => { result = [...rows.children].map((r) => r.read()); },
  }] });
  return done ? result : null;
}

/** The status filter's controls: a target language column and a status. */
export function statusControls(columns, state, onChange) {
  const targets = columns.filter((c) => c.localizationType === 'targetLanguage');
  if (!targets.length) return null;
  const column = select('Status column', targets.map((c) => ({ value: c.id, label: c.name })),
    state.status ? state.status.column : targets[0].id);
  const status = select('Translation status', [{ value: '', label: 'any status' },
    ...STATUSES.map((s) => ({ value: s, label: s }))], state.status ? state.status.value : '');
  column.id = 'status-column';
  status.id = 'status-filter';
  const changed = () => onChange(status.value ? { column: column.value, value: status.value } : null);
  column.addEventListener('change', changed);
  status.addEventListener('change', changed);
  const legend = h('span', { class: 'legend', 'aria-label': 'Translation status colors' },
    ...STATUSES.map((s) => h('span', { class: `st-${s}` }, s)));
  return h('span', { class: 'status-filter' }, field('Status', status), column, legend);
}

/** The visible text columns the search box looks in. */
export function searchColumns(columns) {
  return columns.filter((c) => !c.frozen && TEXT_TYPES.has(c.type));
}
