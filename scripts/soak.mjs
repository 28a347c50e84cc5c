// The soak test's driver (scripts/soak.sh runs it; a benchmark-style check, not in
// scripts/test.sh): in headless Chromium (WebGPU on SwiftShader), on the built package (pkg/)
// loaded into a blank page with load({ worker: false }), MiniLM q8_0
//   cpu      SOAK_EMBEDS embeds of one short sentence (of four, in turn) on the CPU,
//   webgpu   SOAK_EMBEDS embeds on WebGPU,
//   cycles   SOAK_CYCLES load / embed / dispose cycles of the model on WebGPU (from bytes
//            fetched once, so that the fetch's own memory stays out of it),
// after a warm-up (caches, pools and the wasm heap fill once), sampling every SOAK_EVERY
// iterations (default: 20 samples a phase), after a forced garbage collection (CDP
// HeapProfiler.collectGarbage):
//   wasm     the module's memory (WebAssembly.Memory buffer size; it only grows),
//   heap     the JS heap in use (CDP Runtime.getHeapUsage),
//   gpu      live GPU buffers and their bytes, as the engine counts them (gpuBuffers(): made
//            and not yet dropped, which destroys them),
//   undestr  GPUBuffers the browser made and nobody destroyed (tests/e2e/gpu_hook.mjs): their
//            memory waits for the garbage collector, which knows nothing of it.
// Prints a table per phase, then each metric's least-squares slope per iteration and whether
// it is flat (its drift over the phase, slope × iterations, within the metric's tolerance);
// writes target/bench/soak.json. Exits 1 when a metric is not flat.
// Env: SOAK_EMBEDS (1000), SOAK_CYCLES (100), SOAK_EVERY, SOAK_PHASES ("cpu webgpu cycles"),
// SOAK_PKG (pkg), CHROMIUM (/usr/bin/chromium).
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from './chromium.mjs';
import { startServer } from './serve.mjs';
import { installGpuHook } from '../tests/e2e/gpu_hook.mjs';

const ROOT = path.resolve(import.meta.dirname, '..');
const env = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
  return n;
};
const EMBEDS = env('SOAK_EMBEDS', 1000);
const CYCLES = env('SOAK_CYCLES', 100);
const PHASES = (process.env.SOAK_PHASES || 'cpu webgpu cycles').split(/\s+/).filter(Boolean);
const PKG = process.env.SOAK_PKG || 'pkg';
const MODEL = '/models/minilm-q8_0.gguf';
const MiB = 1 << 20;

// Drift over a phase (slope × iterations) within which a metric is flat: the wasm memory grows
// in 64 KiB pages and never shrinks, the JS heap moves by some 100 KB between collections;
// the GPU counts must not move at all.
const METRICS = [
  { key: 'wasm', label: 'wasm memory', unit: 'bytes', tolerance: MiB },
  { key: 'heap', label: 'JS heap', unit: 'bytes', tolerance: 2 * MiB },
  { key: 'gpuLive', label: 'live GPU buffers', unit: 'buffers', tolerance: 0.5 },
  { key: 'gpuLiveBytes', label: 'live GPU bytes', unit: 'bytes', tolerance: 4096 },
  { key: 'undestroyed', label: 'GPUBuffers not destroyed', unit: 'buffers', tolerance: 0.5 },
];

for (const p of PHASES) {
  if (!['cpu', 'webgpu', 'cycles'].includes(p)) throw new Error(`SOAK_PHASES: unknown phase ${p} (cpu, webgpu, cycles)`);
}
if (!fs.existsSync(path.join(ROOT, PKG, 'index.js'))) throw new Error(`${PKG}/ is not built (scripts/build-pkg.sh ${PKG})`);
if (!fs.existsSync(path.join(ROOT, MODEL))) throw new Error('no models/minilm-q8_0.gguf (scripts/fetch-model.sh)');

/** Least-squares slope of ys over xs. */
function slope(xs, ys) {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0, sxx = 0;
  for (let i = 0; i < n; i++) { sxy += (xs[i] - mx) * (ys[i] - my); sxx += (xs[i] - mx) ** 2; }
  return sxx === 0 ? 0 : sxy / sxx;
}

