// The columns panel of a view: its columns in order (edit, move up/down, hide, delete), the
// grid's columns this view hides (show), a form to add a column, and the language dependencies
// (source -> target) with their add and delete.
//
// The API has no call that reorders a view's columns: adding a column to a view
// (POST .../columns/<id>/add, Enterprise) appends it, so a move re-adds the columns from the
// moved place on, in the new order (remove then add each); the default view shows every column
// in the grid's order and can neither hide nor reorder: "Save as a new view" creates a view
// (POST /v1/views) with the chosen columns in the chosen order. Re-adding makes a column
// editable, so a move that would re-add a read-only column is refused and says so.

import { el, field, select, statusLine, action, confirmAction, panel, closePanel, fill, planAtLeast, seg } from './common.js';
import { columnForm } from './column_form.js';

/** The view, whether it is its branch's default view, and every column of the branch. */
async function load(ctx) {
  const { viewId } = ctx.route;
  const view = await ctx.api.get(`/v1/views/${seg(viewId)}`);
  // The page's branch body names the default view; without it (a Free plan reads no
  // branches), the view's branch is its grid's master.
  const home = ctx.grid && ctx.grid.defaultAccessViewId
    ? ctx.grid : await ctx.api.get(`/v1/grids/${seg(view.gridId)}`);
  const isDefault = home.defaultAccessViewId === viewId;
  const all = isDefault
    ? view.columns : (await ctx.api.get(`/v1/views/${seg(home.defaultAccessViewId)}`)).columns;
  return { view, isDefault, all };
}

const columnPath = (viewId, id) => `/v1/views/${seg(viewId)}/columns/${seg(id)}`;

/** Puts the view's columns in `order` (ids) by re-adding those from the first difference. */
export async function reorder(ctx, view, order) {
  const now = view.columns.map((c) => c.id);
  let same = 0;
  while (same < order.length && order[same] === now[same]) same += 1;
  const moved = order.slice(same);
  const readOnly = view.columns.filter((c) => moved.includes(c.id) && c.editable === false);
  if (readOnly.length) {
    throw new Error(`Moving would make ${readOnly.map((c) => c.name).join(', ')} editable; save as a new view instead.`);
  }
  for (const id of moved) {
    await ctx.api.send('POST', `${columnPath(view.id, id)}/remove`);
    await ctx.api.send('POST', `${columnPath(view.id, id)}/add`);
  }
}

function languageText(c) {
  if (c.type !== 'language') return c.type;
  const role = c.localizationType === 'sourceLanguage' ? 'source' : c.localizationType === 'targetLanguage' ? 'target' : '';
  return `language ${c.languageCode || ''} ${role}${c.dependsOn ? ` (from ${c.dependsOn})` : ''}`.trim();
}

/** One row of the view's columns with its buttons. */
function columnRow(ctx, state, column, index, status) {
  const { view } = state;
  const ids = view.columns.map((c) => c.id);
  const move = (by) => action(by < 0 ? 'Up' : 'Down', async () => {
    const order = ids.slice();
    order.splice(index, 1);
    order.splice(index + by, 0, column.id);
    await reorder(ctx, view, order);
    await state.refresh(`Moved "${column.name}".`);
  }, status, { 'aria-label': `Move ${column.name} ${by < 0 ? 'up' : 'down'}`,
    disabled: !state.perView || index + by < 0 || index + by >= ids.length });
  const hide = action('Hide', async () => {
    await ctx.api.send('POST', `${columnPath(view.id, column.id)}/remove`);
    await state.refresh(`"${column.name}" is hidden in this view.`);
  }, status, { 'aria-label': `Hide ${column.name} in this view`, disabled: !state.perView });
  const edit = action('Edit', () => state.edit(column), status, { 'aria-label': `Edit ${column.name}` });
  const remove = confirmAction('Delete', 'Delete column and cells?', async () => {
    await ctx.api.send('DELETE', columnPath(view.id, column.id));
    await state.refresh(`Deleted "${column.name}".`);
  }, status, { 'aria-label': `Delete column ${column.name}`, class: 'danger' });
  return el('li', { 'data-column-id': column.id },
    el('span', { class: 'panel-name' }, column.name), ' ',
    el('code', {}, column.id), ' ', el('span', { class: 'panel-meta' }, languageText(column)),
    el('span', { class: 'panel-buttons' }, move(-1), move(1), hide, edit, remove));
}

