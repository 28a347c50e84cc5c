// The four builds, each named by literal paths so bundlers (webpack 5, Vite) emit all of them:
// GLUE[build]() imports its wasm-bindgen module, WASM[build]() is its .wasm file's URL.
// engine.js loads one (and starts pool_worker.js for a threaded one); pool_worker.js loads the
// same one in each thread-pool worker.
export const GLUE = {
  'threads-relaxed': () => import('./threads-relaxed/webtensor.js'),
  threads: () => import('./threads/webtensor.js'),
  'simd128-relaxed': () => import('./simd128-relaxed/webtensor.js'),
  simd128: () => import('./simd128/webtensor.js'),
};
export const WASM = {
  'threads-relaxed': () => new URL('./threads-relaxed/webtensor_bg.wasm', import.meta.url),
  threads: () => new URL('./threads/webtensor_bg.wasm', import.meta.url),
  'simd128-relaxed': () => new URL('./simd128-relaxed/webtensor_bg.wasm', import.meta.url),
  simd128: () => new URL('./simd128/webtensor_bg.wasm', import.meta.url),
};
