// End-to-end: the WebGPU device lost in the middle of a run, in headless Chromium (WebGPU on
// SwiftShader) and in headless Firefox (WebGPU on lavapipe, over WebDriver), on the built package
// (pkg/, scripts/build-web.sh) loaded into a blank page with load({ worker: false }) — the engine
// in the page itself, where the hook can reach its device. The hook (tests/e2e/gpu_hook.mjs)
// destroys the page's GPUDevice right after the n-th submit of an embed (the browser's own loss:
// `lost` resolves, mapAsync rejects, later work is dropped), for the first and the last submit of a
// run. Each time:
//   - that embed rejects, in bounded time, with an Error whose message is clean text naming
//     the loss, and so do later calls on the same model and runtime (no hang, no panic);
//   - the CPU keeps working in that page (a CPU model embeds the same vectors as before);
//   - the next SentenceEmbedder and Runtime get a fresh device (one more requestDevice) and
//     pass a known-answer check (the CPU's embeddings; a small graph's exact sums).
// A second test: dispose() destroys the model's GPU buffers (the leak scripts/soak.sh found:
// a dropped wgpu buffer is only released by the garbage collector on the web).
// E2E_PKG picks another built package directory (default pkg/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';
import { installGpuHook } from './gpu_hook.mjs';
import { engineSkip, launchEngine } from '../../scripts/webdriver.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = process.env.E2E_PKG || 'pkg';
const LOADER = `/${PKG}/index.js`;
const MODEL = '/models/minilm-q8_0.gguf';
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(ROOT, PKG, 'index.js')), `${PKG}/ is not built (scripts/build-web.sh)`);
  assert.ok(fs.existsSync(path.join(ROOT, MODEL)), 'no models/minilm-q8_0.gguf (scripts/fetch-model.sh)');
  server = await startServer(ROOT, 0, { isolate: false });
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** A fresh page with the hook installed; `errors` collects page errors and Rust panics. */
async function open() {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (/panicked|RuntimeError|unreachable/.test(m.text())) errors.push(m.text()); });
  await page.addInitScript(installGpuHook);
  await page.goto(base + 'tests/e2e/engine.html');
  return { page, errors, close: () => context.close() };
}

// The clean-text rule of tests/e2e/bad_input.test.mjs: no debug-printed JsValue, no stack.
const UNCLEAN = /JsValue|\n\s+at |^Error: /;
// The loss and the browser's words, no symptom of it appended (a readback that failed to map).
const LOST = /^device error on WebGPU: device lost \(destroyed\)(: [^()]*)?$/;

// The three checks as page functions (run in Chromium with page.evaluate, in Firefox over
// WebDriver; `globalThis.__gpuHook` installed first) and the assertions on what they return.

