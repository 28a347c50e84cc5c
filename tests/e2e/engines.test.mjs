// MiniLM end to end in every browser engine here, one script driven over W3C WebDriver
// (scripts/webdriver.mjs): headless Chromium (chromedriver), headless Firefox ESR
// (geckodriver) and WebKitGTK's MiniBrowser under Xvfb (WebKitWebDriver).
// In each engine, from the built package (www/dist/pkg, scripts/build-web.sh) on a
// cross-origin isolated page, worker mode and not:
//   - the build the loader picks there, and its reasons (Chromium and Firefox:
//     threads-relaxed; WebKitGTK: simd128, no SharedArrayBuffer and no relaxed SIMD there);
//   - MiniLM f32 and Q8_0 embeddings on the CPU against the numpy reference, with the
//     tolerances of the Chromium test (f32 cosine >= 1 - 1e-4, Q8_0 > 0.99); on WebGPU too
//     where the engine has it (Chromium on SwiftShader, Firefox on lavapipe), with the
//     adapter's shader-f16;
//   - the embed time (6 sentences; median of 5 on the CPU, 1 run on WebGPU).
// Writes target/e2e/engines.json and target/e2e/engines.md: the README's browser table
// (scripts/readme-engines.mjs renders it, checks the README's against it, and with --write
// puts it there; scripts/test.sh runs the check). An engine whose driver is missing is skipped with the reason,
// unless E2E_REQUIRE_ENGINES=1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { launchEngine, engineAvailability, engineSkip } from '../../scripts/webdriver.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { table, runMeta } from '../../scripts/readme-engines.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT = path.join(ROOT, 'target/e2e');
const LOADER = '/www/dist/pkg/index.js';
const TEXTS = ['A man is eating food.', 'A man is eating a piece of bread.', 'The girl is carrying a baby.',
  "Café au lait, s'il vous plaît!", 'WebGPU and WebAssembly run tensor graphs in the browser.', '?'];
// What each engine is expected to pick and to have (a change there is a finding, not noise).
const EXPECT = {
  chromium: { build: 'threads-relaxed', worker: true, webgpu: true },
  firefox: { build: 'threads-relaxed', worker: true, webgpu: true },
  webkit: { build: 'simd128', worker: true, webgpu: false },
};
const available = engineAvailability();
let server, base;
const results = {};

before(async () => {
  assert.ok(fs.existsSync(path.join(ROOT, 'www/dist/pkg/index.js')), 'www/dist/pkg is not built (scripts/build-web.sh)');
  server = await startServer(ROOT, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
});

after(() => {
  server?.close();
  if (!Object.keys(results).length) return;
  fs.mkdirSync(OUT, { recursive: true });
  const meta = runMeta();
  fs.writeFileSync(path.join(OUT, 'engines.json'), JSON.stringify({ _meta: meta, ...results }, null, 2));
  const md = table(results, meta);
  fs.writeFileSync(path.join(OUT, 'engines.md'), md);
  console.log(`# browser table (target/e2e/engines.md):\n${md.replace(/^/gm, '# ')}`);
});

function reference(ids) {  // tests/reference/minilm_reference.py (numpy, float64)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webtensor-e2e-'));
  fs.writeFileSync(path.join(dir, 'ids.json'), JSON.stringify({ ids }));
  execFileSync('python3', [path.join(ROOT, 'tests/reference/minilm_reference.py'), path.join(ROOT, 'models/minilm'),
    path.join(dir, 'ids.json'), path.join(dir, 'out.json')]);
  const out = JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8')).embeddings;
  fs.rmSync(dir, { recursive: true });
  return out;
}
const cosine = (a, b) => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
};

