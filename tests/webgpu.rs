//! The WebGPU device itself (natively: Mesa lavapipe): buffer limits and ranges, offload
//! decisions, which ops run in place, events, registry order and a destroyed device. Its ops
//! are checked by the op suite (tests/ops.rs). Without an adapter each test prints why and
//! passes, unless `WEBTENSOR_REQUIRE_WEBGPU=1`.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::{run_graph, run_graph_aliased, Backend, BackendReg, Device};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::backends::webgpu::{set_matmul_kernels, MatmulKernels, WebGpuDevice, WebGpuReg};
use webtensor::graph::{DType, Graph, RopeMode, RopeParams};
use webtensor::testing::{webgpu_required, CaseBuilder, GUARD_BYTES, REQUIRE_WEBGPU_ENV};
use webtensor::Error;

/// The WebGPU device, or `None` (with the reason printed) where none is expected.
fn gpu() -> Option<Rc<WebGpuDevice>> {
    let reg = block_on(WebGpuReg::new());
    let dev = reg.device();
    if dev.is_none() {
        let why = reg.unavailable_reason().unwrap_or_default();
        assert!(
            !webgpu_required(),
            "{REQUIRE_WEBGPU_ENV}=1 but no WebGPU device: {why}"
        );
        eprintln!("skipping: no WebGPU device ({why})");
    }
    dev
}

/// The op suite's matmul cases with each matmul kernel forced on every shape (the shape
/// rule picks one per case; this runs the others on the same cases).
#[test]
fn every_matmul_kernel_passes_every_matmul_case() {
    let Some(dev) = gpu() else { return };
    for sel in [
        MatmulKernels::Tiled,
        MatmulKernels::Small,
        MatmulKernels::Base,
        MatmulKernels::Auto,
    ] {
        set_matmul_kernels(sel);
        let report = block_on(webtensor::testing::run_suite(
            dev.clone(),
            Rc::new(CpuDevice::new(KernelSet::Reference)),
            Some("matmul"),
        ));
        set_matmul_kernels(MatmulKernels::Auto);
        assert!(report.passed >= 60, "{sel:?}: {report}");
        if let Err(e) = report.check() {
            panic!("{sel:?}: {e}");
        }
    }
}

/// Calibration measures the adapter's per-dispatch and per-submission cost (a chain of tiny
/// kernels against a single one); the CPU has neither.
#[test]
fn calibration_measures_dispatch_and_submission_costs() {
    let Some(dev) = gpu() else { return };
    let devices: Vec<Rc<dyn Device>> = vec![dev, Rc::new(CpuDevice::new(KernelSet::Fast))];
    let m = block_on(webtensor::backend::sched::CostModel::calibrate(&devices)).unwrap();
    let (g, c) = (&m.devices[0], &m.devices[1]);
    println!("WebGPU: {g:?}\nCPU: {c:?}");
    for x in [g.op_overhead_s, g.submit_overhead_s, g.transfer_overhead_s] {
        assert!(x > 0.0 && x < 1.0, "{g:?}");
    }
    assert_eq!(c.submit_overhead_s, 0.0, "{c:?}");
    assert!(g.submit_overhead_s > c.submit_overhead_s);
}

#[test]
fn large_matmuls_are_offloaded_small_ones_not() {
    let Some(dev) = gpu() else { return };
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[64, 2]).unwrap();
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
    let backend: Rc<Backend> = Backend::new(dev.clone()).unwrap();
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
        None => {
            let why = webgpu.unavailable_reason();
            assert!(why.is_some());
            assert!(!webgpu_required(), "{REQUIRE_WEBGPU_ENV}=1: {why:?}");
        }
    }
}

/// Element-wise and row ops run in place (the suite's `_inplace` cases check the results;
/// this checks they are not skipped); an op whose output outgrows its operand is refused,
/// and running it in place anyway is an error, not a wrong answer.
#[test]
fn in_place_ops_are_the_expected_ones() {
    let Some(dev) = gpu() else { return };
    type Build = fn(&mut CaseBuilder) -> webtensor::Result<()>;
    let in_place: [(&str, Build); 8] = [
        ("add", |b| {
            let (x, y) = (
                b.input(DType::F32, &[300, 5])?,
                b.input(DType::F32, &[300, 5])?,
            );
            let z = b.g.add(x, y)?;
            b.output(z)
        }),
        ("mul x x", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.mul(x, x)?;
            b.output(z)
        }),
        ("silu", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.silu(x)?;
            b.output(z)
        }),
        ("scale", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.scale(x, 3.0)?;
            b.output(z)
        }),
        ("softmax", |b| {
            let (x, m) = (
                b.input(DType::F32, &[300, 5])?,
                b.input(DType::F32, &[300, 5])?,
            );
            let z = b.g.softmax(x, Some(m), 0.5)?;
            b.output(z)
        }),
        ("rms_norm", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.rms_norm(x, 1e-5)?;
            b.output(z)
        }),
        ("norm", |b| {
            let x = b.input(DType::F32, &[300, 5])?;
            let z = b.g.norm(x, 1e-5)?;
            b.output(z)
        }),
        ("rope", |b| {
            let x = b.input(DType::F32, &[10, 2, 3])?;
            let pos = b.input_i32(&[3], &[0, 3, 9])?;
            let params = RopeParams {
                n_dims: 6,
                mode: RopeMode::NeoX,
                freq_base: 10000.0,
                freq_scale: 1.0,
            };
            let z = b.g.rope(x, pos, params)?;
            b.output(z)
        }),
    ];
    for (name, build) in in_place {
        let mut b = CaseBuilder::new(1);
        build(&mut b).unwrap();
        let out = b.g.outputs()[0];
        assert!(
            dev.supports_inplace(&b.g, out),
            "{name} is not run in place"
        );
    }

    let mut b = CaseBuilder::new(2);
    let x = b.input(DType::F32, &[8, 3]).unwrap();
    let y = b.input(DType::F32, &[8, 3]).unwrap();
    let c = b.g.concat(x, y, 1).unwrap();
    b.output(c).unwrap();
    assert!(!dev.supports_inplace(&b.g, c));
    let backend = Backend::new(dev.clone()).unwrap();
    let r = block_on(run_graph_aliased(
        &backend,
        &b.g,
        &b.leaves,
        GUARD_BYTES,
        &[(c, x)],
    ));
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
}

#[test]
fn destroyed_device_fails_cleanly() {
    let Some(dev) = gpu() else { return };
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
    let mut b = CaseBuilder::new(3);
    let x = b.input(DType::F32, &[4]).unwrap();
    let y = b.g.relu(x).unwrap();
    b.output(y).unwrap();
    assert!(block_on(run_graph(&backend, &b.g, &b.leaves, 0)).is_err());
}
