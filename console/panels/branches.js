// The branches panel of a grid: its branches (GET /v1/branches?gridId=, Team plan) with open
// (the branch's default view), delete (not the master), a form creating one from the open
// branch (POST /v1/branches?branchId=), and the merge dialog: a source and a destination
// branch, the API's mergeRecordOptions (add, update, delete, override), a diffcheck preview
// (POST /v1/branches/diffcheck on both default views, followed to its end, then
// GET /v1/branches/diffcheck/<task> with the options) and the merge itself
// (POST /v1/branches/<source>/merge, a task followed to its end) with the choice made for each
// conflicted cell of the preview (`mergeRecordConflicts`) and, when asked, the last merge's
// choices (`useLastMergeResolve`). It owns no state.

import { el, field, select, statusLine, action, confirmAction, panel, closePanel, fill, followTask, seg } from './common.js';
import { valueText } from './history.js';

/** The merge options of the API, with what each does. */
export const MERGE_OPTIONS = [
  ['add', 'Add records that are new in the source'],
  ['update', 'Update records changed in the source'],
  ['delete', 'Delete records deleted in the source'],
  ['override', 'Override: on a conflict the source wins'],
];
/** Records the preview shows (the diffcheck listing pages). */
export const PREVIEW_LIMIT = 200;

const currentBranch = (ctx) => ctx.route.branchId || ctx.route.gridId;

/** The grid of each branch the panel has listed (a branch's body does not name its grid; the
 * page's route does only when browsing led there). Kept in memory only. */
const gridOfBranch = new Map();

/** The open branch's grid id: the master branch is its grid; a branch listed before is known. */
function gridOf(ctx) {
  const here = currentBranch(ctx);
  if (ctx.grid && ctx.grid.isMaster) return ctx.grid.id;
  return gridOfBranch.get(here) || ctx.route.gridId || here;
}

async function listBranches(ctx) {
  const gridId = gridOf(ctx);
  const branches = await ctx.api.get(`/v1/branches?gridId=${seg(gridId)}`).catch((error) => {
    if (error.status === 404) {
      throw new Error('This branch\'s grid is not known here: open the branch from its grid\'s page.');
    }
    throw error;
  });
  for (const branch of branches) gridOfBranch.set(branch.id, gridId);
  return branches;
}

function branchRow(ctx, branch, state, status) {
  const here = branch.id === currentBranch(ctx);
  const open = action(here ? 'Open (current)' : 'Open', () => {
    state.close();
    ctx.navigate(`#/views/${seg(branch.defaultAccessViewId)}?grid=${seg(gridOf(ctx))}`);
  }, status, { 'aria-label': `Open branch ${branch.name}` });
  const remove = branch.isMaster ? null : confirmAction('Delete', 'Delete branch?', async () => {
    await ctx.api.send('DELETE', `/v1/branches/${seg(branch.id)}`);
    await state.refresh(`Deleted branch "${branch.name}".`);
  }, status, { 'aria-label': `Delete branch ${branch.name}`, class: 'danger', disabled: here });
  return el('li', { 'data-branch-id': branch.id },
    el('span', { class: 'panel-name' }, branch.name), ' ',
    el('span', { class: 'panel-meta' }, branch.isMaster ? 'master' : branch.status || ''),
    el('span', { class: 'panel-buttons' }, open, remove));
}

function createForm(ctx, state, status) {
  const name = el('input', { type: 'text', required: true, maxlength: 255 });
  const description = el('input', { type: 'text' });
  const create = action('Create branch', async () => {
    const answer = await ctx.api.send('POST', `/v1/branches?branchId=${seg(currentBranch(ctx))}`,
      { name: name.value.trim(), description: description.value });
    name.value = '';
    await state.refresh(`Created branch "${answer.body.name}".`);
  }, status, { class: 'primary' });
  return el('div', { class: 'panel-inline', role: 'group', 'aria-label': 'New branch from this one' },
    field('New branch name', name), field('Description', description), create);
}

