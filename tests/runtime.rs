//! The user-facing runtime: programs with weights, inputs and outputs by name, plan caching.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use pollster::block_on;
use webtensor::graph::DType;
use webtensor::runtime::{DeviceChoice, Program, Runtime};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn runs_by_name_and_reuses_the_plan() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    assert_eq!(rt.device_names(), ["CPU"]);
    let mut p = Program::new();
    let w = p
        .weight_f32("w", DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0])
        .unwrap();
    let x = p.graph_mut().input("x", DType::F32, &[2, 1]).unwrap();
    let y = p.graph_mut().matmul(w, x).unwrap();
    p.graph_mut().set_name(y, "y").unwrap();
    p.graph_mut().set_output(y).unwrap();
    let inputs = HashMap::from([("x".to_string(), bytes(&[1.0, 1.0]))]);
    let out = block_on(rt.run(&p, &inputs)).unwrap();
    assert_eq!(out[0].0, "y");
    assert_eq!(f32s(&out[0].2), vec![3.0, 7.0]);
    let out =
        block_on(rt.run(&p, &HashMap::from([("x".to_string(), bytes(&[2.0, 0.0]))]))).unwrap();
    assert_eq!(f32s(&out[0].2), vec![2.0, 6.0]);
    let plan = rt.explain(&p).unwrap();
    assert!(plan.contains("split 0 on CPU"), "{plan}");
    // The header says what the CPU is: its kernels, its threads and the build.
    let threads = webtensor::backends::cpu::Pool::available();
    let s = if threads == 1 { "" } else { "s" };
    assert!(plan.contains("device CPU: CPU ("), "{plan}");
    let build = webtensor::backends::threads::build_name();
    assert!(
        plan.contains(&format!("kernels, {threads} thread{s}, {build} build)")),
        "{plan}"
    );
}

/// An input read only through a view of it (a transpose here): the view shares the input's
/// memory (planning it as an input of its own used to fail: "x(view) is a view").
#[test]
fn an_input_read_through_a_view_runs() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let mut p = Program::new();
    let w = p
        .weight_f32("w", DType::F32, &[2, 2], &[1.0, 2.0, 3.0, 4.0])
        .unwrap();
    let g = p.graph_mut();
    let x = g.input("x", DType::F32, &[1, 2]).unwrap();
    let xt = g.transpose(x).unwrap();
    let y = g.matmul(w, xt).unwrap();
    g.set_output(y).unwrap();
    let inputs = HashMap::from([("x".to_string(), bytes(&[1.0, 2.0]))]);
    let out = block_on(rt.run(&p, &inputs)).unwrap();
    assert_eq!(f32s(&out[0].2), vec![5.0, 11.0]);
}

