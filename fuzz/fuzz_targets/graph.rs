//! The graph builder through the public API: inputs and weights of any dtype and shape,
//! then random ops, shapes and views (every builder error is fine), then placement and a
//! run on the CPU with input values from the fuzz data (NaN and Inf included). Errors are
//! fine; panics, hangs and out-of-bounds reads are not.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use webtensor::graph::{BinaryOp, DType, Graph, Op, RopeMode, RopeParams, TensorId, UnaryOp};
use webtensor::runtime::{DeviceChoice, Program, Runtime};

/// Fuzz bytes read as small choices (zeros once they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// A dim: mostly small, sometimes 0, a block (32, 64) or huge.
    fn dim(&mut self) -> usize {
        match self.u8() {
            0..=199 => 1 + self.below(8),
            200..=219 => 32,
            220..=229 => 64,
            230..=239 => 0,
            240..=249 => self.u32() as usize,
            _ => usize::MAX >> self.below(64),
        }
    }
    fn shape(&mut self) -> Vec<usize> {
        (0..1 + self.below(5)).map(|_| self.dim()).collect()
    }
    /// A byte count or stride: small, or anything.
    fn size(&mut self) -> usize {
        match self.u8() {
            0..=229 => self.below(64) * 4,
            230..=249 => self.u32() as usize,
            _ => usize::MAX >> self.below(64),
        }
    }
    fn f32(&mut self) -> f32 {
        match self.u8() {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => f32::from_bits(self.u32()),
            b => (b as f32 - 128.0) / 16.0,
        }
    }
    fn dtype(&mut self) -> DType {
        DType::ALL[self.below(DType::ALL.len())]
    }
}

thread_local! {
    static RT: Runtime = pollster::block_on(webtensor::create_runtime(DeviceChoice::Cpu, false))
        .expect("a CPU runtime");
}

/// Tensors of more than this many bytes are not run (the builder took them; a run would
/// only spend the fuzzer's time allocating).
const MAX_RUN_BYTES: usize = 1 << 22;

/// Graphs whose matmuls and attentions take more multiply-adds than this are not run: sizes
/// within `MAX_RUN_BYTES` still allow a node of 10^12 (an attention of a million query rows
/// over a million keys of head size 1), far past libFuzzer's per-input timeout.
const MAX_RUN_MACS: usize = 1 << 26;

