//! Host memory buffers: 64-byte aligned, bounds-checked, zero-size allowed.

use std::cell::{RefCell, UnsafeCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::kernels::quant::Int8Panels;
use super::kernels::Prepacked;
use super::TensorView;

use crate::backend::{Buffer, BufferImpl, BufferType, BufferUsage, LocalBoxFuture};
use crate::error::{Error, Result};
use crate::graph::Tensor;

/// Tensor offsets in CPU buffers are aligned to this (a cache line; enough for SIMD loads).
pub const CPU_ALIGNMENT: usize = 64;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; CPU_ALIGNMENT]);

/// The CPU buffer type: plain host memory.
pub struct CpuBufferType {
    max_size: usize,
    packs: bool,
}

impl CpuBufferType {
    /// Largest buffer: what a wasm32 address space can hold, or isize::MAX natively.
    pub fn new() -> Self {
        let max_size = if cfg!(target_arch = "wasm32") {
            (u32::MAX as usize) / 2
        } else {
            isize::MAX as usize
        };
        Self {
            max_size,
            packs: false,
        }
    }

    /// This type, storing Q8_0 / Q4_0 / Q5_0 matrices read only by matmul and get_rows as the
    /// int8 GEMM's panels (their only copy; see [`CpuBuffer::store_packed`]).
    pub fn packing(self) -> Self {
        Self {
            packs: true,
            ..self
        }
    }
}

impl Default for CpuBufferType {
    fn default() -> Self {
        Self::new()
    }
}

/// The CPU buffer type's name.
pub const CPU_BUFFER_TYPE: &str = "CPU";

impl BufferType for CpuBufferType {
    fn name(&self) -> &str {
        CPU_BUFFER_TYPE
    }
    fn alignment(&self) -> usize {
        CPU_ALIGNMENT
    }
    fn max_size(&self) -> usize {
        self.max_size
    }
    fn packed_size(&self, t: &Tensor) -> Option<usize> {
        self.packs
            .then(|| Prepacked::stored_size(t.dtype, &t.ne))
            .flatten()
    }
    fn is_host(&self) -> bool {
        true
    }
    fn alloc_impl(&self, size: usize) -> Result<Box<dyn BufferImpl>> {
        Ok(Box::new(CpuBuffer::new(size, self.max_size)?))
    }
}

/// Host memory holding tensors (the CPU's [`BufferImpl`]; callers hold it as a [`Buffer`]).
pub struct CpuBuffer {
    data: UnsafeCell<Vec<Line>>,
    size: usize,
    /// Weights buffers: matmul weights packed for the GEMM, by (offset, rows, row length,
    /// row stride); dropped whenever the buffer's bytes change.
    packed: RefCell<HashMap<[usize; 4], Rc<Prepacked>>>,
    /// Weights stored packed (their only copy, in this memory), by offset.
    stored: RefCell<BTreeMap<usize, StoredPanels>>,
}

/// A weight kept in this memory as panels ([`CpuBuffer::store_packed`]).
struct StoredPanels {
    /// The panels, and the same as the matmul kernels take them.
    int8: Rc<Int8Panels>,
    panels: Rc<Prepacked>,
    /// Its bytes in the usual layout (what writes and reads address: `offset ..
    /// offset + nbytes`); the panels take `size` from `offset`, the rest reads as zeros.
    nbytes: usize,
    size: usize,
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        super::memory::freed(self.size);
    }
}

impl CpuBuffer {
    /// `size` zeroed bytes; fails cleanly (no abort) when the memory cannot be had.
    pub fn new(size: usize, max_size: usize) -> Result<Self> {
        let too_large = || Error::AllocTooLarge {
            size,
            max: max_size,
            buffer_type: CPU_BUFFER_TYPE.into(),
        };
        if size > max_size {
            return Err(too_large());
        }
        let lines = size.div_ceil(CPU_ALIGNMENT);
        let mut v: Vec<Line> = Vec::new();
        v.try_reserve_exact(lines).map_err(|_| too_large())?;
        v.resize(lines, Line([0; CPU_ALIGNMENT]));
        super::memory::allocated(size);
        Ok(Self {
            data: UnsafeCell::new(v),
            size,
            packed: RefCell::new(HashMap::new()),
            stored: RefCell::new(BTreeMap::new()),
        })
    }

