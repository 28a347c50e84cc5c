//! The op conformance suite (after ggml's test-backend-ops): one table of small op cases,
//! each run on a device under test and on the CPU reference, compared with a per-op
//! normalized-MSE tolerance, NaN/Inf checks, guard bytes around every tensor and exact
//! equality for integer outputs. A coverage check keeps every compute op in the table.
//!
//! The runner is async and uses only the generic device API, so the same table runs
//! natively, in Node and in a browser, on any device; [`run_suite_on_registry`] runs it on
//! every device a registry lists.

mod cases;
mod registry;
mod rng;
pub mod sched;

pub use cases::all_cases;
pub use registry::{
    run_suite_on_registry, webgpu_required, RegistryReport, SuiteOptions, REQUIRE_WEBGPU_ENV,
};
pub use rng::Rng;

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use crate::backend::{run_graph, run_graph_aliased, Backend, Device, DeviceKind, Support};
use crate::error::{Error, Result};
use crate::graph::{row_from_f32, row_to_f32, DType, Graph, OpKind, TensorId};

/// Guard bytes around every tensor in suite runs: an overrun into them fails the case.
pub const GUARD_BYTES: usize = 64;

/// A built case: the graph (outputs marked) and the bytes of every leaf.
pub struct CaseGraph {
    /// The graph; its outputs are what gets compared.
    pub graph: Graph,
    /// Raw bytes of each input/weight, by id.
    pub leaves: HashMap<TensorId, Vec<u8>>,
}

/// The largest factor each of a K-quant's f16 scales (the table's `scales`, in order)
/// multiplies (sub-scale × value levels), so that `amax / factor` bounds the values.
fn k_quant_scale_factors(dtype: DType) -> &'static [f32] {
    match dtype {
        // d · (4-bit scale) · (2-bit value), dmin · (4-bit min)
        DType::Q2_K => &[15.0 * 3.0, 15.0],
        // d · (6-bit scale - 32) · (3-bit value - 4)
        DType::Q3_K => &[32.0 * 4.0],
        // d · (6-bit scale) · (4-/5-bit value), dmin · (6-bit min)
        DType::Q4_K => &[63.0 * 15.0, 63.0],
        DType::Q5_K => &[63.0 * 31.0, 63.0],
        // d · (i8 scale) · (6-bit value - 32)
        DType::Q6_K => &[128.0 * 32.0],
        _ => &[],
    }
}

/// `n` values (a multiple of 256) of K-quant `dtype` as random valid super-blocks: random
/// bytes with the f16 scale fields set to finite values that keep every value within
/// about `±amax` (every bit pattern, not only what the quantizer writes).
pub fn random_k_quant(rng: &mut Rng, dtype: DType, n: usize, amax: f32) -> Result<Vec<u8>> {
    let (offsets, factors) = (dtype.info().scales, k_quant_scale_factors(dtype));
    if !dtype.is_k_quant() || offsets.len() != factors.len() {
        return Err(Error::InvalidArgument(format!(
            "{dtype:?} is not a K-quant with scale factors for its {} scales",
            offsets.len()
        )));
    }
    let mut bytes: Vec<u8> = (0..dtype.row_bytes(n)?)
        .map(|_| rng.next_u32() as u8)
        .collect();
    for blk in bytes.chunks_exact_mut(dtype.block_bytes()) {
        for (&at, &factor) in offsets.iter().zip(factors) {
            let d = half::f16::from_f32(amax / factor * rng.uniform(0.25, 1.0));
            blk[at..at + 2].copy_from_slice(&d.to_le_bytes());
        }
    }
    Ok(bytes)
}

/// Builds a case graph from seeded random data; handed to each case's build function.
pub struct CaseBuilder {
    /// The graph under construction.
    pub g: Graph,
    /// Leaf data so far.
    pub leaves: HashMap<TensorId, Vec<u8>>,
    /// The case's random source (seeded from its name).
    pub rng: Rng,
}

