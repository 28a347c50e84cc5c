// The package's loader (pkg/index.js: four builds, one picked at load) in headless Chromium,
// against the built package copied into www/dist/pkg by scripts/build-web.sh:
//   - cross-origin isolated (scripts/serve.mjs sends COOP/COEP): the threaded build with a
//     2-thread pool whose workers really take work, MiniLM on it matching the numpy reference;
//   - each fallback: not isolated → a single-thread build, and a note saying why; relaxed SIMD
//     rejected by WebAssembly.validate → the SIMD128 builds;
//   - bad thread counts → an Error naming the limit; pool workers that cannot load (blocked
//     by a Content-Security-Policy) → an Error with the reason, in bounded time.
// Without threaded builds in the package (setup could not install the threaded toolchain)
// the threaded cases are skipped with a note, unless E2E_REQUIRE_THREADS=1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = path.join(ROOT, 'www/dist/pkg');
const PAGE = 'tests/e2e/loader.html';
const LOADER = '/www/dist/pkg/index.js';
const HAVE_THREADS = fs.existsSync(path.join(PKG, 'threads-relaxed/webtensor.js'));
const skipThreads = !HAVE_THREADS && process.env.E2E_REQUIRE_THREADS !== '1' &&
  'no threaded builds in www/dist/pkg (the threaded toolchain was not installed)';
const servers = {};
let browser;

before(async () => {
  assert.ok(fs.existsSync(path.join(PKG, 'index.js')), 'www/dist/pkg is not built (scripts/build-web.sh)');
  const serve = async (name, options) => {
    const s = await startServer(ROOT, 0, options);
    servers[name] = { s, base: `http://127.0.0.1:${s.address().port}/` };
  };
  await serve('isolated', {});
  await serve('plain', { isolate: false });
  await serve('csp', { headers: { 'content-security-policy': "worker-src 'none'" } });
  browser = await launchChromium({ webgpu: false });
});

after(async () => {
  await browser?.close();
  for (const { s } of Object.values(servers)) s.close();
});

/** A fresh page on server `name`; `noRelaxed` makes WebAssembly.validate reject relaxed SIMD. */
async function open(name, { noRelaxed = false } = {}) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  if (noRelaxed) {
    await page.addInitScript(() => {
      const validate = WebAssembly.validate;
      WebAssembly.validate = (bytes) => {
        const b = new Uint8Array(bytes.buffer ?? bytes);
        for (let i = 0; i + 2 < b.length; i++) if (b[i] === 0xfd && b[i + 1] === 0x85 && b[i + 2] === 0x02) return false;
        return validate(bytes);
      };
    });
  }
  await page.goto(servers[name].base + PAGE);
  return { page, errors, close: () => context.close() };
}

/** Loads the package in the page with `options`; what it chose and what the CPU says. */
const loadIn = (page, options) => page.evaluate(async ([url, options]) => {
  const { load } = await import(url);
  const wt = await load({ ...options, worker: false }); // threadPoolProbe is not proxied
  const cpu = (await wt.listDevices()).find((d) => d.name === 'CPU');
  const sum = await wt.vectorAdd('CPU', new Float32Array([1, 2, 3, 4]), new Float32Array([10, 20, 30, 40]));
  // The workers must take some of the probe's jobs; on a loaded machine a worker may wake too
  // late for one round, so up to 10 rounds (a pool whose workers never run fails all of them).
  let threadsUsed = 0;
  for (let i = 0; i < 10 && threadsUsed < 2; i++) threadsUsed = Math.max(threadsUsed, wt.threadPoolProbe(256).threadsUsed);
  return { loaded: wt.loaded, cpu, sum: Array.from(sum), threadsUsed, isolated: crossOriginIsolated };
}, [LOADER, options]);

test('cross-origin isolated: the threaded build, 2 threads, and the workers take work', { skip: skipThreads }, async () => {
  const { page, errors, close } = await open('isolated');
  const r = await loadIn(page, { threads: 2 });
  assert.equal(r.isolated, true);
  assert.equal(r.loaded.build, 'threads-relaxed', JSON.stringify(r.loaded));
  assert.equal(r.loaded.threads, 2);
  assert.deepEqual(r.loaded.reasons, []);
  assert.equal(r.cpu.properties.threads, '2');
  assert.equal(r.cpu.properties.build, 'threads+relaxed');
  assert.match(r.cpu.description, /relaxed simd kernels, 2 threads, threads\+relaxed build/);
  assert.ok(r.threadsUsed >= 2, `the pool probe ran on ${r.threadsUsed} thread(s)`);
  assert.deepEqual(r.sum, [11, 22, 33, 44]);
  assert.deepEqual(errors, []);
  await close();
});

const TEXTS = ['A man is eating food.', 'A man is eating a piece of bread.', 'The girl is carrying a baby.',
  "Café au lait, s'il vous plaît!", 'WebGPU and WebAssembly run tensor graphs in the browser.', '?'];

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

