// The console's entry point: the hash router, sign-in and sign-out, the header (breadcrumbs,
// who is signed in) and the session (what the key is and may do). Pages live in browse.js
// (company > projects > databases > grids > branches > views) and viewpage.js (the grid).

import { api, ApiError, currentKey, setKey } from './api.js';
import { h, replace, field, toast } from './ui.js';
import { browsePage } from './browse.js';
import { viewPage } from './viewpage.js';

/** The signed-in key: {kind, privileges, access, viewId, companyId, tier, user, name}. */
let session = null;
/** Stops the open page's background work (live updates, fetches) when the route changes. */
let leavePage = null;

/** Whether the key holds `privilege` (read, write, manage, owner) at all. */
export function can(privilege) {
  return Boolean(session && session.privileges.includes(privilege));
}

export function keyInfo() {
  return session;
}

/** The hash route: its path parts and its parameters. */
export function parseRoute(hash = location.hash) {
  const text = hash.replace(/^#\/?/, '');
  const [path, query = ''] = text.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

export function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** Sets the breadcrumbs: [{label, href}] (the last is the current page). */
export function setCrumbs(items) {
  const nav = document.getElementById('crumbs');
  replace(nav, items.map((item, i) => (i === items.length - 1
    ? h('span', { 'aria-current': 'page' }, item.label)
    : [h('a', { href: item.href }, item.label), h('span', { class: 'sep' }, '›')])));
}

function showWho() {
  const who = document.getElementById('who');
  if (!session) {
    replace(who);
    return;
  }
  const role = session.kind === 'view' ? 'view key' : session.privileges[session.privileges.length - 1];
  replace(who, h('span', { class: 'user' }, `${session.user} (${role})`),
    h('button', { type: 'button', id: 'signout', onclick: signOut }, 'Sign out'));
}

function signOut() {
  setKey(null);
  session = null;
  showWho();
  navigate('#/signin');
}

/** Asks the server what the key is; null (and the key forgotten) when it is refused. */
async function loadSession() {
  if (!currentKey()) return null;
  try {
    session = await api.get('/admin/v1/api-keys/current');
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) setKey(null);
    else toast(err.message, 'error');
    session = null;
  }
  showWho();
  return session;
}

function signInPage(main) {
  const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', required: true });
  const error = h('p', { class: 'form-error', role: 'alert' });
  const form = h('form', {
    class: 'signin',
    onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = '';
      setKey(input.value.trim());
      if (await loadSession()) navigate(homeOf(session));
      else error.textContent = 'This API key is not valid on this server.';
    },
  },
  h('h1', {}, 'Sign in to gridd'),
  field('API key', input, 'Kept in this tab only (sessionStorage) and sent as the Authorization header.'),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  error);
  setCrumbs([{ label: 'Sign in' }]);
  replace(main, form);
  input.focus();
}

/** Where a key starts: a view key at its view, a company key at its company. */
function homeOf(key) {
  return key.kind === 'view' ? `#/views/${encodeURIComponent(key.viewId)}` : '#/';
}

/** Builds the context every page (and engineer B's panels) gets. */
export function baseContext() {
  return { api, key: session, can, navigate, route: parseRoute() };
}

async function route() {
  const main = document.getElementById('main');
  if (leavePage) {
    leavePage();
    leavePage = null;
  }
  const { parts, params } = parseRoute();
  if (!session && !(await loadSession())) {
    signInPage(main);
    return;
  }
  if (parts[0] === 'signin') {
    navigate(homeOf(session));
    return;
  }
  if (parts[0] === 'views' && parts[1]) {
    leavePage = await viewPage(main, parts[1], params);
    return;
  }
  if (session.kind === 'view') {
    navigate(homeOf(session));
    return;
  }
  await browsePage(main, parts);
}

window.addEventListener('hashchange', () => { route(); });
route();
