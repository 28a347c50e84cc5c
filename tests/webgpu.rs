#![cfg(not(target_arch = "wasm32"))]
//! The WebGPU device against the CPU reference: every supported op on small graphs with odd
//! sizes, non-contiguous views and broadcasting, plus buffer edge cases. Without an adapter
//! (no Vulkan here) each test prints why and passes.

use std::collections::HashMap;
use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::{run_graph, Backend, BackendReg, Device};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::backends::webgpu::WebGpuReg;
use webtensor::graph::{DType, Graph, RopeMode, RopeParams, TensorId, QK};
use webtensor::Error;

/// Guard bytes around every tensor in `run_graph`.
const GUARD: usize = 64;
/// Normalized MSE allowed for ops computed the same way in f32 (order of sums aside).
const EXACT: f64 = 1e-6;

fn gpu() -> Option<Rc<dyn Device>> {
    let reg = block_on(WebGpuReg::new());
    let dev = reg.devices().into_iter().next();
    if dev.is_none() {
        eprintln!(
            "skipping: no WebGPU device ({})",
            reg.unavailable_reason().unwrap_or_default()
        );
    }
    dev
}

/// A seeded xorshift generator: values in [-1, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

/// Random data for every leaf of `g` not in `given`, in the leaf's dtype.
fn leaves(
    g: &Graph,
    seed: u64,
    scale: f32,
    given: &[(TensorId, Vec<u8>)],
) -> HashMap<TensorId, Vec<u8>> {
    let mut rng = Rng(seed);
    let mut out: HashMap<TensorId, Vec<u8>> = given.iter().cloned().collect();
    for (id, t) in g.iter() {
        if !t.op.is_noop() || t.is_view() || out.contains_key(&id) {
            continue;
        }
        let vals = rng.vec(t.numel(), scale);
        let mut bytes = vec![0u8; t.nbytes()];
        if bytes.is_empty() {
            out.insert(id, bytes);
            continue;
        }
        let row = t.ne[0];
        let row_bytes = t.dtype.row_bytes(row).unwrap();
        for (src, dst) in vals.chunks(row).zip(bytes.chunks_mut(row_bytes)) {
            webtensor::graph::row_from_f32(t.dtype, src, dst);
        }
        out.insert(id, bytes);
    }
    out
}

fn to_f32(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn nmse(got: &[f32], want: &[f32]) -> f64 {
    let num: f64 = got
        .iter()
        .zip(want)
        .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
        .sum();
    let den: f64 = want.iter().map(|&b| (b as f64).powi(2)).sum();
    num / den.max(1e-30)
}

/// Runs `g` on WebGPU and on the CPU reference and compares every output.
fn check(name: &str, g: &Graph, leaves: &HashMap<TensorId, Vec<u8>>, tol: f64) {
    let Some(dev) = gpu() else { return };
    for id in g.compute_nodes() {
        let s = dev.supports_op(g, id);
        assert!(
            s.is_yes(),
            "{name}: {} unsupported: {s:?}",
            g.tensor(id).name
        );
    }
    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Reference));
    let want = block_on(run_graph(&cpu.create_backend().unwrap(), g, leaves, GUARD)).unwrap();
    let got = block_on(run_graph(
        &dev.clone().create_backend().unwrap(),
        g,
        leaves,
        GUARD,
    ))
    .unwrap_or_else(|e| panic!("{name}: WebGPU run failed: {e}"));
    for ((id, w), o) in g.outputs().into_iter().zip(&want).zip(&got) {
        let t = g.tensor(id);
        assert_eq!(w.len(), o.len(), "{name}: {} length", t.name);
        match t.dtype {
            DType::I32 => assert_eq!(w, o, "{name}: {} differs", t.name),
            DType::Q8_0 | DType::Q4_0 => {
                let f = |b: &[u8]| -> Vec<f32> {
                    let mut v = vec![0f32; t.numel()];
                    webtensor::graph::row_to_f32(t.dtype, b, &mut v);
                    v
                };
                let e = nmse(&f(o), &f(w));
                let same = o.iter().zip(w).filter(|(a, b)| a == b).count();
                eprintln!(
                    "{name}: {} nmse {e:.3e}, {same}/{} bytes equal",
                    t.name,
                    w.len()
                );
                assert!(e <= tol.max(1e-5), "{name}: {} nmse {e}", t.name);
            }
            DType::F16 => {
                let f = |b: &[u8]| -> Vec<f32> {
                    b.chunks_exact(2)
                        .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                        .collect()
                };
                let e = nmse(&f(o), &f(w));
                assert!(e <= tol.max(1e-6), "{name}: {} nmse {e}", t.name);
            }
            _ => {
                let (o, w) = (to_f32(o), to_f32(w));
                assert!(
                    o.iter().all(|v| v.is_finite()),
                    "{name}: {} has NaN/Inf",
                    t.name
                );
                let e = nmse(&o, &w);
                eprintln!("{name}: {} nmse {e:.3e} on {}", t.name, dev.description());
                assert!(e <= tol, "{name}: {} nmse {e} > {tol}", t.name);
            }
        }
    }
}

