// What every panel shares: selects, a status line that reports API errors, buttons that run
// an action once at a time (or ask once more first), a dialog whose actions live in its body
// (so a failed step keeps it open and shows why), and following a task to its end.
// It owns no state and knows nothing of any one panel. Nothing here builds HTML from strings.

// The element builder, labelled fields and emptying a node are the console's own (ui.js):
// `el(tag, attrs, ...children)` sets properties (and `on<event>` listeners), text as text.
export { h as el, field, replace as fill, toast } from '../ui.js';
import { h as el, dialog } from '../ui.js';

const TIERS = ['free', 'team', 'enterprise'];
/** Whether the key's company plan is at least `tier` (the API refuses the call otherwise). */
export function planAtLeast(ctx, tier) {
  const plan = ctx.key && ctx.key.tier;
  return !plan || TIERS.indexOf(plan) >= TIERS.indexOf(tier);
}

/** A `<select>` of `[value, text]` pairs with `selected` chosen. */
export function select(options, selected, attrs = {}) {
  return el('select', attrs,
    options.map(([value, text]) => el('option', { value, selected: value === selected }, text)));
}

/** A status line (`role=status`): `show(text)`, `fail(error)` (an ApiError names its code). */
export function statusLine() {
  const node = el('p', { class: 'panel-status', role: 'status', 'aria-live': 'polite' });
  return {
    node,
    show(text) { node.classList.remove('panel-error'); node.textContent = text; },
    fail(error) {
      node.classList.add('panel-error');
      node.textContent = describe(error);
    },
  };
}

/** What an error says to a user: the API's code and message, or the error's message. */
export function describe(error) {
  if (error && error.code) return `${error.message} (${error.code})`;
  return String((error && error.message) || error);
}

/** A button running `run` (async) once at a time; a failure goes to `status`. */
export function action(label, run, status, attrs = {}) {
  const button = el('button', { type: 'button', ...attrs }, label);
  button.addEventListener('click', async () => {
    if (button.disabled) return;
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      await run();
    } catch (error) {
      if (status) status.fail(error); else throw error;
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  });
  return button;
}

/** A button that asks once more before `run`: the first press turns it into `confirm`,
 * the second runs; leaving it (blur) or 5 s without a second press puts it back. */
export function confirmAction(label, confirmLabel, run, status, attrs = {}) {
  let armed = false;
  let timer = null;
  const name = attrs['aria-label'];
  const button = action(label, async () => {
    if (!armed) {
      armed = true;
      button.textContent = confirmLabel;
      if (name) button.setAttribute('aria-label', `${name}: ${confirmLabel}`);
      timer = setTimeout(disarm, 5000);
      return;
    }
    disarm();
    await run();
  }, status, attrs);
  function disarm() {
    armed = false;
    clearTimeout(timer);
    button.textContent = label;
    if (name) button.setAttribute('aria-label', name);
  }
  button.addEventListener('blur', () => { if (armed) disarm(); });
  return button;
}

/** Opens a wide dialog titled `title` showing `body`; its own buttons act, Cancel/Esc close. */
export function panel(title, body) {
  body.classList.add('panel');
  return dialog({ title, body, actions: [], wide: true });
}

/** Closes the panel dialog holding `node`, as Esc would (the dialog then returns focus). */
export function closePanel(node) {
  const holder = node.closest('dialog');
  if (holder) holder.dispatchEvent(new Event('cancel'));
}

/** How long a task is followed before the panel gives up waiting (the task goes on). */
export const TASK_WAIT_MS = 120000;

/** Polls `GET /v1/tasks/<id>` until the task ends; `progress(task)` sees each answer.
 * Resolves with a successful task; rejects with its error when it failed, or on timeout. */
export async function followTask(api, taskId, progress = () => {}, waitMs = TASK_WAIT_MS) {
  const started = Date.now();
  let delay = 150;
  for (;;) {
    const task = await api.get(`/v1/tasks/${encodeURIComponent(taskId)}`);
    progress(task);
    if (task.status === 'successful') return task;
    if (task.status === 'failed') {
      const error = new Error(task.error ? task.error.message : 'The task failed.');
      error.code = task.error ? task.error.code : 'taskFailed';
      throw error;
    }
    if (Date.now() - started > waitMs) {
      throw new Error(`Task ${taskId} is still running; it goes on on the server.`);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 1000);
  }
}

/** A path segment, encoded. */
export const seg = encodeURIComponent;
