//! Buffers, split as ggml splits `ggml_backend_buffer` from its `iface`: every caller holds the
//! concrete [`Buffer`], which owns the size, usage and type name and does every bounds and
//! zero-length check once; a device implements only [`BufferImpl`], which is never handed a
//! request outside the buffer (nor an empty one).

use std::any::Any;
use std::cell::Cell;
use std::rc::Rc;

use super::LocalBoxFuture;
use crate::error::{Error, Result};

/// What a buffer holds; the scheduler keeps ops on weights where the weights live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferUsage {
    /// Unspecified.
    Any,
    /// Model parameters, written once.
    Weights,
    /// Intermediate results, reused by the memory planner.
    Compute,
}

/// What a device implements for its memory. [`Buffer`] checks every range first: `offset + len`
/// never exceeds the buffer's size and `len` is never zero when these are called.
pub trait BufferImpl: Any {
    /// Writes `data` at `offset` (enqueued in order with later compute on GPUs).
    fn write(&self, offset: usize, data: &[u8]) -> Result<()>;
    /// Reads `len` bytes at `offset`, after all enqueued work that writes them.
    fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>>;
    /// Sets `len` bytes at `offset` to `value`.
    fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()>;
    /// (optional) Copies `len` bytes from `src` (another buffer, maybe of another device)
    /// without going through the host; default: `Ok(false)`, meaning the caller must.
    fn copy_from(
        &self,
        _src: &Buffer,
        _src_off: usize,
        _dst_off: usize,
        _len: usize,
    ) -> Result<bool> {
        Ok(false)
    }
    /// (optional) Called after a range of zero bytes was asked for, so a device can still
    /// report that it was lost; default: nothing to check.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// (optional) From now on keeps weight `t` at `offset` in the device's own layout for
    /// the ops that read it as a matrix ([`BufferType::packed_size`] bytes there): writes
    /// to its range are whole rows in the usual bytes, packed as they arrive, and reads
    /// give those bytes back; default: the device has no such layout.
    fn store_packed(&self, _offset: usize, t: &crate::graph::Tensor) -> Result<()> {
        Err(Error::InvalidArgument(format!(
            "this device keeps weight {} as it is (no packed layout)",
            t.name
        )))
    }
}

/// A block of device memory (ggml's `ggml_backend_buffer`). Every access is bounds-checked
/// here and fails with [`Error::OutOfBounds`]; zero-sized buffers and empty ranges are valid.
pub struct Buffer {
    imp: Box<dyn BufferImpl>,
    size: usize,
    type_name: Rc<str>,
    usage: Cell<BufferUsage>,
}

impl Buffer {
    /// Wraps a device's memory of `size` bytes made by the buffer type named `type_name`.
    pub fn new(imp: Box<dyn BufferImpl>, size: usize, type_name: &str) -> Self {
        Self {
            imp,
            size,
            type_name: type_name.into(),
            usage: Cell::new(BufferUsage::Any),
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Name of the buffer type that made it.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// What it holds.
    pub fn usage(&self) -> BufferUsage {
        self.usage.get()
    }

    /// Declares what it holds.
    pub fn set_usage(&self, usage: BufferUsage) {
        self.usage.set(usage)
    }

    /// The device's implementation, when it is a `T` (for the backend that owns it).
    pub fn downcast<T: BufferImpl>(&self) -> Option<&T> {
        (self.imp.as_ref() as &dyn Any).downcast_ref::<T>()
    }

    /// Writes `data` at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        check_range("write", offset, data.len(), self.size)?;
        if data.is_empty() {
            return self.imp.check();
        }
        self.imp.write(offset, data)
    }

    /// Reads `len` bytes at `offset`, after all enqueued work that writes them.
    pub fn read(&self, offset: usize, len: usize) -> LocalBoxFuture<'_, Result<Vec<u8>>> {
        if let Err(e) = check_range("read", offset, len, self.size) {
            return Box::pin(std::future::ready(Err(e)));
        }
        if len == 0 {
            return Box::pin(std::future::ready(self.imp.check().map(|()| Vec::new())));
        }
        self.imp.read(offset, len)
    }

