// Placeholder of engineer B's panels (issue 23): the four entry points the view page calls.
// B's console/panels/index.js replaces this file at merge.

/** Grid toolbar buttons: [{id, label, title, run()}]. */
export function viewToolbar(_ctx) {
  return [];
}

/** A record's context menu entries: [{id, label, run()}]. */
export function recordMenu(_ctx, _record) {
  return [];
}

/** The company page's entries: [{id, label, run()}]. */
export function companyMenu(_ctx) {
  return [];
}

/** Starts live updates of the open view; answers a function that stops them. */
export function startLive(_ctx, _onChange) {
  return () => {};
}