test('MiniLM on the threaded build (2 threads) matches the numpy reference', { skip: skipThreads }, async (t) => {
  const missing = ['models/minilm-f32.gguf', 'models/minilm-q8_0.gguf', 'models/minilm/model.safetensors']
    .filter((f) => !fs.existsSync(path.join(ROOT, f)));
  if (missing.length) { t.skip(`no ${missing.join(', ')} (scripts/fetch-model.sh)`); return; }
  const { page, errors, close } = await open('isolated');
  const r = await page.evaluate(async ([url, texts]) => {
    const { load } = await import(url);
    const wt = await load({ threads: 2 });
    const out = { loaded: wt.loaded, worker: wt.loaded.worker };
    for (const type of ['f32', 'q8_0']) {
      const e = await wt.SentenceEmbedder.load(`/models/minilm-${type}.gguf`, { device: 'cpu', costModel: false });
      out[type] = (await e.embed(texts)).map((v) => Array.from(v));
      // One text at a time: fewer than 32 token rows, so Q8_0 matmuls take the integer dots
      // (in this relaxed build, relaxed SIMD's 8-bit dot on 7-bit activations), not the GEMM.
      out[`${type}_alone`] = [];
      for (const s of texts) out[`${type}_alone`].push(Array.from((await e.embed([s]))[0]));
      // Worker mode (load's default): encode and explain answer with Promises.
      out.ids = [];
      for (const s of texts) out.ids.push(Array.from(await e.encode(s)));
      out.explain = await e.explain();
      await e.dispose();
    }
    return out;
  }, [LOADER, TEXTS]);
  assert.equal(r.loaded.build, 'threads-relaxed');
  assert.equal(r.loaded.threads, 2);
  assert.equal(r.worker, true, 'the engine (and its pool) runs in a worker');
  assert.match(r.explain, /device CPU: .*2 threads, threads\+relaxed build/);
  const want = reference(r.ids);
  const min = (got) => Math.min(...got.map((g, i) => cosine(g, want[i])));
  const [f32, q8, q8Alone] = [min(r.f32), min(r.q8_0), min(r.q8_0_alone)];
  t.diagnostic(`threaded build, 2 threads: min cosine to the reference f32 ${f32.toFixed(9)}, ` +
    `q8_0 ${q8.toFixed(6)} (batched), ${q8Alone.toFixed(6)} (one text at a time: integer dots)`);
  assert.ok(f32 >= 1 - 1e-4, `f32 drifts: ${f32}`);
  assert.ok(q8 > 0.99, `q8_0 is far off: ${q8}`);
  assert.ok(q8Alone > 0.99, `q8_0 through the integer dots is far off: ${q8Alone}`);
  assert.ok(min(r.f32_alone) >= 1 - 1e-4, `f32 one text at a time drifts: ${min(r.f32_alone)}`);
  assert.deepEqual(errors, []);
  await close();
});

test('not cross-origin isolated: a single-thread build, and the note says why', async () => {
  const { page, errors, close } = await open('plain');
  const r = await loadIn(page, { threads: 2 });
  assert.equal(r.isolated, false);
  assert.equal(r.loaded.build, 'simd128-relaxed');
  assert.equal(r.loaded.threads, 1);
  assert.match(r.loaded.reasons.join('; '), /not cross-origin isolated.*Cross-Origin-Embedder-Policy: require-corp/);
  assert.match(r.loaded.reasons.join('; '), /2 threads asked, 1 used/);
  assert.equal(r.cpu.properties.threads, '1');
  assert.match(r.cpu.properties.note, /not cross-origin isolated/);
  assert.match(r.cpu.description, /1 thread, simd128\+relaxed build\) — one thread: the page is not cross-origin isolated/);
  assert.deepEqual(r.sum, [11, 22, 33, 44]);
  // Forcing a threaded build there is an Error that says why, not a hang or a crash.
  const forced = await page.evaluate(async (url) => {
    const { choose } = await import(url);
    try { choose({ build: 'threads' }); return 'no error'; } catch (e) { return e.message; }
  }, LOADER);
  assert.match(forced, /cannot run the forced build threads: one thread: the page is not cross-origin isolated/);
  assert.deepEqual(errors, []);
  await close();
});

test('relaxed SIMD unavailable: the SIMD128 builds', async () => {
  const plain = await open('plain', { noRelaxed: true });
  const r = await loadIn(plain.page, {});
  assert.equal(r.loaded.build, 'simd128');
  assert.match(r.loaded.reasons.join('; '), /SIMD128 without relaxed SIMD/);
  assert.equal(r.cpu.properties.simd, 'wasm simd128');
  assert.deepEqual(r.sum, [11, 22, 33, 44]);
  await plain.close();
  if (skipThreads) return;
  const iso = await open('isolated', { noRelaxed: true });
  const t = await loadIn(iso.page, { threads: 2 });
  assert.equal(t.loaded.build, 'threads');
  assert.equal(t.cpu.properties.build, 'threads');
  assert.equal(t.cpu.properties.simd, 'wasm simd128');
  assert.ok(t.threadsUsed >= 2, `the pool probe ran on ${t.threadsUsed} thread(s)`);
  assert.deepEqual(t.sum, [11, 22, 33, 44]);
  await iso.close();
});

test('bad thread counts are an Error naming the limit', async () => {
  const { page, close } = await open('plain');
  const messages = await page.evaluate(async (url) => {
    const { load } = await import(url);
    const out = [];
    for (const threads of [0, -2, 1.5, 1000, '2', NaN]) {
      try { await load({ threads }); out.push(`no error for ${threads}`); } catch (e) { out.push(e.message); }
    }
    return out;
  }, LOADER);
  for (const m of messages) assert.match(m, /threads must be an integer from 1 to 64, got /);
  await close();
});

test('pool workers that cannot load (CSP worker-src none): an Error with the reason, nothing hangs', { skip: skipThreads }, async () => {
  const { page, close } = await open('csp');
  const t0 = Date.now();
  const r = await page.evaluate(async (url) => {
    const { load } = await import(url);
    try { await load({ threads: 2, workerTimeoutMs: 10000 }); return 'no error'; } catch (e) { return e.message; }
  }, LOADER);
  assert.match(r, /a thread pool worker failed to start: /);
  assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);
  console.log(`# CSP-blocked workers: ${r} (${Date.now() - t0} ms)`);
  await close();
});