#[test]
fn binary_matches_reference() {
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[7, 5, 3]).unwrap();
    let b = g.input("b", DType::F32, &[7, 1, 3]).unwrap();
    let x = g.input("x", DType::F32, &[5, 7, 3]).unwrap();
    let xt = g.transpose(x).unwrap();
    let row = g.input("row", DType::F32, &[1, 5, 1]).unwrap();
    let den = g.input("den", DType::F32, &[7]).unwrap();
    let outs = [
        g.add(a, b).unwrap(),
        g.sub(xt, row).unwrap(),
        g.mul(a, xt).unwrap(),
        g.div(xt, den).unwrap(),
    ];
    for o in outs {
        g.set_output(o).unwrap();
    }
    let den_vals: Vec<f32> = (0..7).map(|i| 0.5 + i as f32 * 0.3).collect();
    let l = leaves(&g, 1, 1.0, &[(den, f32_bytes(&den_vals))]);
    check("binary", &g, &l, EXACT);
}

#[test]
fn unary_and_scale_match_reference() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[9, 13]).unwrap();
    let xt = g.transpose(x).unwrap();
    let outs = [
        g.scale(xt, -1.75).unwrap(),
        g.gelu(xt).unwrap(),
        g.gelu_erf(xt).unwrap(),
        g.silu(xt).unwrap(),
        g.relu(x).unwrap(),
    ];
    for o in outs {
        g.set_output(o).unwrap();
    }
    check("unary", &g, &leaves(&g, 2, 5.0, &[]), EXACT);
}

#[test]
fn softmax_matches_reference() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[37, 6, 2]).unwrap();
    let m = g.input("mask", DType::F32, &[37, 6]).unwrap();
    let y = g.input("y", DType::F32, &[300, 3]).unwrap();
    let yt = g.transpose(y).unwrap();
    let s1 = g.softmax(x, Some(m), 0.7).unwrap();
    let s2 = g.softmax(yt, None, 1.0).unwrap();
    g.set_output(s1).unwrap();
    g.set_output(s2).unwrap();
    check("softmax", &g, &leaves(&g, 3, 4.0, &[]), EXACT);
}

#[test]
fn norms_match_reference() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[300, 5]).unwrap();
    let y = g.input("y", DType::F32, &[4, 33]).unwrap();
    let yt = g.transpose(y).unwrap();
    let outs = [
        g.norm(x, 1e-5).unwrap(),
        g.rms_norm(x, 1e-6).unwrap(),
        g.norm(yt, 1e-5).unwrap(),
        g.rms_norm(yt, 1e-5).unwrap(),
    ];
    for o in outs {
        g.set_output(o).unwrap();
    }
    check("norm", &g, &leaves(&g, 4, 3.0, &[]), EXACT);
}

#[test]
fn rope_matches_reference() {
    for mode in [RopeMode::Normal, RopeMode::NeoX] {
        let mut g = Graph::new();
        let x = g.input("x", DType::F32, &[10, 5, 3, 2]).unwrap();
        // [head_dim 10, heads 3, tokens 5, batch 2] as a non-contiguous view.
        let xp = g.permute(x, [0, 2, 1, 3]).unwrap();
        let pos = g.input("pos", DType::I32, &[5]).unwrap();
        let p = RopeParams {
            n_dims: 8,
            mode,
            freq_base: 10000.0,
            freq_scale: 1.0,
        };
        let r = g.rope(xp, pos, p).unwrap();
        g.set_output(r).unwrap();
        let l = leaves(&g, 5, 1.0, &[(pos, i32_bytes(&[0, 1, 2, 7, 13]))]);
        check("rope", &g, &l, EXACT);
    }
}