/// The multiply-adds of `g`'s matmul and attention nodes (saturating).
fn macs(g: &Graph) -> usize {
    g.iter()
        .map(|(_, t)| {
            let src = |i: usize| t.src.get(i).map(|&s| g.tensor(s).ne);
            match (&t.op, src(0), src(1), src(2)) {
                (Op::MatMul, Some(a), Some(b), _) => a[0]
                    .saturating_mul(a[1])
                    .saturating_mul(b[1])
                    .saturating_mul(b[2].saturating_mul(b[3])),
                (Op::Attention { .. }, Some(q), Some(k), Some(v)) => q[1]
                    .saturating_mul(q[2])
                    .saturating_mul(q[3])
                    .saturating_mul(k[1])
                    .saturating_mul(q[0].saturating_add(v[0])),
                _ => 0,
            }
        })
        .fold(0usize, usize::saturating_add)
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let mut p = Program::new();
    let mut ids: Vec<TensorId> = vec![];
    let mut inputs = vec![];
    for i in 0..1 + b.below(3) {
        let (dtype, shape) = (b.dtype(), b.shape());
        let name = format!("in{i}");
        if let Ok(id) = p.graph_mut().input(&name, dtype, &shape) {
            ids.push(id);
            inputs.push((name, id));
        }
    }
    for i in 0..b.below(3) {
        let (dtype, shape) = (b.dtype(), b.shape());
        let n = b.below(300);
        let name = format!("w{i}");
        let r = if dtype == DType::I32 || b.u8() & 1 == 0 {
            let bytes: Vec<u8> = (0..n * 4).map(|_| b.u8()).collect();
            p.weight_bytes(&name, dtype, &shape, bytes)
        } else {
            let values: Vec<f32> = (0..n).map(|_| b.f32()).collect();
            p.weight_f32(&name, dtype, &shape, &values)
        };
        if let Ok(id) = r {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return;
    }
    for _ in 0..b.below(12) {
        let pick = |b: &mut Bytes| ids[b.below(ids.len())];
        let (x, y) = (pick(&mut b), pick(&mut b));
        let g = p.graph_mut();
        let r = match b.below(21) {
            // Every element-wise op of the tables (graph/op.rs).
            0 => g.binary(BinaryOp::ALL[b.below(BinaryOp::ALL.len())], x, y),
            1 => g.unary(UnaryOp::ALL[b.below(UnaryOp::ALL.len())], x),
            2 => g.clamp(x, b.f32(), b.f32()),
            3 => g.set_rows(x, y, pick(&mut b)),
            4 => g.scale(x, b.f32()),
            5 => g.matmul(x, y),
            6 => g.softmax(x, (b.u8() & 1 == 0).then_some(y), b.f32()),
            7 => g.norm(x, b.f32()),
            8 => g.rms_norm(x, b.f32()),
            9 => {
                let mode = if b.u8() & 1 == 0 {
                    RopeMode::Normal
                } else {
                    RopeMode::NeoX
                };
                let p = RopeParams {
                    n_dims: b.dim(),
                    mode,
                    freq_base: b.f32(),
                    freq_scale: b.f32(),
                };
                // Frequency factors: any tensor (the builder checks dtype, count, layout).
                let factors = (b.u8() & 1 == 0).then_some(x);
                g.rope(x, y, factors, p)
            }
            10 => g.cpy(x, b.dtype()),
            11 => g.cont(x),
            12 => g.concat(x, y, b.below(5)),
            13 => g.sum_rows(x),
            14 => g.mean(x),
            15 => g.argmax(x),
            16 => g.get_rows(x, y),
            17 => g.reshape(x, &b.shape()),
            18 => {
                let shape = b.shape();
                let strides: Vec<usize> = (0..b.below(5)).map(|_| b.size()).collect();
                g.view(x, &shape, &strides, b.size())
            }
            19 => {
                let v = pick(&mut b);
                let mask = (b.u8() & 1 == 0).then(|| pick(&mut b));
                g.attention(x, y, v, mask, b.f32())
            }
            _ => {
                let mut axes = [0, 1, 2, 3];
                for i in 0..3 {
                    axes.swap(i, i + b.below(4 - i));
                }
                if b.u8() & 1 == 0 {
                    g.permute(x, axes)
                } else {
                    g.transpose(x)
                }
            }
        };
        if let Ok(id) = r {
            ids.push(id);
        }
    }
    let graph = p.graph();
    if graph
        .iter()
        .any(|(_, t)| t.nbytes() > MAX_RUN_BYTES || t.numel() > MAX_RUN_BYTES)
        || macs(graph) > MAX_RUN_MACS
    {
        return;
    }
    for _ in 0..1 + b.below(2) {
        let id = ids[b.below(ids.len())];
        let _ = p.graph_mut().set_output(id);
    }
    // Input values from the rest of the data (a wrong length now and then).
    let mut values = HashMap::new();
    for (name, id) in &inputs {
        let t = p.graph().tensor(*id);
        let mut n = t.nbytes();
        if b.u8() == 255 {
            n = b.below(64);
        }
        let bytes: Vec<u8> = match t.dtype {
            DType::F32 => (0..n / 4).flat_map(|_| b.f32().to_le_bytes()).collect(),
            _ => (0..n).map(|_| b.u8()).collect(),
        };
        values.insert(name.clone(), bytes);
    }
    RT.with(|rt| {
        if let Ok(outs) = pollster::block_on(rt.run(&p, &values)) {
            for (name, dtype, bytes) in &outs {
                let t = p
                    .graph()
                    .iter()
                    .find(|(_, t)| &t.name == name)
                    .map(|(_, t)| t);
                if let Some(t) = t {
                    assert_eq!(t.dtype, *dtype);
                }
                let _ = bytes;
            }
        }
        rt.clear();
    });
});
