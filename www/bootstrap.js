// The wasm module loads asynchronously (the loader picks one of four builds): everything that
// touches it lives in app.js, imported once it is loaded.
import { loadWebtensor } from './webtensor.js';

loadWebtensor().then(() => import('./app.js')).catch((e) => {
  const status = document.getElementById('status');
  status.textContent = `error: ${e && e.message ? e.message : e}`;
  status.dataset.state = 'error';
  console.error(e);
});
