// Small DOM helpers every console module shares: an element builder (text goes in as text,
// never as HTML), modal dialogs (focus trapped, Esc closes, focus returns), toasts and the
// common prompts built on the dialog. Owns no state of the app.

/** An element: `attrs` sets properties (`class`, `for`, `aria-*`, `data-*` and `on<event>`
 *  handlers included); children are elements or text. No innerHTML, no inline style. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2).toLowerCase(), value);
    } else if (name === 'class') {
      el.className = value;
    } else if (name === 'style') {
      throw new Error('inline style attributes break the CSP; set el.style.<prop> instead');
    } else if (name in el && !name.includes('-') && name !== 'list' && name !== 'form') {
      el[name] = value;
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Empties `el` and fills it with `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let labelCount = 0;

/** A labelled form field: the label names the control (for screen readers too). */
export function field(label, control, hint) {
  labelCount += 1;
  const id = control.id || `f${labelCount}`;
  control.id = id;
  return h('div', { class: 'field' },
    h('label', { for: id }, label), control, hint ? h('small', { class: 'hint' }, hint) : null);
}

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), '
  + 'textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** Keeps Tab and Shift+Tab inside `root`. */
function trapFocus(root, event) {
  if (event.key !== 'Tab') return;
  const items = [...root.querySelectorAll(FOCUSABLE)].filter((e) => e.offsetParent !== null);
  if (items.length === 0) return;
  const first = items[0];
  const last = items[items.length - 1];
  if (event.shiftKey && document.activeElement === first) {
    event.preventDefault();
    last.focus();
  } else if (!event.shiftKey && document.activeElement === last) {
    event.preventDefault();
    first.focus();
  }
}

/** A modal dialog. Each action is a button; its `run` may return a promise: a rejection is
 *  shown in the dialog and keeps it open, so does `false`. Resolves with the label of the
 *  action that closed it, or null (Esc, Cancel). Focus returns where it was. */
export function dialog({ title, body, actions = [], wide = false }) {
  const opener = document.activeElement;
  const error = h('p', { class: 'dialog-error', role: 'alert' });
  const titleId = `dlg${++labelCount}`;
  const el = h('dialog', { class: wide ? 'wide' : '', 'aria-labelledby': titleId });
  return new Promise((resolve) => {
    let done = false;
    const close = (label) => {
      if (done) return;
      done = true;
      el.close();
      el.remove();
      if (opener && opener.focus) opener.focus();
      resolve(label);
    };
    const buttons = actions.map((action) => h('button', {
      type: 'button',
      class: action.primary ? 'primary' : '',
      'data-action': action.label,
      onclick: () => runAction(action, error, buttons, close),
    }, action.label));
    const cancel = h('button', { type: 'button', onclick: () => close(null) }, 'Cancel');
    el.append(h('h2', { id: titleId }, title), h('div', { class: 'dialog-body' }, body), error,
      h('div', { class: 'dialog-actions' }, ...buttons, cancel));
    el.addEventListener('cancel', (e) => { e.preventDefault(); close(null); });
    el.addEventListener('keydown', (e) => {
      trapFocus(el, e);
      const primary = actions.findIndex((a) => a.primary);
      if (e.key === 'Enter' && primary >= 0 && e.target.tagName === 'INPUT') {
        e.preventDefault();
        buttons[primary].click();
      }
    });
    document.body.append(el);
    el.showModal();
    const focus = el.querySelector('.dialog-body ' + FOCUSABLE) || buttons[0] || cancel;
    focus.focus();
  });
}

async function runAction(action, error, buttons, close) {
  error.textContent = '';
  if (!action.run) {
    close(action.label);
    return;
  }
  buttons.forEach((b) => { b.disabled = true; });
  try {
    const result = await action.run();
    if (result === false) return;
    close(action.label);
  } catch (err) {
    error.textContent = err && err.message ? err.message : String(err);
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
}

/** A short message at the bottom of the page, read out by screen readers. */
export function toast(text, kind = 'info') {
  let box = document.getElementById('toasts');
  if (!box) {
    box = h('div', { id: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(box);
  }
  const item = h('div', { class: `toast ${kind}` }, text);
  box.append(item);
  setTimeout(() => item.remove(), kind === 'error' ? 8000 : 4000);
}

/** Asks for one line of text; resolves with it (trimmed) or null. */
export async function promptText(title, label, value = '') {
  const input = h('input', { type: 'text', value, required: true });
  let answer = null;
  const done = await dialog({
    title,
    body: field(label, input),
    actions: [{
      label: 'OK',
      primary: true,
      run: () => {
        answer = input.value.trim();
        if (!answer) throw new Error(`${label} is required.`);
      },
    }],
  });
  return done ? answer : null;
}

/** Asks to confirm a destructive action. */
export async function confirmAction(title, text, label = 'Delete') {
  return (await dialog({ title, body: h('p', {}, text), actions: [{ label, primary: true }] })) !== null;
}

/** Runs `work`, showing its failure as an error toast; resolves with its result or undefined. */
export async function attempt(work) {
  try {
    return await work();
  } catch (err) {
    if (err && err.name === 'AbortError') return undefined;
    toast(err && err.message ? err.message : String(err), 'error');
    return undefined;
  }
}
