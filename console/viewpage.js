// The view page: the toolbar and the grid of one view (filled in by grid/*.js).

import { api } from './api.js';
import { h, replace } from './ui.js';
import { setCrumbs } from './app.js';
import { trailOf } from './browse.js';

export async function viewPage(main, viewId, _params) {
  try {
    const view = await api.get(`/v1/views/${encodeURIComponent(viewId)}`);
    setCrumbs([...trailOf('view', viewId).slice(0, -1), { label: view.name }]);
    replace(main, h('h1', {}, view.name),
      h('p', {}, `${view.columns.length} columns`));
  } catch (err) {
    replace(main, h('h1', {}, 'Cannot open this view'), h('p', { role: 'alert' }, err.message));
  }
  return () => {};
}
