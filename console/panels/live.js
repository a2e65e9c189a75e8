// Live updates of the open view. The change feed (GET /v1/views/<id>/changes, server-sent
// events) needs the Authorization header, so it is read with fetch and a stream reader, not
// EventSource: `SseParser` splits the stream into events (bounded: an event over
// MAX_EVENT_CHARS drops the stream and asks for a resync). Each `records` event becomes
// onChange({kind: 'records', ids, records, deleted}), `schema` onChange({kind: 'schema'}),
// `resync` onChange({kind: 'resync'}). A dropped or `closed` stream reconnects after a backoff
// (1 s doubling to 30 s, reset once a stream opens) with `?after=<last event id>`, so nothing
// in between is missed. When the feed cannot be opened (FAILURES_BEFORE_POLLING attempts in a
// row), the view is polled every POLL_MS instead: a change of the newest records or of the
// record count is onChange({kind: 'resync'}). A 401/403/404 stops (the key or view is gone).

/** The longest event the page accepts, in characters. */
export const MAX_EVENT_CHARS = 16 * 1024 * 1024;
export const BACKOFF_MIN_MS = 1000;
export const BACKOFF_MAX_MS = 30000;
export const FAILURES_BEFORE_POLLING = 3;
export const POLL_MS = 5000;

/** Parses a text/event-stream incrementally: `push(text)` answers the events it completed,
 * each `{event, id, data}` (comments skipped, `data` lines joined by newlines). */
export class SseParser {
  constructor(maxChars = MAX_EVENT_CHARS) {
    this.buffer = '';
    this.maxChars = maxChars;
    this.reset();
  }

  reset() {
    this.event = '';
    this.id = null;
    this.data = [];
    this.size = 0;
  }

  push(text) {
    this.buffer += text;
    const events = [];
    let at;
    while ((at = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, at);
      const width = this.buffer.startsWith('\r\n', at) ? 2 : 1;
      this.buffer = this.buffer.slice(at + width);
      const event = this.line(line);
      if (event) events.push(event);
    }
    if (this.buffer.length + this.size > this.maxChars) throw new Error('An event of the feed is too large.');
    return events;
  }

  line(line) {
    if (line === '') {
      const done = this.data.length || this.event
        ? { event: this.event || 'message', id: this.id, data: this.data.join('\n') } : null;
      this.reset();
      return done;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (name === 'event') this.event = value;
    else if (name === 'id') this.id = value;
    else if (name === 'data') {
      this.size += value.length;
      if (this.size > this.maxChars) throw new Error('An event of the feed is too large.');
      this.data.push(value);
    }
    return null;
  }
}

/** What an event tells the page, or null. */
export function changeOf(event) {
  if (event.event === 'records') {
    const data = JSON.parse(event.data);
    const records = data.records || [];
    const deleted = data.deleted || [];
    const ids = [...records.map((r) => r.id), ...deleted.map((d) => d.id)];
    return { kind: 'records', ids, records, deleted, position: data.position };
  }
  if (event.event === 'schema') return { kind: 'schema' };
  if (event.event === 'resync') return { kind: 'resync' };
  return null;
}

const sleep = (ms, signal) => new Promise((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

/** Reads one stream to its end; answers the last event id seen. Throws on a refusal. */
async function readStream(ctx, after, onChange, signal, opened) {
  const path = `/v1/views/${encodeURIComponent(ctx.route.viewId)}/changes${after ? `?after=${encodeURIComponent(after)}` : ''}`;
  const response = await ctx.api.raw('GET', path, { signal, headers: { Accept: 'text/event-stream' } });
  if (!response.ok) throw Object.assign(new Error(`The change feed answered ${response.status}.`), { status: response.status });
  opened();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new SseParser();
  let last = after;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return last;
      for (const event of parser.push(value)) {
        if (event.event === 'closed') return last;
        const change = changeOf(event);
        if (event.id) last = event.id;
        if (change) onChange(change);
      }
    }
  } catch (error) {
    if (error.message.includes('too large')) onChange({ kind: 'resync' });
    throw Object.assign(error, { last });
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A digest of the view's newest records and count, for polling. */
async function pollDigest(ctx) {
  const params = new URLSearchParams({
    page: JSON.stringify({ offset: 0, limit: 20 }), sort: JSON.stringify({ _lastModifiedTime: 'desc' }) });
  const answer = await ctx.api.send('GET', `/v1/views/${encodeURIComponent(ctx.route.viewId)}/records?${params}`);
  const count = answer.headers && answer.headers.get ? answer.headers.get('x-total-count') : '';
  return JSON.stringify([count, answer.body.map((r) => [r.id, r.lastModifiedTime])]);
}

async function poll(ctx, onChange, signal, every) {
  let seen = await pollDigest(ctx).catch(() => null);
  while (!signal.aborted) {
    await sleep(every, signal);
    if (signal.aborted) return;
    const now = await pollDigest(ctx).catch(() => seen);
    if (seen !== null && now !== seen) onChange({ kind: 'resync' });
    seen = now;
  }
}

/** Follows the open view's changes; answers stop(). `options`: `onState(state)` hears
 * 'live', 'reconnecting', 'polling' and 'stopped'; `backoffMinMs` and `pollMs` change the
 * timings (tests). */
export function startLive(ctx, onChange, options = {}) {
  const controller = new AbortController();
  const { signal } = controller;
  const report = options.onState || (() => {});
  const first = options.backoffMinMs || BACKOFF_MIN_MS;
  (async () => {
    let after = null;
    let failures = 0;
    let backoff = first;
    while (!signal.aborted) {
      try {
        after = await readStream(ctx, after, onChange, signal, () => { failures = 0; backoff = first; report('live'); });
      } catch (error) {
        if (signal.aborted) return;
        if ([401, 403, 404].includes(error.status)) { report('stopped'); return; }
        if (error.last) after = error.last;
        failures += 1;
        if (failures >= FAILURES_BEFORE_POLLING) {
          report('polling');
          await poll(ctx, onChange, signal, options.pollMs || POLL_MS);
          return;
        }
      }
      report('reconnecting');
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
  })();
  return () => controller.abort();
}
