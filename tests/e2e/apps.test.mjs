// End-to-end: the package as users get it. scripts/build-apps.sh packs pkg/ (npm pack), installs
// the tarball in three example apps (apps/: webpack 5, Vite, a plain <script type="module">
// page) and builds them into target/apps/. Here each is served (scripts/serve.mjs) with
// COOP/COEP — it must run threaded — and without — one thread — and driven in headless
// Chromium: load the model, embed, read the scores; the three again, cross-origin isolated, in
// Firefox ESR and WebKitGTK over WebDriver (scripts/webdriver.mjs). Then, on the plain page: every JS snippet
// of README.md and js/README.md runs as written; the model cache (cold vs cached load, a
// corrupt entry, a full quota); the page's long tasks during a 16 × 32-token embed in worker and
// in-thread mode; bad input (a model URL that 404s, an HTML page, a file that is not GGUF, a
// worker blocked by CSP, a disposed runtime, an aborted call).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { launchEngine, engineSkip } from '../../scripts/webdriver.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const APPS = path.join(ROOT, 'target/apps');
// A file the bad-input checks load as a model: text, not GGUF.
const writeNotAModel = () =>
  fs.writeFileSync(path.join(APPS, 'esm/not-a-model.txt'), 'hello, this is text and not a model');
const HAVE_THREADS = fs.existsSync(path.join(ROOT, 'pkg/threads/webtensor_bg.wasm'));
const requireThreads = process.env.E2E_REQUIRE_THREADS === '1';
let browser;

