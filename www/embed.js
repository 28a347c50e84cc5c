// The model demo: all-MiniLM-L6-v2 sentence embeddings (GGUF, converted by
// scripts/fetch-model.sh) on "auto" devices: a progress bar while the model loads, which
// device runs what, a similarity matrix of the sentences typed, a semantic search over
// them, and timings per stage. The model file is cached (the Cache API) after the first
// download: the status line says "loaded from cache" then. "Embed a large batch" embeds 64
// sentences while a counter animates: in worker mode (the default) it keeps moving.
import { webtensor } from './webtensor.js';

export const EXAMPLES = [
  'A man is playing a guitar.',
  'Someone is strumming a guitar on stage.',
  'The stock market fell sharply today.',
  'Shares dropped after the earnings report.',
  'A cat sleeps on the windowsill.',
  'The kitten is napping in the sun by the window.',
];

const $ = (sel) => document.querySelector(sel);
const fmt = (ms) => `${ms.toFixed(1)} ms`;
const bytes = (n) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / (1 << 20)).toFixed(1)} MiB`);

function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

function similarityTable(texts, embs) {
  const table = document.createElement('table');
  table.className = 'similarity';
  const head = table.insertRow();
  head.insertCell().textContent = '';
  texts.forEach((_, j) => { head.insertCell().textContent = `#${j + 1}`; });
  texts.forEach((t, i) => {
    const row = table.insertRow();
    const label = row.insertCell();
    label.textContent = `#${i + 1} ${t.length > 40 ? t.slice(0, 40) + '…' : t}`;
    label.className = 'label';
    texts.forEach((_, j) => {
      const s = dot(embs[i], embs[j]);
      const cell = row.insertCell();
      cell.textContent = s.toFixed(3);
      cell.dataset.score = String(s);
      cell.style.background = `rgba(40, 110, 220, ${Math.max(0, s) * 0.6})`;
    });
  });
  return table;
}

export async function modelDemo() {
  const section = $('#model');
  const bar = section.querySelector('progress');
  const status = section.querySelector('.model-status');
  const select = section.querySelector('select');
  let embedder = null;

  async function load() {
    embedder?.dispose();
    embedder = null;
    const url = `models/minilm-${select.value}.gguf`;
    status.textContent = `loading ${url}…`;
    section.dataset.state = 'loading';
    const t0 = performance.now();
    try {
      embedder = await webtensor.SentenceEmbedder.load(url, {
        device: 'auto',
        onProgress: (stage, loaded, total) => {
          if (total > 0) { bar.max = total; bar.value = loaded; }
          status.textContent = stage === 'devices' ? 'starting devices…'
            : `${stage}: ${(loaded / 1048576).toFixed(1)} / ${(total / 1048576).toFixed(1)} MiB`;
        },
      });
    } catch (e) {
      status.textContent = `error: ${e.message}`;
      section.dataset.state = 'error';
      return;
    }
    const ms = performance.now() - t0;
    bar.value = bar.max;
    const notes = [...embedder.notes, ...(embedder.source?.note ? [embedder.source.note] : [])];
    const from = embedder.source?.fromCache ? 'from cache ' : '';
    status.textContent = `loaded ${from}in ${fmt(ms)} on ${embedder.devices.join(' → ')}` +
      (notes.length ? ` — ${notes.join('; ')}` : '');
    section.dataset.fromCache = String(!!embedder.source?.fromCache);
    section.querySelector('.timings').dataset.loadMs = String(ms);
    section.dataset.state = 'loaded';
    await run();
  }

  async function run() {
    if (!embedder) return;
    const texts = section.querySelector('textarea').value.split('\n').map((s) => s.trim()).filter(Boolean);
    const out = section.querySelector('.matrix');
    const timings = section.querySelector('.timings');
    section.dataset.state = 'running';
    try {
      const t0 = performance.now();
      const embs = await embedder.embed(texts);
      const t1 = performance.now();
      const before = await embedder.copyStats();
      const t1b = performance.now();
      const again = await embedder.embed(texts);
      const t2 = performance.now();
      const after = await embedder.copyStats();
      const crossed = after.perRunBytes - before.perRunBytes + after.oneTimeBytes - before.oneTimeBytes;
      out.replaceChildren(similarityTable(texts, embs));
      timings.textContent = `embed ${texts.length} sentences: first ${fmt(t1 - t0)} (plans the graph), then ${fmt(t2 - t1b)}` +
        ` — ${embedder.dim}-d embeddings; ${bytes(crossed)} crossed between devices per embed` +
        ` (${bytes(after.oneTimeBytes)} of weights copied once in all)`;
      timings.dataset.embedMs = String(t2 - t1b);
      timings.dataset.crossedBytes = String(crossed);
      timings.dataset.perRunWeightBytes = String(after.perRunWeightBytes - before.perRunWeightBytes);
      section.querySelector('.explain').textContent = await embedder.explain();
      section.dataset.same = String(again.every((e, i) => e.every((v, k) => v === embs[i][k])));
      await search(texts, embs);
      section.dataset.state = 'done';
    } catch (e) {
      out.textContent = `error: ${e.message}`;
      section.dataset.state = 'error';
    }
  }

  async function search(texts, embs) {
    const q = section.querySelector('input.query').value.trim();
    const list = section.querySelector('ol.results');
    list.replaceChildren();
    if (!q) return;
    const [qe] = await embedder.embed([q]);
    texts.map((t, i) => ({ t, s: dot(qe, embs[i]) }))
      .sort((a, b) => b.s - a.s)
      .forEach(({ t, s }) => {
        const li = document.createElement('li');
        li.textContent = `${s.toFixed(3)}  ${t}`;
        li.dataset.score = String(s);
        list.append(li);
      });
  }

  // A large batch while a counter counts animation frames: the page stays interactive when the
  // engine runs in its worker, and freezes for the batch when it runs in the page's thread.
  async function largeBatch() {
    if (!embedder) return;
    const out = section.querySelector('span.batch');
    const texts = Array.from({ length: 64 }, (_, i) => `${EXAMPLES[i % EXAMPLES.length]} (variant ${i + 1})`);
    let frames = 0; let last = performance.now(); let worst = 0; let running = true;
    const tick = () => {
      if (!running) return;
      const t = performance.now();
      worst = Math.max(worst, t - last); last = t; frames++;
      out.textContent = `embedding ${texts.length} sentences… frame ${frames}`;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    const t0 = performance.now();
    try {
      await embedder.embed(texts);
    } finally {
      running = false;
    }
    const ms = performance.now() - t0;
    out.textContent = `${texts.length} sentences in ${fmt(ms)}; the page drew ${frames} frames meanwhile ` +
      `(longest gap between two frames: ${fmt(worst)}; in the page's thread it would be the whole batch)`;
    Object.assign(out.dataset, { frames: String(frames), worstGapMs: String(worst) });
  }

  section.querySelector('textarea').value = EXAMPLES.join('\n');
  section.querySelector('button.run').addEventListener('click', run);
  section.querySelector('button.batch').addEventListener('click', largeBatch);
  select.addEventListener('change', load);
  await load();
}