#[test]
fn cpy_matches_reference() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[3, 7]).unwrap();
    let xt = g.transpose(x).unwrap();
    let h = g.input("h", DType::F16, &[5, 3]).unwrap();
    let q = g.input("q", DType::Q8_0, &[64, 3]).unwrap();
    let q4 = g.input("q4", DType::Q4_0, &[32, 2]).unwrap();
    let i = g.input("i", DType::I32, &[4, 3]).unwrap();
    let it = g.transpose(i).unwrap();
    let ht = g.transpose(h).unwrap();
    let outs = [
        g.cpy(xt, DType::F16).unwrap(),
        g.cpy(xt, DType::F32).unwrap(),
        g.cpy(ht, DType::F32).unwrap(),
        g.cpy(h, DType::F16).unwrap(),
        g.cpy(q, DType::F32).unwrap(),
        g.cpy(q4, DType::F16).unwrap(),
        g.cpy(it, DType::I32).unwrap(),
    ];
    for o in outs {
        g.set_output(o).unwrap();
    }
    let ivals: Vec<i32> = (0..12).map(|k| k * 7919 - 40000).collect();
    check(
        "cpy",
        &g,
        &leaves(&g, 6, 2.0, &[(i, i32_bytes(&ivals))]),
        EXACT,
    );
}

#[test]
fn quantizing_cpy_matches_reference() {
    let mut g = Graph::new();
    // 5 blocks (odd: the last invocation writes a lone block) from a transposed view.
    let x = g.input("x", DType::F32, &[5, 32]).unwrap();
    let xt = g.transpose(x).unwrap();
    let h = g.input("h", DType::F16, &[64, 3]).unwrap();
    let outs = [
        g.cpy(xt, DType::Q8_0).unwrap(),
        g.cpy(xt, DType::Q4_0).unwrap(),
        g.cpy(h, DType::Q8_0).unwrap(),
        g.cpy(h, DType::Q4_0).unwrap(),
    ];
    // Quantized cont of row-strided views: every other row of a q8_0 / q4_0 tensor.
    let q8 = g.input("q8", DType::Q8_0, &[64, 6]).unwrap();
    let q8v = g.view(q8, &[64, 3], &[34, 4 * 34], 0).unwrap();
    let q4 = g.input("q4", DType::Q4_0, &[32, 5]).unwrap();
    let q4v = g.view(q4, &[32, 2], &[18, 36], 18).unwrap();
    let conts = [g.cont(q8v).unwrap(), g.cont(q4v).unwrap()];
    for o in outs.into_iter().chain(conts) {
        g.set_output(o).unwrap();
    }
    check("quantize", &g, &leaves(&g, 14, 3.0, &[]), 1e-5);
}

#[test]
fn concat_matches_reference() {
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[5, 3, 2]).unwrap();
    let b0 = g.input("b0", DType::F32, &[2, 3, 2]).unwrap();
    let b1 = g.input("b1", DType::F32, &[3, 5, 2]).unwrap();
    let b1t = g.transpose(b1).unwrap();
    let b2 = g.input("b2", DType::F32, &[5, 3, 1]).unwrap();
    // An empty operand, and an empty result (nothing to dispatch).
    let e = g.input("e", DType::F32, &[5, 0, 2]).unwrap();
    let with_empty = g.concat(a, e, 1).unwrap();
    let z = g.input("z", DType::F32, &[0, 4]).unwrap();
    let empty = g.scale(z, 2.0).unwrap();
    g.set_output(with_empty).unwrap();
    g.set_output(empty).unwrap();
    let ia = g.input("ia", DType::I32, &[3]).unwrap();
    let ib = g.input("ib", DType::I32, &[2]).unwrap();
    let outs = [
        g.concat(a, b0, 0).unwrap(),
        g.concat(a, b1t, 1).unwrap(),
        g.concat(a, b2, 2).unwrap(),
        g.concat(ia, ib, 0).unwrap(),
    ];
    for o in outs {
        g.set_output(o).unwrap();
    }
    let l = leaves(
        &g,
        7,
        1.0,
        &[
            (ia, i32_bytes(&[1, -2, 3])),
            (ib, i32_bytes(&[i32::MAX, 5])),
        ],
    );
    check("concat", &g, &l, EXACT);
}

