// webtensor's package entry.
//
//   import { load } from 'webtensor';
//   const webtensor = await load();        // the engine in a module Worker (the default)
//   const model = await webtensor.SentenceEmbedder.load('models/minilm-q8_0.gguf');
//   const [a, b] = await model.embed(['a cat', 'a kitten']);
//
// load(options) starts the engine once per page (per mode) and resolves to its API:
//   - worker (default true in a page, false inside a worker): the engine runs in a dedicated
//     module Worker (worker.js) and this thread gets a proxy with the same classes and methods,
//     each returning a Promise (proxy.js says what differs); WebGPU and the threaded build's
//     pool run from that worker. `{ worker: false }` runs the engine in this thread
//     (engine.js). A worker that cannot start (a Content-Security-Policy without worker-src,
//     a file the server does not have) rejects load() with the reason when `worker: true` was
//     asked, and otherwise falls back to this thread with the reason in `loaded.reasons`.
//   - threads, build, workerTimeoutMs: which of the four builds and how many threads
//     (engine.js); `loaded` = { build, threads, simd, reasons, worker } says what was chosen.
// The model cache (cache.js) is `webtensor.cache` and the `cache` export here.
import { BUILDS, DEFAULT_MAX_THREADS, choose, detect, loadEngine } from './engine.js';
import { cache } from './cache.js';
import { Link, proxyModule } from './proxy.js';
import { typeName } from './check.js';
import { ERROR_CODES, WebtensorError } from './errors.js';

export { BUILDS, DEFAULT_MAX_THREADS, choose, detect, cache, ERROR_CODES, WebtensorError };

const loading = new Map(); // mode ('worker' | 'thread') → Promise of the module
const inWorker = typeof WorkerGlobalScope !== 'undefined' && globalThis instanceof WorkerGlobalScope;
const KNOWN = ['worker', 'threads', 'build', 'workerTimeoutMs'];

function checkOptions(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new WebtensorError('INVALID_ARGUMENT', `options must be an object, got ${typeName(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.includes(key)) throw new WebtensorError('INVALID_ARGUMENT', `unknown option "${key}" (the options are ${KNOWN.join(', ')})`);
  }
  if (options.worker !== undefined && typeof options.worker !== 'boolean') {
    throw new WebtensorError('INVALID_ARGUMENT', `option worker must be a boolean, got ${typeName(options.worker)}`);
  }
  const t = options.workerTimeoutMs;
  if (t !== undefined && !(typeof t === 'number' && t > 0)) {
    throw new WebtensorError('INVALID_ARGUMENT', `option workerTimeoutMs must be a positive number, got ${typeName(t) === 'number' ? t : typeName(t)}`);
  }
  choose(options); // threads and build: their errors, before anything starts
}

/** Starts webtensor (once per page and mode; later calls return the same module). */
export async function load(options = {}) {
  checkOptions(options);
  const wantWorker = options.worker ?? (!inWorker && typeof Worker === 'function');
  const mode = wantWorker ? 'worker' : 'thread';
  const { worker: _, ...engineOptions } = options;
  if (loading.has(mode)) {
    const mod = await loading.get(mode);
    const asks = (options.build && options.build !== mod.loaded.build) ||
      (options.threads && options.threads !== mod.loaded.threads);
    if (asks) {
      throw new WebtensorError('INVALID_ARGUMENT', `webtensor is already loaded as ${mod.loaded.build} with ${mod.loaded.threads} thread(s) ` +
        `(load runs once per page${wantWorker ? ' in worker mode' : ''})`);
    }
    return mod;
  }
  const started = wantWorker ? inWorkerMode(engineOptions, options.worker === true) : inThread(engineOptions, []);
  loading.set(mode, started);
  try {
    return await started;
  } catch (e) {
    loading.delete(mode);
    throw e;
  }
}

async function inThread(options, reasons) {
  const mod = await loadEngine(options);
  const loaded = Object.freeze({ ...mod.loaded, reasons: [...reasons, ...mod.loaded.reasons], worker: false });
  return Object.freeze({ ...mod, loaded });
}

async function inWorkerMode(options, required) {
  let worker;
  try {
    worker = await startWorker(options.workerTimeoutMs ?? 20000);
  } catch (e) {
    if (required) throw new WebtensorError('WORKER_FAILED', `${e.message}; load({ worker: false }) runs webtensor in this thread instead`);
    return inThread(options, [`in this thread: ${e.message}`]);
  }
  const link = new Link(worker);
  // A worker that stops (terminate(), a crash) is forgotten: the next load() starts a new one.
  link.onDead = () => { if (loading.get('worker') === current) loading.delete('worker'); };
  const current = loading.get('worker');
  let init;
  try {
    init = await link.call('init', { options });
  } catch (e) {
    link.terminate();
    throw e;
  }
  const loaded = Object.freeze({ ...init.loaded, worker: true });
  return proxyModule(link, loaded, cache);
}

// A module Worker from worker.js (a literal URL, so bundlers emit it), resolved once its
// script has loaded and said so; a load error, a CSP refusal or silence past `timeoutMs`
// rejects with the reason, and the worker is terminated.
function startWorker(timeoutMs) {
  return new Promise((resolve, reject) => {
    let worker;
    try {
      worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'webtensor' });
    } catch (e) {
      reject(new WebtensorError('WORKER_FAILED', `cannot start the webtensor worker: ${e.message}`));
      return;
    }
    const done = (err) => {
      clearTimeout(timer);
      worker.removeEventListener('message', onMessage);
      worker.removeEventListener('error', onError);
      if (err) { worker.terminate(); reject(new WebtensorError('WORKER_FAILED', `cannot start the webtensor worker: ${err}`)); } else resolve(worker);
    };
    const onMessage = ({ data }) => { if (data?.ready) done(); };
    const onError = (e) => {
      e.preventDefault?.();
      done(e.message || 'its script did not load as a module worker (blocked by a Content-Security-Policy worker-src / script-src, a wrong path, or a network error)');
    };
    const timer = setTimeout(() => done(`its script did not start within ${timeoutMs} ms`), timeoutMs);
    worker.addEventListener('message', onMessage);
    worker.addEventListener('error', onError);
  });
}
