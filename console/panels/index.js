// The console's panels (issue 23, engineer B's part): what the view page, a record's menu and
// the company page offer besides the grid itself, each only when the key's privileges and its
// company's plan allow it (branches: Team; history, share links: Enterprise), and the live
// updates of the open view. The view page (app.js) builds `ctx` and shows what these
// answer; each panel is a module of its own and talks to the API only through `ctx.api`.

import { columnsDialog } from './columns.js';
import { historyPanel } from './history.js';
import { branchesDialog } from './branches.js';
import { importDialog, exportDialog } from './transfer.js';
import { shareDialog } from './shares.js';
import { keysDialog } from './keys.js';
import { startLive as follow } from './live.js';
import { toast, planAtLeast } from './common.js';

/** Runs a panel, showing a failure to open it as an error toast. */
function open(ctx, show) {
  return () => Promise.resolve().then(show).catch((error) => toast(error.message || String(error), 'error'));
}

const isCompanyKey = (ctx) => !ctx.key || ctx.key.kind !== 'view';

/** The grid toolbar's panel buttons: [{id, label, title, run()}]. */
export function viewToolbar(ctx) {
  const items = [];
  const manage = isCompanyKey(ctx) && ctx.can('manage');
  if (manage) {
    items.push({ id: 'columns', label: 'Columns', title: 'Add, edit, hide and order columns; languages and dependencies', run: open(ctx, () => columnsDialog(ctx)) });
  }
  if (manage && planAtLeast(ctx, 'team')) {
    items.push({ id: 'branches', label: 'Branches', title: 'Create, open and delete branches; merge with a preview', run: open(ctx, () => branchesDialog(ctx)) });
  }
  if (ctx.can('write')) {
    items.push({ id: 'import', label: 'Import', title: 'Import a CSV, TSV or XLSX file into this view', run: open(ctx, () => importDialog(ctx)) });
  }
  if (ctx.can('read')) {
    items.push({ id: 'export', label: 'Export', title: 'Download this view as CSV or XLSX', run: open(ctx, () => exportDialog(ctx)) });
  }
  if (manage && planAtLeast(ctx, 'enterprise')) {
    items.push({ id: 'share', label: 'Share', title: 'A read-only link to this view', run: open(ctx, () => shareDialog(ctx)) });
  }
  return items;
}

/** A record's context menu: [{id, label, run()}]. */
export function recordMenu(ctx, record) {
  if (!ctx.can('read') || !planAtLeast(ctx, 'enterprise')) return [];
  return [{ id: 'history', label: 'History', run: open(ctx, () => historyPanel(ctx, record)) }];
}

/** The company page's entries: [{id, label, run()}]. */
export function companyMenu(ctx) {
  if (!isCompanyKey(ctx) || !ctx.can('owner')) return [];
  return [{ id: 'keys', label: 'API keys', run: open(ctx, () => keysDialog(ctx)) }];
}

/** Follows the open view's changes; answers stop(). */
export function startLive(ctx, onChange) {
  return follow(ctx, onChange);
}
