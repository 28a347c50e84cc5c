//! The thread pool's JS face: `initThreadPool`, `buildInfo`, `threadPoolProbe`, and the
//! hidden entry each pool worker runs (see `crate::backends::cpu::threads` for the design).

use js_sys::Object;
use wasm_bindgen::prelude::*;

use super::convert::JsErr;

use super::convert::{set, to_js_error};

/// Starts the CPU thread pool with `threads` threads in all (the calling thread and
/// `threads - 1` Web Workers on this module's shared memory). Once per page, before the first
/// computation. `spawn`, when given, makes each worker (the package's loader passes one that
/// starts `pool_worker.js`, a file bundlers can see); without it each worker runs
/// `js/thread_pool.js` from its own URL. Errors: `threads` not an integer in 1..=64; more than
/// one thread asked of a single-thread build; a worker that fails to start (the reason;
/// nothing is left waiting); no worker ready within `timeoutMs` (default 20000).
#[wasm_bindgen(js_name = initThreadPool)]
pub async fn init_thread_pool(
    threads: f64,
    timeout_ms: Option<f64>,
    #[wasm_bindgen(unchecked_param_type = "() => Worker")] spawn: Option<js_sys::Function>,
) -> Result<(), JsErr> {
    let n = crate::backends::threads::check_count(threads).map_err(to_js_error)?;
    let timeout = timeout_ms.unwrap_or(20_000.0);
    if timeout.is_nan() || timeout <= 0.0 {
        return Err(JsErr::invalid(&format!(
            "timeoutMs must be a positive number of milliseconds, got {timeout}"
        )));
    }
    start(n, timeout, spawn).await
}

#[cfg(target_feature = "atomics")]
async fn start(
    threads: usize,
    timeout_ms: f64,
    spawn_worker: Option<js_sys::Function>,
) -> Result<(), JsErr> {
    #[wasm_bindgen(module = "/js/thread_pool.js")]
    extern "C" {
        #[wasm_bindgen(js_name = startWorkers, catch)]
        fn start_workers(
            module: JsValue,
            memory: JsValue,
            count: usize,
            main_js: JsValue,
            timeout_ms: f64,
            spawn: JsValue,
        ) -> Result<js_sys::Promise, JsValue>;
    }
    #[wasm_bindgen]
    extern "C" {
        // The URL of this package's main JS module (the one wasm-bindgen generated), which
        // each worker imports to instantiate the module on the shared memory.
        #[wasm_bindgen(thread_local_v2, js_namespace = ["import", "meta"], js_name = url)]
        static MAIN_JS: js_sys::JsString;
    }
    let spawn_worker: JsValue = spawn_worker.map(Into::into).unwrap_or(JsValue::UNDEFINED);
    let spawn = |workers: usize| async move {
        let failed = |e: JsValue| crate::Error::Device {
            device: "CPU".into(),
            msg: js_sys::Error::from(e)
                .message()
                .as_string()
                .unwrap_or_else(|| "a thread pool worker failed to start".into()),
            fault: crate::error::DeviceFault::Failed,
        };
        let promise = start_workers(
            wasm_bindgen::module(),
            wasm_bindgen::memory(),
            workers,
            MAIN_JS.with(|u| u.clone().into()),
            timeout_ms,
            spawn_worker,
        )
        .map_err(failed)?;
        wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .map(|_| ())
            .map_err(failed)
    };
    crate::backends::threads::web::start(threads, spawn)
        .await
        .map_err(to_js_error)
}

#[cfg(not(target_feature = "atomics"))]
async fn start(
    threads: usize,
    _timeout_ms: f64,
    _spawn: Option<js_sys::Function>,
) -> Result<(), JsErr> {
    if threads > 1 {
        return Err(JsErr::invalid(&format!(
            "the {} build is single-threaded: it cannot start {threads} threads (the loader \
             picks a threaded build only on a cross-origin isolated page)",
            crate::backends::threads::build_name()
        )));
    }
    Ok(())
}

/// Runs one pool thread in a worker started by `initThreadPool` (js/thread_pool.js calls it;
/// not for users). Blocks the worker for the page's life.
#[cfg(target_feature = "atomics")]
#[wasm_bindgen(js_name = __webtensorPoolWorker)]
#[doc(hidden)]
pub fn pool_worker() {
    crate::backends::threads::web::run_worker();
}

/// Records why the loader took this build and thread count over faster ones (js/index.js
/// calls it; the CPU device's description, in listDevices() and explain(), then says it).
#[wasm_bindgen(js_name = setLoadNote)]
pub fn set_load_note(note: &str) {
    crate::backends::threads::set_note(note);
}

/// `{ build, threads, simd, maxThreads }`: which of the four builds this module is, how many
/// threads its CPU kernels may use now, and its SIMD level.
#[wasm_bindgen(js_name = buildInfo)]
pub fn build_info() -> Result<Object, JsErr> {
    let o = Object::new();
    set(&o, "build", &crate::backends::threads::build_name().into())?;
    set(
        &o,
        "threads",
        &(crate::backends::threads::count() as f64).into(),
    )?;
    set(&o, "simd", &crate::backends::simd_level().into())?;
    set(
        &o,
        "maxThreads",
        &(crate::backends::threads::MAX_THREADS as f64).into(),
    )?;
    Ok(o)
}

/// Runs `tasks` small jobs on the pool: `{ sum, threadsUsed }` (how many distinct pool
/// threads ran one). Tests use it to prove the workers take work.
#[wasm_bindgen(js_name = threadPoolProbe)]
pub fn thread_pool_probe(tasks: u32) -> Result<Object, JsErr> {
    let (sum, used) = crate::backends::threads::pool_probe(tasks as usize);
    let o = Object::new();
    set(&o, "sum", &js_sys::BigInt::from(sum).into())?;
    set(&o, "threadsUsed", &(used as f64).into())?;
    Ok(o)
}