impl CaseBuilder {
    /// An empty graph with an RNG seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            g: Graph::new(),
            leaves: HashMap::new(),
            rng: Rng::new(seed),
        }
    }

    /// An input of `dtype`/`ne` with values uniform in `[-1, 1)` (quantized types are
    /// quantized from such values).
    pub fn input(&mut self, dtype: DType, ne: &[usize]) -> Result<TensorId> {
        self.input_range(dtype, ne, -1.0, 1.0)
    }

    /// An input with values uniform in `[lo, hi)`.
    pub fn input_range(
        &mut self,
        dtype: DType,
        ne: &[usize],
        lo: f32,
        hi: f32,
    ) -> Result<TensorId> {
        let n: usize = ne.iter().product();
        if dtype.is_k_quant() {
            // No quantizer for K-quants: random valid super-blocks, values within about
            // the range's magnitude.
            let id = self
                .g
                .input(&format!("in{}", self.leaves.len()), dtype, ne)?;
            let amax = lo.abs().max(hi.abs());
            let bytes = random_k_quant(&mut self.rng, dtype, n, amax)?;
            self.leaves.insert(id, bytes);
            return Ok(id);
        }
        let values: Vec<f32> = (0..n).map(|_| self.rng.uniform(lo, hi)).collect();
        self.input_values(dtype, ne, &values)
    }

    /// An input holding `values` (row-major, innermost first), converted to `dtype`.
    pub fn input_values(&mut self, dtype: DType, ne: &[usize], values: &[f32]) -> Result<TensorId> {
        let name = format!("in{}", self.leaves.len());
        let id = self.g.input(&name, dtype, ne)?;
        let t = self.g.tensor(id);
        if values.len() != t.numel() {
            return Err(Error::InvalidArgument(format!(
                "{} values for {} elements",
                values.len(),
                t.numel()
            )));
        }
        let row_len = t.ne[0];
        let row_bytes = t.nb[1];
        let mut bytes = vec![0u8; t.nbytes()];
        if row_len > 0 {
            for (src, dst) in values.chunks(row_len).zip(bytes.chunks_mut(row_bytes)) {
                row_from_f32(dtype, src, dst)?;
            }
        }
        self.leaves.insert(id, bytes);
        Ok(id)
    }

    /// An I32 input holding `values`.
    pub fn input_i32(&mut self, ne: &[usize], values: &[i32]) -> Result<TensorId> {
        let name = format!("in{}", self.leaves.len());
        let id = self.g.input(&name, DType::I32, ne)?;
        if values.len() != self.g.tensor(id).numel() {
            return Err(Error::InvalidArgument("wrong number of i32 values".into()));
        }
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.leaves.insert(id, bytes);
        Ok(id)
    }

    /// Marks `id` as compared output.
    pub fn output(&mut self, id: TensorId) -> Result<()> {
        self.g.set_output(id)
    }
}

/// A case's build function.
pub type BuildFn = Box<dyn Fn(&mut CaseBuilder) -> Result<()>>;

/// One row of the op table.
pub struct OpCase {
    /// Unique name, e.g. `matmul_q4_0_k64_m33_n7`.
    pub name: String,
    /// The op under test (coverage is counted by this).
    pub op: OpKind,
    /// Largest accepted normalized MSE, `sum((a-b)^2) / sum(b^2)`.
    pub max_nmse: f64,
    /// Whether the tested node writes over its first operand's memory (in-place run).
    pub in_place: bool,
    build: BuildFn,
}

