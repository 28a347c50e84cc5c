// CPU matmul benchmark core, shared by the Node runner and the browser page: webtensor's CPU
// kernels (SIMD128, 1 thread) beside onnxruntime-web (wasm, 1 thread) and tfjs-backend-wasm
// (XNNPACK, 1 thread), same shapes, same process, plus a probe of the wasm SIMD f32 peak.
// Times are medians of REPS runs after a warm-up (3 runs and at least 0.3 s); GFLOP/s = 2·m·n·k / time.
import { matmulModel } from './onnx-matmul.mjs';

export const CASES = [
  { name: 'f32 gemm 256³', w: 'f32', m: 256, n: 256, k: 256 },
  { name: 'f32 gemm 512³', w: 'f32', m: 512, n: 512, k: 512 },
  { name: 'f32 gemm 1024³', w: 'f32', m: 1024, n: 1024, k: 1024 },
  { name: 'q8_0 gemm 1024³', w: 'q8_0', m: 1024, n: 1024, k: 1024 },
  { name: 'q4_0 gemm 1024³', w: 'q4_0', m: 1024, n: 1024, k: 1024 },
  // MiniLM's attention projections (384 × 384) and feed-forward up-projection (1536 outputs,
  // k 384) at 128 tokens, the latter also at 16 × 32.
  { name: 'f32 gemm 384×128×384', w: 'f32', m: 384, n: 128, k: 384 },
  { name: 'q8_0 gemm 384×128×384', w: 'q8_0', m: 384, n: 128, k: 384 },
  { name: 'f32 gemm 1536×128×384', w: 'f32', m: 1536, n: 128, k: 384 },
  { name: 'q8_0 gemm 1536×128×384', w: 'q8_0', m: 1536, n: 128, k: 384 },
  { name: 'f32 gemm 1536×512×384', w: 'f32', m: 1536, n: 512, k: 384 },
  { name: 'q8_0 gemm 1536×512×384', w: 'q8_0', m: 1536, n: 512, k: 384 },
  // MiniLM's batch of 16 × 32 runs as two of 8 × 32 rows: its feed-forward up and down.
  { name: 'f32 gemm 1536×256×384', w: 'f32', m: 1536, n: 256, k: 384 },
  { name: 'f32 gemm 384×256×1536', w: 'f32', m: 384, n: 256, k: 1536 },
  // A decoder's prompt: Qwen2.5-0.5B's feed-forward up / gate projection (4864 outputs, k 896)
  // and down projection (896 outputs, k 4864: Q4_K / Q6_K in a Q4_K_M file) on a 64-token
  // prefill batch. A Q4_K_M file holds its rows of 896 as Q5_0 (llama.cpp's fallback where a
  // row is not a whole number of 256-value super-blocks): most of its prompt's multiply-adds.
  // Q3_K_M / Q2_K files hold those rows as IQ4_NL; older files Q4_1.
  ...['q8_0', 'q4_0', 'q5_0', 'q5_1', 'q4_1', 'iq4_nl'].map((w) => ({ name: `${w} gemm 4864×64×896`, w, m: 4864, n: 64, k: 896 })),
  ...['q8_0', 'q4_0', 'q4_k', 'q6_k'].map((w) => ({ name: `${w} gemm 896×64×4864`, w, m: 896, n: 64, k: 4864 })),
  // Its key / value projections (128 outputs, 2 KV heads of 64) and query projection.
  { name: 'q4_0 gemm 128×64×896', w: 'q4_0', m: 128, n: 64, k: 896 },
  { name: 'q4_0 gemm 896×64×896', w: 'q4_0', m: 896, n: 64, k: 896 },
  { name: 'q8_0 matvec 4096×4096', w: 'q8_0', m: 4096, n: 1, k: 4096 },
  { name: 'q4_0 matvec 4096×4096', w: 'q4_0', m: 4096, n: 1, k: 4096 },
  { name: 'f32 matvec 4096×4096', w: 'f32', m: 4096, n: 1, k: 4096 },
  // f16 weights (F16 GGUF files): rows converted as they are read.
  { name: 'f16 matvec 4096×4096', w: 'f16', m: 4096, n: 1, k: 4096 },
  { name: 'f16 gemm 1024³', w: 'f16', m: 1024, n: 1024, k: 1024 },
  // Q5_0 (Q4_K_M's rows of 896), Q5_1 (Q5_K_M's), IQ4_NL (Q3_K_M's) and Q4_1 matrix-vector
  // products.
  ...['q5_0', 'q5_1', 'iq4_nl', 'q4_1'].map((w) => ({ name: `${w} matvec 4096×4096`, w, m: 4096, n: 1, k: 4096 })),
  // K-quants (the GGUF mixes people download: Q4_K_M is Q4_K with Q6_K).
  ...['q4_k', 'q6_k', 'q5_k', 'q3_k', 'q2_k'].flatMap((w) => [
    { name: `${w} matvec 4096×4096`, w, m: 4096, n: 1, k: 4096 },
    { name: `${w} gemm 1024³`, w, m: 1024, n: 1024, k: 1024 },
  ]),
];