/** A model on WebGPU lost after the first and the last submit of an embed. */
async function lossInPage([loader, model]) {
  const { load } = await import(loader);
  const wt = await load({ worker: false });
  const hook = globalThis.__gpuHook;
  const SENTENCES = ['A man is playing a guitar.', 'Someone plays an acoustic guitar.', 'The stock market fell sharply today.'];
  const cos = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
  const minCos = (got, want) => Math.min(...got.map((g, i) => cos(g, want[i])));
  // On WebGPU one sentence (SwiftShader takes seconds per embed), against the CPU's vector.
  const ONE = SENTENCES.slice(0, 1);
  // Every await is bounded: a hang is a failure with a name, not a stuck test.
  const settle = async (what, promise, ms = 120_000) => {
    let timer;
    const t0 = performance.now();
    try {
      const value = await Promise.race([promise, new Promise((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error(`${what}: no answer in ${ms} ms`), { hung: true })), ms);
      })]);
      return { ok: true, value, ms: performance.now() - t0 };
    } catch (e) {
      return { ok: false, hung: !!e?.hung, isError: e instanceof Error, code: e?.code, message: String(e?.message ?? e), ms: performance.now() - t0 };
    } finally {
      clearTimeout(timer);
    }
  };
  const sumGraph = () => {
    const g = new wt.Graph();
    const x = g.input('x', 'f32', [4]);
    const y = g.add(x, x);
    g.setName(y, 'y');
    g.output(y);
    return g;
  };
  const X = new Float32Array([1, 2, 3, 4.5]);
  const sums = (r) => (r.ok ? Array.from(r.value.y) : r.message);

  const file = new Uint8Array(await (await fetch(model)).arrayBuffer());
  const cpu = await wt.SentenceEmbedder.load(file, { device: 'cpu' });
  const want = await cpu.embed(SENTENCES);
  // How many submits one embed makes on WebGPU: the loss goes after the first and the last.
  const probe = await wt.SentenceEmbedder.load(file, { device: 'webgpu', costModel: false });
  await probe.embed(ONE);
  const s0 = hook.submits;
  await probe.embed(ONE);
  const submitsPerEmbed = hook.submits - s0;
  probe.dispose();

  const cases = [];
  for (const after of [...new Set([1, submitsPerEmbed])]) {
    const c = { after };
    const devices = hook.devices.length;
    const gpu = await wt.SentenceEmbedder.load(file, { device: 'webgpu', costModel: false });
    c.devicesOfModel = gpu.devices;
    const t0 = performance.now();
    c.before = minCos(await gpu.embed(ONE), want);
    c.embedMs = performance.now() - t0;
    const rt = await wt.Runtime.create({ device: 'webgpu', costModel: false });
    const g = sumGraph();
    c.rtBefore = sums(await settle('run before', rt.run(g, { x: X })));
    hook.loseAfterSubmits(after);
    c.lostRun = await settle('the embed during the loss', gpu.embed(ONE));
    c.lostAgain = await settle('a later embed on that model', gpu.embed(ONE));
    c.lostRuntime = await settle('a run on a runtime of the lost device', rt.run(g, { x: X }));
    c.browserLost = hook.lost.slice();
    // The CPU in the same page.
    const cpuAfter = await settle('CPU embed after the loss', cpu.embed(SENTENCES));
    c.cpuAfter = cpuAfter.ok ? Math.max(...cpuAfter.value.flatMap((e, i) => Array.from(e, (v, j) => Math.abs(v - want[i][j])))) : cpuAfter.message;
    const cpuRt = await wt.Runtime.create({ device: 'cpu', costModel: false });
    c.cpuRuntime = sums(await settle('CPU run after the loss', cpuRt.run(sumGraph(), { x: X })));
    // The next model and runtime: a fresh device, right answers.
    const fresh = await settle('load after the loss', wt.SentenceEmbedder.load(file, { device: 'webgpu', costModel: false }));
    if (fresh.ok) {
      c.freshDevices = fresh.value.devices;
      const e = await settle('embed on the fresh device', fresh.value.embed(ONE));
      c.fresh = e.ok ? minCos(e.value, want) : e.message;
      fresh.value.dispose();
    } else {
      c.fresh = fresh.message;
    }
    const rt2 = await settle('Runtime.create after the loss', wt.Runtime.create({ device: 'webgpu', costModel: false }));
    c.freshRuntime = rt2.ok ? sums(await settle('run on the fresh device', rt2.value.run(sumGraph(), { x: X }))) : rt2.message;
    c.newDevices = hook.devices.length - devices;
    gpu.dispose();
    rt.dispose();
    cases.push(c);
  }
  return { submitsPerEmbed, cases, devices: hook.devices.length, lost: hook.lost };
}

function checkLoss(t, out) {
  t.diagnostic(`${out.submitsPerEmbed} submits per embed; ${out.devices} devices requested, ${out.lost.length} lost`);
  assert.ok(out.submitsPerEmbed >= 1, 'an embed on WebGPU made no submit');
  for (const c of out.cases) {
    const at = `loss after submit ${c.after}`;
    t.diagnostic(`${at}: "${c.lostRun.message}" after ${Math.round(c.lostRun.ms)} ms (an embed: ${Math.round(c.embedMs)} ms); ` +
      `browser: ${JSON.stringify(c.browserLost.at(-1))}`);
    assert.deepEqual(c.devicesOfModel, ['WebGPU', 'CPU'], at);
    assert.ok(c.before > 0.99, `${at}: the model was wrong before the loss (${c.before})`);
    assert.deepEqual(c.rtBefore, [2, 4, 6, 9], at);
    for (const [name, r] of [['the embed during the loss', c.lostRun], ['a later embed', c.lostAgain], ['a run on the old runtime', c.lostRuntime]]) {
      assert.ok(!r.ok, `${at}: ${name} resolved`);
      assert.ok(!r.hung, `${at}: ${name} hung: ${r.message}`);
      assert.ok(r.isError, `${at}: ${name} rejected with a non-Error: ${r.message}`);
      assert.match(r.message, LOST, `${at}: ${name}`);
      assert.equal(r.code, 'DEVICE_LOST', `${at}: ${name}: ${r.message}`);
      assert.doesNotMatch(r.message, UNCLEAN, `${at}: ${name}`);
    }
    // Promptly (milliseconds here; the engine before it raced its waits against the loss
    // took about 10 s): nothing waits on work of a lost device.
    assert.ok(c.lostRun.ms < 3000, `${at}: the embed took ${Math.round(c.lostRun.ms)} ms to reject (an embed takes ${Math.round(c.embedMs)} ms)`);
    assert.equal(c.browserLost.at(-1)?.reason, 'destroyed', `${at}: the browser did not report the loss`);
    assert.ok(c.cpuAfter < 1e-6, `${at}: the CPU model changed after the loss: ${c.cpuAfter}`);
    assert.deepEqual(c.cpuRuntime, [2, 4, 6, 9], `${at}: a CPU runtime after the loss`);
    assert.equal(c.newDevices, 1, `${at}: the next model and runtime should share one fresh device`);
    assert.deepEqual(c.freshDevices, ['WebGPU', 'CPU'], `${at}: the next model`);
    assert.ok(c.fresh > 0.99, `${at}: the fresh device's embeddings are off: ${c.fresh}`);
    assert.deepEqual(c.freshRuntime, [2, 4, 6, 9], `${at}: the next runtime`);
  }
}

