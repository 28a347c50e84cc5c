// Drives bench/generate.html in headless Chromium (served cross-origin isolated by
// scripts/serve.mjs, so both engines can run 2 threads), one fresh browser context per run, and
// prints one markdown table: per model and engine, load time, prefill tokens/s and time to
// first token on a 128-token prompt, decode tokens/s at context 128 and ~1024, peak wasm
// memory, decode's weight bytes per token × tokens/s against the streaming-read bandwidth, and
// prefill's multiply-adds per second against the int8 dot's peak, both measured in the same
// browser (engine=probe).
//   node bench/generate.mjs [out.json]
// GEN_RUNS="engine:model:threads[:device[:cases[:reps[:decode]]]],..." picks the runs (engine
// webtensor, webtensor+X (the package in bench/.pkg-X, e.g. an older commit's) or wllama, either
// webtensor with @BUILD to force one of its builds (default: DEFAULT_BUILD, per GEN_ENGINE); model a name in models/decoder/ without .gguf; cases "short+long"; decode
// steps, default 64); the default is DEFAULT_RUNS below. GEN_REPS overrides every run's repetitions.
// GEN_KV=f32 or f16 sets webtensor's KV cache dtype (kvType; default: the device's).
// GEN_BATCH=N sets webtensor's prefill chunk (batch; default 64 tokens).
// GEN_PROFILE=1 also prints, per case, a profile of one more run (webtensor: time per op and shapes).
// GEN_ENGINE=firefox or webkit runs the same page in headless Firefox ESR or WebKitGTK's
// MiniBrowser (over WebDriver, scripts/webdriver.mjs: a fresh browser per run, no page console)
// instead of Chromium; webtensor's default build there is the loader's pick for that engine
// (threads-relaxed in Firefox, simd128 in WebKit: no relaxed SIMD, no shared memory, so give
// WebKit runs of 1 thread in GEN_RUNS).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { benchResult, launchChromium } from '../scripts/chromium.mjs';
import { launchEngine } from '../scripts/webdriver.mjs';
import { startServer } from '../scripts/serve.mjs';

const STORIES = ['bench-stories15m-f32', 'bench-stories15m-q8_0', 'bench-stories15m-q4_0', 'bench-stories15m-q4_k_m'];
const QWEN = ['bench-qwen2-0.5b-q8_0', 'bench-qwen2-0.5b-q4_0', 'bench-qwen2-0.5b-q4_k_m'];
const ENGINES = [['webtensor', 1], ['webtensor', 2], ['wllama', 1], ['wllama', 2]];
// stories15M shapes: both cases, 3 repetitions, 64 decode steps. Qwen2.5-0.5B shapes are slow
// here (wllama: a few tokens/s, minutes per 900-token prompt): the 128-token case only, 1
// repetition, 16 decode steps. WebGPU (SwiftShader here): once, stories15M Q8_0, the 128-token
// case, 1 repetition.
const DEFAULT_RUNS = [
  ...STORIES.flatMap((m) => ENGINES.map(([e, t]) => `${e}:${m}:${t}:cpu:short+long:3:64`)),
  'webtensor:bench-stories15m-q8_0:1:webgpu:short:1:64',
  ...QWEN.flatMap((m) => ENGINES.map(([e, t]) => `${e}:${m}:${t}:cpu:short:1:16`)),
].join(',');
const runs = (process.env.GEN_RUNS || DEFAULT_RUNS).split(',').map((s) => {
  const [engine, model, threads = '1', device = 'cpu', cases = 'short+long', reps = '3', decode = '64'] = s.split(':');
  return {
    engine, model, threads: Number(threads), device, cases: cases.split('+'),
    reps: Number(process.env.GEN_REPS || reps), decode: Number(decode),
  };
});

