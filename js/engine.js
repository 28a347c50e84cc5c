import { cache, fetchModel } from './cache.js';
import { GLUE, WASM } from './builds.js';
import { checkCallback, checkSignal, typeName } from './check.js';
import { asStream } from './proxy.js';
import { WebtensorError } from './errors.js';

// The engine in this thread: four builds of the same crate, one picked at load (index.js's
// load() runs this in a Worker by default, or here with { worker: false }).
//   simd128          SIMD128, one thread (every browser with wasm SIMD)
//   simd128-relaxed  + relaxed SIMD (fused multiply-add)
//   threads          SIMD128, the CPU kernels on a pool of Web Workers (shared memory)
//   threads-relaxed  both
// load() picks the fastest build this page can run: a threaded one only when the page is
// cross-origin isolated (served with COOP/COEP, so SharedArrayBuffer exists) and Workers
// exist; a relaxed one only when the engine runs relaxed SIMD (a fused multiply-add validates
// and an 8-bit dot product gives the known answer).
// It then instantiates it, starts the thread pool, and returns the module's exports plus
// `loaded`: { build, threads, simd, reasons } (reasons: why a faster build was not taken), and
// `memory` (the module's WebAssembly.Memory); SentenceEmbedder.load and Tokenizer.fromGguf go
// through the model cache (cache.js).
//
// Each build is named by a literal path (builds.js), so bundlers (webpack 5, Vite) emit all
// four and the thread-pool worker; only the one picked is fetched.
//
// Options: threads (default: navigator.hardwareConcurrency, at most DEFAULT_MAX_THREADS;
// an integer 1..64, else an Error naming the limit), build (force one of BUILDS, for tests:
// an Error if this page cannot run it), workerTimeoutMs (thread pool start-up, default 20000).
// A page that is not isolated and asks for threads gets one thread, and the reason in
// `loaded.reasons`, in listDevices() (the CPU's "note") and in explain(). A pool worker that
// fails to start (CSP, wrong path) rejects load() with the reason; nothing is left waiting.

export const BUILDS = ['threads-relaxed', 'threads', 'simd128-relaxed', 'simd128'];
/** The default thread count's cap: beyond it the kernels' shapes (MiniLM) gain little. */
export const DEFAULT_MAX_THREADS = 8;

// (func (result v128) (f32x4.relaxed_madd (v128.const 0) (v128.const 0) (v128.const 0)))
const zeros = Array(16).fill(0);
const RELAXED_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x0a, 0x3d, 0x01, 0x3b, 0x00,
  0xfd, 0x0c, ...zeros, 0xfd, 0x0c, ...zeros, 0xfd, 0x0c, ...zeros,
  0xfd, 0x85, 0x02, // f32x4.relaxed_madd
  0x0b,
]);

// (func (export "f") (result i32) (i32x4.extract_lane 0 (i32x4.relaxed_dot_i8x16_i7x16_add_s
//   (v128.const i8x16 -3 5 7 -2 0 ..) (v128.const i8x16 1 2 3 4 0 ..) (v128.const i32x4 0 ..))))
// = -3 + 10 + 21 - 8 = 20. The kernels' 8-bit dots use this instruction: an engine that
// validates it but answers otherwise (Node 20's experimental relaxed SIMD answers 40: an
// older draft's opcode) must get the SIMD128 build.
const v128 = (bytes) => [0xfd, 0x0c, ...bytes.map((x) => x & 0xff)];
const pad = (xs) => [...xs, ...Array(16 - xs.length).fill(0)];
const RELAXED_DOT_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type: () -> i32
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, // export "f"
  0x0a, 0x40, 0x01, 0x3e, 0x00,
  ...v128(pad([-3, 5, 7, -2])), ...v128(pad([1, 2, 3, 4])), ...v128(pad([])),
  0xfd, 0x93, 0x02, // i32x4.relaxed_dot_i8x16_i7x16_add_s
  0xfd, 0x1b, 0x00, // i32x4.extract_lane 0
  0x0b,
]);

function relaxedSimdWorks() {
  try {
    if (!WebAssembly.validate(RELAXED_PROBE) || !WebAssembly.validate(RELAXED_DOT_PROBE)) return false;
    return new WebAssembly.Instance(new WebAssembly.Module(RELAXED_DOT_PROBE)).exports.f() === 20;
  } catch {
    return false;
  }
}

