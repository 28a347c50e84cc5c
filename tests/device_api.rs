//! The device API's contracts: bounds-checked buffers (checked by the wrapper before a device
//! sees a request), zero-size allocations, allocation limits, usage, copies, registry lookups,
//! bad graphs, and prepared splits giving the same bytes as direct runs on every device.
#![cfg(not(target_arch = "wasm32"))]

use std::collections::HashMap;
use std::rc::Rc;

use pollster::block_on;
use webtensor::backend::{
    run_graph, Backend, BackendImpl, Buffer, BufferImpl, BufferType, BufferUsage, Device,
    DeviceCaps, DeviceKind, LocalBoxFuture, PlanOptions, PreparedImpl, Scheduler, Session, Support,
    TensorMemory,
};
use webtensor::backends::cpu::{CpuDevice, KernelSet};
use webtensor::graph::{DType, Graph, TensorId};
use webtensor::Error;

fn cpu() -> Rc<dyn Device> {
    Rc::new(CpuDevice::new(KernelSet::Fast))
}

#[test]
fn zero_sized_buffers_are_valid() {
    let buf = cpu().buffer_type().alloc(0).unwrap();
    assert_eq!(buf.size(), 0);
    assert!(buf.write(0, &[]).is_ok());
    assert_eq!(block_on(buf.read(0, 0)).unwrap(), Vec::<u8>::new());
    assert!(buf.write(0, &[1]).is_err());
    assert!(buf.clear(0).is_ok());
}