impl OpCase {
    /// A case named `name` testing `op` within `max_nmse`, built by `build`.
    pub fn new(
        name: impl Into<String>,
        op: OpKind,
        max_nmse: f64,
        build: impl Fn(&mut CaseBuilder) -> Result<()> + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            op,
            max_nmse,
            in_place: false,
            build: Box::new(build),
        }
    }

    /// The same case, run with the output aliasing its first operand.
    pub fn in_place(mut self) -> Self {
        self.in_place = true;
        self.name.push_str("_inplace");
        self
    }

    /// Builds the graph and leaf data, seeded from the case name (so runs are repeatable).
    pub fn build(&self) -> Result<CaseGraph> {
        let mut b = CaseBuilder::new(fnv1a(self.name.as_bytes()));
        (self.build)(&mut b)?;
        if b.g.outputs().is_empty() {
            return Err(Error::Graph(format!("case {} marks no output", self.name)));
        }
        Ok(CaseGraph {
            graph: b.g,
            leaves: b.leaves,
        })
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Compute ops ([`OpKind::compute`]) that no case in [`all_cases`] tests.
pub fn uncovered_ops() -> Vec<OpKind> {
    let cases = all_cases();
    OpKind::compute()
        .filter(|k| !cases.iter().any(|c| c.op == *k))
        .collect()
}

/// Result of one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Within tolerance.
    Pass,
    /// Wrong, with what went wrong.
    Fail(String),
    /// Not run: the device does not support a node (the reason says why).
    Skipped(String),
}

/// One case's result.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// Case name.
    pub name: String,
    /// Op under test.
    pub op: OpKind,
    /// What happened.
    pub outcome: Outcome,
    /// Worst normalized MSE over the float outputs, when compared.
    pub nmse: Option<f64>,
}

/// Results of a suite run.
#[derive(Clone, Debug)]
pub struct SuiteReport {
    /// Name of the device under test ("CPU", "WebGPU").
    pub name: String,
    /// Its kind.
    pub kind: DeviceKind,
    /// Description of the device under test.
    pub device: String,
    /// Per case, in table order.
    pub results: Vec<CaseResult>,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped as unsupported.
    pub skipped: usize,
}

impl SuiteReport {
    /// `Err` listing every failed case, `Ok` when none failed (skips are not failures).
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.failed == 0 {
            return Ok(());
        }
        let fails: Vec<String> = self
            .results
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Fail(m) => Some(format!("  {}: {m}", r.name)),
                _ => None,
            })
            .collect();
        Err(format!(
            "{} of {} op cases failed on {}:\n{}",
            self.failed,
            self.results.len(),
            self.device,
            fails.join("\n")
        ))
    }

    /// Cases per op, for the summary.
    pub fn cases_per_op(&self) -> Vec<(OpKind, usize)> {
        OpKind::compute()
            .map(|k| (k, self.results.iter().filter(|r| r.op == k).count()))
            .collect()
    }

    /// Skipped cases grouped by reason, in first-seen order.
    pub fn skip_reasons(&self) -> Vec<(&str, Vec<&str>)> {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in &self.results {
            let Outcome::Skipped(why) = &r.outcome else {
                continue;
            };
            match groups.iter_mut().find(|(w, _)| w == why) {
                Some((_, names)) => names.push(&r.name),
                None => groups.push((why, vec![&r.name])),
            }
        }
        groups
    }
}

/// The summary line, skips grouped by reason, and every failure; `{:#}` lists every case
/// (with its nmse) instead.
impl fmt::Display for SuiteReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} cases: {} passed, {} failed, {} skipped",
            self.device,
            self.results.len(),
            self.passed,
            self.failed,
            self.skipped
        )?;
        if f.alternate() {
            for r in &self.results {
                let nmse = r.nmse.map_or(String::new(), |e| format!(" nmse={e:.2e}"));
                match &r.outcome {
                    Outcome::Pass => writeln!(f, "  OK    {}{nmse}", r.name)?,
                    Outcome::Fail(m) => writeln!(f, "  FAIL  {}: {m}", r.name)?,
                    Outcome::Skipped(why) => writeln!(f, "  SKIP  {}: {why}", r.name)?,
                }
            }
            return Ok(());
        }
        for (why, names) in self.skip_reasons() {
            let n = names.len();
            let cases = if n == 1 { "case" } else { "cases" };
            writeln!(f, "  SKIP  {n} {cases}: {why}: {}", names.join(", "))?;
        }
        for r in &self.results {
            if let Outcome::Fail(m) = &r.outcome {
                writeln!(f, "  FAIL  {}: {m}", r.name)?;
            }
        }
        Ok(())
    }
}