/** In the page: both modes, both weight types on the CPU, f32 on WebGPU when there is one. */
async function inPage([loader, texts]) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const { load } = await import(loader);
  const out = { ua: navigator.userAgent, isolated: crossOriginIsolated, hasGpu: !!navigator.gpu, modes: {} };
  for (const worker of [true, false]) {
    const wt = await load({ worker });
    const devices = await wt.listDevices();
    const mode = { loaded: wt.loaded, devices, runs: {} };
    const gpu = devices.find((d) => d.name === 'WebGPU' && d.available);
    const runs = [['cpu', 'f32'], ['cpu', 'q8_0'], ...(gpu && worker ? [['webgpu', 'f32']] : [])];
    for (const [dev, type] of runs) {
      const t0 = performance.now();
      const e = await wt.SentenceEmbedder.load(`/models/minilm-${type}.gguf`, { device: dev, costModel: false });
      const loadMs = performance.now() - t0;
      const emb = (await e.embed(texts)).map((v) => Array.from(v));
      // (One timed run on WebGPU: software adapters take seconds a run here.)
      const ms = [];
      for (let i = 0; i < (dev === 'webgpu' ? 1 : 5); i++) {
        const t = performance.now();
        await e.embed(texts);
        ms.push(performance.now() - t);
      }
      const ids = [];
      for (const s of texts) ids.push(Array.from(await e.encode(s)));
      mode.runs[`${dev}-${type}`] = { emb, ids, loadMs, embedMs: median(ms), explain: (await e.explain()).split('\n')[0] };
      await e.dispose();
    }
    if (worker) wt.terminate?.();
    out.modes[worker ? 'worker' : 'page'] = mode;
  }
  return out;
}

for (const engine of ['chromium', 'firefox', 'webkit']) {
  const skip = engineSkip(engine, available);
  test(`MiniLM in ${engine}: the loader's build, embeddings against the numpy reference, worker mode and not`, { skip, timeout: 900_000 }, async (t) => {
    const missing = ['models/minilm-f32.gguf', 'models/minilm-q8_0.gguf', 'models/minilm/model.safetensors']
      .filter((f) => !fs.existsSync(path.join(ROOT, f)));
    if (missing.length) { t.skip(`no ${missing.join(', ')} (scripts/fetch-model.sh)`); return; }
    const b = await launchEngine(engine);
    let r;
    try {
      await b.goto(base + 'tests/e2e/loader.html');
      r = await b.evaluate(inPage, [LOADER, TEXTS], { timeoutMs: 800_000 });
    } finally {
      await b.close();
    }
    const want = EXPECT[engine];
    fs.mkdirSync(OUT, { recursive: true });
    fs.writeFileSync(path.join(OUT, `engine-${engine}.json`), JSON.stringify(r, null, 1).slice(0, 5_000_000));
    const row = { engine, version: b.version, isolated: r.isolated, modes: {} };
    assert.equal(r.isolated, true, 'the page is served cross-origin isolated');
    let want_ref = null;
    for (const [name, mode] of Object.entries(r.modes)) {
      assert.equal(mode.loaded.build, want.build, `${name}: ${JSON.stringify(mode.loaded)}`);
      assert.equal(mode.loaded.worker, name === 'worker');
      const gpu = mode.devices.find((d) => d.name === 'WebGPU');
      const hasGpu = !!gpu?.available;
      if (name === 'worker') assert.equal(hasGpu, want.webgpu, `WebGPU in ${engine}: ${JSON.stringify(gpu)}`);
      const m = {
        build: mode.loaded.build, threads: mode.loaded.threads, reasons: mode.loaded.reasons,
        webgpu: hasGpu ? (gpu.description || 'yes') : 'no',
        noGpuReason: hasGpu ? null : (gpu?.reason ?? 'no WebGPU device listed'),
        f16: hasGpu ? gpu.properties?.['shader-f16'] : null, runs: {},
      };
      for (const [key, run] of Object.entries(mode.runs)) {
        want_ref ??= reference(run.ids);
        const min = Math.min(...run.emb.map((g, i) => cosine(g, want_ref[i])));
        const bound = key.endsWith('q8_0') ? 0.99 : 1 - 1e-4;
        assert.ok(min >= bound, `${engine} ${name} ${key}: min cosine to the reference ${min} (< ${bound})`);
        m.runs[key] = { minCosine: min, loadMs: Math.round(run.loadMs), embedMs: Number(run.embedMs.toFixed(1)), explain: run.explain };
        t.diagnostic(`${name} ${key}: cosine ${min.toFixed(6)}, embed ${run.embedMs.toFixed(1)} ms (6 sentences), load ${Math.round(run.loadMs)} ms`);
      }
      row.modes[name] = m;
    }
    t.diagnostic(`${b.version}: ${row.modes.worker.build}, ${row.modes.worker.threads} thread(s); reasons: ${row.modes.worker.reasons.join('; ') || 'none'}`);
    results[engine] = row;
  });
}