before(async () => {
  for (const app of ['webpack', 'vite', 'esm']) {
    assert.ok(fs.existsSync(path.join(APPS, app, 'index.html')), `target/apps/${app} is not built (scripts/build-apps.sh)`);
  }
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

async function serve(app, options) {
  const server = await startServer(path.join(APPS, app), 0, options);
  return { server, base: `http://127.0.0.1:${server.address().port}/` };
}

async function openPage(url, context) {
  const ctx = context ?? await browser.newContext();
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url);
  return { ctx, page, errors };
}

for (const app of ['webpack', 'vite', 'esm']) {
  for (const isolate of [true, false]) {
    test(`${app} app, ${isolate ? 'cross-origin isolated: threaded' : 'not isolated: one thread'}`, async () => {
      const { server, base } = await serve(app, { isolate });
      const { ctx, page, errors } = await openPage(base);
      try {
        await page.waitForFunction(() => window.appResult, null, { timeout: 240_000 });
        const r = await page.evaluate(() => window.appResult);
        assert.equal(r.error, undefined, `${app}: ${r.error} (page errors: ${errors.join(' | ')})`);
        console.log(`# ${app}, ${isolate ? 'isolated' : 'not isolated'}: ${r.build}, ${r.threads} thread(s), worker ${r.worker}, ` +
          `cat/kitten ${r.scores.similar.toFixed(4)}, cat/markets ${r.scores.unrelated.toFixed(4)}`);
        assert.equal(r.worker, true, 'the engine runs in a worker by default');
        assert.ok(r.scores.similar > 0.5 && r.scores.similar > r.scores.unrelated + 0.3, JSON.stringify(r.scores));
        if (isolate && (HAVE_THREADS || requireThreads)) {
          assert.match(r.build, /^threads/);
          assert.ok(r.threads >= 2, `threads: ${r.threads}`);
        }
        if (!isolate) {
          assert.match(r.build, /^simd128/);
          assert.equal(r.threads, 1);
        }
      } finally {
        await ctx.close();
        server.close();
      }
    });
  }
}

// The same apps in the two other engines, cross-origin isolated, one browser each over
// WebDriver: Firefox runs the threaded build (shared memory there), WebKitGTK the simd128 build
// on one thread (no SharedArrayBuffer even when isolated, no relaxed SIMD).
const OTHER_ENGINES = {
  firefox: HAVE_THREADS || requireThreads ? /^threads-relaxed$/ : /-relaxed$/,
  webkit: /^simd128$/,
};
for (const [engine, build] of Object.entries(OTHER_ENGINES)) {
  const skip = engineSkip(engine);
  test(`the three apps in ${engine}, cross-origin isolated`, { skip, timeout: 900_000 }, async () => {
    const b = await launchEngine(engine);
    try {
      for (const app of ['webpack', 'vite', 'esm']) {
        const { server, base } = await serve(app, { isolate: true });
        try {
          await b.goto(base);
          const r = await b.evaluate(async () => {
            const t0 = Date.now();
            while (!window.appResult) {
              if (Date.now() - t0 > 240_000) throw new Error('no window.appResult after 240 s');
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
            return window.appResult;
          }, null, { timeoutMs: 260_000 });
          assert.equal(r.error, undefined, `${app} in ${engine}: ${r.error}`);
          console.log(`# ${app} in ${b.version}: ${r.build}, ${r.threads} thread(s), worker ${r.worker}, ` +
            `cat/kitten ${r.scores.similar.toFixed(4)}, cat/markets ${r.scores.unrelated.toFixed(4)}`);
          assert.equal(r.worker, true, 'the engine runs in a worker by default');
          assert.ok(r.scores.similar > 0.5 && r.scores.similar > r.scores.unrelated + 0.3, JSON.stringify(r.scores));
          assert.match(r.build, build);
          if (engine === 'webkit') assert.equal(r.threads, 1);
          else if (HAVE_THREADS || requireThreads) assert.ok(r.threads >= 2, `threads: ${r.threads}`);
        } finally {
          server.close();
        }
      }
    } finally {
      await b.close();
    }
  });
}

// The fenced ```js blocks of the READMEs, each written to a module and imported on the plain
// page (the import map resolves 'webtensor'), in order; each must finish without an error.
test('every JS snippet of README.md and js/README.md runs as written', async () => {
  const dir = path.join(APPS, 'esm/snippets');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const files = [];
  for (const readme of ['README.md', 'js/README.md']) {
    const text = fs.readFileSync(path.join(ROOT, readme), 'utf8');
    for (const [i, m] of [...text.matchAll(/```js\n([\s\S]*?)```/g)].entries()) {
      const file = `${readme.replace(/\W/g, '_')}_${i + 1}.js`;
      fs.writeFileSync(path.join(dir, file), m[1]);
      files.push(file);
    }
  }
  assert.ok(files.length >= 4, `found ${files.length} snippets`);
  const { server, base } = await serve('esm', { isolate: true });
  const { ctx, page, errors } = await openPage(`${base}blank.html`);
  try {
    await page.waitForFunction(() => window.pkg);
    for (const file of files) {
      const r = await page.evaluate(async (f) => {
        try { await import(`./snippets/${f}`); return 'ok'; } catch (e) { return `${e?.name}: ${e?.message ?? e}`; }
      }, file);
      assert.equal(r, 'ok', `${file}: ${r} (page errors: ${errors.join(' | ')})`);
    }
    console.log(`# ${files.length} README snippets ran: ${files.join(', ')}`);
  } finally {
    await ctx.close();
    server.close();
  }
});

// The model cache, in the page (window.pkg loaded): a cold and a cached load in worker mode and
// not; a truncated and a corrupted entry; a full quota; delete.
async function cacheInPage() {
  const { load, cache } = window.pkg;
  await cache.clear();
  const url = 'models/minilm-q8_0.gguf';
  const out = {};
  for (const worker of [true, false]) {
    const wt = await load({ worker });
    const stages = [new Set(), new Set()];
    const cold = await wt.SentenceEmbedder.load(url, { device: 'cpu', onProgress: (s) => stages[0].add(s) });
    const warm = await wt.SentenceEmbedder.load(url, { device: 'cpu', onProgress: (s) => stages[1].add(s) });
    out[`${worker ? 'worker' : 'thread'}Stages`] = stages.map((x) => [...x].join(','));
    const [x] = await cold.embed(['a cat']);
    const [y] = await warm.embed(['a cat']);
    out[worker ? 'worker' : 'thread'] = { cold: cold.source, warm: warm.source, same: x.every((v, i) => v === y[i]) };
    await cold.dispose(); await warm.dispose();
    if (worker) await cache.clear();
  }
  out.list = await cache.list();
  // A truncated entry, with the size the real one had: dropped, fetched again, never parsed.
  const store = await caches.open(cache.name);
  const key = new URL(url, document.baseURI).href;
  const good = await store.match(key);
  const headers = Object.fromEntries(good.headers);
  const bytes = new Uint8Array(await good.arrayBuffer());
  await store.put(key, new Response(bytes.subarray(0, 1000), { headers }));
  const wt = await load({ worker: false });
  const fixed = await wt.SentenceEmbedder.load(url, { device: 'cpu' });
  out.truncated = fixed.source;
  // Same size, one byte changed: the digest catches it.
  const bad = bytes.slice(); bad[bytes.length - 7] ^= 0xff;
  await store.put(key, new Response(bad, { headers }));
  out.corrupt = (await wt.SentenceEmbedder.load(url, { device: 'cpu' })).source;
  // A full quota: the load succeeds, uncached, and says why.
  await cache.clear();
  const put = Cache.prototype.put;
  Cache.prototype.put = () => Promise.reject(new DOMException('the quota has been exceeded', 'QuotaExceededError'));
  try {
    const q = await wt.SentenceEmbedder.load(url, { device: 'cpu' });
    const [z] = await q.embed(['a cat']);
    out.quota = { ...q.source, embeds: z.length };
  } finally {
    Cache.prototype.put = put;
  }
  out.afterQuota = await cache.list();
  await (await wt.SentenceEmbedder.load(url, { device: 'cpu' })).dispose();
  out.deleted = [await cache.delete(url), (await cache.list()).length, await cache.delete(url)];
  return out;
}

function checkCache(r) {
  for (const mode of ['worker', 'thread']) {
    const { cold, warm, same } = r[mode];
    console.log(`# cache, ${mode}: cold load ${cold.ms.toFixed(0)} ms (network), cached ${warm.ms.toFixed(0)} ms (${cold.bytes} bytes)`);
    assert.equal(cold.fromCache, false);
    assert.equal(warm.fromCache, true);
    assert.ok(same, 'the cached model embeds exactly as the downloaded one');
    assert.deepEqual(r[`${mode}Stages`], ['download,devices,weights', 'cache,devices,weights'], 'progress stages, cold and cached');
  }
  assert.equal(r.list.length, 1);
  assert.equal(r.list[0].bytes, r.thread.cold.bytes);
  assert.match(r.list[0].sha256, /^[0-9a-f]{64}$/);
  assert.equal(r.truncated.fromCache, false);
  assert.match(r.truncated.note, /dropped a corrupt cache entry \(1000 bytes where \d+ were stored\)/);
  assert.equal(r.corrupt.fromCache, false);
  assert.match(r.corrupt.note, /SHA-256 does not match/);
  assert.equal(r.quota.embeds, 384);
  assert.match(r.quota.note, /quota .* is full \(QuotaExceededError\)/);
  assert.equal(r.afterQuota.length, 0);
  assert.deepEqual(r.deleted, [true, 0, false]);
}

test('model cache: the second load reads the cache; a corrupt entry is dropped; a full quota still loads', async () => {
  const { server, base } = await serve('esm', { isolate: true });
  const { ctx, page } = await openPage(`${base}blank.html`);
  try {
    await page.waitForFunction(() => window.pkg);
    checkCache(await page.evaluate(cacheInPage));
  } finally {
    await ctx.close();
    server.close();
  }
});

// Main-thread long tasks (PerformanceObserver 'longtask') while 16 texts of ~32 tokens embed,
// with the engine on one thread in both modes.
test('the page stays responsive: long tasks during a 16 × 32-token embed, worker vs in-thread', async () => {
  const { server, base } = await serve('esm', { isolate: true });
  const results = {};
  try {
    for (const worker of [true, false]) {
      const { ctx, page } = await openPage(`${base}blank.html`);
      try {
        await page.waitForFunction(() => window.pkg);
        results[worker ? 'worker' : 'thread'] = await page.evaluate(async (worker) => {
          // One engine thread: this machine has two cores, and the page's own thread gets the
          // other (with two pool threads the page competes with the engine for a core).
          const wt = await window.pkg.load({ worker, threads: 1 });
          const model = await wt.SentenceEmbedder.load('models/minilm-q8_0.gguf', { device: 'cpu', cache: false });
          const text = 'the quick brown fox jumps over the lazy dog while the old cat watches quietly from a sunny window sill near the garden gate at the end of a long day';
          const texts = Array.from({ length: 16 }, (_, i) => `${i} ${text}`);
          await model.embed(texts.slice(0, 2)); // warm
          const tasks = [];
          const obs = new PerformanceObserver((list) => tasks.push(...list.getEntries().map((e) => e.duration)));
          obs.observe({ type: 'longtask' });
          // A timer that should fire every 10 ms: its worst gap is what a user would feel.
          let last = performance.now(); let worstGap = 0;
          const timer = setInterval(() => { const t = performance.now(); worstGap = Math.max(worstGap, t - last); last = t; }, 10);
          const t0 = performance.now();
          const embs = await model.embed(texts);
          const ms = performance.now() - t0;
          await new Promise((r) => setTimeout(r, 100));
          clearInterval(timer);
          obs.disconnect();
          const tokens = (await model.encode(texts[0])).length;
          await model.dispose();
          return { ms, tokens, n: embs.length, longest: Math.max(0, ...tasks), count: tasks.length, worstGap };
        }, worker);
      } finally {
        await ctx.close();
      }
    }
  } finally {
    server.close();
  }
  for (const [mode, r] of Object.entries(results)) {
    console.log(`# long tasks, ${mode}: embed of ${r.n} × ${r.tokens} tokens ${r.ms.toFixed(0)} ms; ` +
      `${r.count} long task(s), longest ${r.longest.toFixed(0)} ms; worst 10-ms timer gap ${r.worstGap.toFixed(0)} ms`);
  }
  assert.equal(results.worker.n, 16);
  assert.ok(results.worker.tokens >= 24, `tokens per text: ${results.worker.tokens}`);
  assert.ok(results.worker.longest <= 50, `worker mode: a ${results.worker.longest} ms long task`);
});

// Bad input in the page (not isolated, window.pkg loaded): each call rejects with its reason and
// the engine stays usable.
async function badInputInPage() {
  const wt = await window.pkg.load();
  const msg = (p) => p.then(() => 'resolved', (e) => `${e.name}${e.code ? ` ${e.code}` : ''}: ${e.message}`);
  const out = {
    missing: await msg(wt.SentenceEmbedder.load('models/nope.gguf')),
    // The package's class, across the worker.
    instance: await wt.SentenceEmbedder.load('models/nope.gguf').catch((e) => e instanceof window.pkg.WebtensorError && e.code),
    html: await msg(wt.SentenceEmbedder.load('blank.html')),
    text: await msg(wt.SentenceEmbedder.load('not-a-model.txt')),
    badOption: await msg(wt.SentenceEmbedder.load('models/minilm-q8_0.gguf', { cache: 'yes' })),
    badLoad: await msg(window.pkg.load({ worker: 'yes' })),
  };
  const rt = await wt.Runtime.create({ device: 'cpu' });
  const g = new wt.Graph();
  const x = g.input('x', 'f32', [4]);
  g.output(g.scale(x, 2));
  out.shape = await msg((async () => g.shape(x))());
  await rt.dispose();
  out.disposed = await msg(rt.run(g, { x: new Float32Array(4) }));
  const bad = new wt.Graph();
  const a = bad.input('a', 'f32', [4]);
  const b = bad.input('b', 'f32', [5, 3]);
  bad.output(bad.matmul(a, b));
  const rt2 = await wt.Runtime.create({ device: 'cpu' });
  out.badGraph = await msg(rt2.run(bad, {}));
  const model = await wt.SentenceEmbedder.load('models/minilm-q8_0.gguf', { device: 'cpu' });
  const c = new AbortController();
  const long = model.embed(Array(16).fill('a long sentence, repeated to make the call take a while'), { signal: c.signal });
  const queued = model.embed(['queued'], { signal: c.signal });
  c.abort();
  out.abortLong = await msg(long);
  out.abortQueued = await msg(queued);
  const [after] = await model.embed(['still works']);
  out.afterAbort = after.length;
  await model.dispose();
  out.disposedModel = await msg(model.embed(['x']));
  out.gpu = await wt.gpuBuffers();
  // terminate(): calls on the old module reject, and load() starts a new worker.
  const pending = msg(rt2.copyStats());
  wt.terminate();
  out.terminated = [await pending, await msg(wt.listDevices())];
  const fresh = await window.pkg.load();
  out.fresh = [fresh !== wt, (await fresh.vectorAdd('CPU', new Float32Array([1, 2]), new Float32Array([3, 4]))).join(',')];
  return out;
}

function checkBadInput(r) {
  console.log(`# bad input: ${JSON.stringify(r)}`);
  assert.equal(r.missing, 'WebtensorError NETWORK: cannot fetch models/nope.gguf: HTTP 404');
  assert.equal(r.instance, 'NETWORK');
  assert.match(r.html, /^WebtensorError NETWORK: cannot load blank\.html: the server sent an HTML page \(content-type text\/html/);
  assert.match(r.text, /^WebtensorError BAD_MODEL_FILE: cannot load not-a-model\.txt: not a GGUF file \(it starts with "hello, this is t", not "GGUF"\)$/);
  assert.equal(r.badOption, 'WebtensorError INVALID_ARGUMENT: option cache must be a boolean, got string');
  assert.equal(r.badLoad, 'WebtensorError INVALID_ARGUMENT: option worker must be a boolean, got string');
  assert.match(r.shape, /^WebtensorError UNSUPPORTED_ENVIRONMENT: Graph\.shape\(\) needs the engine in this thread/);
  assert.equal(r.disposed, 'WebtensorError DISPOSED: this Runtime was disposed');
  assert.match(r.badGraph, /^WebtensorError INVALID_ARGUMENT: matmul: /);
  // The platform's AbortError is a DOMException (numeric legacy code 20); the package's own has 'ABORTED'.
  assert.match(r.abortLong, /^AbortError( ABORTED| 20)?: /);
  assert.match(r.abortQueued, /^AbortError( ABORTED| 20)?: /);
  assert.equal(r.afterAbort, 384);
  assert.equal(r.disposedModel, 'WebtensorError DISPOSED: this SentenceEmbedder was disposed');
  assert.match(r.terminated[0], /^(resolved|WebtensorError WORKER_FAILED: the webtensor worker was terminated)/);
  assert.equal(r.terminated[1], 'WebtensorError WORKER_FAILED: the webtensor worker was terminated (webtensor.terminate())');
  assert.deepEqual(r.fresh, [true, '4,6']);
  assert.deepEqual(Object.keys(r.gpu), ['created', 'live', 'liveBytes'], 'gpuBuffers() through the worker');
}

// A page whose Content-Security-Policy forbids workers: load() falls back to this thread and
// says why; load({ worker: true }) rejects with the reason.
async function cspInPage() {
  const forced = await window.pkg.load({ worker: true }).then(() => 'resolved', (e) => e.message);
  const wt = await window.pkg.load();
  const model = await wt.SentenceEmbedder.load('models/minilm-q8_0.gguf', { device: 'cpu' });
  const [e] = await model.embed(['a cat']);
  return { forced, worker: wt.loaded.worker, reasons: wt.loaded.reasons, dim: e.length };
}

function checkCsp(r) {
  console.log(`# CSP worker-src 'none': ${JSON.stringify(r)}`);
  assert.match(r.forced, /^cannot start the webtensor worker: .*; load\(\{ worker: false \}\) runs webtensor in this thread instead$/);
  assert.equal(r.worker, false);
  assert.match(r.reasons[0], /^in this thread: cannot start the webtensor worker/);
  assert.equal(r.dim, 384);
}

test('bad input: 404, an HTML page, not GGUF, CSP-blocked worker, disposed objects, abort', async () => {
  const { server, base } = await serve('esm', { isolate: false });
  writeNotAModel();
  const { ctx, page } = await openPage(`${base}blank.html`);
  try {
    await page.waitForFunction(() => window.pkg);
    checkBadInput(await page.evaluate(badInputInPage));
  } finally {
    await ctx.close();
    server.close();
  }
  const csp = await serve('esm', { isolate: false, headers: { 'content-security-policy': "worker-src 'none'" } });
  const blocked = await openPage(`${csp.base}blank.html`);
  try {
    await blocked.page.waitForFunction(() => window.pkg);
    checkCsp(await blocked.page.evaluate(cspInPage));
  } finally {
    await blocked.ctx.close();
    csp.server.close();
  }
});

// The model cache (Cache API), bad input, a CSP-blocked worker and an aborted call in Firefox,
// over WebDriver, with the same checks as in Chromium.
test('model cache, bad input, CSP-blocked worker and abort in firefox', { skip: engineSkip('firefox'), timeout: 900_000 }, async () => {
  const b = await launchEngine('firefox');
  const open = async (url) => {
    await b.goto(url);
    await b.evaluate(async () => {
      while (!window.pkg) await new Promise((resolve) => setTimeout(resolve, 50));
    });
  };
  try {
    writeNotAModel();
    for (const [options, run] of [
      [{ isolate: true }, async () => checkCache(await b.evaluate(cacheInPage))],
      [{ isolate: false }, async () => checkBadInput(await b.evaluate(badInputInPage))],
      [{ isolate: false, headers: { 'content-security-policy': "worker-src 'none'" } },
        async () => checkCsp(await b.evaluate(cspInPage))],
    ]) {
      const { server, base } = await serve('esm', options);
      try {
        await open(`${base}blank.html`);
        await run();
      } finally {
        server.close();
      }
    }
  } finally {
    await b.close();
  }
});
