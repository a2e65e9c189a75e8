// The view page: the toolbar (filter, sort, status filter, search, add record, engineer B's
// panel buttons) over the grid of one view, and the state that ties them together: the query,
// the data source, the table, the URL. Builds the context B's panels get (see panels/index.js).

import { api } from './api.js';
import { h, replace, toast, attempt, promptText, confirmAction, dialog } from './ui.js';
import * as ui from './ui.js';
import { can, setCrumbs, navigate, keyInfo, parseRoute } from './app.js';
import { trailOf } from './browse.js';
import { GridTable } from './grid/table.js';
import { RecordSource, ListSource } from './grid/source.js';
import { downloadFile, editCell, readRecord, writeCells } from './grid/editors.js';
import { cellOf } from './grid/cells.js';
import { onGridKey } from './grid/keyboard.js';
import { wireClipboard } from './grid/clipboard.js';
import {
  stateFromParams, saveToUrl, toListing, editFilters, editSort, statusControls, searchColumns, STATUSES,
} from './grid/query.js';
import { viewToolbar, recordMenu, startLive } from './panels/index.js';

const enc = encodeURIComponent;
/** Records the search reads per column when it looks in several columns. */
const SEARCH_PER_COLUMN = 200;

/** The grid's columns: the frozen record id and path, then the view's. */
function gridColumns(view) {
  return [
    { id: '_recordId', name: 'Record ID', type: 'singleLine', frozen: true },
    { id: '_path', name: 'Path', type: 'path', frozen: true },
    ...view.columns,
  ];
}

/** The records matching the search: server-side `contains` when it looks in one column; the
 *  union of each column's first matches when several (the query language ANDs conditions;
 *  at most 20 columns, asked at once). */
async function searchSource(grid, onData) {
  const columns = searchColumns(grid.table ? grid.table.columns : gridColumns(grid.view));
  if (!columns.length) throw new Error('This view has no text columns to search.');
  const base = toListing(grid.state);
  const text = grid.state.search;
  if (columns.length === 1) {
    const query = { ...(base.query || {}), [columns[0].id]: { contains: text } };
    return new RecordSource(grid.viewId, { query, sort: base.sort }, onData, grid.onError);
  }
  const pages = await Promise.all(columns.slice(0, 20).map((column) => api.get(
    `/v1/views/${enc(grid.viewId)}/records`, {
      query: { ...(base.query || {}), [column.id]: { contains: text } },
      sort: base.sort, page: { offset: 0, limit: SEARCH_PER_COLUMN }, fetchFileOption: 'all' })));
  const seen = new Map();
  for (const record of pages.flat()) if (!seen.has(record.id)) seen.set(record.id, record);
  return new ListSource([...seen.values()], onData);
}

/** A new data source for the current state (the old one keeps serving if this fails). */
async function makeSource(grid) {
  const onData = () => grid.table && grid.table.refresh();
  const next = grid.state.search ? await searchSource(grid, onData)
    : new RecordSource(grid.viewId, toListing(grid.state), onData, grid.onError);
  if (grid.source) grid.source.stop();
  grid.source = next;
  if (grid.table) {
    grid.table.source = grid.source;
    grid.table.moveTo(0, grid.table.active.col);
    grid.table.scrollToRow(0);
  }
  saveToUrl(grid.viewId, grid.state);
  updateCounts(grid);
}

/** A click on a column's name sorts by it: ascending, then descending, then not at all (the
 *  Sort builder does the same by keyboard, with several keys). */
function sortBy(grid, column) {
  const key = grid.state.sort.length === 1 && grid.state.sort[0].field === column.id ? grid.state.sort[0] : null;
  if (!key) grid.state.sort = [{ field: column.id, dir: 'asc' }];
  else if (key.dir === 'asc') grid.state.sort = [{ field: column.id, dir: 'desc' }];
  else grid.state.sort = [];
  attempt(() => makeSource(grid));
}

function updateCounts(grid) {
  const { filters, sort, status, search } = grid.state;
  grid.buttons.filter.textContent = filters.length ? `Filter (${filters.length})` : 'Filter';
  grid.buttons.sort.textContent = sort.length ? `Sort (${sort.length})` : 'Sort';
  if (grid.table) grid.table.markSort(sort);
  const total = grid.source.total;
  const note = total === null ? 'loading…' : `${total.toLocaleString()} records`;
  grid.count.textContent = `${note}${status || search || filters.length ? ' (filtered)' : ''}`;
}

