// End-to-end: the cost model's calibration kept across page loads (engine.js: Cache API,
// cache "webtensor-calibration-v1"), in headless Chromium (WebGPU on SwiftShader), on the
// built package (pkg/) loaded into a blank page. In one browser context (one origin's storage):
//   1. a first load restores nothing; Runtime.create({ device: 'auto' }) measures every device
//      and explain() says so; the engine saves what it measured;
//   2. a second load (the other mode: worker, then in-thread) restores every device, and
//      'auto' measures none (explain names the saved calibration for each) and places the
//      graph as the first did, with the same result;
//   3. a corrupt saved entry is dropped with the reason in loaded.calibration.note, the devices
//      are measured again and the entry is rewritten;
//   4. setCalibrations refuses a malformed text whole, naming the line.
// A fresh context (no storage) restores nothing. The load times are printed, not asserted.
// E2E_PKG picks another built package directory (default pkg/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = process.env.E2E_PKG || 'pkg';
const LOADER = `/${PKG}/index.js`;
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(ROOT, PKG, 'index.js')), `${PKG}/ is not built (scripts/build-web.sh)`);
  server = await startServer(ROOT, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** Loads the engine in a new page of `context`, makes an 'auto' runtime, runs and explains a graph. */
async function visit(context, worker) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (/panicked|RuntimeError|unreachable/.test(m.text())) errors.push(m.text()); });
  await page.goto(base + 'tests/e2e/engine.html');
  const out = await page.evaluate(async ([loader, worker]) => {
    const { load } = await import(loader);
    const t0 = performance.now();
    const wt = await load({ worker });
    const t1 = performance.now();
    const rt = await wt.Runtime.create({ device: 'auto' });
    const t2 = performance.now();
    const g = new wt.Graph();
    const x = g.input('x', 'f32', [64, 8]);
    const w = g.weight('w', 'f32', [64, 32], Float32Array.from({ length: 64 * 32 }, (_, i) => ((i * 7) % 13) / 13 - 0.5));
    const y = g.softmax(g.gelu(g.matmul(w, x)));
    g.setName(y, 'y');
    g.output(y);
    const { y: values } = await rt.run(g, { x: Float32Array.from({ length: 64 * 8 }, (_, i) => ((i * 5) % 11) / 11 - 0.5) });
    const explain = await rt.explain(g);
    await rt.dispose();
    const devices = (await wt.listDevices()).filter((d) => d.available).map((d) => d.name);
    return {
      loaded: wt.loaded.calibration,
      worker: wt.loaded.worker,
      devices,
      costs: explain.split('\n').find((l) => l.startsWith('device costs:')) ?? '',
      placement: explain.split('\n').filter((l) => !/device costs|estimate|ms/.test(l)).join('\n'),
      explain,
      values: Array.from(values),
      text: await wt.calibrations(),
      loadMs: t1 - t0,
      createMs: t2 - t1,
    };
  }, [LOADER, worker]);
  await page.close();
  assert.deepEqual(errors, []);
  return out;
}

test('auto measures each device once per browser: later loads restore the saved calibration', async (t) => {
  const context = await browser.newContext();
  const first = await visit(context, true);
  t.diagnostic(`first load: ${first.loadMs.toFixed(0)} ms, Runtime.create auto ${first.createMs.toFixed(0)} ms; ${first.costs}`);
  assert.equal(first.worker, true);
  assert.equal(first.loaded.restored, 0, JSON.stringify(first.loaded));
  assert.equal(first.loaded.note, '');
  assert.ok(first.devices.length >= 1, first.devices.join());
  for (const d of first.devices) assert.match(first.costs, new RegExp(`${d} measured at load \\(\\d+ ms\\)`), first.costs);
  assert.equal(first.text.trim().split('\n').length, first.devices.length, first.text);

  const second = await visit(context, false);
  t.diagnostic(`second load: ${second.loadMs.toFixed(0)} ms, Runtime.create auto ${second.createMs.toFixed(0)} ms; ${second.costs}`);
  assert.equal(second.worker, false);
  assert.equal(second.loaded.restored, first.devices.length, JSON.stringify(second.loaded));
  assert.doesNotMatch(second.costs, /measured/, second.costs);
  for (const d of second.devices) assert.match(second.costs, new RegExp(`${d} from the saved calibration`), second.costs);
  // The same costs, so the same plan and the same numbers.
  assert.equal(second.text, first.text);
  assert.equal(second.placement, first.placement);
  assert.deepEqual(second.values, first.values);

  // A corrupt entry: dropped with the reason, measured again, rewritten.
  const page = await context.newPage();
  await page.goto(base + 'tests/e2e/engine.html');
  await page.evaluate(async () => {
    const store = await caches.open('webtensor-calibration-v1');
    const keys = await store.keys();
    if (keys.length !== 1) throw new Error(`${keys.length} calibration entries, expected 1`);
    await store.put(keys[0], new Response('not a calibration'));
  });
  await page.close();
  const third = await visit(context, true);
  assert.equal(third.loaded.restored, 0);
  assert.match(third.loaded.note, /^calibration not restored: the saved calibration was dropped: (invalid argument: )?calibration line 1: no tab after the key$/);
  for (const d of third.devices) assert.match(third.costs, new RegExp(`${d} measured at load`), third.costs);
  const fourth = await visit(context, false);
  assert.equal(fourth.loaded.restored, first.devices.length, JSON.stringify(fourth.loaded));
  await context.close();

  // Another browser profile's storage: nothing to restore.
  const fresh = await browser.newContext();
  const other = await visit(fresh, false);
  assert.equal(other.loaded.restored, 0);
  await fresh.close();
});

test('setCalibrations refuses a malformed text whole and takes a good one', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(base + 'tests/e2e/engine.html');
  const out = await page.evaluate(async (loader) => {
    const { load } = await import(loader);
    const wt = await load({ worker: true });
    const tries = {};
    for (const [name, text] of Object.entries({
      numbers: 'webtensor 9|CPU|x\t1 2 3\n',
      word: 'webtensor 9|CPU|x\t1 2 x 0 1 0\n',
      negative: 'webtensor 9|CPU|x\t-1 2 0 0 1 0\n',
    })) {
      try {
        tries[name] = `took ${await wt.setCalibrations(text)}`;
      } catch (e) {
        tries[name] = e.message;
      }
    }
    tries.other = await wt.setCalibrations('webtensor 0.0.0-other|CPU|x\t1e9 1e9 0 0 inf 0\n');
    tries.after = await wt.calibrations();
    return tries;
  }, LOADER);
  await context.close();
  assert.match(out.numbers, /calibration line 1: 3 numbers, expected 6/);
  assert.match(out.word, /calibration line 1: "x" is not a number/);
  assert.match(out.negative, /calibration line 1: a throughput that is not positive/);
  assert.equal(out.other, 0, 'a line of another version is skipped');
  assert.equal(out.after, '', 'nothing was taken');
});
