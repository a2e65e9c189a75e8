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

/** The toolbar's panels: id, label, title, who may use it, and the panel. */
const TOOLBAR = [
  ['columns', 'Columns', 'Add, edit, hide and order columns; languages and dependencies',
    (ctx) => manages(ctx), columnsDialog],
  ['branches', 'Branches', 'Create, open and delete branches; merge with a preview',
    (ctx) => manages(ctx) && planAtLeast(ctx, 'team'), branchesDialog],
  ['import', 'Import', 'Import a CSV, TSV or XLSX file into this view',
    (ctx) => ctx.can('write'), importDialog],
  ['export', 'Export', 'Download this view as CSV or XLSX', (ctx) => ctx.can('read'), exportDialog],
  ['share', 'Share', 'A read-only link to this view',
    (ctx) => manages(ctx) && planAtLeast(ctx, 'enterprise'), shareDialog],
];

const manages = (ctx) => isCompanyKey(ctx) && ctx.can('manage');

/** The grid toolbar's panel buttons: [{id, label, title, run()}]. */
export function viewToolbar(ctx) {
  return TOOLBAR.filter(([, , , may]) => may(ctx))
    .map(([id, label, title, , show]) => ({ id, label, title, run: open(ctx, () => show(ctx)) }));
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
