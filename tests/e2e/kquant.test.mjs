// End-to-end: the CPU's K-quant matmul kernels (integer dots on Q8_K activations) in each wasm
// build of the package, in headless Chromium: SIMD128, relaxed SIMD (its 8-bit dot, which no
// other test runs on K-quants: Node's relaxed SIMD is an older draft) and the threaded relaxed
// build at 2 threads. Each build computes the same matvec (1 activation row) and GEMM (9 rows)
// for Q2_K…Q6_K weights quantized from the same values; the builds must agree (the integer
// dots are exact, and threads cut rows, so to rounding only), and each must be near the f32
// product of the unquantized values (the quantization's own error). E2E_PKG picks another
// built package (default pkg/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = process.env.E2E_PKG || 'pkg';
const TYPES = ['q2_k', 'q3_k', 'q4_k', 'q5_k', 'q6_k'];
// Cosine to the f32 product: Q2_K's round trip alone is about 0.28 relative RMS.
const MIN_COS = { q2_k: 0.9, q3_k: 0.97, q4_k: 0.99, q5_k: 0.995, q6_k: 0.998 };
const [K, M] = [512, 37];
const built = (b) => { try { return fs.statSync(path.join(ROOT, PKG, b, 'webtensor_bg.wasm')).size > 0; } catch { return false; } };
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(ROOT, PKG, 'index.js')), `${PKG}/ is not built (scripts/build-web.sh)`);
  server = await startServer(ROOT, 0); // cross-origin isolated: the threaded build runs
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium({ webgpu: false });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function products(build) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(base + 'tests/e2e/engine.html');
  const out = await page.evaluate(async ({ loader, build, types, K, M }) => {
    const { load } = await import(loader);
    const wt = await load({ worker: false, build, ...(build.startsWith('threads') ? { threads: 2 } : {}) });
    const seeded = (n, seed) => {
      const a = new Float32Array(n);
      let s = seed;
      for (let i = 0; i < n; i++) { s = (s * 1103515245 + 12345) >>> 0; a[i] = (s / 4294967296) * 2 - 1; }
      return a;
    };
    const rt = await wt.Runtime.create({ device: 'cpu' });
    const w = seeded(K * M, 7);
    const res = { loaded: wt.loaded, runs: {} };
    for (const t of types) {
      for (const n of [1, 9]) {
        const g = new wt.Graph();
        const x = g.input('x', 'f32', [K, n]);
        const y = g.matmul(g.weight('w', t, [K, M], w), x);
        g.setName(y, 'y');
        g.output(y);
        const xs = seeded(K * n, 100 + n);
        const { y: got } = await rt.run(g, { x: xs });
        // The f32 product of the unquantized values.
        const want = new Float32Array(M * n);
        for (let j = 0; j < n; j++) for (let i = 0; i < M; i++) {
          let s = 0;
          for (let k = 0; k < K; k++) s += w[i * K + k] * xs[j * K + k];
          want[j * M + i] = s;
        }
        res.runs[`${t} n${n}`] = { got: Array.from(got), want: Array.from(want) };
      }
    }
    await rt.dispose();
    return res;
  }, { loader: `/${PKG}/index.js`, build, types: TYPES, K, M });
  await page.close();
  assert.deepEqual(errors, [], `${build}: page errors`);
  return out;
}

const cos = (a, b) => {
  let [ab, aa, bb] = [0, 0, 0];
  for (let i = 0; i < a.length; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
  return ab / Math.sqrt(aa * bb);
};

test('K-quant matmul on the CPU: every build gives the same products, near f32', async (t) => {
  const builds = ['simd128', 'simd128-relaxed', 'threads-relaxed'].filter(built);
  assert.ok(builds.includes('simd128') && builds.includes('simd128-relaxed'), `${PKG}/ lacks a single-thread build: ${builds}`);
  const results = {};
  for (const b of builds) {
    results[b] = await products(b);
    assert.equal(results[b].loaded.build, b, `${b}: loaded ${results[b].loaded.build}`);
  }
  const base = results.simd128.runs;
  for (const [name, { got, want }] of Object.entries(base)) {
    const c = cos(got, want);
    assert.ok(c >= MIN_COS[name.split(' ')[0]], `simd128 ${name}: cosine ${c} to the f32 product`);
    const scale = Math.max(...want.map(Math.abs));
    for (const b of builds.slice(1)) {
      const other = results[b].runs[name].got;
      const diff = Math.max(...other.map((v, i) => Math.abs(v - got[i])));
      assert.ok(diff <= 1e-5 * scale, `${b} ${name}: differs from simd128 by ${diff} (scale ${scale})`);
    }
    t.diagnostic(`${name}: cosine ${c.toFixed(5)} to f32; ${builds.slice(1).join(', ')} agree with simd128`);
  }
});