/** A model loaded, run and disposed twice: GPU buffers before and after. */
async function disposeInPage([loader, model]) {
  const { load } = await import(loader);
  const wt = await load({ worker: false });
  const hook = globalThis.__gpuHook;
  const file = new Uint8Array(await (await fetch(model)).arrayBuffer());
  const cycle = async () => {
    const m = await wt.SentenceEmbedder.load(file, { device: 'webgpu', costModel: false });
    await m.embed(['A man is playing a guitar.']);
    const loaded = { engine: wt.gpuBuffers(), browser: hook.undestroyed() };
    m.dispose();
    return loaded;
  };
  await cycle(); // the device, its pipelines and readback pool: made once
  const start = { engine: wt.gpuBuffers(), browser: hook.undestroyed() };
  const loaded = await cycle();
  const end = { engine: wt.gpuBuffers(), browser: hook.undestroyed() };
  return { start, loaded, end };
}

function checkDispose(t, out) {
  const { start, loaded, end } = out;
  t.diagnostic(`live GPU buffers: ${start.engine.live} → ${loaded.engine.live} loaded → ${end.engine.live} disposed; ` +
    `undestroyed in the browser: ${start.browser.count} → ${end.browser.count} (${end.browser.bytes} bytes)`);
  assert.ok(loaded.engine.liveBytes > start.engine.liveBytes + 10e6, 'the model\'s weights were not on the GPU');
  assert.equal(end.engine.live, start.engine.live, 'the engine kept buffers after dispose()');
  assert.equal(end.engine.liveBytes, start.engine.liveBytes);
  // What the browser sees: every buffer the cycle made was destroyed, none left to the GC.
  assert.equal(end.browser.count, start.browser.count, 'GPUBuffers left undestroyed after dispose()');
  assert.equal(end.browser.count, end.engine.live, 'the engine\'s live count and the browser\'s disagree');
}

/** A TextGenerator's stream on WebGPU lost after 3 pieces, a CPU generator beside it. */
async function streamLossInPage([loader, url, prompt, n]) {
  const { load } = await import(loader);
  const wt = await load({ worker: false });
  const hook = globalThis.__gpuHook;
  const file = new Uint8Array(await (await fetch(url)).arrayBuffer());
  const greedy = { temperature: 0, maxTokens: n, stopTokens: [] };
  const tokens = async (gen) => {
    const s = gen.generate(prompt, greedy);
    for await (const piece of s) void piece;
    return Array.from((await s.result()).tokens);
  };
  const failure = async (fn) => {
    const t0 = performance.now();
    let timer;
    const hang = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no answer in 60000 ms')), 60_000); });
    try { await Promise.race([fn(), hang]); return { ok: true }; } catch (e) {
      return { ok: false, isError: e instanceof Error, code: e?.code, message: String(e?.message ?? e), ms: performance.now() - t0 };
    } finally {
      clearTimeout(timer);
    }
  };
  const cpu = await wt.TextGenerator.load(file, { device: 'cpu', kvType: 'f32' });
  const gpu = await wt.TextGenerator.load(file, { device: 'webgpu', costModel: false });
  const o = { before: await tokens(cpu), gpuBefore: await tokens(gpu) };
  let pieces = 0;
  let lostAt = 0;
  o.lost = await failure(async () => {
    for await (const piece of gpu.generate(prompt, greedy)) {
      void piece;
      if (++pieces === 3) { hook.loseAfterSubmits(1); lostAt = performance.now(); }
    }
  });
  o.lostMs = performance.now() - lostAt;
  o.pieces = pieces;
  o.later = await failure(() => tokens(gpu));
  o.after = await tokens(cpu);
  o.browserLost = hook.lost.slice();
  await gpu.dispose();
  await cpu.dispose();
  return o;
}

