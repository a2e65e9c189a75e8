// API keys of the company, for owner keys: GET /admin/v1/api-keys (never a secret), a form
// creating one (POST /admin/v1/api-keys: name, user, a company key's privilege and access
// (every project, or chosen projects, database ids and grid ids) or a view key's view), the new
// secret shown once in a read-only field with "Copy", and revoke (DELETE, asked twice). The
// secret is never kept: it lives in that field until the panel closes.

import { el, field, select, statusLine, action, confirmAction, panel, fill, seg } from './common.js';

export const PRIVILEGES = ['read', 'write', 'manage', 'owner'];

/** Comma or white-space separated ids, without blanks. */
export function idList(text) {
  return String(text).split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

function accessText(key) {
  if (key.kind === 'view') return `view ${key.viewId}`;
  const a = key.access || {};
  if (a.all) return 'all projects';
  const parts = [];
  if (a.projects && a.projects.length) parts.push(`projects ${a.projects.join(', ')}`);
  if (a.databases && a.databases.length) parts.push(`databases ${a.databases.join(', ')}`);
  if (a.grids && a.grids.length) parts.push(`grids ${a.grids.join(', ')}`);
  return parts.join('; ') || 'nothing';
}

function keyRow(ctx, key, state, status) {
  return el('tr', { 'data-key-id': key.id },
    el('th', { scope: 'row' }, key.name), el('td', {}, key.user), el('td', {}, key.kind),
    el('td', {}, key.privileges.join(', ')), el('td', {}, accessText(key)),
    el('td', {}, key.createdTime),
    el('td', {}, confirmAction('Revoke', 'Revoke now?', async () => {
      await ctx.api.send('DELETE', `/admin/v1/api-keys/${seg(key.id)}`);
      await state.refresh(`Revoked "${key.name}".`);
    }, status, { class: 'danger', 'aria-label': `Revoke key ${key.name}` })));
}

/** The create form's controls and the request they make. */
function keyForm(projects) {
  const c = {
    name: el('input', { type: 'text', required: true }),
    user: el('input', { type: 'text' }),
    kind: select([['company', 'company key'], ['view', 'view key (one view)']], 'company'),
    privilege: select(PRIVILEGES.map((p) => [p, p]), 'read'),
    all: el('input', { type: 'checkbox', checked: true, id: 'key-access-all' }),
    projects: projects.map((p) => el('input', { type: 'checkbox', value: String(p.id), id: `key-project-${p.id}` })),
    databases: el('input', { type: 'text' }),
    grids: el('input', { type: 'text' }),
    viewId: el('input', { type: 'text' }),
  };
  c.request = () => {
    const body = { name: c.name.value.trim(), user: c.user.value.trim() || undefined, kind: c.kind.value };
    if (c.kind.value === 'view') return { ...body, viewId: c.viewId.value.trim() };
    const level = PRIVILEGES.indexOf(c.privilege.value);
    const access = c.all.checked ? { all: true } : {
      all: false,
      projects: c.projects.filter((b) => b.checked).map((b) => Number(b.value)),
      databases: idList(c.databases.value),
      grids: idList(c.grids.value),
    };
    return { ...body, privileges: PRIVILEGES.slice(0, level + 1), access };
  };
  return c;
}

function formView(c, projects) {
  const company = el('div', { class: 'panel-key-company' },
    field('Privilege (includes the ones before it)', c.privilege),
    el('div', {}, c.all, el('label', { for: c.all.id }, 'Every project')),
    el('fieldset', { class: 'panel-options' }, el('legend', {}, 'Or only these projects'),
      projects.map((p, i) => el('div', {}, c.projects[i], el('label', { for: c.projects[i].id }, p.name)))),
    field('Database ids', c.databases, 'Comma separated'), field('Grid ids', c.grids, 'Comma separated'));
  const view = el('div', { class: 'panel-key-view', hidden: true }, field('View id', c.viewId));
  c.kind.addEventListener('change', () => {
    company.hidden = c.kind.value !== 'company';
    view.hidden = c.kind.value !== 'view';
  });
  return [field('Name', c.name), field('User (shown in histories)', c.user), field('Kind', c.kind), company, view];
}

/** The secret of a new key, shown once with a copy button. */
function secretView(key, status) {
  const secret = el('input', { type: 'text', readOnly: true, value: key.key, 'data-panel': 'key-secret' });
  const copy = action('Copy', async () => {
    try { await navigator.clipboard.writeText(secret.value); status.show('Secret copied.'); } catch {
      secret.focus();
      secret.select();
      status.show('Press Ctrl+C to copy the selected secret.');
    }
  }, status);
  return el('div', { class: 'panel-secret', role: 'alert' },
    el('p', {}, `The secret of "${key.name}": copy it now, it is never shown again.`),
    field('Secret', secret), copy);
}

/** Opens the API keys panel (owner keys). */
export async function keysDialog(ctx) {
  const status = statusLine();
  const list = el('div', { class: 'panel-keys-list' });
  const secretSlot = el('div');
  const projects = await ctx.api.get('/v1/projects').catch(() => []);
  const form = keyForm(projects);
  const state = {};
  const render = async () => {
    const keys = await ctx.api.get('/admin/v1/api-keys');
    fill(list, el('table', { class: 'panel-table', 'aria-label': 'API keys' },
      el('thead', {}, el('tr', {}, ['Name', 'User', 'Kind', 'Privileges', 'Access', 'Created', '']
        .map((t) => el('th', { scope: 'col' }, t)))),
      el('tbody', {}, keys.map((k) => keyRow(ctx, k, state, status)))));
  };
  state.refresh = async (text) => { await render(); status.show(text); };
  const create = action('Create key', async () => {
    const answer = await ctx.api.send('POST', '/admin/v1/api-keys', form.request());
    fill(secretSlot, secretView(answer.body, status));
    form.name.value = '';
    await state.refresh(`Created "${answer.body.name}".`);
    secretSlot.querySelector('input').focus();
  }, status, { class: 'primary', 'data-panel': 'key-create' });
  const body = el('div', { class: 'panel-keys' }, list, secretSlot,
    el('h3', {}, 'New key'), el('div', { class: 'panel-form' }, formView(form, projects), create), status.node);
  try { await render(); } catch (e) { status.fail(e); }
  await panel('API keys', body);
}
