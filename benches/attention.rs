//! Fused attention against the unfused nodes it replaces (two batched matmuls, a masked
//! softmax and the permute copies), same run, on the CPU device at 1 and 2 threads and on the
//! WebGPU runtime (natively: Vulkan, lavapipe here) with its keys as the adapter's rule splits
//! them (with the adapter's shader-f16 and subgroups, and without; with the query-tiled
//! kernel for several query rows, and with a workgroup per row), unsplit, and forced into
//! 16 runs (`WebGpuOptions::kv_splits`; a GPU splits a decode step's keys, a software
//! adapter never does): the decoder's layout (q a permuted view, K/V
//! f16 views of a longer cache, a causal mask) for heads × head size 12 × 32 (GQA 1) and
//! 32 × 128 (GQA 4), queries 1 / 4 / 32 / 128 / 512 over 128 to 4096 keys. Medians of 7 runs after
//! a warm-up. A benchmark, not a test.
//!
//! `cargo bench --bench attention [-- FILTER]` (FILTER: a substring of the case name or of
//! the device column, e.g. `WebGPU`)

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use std::rc::Rc;

    use pollster::block_on;
    use webtensor::backend::Registry;
    use webtensor::backends::cpu::{CpuReg, KernelSet};
    use webtensor::backends::webgpu::WebGpuOptions;
    use webtensor::backends::{registry_with, DeviceOptions};
    use webtensor::bench::AttentionCase;
    use webtensor::runtime::{DeviceChoice, Runtime};

    /// The CPU device alone at `threads` threads.
    fn cpu_runtime(threads: usize) -> Option<Runtime> {
        let mut reg = Registry::new();
        reg.register(Rc::new(
            CpuReg::with_threads(KernelSet::Fast, Some(threads)).ok()?,
        ));
        block_on(Runtime::new(&reg, DeviceChoice::Cpu, false)).ok()
    }

    /// The WebGPU runtime (the CPU for what it cannot run) planned with `webgpu`, and the
    /// adapter's name.
    fn gpu_runtime(webgpu: WebGpuOptions) -> Option<(Runtime, String)> {
        let opts = DeviceOptions { webgpu };
        let reg = block_on(registry_with(true, opts));
        let rt = block_on(Runtime::new(&reg, DeviceChoice::WebGpu, false)).ok()?;
        let name = reg
            .devices()
            .iter()
            .find(|d| d.name() == "WebGPU")?
            .description();
        Some((rt, name))
    }

    let filter = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let cases = AttentionCase::all();
    let mut runtimes: Vec<(String, Runtime)> = Vec::new();
    for threads in [1, 2] {
        match cpu_runtime(threads) {
            Some(rt) => runtimes.push((format!("CPU, {threads} threads"), rt)),
            None => println!("no CPU runtime with {threads} threads"),
        }
    }
    let plain = WebGpuOptions {
        shader_f16: false,
        subgroups: false,
        ..WebGpuOptions::default()
    };
    for (opts, how) in [
        (WebGpuOptions::default(), "keys split by the adapter's rule"),
        (
            WebGpuOptions {
                query_tiles: false,
                ..WebGpuOptions::default()
            },
            "keys split by the adapter's rule, no query tiles (a workgroup per row)",
        ),
        (
            plain,
            "keys split by the rule, without shader-f16 and subgroups",
        ),
        (
            WebGpuOptions {
                kv_splits: Some(1),
                ..WebGpuOptions::default()
            },
            "keys unsplit",
        ),
        (
            WebGpuOptions {
                kv_splits: Some(16),
                ..WebGpuOptions::default()
            },
            "keys in 16 runs",
        ),
    ] {
        match gpu_runtime(opts) {
            Some((rt, name)) => runtimes.push((format!("{name}, {how}"), rt)),
            None => println!("no WebGPU runtime"),
        }
    }
    println!(
        "| case (heads×d / kv heads, queries × keys) | device | unfused ms | fused ms | speed-up |"
    );
    println!("|---|---|---|---|---|");
    for (device, rt) in &runtimes {
        for &c in &cases {
            let name = c.name();
            if filter
                .as_ref()
                .is_some_and(|f| !name.contains(f.as_str()) && !device.contains(f.as_str()))
            {
                continue;
            }
            let run = |fused| {
                let (p, inputs) = c.program(fused)?;
                let ms = block_on(AttentionCase::median_ms(rt, &p, &inputs));
                rt.release(&p);
                ms
            };
            match (run(false), run(true)) {
                (Ok(u), Ok(f)) => {
                    println!("| {name} | {device} | {u:.3} | {f:.3} | {:.2}x |", u / f)
                }
                (Err(e), _) | (_, Err(e)) => println!("| {name} | {device} | failed: {e} | | |"),
            }
        }
    }
}
