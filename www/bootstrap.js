// The wasm module loads asynchronously: everything that touches it lives in app.js.
import('./app.js').catch((e) => {
  const status = document.getElementById('status');
  status.textContent = `error: ${e && e.message ? e.message : e}`;
  status.dataset.state = 'error';
  console.error(e);
});