#[test]
fn every_access_is_bounds_checked() {
    let buf = cpu().buffer_type().alloc(16).unwrap();
    buf.write(8, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert!(matches!(buf.write(9, &[0; 8]), Err(Error::OutOfBounds(_))));
    assert!(matches!(
        buf.write(usize::MAX, &[0; 2]),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(
        block_on(buf.read(12, 8)),
        Err(Error::OutOfBounds(_))
    ));
    assert!(matches!(buf.memset(15, 2, 0), Err(Error::OutOfBounds(_))));
    assert_eq!(block_on(buf.read(8, 4)).unwrap(), vec![1, 2, 3, 4]);
    buf.memset(8, 2, 9).unwrap();
    assert_eq!(block_on(buf.read(8, 3)).unwrap(), vec![9, 9, 3]);
}

#[test]
fn oversized_allocations_fail_cleanly() {
    let bt = cpu().buffer_type();
    assert!(matches!(
        bt.alloc(usize::MAX),
        Err(Error::AllocTooLarge { .. })
    ));
    assert!(matches!(
        bt.alloc(1 << 60),
        Err(Error::AllocTooLarge { .. })
    ));
}

#[test]
fn buffers_copy_and_carry_usage() {
    let bt = cpu().buffer_type();
    let (a, b) = (bt.alloc(8).unwrap(), bt.alloc(8).unwrap());
    a.write(0, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert!(b.copy_from(a.as_ref(), 2, 0, 4).unwrap());
    assert_eq!(block_on(b.read(0, 4)).unwrap(), vec![3, 4, 5, 6]);
    assert!(b.copy_from(a.as_ref(), 6, 0, 4).is_err());
    assert_eq!(a.usage(), BufferUsage::Any);
    a.set_usage(BufferUsage::Weights);
    assert_eq!(a.usage(), BufferUsage::Weights);
}

#[test]
fn device_describes_itself() {
    let d = cpu();
    assert_eq!(d.kind(), DeviceKind::Cpu);
    assert!(d.caps().host_buffer);
    assert!(d.buffer_type().is_host());
    assert!(d.supports_buffer_type(d.buffer_type().as_ref()));
    assert!(d.properties().iter().any(|(k, _)| k == "simd"));
    let dots = d.properties().into_iter().find(|(k, _)| k == "int8_dots");
    assert_eq!(
        dots.map(|(_, v)| v).as_deref(),
        Some("portable kernels (not wasm)")
    );
}

#[test]
fn missing_and_misshaped_inputs_are_errors() {
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[4]).unwrap();
    let b = g.input("b", DType::F32, &[4]).unwrap();
    let c = g.add(a, b).unwrap();
    g.set_output(c).unwrap();
    let backend = Backend::new(cpu()).unwrap();
    let only_a = HashMap::from([(a, vec![0u8; 16])]);
    let err = block_on(run_graph(&backend, &g, &only_a, 0)).unwrap_err();
    assert!(
        err.to_string().contains("no value given for input b"),
        "{err}"
    );
    let short = HashMap::from([(a, vec![0u8; 16]), (b, vec![0u8; 12])]);
    let err = block_on(run_graph(&backend, &g, &short, 0)).unwrap_err();
    assert!(err.to_string().contains("needs 16 bytes"), "{err}");
}

#[test]
fn get_rows_index_out_of_range_is_an_error() {
    let mut g = Graph::new();
    let table = g.weight("table", DType::F32, &[2, 3]).unwrap();
    let idx = g.input("idx", DType::I32, &[1]).unwrap();
    let rows = g.get_rows(table, idx).unwrap();
    g.set_output(rows).unwrap();
    let backend = Backend::new(cpu()).unwrap();
    let leaves = HashMap::from([(table, vec![0u8; 24]), (idx, 7i32.to_le_bytes().to_vec())]);
    let err = block_on(run_graph(&backend, &g, &leaves, 8)).unwrap_err();
    assert!(matches!(err, Error::OutOfBounds(_)), "{err}");
}

#[test]
fn unknown_tensor_ids_are_errors() {
    let g = Graph::new();
    assert!(g.get(webtensor::graph::TensorId(3)).is_err());
    let mut g2 = Graph::new();
    assert!(g2.set_output(webtensor::graph::TensorId(0)).is_err());
}

/// Requests a device's buffer got: (what, offset, length).
type Calls = Rc<std::cell::RefCell<Vec<(&'static str, usize, usize)>>>;

/// A device's memory that records every request it gets, to show the [`Buffer`] wrapper
/// hands it only non-empty, in-range ones.
struct Recording {
    size: usize,
    bytes: std::cell::RefCell<Vec<u8>>,
    calls: Calls,
}

impl Recording {
    fn log(&self, what: &'static str, offset: usize, len: usize) {
        assert!(
            len > 0 && offset + len <= self.size,
            "{what} {offset}+{len}"
        );
        self.calls.borrow_mut().push((what, offset, len));
    }
}

impl BufferImpl for Recording {
    fn write(&self, offset: usize, data: &[u8]) -> webtensor::Result<()> {
        self.log("write", offset, data.len());
        self.bytes.borrow_mut()[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, webtensor::Result<Vec<u8>>> {
        self.log("read", offset, len);
        let v = self.bytes.borrow()[offset..offset + len].to_vec();
        Box::pin(std::future::ready(Ok(v)))
    }
    fn memset(&self, offset: usize, len: usize, value: u8) -> webtensor::Result<()> {
        self.log("memset", offset, len);
        self.bytes.borrow_mut()[offset..offset + len].fill(value);
        Ok(())
    }
}

#[test]
fn buffer_impls_only_see_checked_requests() {
    let calls = Rc::new(std::cell::RefCell::new(Vec::new()));
    let rec = Recording {
        size: 8,
        bytes: std::cell::RefCell::new(vec![0; 8]),
        calls: calls.clone(),
    };
    let buf = Buffer::new(Box::new(rec), 8, "recording");
    assert_eq!((buf.size(), buf.type_name()), (8, "recording"));
    assert!(buf.write(4, &[0; 5]).is_err());
    assert!(buf.write(usize::MAX, &[1]).is_err());
    assert!(block_on(buf.read(9, 0)).is_err());
    assert!(buf.memset(0, 9, 1).is_err());
    let other = cpu().buffer_type().alloc(4).unwrap();
    assert!(buf.copy_from(&other, 2, 0, 4).is_err());
    assert!(buf.copy_from(&other, 0, 6, 4).is_err());
    assert!(calls.borrow().is_empty(), "{:?}", calls.borrow());
    buf.write(8, &[]).unwrap();
    assert!(block_on(buf.read(3, 0)).unwrap().is_empty());
    assert!(buf.copy_from(&other, 4, 8, 0).unwrap());
    assert!(
        calls.borrow().is_empty(),
        "empty requests reached the device"
    );
    buf.write(6, &[7, 8]).unwrap();
    buf.memset(0, 2, 5).unwrap();
    assert_eq!(block_on(buf.read(0, 8)).unwrap(), [5, 5, 0, 0, 0, 0, 7, 8]);
    // No direct copy from a CPU buffer into this one: through the host.
    other.write(0, &[1, 2, 3, 4]).unwrap();
    assert!(!buf.copy_from(&other, 0, 2, 4).unwrap());
    block_on(buf.copy_via_host(&other, 0, 2, 4)).unwrap();
    assert_eq!(block_on(buf.read(0, 8)).unwrap(), [5, 5, 1, 2, 3, 4, 7, 8]);
    assert_eq!(
        calls.borrow().iter().map(|c| c.0).collect::<Vec<_>>(),
        ["write", "memset", "read", "write", "read"]
    );
}

/// The CPU device with a backend that prepares each split once (a copy of the nodes and
/// their memory) and counts how often the prepared form runs.
struct Preparing {
    inner: Rc<dyn Device>,
    runs: Rc<std::cell::Cell<usize>>,
}

struct PreparingBackend {
    inner: Rc<Backend>,
    runs: Rc<std::cell::Cell<usize>>,
}

struct PreparedNodes {
    inner: Rc<Backend>,
    graph: Graph,
    nodes: Vec<TensorId>,
    mem: TensorMemory,
    runs: Rc<std::cell::Cell<usize>>,
}

impl PreparedImpl for PreparedNodes {
    fn compute(&self) -> webtensor::Result<()> {
        self.runs.set(self.runs.get() + 1);
        self.inner.compute(&self.graph, &self.nodes, &self.mem)
    }
}

impl Device for Preparing {
    fn name(&self) -> &str {
        "preparing"
    }
    fn description(&self) -> String {
        "CPU that prepares splits".into()
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
        self.inner.supports_op(graph, node)
    }
    fn backend_impl(self: Rc<Self>) -> webtensor::Result<Box<dyn BackendImpl>> {
        Ok(Box::new(PreparingBackend {
            inner: Backend::new(self.inner.clone())?,
            runs: self.runs.clone(),
        }))
    }
}

impl BackendImpl for PreparingBackend {
    fn compute(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
    ) -> webtensor::Result<()> {
        self.inner.compute(graph, nodes, mem)
    }
    fn synchronize(&self) -> LocalBoxFuture<'_, webtensor::Result<()>> {
        self.inner.synchronize()
    }
    fn prepare(
        &self,
        graph: &Graph,
        nodes: &[TensorId],
        mem: &TensorMemory,
    ) -> webtensor::Result<Option<Box<dyn PreparedImpl>>> {
        Ok(Some(Box::new(PreparedNodes {
            inner: self.inner.clone(),
            graph: graph.clone(),
            nodes: nodes.to_vec(),
            mem: mem.clone(),
            runs: self.runs.clone(),
        })))
    }
}

/// Every device (the registry's, and one that prepares) gives the same bytes from a session
/// whose splits its backend prepared as from one computing them directly.
#[test]
fn prepared_and_direct_runs_give_identical_bytes() {
    let runs = Rc::new(std::cell::Cell::new(0));
    let mut devices: Vec<Rc<dyn Device>> = block_on(webtensor::backends::registry()).devices();
    devices.push(Rc::new(Preparing {
        inner: cpu(),
        runs: runs.clone(),
    }));
    let mut g = Graph::new();
    let w = g.weight("w", DType::Q8_0, &[64, 48]).unwrap();
    let b = g.weight("b", DType::F32, &[48]).unwrap();
    let x = g.input("x", DType::F32, &[64, 5]).unwrap();
    let y = g.matmul(w, x).unwrap();
    let y = g.add(y, b).unwrap();
    let y = g.gelu(y).unwrap();
    let y = g.softmax(y, None, 1.0).unwrap();
    g.set_output(y).unwrap();
    let mut rng = webtensor::testing::Rng::new(11);
    let mut vals = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect() };
    let mut wq = vec![0u8; DType::Q8_0.row_bytes(64).unwrap() * 48];
    for (src, dst) in vals(64 * 48)
        .chunks(64)
        .zip(wq.chunks_mut(DType::Q8_0.row_bytes(64).unwrap()))
    {
        webtensor::graph::row_from_f32(DType::Q8_0, src, dst).unwrap();
    }
    let weights = HashMap::from([(w, wq), (b, bytemuck::cast_slice(&vals(48)).to_vec())]);
    let inputs = HashMap::from([(x, bytemuck::cast_slice(&vals(64 * 5)).to_vec())]);
    for dev in devices {
        let sched = Scheduler::new(vec![dev.clone()]).unwrap();
        let plan = sched.plan(&g, &PlanOptions::default()).unwrap();
        let mut s = Session::new(&sched, &g, plan, &HashMap::new()).unwrap();
        s.set_weights(&weights).unwrap();
        let prepared = block_on(s.run(&inputs)).unwrap();
        s.set_prepared(false).unwrap();
        let direct = block_on(s.run(&inputs)).unwrap();
        assert_eq!(prepared, direct, "{}", dev.name());
        assert!(prepared[0].iter().any(|&b| b != 0));
    }
    assert_eq!(
        runs.get(),
        1,
        "the prepared form ran once, the direct run not at all"
    );
}

/// A runtime asked for the CPU alone registers no GPU family (no instance, no adapter
/// request); `'auto'` registers WebGPU too (with or without a device).
#[test]
fn cpu_only_registries_ask_for_no_gpu() {
    let cpu_only = block_on(webtensor::backends::registry_for(false));
    let names: Vec<&str> = cpu_only.backend_regs().iter().map(|r| r.name()).collect();
    assert_eq!(names, ["CPU"]);
    let all = block_on(webtensor::backends::registry_for(true));
    assert_eq!(all.backend_regs().len(), 2);
    let rt = block_on(webtensor::create_runtime(
        webtensor::runtime::DeviceChoice::Cpu,
        true,
    ))
    .unwrap();
    assert_eq!(rt.device_names(), ["CPU"]);
}
