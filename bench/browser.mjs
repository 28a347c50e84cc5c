// Browser runner: serves bench/ and runs index.html in headless Chromium (scripts/chromium.mjs).
//   node bench/browser.mjs [out.json] [page]
// (page: index.html, the CPU matmul benchmark, or minilm.html; BENCH_QUERY adds URL parameters)
import fs from 'node:fs';
import path from 'node:path';
import { benchResult, launchChromium } from '../scripts/chromium.mjs';
import { startServer } from '../scripts/serve.mjs';

// Served from the repository root, so bench pages reach models/ too.
const server = await startServer(path.resolve(import.meta.dirname, '..'), 0);
const pageName = process.argv[3] || 'index.html';
const browser = await launchChromium({
  // BENCH_CHROMIUM_ARGS="--js-flags=..." adds flags (e.g. to pin V8's wasm tiers), split on
  // spaces; a JSON array instead keeps spaces inside a flag ('["--js-flags=--a --b"]').
  args: chromiumArgs(process.env.BENCH_CHROMIUM_ARGS),
});
try {
  const page = await browser.newPage();
  page.on('console', (m) => console.log(m.text()));
  const q = new URLSearchParams();
  if (process.env.BENCH_ONLY) q.set('only', process.env.BENCH_ONLY);
  if (process.env.BENCH_REPS) q.set('reps', process.env.BENCH_REPS);
  for (const [k, v] of new URLSearchParams(process.env.BENCH_QUERY || '')) q.set(k, v);
  const result = await benchResult(page, `http://127.0.0.1:${server.address().port}/bench/${pageName}?${q}`,
    { timeoutMs: 600_000 });
  if (result.error) throw new Error(result.error);
  const out = process.argv[2];
  if (out) {
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, JSON.stringify({ env: `chromium ${browser.version()}`, ...result }, null, 2));
  }
} finally {
  await browser.close();
  server.close();
}

/** BENCH_CHROMIUM_ARGS as a list: a JSON array, or flags separated by spaces. */
function chromiumArgs(v) {
  if (!v) return [];
  return v.trim().startsWith('[') ? JSON.parse(v) : v.split(' ');
}