/** Opens the branches panel. */
export async function branchesDialog(ctx) {
  const status = statusLine();
  const body = el('div', { class: 'panel-branches' });
  const state = {};
  const render = async () => {
    const branches = await listBranches(ctx);
    state.branches = branches;
    fill(body,
      el('ul', { class: 'panel-list', 'aria-label': 'Branches' }, branches.map((b) => branchRow(ctx, b, state, status))),
      ctx.can('manage') ? createForm(ctx, state, status) : null,
      ctx.can('manage') && branches.length > 1
        ? action('Merge…', () => mergeDialog(ctx, branches), status, { 'data-panel': 'open-merge' }) : null,
      status.node);
  };
  state.refresh = async (text) => { await render(); status.show(text); };
  state.close = () => closePanel(body);
  try { await render(); } catch (e) { fill(body, status.node); status.fail(e); }
  await panel('Branches', body);
}

/** The choices a conflicted cell offers (the API's MergeCellConflict options). */
const CONFLICT_CHOICES = [['destination', 'keep the destination\'s'], ['source', 'take the source\'s']];

/** A conflicted cell's choice, its default the override option's: the merge sends it in
 *  `mergeRecordConflicts`, so what the user picked is what happens to that cell. */
function conflictChoice(record, cell, names, choices, override) {
  const name = names[cell.columnId] || cell.columnId;
  const choice = select(CONFLICT_CHOICES, override ? 'source' : 'destination', {
    'data-panel': 'merge-choice', 'data-column-id': cell.columnId,
    'aria-label': `Conflict in ${name} of ${record.id}` });
  choices.push({ recordId: record.id, pathTag: record.path || undefined, columnId: cell.columnId, choice });
  return el('span', { class: 'panel-badge' }, 'conflict: ', choice);
}

/** One previewed record: its id, what the merge does, and each changed cell (a conflicted one
 *  with its choice). */
function previewRow(record, names, choices, override) {
  return el('tr', { 'data-record-id': record.id, class: `merge-${record.status}` },
    el('th', { scope: 'row' }, record.path ? `${record.path}/${record.id}` : record.id),
    el('td', {}, record.status),
    el('td', {}, el('ul', { class: 'panel-diff' }, record.cells.map((c) => el('li', { class: `diff-${c.status}` },
      el('strong', {}, names[c.columnId] || c.columnId), ': ',
      el('del', {}, valueText(c.destinationValue)), ' → ', el('ins', {}, valueText(c.sourceValue)),
      c.status === 'conflicted' ? conflictChoice(record, c, names, choices, override) : null)))));
}

/** `mergeRecordConflicts` from the preview's choices: one entry per record. */
export function conflictsOf(choices) {
  const byRecord = new Map();
  for (const c of choices) {
    const key = `${c.pathTag || ''}\u0000${c.recordId}`;
    if (!byRecord.has(key)) byRecord.set(key, { recordId: c.recordId, pathTag: c.pathTag, cells: [] });
    byRecord.get(key).cells.push({ columnId: c.columnId, option: c.choice.value });
  }
  return [...byRecord.values()];
}

function optionBoxes() {
  const boxes = MERGE_OPTIONS.map(([value, text]) =>
    el('input', { type: 'checkbox', value, checked: value !== 'override', id: `merge-option-${value}` }));
  const group = el('fieldset', { class: 'panel-options' }, el('legend', {}, 'Merge options'),
    boxes.map((box, i) => el('div', {}, box, el('label', { for: box.id }, MERGE_OPTIONS[i][1]))));
  return { group, chosen: () => boxes.filter((b) => b.checked).map((b) => b.value) };
}

/** Computes and shows the diffcheck preview of merging `source` into `destination`; the
 *  conflicted cells' choices go into `choices` (emptied first). */