function checkStreamLoss(t, out, ref) {
  assert.deepEqual(out.before, ref.greedy, 'CPU before');
  assert.deepEqual(out.gpuBefore, ref.greedy, 'WebGPU before');
  for (const [name, r] of [['the stream during the loss', out.lost], ['a later generation', out.later]]) {
    assert.ok(!r.ok, `${name} resolved`);
    assert.ok(r.isError, `${name} rejected with a non-Error: ${r.message}`);
    assert.match(r.message, LOST, name);
    assert.equal(r.code, 'DEVICE_LOST', `${name}: ${r.message}`);
    assert.doesNotMatch(r.message, UNCLEAN, name);
  }
  assert.ok(out.pieces >= 3 && out.pieces < ref.greedy.length, `${out.pieces} pieces before the loss`);
  assert.ok(out.lostMs < 3000, `the stream took ${Math.round(out.lostMs)} ms to reject after the loss`);
  assert.equal(out.browserLost.at(-1)?.reason, 'destroyed');
  assert.deepEqual(out.after, ref.greedy, 'CPU after the loss');
  t.diagnostic(`lost after ${out.pieces} pieces: "${out.lost.message}" ${Math.round(out.lostMs)} ms after it`);
}

const REF = () => JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/reference/decoder/llama-f32.json'), 'utf8')).cases[0];
const STREAM_ARGS = (ref) => [LOADER, '/models/decoder/llama-f32.gguf', ref.prompt, ref.greedy.length];

test('WebGPU lost mid-run: the run rejects naming the loss, the CPU goes on, the next model gets a fresh device', async (t) => {
  const { page, errors, close } = await open();
  checkLoss(t, await page.evaluate(lossInPage, [LOADER, MODEL]));
  assert.deepEqual(errors, [], 'page errors or panics');
  await close();
});

test('dispose() destroys the model\'s GPU buffers (live counts back to where they were)', async (t) => {
  const { page, errors, close } = await open();
  checkDispose(t, await page.evaluate(disposeInPage, [LOADER, MODEL]));
  assert.deepEqual(errors, []);
  await close();
});


// Text generation: the device lost in the middle of a stream (after a few pieces) rejects that
// stream's next pull with the loss as the reason, promptly; later calls on that model reject
// too; a CPU generator in the same page gives llama.cpp's tokens before and after.
test('WebGPU lost mid-generation: the stream rejects naming the loss, a CPU generator goes on', async (t) => {
  const { page, errors, close } = await open();
  const ref = REF();
  checkStreamLoss(t, await page.evaluate(streamLossInPage, STREAM_ARGS(ref)), ref);
  assert.deepEqual(errors, [], 'page errors or panics');
  await close();
});

// The same three checks in Firefox (WebGPU on Mesa's lavapipe there), over WebDriver: each on a
// fresh load of the page, the hook installed before the check's page function runs, by a
// <script> element (WebDriver's scripts run in a scope of their own, whose globals and
// prototype patches the page does not see). (No console here: a panic shows as a rejected
// call, which the checks catch.)
test('firefox: WebGPU lost mid-run and mid-generation, dispose()', { skip: engineSkip('firefox'), timeout: 900_000 }, async (t) => {
  const b = await launchEngine('firefox');
  const ref = REF();
  const hook = async (src) => {
    const script = document.createElement('script');
    script.textContent = `(${src})();`;
    document.head.append(script);
    if (!window.__gpuHook) throw new Error('the hook did not install');
  };
  try {
    for (const [name, fn, args, check] of [
      ['lost mid-run', lossInPage, [LOADER, MODEL], (out) => checkLoss(t, out)],
      ['dispose()', disposeInPage, [LOADER, MODEL], (out) => checkDispose(t, out)],
      ['lost mid-generation', streamLossInPage, STREAM_ARGS(ref), (out) => checkStreamLoss(t, out, ref)],
    ]) {
      await b.goto(`${base}tests/e2e/engine.html`);
      await b.evaluate(hook, installGpuHook.toString());
      t.diagnostic(`${b.version}: ${name}`);
      check(await b.evaluate(fn, args, { timeoutMs: 600_000 }));
    }
  } finally {
    await b.close();
  }
});