const ROOT = path.resolve(import.meta.dirname, '..');
// The probes' modules (engine=probe), built from their text here so that a run never reports
// its limits as "-" for want of a file: wat2wasm is wabt's (Debian's `wabt`, which
// scripts/setup.sh installs).
fs.mkdirSync(path.join(ROOT, 'target/bench'), { recursive: true });
for (const [name, flags] of [['bandwidth', []], ['int8peak', ['--enable-relaxed-simd']], ['simd128peak', []]]) {
  try {
    execFileSync('wat2wasm', [...flags, `bench/${name}.wat`, '-o', `target/bench/${name}.wasm`], { cwd: ROOT, stdio: 'inherit' });
  } catch (e) {
    throw new Error(`wat2wasm bench/${name}.wat failed (${e.message}); scripts/setup.sh installs wabt`);
  }
}
const server = await startServer(ROOT, 0);
const ENGINE = process.env.GEN_ENGINE || 'chromium';
const DEFAULT_BUILD = { chromium: 'threads-relaxed', firefox: 'threads-relaxed', webkit: 'simd128' }[ENGINE];
if (!DEFAULT_BUILD) throw new Error(`GEN_ENGINE=${ENGINE}: chromium, firefox or webkit`);
const browser = ENGINE === 'chromium'
  ? await launchChromium({ args: process.env.GEN_CHROMIUM_ARGS ? process.env.GEN_CHROMIUM_ARGS.split(' ') : [] })
  : null;