    /// Sets `len` bytes at `offset` to `value`.
    pub fn memset(&self, offset: usize, len: usize, value: u8) -> Result<()> {
        check_range("memset", offset, len, self.size)?;
        if len == 0 {
            return self.imp.check();
        }
        self.imp.memset(offset, len, value)
    }

    /// Stores weight `t` at `offset` in the device's packed layout from now on (see
    /// [`BufferImpl::store_packed`]); the range must hold [`BufferType::packed_size`] bytes.
    pub fn store_packed(&self, offset: usize, t: &crate::graph::Tensor) -> Result<()> {
        self.imp.store_packed(offset, t)
    }

    /// Sets the whole buffer to `value`.
    pub fn clear(&self, value: u8) -> Result<()> {
        self.memset(0, self.size, value)
    }

    /// Copies `len` bytes at `src_off` of `src` to `dst_off` of this buffer directly when the
    /// device allows it; `Ok(false)` means the caller must go through the host.
    pub fn copy_from(
        &self,
        src: &Buffer,
        src_off: usize,
        dst_off: usize,
        len: usize,
    ) -> Result<bool> {
        check_range("copy source", src_off, len, src.size)?;
        check_range("copy destination", dst_off, len, self.size)?;
        if len == 0 {
            return self.imp.check().map(|()| true);
        }
        self.imp.copy_from(src, src_off, dst_off, len)
    }

    /// Copies through the host when no direct copy exists: [`Buffer::copy_from`], else a read
    /// of `src` and a write here.
    pub async fn copy_via_host(
        &self,
        src: &Buffer,
        src_off: usize,
        dst_off: usize,
        len: usize,
    ) -> Result<()> {
        if !self.copy_from(src, src_off, dst_off, len)? {
            let bytes = src.read(src_off, len).await?;
            self.write(dst_off, &bytes)?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("type", &self.type_name)
            .field("size", &self.size)
            .field("usage", &self.usage.get())
            .finish()
    }
}

/// Checks that `[offset, offset + len)` lies in something of `size` bytes.
pub fn check_range(what: &str, offset: usize, len: usize, size: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::OutOfBounds(format!(
            "{what} of {len} bytes at offset {offset} in a buffer of {size} bytes"
        ))),
    }
}

/// How a device allocates memory (ggml's `ggml_backend_buffer_type`).
pub trait BufferType {
    /// Unique name (devices compare buffer types by it).
    fn name(&self) -> &str;
    /// Byte alignment of tensor offsets inside a buffer.
    fn alignment(&self) -> usize;
    /// Largest single allocation in bytes.
    fn max_size(&self) -> usize;
    /// Bytes a tensor needs in a buffer of this type; default: its `nbytes`.
    fn alloc_size(&self, t: &crate::graph::Tensor) -> usize {
        t.nbytes()
    }
    /// (optional) Bytes weight `t` takes stored in this device's own layout for the ops
    /// that read it only as a matrix (a matmul's weight, a get_rows table; see
    /// [`Buffer::store_packed`]), or `None` when the device keeps it as it is (the default).
    fn packed_size(&self, _t: &crate::graph::Tensor) -> Option<usize> {
        None
    }
    /// Whether buffers are host memory; default: no.
    fn is_host(&self) -> bool {
        false
    }
    /// Makes the device memory of `size` bytes (0 included); only called with
    /// `size <= max_size()`. Callers allocate through `alloc`, which checks that.
    fn alloc_impl(&self, size: usize) -> Result<Box<dyn BufferImpl>>;
}

impl dyn BufferType {
    /// Allocates `size` bytes (0 is valid); fails above `max_size`.
    pub fn alloc(&self, size: usize) -> Result<Rc<Buffer>> {
        let max = self.max_size();
        if size > max {
            return Err(Error::AllocTooLarge {
                size,
                max,
                buffer_type: self.name().to_string(),
            });
        }
        Ok(Rc::new(Buffer::new(
            self.alloc_impl(size)?,
            size,
            self.name(),
        )))
    }
}
