// The Web Workers of webtensor's threaded wasm build (src/backends/cpu/threads.rs explains the
// design).
// On the page: startWorkers() spawns `count` workers (the package's pool_worker.js through the
// loader's `spawn`, or this very file), hands each the
// compiled module and the shared memory, and resolves once each one has instantiated the
// module and entered its pool thread; a worker that cannot load (Content-Security-Policy,
// wrong path, network), throws while starting, or stays silent past `timeoutMs` rejects the
// whole start with the reason, and every worker started is terminated: nothing hangs.
// In a worker of this file: the message handler below does that start (pool_worker.js does the
// same for the package, finding the build's module by a literal path instead of by URL).

const INIT = 'webtensor_pool_init';
const READY = 'webtensor_pool_ready';
const FAILED = 'webtensor_pool_failed';

// Firefox collects workers that only share memory with the page unless they are referenced.
const workers = [];

function started(worker, url, timeoutMs) {
  return new Promise((resolve, reject) => {
    const fail = (why) => {
      clearTimeout(timer);
      reject(new Error(`a thread pool worker failed to start: ${why}`));
    };
    const timer = setTimeout(() => fail(`not ready within ${timeoutMs} ms`), timeoutMs);
    worker.addEventListener('message', ({ data }) => {
      if (data?.type === READY) { clearTimeout(timer); resolve(); }
      if (data?.type === FAILED) fail(data.message);
    });
    worker.addEventListener('error', (e) => {
      e.preventDefault?.();
      fail(e.message || `cannot load ${url} as a module worker (blocked by a Content-Security-Policy ` +
        'worker-src / script-src, a wrong path, or a network error)');
    });
    worker.addEventListener('messageerror', () => fail('it could not receive the shared memory'));
  });
}

export async function startWorkers(module, memory, count, mainJs, timeoutMs, spawn) {
  const made = [];
  try {
    for (let i = 0; i < count; i++) {
      // The package's loader passes `spawn` (a worker of its pool_worker.js, which bundlers
      // emit); otherwise (wasm-bindgen-test-runner, the build used alone) this very file.
      // (Through a variable: bundlers must not take this for a worker entry of their own. And
      // import.meta.url read here, not at the module's top level: under wasm-bindgen-test-runner
      // a top-level read gave a worker that never answered.)
      const url = new URL(import.meta.url);
      const worker = spawn ? spawn() : new Worker(url, { type: 'module', name: 'webtensor-pool' });
      const ready = started(worker, spawn ? 'pool_worker.js' : url, timeoutMs);
      ready.catch(() => {}); // the first failure is reported below; later ones are not unhandled
      made.push({ worker, ready });
      worker.postMessage({ type: INIT, module, memory, mainJs });
    }
    await Promise.all(made.map((m) => m.ready));
  } catch (e) {
    for (const m of made) m.worker.terminate();
    throw e instanceof Error ? e : new Error(`a thread pool worker failed to start: ${e}`);
  }
  workers.push(...made.map((m) => m.worker));
}

// Inside a pool worker: instantiate the module on the shared memory, then run a pool thread.
if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope) {
  const onInit = async ({ data }) => {
    if (data?.type !== INIT) return;
    self.removeEventListener('message', onInit);
    let pkg;
    try {
      pkg = await import(/* webpackIgnore: true */ /* @vite-ignore */ data.mainJs);
      await pkg.default({ module_or_path: data.module, memory: data.memory });
    } catch (e) {
      postMessage({ type: FAILED, message: `${e?.message ?? e}` });
      return;
    }
    postMessage({ type: READY });
    pkg.__webtensorPoolWorker();
  };
  self.addEventListener('message', onInit);
}
