// The demo's webtensor: the package's loader (pkg/index.js, copied beside the page into
// dist/pkg/ by scripts/build-web.sh and loaded at run time, not bundled, so its four builds
// and their workers load from their own URLs) picks the build this page can run. URL
// parameters pass the loader's options: ?threads=2, ?build=simd128 (forced, for tests),
// ?worker=false (the engine in the page's thread; by default it runs in a Worker).
export let webtensor;

export async function loadWebtensor() {
  const { load } = await import(/* webpackIgnore: true */ new URL('pkg/index.js', document.baseURI).href);
  const q = new URLSearchParams(location.search);
  const options = {};
  if (q.has('threads')) options.threads = Number(q.get('threads'));
  if (q.has('build')) options.build = q.get('build');
  if (q.has('worker')) options.worker = q.get('worker') !== 'false';
  webtensor = await load(options);
  return webtensor;
}
