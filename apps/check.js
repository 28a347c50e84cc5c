// What each example app does (apps/webpack, apps/vite, apps/esm): load webtensor as the app
// was built to (the same call in all three), load the demo's model through the cache, embed
// three sentences and show the scores. The page's result is window.appResult (read by
// tests/e2e/apps.test.mjs): { build, threads, worker, fromCache, scores } or { error }.
export async function runCheck(load) {
  const out = document.getElementById('out');
  try {
    const params = new URLSearchParams(location.search);
    const webtensor = await load(params.has('worker') ? { worker: params.get('worker') !== 'false' } : {});
    const model = await webtensor.SentenceEmbedder.load('models/minilm-q8_0.gguf', { device: 'cpu' });
    const [a, b, c] = await model.embed(['A cat sits on the mat.', 'A kitten is sitting on a rug.', 'Stock markets fell sharply today.']);
    const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
    const scores = { similar: dot(a, b), unrelated: dot(a, c) };
    const { build, threads, worker } = webtensor.loaded;
    window.appResult = { build, threads, worker, fromCache: model.source.fromCache, scores };
    out.textContent = `${build}, ${threads} thread(s), ${worker ? 'in a worker' : 'in the page'}; ` +
      `cat/kitten ${scores.similar.toFixed(3)}, cat/markets ${scores.unrelated.toFixed(3)}`;
    await model.dispose();
  } catch (e) {
    window.appResult = { error: e?.message ?? String(e) };
    out.textContent = `error: ${window.appResult.error}`;
  }
}
