// End-to-end: webtensor.TextGenerator in headless Chromium on the built package (pkg/), on the
// tiny llama of scripts/decoder-models.py (models/decoder/llama-f32.gguf) against llama.cpp's
// own greedy tokens (tests/reference/decoder/llama-f32.json): in worker mode from a URL
// (through the model cache) and in this thread from bytes, on the CPU and on WebGPU
// (SwiftShader). Streams with for await, checks the pieces join to the decoded text, aborts a
// generation midway (the model stays usable: the same tokens again), reuses the conversation's
// prefix, and bad calls are clean Errors. E2E_PKG picks another built package (default pkg/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = process.env.E2E_PKG || 'pkg';
const LOADER = `/${PKG}/index.js`;
const MODEL = 'models/decoder/llama-f32.gguf';
const REF = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/reference/decoder/llama-f32.json'), 'utf8'));
const UNCLEAN = /JsValue|\n\s+at |^Error: /;
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(ROOT, PKG, 'index.js')), `${PKG}/ is not built (scripts/build-web.sh)`);
  assert.ok(fs.existsSync(path.join(ROOT, MODEL)), `${MODEL} missing (scripts/decoder-models.py)`);
  server = await startServer(ROOT, 0, { isolate: false });
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

for (const worker of [true, false]) {
  test(`TextGenerator ${worker ? 'in worker mode, from a URL' : 'in this thread, from bytes'}: llama.cpp's greedy tokens on each device`, async (t) => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (/panicked|RuntimeError|unreachable/.test(m.text())) errors.push(m.text()); });
    await page.goto(base + 'tests/e2e/engine.html');
    const c = REF.cases[0];
    const r = await page.evaluate(async ({ loader, worker, url, prompt, want }) => {
      const { load } = await import(loader);
      const wt = await load({ worker });
      const out = { runs: [], bad: {} };
      for (const devices of ['cpu', 'webgpu']) {
        const source = worker ? url : new Uint8Array(await (await fetch(url)).arrayBuffer());
        // costModel false: on SwiftShader the cost model would put every node on the CPU.
        const gen = await wt.TextGenerator.load(source, { device: devices, contextSize: 256, kvType: 'f32', costModel: devices === 'cpu' });
        const greedy = { temperature: 0, maxTokens: want.length, stopTokens: [] };
        const pieces = [];
        const stream = gen.generate(prompt, greedy);
        for await (const piece of stream) pieces.push(piece);
        const res = await stream.result();
        const text = await gen.decode(res.tokens);
        // Abort after 3 pieces; the next pull ends with the reason; the model stays usable.
        const ac = new AbortController();
        let aborted = null;
        let n = 0;
        const abortedStream = gen.generate(prompt, { ...greedy, signal: ac.signal });
        try {
          for await (const piece of abortedStream) {
            if (++n === 3) ac.abort(new Error('stopped by the user'));
            void piece;
          }
        } catch (e) { aborted = e.message; }
        const abortedReason = (await abortedStream.result()).stopReason;
        // In worker mode every dispose() is a Promise (resolved once the worker freed it).
        const disposing = abortedStream.dispose();
        const disposeIsPromise = disposing instanceof Promise;
        await disposing;
        const again = gen.generate(prompt, greedy);
        for await (const piece of again) void piece;
        const res2 = await again.result();
        // The next turn reuses the cache's prefix.
        const turn = gen.generate([...prompt, ...want, 450], { temperature: 0, maxTokens: 2 });
        for await (const piece of turn) void piece;
        const res3 = await turn.result();
        out.runs.push({
          devices: gen.devices, tokens: Array.from(res.tokens), joined: pieces.join(''), text,
          stopReason: res.stopReason, decodeTps: res.decodeTokensPerS, aborted, n,
          again: Array.from(res2.tokens), reused: res3.reusedTokens, explain: await gen.explain(),
          abortedReason, greedySeed: res.seed, disposeIsPromise,
        });
        if (devices === 'cpu') {
          const msg = async (fn) => { try { const s = await fn(); if (s?.next) await s.next(); return null; } catch (e) { return `${e instanceof Error}:${e.message}`; } };
          // Sampling without a seed draws a fresh one per call, which the result gives; given
          // back, it gives the same tokens.
          const sample = async (opts) => {
            const s = gen.generate(prompt, { maxTokens: 8, stopTokens: [], ...opts });
            for await (const piece of s) void piece;
            const r = await s.result();
            return { seed: r.seed, tokens: Array.from(r.tokens) };
          };
          const drawn = [await sample({}), await sample({}), await sample({})];
          out.seeds = { drawn, replay: await sample({ seed: drawn[0].seed }), given: (await sample({ seed: 7 })).seed };
          out.bad = {
            option: await msg(() => gen.generate('x', { temprature: 1 })),
            topP: await msg(() => gen.generate('x', { topP: 2 })),
            // null is a value, refused by every options reader; a null options object is none.
            nullSeed: await msg(() => gen.generate('x', { seed: null })),
            nullKv: await msg(() => wt.TextGenerator.load(source, { kvType: null })),
            id: await msg(() => gen.generate([40000])),
            long: await msg(() => gen.generate(new Array(300).fill(1))),
            context: await msg(() => wt.TextGenerator.load(source, { contextSize: 100000 })),
            noTemplate: await msg(() => gen.chat([{ role: 'user', content: 'hi' }])),
            badMessages: await msg(() => gen.chat('hi')),
            noMessages: await msg(() => gen.chat([])),
            nullOptions: await msg(async () => {
              const s = gen.generate('x', null);
              try { await s.next(); } finally { await s.dispose(); }
            }),
          };
          await gen.dispose();
          out.bad.disposed = await msg(() => gen.generate('x'));
        } else {
          await gen.dispose();
        }
      }
      return out;
    }, { loader: LOADER, worker, url: `/${MODEL}`, prompt: c.prompt, want: c.greedy });
    for (const run of r.runs) {
      const where = run.devices.join('+');
      assert.deepEqual(run.tokens, c.greedy, `${where}: greedy tokens`);
      assert.equal(run.joined, run.text, `${where}: pieces join to the decoded text`);
      assert.equal(run.stopReason, 'length');
      assert.equal(run.aborted, 'stopped by the user');
      assert.equal(run.n, 3);
      assert.equal(run.abortedReason, 'aborted', `${where}: stopReason after the abort`);
      if (worker) assert.ok(run.disposeIsPromise, `${where}: a worker-mode dispose() returns a Promise`);
      assert.ok(Number.isInteger(run.greedySeed), `${where}: result().seed`);
      assert.deepEqual(run.again, c.greedy, `${where}: after the abort`);
      assert.equal(run.reused, c.prompt.length + c.greedy.length - 1);
      assert.match(run.explain, /state: cache_k\.0/);
      t.diagnostic(`${where}: 32 greedy tokens exact, decode ${run.decodeTps.toFixed(0)} tokens/s`);
    }
    assert.ok(r.runs[1].devices[0] === 'WebGPU', `WebGPU run: ${r.runs[1].devices}`);
    assert.match(r.runs[1].explain, /split 0 on WebGPU: \d+ node/, 'the WebGPU run ran on WebGPU');
    assert.match(r.runs[1].explain, /state: cache_k\.0 f32 .* on WebGPU/);
    const { drawn, replay, given } = r.seeds;
    assert.equal(new Set(drawn.map((d) => d.seed)).size, 3, `three calls, three seeds: ${drawn.map((d) => d.seed)}`);
    assert.ok(drawn.every((d) => Number.isInteger(d.seed) && d.seed >= 0 && d.seed < 2 ** 32));
    assert.deepEqual(replay, drawn[0], 'the seed given back gives the same tokens');
    assert.equal(given, 7);
    const b = r.bad;
    assert.match(b.option, /^true:unknown option "temprature"/);
    assert.match(b.topP, /^true:.*top_p/i);
    assert.match(b.nullSeed, /^true:option seed must be a finite number, got null$/);
    assert.equal(b.nullOptions, null);
    assert.match(b.nullKv, /^true:option kvType must be "f32" or "f16", got null$/);
    assert.match(b.id, /^true:.*token 40000 is outside the 32000-token vocabulary/);
    assert.match(b.long, /^true:.*do not fit the context of 256/);
    assert.match(b.context, /^true:.*context 100000/);
    assert.match(b.noTemplate, /^true:.*has no chat template/);
    assert.match(b.badMessages, /^true:messages must be an array of \{ role, content \}$/);
    assert.match(b.noMessages, /^true:.*no messages/);
    assert.match(b.disposed, /^true:this TextGenerator was disposed$/);
    for (const m of Object.values(b)) if (m !== null) assert.doesNotMatch(m.slice(5), UNCLEAN);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