let engineVersion = browser ? `Chromium ${browser.version()}` : ENGINE;
const base = `http://127.0.0.1:${server.address().port}/bench/generate.html`;
async function runPage(params) {
  if (!browser) {
    const b = await launchEngine(ENGINE);
    engineVersion = b.version;
    try {
      return await b.benchResult(`${base}?${new URLSearchParams(params)}`);
    } finally {
      await b.close();
    }
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('console', (m) => console.log(`  ${m.text()}`));
  try {
    return await benchResult(page, `${base}?${new URLSearchParams(params)}`, { pollMs: 500 });
  } finally {
    await context.close();
  }
}

const t0 = Date.now();
const results = [];
let probe;
try {
  console.log('probe: streaming-read bandwidth, int8 dot peak');
  probe = await runPage({ engine: 'probe' });
  for (const r of runs) {
    console.log(`${r.engine} ${r.model} ${r.threads} thread(s) ${r.device} ${r.cases.join('+')} ×${r.reps}, ${r.decode} decode steps`);
    // "webtensor+X": the package in bench/.pkg-X (an older commit's, for same-run before/after).
    // "webtensor+X@BUILD" (or "webtensor@BUILD"): that build of it (default DEFAULT_BUILD: threads-relaxed, simd128 in WebKit),
    // e.g. simd128, the one WebKit/Safari runs.
    const [name, build] = r.engine.split('@');
    const [engine, pkg] = name.split('+');
    const params = { engine, model: r.model, threads: r.threads, device: r.device, cases: r.cases.join(','), reps: r.reps, decode: r.decode };
    if (pkg) params.pkgdir = `.pkg-${pkg}`;
    if (engine === 'webtensor') params.build = build || DEFAULT_BUILD;
    if (process.env.GEN_PROFILE) params.profile = '1';
    if (process.env.GEN_KV && engine === 'webtensor') params.kv = process.env.GEN_KV;
    if (process.env.GEN_BATCH && engine === 'webtensor') params.batch = process.env.GEN_BATCH;
    const res = await runPage(params);
    if (res.error) console.log(`  failed: ${res.error}`);
    results.push({ ...res, ...r });
  }
} finally {
  await browser?.close();
  server.close();
}
const minutes = ((Date.now() - t0) / 60000).toFixed(1);

const bw = probe?.readGBs;
const peak = probe?.int8GMacs;
// A run's limits at its thread count: the probe's 2-thread figures (both threads at once) where
// it measured them, else one thread's times the threads.
const limits = (threads) => threads === 2 && probe?.readGBs2 != null && probe?.int8GMacs2 != null
  ? { bw: probe.readGBs2, peak: probe.int8GMacs2 }
  : { bw: bw && bw * threads, peak: peak && peak * threads };
const mib = (b) => (b == null ? '-' : (b / 1048576).toFixed(0));
const f = (x, d = 1) => (x == null ? '-' : x.toFixed(d));
const row = (r, c) => r.rows?.find((x) => x.case === c);
const label = (m) => m.replace('bench-', '').replace('stories15m', 'stories15M').replace('qwen2-0.5b', 'Qwen2.5-0.5B');
const peer = (r) => results.find((x) => x.engine === 'wllama' && x.model === r.model && x.threads === r.threads && !x.error);
console.log(`\nText generation, headless ${engineVersion}, random weights, greedy; ` +
  `streaming read ${f(bw)} GB/s, int8 dot ${f(peak)} G multiply-adds/s (1 thread, best of 5; ` +
  (probe?.int8Forms?.simd16 != null
    ? `no relaxed SIMD: SIMD128's 16-bit dot; f32 multiply-add ${f(probe?.f32GMacs)}); `
    : `the faster of relaxed SIMD's 32-bit form ${f(probe?.int8Forms?.dot32)} and 16-bit form ${f(probe?.int8Forms?.dot16)}); `) +
  `2 threads at once: ${f(probe?.readGBs2)} GB/s, ${f(probe?.int8GMacs2)} G multiply-adds/s; ${minutes} min`);
console.log('');
console.log('| model | engine | threads | device | load ms | prefill tok/s (128) | TTFT ms (128) | decode tok/s (ctx 128) | decode tok/s (ctx 1024) | vs wllama (decode 128 / prefill) | peak wasm MiB | file MiB | decode weights GB/s (% of read bw at the run\'s threads) | prefill G multiply-adds/s (% of int8 peak at the run\'s threads) | reps × decode steps |');
console.log('|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of results) {
  const head = `| ${label(r.model)} | ${r.engine} | ${r.threads} | ${r.device}`;
  if (r.error) { console.log(`${head} | failed: ${r.error} |`); continue; }
  const s = row(r, 'short'), l = row(r, 'long');
  const p = r.engine.startsWith('webtensor') && r.device === 'cpu' ? peer(r) : null;
  const ps = p && row(p, 'short');
  const vs = ps && s ? `${(s.decodeTokensPerS / ps.decodeTokensPerS).toFixed(2)}× / ${(s.prefillTokensPerS / ps.prefillTokensPerS).toFixed(2)}×` : '';
  const gbs = s ? (r.weightBytes * s.decodeTokensPerS) / 1e9 : null;
  const lim = limits(r.threads);
  const share = gbs != null && lim.bw ? ` (${((100 * gbs) / lim.bw).toFixed(0)}%)` : '';
  const macs = s && r.prefillMacs ? (r.prefillMacs * s.prefillTokensPerS) / 1e9 : null;
  const ofPeak = macs != null && lim.peak ? ` (${((100 * macs) / lim.peak).toFixed(0)}%)` : '';
  console.log(`${head} | ${r.loadMs} | ${f(s?.prefillTokensPerS)} | ${f(s?.ttftMs, 0)} | ${f(s?.decodeTokensPerS)} | ` +
    `${f(l?.decodeTokensPerS)} | ${vs} | ${mib(r.wasmBytes)} | ${mib(r.fileBytes)} | ${f(gbs, 2)}${share} | ${f(macs)}${ofPeak} | ${r.reps} × ${r.decode} |`);
}
console.log('\nprefill and TTFT: 128-token prompt; decode: greedy steps after a 128-token (ctx 128) or ' +
  '900-token (ctx 1024) prompt; decode weights GB/s = matmul weight bytes read per decode token × decode tok/s ' +
  '(ctx 128); prefill multiply-adds = the layers\' matmul weights × prefill tok/s (both limits at 2 threads are ' +
  'the probes run on 2 threads at once); wllama bans the non-UTF-8 tokens (logit_bias) and EOS, webtensor runs without stop tokens: ' +
  'both make the same token counts.');
const out = process.argv[2];
if (out) {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ env: engineVersion, minutes: +minutes, probe, results }, null, 2));
  console.log(`wrote ${out}`);
}
