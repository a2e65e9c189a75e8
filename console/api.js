// The console's one door to gridd's API: the key (kept in sessionStorage only, sent as
// `Authorization: ApiKey <key>` on every call), JSON in and out, and errors as ApiError built
// from the API's JSON error body ({status, code, message}). Knows nothing of the page.

const KEY_ITEM = 'gridd.apiKey';

/** A failed call: the HTTP status and the API's error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** The key of this tab's session, or null. */
export function currentKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY_ITEM, key);
  else sessionStorage.removeItem(KEY_ITEM);
}

/** `path` with its query parameters; object values are sent as JSON (the API's `query`,
 *  `sort`, `page`), undefined and null ones left out. */
export function withParams(path, params) {
  if (!params) return path;
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    search.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  const text = search.toString();
  return text ? `${path}${path.includes('?') ? '&' : '?'}${text}` : path;
}

function authHeaders(extra) {
  const headers = new Headers(extra || {});
  const key = currentKey();
  if (key) headers.set('Authorization', `ApiKey ${key}`);
  return headers;
}

/** The error a failed response stands for (the API's JSON body when it has one). */
async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const code = body && typeof body.code === 'string' ? body.code : 'httpError';
  const message = body && typeof body.message === 'string'
    ? body.message : `${response.status} ${response.statusText}`;
  return new ApiError(response.status, code, message);
}

async function bodyOf(response) {
  if (response.status === 204) return null;
  const type = response.headers.get('Content-Type') || '';
  if (type.includes('json')) return response.json();
  return response.text();
}

/** A call with the key; `init` as fetch takes it. Network failures become ApiError(0). */
async function raw(method, path, init = {}) {
  try {
    return await fetch(path, { ...init, method, headers: authHeaders(init.headers) });
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'networkError', `The server could not be reached (${err.message}).`);
  }
}

/** GET `path` with `params`; the JSON body, or throws ApiError. `init.signal` cancels it. */
async function get(path, params, init = {}) {
  const response = await raw('GET', withParams(path, params), init);
  if (!response.ok) throw await errorOf(response);
  return bodyOf(response);
}

/** GET with the answer's headers too (X-Total-Count, ETag, Link). */
async function getFull(path, params, init = {}) {
  const response = await raw('GET', withParams(path, params), init);
  if (!response.ok) throw await errorOf(response);
  return { status: response.status, headers: response.headers, body: await bodyOf(response) };
}

/** A write: `body` as JSON, or a FormData sent as multipart. Throws ApiError when it fails. */
async function send(method, path, body, headers = {}) {
  const init = { headers: { ...headers } };
  if (body instanceof FormData) {
    init.body = body;
  } else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await raw(method, path, init);
  if (!response.ok) throw await errorOf(response);
  return { status: response.status, headers: response.headers, body: await bodyOf(response) };
}

export const api = { get, getFull, send, raw };
