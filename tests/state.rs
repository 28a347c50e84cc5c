//! States: tensors kept on one device across runs, written in place by `set_rows` and read by
//! later runs (the engine feature a decoder's KV cache is made of), on the CPU and on WebGPU
//! (natively: lavapipe; skipped without an adapter unless `WEBTENSOR_REQUIRE_WEBGPU=1`).
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;

use pollster::block_on;
use webtensor::graph::DType;
use webtensor::runtime::{DeviceChoice, Program, Runtime, State};
use webtensor::testing::webgpu_required;
use webtensor::Error;

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The runtimes to test on: the CPU, and WebGPU (device 0 of its runtime) when there is one.
fn runtimes() -> Vec<(Runtime, usize)> {
    let mut out = vec![(
        block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap(),
        0,
    )];
    match block_on(webtensor::create_runtime(DeviceChoice::WebGpu, false)) {
        Ok(rt) => out.push((rt, 0)),
        Err(e) => {
            assert!(!webgpu_required(), "WebGPU required but: {e}");
            eprintln!("skipping WebGPU: {e}");
        }
    }
    out
}

/// `sum += x`, the sum a state of 4 values: one program, run again and again.
fn running_sum(s: &State) -> Program {
    let mut p = Program::new();
    let st = p.state(s).unwrap();
    let g = p.graph_mut();
    let x = g.input("x", DType::F32, &[4, 1]).unwrap();
    let row = g.input("row", DType::I32, &[1]).unwrap();
    let y = g.add(st, x).unwrap();
    // The write itself is the output: it is the state's memory, read after the run.
    let w = g.set_rows(st, y, row).unwrap();
    g.set_name(w, "sum").unwrap();
    g.set_output(w).unwrap();
    p
}

#[test]
fn a_running_sum_over_runs() {
    for (rt, dev) in runtimes() {
        let s = rt.create_state("sum", DType::F32, &[4, 1], dev).unwrap();
        let p = running_sum(&s);
        let mut want = [0.0f32; 4];
        for step in 1..=5 {
            let x = [step as f32, -1.0, 0.5 * step as f32, 100.0];
            for (w, v) in want.iter_mut().zip(x) {
                *w += v;
            }
            let inputs = HashMap::from([
                ("x".to_string(), bytes(&x)),
                ("row".to_string(), i32s(&[0])),
            ]);
            let out = block_on(rt.run(&p, &inputs)).unwrap();
            assert_eq!(f32s(&out[0].2), want, "{} step {step}", s.device_name());
        }
        assert_eq!(f32s(&block_on(s.read()).unwrap()), want);
        // One session, and the state is never copied per run.
        assert_eq!(rt.cached_sessions(), 1);
        assert_eq!(rt.copy_stats().per_run_bytes, 0, "{}", s.device_name());
        let plan = rt.explain(&p).unwrap();
        assert!(
            plan.contains(&format!(
                "state: sum f32 [4] on {} (16 B, kept across runs, 1 in-place write(s))",
                s.device_name()
            )),
            "{plan}"
        );
        assert!(plan.contains("states 16 B"), "{plan}");
        // Zeroed, it starts again.
        s.zero().unwrap();
        let inputs = HashMap::from([
            ("x".to_string(), bytes(&[1.0; 4])),
            ("row".to_string(), i32s(&[0])),
        ]);
        let out = block_on(rt.run(&p, &inputs)).unwrap();
        assert_eq!(f32s(&out[0].2), [1.0; 4]);
    }
}

