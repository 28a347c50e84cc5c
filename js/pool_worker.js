// One thread of the threaded builds' CPU pool, as the package starts it (builds.js's
// spawnPoolWorker; the protocol is js/thread_pool.js's): told its build, then given the
// compiled module and the shared memory, it instantiates the build's module on that memory,
// says it is ready (or why it failed) and runs its pool thread for the page's life.
// A file of its own, not the build's snippet, so that bundlers see worker → module, with no
// worker that starts itself.
import { GLUE } from './builds.js';
import { WebtensorError } from './errors.js';

let build;
const onMessage = async ({ data }) => {
  if (data?.type === 'webtensor_pool_build') { build = data.build; return; }
  if (data?.type !== 'webtensor_pool_init') return;
  self.removeEventListener('message', onMessage);
  let pkg;
  try {
    if (!GLUE[build]) throw new WebtensorError('INVALID_ARGUMENT', `unknown build ${build}`);
    pkg = await GLUE[build]();
    await pkg.default({ module_or_path: data.module, memory: data.memory });
  } catch (e) {
    postMessage({ type: 'webtensor_pool_failed', message: `${e?.message ?? e}` });
    return;
  }
  postMessage({ type: 'webtensor_pool_ready' });
  pkg.__webtensorPoolWorker();
};
self.addEventListener('message', onMessage);