#[test]
fn row_reductions_match_reference() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[300, 7]).unwrap();
    let y = g.input("y", DType::F32, &[6, 11]).unwrap();
    let yt = g.transpose(y).unwrap();
    let outs = [
        g.sum_rows(x).unwrap(),
        g.mean(x).unwrap(),
        g.argmax(x).unwrap(),
        g.sum_rows(yt).unwrap(),
        g.argmax(yt).unwrap(),
    ];
    for o in outs {
        g.set_output(o).unwrap();
    }
    check("reduce", &g, &leaves(&g, 8, 1.0, &[]), EXACT);
}

#[test]
fn get_rows_matches_reference() {
    for dtype in [DType::F32, DType::F16, DType::Q8_0, DType::Q4_0] {
        let mut g = Graph::new();
        let table = g.weight("table", dtype, &[64, 10]).unwrap();
        let idx = g.input("idx", DType::I32, &[4]).unwrap();
        let rows = g.get_rows(table, idx).unwrap();
        let t3 = g.weight("t3", dtype, &[32, 5, 2]).unwrap();
        let idx2 = g.input("idx2", DType::I32, &[3, 2]).unwrap();
        let rows2 = g.get_rows(t3, idx2).unwrap();
        g.set_output(rows).unwrap();
        g.set_output(rows2).unwrap();
        let l = leaves(
            &g,
            9,
            1.0,
            &[
                (idx, i32_bytes(&[9, 0, 3, 3])),
                (idx2, i32_bytes(&[4, 0, 2, 1, 1, 3])),
            ],
        );
        check(&format!("get_rows {dtype:?}"), &g, &l, EXACT);
    }
}

#[test]
fn matmul_f32_matches_reference() {
    let mut g = Graph::new();
    let w = g.weight("w", DType::F32, &[67, 70]).unwrap();
    let x = g.input("x", DType::F32, &[67, 19]).unwrap();
    let y = g.matmul(w, x).unwrap();
    let xv = g.input("xv", DType::F32, &[67, 3]).unwrap();
    let yv = g.matmul(w, xv).unwrap();
    g.set_output(yv).unwrap();
    // Batched with broadcast weights and a transposed (non-contiguous) activation.
    let wb = g.weight("wb", DType::F32, &[20, 9, 2]).unwrap();
    let xb = g.input("xb", DType::F32, &[5, 20, 4]).unwrap();
    let xbt = g.transpose(xb).unwrap();
    let yb = g.matmul(wb, xbt).unwrap();
    g.set_output(y).unwrap();
    g.set_output(yb).unwrap();
    check("matmul f32", &g, &leaves(&g, 10, 1.0, &[]), EXACT);
}

#[test]
fn matmul_f16_and_quantized_match_reference() {
    // 5 columns run as matrix-vector products, 11 through the tiled kernel.
    for dtype in [DType::F16, DType::Q8_0, DType::Q4_0] {
        for n in [5, 11] {
            let mut g = Graph::new();
            let w = g.weight("w", dtype, &[3 * QK, 70]).unwrap();
            let x = g.input("x", DType::F32, &[3 * QK, n]).unwrap();
            let y = g.matmul(w, x).unwrap();
            g.set_output(y).unwrap();
            let name = format!("matmul {dtype:?} n={n}");
            check(&name, &g, &leaves(&g, 11, 1.0, &[]), 5e-4);
        }
    }
}

#[test]
fn operands_sharing_memory_match_reference() {
    // x * x, and attention-style views into one fused tensor: the operands' byte spans
    // overlap, so they are bound once and b is read through a's binding.
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[9, 4]).unwrap();
    let sq = g.mul(x, x).unwrap();
    let qk = g.input("qk", DType::F32, &[16, 6]).unwrap();
    let q = g.view(qk, &[8, 6], &[4, 64], 0).unwrap();
    let k = g.view(qk, &[8, 6], &[4, 64], 32).unwrap();
    let kq = g.matmul(k, q).unwrap();
    let mask_src = g.input("ms", DType::F32, &[6, 12]).unwrap();
    let sm_in = g.view(mask_src, &[6, 6], &[4, 48], 0).unwrap();
    let sm_mask = g.view(mask_src, &[6, 6], &[4, 48], 24).unwrap();
    let sm = g.softmax(sm_in, Some(sm_mask), 0.5).unwrap();
    let cat = g.concat(x, x, 1).unwrap();
    for o in [sq, kq, sm, cat] {
        g.set_output(o).unwrap();
    }
    check("shared", &g, &leaves(&g, 12, 1.0, &[]), EXACT);
}

