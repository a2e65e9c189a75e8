// The browse pages: company > projects > databases > grids > branches > views, each a list with
// create, rename and delete where the key may (buttons for what it may not do are not shown).
// Projects and databases need `owner`; grids, branches and views `manage` (README, Keys).
// Branches and views are renamed with gridd's PATCH /v1/branches/<id> and /v1/views/<id> (the
// hosted API has no call for it); master keeps its name.

import { api } from './api.js';
import { h, replace, promptText, confirmAction, attempt, toast } from './ui.js';
import { can, setCrumbs, navigate, baseContext } from './app.js';
import { companyMenu } from './panels/index.js';

/** Names seen while browsing (id -> {label, href, parent}), for breadcrumbs. Memory only. */
const trail = new Map();

function remember(kind, item, href, parent) {
  trail.set(`${kind}:${item.id}`, { label: item.name, href, parent });
}

function crumbsFor(key) {
  const items = [];
  let at = trail.get(key);
  while (at) {
    items.unshift({ label: at.label, href: at.href });
    at = trail.get(at.parent);
  }
  return [{ label: 'Company', href: '#/' }, ...items];
}

/** One list page. `spec`: {title, kind, items, href(item), create?, rename?, remove?, extra?}. */
function listPage(main, spec) {
  const rows = spec.items.map((item) => h('li', { class: 'entry' },
    h('a', { href: spec.href(item), class: 'entry-name' }, item.name || item.id),
    item.isMaster ? h('span', { class: 'badge' }, 'master') : null,
    h('span', { class: 'entry-actions' },
      spec.rename && !item.isMaster ? h('button', {
        type: 'button', 'aria-label': `Rename ${item.name}`,
        onclick: () => renameItem(spec, item),
      }, 'Rename') : null,
      spec.remove && !item.isMaster ? h('button', {
        type: 'button', class: 'danger', 'aria-label': `Delete ${item.name}`,
        onclick: () => removeItem(spec, item),
      }, 'Delete') : null)));
  const header = h('div', { class: 'page-head' }, h('h1', {}, spec.title),
    spec.create ? h('button', { type: 'button', class: 'primary', id: `new-${spec.kind}`,
      onclick: () => createItem(spec) }, `New ${spec.kind}`) : null,
    ...(spec.extra || []));
  const list = rows.length ? h('ul', { class: 'entries', 'aria-label': spec.title }, rows)
    : h('p', { class: 'empty' }, `No ${spec.kind}s yet.`);
  replace(main, header, list, ...(spec.after || []));
}

async function createItem(spec) {
  const name = await promptText(`New ${spec.kind}`, 'Name');
  if (name === null) return;
  const made = await attempt(() => spec.create(name));
  if (made) {
    toast(`Created ${spec.kind} “${name}”.`);
    navigate(location.hash);
  }
}

async function renameItem(spec, item) {
  const name = await promptText(`Rename ${spec.kind}`, 'Name', item.name);
  if (name === null || name === item.name) return;
  if (await attempt(() => spec.rename(item, name).then(() => true))) navigate(location.hash);
}

async function removeItem(spec, item) {
  const sure = await confirmAction(`Delete ${spec.kind}`,
    `Delete ${spec.kind} “${item.name}” and everything in it? This cannot be undone.`);
  if (!sure) return;
  if (await attempt(() => spec.remove(item).then(() => true))) {
    toast(`Deleted ${spec.kind} “${item.name}”.`);
    navigate(location.hash);
  }
}

const enc = encodeURIComponent;

async function projectsPage(main) {
  const items = await api.get('/v1/projects');
  const owner = can('owner');
  const menu = companyMenu(baseContext()).map((entry) => h('button', {
    type: 'button', id: `company-${entry.id}`, onclick: entry.run }, entry.label));
  setCrumbs([{ label: 'Company' }]);
  items.forEach((p) => remember('project', p, `#/projects/${p.id}`));
  listPage(main, {
    title: 'Projects', kind: 'project', items, extra: menu,
    href: (p) => `#/projects/${p.id}`,
    create: owner ? (name) => api.send('POST', '/v1/projects', { name }) : null,
    rename: owner ? (p, name) => api.send('PUT', `/v1/projects/${p.id}`, { name }) : null,
    remove: owner ? (p) => api.send('DELETE', `/v1/projects/${p.id}`) : null,
  });
}