/** Bytes of one weight in each format (ggml's block sizes). */
const WEIGHT_BYTES = {
  f32: 4, f16: 2, q8_0: 34 / 32, q5_0: 22 / 32, q5_1: 24 / 32, q4_0: 18 / 32, q4_1: 20 / 32,
  iq4_nl: 18 / 32,
  q2_k: 84 / 256, q3_k: 110 / 256, q4_k: 144 / 256, q5_k: 176 / 256, q6_k: 210 / 256,
};
/**
 * Bytes the streaming-read probe reads: past the caches of most machines, as a 4096² weight
 * is. Not on every one: the 2-core VM this was measured on has a 260 MiB L3, which can hold
 * both this probe's bytes and the weights; read both figures there as the cache's, not
 * memory's (bench/generate.html's probe reads 256 MiB: 10–12 GB/s there).
 */
const STREAM_BYTES = 64 << 20;

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

function randn(len, seed) {
  const a = new Float32Array(len);
  let s = seed >>> 0;
  for (let i = 0; i < len; i++) { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; a[i] = s / 4294967296 * 2 - 1; }
  return a;
}

async function time(fn, reps) {
  return (await timeEach([fn], reps))[0];
}

/** Medians of `reps` runs of each of `fns`, alternated run by run after a warm-up of all past
 * V8's tier-up (Liftoff → TurboFan compiles in the background: 3 rounds and 0.3 s), so they
 * are measured in the same window of a noisy machine. */
async function timeEach(fns, reps) {
  const w0 = performance.now();
  for (let i = 0; i < 3 || performance.now() - w0 < 300; i++) for (const f of fns) await f();
  const ts = fns.map(() => []);
  for (let i = 0; i < reps; i++) {
    for (const [j, f] of fns.entries()) {
      const t0 = performance.now();
      await f();
      ts[j].push(performance.now() - t0);
    }
  }
  return ts.map(median);
}

/** Measures the wasm SIMD f32 peak (GFLOP/s) with webtensor's independent-multiply-add probe. */
export function simdPeak(webtensor) {
  webtensor.simdPeakProbe(1e5);
  const rates = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const flops = webtensor.simdPeakProbe(2e6);
    rates.push(flops / ((performance.now() - t0) / 1e3) / 1e9);
  }
  return median(rates);
}

/**
 * Runs every case on every implementation given ({webtensor, ort, tf} may each be null).
 * `label` names the webtensor build, `threads` the thread count every implementation was set
 * up with (for the labels). Returns {peak, rows: [{case, impl, threads, ms, gflops, pctPeak}]}.
 */
/** One result row as the page logs it (and `bench/browser.mjs` prints it over WebDriver). */
export function formatRow(r) {
  return `${r.case.padEnd(24)} ${r.impl.padEnd(30)} ${String(r.threads).padStart(2)}t ${r.ms.toFixed(2).padStart(9)} ms ${r.gflops.toFixed(2).padStart(8)} GFLOP/s ${r.pctPeak.toFixed(1).padStart(6)}% of peak`;
}