    /// `view` (a tensor at `offset` in `buffer`, whose memory this is) packed for the GEMM,
    /// made on first use and kept while the bytes do not change; `None` unless `buffer` holds
    /// weights and the tensor is an f32, Q8_0 or Q4_0 matrix.
    pub fn packed_weights(
        &self,
        buffer: &Buffer,
        offset: usize,
        view: &TensorView,
    ) -> Option<Rc<Prepacked>> {
        if let Some(p) = self.stored_at(offset) {
            return Some(p);
        }
        if buffer.usage() != BufferUsage::Weights {
            return None;
        }
        let key = [offset, view.ne[1], view.ne[0], view.nb[1]];
        if let Some(p) = self.packed.borrow().get(&key) {
            return Some(p.clone());
        }
        let p = Rc::new(Prepacked::new(view)?);
        self.packed.borrow_mut().insert(key, p.clone());
        Some(p)
    }

    /// The panels of the weight stored packed at `offset`, if one is.
    pub fn stored_at(&self, offset: usize) -> Option<Rc<Prepacked>> {
        self.stored.borrow().get(&offset).map(|s| s.panels.clone())
    }

    /// Whether bytes `offset .. offset + len` touch a weight stored packed.
    pub fn touches_stored(&self, offset: usize, len: usize) -> bool {
        let stored = self.stored.borrow();
        !stored.is_empty()
            && stored
                .range(..offset + len.max(1))
                .next_back()
                .is_some_and(|(&at, s)| at + s.size > offset)
    }

    /// Keeps weight `t` at `offset` as the int8 GEMM's panels from now on (what
    /// [`CpuBufferType::packing`] sizes): its only copy, [`Int8Panels::size_for`] bytes, a
    /// tenth more than its GGUF bytes, where a copy made on first use would double them.
    /// Writes to `offset .. offset + t.nbytes()` must be whole rows; reads unpack them.
    pub fn store_packed(&self, offset: usize, t: &Tensor) -> Result<()> {
        let refuse = |why: &str| {
            Err(Error::InvalidArgument(format!(
                "weight {} ({} {:?}) cannot be stored packed at offset {offset} of a \
                 {}-byte CPU buffer: {why}",
                t.name, t.dtype, t.ne, self.size
            )))
        };
        let Some(size) = Prepacked::stored_size(t.dtype, &t.ne) else {
            return refuse("this build has no packed layout for it");
        };
        if !offset.is_multiple_of(CPU_ALIGNMENT) {
            return refuse("the offset is not aligned");
        }
        if offset.checked_add(size).is_none_or(|end| end > self.size) {
            return refuse("its panels do not fit there");
        }
        if self.touches_stored(offset, size) {
            return refuse("another packed weight is there");
        }
        self.packed.borrow_mut().clear();
        self.bytes_mut()[offset..offset + size].fill(0);
        // In range and aligned (checked above); the memory lives as long as this buffer,
        // which holds the panels.
        let Some(panels) = (unsafe { Int8Panels::at(self.base_ptr().add(offset), t.dtype, &t.ne) })
        else {
            return refuse("this build has no packed layout for it");
        };
        let int8 = Rc::new(panels);
        self.stored.borrow_mut().insert(
            offset,
            StoredPanels {
                panels: Rc::new(Prepacked::Int8(int8.clone())),
                int8,
                nbytes: t.nbytes(),
                size,
            },
        );
        Ok(())
    }

    /// Bytes `offset .. offset + len` as written: stored weights' rows unpacked.
    fn read_bytes(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        let mut out = self.bytes()[offset..offset + len].to_vec();
        let end = offset + len;
        for (&at, s) in self.stored.borrow().range(..end) {
            if at + s.size <= offset {
                continue;
            }
            // The weight's logical bytes: its rows, then zeros up to its panels' size. Only
            // the rows the read touches are unpacked.
            let (lo, hi) = (at.max(offset), (at + s.size).min(end));
            out[lo - offset..hi - offset].fill(0);
            let rows_end = (at + s.nbytes).min(hi);
            if lo < rows_end {
                let rb = s.int8.row_bytes();
                let (r0, r1) = ((lo - at) / rb, (rows_end - at).div_ceil(rb));
                let mut rows = vec![0u8; (r1 - r0) * rb];
                s.int8.unpack_rows(r0, &mut rows)?;
                let from = lo - at - r0 * rb;
                out[lo - offset..rows_end - offset]
                    .copy_from_slice(&rows[from..from + rows_end - lo]);
            }
        }
        Ok(out)
    }

