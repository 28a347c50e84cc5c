//! The op conformance suite on every device of the registry (CPU fast kernels; WebGPU on
//! lavapipe, required when `WEBTENSOR_REQUIRE_WEBGPU=1`) against the CPU scalar reference,
//! plus proof that the harness catches wrong results, overruns, NaNs and unsupported ops.
#![cfg(not(target_arch = "wasm32"))]

use std::rc::Rc;

use webtensor::backend::{
    Backend, BackendImpl, BackendReg, BufferType, Device, DeviceCaps, DeviceKind, LocalBoxFuture,
    Registry, Support, TensorMemory,
};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::graph::{Graph, TensorId};
use webtensor::testing::{
    all_cases, run_suite, run_suite_on_registry, uncovered_ops, Outcome, SuiteOptions, SuiteReport,
};
use webtensor::Result;

fn reference() -> Rc<dyn Device> {
    Rc::new(CpuDevice::new(KernelSet::Reference))
}

fn suite(device: Rc<dyn Device>, filter: Option<&str>) -> SuiteReport {
    pollster::block_on(run_suite(device, reference(), filter))
}

#[test]
fn every_device_matches_reference() {
    let report = pollster::block_on(async {
        let reg = webtensor::backends::registry().await;
        run_suite_on_registry(&reg, &SuiteOptions::from_env()).await
    })
    .unwrap_or_else(|e| panic!("{e}"));
    println!("{report}");
    if let Err(e) = report.check() {
        panic!("{e}");
    }
}

#[test]
fn suite_covers_every_compute_op() {
    assert!(
        uncovered_ops().is_empty(),
        "ops without a case: {:?}",
        uncovered_ops()
    );
    let cases = all_cases();
    assert!(cases.len() >= OP_COUNT_FLOOR, "{} cases", cases.len());
    for op in webtensor::graph::OpKind::compute() {
        let n = cases.iter().filter(|c| c.op == op).count();
        println!("  {op:?}: {n} cases");
    }
}

const OP_COUNT_FLOOR: usize = 200;

/// What the fake device does wrong.
#[derive(Clone, Copy, PartialEq)]
enum Sabotage {
    /// Changes the first output value.
    Perturb,
    /// Writes one byte past the end of the computed node.
    Overrun,
    /// Writes a NaN as the first value.
    NaN,
    /// Says no to every op.
    Unsupported,
}

/// The CPU device with a deliberate defect, to prove the harness notices.
struct Faulty {
    inner: Rc<CpuDevice>,
    sabotage: Sabotage,
}

struct FaultyBackend {
    inner: Rc<Backend>,
    device: Rc<Faulty>,
}

impl Device for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }
    fn description(&self) -> String {
        "faulty CPU".into()
    }
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cpu
    }
    fn caps(&self) -> DeviceCaps {
        self.inner.caps()
    }
    fn buffer_type(&self) -> Rc<dyn BufferType> {
        self.inner.buffer_type()
    }
    fn supports_op(&self, graph: &Graph, node: TensorId) -> Support {
        if self.sabotage == Sabotage::Unsupported {
            return Support::No("this fake supports nothing".into());
        }
        self.inner.supports_op(graph, node)
    }
    fn supports_inplace(&self, graph: &Graph, node: TensorId) -> bool {
        self.inner.supports_inplace(graph, node)
    }
    fn backend_impl(self: Rc<Self>) -> Result<Box<dyn BackendImpl>> {
        Ok(Box::new(FaultyBackend {
            inner: Backend::new(self.inner.clone())?,
            device: self,
        }))
    }
}

impl BackendImpl for FaultyBackend {
    fn compute(&self, graph: &Graph, nodes: &[TensorId], mem: &TensorMemory) -> Result<()> {
        self.inner.compute(graph, nodes, mem)?;
        let Some(&last) = nodes.last() else {
            return Ok(());
        };
        let (buf, off) = mem.locate(graph, last)?;
        let n = graph.tensor(last).nbytes();
        match self.device.sabotage {
            Sabotage::Perturb => {
                let v = pollster::block_on(buf.read(off, 4))?;
                let mut x = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
                x += 1000.0;
                buf.write(off, &x.to_le_bytes())
            }
            Sabotage::Overrun => buf.memset(off + n, 1, 0),
            Sabotage::NaN => buf.write(off, &f32::NAN.to_le_bytes()),
            Sabotage::Unsupported => Ok(()),
        }
    }
    fn synchronize(&self) -> LocalBoxFuture<'_, Result<()>> {
        self.inner.synchronize()
    }
}