/// A cache of 8 rows written one row a run at a position given as an input, read over the
/// filled rows through a view: what a KV cache does.
#[test]
fn rows_written_at_positions_and_read_by_later_runs() {
    for (rt, dev) in runtimes() {
        let s = rt.create_state("cache", DType::F32, &[3, 8], dev).unwrap();
        let mut p = Program::new();
        let st = p.state(&s).unwrap();
        let g = p.graph_mut();
        let x = g.input("x", DType::F32, &[3, 1]).unwrap();
        let pos = g.input("pos", DType::I32, &[1]).unwrap();
        let w = g.set_rows(st, x, pos).unwrap();
        // Sum over every row (unwritten rows are 0): a view of the written cache.
        let all = g.view(w, &[3, 8], &[4, 12], 0).unwrap();
        let t = g.transpose(all).unwrap();
        let t = g.cont(t).unwrap();
        let sums = g.sum_rows(t).unwrap();
        g.set_name(sums, "sums").unwrap();
        g.set_output(sums).unwrap();
        let mut cache = [[0.0f32; 3]; 8];
        for (step, &at) in [0usize, 1, 2, 5, 1].iter().enumerate() {
            let row = [step as f32 + 1.0, 10.0 * at as f32, -2.0];
            cache[at] = row;
            let inputs = HashMap::from([
                ("x".to_string(), bytes(&row)),
                ("pos".to_string(), i32s(&[at as i32])),
            ]);
            let out = block_on(rt.run(&p, &inputs)).unwrap();
            let want: Vec<f32> = (0..3).map(|c| cache.iter().map(|r| r[c]).sum()).collect();
            assert_eq!(f32s(&out[0].2), want, "{} step {step}", s.device_name());
        }
        let flat: Vec<f32> = cache.iter().flatten().copied().collect();
        assert_eq!(f32s(&block_on(s.read()).unwrap()), flat);
        assert_eq!(rt.copy_stats().per_run_bytes, 0);
    }
}

/// A program that only writes a state (a prompt chunk whose logits nobody reads) has no
/// output and runs; the next run, and `State::read`, see its rows. A graph that writes no
/// state and has no output is still an error.
#[test]
fn a_program_that_only_writes_a_state_runs_without_an_output() {
    for (rt, dev) in runtimes() {
        let s = rt.create_state("cache", DType::F32, &[2, 4], dev).unwrap();
        let mut p = Program::new();
        let st = p.state(&s).unwrap();
        let g = p.graph_mut();
        let x = g.input("x", DType::F32, &[2, 1]).unwrap();
        let pos = g.input("pos", DType::I32, &[1]).unwrap();
        let y = g.scale(x, 2.0).unwrap();
        g.set_rows(st, y, pos).unwrap();
        for (at, v) in [(1, 3.0f32), (3, -1.5)] {
            let inputs = HashMap::from([
                ("x".to_string(), bytes(&[v, v + 1.0])),
                ("pos".to_string(), i32s(&[at])),
            ]);
            let out = block_on(rt.run(&p, &inputs)).unwrap();
            assert!(out.is_empty(), "{}", s.device_name());
        }
        assert_eq!(
            f32s(&block_on(s.read()).unwrap()),
            [0.0, 0.0, 6.0, 8.0, 0.0, 0.0, -3.0, -1.0],
            "{}",
            s.device_name()
        );
        let mut q = Program::new();
        let x = q.graph_mut().input("x", DType::F32, &[2]).unwrap();
        q.graph_mut().relu(x).unwrap();
        let err = block_on(rt.run(&q, &HashMap::from([("x".to_string(), bytes(&[1.0, 2.0]))])))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no output"), "{err}");
    }
}

/// With a GPU and the CPU in one runtime, every op touching a state runs on the state's
/// device, whichever that is; the rest is placed as usual.
#[test]
fn ops_on_a_state_run_on_its_device() {
    let Ok(rt) = block_on(webtensor::create_runtime(DeviceChoice::WebGpu, false)) else {
        assert!(!webgpu_required());
        return;
    };
    let names = rt.device_names();
    for (dev, name) in names.iter().enumerate() {
        let s = rt.create_state("sum", DType::F32, &[4, 1], dev).unwrap();
        let p = running_sum(&s);
        let inputs = HashMap::from([
            ("x".to_string(), bytes(&[1.0, 2.0, 3.0, 4.0])),
            ("row".to_string(), i32s(&[0])),
        ]);
        for _ in 0..2 {
            block_on(rt.run(&p, &inputs)).unwrap();
        }
        assert_eq!(f32s(&block_on(s.read()).unwrap()), [2.0, 4.0, 6.0, 8.0]);
        let plan = rt.explain(&p).unwrap();
        let set_rows = plan
            .lines()
            .find(|l| l.contains(" setrows "))
            .unwrap_or_else(|| panic!("{plan}"));
        assert!(set_rows.ends_with("state"), "{plan}");
        assert!(plan.contains(&format!("on {name} (16 B")), "{plan}");
    }
}