    /// Bytes held by packed weights.
    pub fn packed_bytes(&self) -> usize {
        self.packed.borrow().values().map(|p| p.bytes()).sum()
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Base pointer of the memory (valid for `size()` bytes while the buffer lives).
    pub fn base_ptr(&self) -> *mut u8 {
        unsafe { (*self.data.get()).as_mut_ptr() as *mut u8 }
    }

    fn bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.base_ptr(), self.size) }
    }

    #[allow(clippy::mut_from_ref)]
    fn bytes_mut(&self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.base_ptr(), self.size) }
    }
}

impl BufferImpl for CpuBuffer {
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        if self.touches_stored(offset, data.len()) {
            // Whole rows of one stored weight, packed as they arrive.
            let stored = self.stored.borrow();
            if let Some((&at, s)) = stored.range(..=offset).next_back() {
                let p = &s.int8;
                let (pos, rb) = (offset - at, p.row_bytes());
                if offset + data.len() <= at + s.nbytes && pos.is_multiple_of(rb) {
                    return p.pack_rows(pos / rb, data);
                }
            }
            return Err(Error::InvalidArgument(format!(
                "a write of {} bytes at offset {offset} is not whole rows of one weight \
                 stored packed there",
                data.len()
            )));
        }
        self.packed.borrow_mut().clear();
        self.bytes_mut()[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>> {
        Box::pin(std::future::ready(self.read_bytes(offset, len)))
    }
    fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()> {
        if self.touches_stored(offset, len) {
            return Err(Error::InvalidArgument(format!(
                "memset of {len} bytes at offset {offset} reaches a weight stored packed"
            )));
        }
        self.packed.borrow_mut().clear();
        self.bytes_mut()[offset..offset + len].fill(value);
        Ok(())
    }
    fn store_packed(&self, offset: usize, t: &Tensor) -> Result<()> {
        CpuBuffer::store_packed(self, offset, t)
    }
    fn copy_from(&self, src: &Buffer, src_off: usize, dst_off: usize, len: usize) -> Result<bool> {
        let Some(src) = src.downcast::<CpuBuffer>() else {
            return Ok(false);
        };
        if src.touches_stored(src_off, len) || self.touches_stored(dst_off, len) {
            // Through the usual bytes (the caller's range may be this very buffer).
            let bytes = src.read_bytes(src_off, len)?;
            self.write(dst_off, &bytes)?;
            return Ok(true);
        }
        self.packed.borrow_mut().clear();
        // `ptr::copy`: source and destination may be the same buffer, even overlap.
        unsafe {
            std::ptr::copy(
                src.base_ptr().add(src_off),
                self.base_ptr().add(dst_off),
                len,
            )
        };
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::kernels;
    use crate::backends::cpu::{Par, Pool};
    use crate::graph::{DType, Graph};
    use crate::testing::Rng;

    /// A weight packed once gives the same product as packing per call (sizes crossing the
    /// K slice and M block edges; natively on 2 threads, cut along m inside an M block for
    /// weights of more rows than there are activations, else along n), and any write to the
    /// buffer drops the packed copy.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn packed_weights_match_and_are_dropped_on_write() {
        for (m, n) in [(300, 9), (1000, 9), (100, 130)] {
            packed_weights_match(m, 600, n);
        }
    }

    fn packed_weights_match(m: usize, k: usize, n: usize) {
        let mut g = Graph::new();
        let w = g.weight("w", DType::F32, &[k, m]).unwrap();
        let x = g.input("x", DType::F32, &[k, n]).unwrap();
        let y = g.matmul(w, x).unwrap();
        let mut rng = Rng::new(5);
        let mut fill = |len: usize| -> Vec<u8> {
            (0..len)
                .flat_map(|_| rng.uniform(-1.0, 1.0).to_le_bytes())
                .collect()
        };
        let bt: Rc<dyn BufferType> = Rc::new(CpuBufferType::new());
        let alloc = |size: usize| bt.alloc(size).unwrap();
        let (wbuf, xbuf) = (alloc(m * k * 4), alloc(k * n * 4));
        let (d1, d2) = (alloc(m * n * 4), alloc(m * n * 4));
        wbuf.write(0, &fill(m * k)).unwrap();
        xbuf.write(0, &fill(k * n)).unwrap();
        fn cpu(b: &Buffer) -> &CpuBuffer {
            b.downcast::<CpuBuffer>().unwrap()
        }
        let view = |b: &Buffer, id| unsafe {
            TensorView::new(g.tensor(id), cpu(b).base_ptr(), b.size(), 0).unwrap()
        };
        let (wv, xv) = (view(&wbuf, w), view(&xbuf, x));
        assert!(
            cpu(&wbuf).packed_weights(&wbuf, 0, &wv).is_none(),
            "not a weights buffer"
        );
        wbuf.set_usage(BufferUsage::Weights);
        let pre = cpu(&wbuf).packed_weights(&wbuf, 0, &wv).expect("packed");
        assert!(cpu(&wbuf).packed_bytes() >= m * k * 4);
        // Natively the packed product also runs on two threads: the same bytes.
        let pool = Pool::new(Some(if cfg!(target_arch = "wasm32") { 1 } else { 2 })).unwrap();
        assert!(kernels::matmul_fused(
            Par::SERIAL,
            &view(&d1, y),
            &wv,
            &xv,
            None,
            None
        ));
        assert!(kernels::matmul_fused(
            pool.par(),
            &view(&d2, y),
            &wv,
            &xv,
            Some(&pre),
            None
        ));
        assert_eq!(cpu(&d1).bytes(), cpu(&d2).bytes());
        assert!(cpu(&d1).bytes().iter().any(|&b| b != 0));
        wbuf.write(0, &[0u8; 4]).unwrap();
        assert_eq!(
            cpu(&wbuf).packed_bytes(),
            0,
            "a write keeps a stale packed copy"
        );
    }

    /// Quantized weights prepared once (the int8 GEMM's panels) give the bytes the per-call kernel gives for a batch (sizes off the
    /// 4-row groups, the 4-column tiles and the 64-column blocks), on one thread or two, and
    /// stay within the op suite's quantized-matmul tolerance of the scalar reference.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn prepacked_quantized_weights_match_per_call_and_reference() {
        use crate::graph::{row_from_f32, Op};
        // Activations 2-D, and 4-D (batches multiplied as one run of rows), `n` rows in all;
        // 32+ rows a batch, so the per-call kernel is the int8 GEMM too (the same bytes).
        // One and a few rows take the panels' matrix-vector tiles (4 groups at a time, then
        // pairs and single groups: 37 rows are 10 groups, the last one padded); 1200 rows
        // are enough work for 2 threads.
        let cases = [
            (DType::Q8_0, 37, &[70, 1, 1]),
            (DType::Q4_0, 37, &[70, 1, 1]),
            (DType::Q8_0, 37, &[33, 3, 2]),
            (DType::Q4_0, 37, &[33, 3, 2]),
            (DType::Q4_0, 37, &[1, 1, 1]),
            (DType::Q8_0, 37, &[1, 1, 1]),
            (DType::Q4_0, 37, &[3, 1, 1]),
            (DType::Q4_0, 1200, &[1, 1, 1]),
            (DType::Q8_0, 1200, &[1, 1, 1]),
            (DType::Q5_0, 37, &[70, 1, 1]),
            (DType::Q5_0, 37, &[1, 1, 1]),
            (DType::Q5_0, 1200, &[1, 1, 1]),
            (DType::Q4_1, 37, &[70, 1, 1]),
            (DType::Q4_1, 1200, &[1, 1, 1]),
            (DType::IQ4_NL, 37, &[70, 1, 1]),
            (DType::IQ4_NL, 37, &[3, 1, 1]),
            (DType::IQ4_NL, 1200, &[1, 1, 1]),
        ];
        let k = 96;
        for (dtype, m, dims) in cases {
            let n = dims.iter().product::<usize>();
            let mut g = Graph::new();
            let w = g.weight("w", dtype, &[k, m]).unwrap();
            let x = g
                .input("x", DType::F32, &[k, dims[0], dims[1], dims[2]])
                .unwrap();
            let y = g.matmul(w, x).unwrap();
            let mut rng = Rng::new(11);
            let wf: Vec<f32> = (0..m * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let row = dtype.row_bytes(k).unwrap();
            let mut wq = vec![0u8; row * m];
            for (src, dst) in wf.chunks(k).zip(wq.chunks_mut(row)) {
                row_from_f32(dtype, src, dst).unwrap();
            }
            let xb: Vec<u8> = (0..k * n)
                .flat_map(|_| rng.uniform(-1.0, 1.0).to_le_bytes())
                .collect();
            let bt: Rc<dyn BufferType> = Rc::new(CpuBufferType::new());
            let alloc = |size: usize| bt.alloc(size).unwrap();
            let (wbuf, xbuf) = (alloc(wq.len()), alloc(xb.len()));
            let outs: Vec<Rc<Buffer>> = (0..4).map(|_| alloc(m * n * 4)).collect();
            wbuf.write(0, &wq).unwrap();
            xbuf.write(0, &xb).unwrap();
            wbuf.set_usage(BufferUsage::Weights);
            fn cpu(b: &Buffer) -> &CpuBuffer {
                b.downcast::<CpuBuffer>().unwrap()
            }
            let view = |b: &Buffer, id| unsafe {
                TensorView::new(g.tensor(id), cpu(b).base_ptr(), b.size(), 0).unwrap()
            };
            let (wv, xv) = (view(&wbuf, w), view(&xbuf, x));
            let pre = cpu(&wbuf).packed_weights(&wbuf, 0, &wv).expect("packed");
            let pool = Pool::new(Some(if cfg!(target_arch = "wasm32") { 1 } else { 2 })).unwrap();
            let fast = |par| {
                kernels::compute(
                    par,
                    kernels::KernelSet::Fast,
                    &Op::MatMul,
                    &view(&outs[0], y),
                    &[wv, xv],
                )
            };
            fast(Par::SERIAL).unwrap();
            for (i, par) in [(1, Par::SERIAL), (2, pool.par())] {
                assert!(kernels::matmul_fused(
                    par,
                    &view(&outs[i], y),
                    &wv,
                    &xv,
                    Some(&pre),
                    None
                ));
            }
            // The same bytes at 1 and 2 threads, and as the per-call GEMM's (fewer rows run
            // the dot-product kernel on the GGUF layout: a different order of float adds).
            assert_eq!(
                cpu(&outs[1]).bytes(),
                cpu(&outs[2]).bytes(),
                "{dtype:?} {m} {dims:?}"
            );
            // (Only Q8_0 and Q4_0 have a per-call integer kernel: the f32 GEMM dequantizes
            // the others.)
            if dims[0] >= kernels::gemm::QUANT_GEMM_MIN_N
                && matches!(dtype, DType::Q8_0 | DType::Q4_0)
            {
                assert_eq!(
                    cpu(&outs[0]).bytes(),
                    cpu(&outs[1]).bytes(),
                    "{dtype:?} {m} {dims:?}"
                );
            }
            kernels::reference::compute(&Op::MatMul, &view(&outs[3], y), &[wv, xv]).unwrap();
            let f = |b: &Buffer| -> Vec<f32> {
                cpu(b).bytes()[..m * n * 4]
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            };
            let (got, want) = (f(&outs[1]), f(&outs[3]));
            let err: f64 = got
                .iter()
                .zip(&want)
                .map(|(a, b)| ((a - b) as f64).powi(2))
                .sum();
            let norm: f64 = want.iter().map(|b| (*b as f64).powi(2)).sum();
            assert!(
                err / norm < 5e-4,
                "{dtype:?} {m} {dims:?}: normalized error {}",
                err / norm
            );
        }
    }
}
