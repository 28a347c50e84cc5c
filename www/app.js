import * as webtensor from 'webtensor';

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

async function main() {
  const status = document.getElementById('status');
  const list = document.getElementById('devices');
  const devices = await webtensor.devices();
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
  status.textContent = 'ready';
  status.dataset.state = 'ready';
}

main().catch((e) => {
  const status = document.getElementById('status');
  status.textContent = `error: ${e.message}`;
  status.dataset.state = 'error';
  console.error(e);
});