const server = await startServer(ROOT, 0, { isolate: false });
const browser = await launchChromium();
const results = { embeds: EMBEDS, cycles: CYCLES, phases: {} };
let notFlat = 0;
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // A build missing from the package (the loader falls back) is a 404, not an error here.
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource/.test(m.text())) errors.push(m.text());
  });
  await page.addInitScript(installGpuHook);
  await page.goto(`http://127.0.0.1:${server.address().port}/tests/e2e/engine.html`);
  const cdp = await context.newCDPSession(page);
  const loaded = await page.evaluate(async ([loader, model]) => {
    const { load } = await import(loader);
    const wt = await load({ worker: false });
    const file = new Uint8Array(await (await fetch(model)).arrayBuffer());
    const SENTENCES = ['A man is playing a guitar.', 'The stock market fell sharply today.',
      'A cat sleeps on the sofa.', 'WebGPU runs tensor graphs in the browser.'];
    const state = { i: 0 };
    // One phase's n iterations from where it stands; `start` makes its model.
    globalThis.soak = {
      async start(phase) {
        state.model?.dispose();
        state.model = phase === 'cycles' ? null : await wt.SentenceEmbedder.load(file, { device: phase, costModel: false });
        state.check = null;
      },
      async run(phase, n) {
        for (let k = 0; k < n; k++, state.i++) {
          const text = [SENTENCES[state.i % SENTENCES.length]];
          if (phase === 'cycles') {
            const m = await wt.SentenceEmbedder.load(file, { device: 'webgpu', costModel: false });
            await m.embed(text);
            m.dispose();
          } else {
            const [e] = await state.model.embed(text);
            // The answer must not drift either: the first vector of each sentence is kept.
            state.check ??= new Map();
            const first = state.check.get(text[0]);
            if (!first) state.check.set(text[0], e);
            else if (e.some((v, j) => Math.abs(v - first[j]) > 1e-6)) throw new Error(`embedding ${state.i} changed`);
          }
        }
      },
      sample() {
        // A package from before gpuBuffers() existed: the browser's count only.
        const g = wt.gpuBuffers?.() ?? { live: null, liveBytes: null };
        return { wasm: wt.memory.buffer.byteLength, gpuLive: g.live, gpuLiveBytes: g.liveBytes,
          undestroyed: globalThis.__gpuHook.undestroyed().count };
      },
    };
    return wt.loaded;
  }, [`/${PKG}/index.js`, MODEL]);
  console.log(`webtensor ${loaded.build}, ${loaded.threads} thread(s); ${EMBEDS} embeds per device, ${CYCLES} load/dispose cycles`);

  const sample = async () => {
    await cdp.send('HeapProfiler.collectGarbage');
    // Finalizers (wasm-bindgen's, the GPU's) run after the collection: let them.
    await page.evaluate(() => new Promise((r) => setTimeout(r, 50)));
    await cdp.send('HeapProfiler.collectGarbage');
    const heap = (await cdp.send('Runtime.getHeapUsage')).usedSize;
    return { heap, ...(await page.evaluate(() => globalThis.soak.sample())) };
  };

  for (const phase of PHASES) {
    const total = phase === 'cycles' ? CYCLES : EMBEDS;
    const every = env('SOAK_EVERY', Math.max(1, Math.round(total / 20)));
    const warmup = phase === 'cycles' ? 3 : 20;
    const t0 = Date.now();
    await page.evaluate((p) => globalThis.soak.start(p), phase);
    await page.evaluate(([p, n]) => globalThis.soak.run(p, n), [phase, warmup]);
    const rows = [];
    let done = 0;
    let last = Date.now();
    rows.push({ iter: 0, ms: 0, ...(await sample()) });
    while (done < total) {
      const n = Math.min(every, total - done);
      const t = Date.now();
      await page.evaluate(([p, k]) => globalThis.soak.run(p, k), [phase, n]);
      const ms = (Date.now() - t) / n;
      done += n;
      rows.push({ iter: done, ms, ...(await sample()) });
      if (Date.now() - last > 30_000) {
        console.log(`  ${phase}: ${done}/${total} (${ms.toFixed(1)} ms each)`);
        last = Date.now();
      }
    }
    const unit = phase === 'cycles' ? 'cycle' : 'embed';
    console.log(`\n== ${phase}: ${total} ${unit}s after ${warmup} warm-up, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    console.log(`${'iter'.padStart(6)} ${'wasm MiB'.padStart(9)} ${'heap MiB'.padStart(9)} ${'GPU live'.padStart(9)} ` +
      `${'GPU MiB'.padStart(9)} ${'undestr'.padStart(8)} ${`ms/${unit}`.padStart(10)}`);
    for (const r of rows) {
      console.log(`${String(r.iter).padStart(6)} ${(r.wasm / MiB).toFixed(2).padStart(9)} ${(r.heap / MiB).toFixed(2).padStart(9)} ` +
        `${String(r.gpuLive ?? '-').padStart(9)} ${(r.gpuLiveBytes === null ? '-' : (r.gpuLiveBytes / MiB).toFixed(2)).padStart(9)} ` +
        `${String(r.undestroyed).padStart(8)} ` +
        `${(r.iter ? r.ms.toFixed(1) : '-').padStart(10)}`);
    }
    const xs = rows.map((r) => r.iter);
    const metrics = {};
    console.log(`${'metric'.padEnd(26)} ${'start'.padStart(12)} ${'end'.padStart(12)} ${`slope/${unit}`.padStart(14)} ${'drift'.padStart(12)}  flat`);
    for (const m of METRICS) {
      const ys = rows.map((r) => r[m.key]);
      if (ys.some((y) => y === null)) {
        console.log(`${`${m.label} (${m.unit})`.padEnd(26)} (not in this package)`);
        continue;
      }
      const s = slope(xs, ys);
      const drift = s * total;
      const flat = Math.abs(drift) <= m.tolerance;
      if (!flat) notFlat++;
      metrics[m.key] = { start: ys[0], end: ys.at(-1), slope: s, drift, tolerance: m.tolerance, flat };
      console.log(`${`${m.label} (${m.unit})`.padEnd(26)} ${String(ys[0]).padStart(12)} ${String(ys.at(-1)).padStart(12)} ` +
        `${s.toFixed(2).padStart(14)} ${drift.toFixed(1).padStart(12)}  ${flat ? 'yes' : `NO (tolerance ${m.tolerance})`}`);
    }
    results.phases[phase] = { iterations: total, warmup, every, seconds: (Date.now() - t0) / 1000, rows, metrics };
  }
  await page.evaluate(() => globalThis.soak.start('cycles'));
  results.pageErrors = errors;
  if (errors.length) {
    console.log(`\npage errors: ${errors.join(' | ')}`);
    notFlat++;
  }
  await context.close();
} finally {
  await browser.close();
  server.close();
}
fs.mkdirSync(path.join(ROOT, 'target/bench'), { recursive: true });
fs.writeFileSync(path.join(ROOT, 'target/bench/soak.json'), JSON.stringify(results, null, 1));
console.log(`\n${notFlat ? `NOT FLAT: ${notFlat} metric(s) or page errors` : 'every metric flat'}; target/bench/soak.json`);
process.exit(notFlat ? 1 : 0);