async function preview(ctx, source, destination, options, out, status, choices) {
  choices.length = 0;
  status.show('Computing the preview…');
  const views = new URLSearchParams({
    sourceViewId: source.defaultAccessViewId, destinationViewId: destination.defaultAccessViewId });
  const started = await ctx.api.send('POST', `/v1/branches/diffcheck?${views}`);
  await followTask(ctx.api, started.body.id);
  const params = new URLSearchParams({ page: JSON.stringify({ offset: 0, limit: PREVIEW_LIMIT }) });
  for (const option of options) params.append('mergeRecordOptions', option);
  const records = await ctx.api.get(`/v1/branches/diffcheck/${seg(started.body.id)}?${params}`);
  const names = Object.fromEntries((ctx.columns || []).map((c) => [c.id, c.name]));
  fill(out, records.length
    ? el('table', { class: 'panel-table', 'aria-label': 'What the merge would change' },
      el('thead', {}, el('tr', {}, ['Record', 'Change', 'Cells (destination → source)']
        .map((t) => el('th', { scope: 'col' }, t)))),
      el('tbody', {}, records.map((r) => previewRow(r, names, choices, options.includes('override')))))
    : el('p', {}, 'The merge would change nothing with these options.'));
  status.show(`${records.length}${records.length === PREVIEW_LIMIT ? '+' : ''} records would change.`);
}

/** The merge dialog over `branches`. */
export async function mergeDialog(ctx, branches) {
  const status = statusLine();
  const here = currentBranch(ctx);
  const master = branches.find((b) => b.isMaster) || branches[0];
  const firstOther = branches.find((b) => b.id !== master.id) || master;
  const pairs = branches.map((b) => [b.id, b.isMaster ? `${b.name} (master)` : b.name]);
  const source = select(pairs, here !== master.id ? here : firstOther.id, { 'data-panel': 'merge-source' });
  const destination = select(pairs, master.id, { 'data-panel': 'merge-destination' });
  const options = optionBoxes();
  const out = el('div', { class: 'panel-preview', 'aria-live': 'polite' });
  const pick = () => {
    const s = branches.find((b) => b.id === source.value);
    const d = branches.find((b) => b.id === destination.value);
    if (s.id === d.id) throw new Error('Pick two different branches.');
    return [s, d];
  };
  // The conflicted cells' choices of the last preview (a new pair of branches or new
  // options drops them: they were made for another preview).
  const choices = [];
  const forget = () => { choices.length = 0; fill(out); };
  source.addEventListener('change', forget);
  destination.addEventListener('change', forget);
  options.group.addEventListener('change', forget);
  const lastResolve = el('input', { type: 'checkbox', id: 'merge-last-resolve', 'data-panel': 'merge-last-resolve' });
  const previewButton = action('Preview changes',
    () => preview(ctx, ...pick(), options.chosen(), out, status, choices), status, { 'data-panel': 'merge-preview' });
  const merge = action('Merge', async () => {
    const [s, d] = pick();
    status.show(`Merging "${s.name}" into "${d.name}"…`);
    const request = { destinationBranchId: d.id, mergeRecordOptions: options.chosen() };
    if (choices.length) request.mergeRecordConflicts = conflictsOf(choices);
    if (lastResolve.checked) request.useLastMergeResolve = true;
    const started = await ctx.api.send('POST', `/v1/branches/${seg(s.id)}/merge`, request);
    await followTask(ctx.api, started.body.id, (t) => status.show(`Merging… ${t.progress || 0}%`));
    // The preview (and its choices) described the branches before this merge.
    forget();
    status.show(`Merged "${s.name}" into "${d.name}".`);
    if (d.id === here && ctx.reload) await ctx.reload();
  }, status, { class: 'primary', 'data-panel': 'merge-run' });
  const body = el('div', { class: 'panel-merge' },
    el('div', { class: 'panel-inline' }, field('Merge from', source), field('Into', destination)),
    options.group,
    el('div', {}, lastResolve, el('label', { for: lastResolve.id }, 'Resolve conflicts as the last merge between these branches did')),
    el('div', { class: 'panel-buttons' }, previewButton, merge), out, status.node);
  await panel('Merge branches', body);
}
