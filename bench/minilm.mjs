// Drives bench/minilm.html in headless Chromium, one runtime per fresh browser context, and
// prints one table: latency per case, load time, memory, and each runtime's cosine to
// webtensor's f32 CPU embeddings (the same model must give the same vectors).
//   node bench/minilm.mjs [out.json]
// MINILM_RUNS="webtensor:f32:cpu,ort:f32:cpu:2,..." picks the runs (runner:weights:device[:threads],
// threads default 1; device cpu, webgpu, auto (a first visit: the cost model calibrates) or
// auto-saved (a return visit: the calibration the first saved is restored); the runner "webtensor" is the build the package's loader picks,
// "webtensor@BUILD" one of its four builds forced (simd128, simd128-relaxed, threads,
// threads-relaxed), "webtensor+X" the whole package (loader and builds) in bench/.pkg-X (and
// "webtensor+X@BUILD" one build of it), e.g.
// an older commit's for same-run before/after figures (build it with `WEBTENSOR_BUILDS=<one
// build> scripts/build-pkg.sh bench/.pkg-X --release --features bench` in that commit's tree);
// BENCH_REPS the repetitions;
// MINILM_ROUNDS (default 3) rounds over all runs, interleaved, each figure the median over the
// rounds of the per-round medians (this machine has noisy stretches of seconds);
// MINILM_PROFILE=1 also prints where webtensor's time goes at 128 tokens, per op (=8 or =32: at
// that many tokens, =16x32: the batch of 16 × 32).
// MINILM_ENGINE=firefox or webkit runs the same page in headless Firefox ESR or WebKitGTK's
// MiniBrowser (over WebDriver, scripts/webdriver.mjs: a fresh browser per run) instead of
// Chromium: the per-engine table beside onnxruntime-web in the same engine.
import fs from 'node:fs';
import path from 'node:path';
import { benchResult, launchChromium } from '../scripts/chromium.mjs';
import { launchEngine } from '../scripts/webdriver.mjs';
import { startServer } from '../scripts/serve.mjs';

const DEFAULT_RUNS = 'webtensor@simd128:f32:cpu,webtensor:f32:cpu,webtensor:q8_0:cpu,ort:f32:cpu,ort:int8:cpu,' +
  'wllama:f32:cpu,wllama:q8_0:cpu';
const runs = (process.env.MINILM_RUNS || DEFAULT_RUNS).split(',').map((s) => {
  const [runner, type, device, threads = '1'] = s.split(':');
  return [runner, type, device, threads];
});
const same = (r, [runner, type, device, threads]) =>
  r.runner === runner && r.type === type && r.device === device && r.threads === threads;
const reps = process.env.BENCH_REPS || '5';
const rounds = Number(process.env.MINILM_ROUNDS || 3);
const median = (xs) => { const v = [...xs].sort((a, b) => a - b); return v[Math.floor(v.length / 2)]; };

const server = await startServer(path.resolve(import.meta.dirname, '..'), 0);
const ENGINE = process.env.MINILM_ENGINE || 'chromium';
// Chromium through playwright-core (console lines, a fresh context per run); the other engines
// through WebDriver (a fresh browser per run). Either way: open(url) → window.benchResult.
const browser = ENGINE === 'chromium' ? await launchChromium({
  args: ['--enable-precise-memory-info',
    // BENCH_JS_FLAGS="--no-liftoff" adds V8 flags (e.g. to pin V8's wasm tiers).
    `--js-flags=--expose-gc ${process.env.BENCH_JS_FLAGS || ''}`.trim()],
}) : null;
let engineVersion = browser ? `Chromium ${browser.version()}` : ENGINE;
async function newVisitor() {
  if (browser) {
    const context = await browser.newContext();
    return {
      async open(url) {
        const page = await context.newPage();
        page.on('console', (m) => console.log(`  ${m.text()}`));
        const r = await benchResult(page, url);
        await page.close();
        return r;
      },
      close: () => context.close(),
    };
  }
  const b = await launchEngine(ENGINE);
  engineVersion = b.version;
  return {
    open: (url) => b.benchResult(url),
    close: () => b.close(),
  };
}
const perRound = [];
try {
  for (let round = 0; round < rounds; round++) for (const [runner, type, device, threads] of runs) {
    const visitor = await newVisitor();
    const [, pkgdir, forced] = runner.match(/^webtensor(?:\+([^@]+))?(?:@(.+))?$/) || [];
    // auto-saved: 'auto' on a return visit (a first visit in the same context saved the
    // calibration), beside auto's first-visit load.
    const saved = device === 'auto-saved';
    const q = new URLSearchParams({ runner: runner.startsWith('webtensor') ? 'webtensor' : runner, type, device: saved ? 'auto' : device, reps, threads });
    if (forced) q.set('build', forced);
    if (pkgdir) q.set('pkgdir', `.pkg-${pkgdir}`);
    if (process.env.MINILM_PROFILE) q.set('profile', process.env.MINILM_PROFILE);
    console.log(`round ${round + 1}: ${runner} ${type} ${device} ${threads} thread(s)`);
    if (saved) {
      const first = await visitor.open(`http://127.0.0.1:${server.address().port}/bench/minilm.html?${q}&loadOnly=1`);
      console.log(`  first visit: load ${first.loadMs} ms`);
    }
    const r = await visitor.open(`http://127.0.0.1:${server.address().port}/bench/minilm.html?${q}`);
    await visitor.close();
    if (r.error) { console.log(`  failed: ${r.error}`); perRound.push({ runner, type, device, threads, error: r.error }); continue; }
    // Over WebDriver the page's log does not reach us: its profile, from the result.
    if (r.profile && ENGINE !== 'chromium') console.log(r.profile);
    perRound.push({ ...r, runner, threads, device });
  }
} finally {
  await browser?.close();
  server.close();
}
// One result per run: medians over the rounds (a run failing in any round is reported failed).
const results = runs.map((run) => {
  const all = perRound.filter((r) => same(r, run));
  const bad = all.find((r) => r.error);
  if (bad) return bad;
  const rows = all[0].rows.map(({ case: c }) => ({
    case: c, ms: median(all.map((r) => r.rows.find((x) => x.case === c).ms)), rounds: all.map((r) => r.rows.find((x) => x.case === c).ms),
  }));
  return { ...all[all.length - 1], rows, loadMs: median(all.map((r) => r.loadMs)) };
});

