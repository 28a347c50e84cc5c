//! Host memory buffers: 64-byte aligned, bounds-checked, zero-size allowed.

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::rc::Rc;

use crate::backend::{check_range, Buffer, BufferType, BufferUsage, LocalBoxFuture};
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
    fn alloc(&self, size: usize) -> Result<Rc<dyn Buffer>> {
        Ok(Rc::new(CpuBuffer::new(size, self.max_size)?))
    }
}

/// Host memory holding tensors.
pub struct CpuBuffer {
    data: UnsafeCell<Vec<Line>>,
    size: usize,
    usage: Cell<BufferUsage>,
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
            usage: Cell::new(BufferUsage::Any),
        })
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

impl Buffer for CpuBuffer {
    fn size(&self) -> usize {
        self.size
    }
    fn type_name(&self) -> &str {
        CPU_BUFFER_TYPE
    }
    fn usage(&self) -> BufferUsage {
        self.usage.get()
    }
    fn set_usage(&self, usage: BufferUsage) {
        self.usage.set(usage)
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        check_range("write", offset, data.len(), self.size)?;
        self.bytes_mut()[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>> {
        let r = check_range("read", offset, len, self.size)
            .map(|()| self.bytes()[offset..offset + len].to_vec());
        Box::pin(std::future::ready(r))
    }
    fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()> {
        check_range("memset", offset, len, self.size)?;
        self.bytes_mut()[offset..offset + len].fill(value);
        Ok(())
    }
    fn copy_from(
        &self,
        src: &dyn Buffer,
        src_off: usize,
        dst_off: usize,
        len: usize,
    ) -> Result<bool> {
        let Some(src) = src.as_any().downcast_ref::<CpuBuffer>() else {
            return Ok(false);
        };
        check_range("copy source", src_off, len, src.size)?;
        check_range("copy destination", dst_off, len, self.size)?;
        unsafe {
            std::ptr::copy(
                src.base_ptr().add(src_off),
                self.base_ptr().add(dst_off),
                len,
            )
        };
        Ok(true)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