/// Sessions are cached by graph shape and weight values: a program built again the same way
/// reuses the first one's session; other weight values or another shape get their own, and
/// the least recently run is freed past the cache size.
#[test]
fn sessions_are_cached_by_shape_and_values() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let build = |w: [f32; 4], cols: usize| {
        let mut p = Program::new();
        let w = p.weight_f32("w", DType::F32, &[2, 2], &w).unwrap();
        let x = p.graph_mut().input("x", DType::F32, &[2, cols]).unwrap();
        let y = p.graph_mut().matmul(w, x).unwrap();
        p.graph_mut().set_output(y).unwrap();
        p
    };
    let run = |p: &Program, cols: usize| {
        let x = HashMap::from([("x".to_string(), bytes(&vec![1.0; 2 * cols]))]);
        f32s(&block_on(rt.run(p, &x)).unwrap()[0].2)
    };
    assert_eq!(run(&build([1.0, 2.0, 3.0, 4.0], 1), 1), [3.0, 7.0]);
    assert_eq!(run(&build([1.0, 2.0, 3.0, 4.0], 1), 1), [3.0, 7.0]);
    assert_eq!(
        rt.cached_sessions(),
        1,
        "the same graph and values planned twice"
    );
    assert_eq!(run(&build([0.0, 1.0, 0.0, 1.0], 1), 1), [1.0, 1.0]);
    assert_eq!(
        rt.cached_sessions(),
        2,
        "other weight values share a session"
    );
    assert_eq!(
        run(&build([1.0, 2.0, 3.0, 4.0], 2), 2),
        [3.0, 7.0, 3.0, 7.0]
    );
    assert_eq!(rt.cached_sessions(), 3);
    rt.set_cached_sessions(2);
    assert_eq!(rt.cached_sessions(), 2);
    // The oldest (the first program's) was freed; running it plans it again, correctly.
    assert_eq!(run(&build([1.0, 2.0, 3.0, 4.0], 1), 1), [3.0, 7.0]);
    assert_eq!(rt.cached_sessions(), 2);
    let mut p = build([1.0, 2.0, 3.0, 4.0], 1);
    run(&p, 1);
    let w = p
        .graph()
        .iter()
        .find(|(_, t)| t.name == "w")
        .map(|(id, _)| id)
        .unwrap();
    let y = p.graph_mut().scale(w, 2.0).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let out = block_on(rt.run(&p, &HashMap::from([("x".to_string(), bytes(&[1.0; 2]))])));
    assert_eq!(out.unwrap().len(), 2, "a changed graph is planned again");
}

#[test]
fn quantized_weights_from_f32() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Auto, false)).unwrap();
    let mut p = Program::new();
    let vals: Vec<f32> = (0..64).map(|i| i as f32 / 64.0).collect();
    let w = p.weight_f32("w", DType::Q8_0, &[32, 2], &vals).unwrap();
    let x = p.graph_mut().input("x", DType::F32, &[32]).unwrap();
    let y = p.graph_mut().matmul(w, x).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let out = block_on(rt.run(&p, &HashMap::from([("x".to_string(), bytes(&[1.0; 32]))]))).unwrap();
    let got = f32s(&out[0].2);
    let want = [
        vals[..32].iter().sum::<f32>(),
        vals[32..].iter().sum::<f32>(),
    ];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.01 * w.abs(), "{got:?} vs {want:?}");
    }
}