#[test]
fn unsupported_nodes_say_why() {
    let Some(dev) = gpu() else { return };
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[64, 2]).unwrap();
    let q = g.cpy(x, DType::Q8_0).unwrap();
    assert!(dev.supports_op(&g, q).is_yes());
    let big = g.weight("big", DType::F32, &[1 << 20, 2]).unwrap();
    let v = g.input("v", DType::F32, &[1 << 20, 1]).unwrap();
    let mm = g.matmul(big, v).unwrap();
    assert!(dev.supports_op(&g, mm).is_yes());
    assert!(dev.offload_op(&g, mm));
    let small = g.matmul(x, x).unwrap();
    assert!(!dev.offload_op(&g, small));
}

#[test]
fn buffers_check_limits_and_ranges() {
    let Some(dev) = gpu() else { return };
    let bt = dev.buffer_type();
    assert!(bt.alignment() >= 4);
    assert!(matches!(
        bt.alloc(bt.max_size() + 1),
        Err(Error::AllocTooLarge { .. })
    ));
    let empty = bt.alloc(0).unwrap();
    assert_eq!(empty.size(), 0);
    assert!(block_on(empty.read(0, 0)).unwrap().is_empty());
    assert!(matches!(
        block_on(empty.read(0, 1)),
        Err(Error::OutOfBounds(_))
    ));

    let buf = bt.alloc(23).unwrap();
    buf.clear(0x11).unwrap();
    buf.write(3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    buf.write(14, &[0xee]).unwrap();
    buf.memset(18, 5, 0x77).unwrap();
    let mut want = vec![0x11u8; 23];
    want[3..13].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    want[14] = 0xee;
    want[18..23].fill(0x77);
    assert_eq!(block_on(buf.read(0, 23)).unwrap(), want);
    assert_eq!(block_on(buf.read(5, 3)).unwrap(), want[5..8]);
    assert!(matches!(buf.write(20, &[0; 4]), Err(Error::OutOfBounds(_))));
    assert!(matches!(
        block_on(buf.read(20, 4)),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(
        buf.memset(usize::MAX, 2, 0),
        Err(Error::OutOfBounds(_))
    ));

    buf.memset(1, 21, 0).unwrap();
    want[1..22].fill(0);
    assert_eq!(block_on(buf.read(0, 23)).unwrap(), want);
    buf.memset(1, 21, 0).unwrap();
    buf.write(3, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    want[3..13].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    let dst = bt.alloc(16).unwrap();
    dst.clear(0).unwrap();
    assert!(dst.copy_from(&buf, 4, 8, 8).unwrap());
    assert_eq!(block_on(dst.read(8, 8)).unwrap(), want[4..12]);
    // Unaligned copies fall back to the host (Ok(false)); out-of-range ones are errors.
    assert!(!dst.copy_from(&buf, 1, 0, 3).unwrap());
    assert!(dst.copy_from(&buf, 0, 12, 8).is_err());
}

#[test]
fn events_and_smoke_model_run() {
    let Some(dev) = gpu() else { return };
    let a: Vec<f32> = (0..1001).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..1001).map(|i| 0.5 * i as f32).collect();
    let sum = block_on(webtensor::model::smoke::vector_add(dev.clone(), &a, &b)).unwrap();
    assert!(sum.iter().enumerate().all(|(i, &s)| s == 1.5 * i as f32));
    let backend: Rc<Backend> = dev.create_backend().unwrap();
    let ev = backend.record_event().expect("WebGPU records events");
    block_on(ev.wait()).unwrap();
    block_on(ev.wait()).unwrap();
    block_on(backend.synchronize()).unwrap();
}

#[test]
fn registry_lists_webgpu_after_cpu() {
    let reg = block_on(webtensor::backends::registry());
    let names: Vec<&str> = reg.backend_regs().iter().map(|r| r.name()).collect();
    assert_eq!(names, ["CPU", "WebGPU"]);
    let webgpu = &reg.backend_regs()[1];
    match webgpu.devices().first() {
        Some(d) => {
            assert_eq!(d.name(), "WebGPU");
            let props = d.properties();
            for key in [
                "name",
                "backend",
                "maxStorageBufferBindingSize",
                "shader-f16",
            ] {
                assert!(props.iter().any(|(k, _)| k == key), "missing {key}");
            }
        }
        None => assert!(webgpu.unavailable_reason().is_some()),
    }
}

/// Rough matmul timings (compute + synchronize only) on the adapter at hand. Software
/// adapters say little about GPUs; this is for comparing kernels on one machine.
/// `cargo test --release --test webgpu matmul_timing -- --ignored --nocapture`
#[test]
#[ignore]
fn matmul_timing() {
    use webtensor::backend::TensorMemory;
    let Some(dev) = gpu() else { return };
    let backend = dev.clone().create_backend().unwrap();
    for (dtype, m, k, n) in [
        (DType::F32, 256, 256, 256),
        (DType::Q8_0, 256, 256, 256),
        (DType::F32, 2048, 1024, 1),
        (DType::Q8_0, 2048, 1024, 1),
        (DType::Q4_0, 2048, 1024, 1),
    ] {
        let mut g = Graph::new();
        let w = g.weight("w", dtype, &[k, m]).unwrap();
        let x = g.input("x", DType::F32, &[k, n]).unwrap();
        let y = g.matmul(w, x).unwrap();
        g.set_output(y).unwrap();
        let l = leaves(&g, 13, 1.0, &[]);
        let bt = dev.buffer_type();
        let align = bt.alignment();
        let mut mem = TensorMemory::new();
        let mut off = 0;
        let mut places = Vec::new();
        for (id, t) in g.iter() {
            places.push((id, off));
            off += t.nbytes().div_ceil(align) * align;
        }
        let buf = bt.alloc(off).unwrap();
        for (id, o) in places {
            mem.place(&g, id, buf.clone(), o).unwrap();
            if let Some(data) = l.get(&id) {
                buf.write(o, data).unwrap();
            }
        }
        let nodes = g.compute_nodes();
        backend.compute(&g, &nodes, &mem).unwrap();
        block_on(backend.synchronize()).unwrap();
        let reps = 5;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            backend.compute(&g, &nodes, &mem).unwrap();
        }
        block_on(backend.synchronize()).unwrap();
        let s = t0.elapsed().as_secs_f64() / reps as f64;
        eprintln!(
            "matmul {dtype:?} m={m} k={k} n={n}: {:.2} ms, {:.2} GFLOP/s",
            s * 1e3,
            2.0 * (m * k * n) as f64 / s / 1e9
        );
    }
}

#[test]
fn destroyed_device_fails_cleanly() {
    let reg = block_on(WebGpuReg::new());
    let Some(dev) = reg.device() else { return };
    let backend = Backend::new(dev.clone()).unwrap();
    let buf = dev.buffer_type().alloc(64).unwrap();
    buf.write(0, &[1; 64]).unwrap();
    dev.destroy();
    assert!(matches!(buf.write(0, &[2; 8]), Err(Error::Device { .. })));
    assert!(matches!(
        block_on(buf.read(0, 8)),
        Err(Error::Device { .. })
    ));
    assert!(matches!(
        dev.buffer_type().alloc(16),
        Err(Error::Device { .. })
    ));
    assert!(matches!(
        block_on(backend.synchronize()),
        Err(Error::Device { .. })
    ));
    assert!(Backend::new(dev.clone()).is_err());
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[4]).unwrap();
    let y = g.relu(x).unwrap();
    g.set_output(y).unwrap();
    let l = leaves(&g, 15, 1.0, &[]);
    assert!(block_on(run_graph(&backend, &g, &l, 0)).is_err());
}

