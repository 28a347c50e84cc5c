//! The CPU device's thread pool: rayon's global pool. Natively it runs on std threads (rayon's
//! default). In the threaded wasm build (the `threads` feature, built with
//! `+atomics,+bulk-memory,+mutable-globals` and std rebuilt for them) its threads are Web
//! Workers that instantiate this same module on the same shared memory; `initThreadPool`
//! (src/wasm/threads.rs, js/thread_pool.js) starts them. In the single-thread wasm builds
//! rayon runs every job on the calling thread (rayon-core's fallback where threads cannot
//! be spawned), so kernels written with rayon run unchanged in every build.
//!
//! Why not `wasm-bindgen-rayon` (the usual choice, whose mechanism this copies: a channel of
//! rayon `ThreadBuilder`s, one taken and run by each worker): its start-up waits for each
//! worker's "ready" message with no error path, so a worker that cannot load (a
//! Content-Security-Policy, a wrong path) leaves the promise pending forever; and it finds
//! the package either by a bundler-only relative import (`'../../..'`) or by re-fetching its
//! script into a `blob:` URL. Here a worker is spawned from the snippet's own URL (served
//! with the package, bundled or not), and a load error, an error inside the worker or a
//! timeout rejects with the reason and terminates the workers already started.
//!
//! The browser main thread: rayon blocks the calling thread in `join`/`install` until the
//! pool is done, and a page's main thread may not `Atomics.wait` (std's Mutex/Condvar wait
//! traps there). Two things make it work on the main thread (where the demo runs the engine
//! today): the `threads` feature turns on rayon's `web_spin_lock` (rayon-core ≥ 1.12.1: its
//! locks and latches come from `wasm_sync`, which spins where waiting is not allowed), and
//! the pool is built with `use_current_thread`, so the calling thread is pool thread 0 and
//! does its share of the work instead of only spinning while the workers run; `threads: n`
//! is the calling thread plus n − 1 workers. The cost: while a parallel node runs, the main
//! thread is busy (no rendering) — the same as the single-thread build running it alone;
//! hosting the engine in a worker (a later issue) removes it.

/// The most threads `initThreadPool` / `Runtime.create({ threads })` accept.
pub const MAX_THREADS: usize = 64;

/// Checks a requested thread count (a JS number): an integer in 1..=[`MAX_THREADS`].
pub fn check_count(requested: f64) -> crate::Result<usize> {
    if requested.fract() != 0.0 || !(1.0..=MAX_THREADS as f64).contains(&requested) {
        return Err(crate::Error::InvalidArgument(format!(
            "threads must be an integer from 1 to {MAX_THREADS}, got {requested}"
        )));
    }
    Ok(requested as usize)
}

/// Threads the CPU kernels may use: rayon's pool natively; in the threaded wasm build the
/// threads `initThreadPool` started (1 before); 1 in the single-thread wasm builds.
pub fn count() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads()
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
    {
        web::started().max(1)
    }
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    {
        1
    }
}

static NOTE: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// Records why this build or thread count was chosen over a faster one (the JS loader sets
/// it; empty when nothing faster was passed over). The CPU device's description carries it,
/// so devices() and explain() say it.
pub fn set_note(note: &str) {
    if let Ok(mut n) = NOTE.lock() {
        note.clone_into(&mut n);
    }
}

/// The note [`set_note`] recorded.
pub fn note() -> String {
    NOTE.lock().map(|n| n.clone()).unwrap_or_default()
}

/// Which of the four wasm builds this is ("simd128", "simd128+relaxed", "threads",
/// "threads+relaxed"), or "native".
pub fn build_name() -> &'static str {
    let threads = cfg!(target_feature = "atomics");
    let relaxed = cfg!(target_feature = "relaxed-simd");
    match (cfg!(target_arch = "wasm32"), threads, relaxed) {
        (false, _, _) => "native",
        (true, false, false) => "simd128",
        (true, false, true) => "simd128+relaxed",
        (true, true, false) => "threads",
        (true, true, true) => "threads+relaxed",
    }
}

/// The threaded wasm build's pool start-up (the JS half is js/thread_pool.js).
#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
pub(crate) mod web {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;

    use crossbeam_channel::{unbounded, Receiver, Sender};
    use rayon::ThreadBuilder;

    static STARTED: AtomicUsize = AtomicUsize::new(0);
    /// The pool threads waiting for a worker; each worker takes one. crossbeam's channel, not
    /// std's: sending from the main thread then never waits on a lock (std's wakers take a
    /// Mutex, which would `Atomics.wait` there if a worker held it), and a worker terminated
    /// after a failed start holds nothing another start would wait for.
    static PENDING: OnceLock<(Sender<ThreadBuilder>, Receiver<ThreadBuilder>)> = OnceLock::new();

    fn pending() -> &'static (Sender<ThreadBuilder>, Receiver<ThreadBuilder>) {
        PENDING.get_or_init(unbounded)
    }

    pub(crate) fn started() -> usize {
        STARTED.load(Ordering::Acquire)
    }

    /// Starts the pool with the calling thread and `threads - 1` workers; `spawn_workers`
    /// starts that many workers (each then calls [`run_worker`]) and resolves once they
    /// all run. Errors: a pool already started, or the workers' start-up failing.
    pub(crate) async fn start<F, Fut>(threads: usize, spawn_workers: F) -> crate::Result<()>
    where
        F: FnOnce(usize) -> Fut,
        Fut: std::future::Future<Output = crate::Result<()>>,
    {
        if STARTED
            .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(crate::Error::InvalidArgument(
                "the thread pool is already started (initThreadPool runs once per page)".into(),
            ));
        }
        let tx = pending().0.clone();
        let result = async {
            if threads > 1 {
                spawn_workers(threads - 1).await?;
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .use_current_thread()
                .spawn_handler(move |t| {
                    tx.send(t)
                        .map_err(|_| std::io::Error::other("no worker takes threads"))
                })
                .build_global()
                .map_err(|e| crate::Error::Device {
                    device: "CPU".into(),
                    msg: format!("thread pool: {e}"),
                    fault: crate::error::DeviceFault::Failed,
                })
        }
        .await;
        STARTED.store(if result.is_ok() { threads } else { 0 }, Ordering::Release);
        result
    }

    /// A worker's whole life: takes one pool thread and runs rayon's loop on it (never
    /// returns while the page lives).
    pub(crate) fn run_worker() {
        if let Ok(b) = pending().1.recv() {
            b.run();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_are_checked() {
        assert_eq!(check_count(1.0).ok(), Some(1));
        assert_eq!(check_count(MAX_THREADS as f64).ok(), Some(MAX_THREADS));
        for bad in [0.0, -2.0, 1.5, 65.0, f64::NAN, f64::INFINITY] {
            let e = check_count(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains("from 1 to 64"), "{bad}: {e}");
        }
    }
}