fn faulty(sabotage: Sabotage) -> Rc<dyn Device> {
    Rc::new(Faulty {
        inner: Rc::new(CpuDevice::new(KernelSet::Fast)),
        sabotage,
    })
}

#[test]
fn harness_reports_wrong_values() {
    let report = suite(faulty(Sabotage::Perturb), Some("matmul_f32"));
    assert!(
        report.failed > 0 && report.failed == report.results.len(),
        "{report}"
    );
    assert!(report.check().is_err());
}

#[test]
fn harness_reports_guard_overruns() {
    let report = suite(faulty(Sabotage::Overrun), Some("add_"));
    assert_eq!(report.failed, report.results.len(), "{report}");
    for r in &report.results {
        assert!(
            matches!(&r.outcome, Outcome::Fail(m) if m.contains("guard")),
            "{r:?}"
        );
    }
}

#[test]
fn harness_reports_nan() {
    let report = suite(faulty(Sabotage::NaN), Some("softmax"));
    assert_eq!(report.failed, report.results.len(), "{report}");
    let msg = report.check().unwrap_err();
    assert!(msg.contains("NaN"), "{msg}");
}

#[test]
fn harness_skips_unsupported_with_reason() {
    let report = suite(faulty(Sabotage::Unsupported), Some("norm"));
    assert!(report.skipped > 0);
    assert_eq!(report.skipped, report.results.len());
    assert!(report.check().is_ok());
    assert!(format!("{report}").contains("this fake supports nothing"));
}

/// A device family for registries built by hand.
struct Family {
    name: &'static str,
    devices: Vec<Rc<dyn Device>>,
    reason: Option<String>,
}

impl BackendReg for Family {
    fn name(&self) -> &str {
        self.name
    }
    fn devices(&self) -> Vec<Rc<dyn Device>> {
        self.devices.clone()
    }
    fn unavailable_reason(&self) -> Option<String> {
        self.reason.clone()
    }
}

fn registry_of(families: Vec<Family>) -> Registry {
    let mut reg = Registry::new();
    for f in families {
        reg.register(Rc::new(f));
    }
    reg
}

fn no_webgpu() -> Family {
    Family {
        name: "WebGPU",
        devices: Vec::new(),
        reason: Some("no adapter on this fake".into()),
    }
}

fn opts(filter: &str, require_webgpu: bool) -> SuiteOptions {
    SuiteOptions {
        filter: Some(filter.into()),
        require_webgpu,
    }
}

#[test]
fn missing_webgpu_fails_only_where_required() {
    let cpu = || Family {
        name: "CPU",
        devices: vec![Rc::new(CpuDevice::new(KernelSet::Fast))],
        reason: None,
    };
    let reg = registry_of(vec![cpu(), no_webgpu()]);
    let err = pollster::block_on(run_suite_on_registry(&reg, &opts("scale", true)))
        .expect_err("a required WebGPU without a device is an error");
    assert!(err.to_string().contains("no adapter on this fake"), "{err}");

    let report = pollster::block_on(run_suite_on_registry(&reg, &opts("scale", false))).unwrap();
    report.check().unwrap();
    assert_eq!(report.devices.len(), 1);
    assert!(report.device("cpu").is_some_and(|r| r.passed > 0));
    assert!(format!("{report}").contains("WebGPU: no device: no adapter on this fake"));

    let only_cpu = registry_of(vec![cpu()]);
    assert!(pollster::block_on(run_suite_on_registry(&only_cpu, &opts("scale", true))).is_err());
}