/// Runs the single compute node of `g` with its output placed over its first operand (as the
/// scheduler does for in-place ops) and returns the output, or the compute error.
fn run_in_place(
    dev: &Rc<dyn Device>,
    g: &Graph,
    l: &HashMap<TensorId, Vec<u8>>,
) -> webtensor::Result<Vec<u8>> {
    use webtensor::backend::TensorMemory;
    let node = *g.compute_nodes().last().unwrap();
    let src0 = g.storage_of(g.tensor(node).src[0]).0;
    let bt = dev.buffer_type();
    let align = bt.alignment();
    let mut mem = TensorMemory::new();
    let mut off = align;
    let mut places = HashMap::new();
    for (id, t) in g.iter().filter(|(id, t)| !t.is_view() && *id != node) {
        places.insert(id, off);
        off += (t.nbytes() + GUARD).div_ceil(align) * align;
    }
    places.insert(node, places[&src0]);
    let buf = bt.alloc(off).unwrap();
    for (&id, &o) in &places {
        mem.place(g, id, buf.clone(), o).unwrap();
    }
    for (id, data) in l {
        buf.write(places[id], data).unwrap();
    }
    let backend = dev.clone().create_backend().unwrap();
    backend.compute(g, &g.compute_nodes(), &mem)?;
    block_on(backend.synchronize())?;
    block_on(buf.read(places[&node], g.tensor(node).nbytes()))
}