/** What this page offers: { isolated, sharedMemory, workers, relaxedSimd, cores }. */
export function detect() {
  let sharedMemory = false;
  try {
    sharedMemory = typeof SharedArrayBuffer === 'function' &&
      new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch { /* no shared memory */ }
  const relaxedSimd = relaxedSimdWorks();
  return {
    isolated: globalThis.crossOriginIsolated === true,
    sharedMemory,
    workers: typeof Worker === 'function',
    relaxedSimd,
    cores: globalThis.navigator?.hardwareConcurrency || 1,
  };
}

function checkThreads(threads) {
  if (threads === undefined) return undefined;
  if (typeof threads !== 'number' || !Number.isInteger(threads) || threads < 1 || threads > 64) {
    throw new WebtensorError('INVALID_ARGUMENT', `threads must be an integer from 1 to 64, got ${String(threads)}`);
  }
  return threads;
}

/** Which build `load(options)` takes on this page, and why: { build, threads, reasons }. */
export function choose(options = {}, page = detect()) {
  const asked = checkThreads(options.threads);
  const reasons = [];
  const canThread = page.isolated && page.sharedMemory && page.workers;
  if (!canThread) {
    const why = !page.isolated
      ? 'the page is not cross-origin isolated (serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)'
      : !page.sharedMemory ? 'no shared WebAssembly memory (SharedArrayBuffer)' : 'no Web Workers';
    reasons.push(`one thread: ${why}`);
  }
  if (!page.relaxedSimd) reasons.push('SIMD128 without relaxed SIMD: this engine rejects relaxed-SIMD code or its 8-bit dot product answers wrong');
  let build;
  if (options.build !== undefined) {
    if (!BUILDS.includes(options.build)) throw new WebtensorError('INVALID_ARGUMENT', `build must be one of ${BUILDS.join(', ')}, got ${options.build}`);
    build = options.build;
    if (build.startsWith('threads') && !canThread) throw new WebtensorError('UNSUPPORTED_ENVIRONMENT', `cannot run the forced build ${build}: ${reasons[0]}`);
    if (build.endsWith('relaxed') && !page.relaxedSimd) throw new WebtensorError('UNSUPPORTED_ENVIRONMENT', `cannot run the forced build ${build}: ${reasons.at(-1)}`);
    reasons.length = 0;
    reasons.push(`build forced to ${build}`);
  } else {
    build = `${canThread ? 'threads' : 'simd128'}${page.relaxedSimd ? '-relaxed' : ''}`;
  }
  const threaded = build.startsWith('threads');
  const threads = threaded ? asked ?? Math.min(page.cores, DEFAULT_MAX_THREADS) : 1;
  if (!threaded && asked > 1) reasons.push(`${asked} threads asked, 1 used`);
  return { build, threads, reasons };
}

// The builds to try, fastest first: the pick, then (unless forced) the slower ones this page
// can also run. A build missing from the package (scripts/build-pkg.sh skips the threaded
// ones when setup could not install their toolchain) is passed over with a reason.
function candidates(pick, forced) {
  if (forced) return [pick.build];
  const order = BUILDS.slice(BUILDS.indexOf(pick.build));
  return pick.build.endsWith('relaxed') ? order : order.filter((b) => !b.endsWith('relaxed'));
}

// (Here, not in builds.js: pool_worker.js imports builds.js, and a worker whose bundle can start
// itself is a chunk cycle to webpack.)
/** A thread-pool worker for `build`: pool_worker.js, told which build to load. */
export function spawnPoolWorker(build) {
  return () => {
    const worker = new Worker(new URL('./pool_worker.js', import.meta.url), { type: 'module', name: 'webtensor-pool' });
    worker.postMessage({ type: 'webtensor_pool_build', build });
    return worker;
  };
}

/** Picks, instantiates and starts one build in this thread (index.js's load() calls it once). */
export async function loadEngine(options = {}) {
  return start(choose(options), options);
}

async function start(pick, options) {
  let wasm;
  for (const build of candidates(pick, options.build !== undefined)) {
    try {
      wasm = await GLUE[build]();
    } catch (e) {
      if (options.build !== undefined) throw new WebtensorError('UNSUPPORTED_ENVIRONMENT', `cannot load the forced build ${build}: ${e.message}`);
      pick.reasons.push(`${build}: not in the package (${e.message})`);
      continue;
    }
    if (build !== pick.build && !build.startsWith('threads')) {
      if (options.threads > 1) pick.reasons.push(`${options.threads} threads asked, 1 used`);
      pick.threads = 1;
    }
    pick.build = build;
    break;
  }
  if (!wasm) throw new WebtensorError('UNSUPPORTED_ENVIRONMENT', `no build of webtensor could be loaded: ${pick.reasons.join('; ')}`);
  const instance = await wasm.default({ module_or_path: WASM[pick.build]() });
  if (pick.build.startsWith('threads')) {
    await wasm.initThreadPool(pick.threads, options.workerTimeoutMs, spawnPoolWorker(pick.build));
  }
  wasm.setLoadNote(pick.reasons.join('; '));
  const info = wasm.buildInfo();
  const calibration = await restoreCalibrations(wasm);
  const loaded = Object.freeze({
    build: info.build.replace('+', '-'),
    threads: info.threads,
    simd: info.simd,
    reasons: pick.reasons,
    calibration: calibration.info,
  });
  const saving = (Class, method) => afterCall(Class, method, () => calibration.save());
  return Object.freeze({
    ...wasm,
    Runtime: saving(wasm.Runtime, 'create'),
    SentenceEmbedder: saving(withCache(wasm.SentenceEmbedder), 'load'),
    Tokenizer: withFetch(wasm.Tokenizer),
    TextGenerator: saving(withGenerate(withCache(wasm.TextGenerator)), 'load'),
    loaded,
    memory: instance.memory,
    cache,
    worker: false,
  });
}

// The cost model's device calibrations. With devices 'auto' (the default) a runtime measures
// each device once per page load, about a second on a software WebGPU adapter; the result is
// kept in the Cache API (cache CALIBRATION_CACHE, one entry per browser and CPU count: the
// engine's own key names the crate version, the build, its threads and the adapter), restored
// before the first runtime is made and saved after each Runtime.create / load that measured
// something new. Best effort: without the Cache API (an insecure context) or with a bad entry
// (which is dropped), devices are simply measured again, and loaded.calibration.note says why.
export const CALIBRATION_CACHE = 'webtensor-calibration-v1';

function calibrationRequest() {
  const ua = encodeURIComponent(globalThis.navigator?.userAgent ?? '');
  const cores = globalThis.navigator?.hardwareConcurrency ?? 0;
  return `https://webtensor.invalid/calibration?cores=${cores}&ua=${ua}`;
}

async function restoreCalibrations(wasm) {
  const info = { restored: 0, note: '' };
  let saved = '';
  let store;
  try {
    if (typeof globalThis.caches?.open !== 'function') throw new WebtensorError('UNSUPPORTED_ENVIRONMENT', 'this context has no Cache API (it needs a secure context)');
    store = await caches.open(CALIBRATION_CACHE);
    const hit = await store.match(calibrationRequest());
    if (hit) {
      saved = await hit.text();
      try {
        info.restored = wasm.setCalibrations(saved);
      } catch (e) {
        saved = '';
        await store.delete(calibrationRequest());
        throw new WebtensorError('INVALID_ARGUMENT', `the saved calibration was dropped: ${e.message}`);
      }
    }
  } catch (e) {
    info.note = `calibration not restored: ${e.message}`;
  }
  const save = async () => {
    const text = wasm.calibrations();
    if (!store || text === saved) return;
    saved = text;
    try {
      await store.put(calibrationRequest(), new Response(text, { headers: { 'content-type': 'text/plain' } }));
    } catch { /* storage full or gone: measured again next time */ }
  };
  return { info: Object.freeze(info), save };
}

/** `Class` with `method` (async) followed by `after()` once it succeeds. */
function afterCall(Class, method, after) {
  const wrapped = async (...args) => {
    const out = await Reflect.get(Class, method).apply(Class, args);
    await after();
    return out;
  };
  return new Proxy(Class, { get: (target, key) => (key === method ? wrapped : Reflect.get(target, key)) });
}

/**
 * The build's SentenceEmbedder with a load() that fetches URLs through the model cache
 * (cache.js), with progress ("cache" or "download", then the engine's stages). Extra options:
 * `cache` (default true) and `signal` (an AbortSignal: aborts the download). `base`: what a
 * relative URL is relative to (the worker passes the page's). The model gets `source`:
 * { url, fromCache, bytes, ms, note } (null when loaded from bytes).
 */
function withCache(Embedder) {
  const load = async (source, options) => {
    if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
      return Embedder.load(source, options); // its errors name what is wrong
    }
    const { cache: useCache = true, signal, base, ...rest } = options ?? {};
    if (typeof useCache !== 'boolean') throw new WebtensorError('INVALID_ARGUMENT', `option cache must be a boolean, got ${typeName(useCache)}`);
    checkSignal(signal);
    checkCallback('onProgress', rest.onProgress);
    if (typeof source !== 'string') return Embedder.load(await blobSource(source), rest);
    const { bytes, info } = await fetchModel(source, { cache: useCache, onProgress: rest.onProgress, signal, base });
    signal?.throwIfAborted();
    const model = await Embedder.load(bytes, rest);
    model.source = Object.freeze(info);
    return model;
  };
  return new Proxy(Embedder, { get: (target, key) => (key === 'load' ? load : Reflect.get(target, key)) });
}

