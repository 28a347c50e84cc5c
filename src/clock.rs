//! The crate's one clock, for the profiler, benchmarks and the scheduler's calibration.
//!
//! Milliseconds from an arbitrary start, monotonic where the platform allows: `Instant`
//! natively; `performance.now()` on the web (windows, workers and Node all have it), else
//! `Date.now()`. This is the one module outside `src/wasm/` that may touch JS: a clock is
//! needed below the bindings layer, and `std::time::Instant` panics on wasm32.

/// Milliseconds since an arbitrary, fixed start (only differences mean anything).
#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> f64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

/// Milliseconds since an arbitrary, fixed start (only differences mean anything).
#[cfg(target_arch = "wasm32")]
pub fn now_ms() -> f64 {
    use wasm_bindgen::{JsCast, JsValue};

    thread_local! {
        /// `performance` and its `now` method, looked up once (the profiler calls this per node).
        static PERFORMANCE: Option<(JsValue, js_sys::Function)> = {
            let perf = js_sys::Reflect::get(&js_sys::global(), &"performance".into())
                .ok()
                .filter(|p| p.is_object());
            perf.and_then(|p| {
                let now = js_sys::Reflect::get(&p, &"now".into()).ok()?;
                Some((p, now.dyn_into::<js_sys::Function>().ok()?))
            })
        };
    }
    PERFORMANCE
        .with(|p| {
            p.as_ref()
                .and_then(|(perf, now)| now.call0(perf).ok())
                .and_then(|v| v.as_f64())
        })
        .unwrap_or_else(js_sys::Date::now)
}

#[cfg(test)]
mod tests {
    use super::now_ms;

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn advances_and_never_goes_back() {
        let t0 = now_ms();
        let mut last = t0;
        // Spin until the clock moves (its resolution is at most a few ms on any platform).
        let mut spins = 0u64;
        while last == t0 && spins < 1 << 28 {
            let t = now_ms();
            assert!(t >= last, "clock went back: {last} -> {t}");
            last = t;
            spins += 1;
        }
        assert!(last > t0, "clock never advanced");
    }
}