#[test]
fn in_place_matches_reference() {
    let reg = block_on(WebGpuReg::new());
    let Some(gpu) = reg.device() else { return };
    let dev: Rc<dyn Device> = gpu.clone();
    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Reference));
    type Build = fn(&mut Graph, TensorId, TensorId) -> TensorId;
    let cases: [(&str, Build, bool); 8] = [
        ("add", |g, x, b| g.add(x, b).unwrap(), true),
        ("mul x x", |g, x, _| g.mul(x, x).unwrap(), true),
        ("silu", |g, x, _| g.silu(x).unwrap(), true),
        ("scale", |g, x, _| g.scale(x, 3.0).unwrap(), true),
        (
            "softmax",
            |g, x, b| g.softmax(x, Some(b), 0.5).unwrap(),
            true,
        ),
        ("rms_norm", |g, x, _| g.rms_norm(x, 1e-5).unwrap(), true),
        ("norm", |g, x, _| g.norm(x, 1e-5).unwrap(), true),
        ("concat", |g, x, b| g.concat(x, b, 2).unwrap(), false),
    ];
    for (name, build, ok) in cases {
        let mut g = Graph::new();
        let x = g.input("x", DType::F32, &[300, 5]).unwrap();
        let b = g.input("b", DType::F32, &[300, 5]).unwrap();
        let y = build(&mut g, x, b);
        g.set_output(y).unwrap();
        assert_eq!(gpu.computes_in_place(&g, y), ok, "{name}");
        if !ok {
            continue;
        }
        let l = leaves(&g, 16, 2.0, &[]);
        let want = block_on(run_graph(
            &cpu.clone().create_backend().unwrap(),
            &g,
            &l,
            GUARD,
        ))
        .unwrap();
        let got = run_in_place(&dev, &g, &l).unwrap();
        let e = nmse(&to_f32(&got), &to_f32(&want[0]));
        assert!(e <= EXACT, "{name} in place: nmse {e}");
    }
    // RoPE in place (each invocation owns a pair), and an op that cannot be: refused.
    for mode in [RopeMode::Normal, RopeMode::NeoX] {
        let mut g = Graph::new();
        let x = g.input("x", DType::F32, &[10, 2, 3]).unwrap();
        let pos = g.input("pos", DType::I32, &[3]).unwrap();
        let p = RopeParams {
            n_dims: 6,
            mode,
            freq_base: 10000.0,
            freq_scale: 1.0,
        };
        let r = g.rope(x, pos, p).unwrap();
        g.set_output(r).unwrap();
        assert!(gpu.computes_in_place(&g, r));
        let l = leaves(&g, 17, 1.0, &[(pos, i32_bytes(&[0, 3, 9]))]);
        let cpu_backend = cpu.clone().create_backend().unwrap();
        let want = block_on(run_graph(&cpu_backend, &g, &l, GUARD)).unwrap();
        let got = run_in_place(&dev, &g, &l).unwrap();
        let e = nmse(&to_f32(&got), &to_f32(&want[0]));
        assert!(e <= EXACT, "rope {mode:?} in place: nmse {e}");
    }
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[8, 3]).unwrap();
    let b = g.input("b", DType::F32, &[8, 3]).unwrap();
    let c = g.concat(x, b, 1).unwrap();
    g.set_output(c).unwrap();
    let l = leaves(&g, 18, 1.0, &[]);
    assert!(matches!(
        run_in_place(&dev, &g, &l),
        Err(Error::Unsupported { .. })
    ));
}