const cos = (a, b) => { let d = 0, na = 0, nb = 0; for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; } return d / Math.sqrt(na * nb); };
const base = results.find((r) => r.runner.startsWith('webtensor') && r.type === 'f32' && r.device === 'cpu' && !r.error);
const ours = (r) => r.runner.startsWith('webtensor');
const mib = (b) => (b == null ? '-' : (b / 1048576).toFixed(0));
const cases = ['8 tokens', '32 tokens', '128 tokens', '16 × 32 tokens'];
console.log(`\nall-MiniLM-L6-v2, headless ${engineVersion}, median of ${reps} runs, median of ${rounds} rounds (ms)`);
console.log(['runtime', 'weights', 'threads', 'device', ...cases, 'load ms', 'wasm MiB', 'JS MiB', 'cos vs wt-f32'].join(' | '));
for (const r of results) {
  if (r.error) { console.log(`${r.runner} | ${r.type} | ${r.threads} | ${r.device} | failed: ${r.error}`); continue; }
  const ms = cases.map((c) => r.rows.find((x) => x.case === c)?.ms ?? '-');
  const c = base ? Math.min(...r.check.map((v, i) => cos(v, base.check[i]))).toFixed(6) : '-';
  console.log([r.runner, r.type, r.threads, `${r.device}: ${r.devices}`, ...ms, r.loadMs, mib(r.memory.wasmBytes), mib(r.memory.jsHeapBytes), c].join(' | '));
}
// Speed-ups of webtensor's CPU runs over each peer at the same thread count, per case
// (peer ms / webtensor ms), then each runtime's thread scaling (1-thread ms / n-thread ms).
for (const wt of results.filter((r) => ours(r) && r.device === 'cpu' && !r.error)) {
  for (const p of results.filter((r) => !ours(r) && !r.error && r.threads === wt.threads)) {
    const ratios = cases.map((c) => {
      const a = wt.rows.find((x) => x.case === c)?.ms, b = p.rows.find((x) => x.case === c)?.ms;
      return a && b ? `${(b / a).toFixed(2)}×` : '-';
    });
    console.log(`${wt.runner} ${wt.type} vs ${p.runner} ${p.type} ${p.device}, ${wt.threads} thread(s): ${ratios.join(' | ')}`);
  }
}
for (const r of results.filter((r) => !r.error && r.threads !== '1')) {
  const one = results.find((x) => !x.error && same(x, [r.runner, r.type, r.device, '1']));
  if (!one) continue;
  const ratios = cases.map((c) => {
    const a = one.rows.find((x) => x.case === c)?.ms, b = r.rows.find((x) => x.case === c)?.ms;
    return a && b ? `${(a / b).toFixed(2)}×` : '-';
  });
  console.log(`scaling ${r.runner} ${r.type} ${r.device}, ${r.threads} threads vs 1: ${ratios.join(' | ')}`);
}
const out = process.argv[2];
if (out) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ env: engineVersion, reps, rounds, results: results.map(({ check, ...r }) => r) }, null, 2));
}