#[test]
fn stale_reads_and_foreign_states_are_errors() {
    let rt = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let s = rt.create_state("s", DType::F32, &[4, 2], 0).unwrap();
    // Reading the state as it was before an in-place write.
    let mut p = Program::new();
    let st = p.state(&s).unwrap();
    let g = p.graph_mut();
    let x = g.input("x", DType::F32, &[4, 1]).unwrap();
    let pos = g.input("pos", DType::I32, &[1]).unwrap();
    let w = g.set_rows(st, x, pos).unwrap();
    let stale = g.scale(st, 2.0).unwrap();
    let y = g.add(stale, w).unwrap();
    g.set_output(y).unwrap();
    let inputs = HashMap::from([
        ("x".to_string(), bytes(&[1.0; 4])),
        ("pos".to_string(), i32s(&[0])),
    ]);
    let e = block_on(rt.run(&p, &inputs)).unwrap_err();
    assert!(
        matches!(&e, Error::Graph(m) if m.contains("reads state s as it was before")),
        "{e}"
    );
    // A state of another runtime.
    let other = block_on(webtensor::create_runtime(DeviceChoice::Cpu, false)).unwrap();
    let foreign = other.create_state("sum", DType::F32, &[4, 1], 0).unwrap();
    let p = running_sum(&foreign);
    let inputs = HashMap::from([
        ("x".to_string(), bytes(&[1.0; 4])),
        ("row".to_string(), i32s(&[0])),
    ]);
    let e = block_on(rt.run(&p, &inputs)).unwrap_err();
    assert!(e.to_string().contains("belongs to another runtime"), "{e}");
    // Bad states.
    assert!(rt.create_state("q", DType::Q8_0, &[32], 0).is_err());
    assert!(rt.create_state("d", DType::F32, &[4], 7).is_err());
    assert!(rt
        .create_state("big", DType::F32, &[1 << 20, 1 << 20, 1 << 20], 0)
        .is_err());
    // An index past the state's rows fails the run and leaves the state as it was.
    let s = rt.create_state("sum", DType::F32, &[4, 1], 0).unwrap();
    let p = running_sum(&s);
    let ok = HashMap::from([
        ("x".to_string(), bytes(&[1.0; 4])),
        ("row".to_string(), i32s(&[0])),
    ]);
    block_on(rt.run(&p, &ok)).unwrap();
    let bad = HashMap::from([
        ("x".to_string(), bytes(&[1.0; 4])),
        ("row".to_string(), i32s(&[3])),
    ]);
    assert!(block_on(rt.run(&p, &bad)).is_err());
    assert_eq!(f32s(&block_on(s.read()).unwrap()), [1.0; 4]);
}

/// A state write names rows with repeats and across batches: the last of two rows aimed at
/// one row wins, rows not named keep their values, on every device (WebGPU's in-place scatter
/// kernel against the CPU).
#[test]
fn state_writes_with_repeated_rows_agree_on_every_device() {
    let mut results = Vec::new();
    for (rt, dev) in runtimes() {
        let s = rt
            .create_state("cache", DType::F32, &[4, 6, 2], dev)
            .unwrap();
        let init: Vec<f32> = (0..48).map(|i| i as f32).collect();
        s.write(0, &bytes(&init)).unwrap();
        let mut p = Program::new();
        let st = p.state(&s).unwrap();
        let g = p.graph_mut();
        let x = g.input("x", DType::F32, &[4, 3, 2]).unwrap();
        let idx = g.input("idx", DType::I32, &[3]).unwrap();
        let w = g.set_rows(st, x, idx).unwrap();
        g.set_output(w).unwrap();
        let xs: Vec<f32> = (0..24).map(|i| 100.0 + i as f32).collect();
        let inputs = HashMap::from([
            ("x".to_string(), bytes(&xs)),
            ("idx".to_string(), i32s(&[2, 5, 2])),
        ]);
        let out = f32s(&block_on(rt.run(&p, &inputs)).unwrap()[0].2);
        // Row 2 of each batch is x's row 2 (the later of rows 0 and 2), row 5 x's row 1.
        for b in 0..2 {
            for c in 0..4 {
                assert_eq!(out[b * 24 + 2 * 4 + c], xs[b * 12 + 2 * 4 + c]);
                assert_eq!(out[b * 24 + 5 * 4 + c], xs[b * 12 + 4 + c]);
                assert_eq!(out[b * 24 + c], init[b * 24 + c]);
            }
        }
        results.push(out);
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}
