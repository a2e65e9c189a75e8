// The share link of the open view (Enterprise plan, manage): GET /v1/views/<id>/shares shows
// it (404 shareIsNotFound: never shared), PUT enables it (optionally with the grid history
// pages), DELETE disables it. The link is shown in a read-only field with "Copy link" (the
// Clipboard API; when refused, the field is selected for Ctrl+C). It owns nothing else.

import { el, field, statusLine, action, panel, fill, seg } from './common.js';

const sharePath = (ctx) => `/v1/views/${seg(ctx.route.viewId)}/shares`;

/** The view's share, or null when it never had one. */
async function current(ctx) {
  try {
    return await ctx.api.get(sharePath(ctx));
  } catch (error) {
    if (error.code === 'shareIsNotFound') return null;
    throw error;
  }
}

/** Copies `input`'s text, or selects it for the user to copy. */
async function copy(input, status) {
  try {
    await navigator.clipboard.writeText(input.value);
    status.show('Link copied.');
  } catch {
    input.focus();
    input.select();
    status.show('Press Ctrl+C to copy the selected link.');
  }
}

function shareView(ctx, share, history, status, render) {
  const enable = action(share && share.active ? 'Update link' : 'Create link', async () => {
    await ctx.api.send('PUT', sharePath(ctx), { includeGridHistory: history.checked });
    await render();
    status.show('The link is active: anyone who has it can read this view.');
  }, status, { class: 'primary', 'data-panel': 'share-enable' });
  const parts = [el('div', {}, history, el('label', { for: history.id }, 'Include the history of each record')), enable];
  if (share && share.active) {
    const link = el('input', { type: 'text', readOnly: true, value: share.link, 'data-panel': 'share-link' });
    parts.unshift(field('Read-only link (no key needed)', link));
    parts.push(action('Copy link', () => copy(link, status), status),
      action('Disable link', async () => {
        await ctx.api.send('DELETE', sharePath(ctx));
        await render();
        status.show('The link is disabled: it answers "not found" now.');
      }, status, { class: 'danger', 'data-panel': 'share-disable' }));
  } else {
    parts.unshift(el('p', {}, share ? 'The link is disabled.' : 'This view has no share link.'));
  }
  return parts;
}

/** Opens the share panel of the open view. */
export async function shareDialog(ctx) {
  const status = statusLine();
  const body = el('div', { class: 'panel-share' });
  const history = el('input', { type: 'checkbox', id: 'share-include-history' });
  const render = async () => {
    const share = await current(ctx);
    history.checked = Boolean(share && share.includeGridHistory);
    fill(body, shareView(ctx, share, history, status, render), status.node);
  };
  try { await render(); } catch (e) { fill(body, status.node); status.fail(e); }
  await panel('Share link', body);
}
