// Browser runner: serves bench/ and runs index.html in headless Chromium (scripts/chromium.mjs).
//   node bench/browser.mjs [out.json] [page]
// (page: index.html, the CPU matmul benchmark, or minilm.html; BENCH_QUERY adds URL parameters)
// BENCH_ENGINE=firefox or webkit runs the page in headless Firefox ESR or WebKitGTK's
// MiniBrowser over WebDriver (scripts/webdriver.mjs) instead, printing its rows at the end
// (WebKit has no shared memory: 1 thread there; the package's loader picks its build).
import fs from 'node:fs';
import path from 'node:path';
import { benchResult, launchChromium } from '../scripts/chromium.mjs';
import { launchEngine } from '../scripts/webdriver.mjs';
import { formatRow } from './cpu-matmul.mjs';
import { startServer } from '../scripts/serve.mjs';

// Served from the repository root, so bench pages reach models/ too.
const server = await startServer(path.resolve(import.meta.dirname, '..'), 0);
const pageName = process.argv[3] || 'index.html';
const ENGINE = process.env.BENCH_ENGINE || 'chromium';
if (!['chromium', 'firefox', 'webkit'].includes(ENGINE)) {
  throw new Error(`BENCH_ENGINE=${ENGINE}: chromium, firefox or webkit`);
}
const q = new URLSearchParams();
if (process.env.BENCH_ONLY) q.set('only', process.env.BENCH_ONLY);
if (process.env.BENCH_REPS) q.set('reps', process.env.BENCH_REPS);
for (const [k, v] of new URLSearchParams(process.env.BENCH_QUERY || '')) q.set(k, v);
const url = `http://127.0.0.1:${server.address().port}/bench/${pageName}?${q}`;
let result;
let version;
if (ENGINE === 'chromium') {
  const browser = await launchChromium({
    // BENCH_CHROMIUM_ARGS="--js-flags=..." adds flags (e.g. to pin V8's wasm tiers), split on
    // spaces; a JSON array instead keeps spaces inside a flag ('["--js-flags=--a --b"]').
    args: chromiumArgs(process.env.BENCH_CHROMIUM_ARGS),
  });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => console.log(m.text()));
    result = await benchResult(page, url, { timeoutMs: 600_000 });
    version = `chromium ${browser.version()}`;
  } finally {
    await browser.close();
  }
} else {
  const b = await launchEngine(ENGINE);
  try {
    result = await b.benchResult(url, { timeoutMs: 900_000, pollMs: 500 });
    version = `${ENGINE} ${b.version}`;
  } finally {
    await b.close();
  }
  // No console over WebDriver: the rows, as the page logs them (the matmul page's; other
  // pages' results as JSON).
  const matmulRows = (result.rows || []).filter((r) => r.gflops != null);
  for (const r of matmulRows) console.log(formatRow(r));
  if (!matmulRows.length) console.log(JSON.stringify(result, null, 2));
}
server.close();
if (result.error) throw new Error(result.error);
const out = process.argv[2];
if (out) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ env: version, ...result }, null, 2));
}

/** BENCH_CHROMIUM_ARGS as a list: a JSON array, or flags separated by spaces. */
function chromiumArgs(v) {
  if (!v) return [];
  return v.trim().startsWith('[') ? JSON.parse(v) : v.split(' ');
}
