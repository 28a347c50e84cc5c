// Model downloads, and the cache that keeps them (the browser's Cache API, one cache named
// CACHE_NAME, keyed by the model's absolute URL).
//
// fetchModel(url, { cache, onProgress, signal }) resolves to { bytes, info }:
//   - a cached entry is read (progress stage "cache") and checked against the size and the
//     SHA-256 recorded when it was stored; one that fails (truncated, corrupt, written by
//     something else) is deleted and the model is fetched again: it is never parsed;
//   - otherwise the URL is fetched (progress stage "download"), checked (HTTP status, an HTML
//     page instead of a model, a body shorter than Content-Length, a server digest
//     (Repr-Digest / Digest sha-256) that does not match, the GGUF magic), then stored with its
//     size, SHA-256 and ETag. A store that fails (QuotaExceededError: the origin's storage is
//     full) leaves the load uncached, with the reason in info.note.
//   info = { url, fromCache, bytes, ms, note } (note: '' or why the cache was not used).
// A URL's content is taken as fixed (model files are versioned by URL): a cached copy is used
// without asking the server; `cache.delete(url)` drops it. `{ cache: false }` neither reads
// nor writes the cache.

export const CACHE_NAME = 'webtensor-models-v1';
const SIZE = 'x-webtensor-size';
const SHA = 'x-webtensor-sha256';
const STORED = 'x-webtensor-stored';

// The page's base URL: a relative model URL means the same in the page and in the worker.
import { WebtensorError } from './errors.js';
export function baseUrl() {
  return globalThis.document?.baseURI ?? globalThis.location?.href;
}

function absolute(url, base = baseUrl()) {
  return new URL(url, base).href;
}

function available() {
  return typeof globalThis.caches?.open === 'function';
}