#[test]
fn registry_report_fails_on_any_device_and_on_cpu_skips() {
    let family = |sabotage| Family {
        name: "CPU",
        devices: vec![faulty(sabotage)],
        reason: None,
    };
    let run = |sabotage, filter| {
        let reg = registry_of(vec![family(sabotage), no_webgpu()]);
        pollster::block_on(run_suite_on_registry(&reg, &opts(filter, false))).unwrap()
    };
    let wrong = run(Sabotage::Perturb, "matmul_f32");
    assert!(wrong.check().is_err(), "{wrong}");
    // The fake is a CPU device: it must run every case, so skips fail the run.
    let skipping = run(Sabotage::Unsupported, "norm");
    let msg = skipping.check().unwrap_err();
    assert!(msg.contains("must run every op"), "{msg}");
    assert!(format!("{skipping}").contains("this fake supports nothing"));
}

#[test]
fn reference_matches_itself() {
    suite(reference(), None).check().unwrap();
}

#[test]
fn get_rows_out_of_range_is_an_error_not_a_panic() {
    use std::collections::HashMap;
    use webtensor::backend::run_graph;
    use webtensor::graph::DType;
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[4, 3]).unwrap();
    let i = g.input("i", DType::I32, &[2]).unwrap();
    let y = g.get_rows(a, i).unwrap();
    g.set_output(y).unwrap();
    let leaves = HashMap::from([
        (a, vec![0u8; 48]),
        (i, [1i32, 3].iter().flat_map(|v| v.to_le_bytes()).collect()),
    ]);
    let dev: Rc<dyn Device> = Rc::new(CpuDevice::new(KernelSet::Fast));
    let backend = dev.create_backend().unwrap();
    let r = pollster::block_on(run_graph(&backend, &g, &leaves, 16));
    assert!(
        matches!(r, Err(webtensor::Error::OutOfBounds(_))),
        "{:?}",
        r.err()
    );
}

fn cpu_threads(threads: usize) -> CpuDevice {
    CpuDevice::with_threads(KernelSet::Fast, Some(threads)).unwrap()
}

/// The suite on CPU devices with 2 and 4 threads of their own (sizes thresholds as shipped),
/// and on 4 threads with every threshold off, so that the suite's small nodes are cut too.
#[test]
fn multithreaded_cpu_matches_reference() {
    let devices: [(&str, Rc<dyn Device>); 3] = [
        ("2 threads", Rc::new(cpu_threads(2))),
        ("4 threads", Rc::new(cpu_threads(4))),
        ("4 threads, eager", Rc::new(cpu_threads(4).eager())),
    ];
    for (what, dev) in devices {
        let report = suite(dev, None);
        assert!(report.device.contains("threads"), "{}", report.device);
        report.check().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(report.skipped, 0, "{what}: the CPU runs every op");
    }
}

/// Cutting a node over threads never changes a bit: every case's outputs on 2 and 4
/// threads (every threshold off, so even the suite's small nodes are split) are the 1-thread
/// bytes.
#[test]
fn outputs_are_bit_identical_across_thread_counts() {
    use webtensor::testing::case_outputs;
    let backends: Vec<Rc<Backend>> = [
        cpu_threads(1),
        cpu_threads(2).eager(),
        cpu_threads(4).eager(),
    ]
    .into_iter()
    .map(|d| {
        let d: Rc<dyn Device> = Rc::new(d);
        d.create_backend().unwrap()
    })
    .collect();
    let cases = all_cases();
    for case in &cases {
        let outs: Vec<Vec<Vec<u8>>> = backends
            .iter()
            .map(|b| pollster::block_on(case_outputs(case, b)).unwrap())
            .collect();
        for (t, o) in [2, 4].iter().zip(&outs[1..]) {
            assert!(*o == outs[0], "{}: {t} threads differ from 1", case.name);
        }
    }
    assert!(cases.len() >= OP_COUNT_FLOOR);
}

#[test]
fn cpu_device_reports_its_threads_and_rejects_bad_counts() {
    let d = cpu_threads(3);
    assert_eq!(d.threads(), 3);
    assert!(d.description().contains("3 threads"), "{}", d.description());
    assert!(d.properties().contains(&("threads".into(), "3".into())));
    let default = CpuDevice::new(KernelSet::Fast);
    assert_eq!(
        default.threads(),
        webtensor::backends::cpu::Pool::available()
    );
    for bad in [0, webtensor::backends::cpu::pool::MAX_THREADS + 1] {
        let e = CpuDevice::with_threads(KernelSet::Fast, Some(bad))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("threads"), "{e}");
    }
}
