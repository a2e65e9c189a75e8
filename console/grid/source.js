// Where the grid's rows come from. `RecordSource` pages through a view's record listing
// (`query`, `sort`) with a bounded cache of pages: offset pages for jumps, a cursor
// (`afterRecordId`) when the page before is known, fetches debounced and the stale ones
// cancelled with AbortController. `ListSource` holds a fixed list (the search's union).
// Both answer `total`, `at(index)` (a record or undefined) and `want(first, last)`.

import { api } from '../api.js';

export const PAGE_SIZE = 100;
/** Pages kept; the oldest used is dropped beyond it (100 pages = 10,000 records). */
const MAX_PAGES = 100;
/** Pages fetched at once. */
const MAX_PARALLEL = 4;
const DEBOUNCE_MS = 40;
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 30_000;

export class RecordSource {
  /** `params`: {query, sort}; `onData()` is called when pages arrive or the total changes. */
  constructor(viewId, params, onData, onError) {
    this.path = `/v1/views/${encodeURIComponent(viewId)}/records`;
    this.params = params;
    this.onData = onData;
    this.onError = onError;
    this.total = null;
    this.pages = new Map();
    this.inflight = new Map();
    this.wanted = [0, 0];
    this.timer = null;
    this.generation = 0;
    /** Pages whose last fetch failed: page -> {until, wait}. */
    this.failed = new Map();
    this.retryTimer = null;
  }

  at(index) {
    const page = this.pages.get(Math.floor(index / PAGE_SIZE));
    if (!page) return undefined;
    page.used = performance.now();
    return page.records[index % PAGE_SIZE];
  }

