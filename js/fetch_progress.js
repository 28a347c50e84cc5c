// Fetches `url` into a Uint8Array, calling `onProgress(loadedBytes, totalBytes)` as chunks
// arrive (total is 0 when the server sends no Content-Length). Used by SentenceEmbedder.load.
export async function fetchWithProgress(url, onProgress) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const total = Number(response.headers.get('content-length') || 0);
  const report = typeof onProgress === 'function' ? onProgress : () => {};
  if (!response.body || !response.body.getReader) {
    const buf = new Uint8Array(await response.arrayBuffer());
    report(buf.length, buf.length);
    return buf;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    report(loaded, total);
  }
  const out = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}