function toolbar(grid) {
  const filter = h('button', { type: 'button', id: 'filter-button', onclick: async () => {
    const filters = await editFilters(grid.table.columns, grid.state.filters);
    if (filters) { grid.state.filters = filters; await attempt(() => makeSource(grid)); }
  } }, 'Filter');
  const sort = h('button', { type: 'button', id: 'sort-button', onclick: async () => {
    const keys = await editSort(grid.table.columns, grid.state.sort);
    if (keys) { grid.state.sort = keys; await attempt(() => makeSource(grid)); }
  } }, 'Sort');
  const search = h('input', { type: 'search', id: 'search', value: grid.state.search,
    placeholder: 'Search text columns', 'aria-label': 'Search the text columns' });
  let timer = null;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { grid.state.search = search.value.trim().slice(0, 200); attempt(() => makeSource(grid)); }, 300);
  });
  const status = statusControls(grid.view.columns, grid.state, (value) => {
    grid.state.status = value;
    attempt(() => makeSource(grid));
  });
  const goTo = h('input', { type: 'number', id: 'go-to-row', min: 1, placeholder: 'Row', 'aria-label': 'Go to row number',
    onkeydown: (e) => {
      if (e.key !== 'Enter') return;
      e.preventDefault();
      const row = Number.parseInt(goTo.value, 10);
      if (Number.isFinite(row) && row >= 1) {
        grid.jump(Math.min(row, grid.source.total || 1) - 1);
        grid.table.root.focus({ preventScroll: true });
      }
    } });
  grid.buttons = { filter, sort };
  grid.count = h('span', { class: 'count', role: 'status' });
  const add = grid.canWrite ? h('button', { type: 'button', id: 'add-record', onclick: () => addRecord(grid) }, 'Add record') : null;
  const extra = viewToolbar(grid.ctx).map((b) => h('button', { type: 'button', id: `panel-${b.id}`,
    title: b.title || b.label, onclick: () => b.run() }, b.label));
  return h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Grid tools' },
    filter, sort, status, search, goTo, add, ...extra, grid.count);
}

async function addRecord(grid) {
  const id = await promptText('Add a record', 'Record ID');
  if (id === null) return;
  const made = await attempt(() => api.send('POST', `/v1/views/${enc(grid.viewId)}/records`, [{ id, cells: [] }]));
  if (made) {
    toast(`Added record “${id}”.`);
    grid.source.reset();
  }
}

/** The record context menu: B's entries (history) and deleting the record. */
async function recordContext(grid, row) {
  const record = grid.source.at(row);
  if (!record) return;
  const entries = [...recordMenu(grid.ctx, record), ...statusEntries(grid, record)];
  if (grid.canWrite) {
    entries.push({ id: 'delete-record', label: 'Delete record', run: () => deleteRecord(grid, record) });
  }
  if (!entries.length) return;
  const body = h('div', { class: 'menu', role: 'menu' }, entries.map((e) => h('button', {
    type: 'button', role: 'menuitem', id: `menu-${e.id}`, 'data-entry': e.id }, e.label)));
  let chosen = null;
  body.addEventListener('click', (e) => {
    const id = e.target.dataset.entry;
    chosen = entries.find((x) => x.id === id);
    if (chosen) e.target.closest('dialog').querySelector('[data-action="Close"]')?.click();
  });
  await dialog({ title: `Record ${record.id}`, body, actions: [{ label: 'Close' }] });
  if (chosen) await attempt(() => chosen.run());
}

/** Status entries for the active cell: a target's dependency status, a source's lock. */
function statusEntries(grid, record) {
  const column = grid.table.columns[grid.table.active.col];
  if (!grid.canWrite || !column || column.type !== 'language') return [];
  const set = (status, extra) => async () => {
    const fresh = await readRecord(grid.viewId, record);
    const written = await writeCells(grid.viewId, fresh.record, fresh.etag,
      [{ columnId: column.id, ...status }], grid.table.columns, extra);
    if (written) grid.source.update([written]);
  };
  if (column.localizationType === 'targetLanguage') {
    const cell = cellOf(record, column.id);
    // The API sets the flag on the cells a write names with markUpdatedCellsWithMTFlag, and
    // clears it on a write of the cell without it: the value is written again as it is.
    const mt = cell.isMT
      ? { id: 'mt-clear', label: `Clear ${column.name}'s machine-translation flag`, run: set({ value: cell.value ?? null }) }
      : { id: 'mt-mark', label: `Mark ${column.name} machine-translated`,
        run: set({ value: cell.value ?? null }, { markUpdatedCellsWithMTFlag: true }) };
    return [...STATUSES.filter((s) => s !== 'unset').map((s) => ({
      id: `status-${s}`, label: `Mark ${column.name} ${s === 'upToDate' ? 'up to date' : 'out of date'}`,
      run: set({ dependencyStatus: s }) })), mt];
  }
  const locked = ['locked', 'lockAllLanguages'].includes(cellOf(record, column.id).sourceStatus);
  return [{ id: 'lock', label: locked ? `Unlock ${column.name}` : `Lock ${column.name}`,
    run: set({ sourceStatus: locked ? 'unset' : 'locked' }) }];
}

async function deleteRecord(grid, record) {
  if (!(await confirmAction('Delete record', `Delete record “${record.id}”?`))) return;
  await api.send('DELETE', `/v1/views/${enc(grid.viewId)}/records`, { ids: [record.id] });
  toast(`Deleted record “${record.id}”.`);
  grid.source.reset();
}