async function sha256(bytes) {
  if (!globalThis.crypto?.subtle) return '';
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

function base64ToHex(b64) {
  try {
    return Array.from(atob(b64), (c) => c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
  } catch {
    return '';
  }
}

// The SHA-256 a server states for the body (RFC 9530 Repr-Digest, or the older Digest), as hex.
function serverSha256(headers) {
  const repr = /sha-256=:([A-Za-z0-9+/=]+):/i.exec(headers.get('repr-digest') || '');
  if (repr) return base64ToHex(repr[1]);
  const old = /sha-256=([A-Za-z0-9+/=]+)/i.exec(headers.get('digest') || '');
  return old ? base64ToHex(old[1]) : '';
}

async function readBody(response, stage, total, onProgress) {
  const report = typeof onProgress === 'function' ? onProgress : () => {};
  if (!response.body?.getReader) {
    const buf = new Uint8Array(await response.arrayBuffer());
    report(stage, buf.length, buf.length);
    return buf;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  report(stage, 0, total);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    report(stage, loaded, total);
  }
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

const isGguf = (b) => b.length >= 4 && b[0] === 0x47 && b[1] === 0x47 && b[2] === 0x55 && b[3] === 0x46;

async function fromCache(cache, key, onProgress) {
  const hit = await cache.match(key);
  if (!hit) return { bytes: null, why: '' };
  const size = Number(hit.headers.get(SIZE));
  const bytes = await readBody(hit, 'cache', size || 0, onProgress);
  const want = hit.headers.get(SHA) || '';
  let why = '';
  if (!(size > 0) || bytes.length !== size) why = `${bytes.length} bytes where ${hit.headers.get(SIZE)} were stored`;
  else if (!want) why = 'no digest recorded';
  else if ((await sha256(bytes)) !== want) why = 'its SHA-256 does not match the one recorded';
  else if (!isGguf(bytes)) why = 'not a GGUF file';
  if (!why) return { bytes, why };
  await cache.delete(key);
  return { bytes: null, why: `dropped a corrupt cache entry (${why}) and fetched the model again` };
}

async function download(key, url, signal, onProgress) {
  let response;
  try {
    response = await fetch(key, { signal });
  } catch (e) {
    if (e?.name === 'AbortError') throw e;
    throw new WebtensorError('NETWORK', `cannot fetch ${url}: ${e}`);
  }
  if (!response.ok) throw new WebtensorError('NETWORK', `cannot fetch ${url}: HTTP ${response.status}`);
  const type = response.headers.get('content-type') || '';
  if (/^text\/html/i.test(type)) {
    throw new WebtensorError('NETWORK', `cannot load ${url}: the server sent an HTML page (content-type ${type}), not a GGUF model file; is the URL right?`);
  }
  const encoded = !!response.headers.get('content-encoding');
  const total = encoded ? 0 : Number(response.headers.get('content-length') || 0);
  const bytes = await readBody(response, 'download', total, onProgress);
  if (total && bytes.length !== total) {
    throw new WebtensorError('NETWORK', `cannot load ${url}: the download stopped after ${bytes.length} of ${total} bytes`);
  }
  if (!isGguf(bytes)) {
    const head = new TextDecoder().decode(bytes.subarray(0, 16)).replace(/[^\x20-\x7e]/g, '.');
    throw new WebtensorError('BAD_MODEL_FILE', `cannot load ${url}: not a GGUF file (it starts with "${head}", not "GGUF")`);
  }
  const digest = await sha256(bytes);
  const stated = serverSha256(response.headers);
  if (stated && digest && stated !== digest) {
    throw new WebtensorError('NETWORK', `cannot load ${url}: its SHA-256 is ${digest}, the server says ${stated}`);
  }
  return { bytes, digest, etag: response.headers.get('etag') || '' };
}

/** Fetches a model file through the cache: { bytes: Uint8Array, info }. */
// `base`: the URL a relative `url` is relative to (the page's, also when called in the worker);
// error messages name `url` as given.
export async function fetchModel(url, { cache = true, onProgress, signal, base } = {}) {
  const t0 = performance.now();
  let key;
  try {
    key = absolute(url, base ?? baseUrl());
  } catch {
    throw new WebtensorError('NETWORK', `cannot fetch ${url}: not a valid URL`);
  }
  const notes = [];
  let store = null;
  if (cache && !available()) notes.push('not cached: this context has no Cache API (it needs a secure context: https or localhost)');
  if (cache && available()) {
    try {
      store = await caches.open(CACHE_NAME);
      const got = await fromCache(store, key, onProgress);
      if (got.why) notes.push(got.why);
      if (got.bytes) {
        return { bytes: got.bytes, info: { url: key, fromCache: true, bytes: got.bytes.length, ms: performance.now() - t0, note: notes.join('; ') } };
      }
    } catch (e) {
      notes.push(`cache not readable (${e?.name || 'Error'}: ${e?.message ?? e}); fetched the model instead`);
      store = null;
    }
  }
  signal?.throwIfAborted();
  const { bytes, digest, etag } = await download(key, url, signal, onProgress);
  if (store) {
    const headers = { 'content-type': 'application/octet-stream', [SIZE]: String(bytes.length), [SHA]: digest, [STORED]: new Date().toISOString() };
    if (etag) headers.etag = etag;
    try {
      await store.put(key, new Response(bytes, { headers }));
    } catch (e) {
      notes.push(e?.name === 'QuotaExceededError'
        ? 'not cached: the browser\'s storage quota for this site is full (QuotaExceededError); free space with webtensor.cache.clear()'
        : `not cached: ${e?.name || 'Error'}: ${e?.message ?? e}`);
    }
  }
  return { bytes, info: { url: key, fromCache: false, bytes: bytes.length, ms: performance.now() - t0, note: notes.join('; ') } };
}

/** The cached models: [{ url, bytes, sha256, etag, stored }]. */
async function list() {
  if (!available()) return [];
  const store = await caches.open(CACHE_NAME);
  const out = [];
  for (const req of await store.keys()) {
    const r = await store.match(req);
    out.push({
      url: req.url,
      bytes: Number(r?.headers.get(SIZE) || 0),
      sha256: r?.headers.get(SHA) || '',
      etag: r?.headers.get('etag') || '',
      stored: r?.headers.get(STORED) || '',
    });
  }
  return out;
}

/** Drops one model from the cache; resolves to whether it was there. */
async function remove(url) {
  if (!available()) return false;
  return (await caches.open(CACHE_NAME)).delete(absolute(String(url)));
}

/** Drops every cached model; resolves to whether there was a cache. */
async function clear() {
  if (!available()) return false;
  return caches.delete(CACHE_NAME);
}

/** `webtensor.cache`: the model cache (the same in the page and in the engine's worker). */
export const cache = Object.freeze({ name: CACHE_NAME, list, delete: remove, clear });