export async function runBench({ webtensor, ort, tf, reps = 7, log = console.log, only, label = '', threads = 1 }) {
  const peak = simdPeak(webtensor);
  log(`wasm SIMD f32 peak (1 thread, mul+add probe): ${peak.toFixed(1)} GFLOP/s`);
  const rows = [];
  const add = (c, impl, ms) => {
    const gflops = 2 * c.m * c.n * c.k / (ms / 1e3) / 1e9;
    const row = { case: c.name, impl, threads, ms: +ms.toFixed(3), gflops: +gflops.toFixed(2), pctPeak: +(100 * gflops / peak).toFixed(1) };
    rows.push(row);
    log(formatRow(row));
  };
  for (const c of CASES.filter((c) => !only || only.test(c.name))) {
    const bench = new webtensor.MatmulBench(c.w, c.m, c.n, c.k);
    const impl = `webtensor${label ? ` ${label}` : ''} ${c.w}`;
    if (threads > 1) {
      // Alone first, as the peers are timed (a twin's weights alternating with these would
      // evict them from cache: a 4096² f32 matvec, 64 MB, ran at half speed beside its twin);
      // then beside a 1-thread twin, run for run: the thread scaling from one window of time.
      add(c, impl, await time(() => bench.run(), reps));
      const one = new webtensor.MatmulBench(c.w, c.m, c.n, c.k, 1);
      const [ms1, ms] = await timeEach([() => one.run(), () => bench.run()], reps);
      one.free();
      Object.assign(rows[rows.length - 1], { ms1: +ms1.toFixed(3), scaling: +(ms1 / ms).toFixed(2) });
      log(`${''.padEnd(24)} same window: 1 thread ${ms1.toFixed(2)} ms, 2 threads ${ms.toFixed(2)} ms, scaling ${(ms1 / ms).toFixed(2)}×`);
    } else if (c.n === 1 && webtensor.StreamProbe) {
      // A matrix-vector product streams its weights: their bytes per second beside a plain
      // streaming read of memory, run for run in the same window.
      const probe = new webtensor.StreamProbe(STREAM_BYTES);
      const [ms, probeMs] = await timeEach([() => bench.run(), () => probe.run()], reps);
      add(c, impl, ms);
      const gbs = c.m * c.k * WEIGHT_BYTES[c.w] / (ms / 1e3) / 1e9;
      const probeGbs = probe.bytes() / (probeMs / 1e3) / 1e9;
      probe.free();
      Object.assign(rows[rows.length - 1], { weightsGBs: +gbs.toFixed(2), streamGBs: +probeGbs.toFixed(2) });
      log(`${''.padEnd(24)} weights read ${gbs.toFixed(2)} GB/s, streaming-read probe ${probeGbs.toFixed(2)} GB/s (${(100 * gbs / probeGbs).toFixed(0)}%)`);
    } else {
      add(c, impl, await time(() => bench.run(), reps));
    }
    bench.free();
    if (c.w !== 'f32') continue; // the peers have no ggml block formats
    const w = randn(c.k * c.m, 7), x = randn(c.n * c.k, 11);
    if (ort) {
      const session = await ort.InferenceSession.create(matmulModel(c.n, c.k, c.m, w), { executionProviders: ['wasm'] });
      const feeds = { X: new ort.Tensor('float32', x, [c.n, c.k]) };
      add(c, 'onnxruntime-web wasm', await time(() => session.run(feeds), reps));
      await session.release();
    }
    if (tf) {
      const tw = tf.tensor2d(w, [c.k, c.m]), tx = tf.tensor2d(x, [c.n, c.k]);
      add(c, 'tfjs-backend-wasm', await time(() => { const y = tf.matMul(tx, tw); y.dataSync(); y.dispose(); }, reps));
      tw.dispose(); tx.dispose();
    }
  }
  return { peak: +peak.toFixed(2), rows };
}
