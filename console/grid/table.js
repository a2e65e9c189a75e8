// The virtualized table: only the rows and columns in sight exist in the DOM. Rows have one
// fixed height; a grid taller than browsers allow an element to be (1M rows x 28 px) maps the
// scroll position to a row with a ratio, so the scroll bar spans every row. The record id and
// path columns stay frozen at the left. Owns the DOM of the grid, the active cell and the
// selected range, column widths (in memory for the session) and mouse input; keyboard.js,
// editors.js and clipboard.js act through its methods. Knows nothing of the API.

import { h } from '../ui.js';
import { cellClasses, renderValue } from './cells.js';

export const ROW_HEIGHT = 28;
/** The spacer's height at most: under Firefox's (17.8M px) and Chromium's (33.5M px) limits. */
const MAX_SCROLL_PX = 8_000_000;
const MIN_WIDTH = 48;
/** Column widths set by resizing, per view and column, for this page's life only. */
const widths = new Map();

function defaultWidth(column) {
  if (column.id === '_recordId') return 160;
  if (column.id === '_path') return 120;
  if (column.type === 'boolean') return 80;
  if (column.type === 'number') return 110;
  return 200;
}

export class GridTable {
  /** `options`: {viewId, columns, source, label, onEdit(row, col, text?), onContext(row, event),
   *  onActive(row, col), download(file)}. */
  constructor(host, options) {
    Object.assign(this, options);
    this.active = { row: 0, col: 0 };
    this.anchor = { row: 0, col: 0 };
    this.renderKey = '';
    this.painted = [];
    this.build(host);
    this.layoutColumns();
    this.observer = new ResizeObserver(() => this.schedule());
    this.observer.observe(this.viewport);
  }

  build(host) {
    this.headInner = h('div', { class: 'grid-head-inner', role: 'row', 'aria-rowindex': 1 });
    this.head = h('div', { class: 'grid-head' }, this.headInner);
    this.layer = h('div', { class: 'grid-layer', role: 'rowgroup' });
    this.spacer = h('div', { class: 'grid-spacer' }, this.layer);
    this.viewport = h('div', { class: 'grid-viewport' }, this.spacer);
    this.root = h('div', {
      class: 'grid', role: 'grid', tabindex: 0, 'aria-label': this.label,
      'aria-multiselectable': 'true',
    }, this.head, this.viewport);
    this.viewport.addEventListener('scroll', () => this.schedule(), { passive: true });
    this.layer.addEventListener('mousedown', (e) => this.onMouseDown(e));
    this.layer.addEventListener('dblclick', (e) => this.onDoubleClick(e));
    this.layer.addEventListener('contextmenu', (e) => this.onContextMenu(e));
    host.append(this.root);
  }

  /** Positions of every column (frozen ones first) and the header cells. */
  layoutColumns() {
    this.positionColumns();
    this.root.setAttribute('aria-colcount', this.columns.length);
    this.headInner.replaceChildren(...this.columns.map((c, i) => this.headerCell(c, i)));
    this.renderKey = '';
    this.schedule();
  }

  /** Each column's width (resized, or its type's default) and x offset. */
  positionColumns() {
    let x = 0;
    this.frozenWidth = 0;
    for (const column of this.columns) {
      column.width = widths.get(`${this.viewId}:${column.id}`) || defaultWidth(column);
      column.x = x;
      x += column.width;
      if (column.frozen) this.frozenWidth = x;
    }
    this.totalWidth = x;
  }

