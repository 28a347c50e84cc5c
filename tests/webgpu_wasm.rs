//! The WebGPU device in a browser (headless Chromium: SwiftShader, no shader-f16, 256-byte
//! storage offsets) against the CPU reference, awaiting everything (nothing may block there).
//! Run: `cargo test --target wasm32-unknown-unknown --test webgpu_wasm` with
//! `wasm-bindgen-test-runner` as the runner and `--enable-unsafe-webgpu` in webdriver.json.
#![cfg(target_arch = "wasm32")]

use std::collections::HashMap;
use std::rc::Rc;

use wasm_bindgen_test::{console_log, wasm_bindgen_test, wasm_bindgen_test_configure};
use webtensor::backend::{run_graph, BackendReg, Device};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::backends::webgpu::WebGpuReg;
use webtensor::graph::{row_from_f32, DType, Graph, TensorId};

wasm_bindgen_test_configure!(run_in_browser);

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[wasm_bindgen_test]
async fn webgpu_matches_cpu_reference_in_browser() {
    let reg = WebGpuReg::new().await;
    let Some(dev) = reg.devices().into_iter().next() else {
        console_log!("skipping: {}", reg.unavailable_reason().unwrap_or_default());
        return;
    };
    console_log!("{}", dev.description());

    let sum = webtensor::model::smoke::vector_add(dev.clone(), &[1.0, 2.0, 3.0], &[0.5, 0.5, 0.5])
        .await
        .unwrap();
    assert_eq!(sum, [1.5, 2.5, 3.5]);

    let mut g = Graph::new();
    let wq = g.weight("wq", DType::Q8_0, &[64, 33]).unwrap();
    let wh = g.weight("wh", DType::F16, &[64, 33]).unwrap();
    let w4 = g.weight("w4", DType::Q4_0, &[64, 9]).unwrap();
    let x = g.input("x", DType::F32, &[64, 5]).unwrap();
    let bias = g.input("bias", DType::F32, &[33]).unwrap();
    let idx = g.input("idx", DType::I32, &[3]).unwrap();
    let y = g.matmul(wq, x).unwrap();
    let yh = g.matmul(wh, x).unwrap();
    let yb = g.add(y, bias).unwrap();
    let yt = g.transpose(yh).unwrap();
    let s = g.softmax(yb, None, 0.5).unwrap();
    let n = g.rms_norm(yt, 1e-5).unwrap();
    let h = g.cpy(n, DType::F16).unwrap();
    let back = g.cpy(h, DType::F32).unwrap();
    let rows = g.get_rows(w4, idx).unwrap();
    let am = g.argmax(s).unwrap();
    // x * x shares one binding (Dawn rejects aliased writable bindings); an f16 input of
    // 30 bytes exercises the byte-exact write path.
    let sq = g.mul(x, x).unwrap();
    let h_in = g.input("h", DType::F16, &[5, 3]).unwrap();
    let h32 = g.cpy(h_in, DType::F32).unwrap();
    // 12 columns: the tiled kernel (5 above run as matrix-vector products).
    let x12 = g.input("x12", DType::F32, &[64, 12]).unwrap();
    let y12 = g.matmul(wq, x12).unwrap();
    let xq = g.cpy(x, DType::Q4_0).unwrap();
    let xq32 = g.cpy(xq, DType::F32).unwrap();
    for o in [s, back, rows, sq, h32, xq32, y12, am] {
        g.set_output(o).unwrap();
    }
    for id in g.compute_nodes() {
        assert!(dev.supports_op(&g, id).is_yes(), "{}", g.tensor(id).name);
    }
    let mut leaves: HashMap<TensorId, Vec<u8>> = HashMap::new();
    let mut seed = 7u32;
    for (id, t) in g.iter() {
        if !t.op.is_noop() || t.is_view() {
            continue;
        }
        let vals: Vec<f32> = (0..t.numel())
            .map(|_| {
                seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (seed >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
            })
            .collect();
        let mut bytes = vec![0u8; t.nbytes()];
        let rb = t.dtype.row_bytes(t.ne[0]).unwrap();
        for (src, dst) in vals.chunks(t.ne[0]).zip(bytes.chunks_mut(rb)) {
            row_from_f32(t.dtype, src, dst);
        }
        leaves.insert(id, bytes);
    }
    leaves.insert(idx, bytemuck::cast_slice(&[8i32, 0, 3]).to_vec());

    let cpu: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Reference));
    let want = run_graph(&cpu.create_backend().unwrap(), &g, &leaves, 64)
        .await
        .unwrap();
    let got = run_graph(&dev.create_backend().unwrap(), &g, &leaves, 64)
        .await
        .unwrap();
    assert_eq!(want[7], got[7], "argmax");
    for k in 0..7 {
        let (w, o) = (f32s(&want[k]), f32s(&got[k]));
        let num: f64 = w
            .iter()
            .zip(&o)
            .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
            .sum();
        let den: f64 = w.iter().map(|a| (*a as f64).powi(2)).sum();
        console_log!("output {k}: nmse {:.3e}", num / den);
        assert!(num / den < 1e-5, "output {k}: nmse {}", num / den);
    }
}

/// `x * x` computed over `x` itself (as the scheduler places in-place ops): one binding for
/// all three, which Dawn's aliasing validation must accept.
#[wasm_bindgen_test]
async fn in_place_mul_in_browser() {
    use webtensor::backend::TensorMemory;
    let reg = WebGpuReg::new().await;
    let Some(dev) = reg.device() else {
        return;
    };
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[37, 3]).unwrap();
    let y = g.mul(x, x).unwrap();
    g.set_output(y).unwrap();
    assert!(dev.computes_in_place(&g, y));
    let vals: Vec<f32> = (0..111).map(|i| i as f32 * 0.25 - 9.0).collect();
    let buf = dev.buffer_type().alloc(1024).unwrap();
    let mut mem = TensorMemory::new();
    mem.place(&g, x, buf.clone(), 256).unwrap();
    mem.place(&g, y, buf.clone(), 256).unwrap();
    buf.write(256, bytemuck::cast_slice(&vals)).unwrap();
    let backend = webtensor::backend::Backend::new(dev.clone()).unwrap();
    backend.compute(&g, &g.compute_nodes(), &mem).unwrap();
    backend.synchronize().await.unwrap();
    let got = f32s(&buf.read(256, 444).await.unwrap());
    let want: Vec<f32> = vals.iter().map(|v| v * v).collect();
    assert_eq!(got, want);
}
