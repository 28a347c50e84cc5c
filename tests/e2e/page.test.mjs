// End-to-end: the built demo (www/dist) served locally and opened in headless Chromium
// (Debian's /usr/bin/chromium through playwright-core), asserting on what the page shows.
// Run by scripts/test.sh after the package and the page are built.
// E2E_REQUIRE_WEBGPU=1 makes a missing WebGPU device a failure (Chromium with
// --enable-unsafe-webgpu always has SwiftShader's adapter).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIST = path.join(ROOT, 'www/dist');
const SHOTS = path.join(ROOT, 'target/e2e');
const THREADED = fs.existsSync(path.join(DIST, 'pkg/threads-relaxed/webtensor.js'));
let server, plainServer, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), 'www/dist is not built (scripts/build-web.sh)');
  server = await startServer(DIST, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
  plainServer = await startServer(DIST, 0, { isolate: false });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
  plainServer?.close();
});

test('demo page lists the devices and computes on each', async (t) => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(base);
  await page.waitForSelector('#status[data-state="ready"], #status[data-state="error"]', { timeout: 120_000 });
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'demo.png'), fullPage: true });
  assert.equal(await page.textContent('#status'), 'ready', `page errors: ${errors.join('; ')}`);

  // Served with COOP/COEP: the threaded build (when the package has it), shown on the page.
  const build = page.locator('#build');
  assert.equal(await build.getAttribute('data-build'), THREADED ? 'threads-relaxed' : 'simd128-relaxed', await build.textContent());
  t.diagnostic(`build: ${await build.textContent()}`);
  assert.equal(await build.getAttribute('data-worker'), 'true', 'the demo runs the engine in a worker');
  const cpu = page.locator('[data-device="CPU"]');
  assert.match(await cpu.locator('.description').textContent(), /simd128/);
  assert.match(await cpu.locator('.properties').textContent(), /build/);
  assert.equal(await cpu.locator('.result').getAttribute('data-values'), '11,22,33,44');

  const gpu = page.locator('[data-device="WebGPU"]');
  assert.equal(await gpu.count(), 1, 'the WebGPU entry (device or reason) is missing');
  if (await gpu.locator('.unavailable').count()) {
    const reason = await gpu.locator('.unavailable').textContent();
    assert.ok(process.env.E2E_REQUIRE_WEBGPU !== '1', `WebGPU required but ${reason}`);
    console.log(`# WebGPU ${reason}`);
  } else {
    assert.equal(await gpu.locator('.result').getAttribute('data-values'), '11,22,33,44');
    const props = await gpu.locator('.properties').textContent();
    assert.match(props, /maxStorageBufferBindingSize/);
    assert.match(props, /adapter\.isFallbackAdapter/);
  }
  const sched = page.locator('#scheduler');
  const maxDiff = Number(await sched.locator('.result').getAttribute('data-max-diff'));
  assert.ok(maxDiff < 1e-4, `scheduler result differs from the JS reference by ${maxDiff}`);
  assert.match(await sched.locator('.explain').textContent(), /^plan: \d+ nodes/);
  assert.match(await sched.locator('.explain').textContent(), /memory:/);
  assert.deepEqual(errors, []);
});

const score = async (page, i, j) =>
  Number(await page.locator(`#model table.similarity tr:nth-child(${i + 2}) td:nth-child(${j + 2})`).getAttribute('data-score'));

test('the model demo embeds sentences, compares them, and searches', async (t) => {
  const context = await browser.newContext(); // shared by a second visit (the model cache)
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(base);
  await page.waitForSelector('#status[data-state="ready"], #status[data-state="error"]', { timeout: 300_000 });
  const model = page.locator('#model');
  assert.equal(await model.getAttribute('data-state'), 'done', await model.locator('.model-status').textContent());
  assert.match(await model.locator('.model-status').textContent(), /loaded in [\d.]+ ms on /);
  // the two guitar sentences are closer to each other than to the stock market
  const [guitar, stock, diag] = [await score(page, 0, 1), await score(page, 0, 2), await score(page, 0, 0)];
  assert.ok(Math.abs(diag - 1) < 1e-3, `self-similarity ${diag}`);
  assert.ok(guitar > stock + 0.2, `guitar/guitar ${guitar} vs guitar/stocks ${stock}`);
  assert.equal(await model.getAttribute('data-same'), 'true', 'two runs of the same input differ');
  assert.match(await model.locator('.results li').first().textContent(), /guitar/);
  assert.match(await model.locator('.explain').textContent(), /plan: \d+ nodes/);
  // 'auto' (the demo's default): in steady state no weight crosses between devices per run,
  // and the page says how many bytes did cross.
  const timings = model.locator('.timings');
  assert.equal(await timings.getAttribute('data-per-run-weight-bytes'), '0', await model.locator('.explain').textContent());
  assert.match(await timings.textContent(), /crossed between devices per embed/);
  t.diagnostic(`model demo: ${await timings.textContent()}`);
  for (const line of (await model.locator('.explain').textContent()).split('\n').slice(0, 2)) t.diagnostic(line);

  // type new sentences and run again
  await model.locator('textarea').fill('I love pizza.\nPizza is my favourite food.\nThe train leaves at noon.');
  await model.locator('input.query').fill('what should we eat');
  await model.locator('button.run').click();
  await page.waitForFunction(() => document.querySelector('#model').dataset.state === 'done'
    && document.querySelectorAll('#model table.similarity tr').length === 4, null, { timeout: 120_000 });
  const [food, train] = [await score(page, 0, 1), await score(page, 0, 2)];
  assert.ok(food > train, `pizza/pizza ${food} vs pizza/train ${train}`);
  assert.match(await model.locator('.results li').first().textContent(), /[Pp]izza/);
  await page.screenshot({ path: path.join(SHOTS, 'model.png'), fullPage: true });

  // A large batch while the page animates: in worker mode the page keeps drawing frames.
  await model.locator('button.batch').click();
  await page.waitForSelector('#model span.batch[data-frames]', { timeout: 300_000 });
  const frames = Number(await model.locator('span.batch').getAttribute('data-frames'));
  t.diagnostic(`large batch: ${await model.locator('span.batch').textContent()}`);
  assert.ok(frames >= 2, `the page drew ${frames} frame(s) during the batch`);

  // The same page again in this browser context: the model comes from the cache.
  const again = await context.newPage();
  await again.goto(base);
  await again.waitForSelector('#status[data-state="ready"], #status[data-state="error"]', { timeout: 300_000 });
  assert.equal(await again.locator('#model').getAttribute('data-from-cache'), 'true');
  assert.match(await again.locator('#model .model-status').textContent(), /loaded from cache in [\d.]+ ms on /);
  t.diagnostic(`second visit: ${await again.locator('#model .model-status').textContent()}`);
  assert.deepEqual(errors, []);
  await context.close();
});

test('served without COOP/COEP, the demo runs on one thread and says why', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${plainServer.address().port}/`);
  await page.waitForSelector('[data-device="CPU"] .result[data-values], #status[data-state="error"]', { timeout: 120_000 });
  const build = page.locator('#build');
  assert.equal(await build.getAttribute('data-build'), 'simd128-relaxed');
  assert.equal(await build.getAttribute('data-threads'), '1');
  assert.match(await build.textContent(), /not cross-origin isolated/);
  assert.equal(await page.locator('[data-device="CPU"] .result').getAttribute('data-values'), '11,22,33,44');
  assert.deepEqual(errors, []);
  await page.close();
});