  /** Asks for rows `first..=last` (debounced); pages outside the range stop loading. */
  want(first, last) {
    this.wanted = [first, last];
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetchWanted(), this.total === null ? 0 : DEBOUNCE_MS);
  }

  fetchWanted() {
    const [first, last] = this.wanted;
    const from = Math.floor(Math.max(0, first) / PAGE_SIZE);
    const to = Math.floor(Math.max(0, last) / PAGE_SIZE);
    for (const [number, request] of this.inflight) {
      if (number < from - 1 || number > to + 1) {
        request.abort();
        this.inflight.delete(number);
      }
    }
    const now = performance.now();
    for (let number = from; number <= to; number += 1) {
      const page = this.pages.get(number);
      const current = page && page.generation === this.generation;
      const failed = this.failed.get(number);
      if (failed && failed.until > now) continue;
      if (!current && !this.inflight.has(number) && this.inflight.size < MAX_PARALLEL) {
        this.fetchPage(number);
      }
    }
  }

  /** The listing's parameters for page `number`: a cursor after the page before's last
   *  record when that page is cached and full, an offset otherwise. */
  pageParams(number) {
    const before = this.pages.get(number - 1);
    const current = before && before.generation === this.generation && before.records.length === PAGE_SIZE;
    const last = current ? before.records[PAGE_SIZE - 1] : null;
    const params = { query: this.params.query, sort: this.params.sort, fetchFileOption: 'all' };
    if (last && !last.path) {
      params.afterRecordId = last.id;
      params.page = { limit: PAGE_SIZE };
    } else {
      params.page = { offset: number * PAGE_SIZE, limit: PAGE_SIZE };
    }
    return params;
  }

  async fetchPage(number) {
    const request = new AbortController();
    const generation = this.generation;
    this.inflight.set(number, request);
    try {
      const answer = await api.getFull(this.path, this.pageParams(number), { signal: request.signal });
      if (generation !== this.generation) return;
      this.total = Number(answer.headers.get('X-Total-Count') || answer.body.length);
      this.pages.set(number, { records: answer.body, used: performance.now(), generation });
      this.evict();
      this.onData();
      this.failed.delete(number);
    } catch (err) {
      if (err.name !== 'AbortError' && generation === this.generation) this.noteFailure(number, err);
    } finally {
      if (this.inflight.get(number) === request) this.inflight.delete(number);
      if (generation === this.generation) this.fetchWanted();
    }
  }

  /** A page that failed is asked again after a wait that doubles each time (1 s to 30 s);
   *  the error is shown once per run of failures. */
  noteFailure(number, err) {
    const before = this.failed.get(number);
    const wait = before ? Math.min(before.wait * 2, MAX_RETRY_MS) : FIRST_RETRY_MS;
    this.failed.set(number, { until: performance.now() + wait, wait });
    if (!before) this.onError(err);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.fetchWanted(), wait);
  }

  /** Drops the least recently used pages beyond MAX_PAGES. */
  evict() {
    if (this.pages.size <= MAX_PAGES) return;
    const byUse = [...this.pages.entries()].sort((a, b) => a[1].used - b[1].used);
    for (const [number] of byUse.slice(0, this.pages.size - MAX_PAGES)) this.pages.delete(number);
  }

  /** Forgets every page (after a change elsewhere, or new filters) and refetches. */
  reset() {
    this.generation += 1;
    this.failed.clear();
    for (const request of this.inflight.values()) request.abort();
    this.inflight.clear();
    this.pages.clear();
    this.want(...this.wanted);
  }

  /** Reads the rows in sight again after a change made elsewhere, showing the cached copies
   *  until the new ones arrive (no flicker); other cached pages are dropped. */
  reload() {
    this.generation += 1;
    const [first, last] = this.wanted;
    const from = Math.floor(first / PAGE_SIZE);
    const to = Math.floor(last / PAGE_SIZE);
    for (const number of [...this.pages.keys()]) {
      if (number < from || number > to) this.pages.delete(number);
    }
    for (const request of this.inflight.values()) request.abort();
    this.inflight.clear();
    this.fetchWanted();
  }

  /** Replaces cached copies of `records` (by id), e.g. after a write. */
  update(records) {
    const byId = new Map(records.map((r) => [r.id, r]));
    for (const page of this.pages.values()) {
      page.records = page.records.map((r) => byId.get(r.id) || r);
    }
    this.onData();
  }

  /** The cached row index of record `id`, or -1. */
  indexOf(id) {
    for (const [number, page] of this.pages) {
      const at = page.records.findIndex((r) => r.id === id);
      if (at >= 0) return number * PAGE_SIZE + at;
    }
    return -1;
  }

  /** Loads rows `first..=last` and resolves with them (at most 1,000, for paste). */
  async rows(first, last) {
    const end = Math.min(last, first + 999, (this.total || 0) - 1);
    const out = [];
    for (let number = Math.floor(first / PAGE_SIZE); number <= Math.floor(end / PAGE_SIZE); number += 1) {
      if (!this.pages.has(number)) {
        const answer = await api.getFull(this.path, this.pageParams(number));
        this.pages.set(number, { records: answer.body, used: performance.now(), generation: this.generation });
      }
    }
    for (let i = first; i <= end; i += 1) out.push(this.at(i));
    this.evict();
    return out.filter(Boolean);
  }

  stop() {
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
    this.generation += 1;
    for (const request of this.inflight.values()) request.abort();
    this.inflight.clear();
  }
}

/** A fixed list of records (search results). */
export class ListSource {
  constructor(records, onData) {
    this.records = records;
    this.total = records.length;
    this.onData = onData;
  }

  at(index) { return this.records[index]; }

  want() {}

  reset() { this.onData(); }

  reload() { this.onData(); }

  update(records) {
    const byId = new Map(records.map((r) => [r.id, r]));
    this.records = this.records.map((r) => byId.get(r.id) || r);
    this.onData();
  }

  indexOf(id) { return this.records.findIndex((r) => r.id === id); }

  async rows(first, last) { return this.records.slice(first, Math.min(last, first + 999) + 1); }

  stop() {}
}