/// Runs every case whose name contains `filter` (all when `None`) on `device` and on
/// `reference`, and compares the outputs.
pub async fn run_suite(
    device: Rc<dyn Device>,
    reference: Rc<dyn Device>,
    filter: Option<&str>,
) -> SuiteReport {
    let mut report = SuiteReport {
        name: device.name().to_string(),
        kind: device.kind(),
        device: device.description(),
        results: Vec::new(),
        passed: 0,
        failed: 0,
        skipped: 0,
    };
    let backends =
        Backend::new(device.clone()).and_then(|d| Ok((d, Backend::new(reference.clone())?)));
    for case in all_cases() {
        if filter.is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let (outcome, nmse) = match &backends {
            Ok((dut, reference)) => run_case(&case, dut, reference).await,
            Err(e) => (Outcome::Fail(format!("cannot create backend: {e}")), None),
        };
        match outcome {
            Outcome::Pass => report.passed += 1,
            Outcome::Fail(_) => report.failed += 1,
            Outcome::Skipped(_) => report.skipped += 1,
        }
        report.results.push(CaseResult {
            name: case.name.clone(),
            op: case.op,
            outcome,
            nmse,
        });
    }
    report
}

/// Runs one case on `dut` and `reference` and compares; also the worst float nmse.
pub async fn run_case(case: &OpCase, dut: &Backend, reference: &Backend) -> (Outcome, Option<f64>) {
    let built = match case.build() {
        Ok(b) => b,
        Err(e) => return (Outcome::Fail(format!("case does not build: {e}")), None),
    };
    let g = &built.graph;
    let device = dut.device();
    for id in g.compute_nodes() {
        if let Support::No(why) = device.supports_op(g, id) {
            let op = g.tensor(id).op.name();
            return (Outcome::Skipped(format!("{op} unsupported: {why}")), None);
        }
    }
    if let Some(&out) = g.outputs().first().filter(|_| case.in_place) {
        if !device.supports_inplace(g, out) {
            let op = g.tensor(out).op.name();
            let why = format!("{op} is not computed in place on this device");
            return (Outcome::Skipped(why), None);
        }
    }
    let expected = match run_case_graph(reference, &built, case.in_place).await {
        Ok(o) => o,
        Err(e) => return (Outcome::Fail(format!("reference failed: {e}")), None),
    };
    let got = match run_case_graph(dut, &built, case.in_place).await {
        Ok(o) => o,
        Err(e) => return (Outcome::Fail(format!("device failed: {e}")), None),
    };
    compare(g, &g.outputs(), &got, &expected, case.max_nmse)
}

/// The output bytes of `case` run on `backend` (in place when the case says so).
pub async fn case_outputs(case: &OpCase, backend: &Backend) -> Result<Vec<Vec<u8>>> {
    run_case_graph(backend, &case.build()?, case.in_place).await
}

async fn run_case_graph(backend: &Backend, c: &CaseGraph, in_place: bool) -> Result<Vec<Vec<u8>>> {
    if in_place {
        run_in_place(backend, c).await
    } else {
        run_graph(backend, &c.graph, &c.leaves, GUARD_BYTES).await
    }
}