async function databasesPage(main, projectId) {
  const items = await api.get('/v1/databases', { projectId });
  const owner = can('owner');
  items.forEach((d) => remember('database', d, `#/databases/${enc(d.id)}`, `project:${projectId}`));
  setCrumbs(crumbsFor(`project:${projectId}`));
  listPage(main, {
    title: 'Databases', kind: 'database', items,
    href: (d) => `#/databases/${enc(d.id)}`,
    create: owner ? (name) => api.send('POST', `/v1/databases?projectId=${enc(projectId)}`, { name }) : null,
    rename: owner ? (d, name) => api.send('PUT', `/v1/databases/${enc(d.id)}`, { name }) : null,
    remove: owner ? (d) => api.send('DELETE', `/v1/databases/${enc(d.id)}`) : null,
  });
}

async function gridsPage(main, dbId) {
  const items = await api.get('/v1/grids', { dbId });
  const manage = can('manage');
  items.forEach((g) => remember('grid', g, `#/grids/${enc(g.id)}`, `database:${dbId}`));
  setCrumbs(crumbsFor(`database:${dbId}`));
  listPage(main, {
    title: 'Grids', kind: 'grid', items,
    href: (g) => `#/grids/${enc(g.id)}`,
    create: manage ? (name) => api.send('POST', `/v1/grids?dbId=${enc(dbId)}`, { name }) : null,
    rename: manage ? (g, name) => api.send('PATCH', `/v1/grids/${enc(g.id)}`, { name }) : null,
    remove: manage ? (g) => api.send('DELETE', `/v1/grids/${enc(g.id)}`) : null,
  });
}

/** A grid: its branches, and the views of its master branch below them. */
async function gridPage(main, gridId) {
  const [branches, views] = await Promise.all([
    api.get('/v1/branches', { gridId }), api.get('/v1/views', { gridId })]);
  const manage = can('manage');
  branches.forEach((b) => remember('branch', b, `#/branches/${enc(b.id)}`, `grid:${gridId}`));
  setCrumbs(crumbsFor(`grid:${gridId}`));
  listPage(main, {
    title: 'Branches', kind: 'branch', items: branches,
    href: (b) => `#/branches/${enc(b.id)}`,
    create: manage ? (name) => api.send('POST', `/v1/branches?branchId=${enc(gridId)}`, { name }) : null,
    rename: manage ? (b, name) => api.send('PATCH', `/v1/branches/${enc(b.id)}`, { name }) : null,
    remove: manage ? (b) => api.send('DELETE', `/v1/branches/${enc(b.id)}`) : null,
    after: [viewsSection(gridId, views, `grid:${gridId}`)],
  });
}

/** A branch: its views. */
async function branchPage(main, branchId) {
  const views = await api.get('/v1/views', { branchId });
  setCrumbs(crumbsFor(`branch:${branchId}`));
  replace(main, viewsSection(branchId, views, `branch:${branchId}`));
}

/** The views of a branch (`gridId` names a grid's master branch or a branch), with create and
 *  delete for `manage` keys. A new view shows the default view's columns. */
function viewsSection(branchId, views, parent) {
  const section = h('section', { class: 'views' });
  views.forEach((v) => remember('view', v, `#/views/${enc(v.id)}`, parent));
  const manage = can('manage');
  const spec = {
    title: 'Views', kind: 'view', items: views,
    href: (v) => `#/views/${enc(v.id)}`,
    create: manage ? (name) => api.send('POST', '/v1/views', {
      name, gridId: branchId,
      columns: (views[0] ? views[0].columns : []).map((c) => ({ id: c.id, editable: true })),
    }) : null,
    rename: manage ? (v, name) => api.send('PATCH', `/v1/views/${enc(v.id)}`, { name }) : null,
    remove: manage ? (v) => api.send('DELETE', `/v1/views/${enc(v.id)}`) : null,
  };
  listPage(section, spec);
  return section;
}

/** Renders the browse page the route's `parts` name. */
export async function browsePage(main, parts) {
  const [kind, id] = parts;
  try {
    if (!kind) await projectsPage(main);
    else if (kind === 'projects' && id) await databasesPage(main, id);
    else if (kind === 'databases' && id) await gridsPage(main, id);
    else if (kind === 'grids' && id) await gridPage(main, id);
    else if (kind === 'branches' && id) await branchPage(main, id);
    else replace(main, h('h1', {}, 'Not found'), h('p', {}, 'This page does not exist.'));
  } catch (err) {
    replace(main, h('h1', {}, 'Cannot show this page'), h('p', { role: 'alert' }, err.message));
  }
}

/** The trail's name for a view, if browsing passed it. */
export function trailOf(kind, id) {
  return crumbsFor(`${kind}:${id}`);
}
