// End-to-end: the JS API under bad input, in headless Chromium on the built page (www/dist,
// which exposes the package as globalThis.webtensor). Every bad call must throw or reject
// with a JS Error whose message is clean text naming what is wrong (never a debug-printed
// JsValue or a stack), named WebtensorError with the expected stable `code`; NaN/Inf inputs give well-defined results; many concurrent calls on
// one runtime give the serial answers; and afterwards the model still embeds with the same
// scores as before. Run by scripts/test.sh after scripts/build-web.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIST = path.join(ROOT, 'www/dist');
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), 'www/dist is not built (scripts/build-web.sh)');
  server = await startServer(DIST, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

// name → [the message each bad call must give, its error code].
const EXPECTED = {
  'Runtime.create costModel "yes"': [/^option costModel must be a boolean, got string$/, 'INVALID_ARGUMENT'],
  'Runtime.create device 5': [/^option device must be "auto", "webgpu" or "cpu", got number$/, 'INVALID_ARGUMENT'],
  'Runtime.create device "tpu"': [/^option device must be "auto", "webgpu" or "cpu", got "tpu"$/, 'INVALID_ARGUMENT'],
  'Runtime.create device "WebGPU"': [/^option device must be "auto", "webgpu" or "cpu", got "WebGPU"$/, 'INVALID_ARGUMENT'],
  'Runtime.create devices (renamed)': [/^option "devices" is now "device"$/, 'INVALID_ARGUMENT'],
  'Runtime.create unknown option': [/^unknown option "cosModel" \(the options are device, costModel\)$/, 'INVALID_ARGUMENT'],
  'Runtime.create options a string': [/^options must be an object, got string$/, 'INVALID_ARGUMENT'],
  'Runtime.create options an array': [/^options must be an object, got an array$/, 'INVALID_ARGUMENT'],
  'load onProgress a string': [/^option onProgress must be a function, got string$/, 'INVALID_ARGUMENT'],
  'load unknown option': [/^unknown option "extra" \(the options are device, costModel, onProgress\)$/, 'INVALID_ARGUMENT'],
  'load costModel null': [/^option costModel must be a boolean, got null$/, 'INVALID_ARGUMENT'],
  'load 404': [/^cannot fetch models\/nope\.gguf: HTTP 404$/, 'NETWORK'],
  'load unreachable server': [/^cannot fetch http:\/\/127\.0\.0\.1:9\/x\.gguf: TypeError: Failed to fetch$/, 'NETWORK'],
  'load a number': [/^source must be a URL string, a Uint8Array or a File \(Blob\)$/, 'INVALID_ARGUMENT'],
  'load 3 bytes': [/^GGUF file, at byte 0: truncated: magic needs 4 bytes, the file has 3$/, 'BAD_MODEL_FILE'],
  'load half a model': [/^GGUF file, tensor "[^"]+": truncated/, 'BAD_MODEL_FILE'],
  'load bad magic': [/^GGUF file, at byte 0: not a GGUF file \(bad magic\)$/, 'BAD_MODEL_FILE'],
  'run Int32Array for f32': [/x is f32, not i32/, 'INVALID_ARGUMENT'],
  'run short Float32Array': [/x/, 'INVALID_ARGUMENT'],
  'run plain array': [/^x: expected a Float32Array, Int32Array or Uint8Array$/, 'INVALID_ARGUMENT'],
  'run unknown input': [/^the graph has no input named "nope"$/, 'INVALID_ARGUMENT'],
  'run inputs a string': [/^inputs must be an object of typed arrays$/, 'INVALID_ARGUMENT'],
  'run no output': [/no output/, 'INVALID_ARGUMENT'],
  'input too large': [/too large|overflows/, 'INVALID_ARGUMENT'],
  'input 5 dims': [/expected 1 to 4 dims, got 5/, 'INVALID_ARGUMENT'],
  'rope factors of the wrong count': [/^shape mismatch in rope: frequency factors \[3, 1, 1, 1\] must be 2 contiguous values \(n_dims \/ 2\)/, 'INVALID_ARGUMENT'],
  'input unknown dtype': [/^unknown dtype "f64"/, 'INVALID_ARGUMENT'],
  'weight short Float32Array': [/needs 32 values, got 31/, 'INVALID_ARGUMENT'],
  'weight Int32Array for f32': [/w2 is f32, not i32/, 'INVALID_ARGUMENT'],
  'weight a string': [/^w3: expected a Float32Array, Int32Array or Uint8Array$/, 'INVALID_ARGUMENT'],
  'add unknown tensor': [/invalid graph|no tensor|unknown/, 'INVALID_ARGUMENT'],
  'view past the end': [/out of bounds/, 'INVALID_ARGUMENT'],
  'permute 3 axes': [/^permute takes 4 axes$/, 'INVALID_ARGUMENT'],
  'disposed runtime run': [/^this Runtime was disposed$/, 'DISPOSED'],
  'disposed runtime explain': [/^this Runtime was disposed$/, 'DISPOSED'],
  'disposed model embed': [/^this SentenceEmbedder was disposed$/, 'DISPOSED'],
  'disposed model encode': [/^this SentenceEmbedder was disposed$/, 'DISPOSED'],
  'embed numbers': [/./, 'INVALID_ARGUMENT'],
  'embed undefined': [/./, 'INVALID_ARGUMENT'],
};

test('the JS API gives clean Errors for bad input and keeps working', async (t) => {
  const page = await browser.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  // In this thread: Graph's calls throw at once (worker mode defers them to the run; the apps
  // test covers the worker's errors).
  await page.goto(`${base}?worker=false`);
  await page.waitForSelector('#status[data-state="ready"], #status[data-state="error"]', { timeout: 300_000 });
  const out = await page.evaluate(async () => {
    const wt = globalThis.webtensor;
    const results = [];
    const bad = async (name, fn) => {
      try {
        await fn();
        results.push({ name, threw: false });
      } catch (e) {
        results.push({ name, threw: true, isError: e instanceof Error, message: String(e?.message ?? e), code: e?.code, errorName: e?.name });
      }
    };
    const SENTENCES = ['A man is playing a guitar.', 'Someone plays an acoustic guitar.', 'The stock market fell sharply today.'];
    const cos = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
    const scores = (e) => [cos(e[0], e[1]), cos(e[0], e[2])];
    const URL = 'models/minilm-q8_0.gguf';

    const model = await wt.SentenceEmbedder.load(URL, {});
    const before = await model.embed(SENTENCES);
    // Each sentence alone (a batch of one: another shape, which the measured cost model may
    // place on other devices than the batch of three; Q8_0 on the CPU multiplies activations
    // quantized to 8 bits, on WebGPU in f32, so the two agree to Q8_0's accuracy, not bits:
    // seen 4.8e-3 apart in one component).
    const alone = [];
    for (const s of SENTENCES) alone.push((await model.embed([s]))[0]);
    const maxDiff = (xs, ys) => Math.max(...xs.flatMap((x, i) => Array.from(x, (v, j) => Math.abs(v - ys[i][j]))));

    // Options.
    await bad('Runtime.create costModel "yes"', () => wt.Runtime.create({ costModel: 'yes' }));
    await bad('Runtime.create device 5', () => wt.Runtime.create({ device: 5 }));
    await bad('Runtime.create device "tpu"', () => wt.Runtime.create({ device: 'tpu' }));
    await bad('Runtime.create device "WebGPU"', () => wt.Runtime.create({ device: 'WebGPU' }));
    await bad('Runtime.create devices (renamed)', () => wt.Runtime.create({ devices: 'cpu' }));
    await bad('Runtime.create unknown option', () => wt.Runtime.create({ cosModel: true }));
    await bad('Runtime.create options a string', () => wt.Runtime.create('cpu'));
    await bad('Runtime.create options an array', () => wt.Runtime.create(['cpu']));
    await bad('load onProgress a string', () => wt.SentenceEmbedder.load(URL, { onProgress: 'x' }));
    await bad('load unknown option', () => wt.SentenceEmbedder.load(URL, { device: 'cpu', extra: 1 }));
    await bad('load costModel null', () => wt.SentenceEmbedder.load(URL, { costModel: null }));
    // Sources.
    await bad('load 404', () => wt.SentenceEmbedder.load('models/nope.gguf', {}));
    await bad('load unreachable server', () => wt.SentenceEmbedder.load('http://127.0.0.1:9/x.gguf', {}));
    await bad('load a number', () => wt.SentenceEmbedder.load(42, {}));
    await bad('load 3 bytes', () => wt.SentenceEmbedder.load(new Uint8Array([71, 71, 85]), {}));
    const file = new Uint8Array(await (await fetch(URL)).arrayBuffer());
    await bad('load half a model', () => wt.SentenceEmbedder.load(file.slice(0, file.length >> 1), { device: 'cpu' }));
    const corrupt = file.slice();
    corrupt[0] = 0;
    await bad('load bad magic', () => wt.SentenceEmbedder.load(corrupt, { device: 'cpu' }));

    // Graphs and runs.
    const rt = await wt.Runtime.create({ device: 'cpu', costModel: false });
    const g = new wt.Graph();
    const x = g.input('x', 'f32', [4]);
    const y = g.add(x, x);
    g.setName(y, 'y');
    await bad('run no output', () => rt.run(g, { x: new Float32Array(4) }));
    g.output(y);
    await bad('run Int32Array for f32', () => rt.run(g, { x: new Int32Array(4) }));
    await bad('run short Float32Array', () => rt.run(g, { x: new Float32Array(3) }));
    await bad('run plain array', () => rt.run(g, { x: [1, 2, 3, 4] }));
    await bad('run unknown input', () => rt.run(g, { x: new Float32Array(4), nope: new Float32Array(4) }));
    await bad('run inputs a string', () => rt.run(g, 'x'));
    await bad('input too large', () => new wt.Graph().input('big', 'f32', [2 ** 31, 2 ** 31, 2 ** 31, 2 ** 31]));
    await bad('input 5 dims', () => new wt.Graph().input('five', 'f32', [1, 1, 1, 1, 1]));
    await bad('input unknown dtype', () => new wt.Graph().input('x', 'f64', [4]));
    await bad('weight short Float32Array', () => new wt.Graph().weight('w', 'q8_0', [32], new Float32Array(31)));
    await bad('weight Int32Array for f32', () => new wt.Graph().weight('w2', 'f32', [4], new Int32Array(4)));
    await bad('weight a string', () => new wt.Graph().weight('w3', 'f32', [4], 'abcd'));
    await bad('add unknown tensor', () => g.add(9999, x));
    await bad('view past the end', () => g.view(x, [4], [4], 2 ** 31));
    await bad('permute 3 axes', () => g.permute(x, [0, 1, 2]));
    await bad('rope factors of the wrong count', () => {
      const r = new wt.Graph();
      const q = r.input('q', 'f32', [4, 1, 2]);
      return r.rope(q, r.input('pos', 'i32', [2]), 4, 'normal', 10000, 1, r.input('ff', 'f32', [3]));
    });
    // NaN and Inf: a well-defined (IEEE) result.
    const special = Array.from((await rt.run(g, { x: new Float32Array([NaN, Infinity, -Infinity, 1.5]) })).y);
    // Many concurrent runs on one runtime: each its own answer.
    const runs = await Promise.all(Array.from({ length: 32 }, (_, i) =>
      rt.run(g, { x: new Float32Array([i, -i, i / 2, 1]) })));
    const concurrentRuns = runs.every((r, i) => r.y[0] === 2 * i && r.y[1] === -2 * i && r.y[2] === i && r.y[3] === 2);
    // Concurrent embeds on one model: the serial answer of the same shape each time.
    const embeds = await Promise.all(Array.from({ length: 12 }, (_, i) => model.embed([SENTENCES[i % 3]])));
    const concurrentDiff = maxDiff(embeds.map((e) => e[0]), embeds.map((_, i) => alone[i % 3]));
    const batchCos = Math.min(...alone.map((e, i) => cos(e, before[i])));
    rt.dispose();
    await bad('disposed runtime run', () => rt.run(g, { x: new Float32Array(4) }));
    await bad('disposed runtime explain', () => rt.explain(g));
    const cpuModel = await wt.SentenceEmbedder.load(file, { device: 'cpu' });
    cpuModel.dispose();
    await bad('disposed model embed', () => cpuModel.embed(['hello']));
    await bad('disposed model encode', () => cpuModel.encode('hello'));
    await bad('embed numbers', () => model.embed([1, 2]));
    await bad('embed undefined', () => model.embed(undefined));

    // The page's own model still works, with the same scores.
    const after = await model.embed(SENTENCES);
    const drift = maxDiff(after, before);
    return { results, special, concurrentRuns, concurrentDiff, batchCos, before: scores(before), after: scores(after), drift };
  });

  const failures = [];
  for (const r of out.results) {
    const [want, code] = EXPECTED[r.name] ?? [];
    if (!want) failures.push(`${r.name}: no expectation`);
    else if (!r.threw) failures.push(`${r.name}: no error`);
    else if (!r.isError) failures.push(`${r.name}: threw a non-Error ${r.message}`);
    else if (!want.test(r.message)) failures.push(`${r.name}: message ${JSON.stringify(r.message)} !~ ${want}`);
    else if (r.code !== code || r.errorName !== 'WebtensorError') {
      failures.push(`${r.name}: ${r.errorName} code ${r.code}, want a WebtensorError with code ${code}`);
    }
    else if (/JsValue|\n\s+at |^Error: /.test(r.message)) failures.push(`${r.name}: unclean message ${JSON.stringify(r.message)}`);
  }
  for (const name of Object.keys(EXPECTED)) {
    if (!out.results.some((r) => r.name === name)) failures.push(`${name}: not run`);
  }
  t.diagnostic(`${out.results.length} bad calls, each a WebtensorError with the expected message and code`);
  assert.deepEqual(failures, []);
  assert.ok(Number.isNaN(out.special[0]), `NaN + NaN = ${out.special[0]}`);
  assert.deepEqual(out.special.slice(1), [Infinity, -Infinity, 3]);
  assert.ok(out.concurrentRuns, '32 concurrent runs on one runtime: a wrong answer');
  t.diagnostic(`embeddings: concurrent vs serial differ by ${out.concurrentDiff}; alone vs in a batch of 3: cosine ${out.batchCos}`);
  assert.ok(out.concurrentDiff < 1e-6, `12 concurrent embeds on one model: ${out.concurrentDiff} from the serial answer`);
  assert.ok(out.batchCos > 0.999, `a sentence alone and in a batch of 3: cosine ${out.batchCos}`);
  assert.ok(out.drift < 1e-5, `embeddings changed by ${out.drift} after the bad calls`);
  assert.ok(out.after[0] > out.after[1] + 0.2, `guitar/guitar ${out.after[0]} vs guitar/stocks ${out.after[1]}`);
  assert.deepEqual(pageErrors, []);
});