/// Like [`run_graph`], but the (single) output node shares its first operand's memory, as
/// a memory planner reusing a dead operand would arrange: catches kernels that are wrong
/// when `dst` aliases `src[0]`.
async fn run_in_place(backend: &Backend, c: &CaseGraph) -> Result<Vec<Vec<u8>>> {
    let g = &c.graph;
    let out = *g
        .outputs()
        .first()
        .ok_or_else(|| Error::Graph("no output".into()))?;
    let t = g.tensor(out);
    let src0 = *t
        .src
        .first()
        .ok_or_else(|| Error::Graph("in-place output has no operand".into()))?;
    let s = g.tensor(src0);
    if s.is_view() || s.dtype != t.dtype || s.nb != t.nb || s.ne != t.ne {
        return Err(Error::Graph(format!(
            "in-place case: {} cannot alias {}",
            t.name, s.name
        )));
    }
    run_graph_aliased(backend, g, &c.leaves, GUARD_BYTES, &[(out, src0)]).await
}

fn to_f32(dtype: DType, ne: [usize; 4], bytes: &[u8]) -> Vec<f32> {
    let n: usize = ne.iter().product();
    let mut out = vec![0f32; n];
    if n == 0 {
        return out;
    }
    let row_bytes = dtype.row_bytes(ne[0]).unwrap_or(0);
    for (src, dst) in bytes.chunks(row_bytes.max(1)).zip(out.chunks_mut(ne[0])) {
        row_to_f32(dtype, src, dst);
    }
    out
}

/// Compares outputs: exact for I32, otherwise NaN/Inf and normalized MSE.
fn compare(
    g: &Graph,
    outputs: &[TensorId],
    got: &[Vec<u8>],
    expected: &[Vec<u8>],
    max_nmse: f64,
) -> (Outcome, Option<f64>) {
    if got.len() != outputs.len() || expected.len() != outputs.len() {
        return (Outcome::Fail("wrong number of outputs".into()), None);
    }
    let mut worst: Option<f64> = None;
    for ((&id, a), b) in outputs.iter().zip(got).zip(expected) {
        let t = g.tensor(id);
        if a.len() != b.len() {
            return (
                Outcome::Fail(format!(
                    "{}: {} bytes, expected {}",
                    t.name,
                    a.len(),
                    b.len()
                )),
                worst,
            );
        }
        if t.dtype == DType::I32 {
            if let Some(i) = (0..a.len() / 4).find(|i| a[i * 4..i * 4 + 4] != b[i * 4..i * 4 + 4]) {
                let v = |x: &[u8]| {
                    i32::from_le_bytes([x[i * 4], x[i * 4 + 1], x[i * 4 + 2], x[i * 4 + 3]])
                };
                return (
                    Outcome::Fail(format!(
                        "{}[{i}] = {}, expected {} (exact)",
                        t.name,
                        v(a),
                        v(b)
                    )),
                    worst,
                );
            }
            continue;
        }
        let (av, bv) = (to_f32(t.dtype, t.ne, a), to_f32(t.dtype, t.ne, b));
        let ref_finite = bv.iter().all(|v| v.is_finite());
        if ref_finite {
            if let Some(i) = av.iter().position(|v| !v.is_finite()) {
                return (
                    Outcome::Fail(format!("{}[{i}] = {} (reference {})", t.name, av[i], bv[i])),
                    worst,
                );
            }
        }
        let e = nmse(&av, &bv);
        worst = Some(worst.map_or(e, |w| w.max(e)));
        if e.is_nan() || e > max_nmse {
            return (
                Outcome::Fail(format!("{}: nmse {e:.3e} > {max_nmse:.1e}", t.name)),
                worst,
            );
        }
    }
    (Outcome::Pass, worst)
}

/// `sum((a-b)^2) / sum(b^2)` over finite pairs (plain squared error when `b` is all zero);
/// non-finite values must match exactly.
pub fn nmse(a: &[f32], b: &[f32]) -> f64 {
    let (mut num, mut den) = (0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        if !y.is_finite() || !x.is_finite() {
            let same = (x.is_nan() && y.is_nan()) || x == y;
            if !same {
                return f64::INFINITY;
            }
            continue;
        }
        num += (x as f64 - y as f64).powi(2);
        den += (y as f64).powi(2);
    }
    if den == 0.0 {
        num
    } else {
        num / den
    }
}