/**
 * A File (or Blob) source as the engine takes it: in a worker the engine reads it a slice at
 * a time itself (FileReaderSync: no whole copy anywhere); in the page's thread, where
 * FileReaderSync does not exist, it is read here into one array outside wasm memory, which
 * the engine then copies from a chunk at a time. Anything else is passed on as it is.
 */
async function blobSource(source) {
  if (typeof Blob === 'undefined' || !(source instanceof Blob) || typeof FileReaderSync === 'function') return source;
  return new Uint8Array(await source.arrayBuffer());
}

/**
 * The build's TextGenerator (with withCache's load) whose models' generate(prompt, options)
 * and chat(messages, options) return an async iterator of text pieces (`for await (const piece of gen.generate(...))`),
 * with result() and dispose(); `options.signal` (an AbortSignal) ends it at the next pull.
 */
function withGenerate(TextGenerator) {
  const load = async (source, options) => {
    const model = await TextGenerator.load(source, options);
    for (const name of ['generate', 'chat']) {
      const start = model[name].bind(model);
      model[name] = (input, opts) => {
        let signal;
        let rest = opts;
        if (opts && typeof opts === 'object' && !Array.isArray(opts)) ({ signal, ...rest } = opts);
        checkSignal(signal);
        return asStream(start(input, rest), signal);
      };
    }
    return model;
  };
  return new Proxy(TextGenerator, { get: (target, key) => (key === 'load' ? load : Reflect.get(target, key)) });
}