// A File (what an <input type="file"> gives): in worker mode the engine reads it a slice at a
// time (FileReaderSync) and never holds it whole; in this thread the package reads it into one
// array outside wasm memory. Either way wasm memory grows by the weights the CPU keeps, not by
// the file: on WebGPU by little; on the CPU by the weights as the CPU stores them. A Q4_0
// file's matrices are the integer kernels' panels, their only copy (0.625 bytes a value
// beside GGUF's 0.5625); an f32 file's are kept as they are plus the f32 GEMM's packed copy
// (twice the file), never a third copy.
test('TextGenerator from a File: the same tokens in both modes, wasm memory against the file size', async (t) => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(base + 'tests/e2e/engine.html');
  const c = REF.cases[0];
  const r = await page.evaluate(async ({ loader, url, smallUrl, prompt, n }) => {
    const { load } = await import(loader);
    const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
    const file = new File([bytes], 'llama-f32.gguf');
    const greedy = { temperature: 0, maxTokens: n, stopTokens: [] };
    const run = async (gen) => {
      const s = gen.generate(prompt, greedy);
      for await (const piece of s) void piece;
      return Array.from((await s.result()).tokens);
    };
    const out = { size: file.size, memory: {} };
    const w = await load({ worker: true });
    const gw = await w.TextGenerator.load(file, { device: 'cpu', kvType: 'f32' });
    out.worker = await run(gw);
    await gw.dispose();
    w.terminate();
    const wt = await load({ worker: false });
    // A Q4_0 file onto the CPU first, in the fresh module: its matrices are stored as the
    // integer kernels' panels, their only copy.
    const small = await (await fetch(smallUrl)).blob();
    {
      const before = wt.memory.buffer.byteLength;
      const gen = await wt.TextGenerator.load(small, { device: 'cpu', kvType: 'f32' });
      out.memory.q4 = wt.memory.buffer.byteLength - before;
      out.q4Size = small.size;
      await gen.dispose();
    }
    // The engine's one-time set-up (the WebGPU device, its pipelines) paid by a smaller model
    // first; costModel false keeps the weights on WebGPU (on SwiftShader the cost model would
    // take the CPU for every node, and the weights with it).
    const warm = await wt.TextGenerator.load(small, { device: 'webgpu', costModel: false });
    await run(warm);
    await warm.dispose();
    for (const devices of ['webgpu', 'cpu']) {
      const before = wt.memory.buffer.byteLength;
      const gen = await wt.TextGenerator.load(file, { device: devices, kvType: 'f32', costModel: false });
      out.memory[devices] = wt.memory.buffer.byteLength - before;
      out[devices] = await run(gen);
      out.explain = (out.explain ?? '') + await gen.explain();
      await gen.dispose();
    }
    const bad = async (source) => { try { await wt.TextGenerator.load(source); return null; } catch (e) { return e.message; } };
    out.notGguf = await bad(new File([new Uint8Array(64)], 'notes.txt'));
    out.empty = await bad(new File([], 'empty.gguf'));
    out.number = await bad(42);
    return out;
  }, { loader: LOADER, url: `/${MODEL}`, smallUrl: '/models/decoder/llama-q4_0.gguf', prompt: c.prompt, n: c.greedy.length });
  for (const mode of ['worker', 'webgpu', 'cpu']) assert.deepEqual(r[mode], c.greedy, `${mode}: greedy tokens`);
  const mib = (x) => `${(x / 1048576).toFixed(1)} MiB`;
  t.diagnostic(`file ${mib(r.size)}; wasm memory grew ${mib(r.memory.webgpu)} loading onto WebGPU, ${mib(r.memory.cpu)} onto the CPU`);
  assert.ok(r.memory.webgpu < 0.25 * r.size, `WebGPU load grew wasm memory by ${r.memory.webgpu} for a ${r.size}-byte file`);
  assert.ok(r.memory.cpu < 2.5 * r.size, `CPU load grew wasm memory by ${r.memory.cpu} for a ${r.size}-byte file`);
  // (Printed, not bounded: on a 3 MB file the module's one-time costs, the tokenizer and the
  // context's buffers are most of it; the bench's peak memory on real-size files is the
  // measure, scripts/bench-generate.sh.)
  t.diagnostic(`Q4_0 file ${mib(r.q4Size)}; wasm memory grew ${mib(r.memory.q4)} loading onto the CPU, in a fresh module`);
  assert.match(r.explain, /split 0 on WebGPU: \d+ node/);
  assert.match(r.notGguf, /GGUF/);
  assert.match(r.empty, /GGUF/);
  assert.match(r.number, /^source must be a URL string, a Uint8Array or a File \(Blob\)$/);
  assert.deepEqual(errors, []);
  await page.close();
});
