import { webtensor } from './webtensor.js';
import { modelDemo } from './embed.js';
import { generateDemo } from './generate.js';

// The package, for the end-to-end tests (tests/e2e/) and for trying the API in the console.
globalThis.webtensor = webtensor;

const A = [1, 2, 3, 4];
const B = [10, 20, 30, 40];

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function deviceCard(d) {
  const card = el('section', { class: 'device', 'data-device': d.name });
  card.append(el('h3', {}, d.name));
  if (!d.available) {
    card.append(el('p', { class: 'unavailable' }, `not available: ${d.reason}`));
    return card;
  }
  card.append(el('p', { class: 'description' }, `${d.kind} — ${d.description}`));
  const table = el('table', { class: 'properties' });
  for (const [k, v] of Object.entries(d.properties)) {
    const tr = el('tr');
    tr.append(el('th', {}, k), el('td', {}, String(v)));
    table.append(tr);
  }
  card.append(table);
  card.append(el('p', { class: 'result' }, 'computing…'));
  return card;
}

// Which of the four builds the loader took, with how many threads, and why not a faster one.
function showBuild() {
  const { build, threads, simd, reasons, worker } = webtensor.loaded;
  const out = document.getElementById('build');
  out.textContent = `${build}, ${threads} thread${threads === 1 ? '' : 's'}, ${simd}, ` +
    `${worker ? 'in a Web Worker' : 'in the page\'s thread'}` + (reasons.length ? ` (${reasons.join('; ')})` : '');
  Object.assign(out.dataset, { build, threads: String(threads), worker: String(worker) });
}

async function main() {
  showBuild();
  generateDemo();
  const status = document.getElementById('status');
  const list = document.getElementById('devices');
  const devices = await webtensor.listDevices();
  for (const d of devices) list.append(deviceCard(d));
  for (const d of devices.filter((d) => d.available)) {
    const out = list.querySelector(`[data-device="${d.name}"] .result`);
    try {
      const t0 = performance.now();
      const sum = await webtensor.vectorAdd(d.name, new Float32Array(A), new Float32Array(B));
      const ms = (performance.now() - t0).toFixed(1);
      out.textContent = `[${A}] + [${B}] = [${Array.from(sum)}] (${ms} ms)`;
      out.dataset.values = Array.from(sum).join(',');
    } catch (e) {
      out.textContent = `error: ${e.message}`;
      out.dataset.error = e.message;
    }
  }
  await schedulerDemo();
  await modelDemo();
  status.textContent = 'ready';
  status.dataset.state = 'ready';
}

// A two-layer MLP with a softmax, run by the scheduler on "auto" devices, checked against
// the same math in plain JS, with the plan explain() gives.
const K = 8, H = 16, N = 4;

function seeded(len, seed) {
  const a = new Float32Array(len);
  let s = seed;
  for (let i = 0; i < len; i++) { s = (s * 1103515245 + 12345) >>> 0; a[i] = (s / 4294967296) * 2 - 1; }
  return a;
}

// ggml layout: w is [k, m] (m rows of k), x is [k, n] (n rows of k) → [m, n] (n rows of m).
function matmulRef(w, x, k, m, n) {
  const y = new Float32Array(m * n);
  for (let j = 0; j < n; j++) for (let i = 0; i < m; i++) {
    let s = 0;
    for (let t = 0; t < k; t++) s += w[i * k + t] * x[j * k + t];
    y[j * m + i] = s;
  }
  return y;
}
const gelu = (x) => 0.5 * x * (1 + Math.tanh(0.7978845608 * x * (1 + 0.044715 * x * x)));

function mlpRef(x, w1, b1, w2) {
  const h = matmulRef(w1, x, K, H, N).map((v, i) => gelu(v + b1[i % H]));
  const z = matmulRef(w2, h, H, K, N);
  for (let j = 0; j < N; j++) {
    const row = z.subarray(j * K, (j + 1) * K);
    const m = Math.max(...row);
    let s = 0;
    for (let i = 0; i < K; i++) { row[i] = Math.exp(row[i] - m); s += row[i]; }
    for (let i = 0; i < K; i++) row[i] /= s;
  }
  return z;
}

async function schedulerDemo() {
  const out = document.getElementById('scheduler');
  const x = seeded(K * N, 1), w1 = seeded(K * H, 2), b1 = seeded(H, 3), w2 = seeded(H * K, 4);
  const t0 = performance.now();
  const rt = await webtensor.Runtime.create({ device: 'auto' });
  const g = new webtensor.Graph();
  const tx = g.input('x', 'f32', [K, N]);
  const h = g.gelu(g.add(g.matmul(g.weight('w1', 'f32', [K, H], w1), tx), g.weight('b1', 'f32', [H], b1)));
  const y = g.softmax(g.matmul(g.weight('w2', 'f32', [H, K], w2), h));
  g.setName(y, 'probs');
  g.output(y);
  const cls = g.argmax(y);
  g.setName(cls, 'class');
  g.output(cls);
  const t1 = performance.now();
  const res = await rt.run(g, { x });
  const t2 = performance.now();
  const want = mlpRef(x, w1, b1, w2);
  const maxDiff = Math.max(...res.probs.map((v, i) => Math.abs(v - want[i])));
  const plan = await rt.explain(g); // a Promise in worker mode, a string in this thread
  out.querySelector('.devices').textContent = `runtime devices: ${rt.devices.join(' → ')}` +
    (rt.notes.length ? ` (${rt.notes.join('; ')})` : '');
  const r = out.querySelector('.result');
  r.textContent = `classes per column: [${Array.from(res.class)}]; max |Δ| vs JS reference: ${maxDiff.toExponential(2)}` +
    ` — create+build ${(t1 - t0).toFixed(1)} ms, first run ${(t2 - t1).toFixed(1)} ms`;
  r.dataset.maxDiff = String(maxDiff);
  r.dataset.classes = Array.from(res.class).join(',');
  out.querySelector('.explain').textContent = plan;
  await rt.dispose();
}

main().catch((e) => {
  const status = document.getElementById('status');
  status.textContent = `error: ${e.message}`;
  status.dataset.state = 'error';
  console.error(e);
});