#[test]
fn bad_calls_are_clear_errors() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let mut p = Program::new();
    assert!(p
        .weight_f32("w", DType::F32, &[2, 2], &[1.0])
        .unwrap_err()
        .to_string()
        .contains("needs 4 values"));
    let x = p.graph_mut().input("x", DType::F32, &[2]).unwrap();
    let err = block_on(rt.run(&p, &HashMap::new()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no output"), "{err}");
    let y = p.graph_mut().relu(x).unwrap();
    p.graph_mut().set_output(y).unwrap();
    let err = block_on(rt.run(&p, &HashMap::from([("z".to_string(), vec![0; 8])])))
        .unwrap_err()
        .to_string();
    assert!(err.contains("no input named \"z\""), "{err}");
    let err = block_on(rt.run(&p, &HashMap::from([("x".to_string(), vec![0; 7])])))
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs 8 bytes"), "{err}");
    assert!("tpu".parse::<DeviceChoice>().is_err());
}

/// Weights stored once on a device and bound by programs of two shapes: both read the same
/// buffers (no weight memory in their plans), ops the device cannot run read a copy of the
/// weight made once (not per run) and shared by both, and a weight from another runtime or an
/// out-of-range source is refused.
#[test]
fn stored_weights_are_shared_by_programs() {
    use std::rc::Rc;
    use webtensor::backend::{Device, DeviceKind, RestrictedDevice};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::graph::OpKind;
    use webtensor::runtime::WeightSpec;

    let cpu = || -> Rc<dyn Device> { Rc::new(CpuDevice::new(KernelSet::Fast)) };
    // A "GPU" that cannot add: the bias, stored on it, is copied to the CPU for the add.
    let gpu: Rc<dyn Device> = Rc::new(RestrictedDevice::new(
        cpu(),
        "GPU",
        DeviceKind::Gpu,
        vec![OpKind::Add],
    ));
    let rt = block_on(Runtime::with_devices(vec![gpu, cpu()], false, vec![])).unwrap();
    let (w, b) = ([1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [10.0f32, 20.0]);
    // The weight's two rows lie apart in the source, the bias between them: the stored weight
    // joins its ranges in order (as a BERT layer's Q, K and V are stored as one).
    let mut src = bytes(&w[..3]);
    src.extend(bytes(&b));
    src.extend(bytes(&w[3..]));
    let specs = [
        WeightSpec {
            name: "w".into(),
            device: 0,
            dtype: DType::F32,
            ne: vec![3, 2],
            ranges: vec![0..12, 20..32],
            matrix_only: false,
        },
        WeightSpec {
            name: "b".into(),
            device: 0,
            dtype: DType::F32,
            ne: vec![2],
            ranges: std::iter::once(12..20).collect(),
            matrix_only: false,
        },
    ];
    let mut seen = Vec::new();
    let stored = rt
        .store_weights(&specs, &src, &mut |done, total| seen.push((done, total)))
        .unwrap();
    assert_eq!(seen.last(), Some(&(32, 32)));
    drop(src); // the programs read the device copies only

    let program = |cols: usize| {
        let mut p = Program::new();
        let wt = p.weight_stored("w", &stored[0]).unwrap();
        let bt = p.weight_stored("b", &stored[1]).unwrap();
        let x = p.graph_mut().input("x", DType::F32, &[3, cols]).unwrap();
        let y = p.graph_mut().matmul(wt, x).unwrap();
        let y = p.graph_mut().add(y, bt).unwrap();
        p.graph_mut().set_output(y).unwrap();
        p
    };
    let (p1, p2) = (program(1), program(2));
    let out = block_on(rt.run(&p1, &HashMap::from([("x".into(), bytes(&[1.0, 0.0, 1.0]))])));
    assert_eq!(f32s(&out.unwrap()[0].2), [14.0, 30.0]);
    let x2 = bytes(&[1.0, 1.0, 1.0, 0.0, 0.0, 2.0]);
    let out = block_on(rt.run(&p2, &HashMap::from([("x".into(), x2)]))).unwrap();
    assert_eq!(f32s(&out[0].2), [16.0, 35.0, 16.0, 32.0]);
    // The bias crossed to the CPU once, for the first program; the second reads that copy.
    let copied = rt.copy_stats();
    assert_eq!(copied.one_time_bytes, 8, "{copied:?}");
    block_on(rt.run(&p2, &HashMap::from([("x".into(), bytes(&[0.0; 6]))]))).unwrap();
    assert_eq!(rt.copy_stats().one_time_bytes, 8);
    assert_eq!(
        rt.copy_stats().per_run_bytes - copied.per_run_bytes,
        16,
        "only the product crosses per run"
    );
    for p in [&p1, &p2] {
        let plan = rt.explain(p).unwrap();
        assert!(plan.contains("GPU"), "{plan}");
        assert!(plan.contains("1 weight copies once (8 B)"), "{plan}");
        assert!(plan.contains("once: b (8 B) GPU -> CPU"), "{plan}");
        let mem: Vec<&str> = plan.lines().filter(|l| l.contains("weights ")).collect();
        assert_eq!(mem.len(), 2, "{plan}");
        for line in &mem {
            assert!(
                line.contains("weights 0 B,"),
                "weight memory planned: {plan}"
            );
        }
        assert!(mem[1].ends_with("weight copies kept 8 B"), "{plan}");
    }

    // Another runtime cannot run a program bound to these weights.
    let other = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let err = block_on(other.run(&p1, &HashMap::from([("x".into(), bytes(&[1.0; 3]))])));
    assert!(err.unwrap_err().to_string().contains("another runtime"));
    // A range outside the source, or one that does not fit the shape: refused.
    let short = [0u8; 16];
    assert!(rt
        .store_weights(&specs[..1], &short, &mut |_, _| {})
        .is_err());
    let mut wrong = specs[1].clone();
    wrong.ne = vec![3];
    assert!(rt
        .store_weights(&[wrong], &[0u8; 64], &mut |_, _| {})
        .is_err());
}

#[test]
fn weights_larger_than_a_devices_free_memory_are_refused_before_anything_is_read() {
    use std::rc::Rc;
    use webtensor::backend::{Device, DeviceKind, DeviceMemory, RestrictedDevice};
    use webtensor::backends::cpu::{CpuDevice, KernelSet};
    use webtensor::runtime::WeightSpec;

    // A CPU that says it has 1 KiB free of 4 KiB (as the CPU in wasm reports its heap).
    let small: Rc<dyn Device> = Rc::new(
        RestrictedDevice::new(
            Rc::new(CpuDevice::new(KernelSet::Fast)),
            "CPU",
            DeviceKind::Cpu,
            vec![],
        )
        .with_memory(DeviceMemory {
            free: 1024,
            total: 4096,
        }),
    );
    let rt = block_on(Runtime::with_devices(vec![small], false, vec![])).unwrap();
    let spec = |n: usize| WeightSpec {
        name: "w".into(),
        device: 0,
        dtype: DType::F32,
        ne: vec![n],
        ranges: std::iter::once(0..4 * n).collect(),
        matrix_only: false,
    };
    let src = vec![0u8; 4096];
    let mut read = 0;
    let err = rt
        .store_weights(&[spec(512)], &src, &mut |done, _| read = done)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("the weights need 2.0 KiB there, more than its 1.0 KiB free (of 4.0 KiB)"),
        "{err}"
    );
    assert_eq!(read, 0, "nothing is read before the check");
    // What fits is stored.
    rt.store_weights(&[spec(64)], &src, &mut |_, _| {}).unwrap();
}

/// Q8_0 / Q4_0 / Q5_0 matrices that the graphs read only as a matmul's weight or a get_rows table
/// are stored on the CPU as the int8 GEMM's panels, their only copy: a read gives the file's
/// bytes back, products and looked-up rows are the bytes the same weight stored as it is
/// gives (which packs a second copy on first use), a device without those kernels reads an
/// unpacked copy, and an op reading the weight any other way is an error, never garbage.
#[test]
fn matrix_weights_are_stored_as_int8_panels_alone() {
    use std::rc::Rc;
    use webtensor::backend::{Device, DeviceKind, RestrictedDevice};
    use webtensor::backends::cpu::{CpuBuffer, CpuDevice, KernelSet};
    use webtensor::graph::{row_from_f32, OpKind};
    use webtensor::runtime::WeightSpec;

    let cpu = || -> Rc<dyn Device> { Rc::new(CpuDevice::new(KernelSet::Fast)) };
    let (k, m) = (64, 6); // 6 rows: a group of 4 and a padded one
    for dtype in [DType::Q4_0, DType::Q8_0, DType::Q5_0] {
        // A "GPU" that cannot run get_rows keeps the weight (in CPU memory, packed): the
        // lookup reads a copy unpacked for the CPU.
        let gpu: Rc<dyn Device> = Rc::new(RestrictedDevice::new(
            cpu(),
            "GPU",
            DeviceKind::Gpu,
            vec![OpKind::GetRows],
        ));
        let rt = block_on(Runtime::with_devices(vec![cpu(), gpu], false, vec![])).unwrap();
        let rb = dtype.row_bytes(k).unwrap();
        let mut file = vec![0u8; m * rb];
        for (r, row) in file.chunks_mut(rb).enumerate() {
            let v: Vec<f32> = (0..k)
                .map(|i| ((i * 7 + r * 13) % 23) as f32 - 11.0)
                .collect();
            row_from_f32(dtype, &v, row).unwrap();
        }
        // Rows 0-2, 8 bytes of something else, rows 3-5: the store joins the ranges.
        let mut src = file[..3 * rb].to_vec();
        src.extend([0xffu8; 8]);
        src.extend(&file[3 * rb..]);
        let spec = |device: usize, matrix_only: bool| WeightSpec {
            name: "w".into(),
            device,
            dtype,
            ne: vec![k, m],
            ranges: vec![0..3 * rb, 3 * rb + 8..src.len()],
            matrix_only,
        };
        // Stored apart: each in buffers of its own.
        let stored: Vec<_> = [spec(0, true), spec(0, false), spec(1, true)]
            .into_iter()
            .map(|s| {
                rt.store_weights(&[s], &src, &mut |_, _| {})
                    .unwrap()
                    .remove(0)
            })
            .collect();
        for s in &stored {
            let (buf, off) = s.memory();
            assert_eq!(
                block_on(buf.read(off, s.nbytes())).unwrap(),
                file,
                "{dtype:?}"
            );
            // Parts of rows, and runs across them: only the rows touched are unpacked.
            for (lo, len) in [
                (0, 1),
                (rb / 2, rb + 3),
                (2 * rb + 1, 4 * rb - 1),
                (m * rb - 5, 5),
            ] {
                assert_eq!(
                    block_on(buf.read(off + lo, len)).unwrap(),
                    file[lo..lo + len],
                    "{dtype:?} bytes {lo}+{len}"
                );
            }
        }
        let run = |s: usize, cols: usize| {
            let mut p = Program::new();
            let w = p.weight_stored("w", &stored[s]).unwrap();
            let g = p.graph_mut();
            let x = g.input("x", DType::F32, &[k, cols]).unwrap();
            let idx = g.input("idx", DType::I32, &[2]).unwrap();
            let y = g.matmul(w, x).unwrap();
            let e = g.get_rows(w, idx).unwrap();
            g.set_output(y).unwrap();
            g.set_output(e).unwrap();
            let xs: Vec<f32> = (0..k * cols).map(|i| (i % 5) as f32 - 2.0).collect();
            let idx: Vec<u8> = [5i32, 0].iter().flat_map(|i| i.to_le_bytes()).collect();
            let inputs = HashMap::from([("x".into(), bytes(&xs)), ("idx".into(), idx)]);
            let out = block_on(rt.run(&p, &inputs)).unwrap();
            (out[0].2.clone(), out[1].2.clone())
        };
        for cols in [1, 3, 40] {
            let (packed, plain, on_gpu) = (run(0, cols), run(1, cols), run(2, cols));
            assert_eq!(packed, plain, "{dtype:?} {cols} columns");
            assert_eq!(on_gpu, plain, "{dtype:?} {cols} columns");
            assert!(f32s(&packed.1).iter().any(|&v| v != 0.0));
        }
        // Only the weight stored as it is got a second, packed copy.
        let packed_copy = |s: &webtensor::runtime::StoredWeight| {
            s.memory().0.downcast::<CpuBuffer>().unwrap().packed_bytes()
        };
        assert_eq!(packed_copy(&stored[0]), 0);
        assert!(packed_copy(&stored[1]) > 0);
        // Any other reader: refused with the reason.
        let mut p = Program::new();
        let w = p.weight_stored("w", &stored[0]).unwrap();
        let g = p.graph_mut();
        let part = g.view(w, &[k, 2], &[dtype.block_bytes(), rb], rb).unwrap();
        let x = g.input("x", DType::F32, &[k, 1]).unwrap();
        let y = g.matmul(part, x).unwrap();
        g.set_output(y).unwrap();
        let err = block_on(rt.run(&p, &HashMap::from([("x".into(), bytes(&vec![1.0; k]))])))
            .unwrap_err()
            .to_string();
        assert!(err.contains("stored as the int8 GEMM's panels"), "{err}");
        // A write that is not whole rows of it: refused.
        let (buf, off) = stored[0].memory();
        assert!(buf.write(off + 1, &file[..rb]).is_err());
    }
}