  headerCell(column, index) {
    const handle = h('span', {
      class: 'resize', role: 'separator', tabindex: 0, 'aria-orientation': 'vertical',
      'aria-label': `Resize column ${column.name}`,
      onkeydown: (e) => {
        if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
          e.preventDefault();
          this.setWidth(column, column.width + (e.key === 'ArrowLeft' ? -16 : 16));
        }
      },
      onpointerdown: (e) => this.startResize(e, column),
    });
    const cell = h('div', {
      class: `head-cell${column.frozen ? ' frozen' : ''}`, role: 'columnheader',
      'aria-colindex': index + 1, title: column.title || column.name,
    }, h('span', { class: 'head-name', onclick: () => this.onSort && this.onSort(column) }, column.name), handle);
    cell.style.left = `${column.x}px`;
    cell.style.width = `${column.width}px`;
    return cell;
  }

  /** Marks the sorted columns' headers (`aria-sort`); `sort` is [{field, dir}]. */
  markSort(sort) {
    this.columns.forEach((column, i) => {
      const key = sort.find((s) => s.field === column.id);
      const cell = this.headInner.children[i];
      if (key) cell.setAttribute('aria-sort', key.dir === 'asc' ? 'ascending' : 'descending');
      else cell.removeAttribute('aria-sort');
    });
  }

  startResize(event, column) {
    event.preventDefault();
    const startX = event.clientX;
    const startWidth = column.width;
    const move = (e) => this.setWidth(column, startWidth + e.clientX - startX);
    const up = () => {
      window.removeEventListener('pointermove', move);
      window.removeEventListener('pointerup', up);
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
  }

  /** Sets a column's width; the header cells are moved, not rebuilt (a focused resize handle
   *  keeps the focus). */
  setWidth(column, width) {
    widths.set(`${this.viewId}:${column.id}`, Math.max(MIN_WIDTH, Math.round(width)));
    this.positionColumns();
    this.columns.forEach((c, i) => {
      const cell = this.headInner.children[i];
      cell.style.left = `${c.x}px`;
      cell.style.width = `${c.width}px`;
    });
    this.refresh();
  }

  total() {
    return this.source.total || 0;
  }

  /** The scroll geometry: how many virtual pixels one scrolled pixel stands for. */
  geometry() {
    const viewHeight = this.viewport.clientHeight;
    const virtual = this.total() * ROW_HEIGHT;
    const spacer = Math.min(virtual, MAX_SCROLL_PX);
    const ratio = virtual > spacer && spacer > viewHeight ? (virtual - viewHeight) / (spacer - viewHeight) : 1;
    return { viewHeight, spacer, ratio };
  }

  /** The first row in sight and how far it is scrolled out of the top. */
  firstVisible() {
    const { ratio } = this.geometry();
    const top = this.viewport.scrollTop * ratio;
    const first = Math.min(Math.floor(top / ROW_HEIGHT), Math.max(0, this.total() - 1));
    return { first, offset: top - first * ROW_HEIGHT };
  }

  /** Scrolls so that `row` is the first row in sight (the spacer sized first, so that the
   *  browser does not clamp the position to a height from before the rows were counted). */
  scrollToRow(row) {
    const { ratio } = this.sizeSpacer();
    this.viewport.scrollTop = (Math.max(0, row) * ROW_HEIGHT) / ratio;
    this.schedule();
  }

  /** Sets the spacer's size from the row count and column widths; the geometry. */
  sizeSpacer() {
    const geometry = this.geometry();
    this.spacer.style.height = `${Math.max(geometry.spacer, 1)}px`;
    this.spacer.style.width = `${this.totalWidth}px`;
    return geometry;
  }

  /** Scrolls the least needed to show cell (row, col). */
  reveal(row, col) {
    const { first } = this.firstVisible();
    const rows = Math.max(1, Math.floor(this.viewport.clientHeight / ROW_HEIGHT) - 1);
    if (row < first) this.scrollToRow(row);
    else if (row >= first + rows) this.scrollToRow(row - rows + 1);
    const column = this.columns[col];
    if (column && !column.frozen) {
      const left = this.viewport.scrollLeft + this.frozenWidth;
      const right = this.viewport.scrollLeft + this.viewport.clientWidth;
      if (column.x < left) this.viewport.scrollLeft = column.x - this.frozenWidth;
      else if (column.x + column.width > right) this.viewport.scrollLeft = column.x + column.width - this.viewport.clientWidth;
    }
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this.render();
    });
  }

  /** Forces the visible cells to be drawn again (data or selection changed). */
  refresh() {
    this.renderKey = '';
    this.schedule();
  }

  /** The columns in sight: frozen ones and those crossing the scrolled area. */
  visibleColumns() {
    const left = this.viewport.scrollLeft + this.frozenWidth;
    const right = this.viewport.scrollLeft + this.viewport.clientWidth;
    return this.columns.map((c, i) => i).filter((i) => {
      const c = this.columns[i];
      return c.frozen || (c.x + c.width > left && c.x < right);
    });
  }

  render() {
    const { viewHeight } = this.sizeSpacer();
    this.root.setAttribute('aria-rowcount', this.total() + 1);
    const scrollLeft = this.viewport.scrollLeft;
    this.headInner.style.transform = `translateX(${-scrollLeft}px)`;
    for (const cell of this.headInner.children) {
      if (cell.classList.contains('frozen')) cell.style.transform = `translateX(${scrollLeft}px)`;
    }
    const { first, offset } = this.firstVisible();
    const count = Math.min(Math.ceil(viewHeight / ROW_HEIGHT) + 1, Math.max(0, this.total() - first));
    this.layer.style.transform = `translateY(${this.viewport.scrollTop - offset}px)`;
    const columns = this.visibleColumns();
    const key = `${first}:${count}:${columns.join(',')}`;
    if (key !== this.renderKey) {
      this.renderKey = key;
      this.drawRows(first, count, columns);
      this.source.want(first, first + count);
    }
    for (const cell of this.layer.querySelectorAll('.cell.frozen')) {
      cell.style.transform = `translateX(${scrollLeft}px)`;
    }
  }

  drawRows(first, count, columns) {
    const rows = [];
    const painted = [];
    for (let r = first; r < first + count; r += 1) {
      const record = this.source.at(r);
      if (record) painted.push(r);
      const row = h('div', {
        class: record ? 'grid-row' : 'grid-row loading', role: 'row', 'aria-rowindex': r + 2,
      }, columns.map((ci) => this.drawCell(r, ci, record)));
      row.style.top = `${(r - first) * ROW_HEIGHT}px`;
      rows.push(row);
    }
    this.layer.replaceChildren(...rows);
    this.painted = painted;
    if (this.onPaint) this.onPaint(painted);
    this.markActive();
  }

  drawCell(r, ci, record) {
    const column = this.columns[ci];
    let content = '';
    if (record) {
      if (column.id === '_recordId') content = record.id;
      else if (column.id === '_path') content = record.path || '';
      else content = renderValue(column, record, this.download);
    }
    const classes = column.frozen ? `cell frozen t-${column.id}` : cellClasses(column, record);
    const cell = h('div', {
      class: this.inRange(r, ci) ? `${classes} sel` : classes,
      role: 'gridcell', id: `cell-${r}-${ci}`, 'aria-colindex': ci + 1,
      'aria-readonly': column.frozen || column.type === 'formula' ? 'true' : null,
      'data-row': r, 'data-col': ci,
    }, content);
    cell.style.left = `${column.x}px`;
    cell.style.width = `${column.width}px`;
    return cell;
  }

  /** The selected range: rows and columns from the anchor to the active cell. */
  range() {
    return {
      top: Math.min(this.anchor.row, this.active.row),
      bottom: Math.max(this.anchor.row, this.active.row),
      left: Math.min(this.anchor.col, this.active.col),
      right: Math.max(this.anchor.col, this.active.col),
    };
  }

  inRange(r, c) {
    const { top, bottom, left, right } = this.range();
    return r >= top && r <= bottom && c >= left && c <= right;
  }

  markActive() {
    const id = `cell-${this.active.row}-${this.active.col}`;
    for (const old of this.layer.querySelectorAll('.cell.active')) old.classList.remove('active');
    const cell = document.getElementById(id);
    if (cell) {
      cell.classList.add('active');
      cell.setAttribute('aria-selected', 'true');
      this.root.setAttribute('aria-activedescendant', id);
    } else {
      this.root.removeAttribute('aria-activedescendant');
    }
  }

  /** Moves the active cell (clamped); with `extend` the anchor stays, growing the range. */
  moveTo(row, col, extend = false) {
    const last = Math.max(0, this.total() - 1);
    this.active = { row: Math.min(Math.max(0, row), last), col: Math.min(Math.max(0, col), this.columns.length - 1) };
    if (!extend) this.anchor = { ...this.active };
    this.reveal(this.active.row, this.active.col);
    this.refresh();
    if (this.onActive) this.onActive(this.active.row, this.active.col);
  }

  /** The cell element under a mouse event, as {row, col}. */
  hit(event) {
    const cell = event.target.closest('.cell');
    if (!cell) return null;
    return { row: Number(cell.dataset.row), col: Number(cell.dataset.col) };
  }

  onMouseDown(event) {
    if (event.button !== 0 || event.target.closest('a')) return;
    const at = this.hit(event);
    if (!at) return;
    event.preventDefault();
    this.root.focus({ preventScroll: true });
    this.moveTo(at.row, at.col, event.shiftKey);
    const move = (e) => {
      const over = document.elementFromPoint(e.clientX, e.clientY);
      const cell = over && over.closest('.grid-layer .cell');
      if (cell) this.moveTo(Number(cell.dataset.row), Number(cell.dataset.col), true);
    };
    const up = () => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  }

  onDoubleClick(event) {
    const at = this.hit(event);
    if (at && this.onEdit) this.onEdit(at.row, at.col);
  }

  onContextMenu(event) {
    const at = this.hit(event);
    if (!at || !this.onContext) return;
    event.preventDefault();
    this.moveTo(at.row, at.col);
    this.onContext(at.row, event);
  }

  /** Where cell (row, col) is on the page, for an editor laid over it. */
  cellRect(row, col) {
    const el = document.getElementById(`cell-${row}-${col}`);
    return el ? el.getBoundingClientRect() : null;
  }

  destroy() {
    this.observer.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.root.remove();
  }
}