/** The grid's columns this view does not show, each with "Show". */
function hiddenList(ctx, state, status) {
  const shown = new Set(state.view.columns.map((c) => c.id));
  const hidden = state.all.filter((c) => !shown.has(c.id));
  if (!hidden.length) return null;
  return el('section', { 'aria-label': 'Hidden columns' }, el('h3', {}, 'Hidden in this view'),
    el('ul', { class: 'panel-list' }, hidden.map((c) => el('li', { 'data-column-id': c.id },
      el('span', { class: 'panel-name' }, c.name), ' ',
      action('Show', async () => {
        await ctx.api.send('POST', `${columnPath(state.view.id, c.id)}/add`);
        await state.refresh(`"${c.name}" is shown again.`);
      }, status, { 'aria-label': `Show ${c.name} in this view`, disabled: !state.perView })))));
}

/** "Save as a new view": the view's columns, in order, as a new view of the branch. */
function newViewForm(ctx, state, status) {
  const name = el('input', { type: 'text', value: `${state.view.name} (copy)` });
  const save = action('Save as a new view', async () => {
    const columns = state.view.columns.map((c) => ({ id: c.id, editable: c.editable !== false }));
    const branchId = ctx.route.branchId || state.view.gridId;
    const answer = await ctx.api.send('POST', '/v1/views', { name: name.value.trim(), gridId: branchId, columns });
    status.show(`Created view "${answer.body.name}".`);
    closePanel(name);
    ctx.navigate(`#/views/${encodeURIComponent(answer.body.id)}`);
  }, status);
  return el('div', { class: 'panel-inline' }, field('New view name', name), save);
}

/** The dependencies section: each source -> target with Delete, and an add form. */
async function dependencySection(ctx, state, status) {
  const viewId = state.view.id;
  const deps = await ctx.api.get(`/v1/views/${seg(viewId)}/dependencies`);
  const languages = state.all.filter((c) => c.type === 'language');
  const names = Object.fromEntries(state.all.map((c) => [c.id, c.name]));
  const pick = (role) => select(languages.map((c) => [c.id, `${c.name} (${c.id})`]),
    (languages.find((c) => c.localizationType === role) || {}).id, {});
  const source = pick('sourceLanguage');
  const target = pick('targetLanguage');
  const add = action('Add dependency', async () => {
    await ctx.api.send('POST', `/v1/views/${seg(viewId)}/dependencies`,
      { sourceColumnId: source.value, targetColumnId: target.value });
    await state.refresh('Dependency added.');
  }, status, { disabled: languages.length < 2 });
  return el('section', { 'aria-label': 'Dependencies' }, el('h3', {}, 'Dependencies (source to target language)'),
    el('ul', { class: 'panel-list' }, deps.map((d) => el('li', { 'data-dependency-id': d.id },
      `${names[d.sourceColumnId] || d.sourceColumnId} → ${names[d.targetColumnId] || d.targetColumnId}`, ' ',
      action('Delete', async () => {
        await ctx.api.send('DELETE', `/v1/views/${seg(viewId)}/dependencies/${seg(d.id)}`);
        await state.refresh('Dependency deleted.');
      }, status, { 'aria-label': `Delete dependency ${d.sourceColumnId} to ${d.targetColumnId}` })))),
    el('div', { class: 'panel-inline' }, field('Source', source), field('Target', target), add));
}

/** Opens the columns panel of the open view. */
export async function columnsDialog(ctx) {
  const status = statusLine();
  const body = el('div', { class: 'panel-columns' });
  const formSlot = el('div', { class: 'panel-form-slot' });
  const state = { changed: false };
  const render = async () => {
    Object.assign(state, await load(ctx));
    state.perView = !state.isDefault && planAtLeast(ctx, 'enterprise');
    const rows = state.view.columns.map((c, i) => columnRow(ctx, state, c, i, status));
    fill(body,
      el('p', { class: 'panel-hint' }, state.isDefault
        ? 'This is the default view: it shows every column in the grid\'s order. Hide and reorder in another view.'
        : state.perView ? 'Hide, show and move columns of this view.'
          : 'Hiding and moving columns per view needs the Enterprise plan.'),
      el('ol', { class: 'panel-list', 'aria-label': 'Columns of this view' }, rows),
      hiddenList(ctx, state, status), planAtLeast(ctx, 'team') ? newViewForm(ctx, state, status) : null,
      await dependencySection(ctx, state, status),
      el('h3', {}, 'Add or edit a column'), formSlot, status.node);
  };
  state.refresh = async (text) => { state.changed = true; await render(); status.show(text); };
  state.edit = (column) => {
    fill(formSlot, columnForm(ctx, ctx.route.viewId, column, () => state.refresh('Column saved.')));
    formSlot.querySelector('input').focus();
  };
  const freshForm = () => fill(formSlot, columnForm(ctx, ctx.route.viewId, null, async () => {
    await state.refresh('Column added.');
    freshForm();
  }));
  await render();
  freshForm();
  await panel('Columns', body);
  if (state.changed && ctx.reload) await ctx.reload();
}
