// End-to-end: webtensor.Tokenizer in headless Chromium on the built package (pkg/, loaded into
// a blank page), against llama.cpp's own vectors (scripts/fetch-test-vectors.sh: models/vectors/).
// In worker mode (the default) the vocab GGUF is fetched by URL through the model cache; in
// this thread ({ worker: false }) it is read from bytes. Each vector's ids must be exact, its
// decode and its streamed decode (one id at a time) the input text again; bad input must be a
// clean Error. E2E_PKG picks another built package directory (default pkg/).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { launchChromium } from '../../scripts/chromium.mjs';
import { startServer } from '../../scripts/serve.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PKG = process.env.E2E_PKG || 'pkg';
const LOADER = `/${PKG}/index.js`;
const VECTORS = 'models/vectors';
// SentencePiece and byte-level BPE: the smaller covered files (tests/tokenizer_vectors.rs
// runs every covered file natively).
const FILES = [['llama-spm', 'llama'], ['gpt-2', 'gpt2']];
const SEPARATOR = '\n__ggml_vocab_test__\n';
let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(ROOT, PKG, 'index.js')), `${PKG}/ is not built (scripts/build-web.sh)`);
  assert.ok(fs.existsSync(path.join(ROOT, VECTORS, 'ggml-vocab-llama-spm.gguf.out')), 'no vocab files (scripts/fetch-test-vectors.sh)');
  server = await startServer(ROOT, 0, { isolate: false });
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

/** One vocab file's vectors: [{ text, ids }]. */
function vectors(name) {
  const file = path.join(ROOT, VECTORS, `ggml-vocab-${name}.gguf`);
  const inputs = fs.readFileSync(`${file}.inp`, 'utf8').split(SEPARATOR);
  assert.equal(inputs.pop(), '');
  const outs = fs.readFileSync(`${file}.out`, 'utf8').split('\n').filter((l, i, a) => i < a.length - 1 || l !== '');
  assert.equal(inputs.length, outs.length, name);
  return inputs.map((text, i) => ({ text, ids: outs[i].split(/\s+/).filter(Boolean).map(Number) }));
}

// The clean-text rule of tests/e2e/bad_input.test.mjs: no debug-printed JsValue, no stack.
const UNCLEAN = /JsValue|\n\s+at |^Error: /;

for (const worker of [true, false]) {
  test(`Tokenizer ${worker ? 'in worker mode, from a URL' : 'in this thread, from bytes'}: llama.cpp's vectors exact`, async (t) => {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => { if (/panicked|RuntimeError|unreachable/.test(m.text())) errors.push(m.text()); });
    await page.goto(base + 'tests/e2e/engine.html');
    const cases = FILES.map(([name, model]) => ({ name, model, url: `/${VECTORS}/ggml-vocab-${name}.gguf`, vectors: vectors(name) }));
    const r = await page.evaluate(async ({ loader, worker, cases }) => {
      const { load } = await import(loader);
      const wt = await load({ worker });
      const out = { worker: wt.worker, files: [], bad: {} };
      for (const c of cases) {
        const source = worker ? c.url : new Uint8Array(await (await fetch(c.url)).arrayBuffer());
        const tok = await wt.Tokenizer.fromGguf(source);
        const f = { name: c.name, model: tok.model, length: tok.length, bos: tok.bos, eos: tok.eos, failures: [], n: 0 };
        for (const { text, ids } of c.vectors) {
          const got = await tok.encode(text, { addSpecial: false });
          if (!(got instanceof Uint32Array) || got.join() !== ids.join()) {
            f.failures.push(`${JSON.stringify(text)}: ids ${got} want ${ids}`);
            continue;
          }
          const back = await tok.decode(got);
          if (back !== text) f.failures.push(`${JSON.stringify(text)} decodes to ${JSON.stringify(back)}`);
          const s = await tok.stream();
          let streamed = '';
          for (const id of got) streamed += await s.push(id);
          streamed += await s.finish();
          await s.dispose();
          if (streamed !== text) f.failures.push(`${JSON.stringify(text)} streams to ${JSON.stringify(streamed)}`);
          f.n++;
        }
        // addSpecial follows the metadata: SentencePiece adds BOS.
        f.withSpecial = Array.from(await tok.encode('Hello', { addSpecial: true }));
        f.plain = Array.from(await tok.encode('Hello', { addSpecial: false }));
        const msg = async (fn) => { try { await fn(); return null; } catch (e) { return `${e instanceof Error}:${e.message}`; } };
        if (c.model === 'llama') {
          out.bad = {
            idOutOfRange: await msg(() => tok.decode([tok.length])),
            negativeId: await msg(() => tok.decode(new Int32Array([-1]))),
            idsString: await msg(() => tok.decode('1 2')),
            optionType: await msg(() => tok.encode('x', { addSpecial: 'yes' })),
            optionUnknown: await msg(() => tok.encode('x', { addBos: true })),
            pushString: await msg(async () => (await tok.stream()).push('7')),
            badBytes: await msg(() => wt.Tokenizer.fromGguf(new Uint8Array([71, 71, 85, 70, 3, 0, 0, 0]))),
            number: await msg(() => wt.Tokenizer.fromGguf(42)),
            missing: await msg(() => wt.Tokenizer.fromGguf('/models/vectors/nope.gguf')),
          };
          await tok.dispose();
          out.bad.disposed = await msg(() => tok.encode('x'));
        }
        out.files.push(f);
      }
      return out;
    }, { loader: LOADER, worker, cases });
    assert.equal(r.worker, worker);
    for (const f of r.files) {
      const c = cases.find((x) => x.name === f.name);
      assert.equal(f.model, c.model, f.name);
      assert.deepEqual(f.failures, [], f.name);
      assert.equal(f.n, c.vectors.length, f.name);
      if (f.model === 'llama') assert.deepEqual(f.withSpecial, [f.bos, ...f.plain]);
      else assert.deepEqual(f.withSpecial, f.plain);
      t.diagnostic(`${f.name}: ${f.n} vectors exact (${f.length} tokens)`);
    }
    const b = r.bad;
    assert.match(b.idOutOfRange, /^true:token id 32000 is not in the vocabulary \(0\.\.32000\)$/);
    assert.match(b.negativeId, /^true:token id -1 is not in the vocabulary/);
    assert.match(b.idsString, /^true:ids must be a Uint32Array, an Int32Array or an array of numbers$/);
    assert.match(b.optionType, /^true:option addSpecial must be a boolean, got string$/);
    assert.match(b.optionUnknown, /^true:unknown option "addBos" \(the options are addSpecial, parseSpecial\)$/);
    assert.match(b.pushString, /^true:a token id must be a number, got string$/);
    assert.match(b.badBytes, /^true:GGUF file/);
    assert.match(b.number, /^true:source must be a URL string or a Uint8Array of GGUF bytes$/);
    assert.match(b.missing, /^true:cannot fetch .*nope\.gguf: HTTP 404$/);
    assert.match(b.disposed, /^true:this Tokenizer was disposed$/);
    for (const m of Object.values(b)) assert.doesNotMatch(m.slice(5), UNCLEAN);
    assert.deepEqual(errors, []);
    await page.close();
  });
}
