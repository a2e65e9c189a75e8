// Keyboard use of the grid, spreadsheet style: arrows move (Shift extends the range), Page
// Up/Down move a screen, Home/End go to the row's ends (with Ctrl: the grid's), Enter or F2
// edits, typing a character starts editing with it, Delete clears the range's editable cells,
// Tab/Shift+Tab move right/left and leave the grid at its edges, Ctrl+A selects everything,
// the context menu key (or Shift+F10) opens the record's menu.
// Esc shrinks the range to the active cell. Copy and paste are the browser's copy/paste events
// (clipboard.js).

import { editCell } from './editors.js';
import { pasteText, MAX_ROWS } from './clipboard.js';
import { toast } from '../ui.js';
import { ROW_HEIGHT } from './table.js';

/** Clears the selected cells (a paste of empty text over the range). */
function clearRange(grid) {
  const { top, bottom, left, right } = grid.table.range();
  if (bottom - top + 1 > MAX_ROWS) {
    toast(`Select at most ${MAX_ROWS} rows to clear them.`, 'error');
    return undefined;
  }
  const rows = Array.from({ length: bottom - top + 1 }, () => Array(right - left + 1).fill(''));
  return pasteText(grid, rows.map((r) => r.join('\t')).join('\n'));
}

function moves(grid, event) {
  const { table } = grid;
  const { row, col } = table.active;
  const screen = Math.max(1, Math.floor(table.viewport.clientHeight / ROW_HEIGHT) - 1);
  const last = Math.max(0, table.total() - 1);
  const ctrl = event.ctrlKey || event.metaKey;
  switch (event.key) {
    case 'ArrowDown': return ctrl ? [last, col] : [row + 1, col];
    case 'ArrowUp': return ctrl ? [0, col] : [row - 1, col];
    case 'ArrowRight': return ctrl ? [row, table.columns.length - 1] : [row, col + 1];
    case 'ArrowLeft': return ctrl ? [row, 0] : [row, col - 1];
    case 'PageDown': return [row + screen, col];
    case 'PageUp': return [row - screen, col];
    case 'Home': return ctrl ? [0, 0] : [row, 0];
    case 'End': return ctrl ? [last, table.columns.length - 1] : [row, table.columns.length - 1];
    default: return null;
  }
}

/** Handles one keydown on the grid element. */
export function onGridKey(grid, event) {
  const { table } = grid;
  if (event.target !== table.root) return;
  const target = moves(grid, event);
  if (target) {
    event.preventDefault();
    table.moveTo(target[0], target[1], event.shiftKey);
    return;
  }
  const { row, col } = table.active;
  const ctrl = event.ctrlKey || event.metaKey;
  if (event.key === 'Tab') {
    const next = col + (event.shiftKey ? -1 : 1);
    if (next < 0 || next >= table.columns.length) return;
    event.preventDefault();
    table.moveTo(row, next);
  } else if (event.key === 'Escape') {
    table.moveTo(row, col);
  } else if (event.key === 'ContextMenu' || (event.shiftKey && event.key === 'F10')) {
    event.preventDefault();
    grid.openMenu(row);
  } else if (event.key === 'Enter' || event.key === 'F2') {
    event.preventDefault();
    editCell(grid, row, col);
  } else if (event.key === 'Delete' || event.key === 'Backspace') {
    event.preventDefault();
    clearRange(grid);
  } else if (ctrl && event.key.toLowerCase() === 'a') {
    event.preventDefault();
    table.anchor = { row: 0, col: 0 };
    table.active = { row: Math.max(0, table.total() - 1), col: table.columns.length - 1 };
    table.refresh();
  } else if (event.key === ' ' && table.columns[col].type === 'boolean') {
    event.preventDefault();
    editCell(grid, row, col);
  } else if (event.key.length === 1 && !ctrl && !event.altKey) {
    event.preventDefault();
    editCell(grid, row, col, event.key);
  }
}
