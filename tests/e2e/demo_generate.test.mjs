// End-to-end: the demo's Generate panel (www/generate.js) in the built page (www/dist), in
// headless Chromium. With no model chosen it says what to load; then a GGUF picked from disk
// through the file input (the tiny random-weight llama of scripts/decoder-models.py, read in
// the engine's worker a slice at a time) streams its answer, is stopped mid-answer, continues
// from where it stopped (the cache reused: only the last token runs again), and the stopped-
// and-continued tokens are the ones an uninterrupted greedy run gives; its first tokens (to the
// first near-tie) are llama.cpp's (tests/reference/decoder/llama-f32.json).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIST = path.join(ROOT, 'www/dist');
const SHOTS = path.join(ROOT, 'target/e2e');
const MODEL = path.join(ROOT, 'models/decoder/llama-f32.gguf');
const REF = JSON.parse(fs.readFileSync(path.join(ROOT, 'tests/reference/decoder/llama-f32.json'), 'utf8'));
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), 'www/dist is not built (scripts/build-web.sh)');
  assert.ok(fs.existsSync(MODEL), `${MODEL} missing (scripts/decoder-models.py)`);
  server = await startServer(DIST, 0);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

test('the Generate panel: a GGUF from disk streams, stops mid-answer and continues', async (t) => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (/panicked|RuntimeError|unreachable/.test(m.text())) errors.push(m.text()); });
  await page.goto(base);
  const panel = page.locator('#generate');
  await page.waitForSelector('#generate[data-state="empty"]', { timeout: 120_000 });
  assert.match(await panel.locator('.model-status').textContent(), /^No model loaded\. Choose a llama, qwen2 or qwen3 GGUF file/);
  assert.equal(await panel.locator('button.send').isDisabled(), true, 'Send without a model');

  await panel.locator('input.file').setInputFiles(MODEL);
  await page.waitForSelector('#generate[data-state="loaded"], #generate[data-state="error"]', { timeout: 120_000 });
  const status = await panel.locator('.model-status').textContent();
  assert.equal(await panel.getAttribute('data-state'), 'loaded', status);
  assert.match(status, /^llama-f32: llama, 32000 tokens, context 256, loaded in [\d.]+ s on .*text completion \(the file has no chat template\)/);
  t.diagnostic(status);

  const c = REF.cases[0];
  const stats = panel.locator('.stats');
  const waitState = (s) => page.waitForFunction((s) => document.querySelector('#generate').dataset.state === s, s, { timeout: 120_000 });
  const tokensOf = async () => (await stats.getAttribute('data-tokens')).split(',').filter(Boolean).map(Number);
  await panel.locator('input.temperature').fill('0');
  await panel.locator('input.max').fill(String(REF.n_ctx - c.prompt.length));
  await panel.locator('textarea.prompt').fill(c.text);
  // Stop once three pieces are on the page: clicked from the page as the third piece lands
  // (the tiny model streams hundreds of tokens a second, so a click from here could come
  // after the answer's last token, and the test would race the model).
  await page.evaluate(() => {
    const panel = document.querySelector('#generate');
    const stop = panel.querySelector('button.stop');
    const watch = new MutationObserver(() => {
      if (Number(panel.querySelector('.turn .text')?.dataset.pieces ?? 0) >= 3 && !stop.disabled) {
        watch.disconnect();
        stop.click();
      }
    });
    watch.observe(panel.querySelector('.transcript'), { subtree: true, attributes: true, attributeFilter: ['data-pieces'] });
  });
  await panel.locator('button.send').click();
  await waitState('stopped');
  assert.equal(await stats.getAttribute('data-stop-reason'), 'stopped');
  const first = await tokensOf();
  assert.ok(first.length >= 3 && first.length < REF.n_ctx - c.prompt.length, `stopped after ${first.length} tokens`);
  // llama.cpp's greedy tokens up to its first near-tie (a top-2 margin of 0.012 at token 26:
  // 'auto' keeps part of the cache in f16 on the CPU, which may flip it).
  const n = Math.min(first.length, c.margins.findIndex((m) => m < 0.02));
  assert.deepEqual(first.slice(0, n), c.greedy.slice(0, n), 'llama.cpp\'s greedy tokens');
  assert.ok(Number(await stats.getAttribute('data-decode-tps')) > 0);
  assert.match(await stats.textContent(), /tokens \(stopped\).*decode [\d.]+ tokens\/s/);
  const shown = await panel.locator('.turn .text').textContent();
  t.diagnostic(`stopped after ${first.length} tokens: ${await stats.textContent()}`);

  // Continue: the same answer on, 8 more tokens; all but the last token come from the cache.
  await panel.locator('input.max').fill('8');
  assert.equal(await panel.locator('button.continue').isDisabled(), false);
  await panel.locator('button.continue').click();
  await waitState('done');
  const more = await tokensOf();
  assert.equal(more.length, 8);
  assert.equal(Number(await stats.getAttribute('data-reused')), c.prompt.length + first.length - 1);
  const grown = await panel.locator('.turn .text').textContent();
  assert.ok(grown.startsWith(shown) && grown.length > shown.length, 'the answer grew in place');
  assert.match(await panel.locator('.explain').textContent(), /state: cache_k\.0/);

  // The same prompt from a fresh conversation, uninterrupted: the same tokens.
  await panel.locator('button.reset').click();
  await waitState('loaded');
  await panel.locator('input.max').fill(String(first.length + more.length));
  await panel.locator('textarea.prompt').fill(c.text);
  await panel.locator('button.send').click();
  await waitState('done');
  assert.deepEqual(await tokensOf(), [...first, ...more], 'stopped + continued = one uninterrupted run');
  assert.equal(await stats.getAttribute('data-stop-reason'), 'length');
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, 'generate.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});