/**
 * The build's Tokenizer with an async fromGguf(source, options) that takes GGUF bytes (a
 * Uint8Array) or a URL, fetched through the model cache (cache.js) like SentenceEmbedder.load.
 * Options (all optional, for a URL): `cache` (default true), `signal` (aborts the download),
 * `onProgress` ("cache" or "download" progress), `base` (what a relative URL is relative to).
 * The tokenizer gets `source`: { url, fromCache, bytes, ms, note } (null from bytes).
 */
function withFetch(Tokenizer) {
  const fromGguf = async (source, options) => {
    if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
      throw new WebtensorError('INVALID_ARGUMENT', `options must be an object, got ${typeName(options)}`);
    }
    const { cache: useCache = true, signal, base, onProgress, ...rest } = options ?? {};
    const unknown = Object.keys(rest);
    if (unknown.length) throw new WebtensorError('INVALID_ARGUMENT', `unknown option "${unknown[0]}" (the options are cache, signal, onProgress)`);
    if (typeof useCache !== 'boolean') throw new WebtensorError('INVALID_ARGUMENT', `option cache must be a boolean, got ${typeName(useCache)}`);
    checkSignal(signal);
    checkCallback('onProgress', onProgress);
    if (typeof source !== 'string') {
      const tok = Tokenizer.fromGguf(source);
      tok.source = null;
      return tok;
    }
    const { bytes, info } = await fetchModel(source, { cache: useCache, onProgress, signal, base });
    signal?.throwIfAborted();
    const tok = Tokenizer.fromGguf(bytes);
    tok.source = Object.freeze(info);
    return tok;
  };
  return new Proxy(Tokenizer, { get: (target, key) => (key === 'fromGguf' ? fromGguf : Reflect.get(target, key)) });
}
