//! Host memory buffers: 64-byte aligned, bounds-checked, zero-size allowed.

use std::cell::{RefCell, UnsafeCell};
use std::collections::HashMap;
use std::rc::Rc;

use super::kernels::gemm::PackedWeights;
use super::TensorView;

use crate::backend::{Buffer, BufferImpl, BufferType, BufferUsage, LocalBoxFuture};
use crate::error::{Error, Result};

/// Tensor offsets in CPU buffers are aligned to this (a cache line; enough for SIMD loads).
pub const CPU_ALIGNMENT: usize = 64;

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; CPU_ALIGNMENT]);

/// The CPU buffer type: plain host memory.
pub struct CpuBufferType {
    max_size: usize,
}

impl CpuBufferType {
    /// Largest buffer: what a wasm32 address space can hold, or isize::MAX natively.
    pub fn new() -> Self {
        let max_size = if cfg!(target_arch = "wasm32") {
            (u32::MAX as usize) / 2
        } else {
            isize::MAX as usize
        };
        Self { max_size }
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
    packed: RefCell<HashMap<[usize; 4], Rc<PackedWeights>>>,
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
        Ok(Self {
            data: UnsafeCell::new(v),
            size,
            packed: RefCell::new(HashMap::new()),
        })
    }

    /// `view` (a tensor at `offset` in `buffer`, whose memory this is) packed for the GEMM,
    /// made on first use and kept while the bytes do not change; `None` unless `buffer` holds
    /// weights and the tensor is an f32 matrix.
    pub fn packed_weights(
        &self,
        buffer: &Buffer,
        offset: usize,
        view: &TensorView,
    ) -> Option<Rc<PackedWeights>> {
        if buffer.usage() != BufferUsage::Weights {
            return None;
        }
        let key = [offset, view.ne[1], view.ne[0], view.nb[1]];
        if let Some(p) = self.packed.borrow().get(&key) {
            return Some(p.clone());
        }
        let p = Rc::new(PackedWeights::new(view)?);
        self.packed.borrow_mut().insert(key, p.clone());
        Some(p)
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
        self.packed.borrow_mut().clear();
        self.bytes_mut()[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>> {
        Box::pin(std::future::ready(Ok(
            self.bytes()[offset..offset + len].to_vec()
        )))
    }
    fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()> {
        self.packed.borrow_mut().clear();
        self.bytes_mut()[offset..offset + len].fill(value);
        Ok(())
    }
    fn copy_from(&self, src: &Buffer, src_off: usize, dst_off: usize, len: usize) -> Result<bool> {
        let Some(src) = src.downcast::<CpuBuffer>() else {
            return Ok(false);
        };
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
    use crate::backends::cpu::kernels::gemm;
    use crate::backends::cpu::{Par, Pool};
    use crate::graph::{DType, Graph};
    use crate::testing::Rng;

    /// A weight packed once gives the same product as packing per call (sizes crossing the
    /// K slice and M block edges), and any write to the buffer drops the packed copy.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn packed_weights_match_and_are_dropped_on_write() {
        let (m, k, n) = (300, 600, 9);
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
        assert!(gemm::matmul(Par::SERIAL, &view(&d1, y), &wv, &xv));
        assert!(gemm::matmul_prepacked(
            pool.par(),
            &view(&d2, y),
            &wv,
            &xv,
            &pre
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
}