/** Marks when the rows asked for are first painted (the Performance API measures the browser
 *  test reads): `gridd:first-rows` from opening the view, `gridd:jump` from `jump(row)`. */
function watchPaint(grid, painted) {
  if (!painted.length) return;
  const done = (name, start) => requestAnimationFrame(() => {
    performance.mark(`${name}:painted`);
    performance.measure(name, start, `${name}:painted`);
  });
  if (!grid.firstPainted) {
    grid.firstPainted = true;
    done('gridd:first-rows', 'gridd:open');
  }
  if (grid.jumpTo !== null && painted.includes(grid.jumpTo)) {
    grid.jumpTo = null;
    done('gridd:jump', 'gridd:jump-start');
  }
}

function buildContext(grid, branch) {
  const route = parseRoute();
  return {
    api, ui, key: keyInfo(), can, navigate,
    route: { viewId: grid.viewId, branchId: grid.view.gridId,
      gridId: route.params.get('grid') || (branch && branch.isMaster ? branch.id : grid.view.gridId) },
    view: grid.view, grid: branch, columns: grid.view.columns,
    reload: () => navigate(location.hash),
    refresh: () => grid.source.reload(),
    activeRecord: () => grid.source.at(grid.table.active.row) || null,
    /** The listing's `query` and `sort` the grid shows now (filters, status filter, sort). */
    listing: () => toListing(grid.state),
  };
}

/** Builds the page of view `viewId`; answers the function that tears it down. */
export async function viewPage(main, viewId, params) {
  performance.clearMarks();
  performance.clearMeasures();
  performance.mark('gridd:open');
  let view;
  try {
    view = await api.get(`/v1/views/${enc(viewId)}`);
  } catch (err) {
    replace(main, h('h1', {}, 'Cannot open this view'), h('p', { role: 'alert' }, err.message));
    return () => {};
  }
  const branch = await api.get(`/v1/branches/${enc(view.gridId)}`).catch(() => null);
  setCrumbs([...trailOf('view', viewId).slice(0, -1), { label: view.name }]);
  const grid = { viewId, view, state: stateFromParams(params), canWrite: can('write'), jumpTo: null };
  grid.onError = (err) => toast(err.message, 'error');
  grid.ctx = buildContext(grid, branch);
  main.classList.add('grid-page');
  const host = h('div', { class: 'grid-host' });
  replace(main, h('div', { class: 'view-head' }, h('h1', {}, view.name)));
  grid.source = new RecordSource(viewId, toListing(grid.state), () => {}, grid.onError);
  main.append(toolbar(grid), host);
  await startGrid(grid, host);
  const stopLive = startLive(grid.ctx, (change) => onLiveChange(grid, change));
  window.griddGrid = grid;
  return () => {
    stopLive();
    grid.source.stop();
    grid.table.destroy();
    main.classList.remove('grid-page');
    if (window.griddGrid === grid) window.griddGrid = null;
  };
}

async function startGrid(grid, host) {
  let saveTimer = null;
  const saveRow = () => {
    clearTimeout(saveTimer);
    saveTimer = setTimeout(() => {
      grid.state.row = grid.table.firstVisible().first;
      saveToUrl(grid.viewId, grid.state);
    }, 250);
  };
  grid.table = new GridTable(host, {
    viewId: grid.viewId, columns: gridColumns(grid.view), source: grid.source,
    label: `Records of view ${grid.view.name}`,
    onEdit: (row, col) => attempt(() => editCell(grid, row, col)),
    onContext: (row) => recordContext(grid, row),
    onActive: saveRow,
    onSort: (column) => sortBy(grid, column),
    onPaint: (painted) => { watchPaint(grid, painted); updateCounts(grid); },
    download: (file) => downloadFile(grid.viewId, file),
  });
  grid.table.viewport.addEventListener('scroll', saveRow, { passive: true });
  grid.table.root.addEventListener('keydown', (e) => onGridKey(grid, e));
  wireClipboard(grid);
  grid.openMenu = (row) => recordContext(grid, row);
  /** Scrolls to `row` and marks the time until it is painted. */
  grid.jump = (row) => {
    performance.mark('gridd:jump-start');
    grid.jumpTo = row;
    grid.table.scrollToRow(row);
    grid.table.moveTo(row, grid.table.active.col);
  };
  await attempt(() => makeSource(grid));
  if (grid.state.row) {
    const row = grid.state.row;
    const waitTotal = () => (grid.source.total === null ? setTimeout(waitTotal, 30) : grid.table.scrollToRow(row));
    waitTotal();
  }
}

/** A change made elsewhere (B's live updates): the rows in sight are read again (the cached
 *  copies stay shown meanwhile); a resync starts over; a schema change reopens the view. */
function onLiveChange(grid, change) {
  if (change.kind === 'schema') navigate(location.hash);
  else if (change.kind === 'resync') grid.source.reset();
  else grid.source.reload();
}
