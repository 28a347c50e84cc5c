//! Benchmark entry points for bench/ (thin wrappers over `crate::bench`): the matmul and
//! SIMD-peak probes, built only with the `bench` feature (the bench scripts build with it).

use wasm_bindgen::prelude::*;

use super::convert::JsErr;

use super::convert::to_js_error;
use crate::graph::DType;

/// A matmul prepared on the CPU device (fast kernels): `W (k×m, dtype) · X (k×n, f32)`.
#[wasm_bindgen]
pub struct MatmulBench(crate::bench::MatmulProblem);

#[wasm_bindgen]
impl MatmulBench {
    /// `dtype` a weight dtype's name ("f32", "f16", "q8_0", "q5_0", "q4_0", "q2_k" … "q6_k");
    /// `threads` the CPU device's (default: the thread pool's size), so one page can time 1
    /// and 2 threads in the same window.
    #[wasm_bindgen(constructor)]
    pub fn new(
        dtype: &str,
        m: usize,
        n: usize,
        k: usize,
        threads: Option<usize>,
    ) -> Result<MatmulBench, JsErr> {
        let wtype = DType::from_name(dtype)
            .filter(|t| t.info().weight)
            .ok_or_else(|| JsErr::invalid(&format!("unknown weight dtype {dtype:?}")))?;
        let dev = crate::backends::cpu_device(threads).map_err(to_js_error)?;
        crate::bench::MatmulProblem::new(dev, wtype, m, n, k)
            .map(MatmulBench)
            .map_err(to_js_error)
    }

    /// Runs the matmul once (synchronously on the CPU).
    pub fn run(&self) -> Result<(), JsErr> {
        self.0.run().map_err(to_js_error)
    }

    /// Flops of one run.
    pub fn flops(&self) -> f64 {
        self.0.flops()
    }
}

/// A streaming read of a buffer, timed by the page beside the matrix-vector products.
#[wasm_bindgen]
pub struct StreamProbe(crate::bench::StreamProbe);

#[wasm_bindgen]
impl StreamProbe {
    /// A probe over `bytes` bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(bytes: usize) -> StreamProbe {
        StreamProbe(crate::bench::StreamProbe::new(bytes))
    }

    /// Reads the buffer once; returns its sum (as f64, so the reads are kept).
    pub fn run(&self) -> f64 {
        self.0.run() as f64
    }

    /// Bytes one run reads.
    pub fn bytes(&self) -> usize {
        self.0.bytes()
    }
}

/// Runs the SIMD peak probe for `iters` rounds and returns the flops it did.
#[wasm_bindgen(js_name = simdPeakProbe)]
pub fn simd_peak_probe(iters: u32) -> f64 {
    let (checksum, flops) = crate::bench::simd_peak_probe(iters);
    // Keeps the work observable so it cannot be optimized out.
    if checksum.is_nan() {
        web_sys::console::log_1(&"probe produced NaN".into());
    }
    flops
}

/// The attention benchmark's cases (`crate::bench::AttentionCase::all`), for
/// bench/attention-cases.mjs: `{ d, heads, kvHeads, nQ, nKv, pad, name }` each.
#[wasm_bindgen(js_name = attentionCases)]
pub fn attention_cases() -> Result<js_sys::Array, JsErr> {
    let set = |o: &js_sys::Object, k: &str, v: JsValue| {
        js_sys::Reflect::set(o, &k.into(), &v)
            .map(|_| ())
            .map_err(|_| JsErr::invalid("cannot build the attention cases"))
    };
    let out = js_sys::Array::new();
    for c in crate::bench::AttentionCase::all() {
        let o = js_sys::Object::new();
        set(&o, "d", c.d.into())?;
        set(&o, "heads", c.heads.into())?;
        set(&o, "kvHeads", c.kv_heads.into())?;
        set(&o, "nQ", c.n_q.into())?;
        set(&o, "nKv", c.n_kv.into())?;
        set(&o, "pad", c.pad.into())?;
        set(&o, "name", c.name().into())?;
        out.push(&o);
    }
    Ok(out)
}

/// Median ms of the attention case (the decoder's layout: `crate::bench::AttentionCase`) on
/// the CPU device at `threads` threads (default: the pool's size), fused (the `attention`
/// op) or as the unfused nodes it replaces: bench/attention.mjs times both in one process.
#[wasm_bindgen(js_name = attentionBench)]
#[allow(clippy::too_many_arguments)]
pub async fn attention_bench(
    heads: usize,
    d: usize,
    kv_heads: usize,
    n_q: usize,
    n_kv: usize,
    pad: usize,
    fused: bool,
    threads: Option<usize>,
) -> Result<f64, JsErr> {
    let dev = crate::backends::cpu_device(threads).map_err(to_js_error)?;
    let rt = crate::runtime::Runtime::with_devices(vec![dev], false, Vec::new())
        .await
        .map_err(to_js_error)?;
    let case = crate::bench::AttentionCase {
        d,
        heads,
        kv_heads,
        n_q,
        n_kv,
        pad,
    };
    let (p, inputs) = case.program(fused).map_err(to_js_error)?;
    crate::bench::AttentionCase::median_ms(&rt, &p, &inputs)
        .await
        .map_err(to_js_error)
}
